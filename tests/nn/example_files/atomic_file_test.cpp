// The examples' metrics.csv / curves.svg writer (examples/common/atomic_file.h): a failed write at
// any point leaves the previous file intact and no temporary file, and the error names the path
// and the system error.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "examples/common/atomic_file.h"

namespace {

namespace fs = std::filesystem;
using aclgrad::examples::write_file_atomically;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "aclgrad-files-XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string error_of(const std::string& path, const std::string& content) {
  try {
    write_file_atomically(path, content);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(AtomicFile, WritesAndReplacesWholeFiles) {
  TempDir dir;
  const std::string path = (dir.path / "metrics.csv").string();
  write_file_atomically(path, std::string(10000, 'a'));
  write_file_atomically(path, "epoch,loss\n1,0.5\n");
  EXPECT_EQ(read_file(path), "epoch,loss\n1,0.5\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"metrics.csv"});
}

TEST(AtomicFile, MissingDirectoryNamesPathAndReason) {
  TempDir dir;
  const std::string path = (dir.path / "no/such/curves.svg").string();
  const std::string msg = error_of(path, "<svg/>");
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFile, FailedRenameRemovesTheTemporaryFile) {
  TempDir dir;  // the target is a non-empty directory: written, synced, then rename fails
  const fs::path target = dir.path / "curves.svg";
  fs::create_directory(target);
  std::ofstream(target / "keep") << "x";
  const std::string msg = error_of(target.string(), "<svg/>");
  EXPECT_NE(msg.find("cannot rename"), std::string::npos) << msg;
  EXPECT_NE(msg.find(target.string()), std::string::npos) << msg;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"curves.svg"});
  EXPECT_EQ(read_file(target / "keep"), "x");
}

TEST(AtomicFile, WriteErrorMidFileKeepsThePreviousFile) {
  TempDir dir;  // a file size limit makes the write fail part-way (EFBIG), like a full disk
  const std::string path = (dir.path / "metrics.csv").string();
  write_file_atomically(path, "previous\n");
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = error_of(path, std::string(100000, 'b'));
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find("cannot write '" + path + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_EQ(read_file(path), "previous\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"metrics.csv"});
}

}  // namespace
