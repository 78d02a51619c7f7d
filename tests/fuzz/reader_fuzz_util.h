// Shared by the libFuzzer targets of the framework's file readers (safetensors_fuzz.cpp,
// idx_fuzz.cpp): an in-memory file that the readers open by path like any other, and the
// report of a finding.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace readerfuzz {

// A memfd holding the bytes under test, named "/proc/self/fd/N": the readers open, stat and
// read it through their ordinary file paths (open/pread, zlib's gzopen), with no disk I/O and
// nothing to clean up. One per target, rewritten for every input.
class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the contents with bytes; returns the path to open.
  const std::string& hold(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w =
          ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (w <= 0) fail("pwrite");
      done += static_cast<size_t>(w);
    }
    return path_;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);
    std::abort();
  }
  int fd_;
  std::string path_;
};

// A property the reader broke: printed, then abort() so that libFuzzer keeps the input as a
// crash (and the replay test fails).
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "reader fuzz finding: %s\n", what.c_str());
  std::abort();
}

// READER_FUZZ_VERBOSE=1 prints what each input gave (replaying a corpus or a crash by hand).
inline bool verbose() {
  static const bool on = std::getenv("READER_FUZZ_VERBOSE") != nullptr;
  return on;
}

// Error messages quote only short excerpts of what a file holds (nn/checkpoint.h, nn/idx.h):
// beyond limit bytes, a message is echoing the file.
inline void check_message(const std::string& message, size_t limit) {
  if (message.size() > limit)
    finding("an error message of " + std::to_string(message.size()) + " bytes (limit " +
            std::to_string(limit) + "): " + message.substr(0, 400) + "...");
  if (message.empty()) finding("an empty error message");
}

}  // namespace readerfuzz
