#include "examples/common/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

namespace aclgrad::examples {

void write_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot " + std::string(what) + " '" + path + "': " + reason);
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail("create a temporary file for");
  // fflush + fsync before the rename: after a crash the new name never points at unwritten data.
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() &&
                  std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  if (std::fclose(f) != 0 || !ok) fail("write");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename the temporary file to");
}

}  // namespace aclgrad::examples
