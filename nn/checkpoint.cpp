// Checkpoint files: atomic writes (temporary file, fsync, rename), reads that check the header
// before touching the data, and the module-level save/load on top of the safetensors format
// (nn/safetensors.cpp, nn/safetensors_header.cpp).
#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/safetensors_format.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Owns the temporary file until it is renamed: closes and unlinks it on every error path.
class TempFile {
 public:
  explicit TempFile(const std::string& path) : name_(path + ".tmp-XXXXXX") {
    fd_ = ::mkstemp(name_.data());
    const int err = errno;  // read before anything else can change it
    check(fd_ >= 0, "save_safetensors: cannot create the temporary file '", name_, "' for '", path,
          "': ", errno_text(err));
    ::fchmod(fd_, 0644);  // mkstemp makes 0600; checkpoints are ordinary readable files
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(name_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, data, n);
      const int err = w < 0 ? errno : EIO;
      if (err == EINTR) continue;
      check(w > 0, "save_safetensors: writing '", name_, "' failed: ", errno_text(err));
      data += w;
      n -= static_cast<size_t>(w);
    }
  }

  // fsync + close + rename over target; the temporary file is gone afterwards either way.
  // errno is saved right after each call: check()'s arguments are evaluated in an unspecified
  // order, so reading it there could report an older error.
  void commit(const std::string& target) {
    const bool synced = ::fsync(fd_) == 0;
    int err = errno;
    check(synced, "save_safetensors: fsync of '", name_, "' failed: ", errno_text(err));
    const int fd = fd_;
    fd_ = -1;
    const bool closed = ::close(fd) == 0;
    err = errno;
    check(closed, "save_safetensors: closing '", name_, "' failed: ", errno_text(err));
    const bool renamed = ::rename(name_.c_str(), target.c_str()) == 0;
    err = errno;
    check(renamed, "save_safetensors: cannot rename '", name_, "' to '", target,
          "': ", errno_text(err));
    committed_ = true;
    // Make the rename itself durable (best effort: some file systems refuse fsync on dirs).
    const int dir = ::open(parent_dir(target).c_str(), O_RDONLY | O_DIRECTORY);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
  }

 private:
  std::string name_;
  int fd_ = -1;
  bool committed_ = false;
};

// A regular file opened for reading at given offsets; closed on every path.
class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const int err = errno;
    check(fd_ >= 0, "load_safetensors: cannot open '", path, "': ", errno_text(err));
    struct stat st {};
    const int stat_err = ::fstat(fd_, &st) == 0 ? 0 : errno;
    if (stat_err != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);  // the destructor does not run for a constructor that throws
      check(stat_err == 0, "load_safetensors: cannot stat '", path, "': ", errno_text(stat_err));
      check(false, "load_safetensors: '", path, "' is not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }

  // Reads exactly n bytes at offset into dst.
  void read(void* dst, uint64_t n, uint64_t offset, const char* what) {
    auto* p = static_cast<char*>(dst);
    uint64_t got = 0;
    while (got < n) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - got, 1u << 30));
      const ssize_t r = ::pread(fd_, p + got, chunk, static_cast<off_t>(offset + got));
      const int err = r < 0 ? errno : 0;
      if (err == EINTR) continue;
      check(r > 0, "load_safetensors: reading ", what, " of '", path_, "' failed after ", got,
            " of ", n, " bytes at offset ", offset,
            err ? ": " + errno_text(err) : std::string(" (the file shrank)"));
      got += static_cast<uint64_t>(r);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  check(!path.empty(), "save_safetensors: empty path");
  std::string header;
  const auto order = safetensors_detail::plan(tensors, metadata, header);  // validates first
  TempFile tmp(path);
  const std::string prefix = safetensors_detail::length_prefix(header.size());
  tmp.write(prefix.data(), prefix.size());
  tmp.write(header.data(), header.size());
  for (const auto& p : order)
    tmp.write(static_cast<const char*>(p.tensor.data_ptr()),
              static_cast<size_t>(p.tensor.numel() * p.tensor.element_size()));
  tmp.commit(path);
}

void save_safetensors(const std::string& path, const NamedList<Tensor>& tensors,
                      const Metadata& metadata) {
  TensorMap map;
  for (const auto& [name, t] : tensors)
    check(map.emplace(name, t).second, "save_safetensors: tensor name '", name, "' appears twice");
  save_safetensors(path, map, metadata);
}

// The length and header are read and every offset checked against the file size before any
// data is read, so a lying header costs neither memory nor time; each tensor's bytes are then
// read straight into its storage.
TensorMap load_safetensors(const std::string& path, Metadata* metadata) {
  using namespace safetensors_detail;
  InputFile file(path);
  char prefix[8] = {};
  if (file.size() >= 8) file.read(prefix, 8, 0, "the header length");
  const uint64_t n = header_length(std::string_view(prefix, 8), file.size(), path);
  std::string text(n, '\0');
  file.read(text.data(), n, 8, "the header");
  Header header = parse_header(text, file.size() - 8 - n, path);
  TensorMap out;
  for (const Entry& e : header.entries) {
    Tensor t = empty(e.shape, e.dtype);
    file.read(t.data_ptr(), e.end - e.begin, 8 + n + e.begin, "tensor data");
    check_bool_bytes(e, static_cast<const char*>(t.data_ptr()), path);
    out.emplace(e.name, std::move(t));
  }
  if (metadata) *metadata = std::move(header.metadata);
  return out;
}

void save(const Module& module, const std::string& path, const TensorMap& extra_tensors,
          const Metadata& metadata) {
  check(!metadata.count(kExtraTensorsKey), "save: metadata key '", kExtraTensorsKey,
        "' is reserved");
  TensorMap all;
  for (const auto& [name, t] : module.state_dict()) all.emplace(name, t);
  nlohmann::json extra_names = nlohmann::json::array();
  for (const auto& [name, t] : extra_tensors) {
    check(all.emplace(name, t).second, "save: extra tensor '", name,
          "' has the name of a parameter or buffer of the module");
    extra_names.push_back(name);
  }
  Metadata meta = metadata;
  if (!extra_tensors.empty()) meta[kExtraTensorsKey] = extra_names.dump();
  save_safetensors(path, all, meta);
}

CheckpointExtras load(Module& module, const std::string& path, bool strict) {
  CheckpointExtras out;
  TensorMap all = load_safetensors(path, &out.metadata);
  std::set<std::string> extra_names;
  if (const auto it = out.metadata.find(kExtraTensorsKey); it != out.metadata.end()) {
    // The string comes from the file: bounded nesting, and only excerpts in messages.
    nlohmann::json names;
    if (safetensors_detail::json_depth_exceeded(it->second) == std::string::npos) {
      try {
        names = nlohmann::json::parse(it->second);
      } catch (const nlohmann::json::exception&) {
      }
    }
    check(names.is_array(), "load: '", path, "': metadata '", kExtraTensorsKey,
          "' must be a JSON array of tensor names, got ", safetensors_detail::excerpt(it->second));
    for (const auto& n : names) {
      check(n.is_string() && all.count(n.get<std::string>()), "load: '", path, "': extra tensor ",
            safetensors_detail::excerpt(
                n.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
            " listed in the metadata is not in the file");
      extra_names.insert(n.get<std::string>());
    }
    out.metadata.erase(it);
  }
  std::set<std::string> own;
  for (const auto& [name, t] : module.state_dict()) own.insert(name);
  TensorMap state;
  for (auto& [name, t] : all) {
    if (extra_names.count(name) || (!strict && !own.count(name)))
      out.tensors.emplace(name, t);
    else
      state.emplace(name, t);
  }
  module.load_state_dict(state, strict, path);
  return out;
}

}  // namespace aclgrad::nn
