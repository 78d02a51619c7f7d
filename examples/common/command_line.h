// The examples' command-line parser: CLI11 behind a small interface, compiled once.
//
// CLI11 is header-only; each example that included it spent ~8 CPU-seconds compiling the parser
// (measured on Zen 3, GCC 12), so every build of the examples paid for it six times. Here the
// parser is instantiated in command_line.cpp only. Help output shows each option's default.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace aclgrad::examples {

/// A condition an option's value must meet; checked while parsing (CLI11's validators).
struct ValueCheck {
  enum class Kind { none, positive, non_negative, range, member_of };
  Kind kind = Kind::none;
  double low = 0, high = 0;          // range: low <= value <= high
  std::vector<std::string> members;  // member_of: one of these words

  static ValueCheck positive() { return of(Kind::positive); }
  static ValueCheck non_negative() { return of(Kind::non_negative); }
  static ValueCheck range(double low, double high) {
    ValueCheck check = of(Kind::range);
    check.low = low;
    check.high = high;
    return check;
  }
  static ValueCheck member_of(std::vector<std::string> words) {
    ValueCheck check = of(Kind::member_of);
    check.members = std::move(words);
    return check;
  }

 private:
  static ValueCheck of(Kind kind) {
    ValueCheck check;
    check.kind = kind;
    return check;
  }
};

class CommandLine {
 public:
  explicit CommandLine(const std::string& description, const std::string& program_name = "");
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // `--name VALUE`; the variable's value before parsing is the default shown by --help.
  void option(const std::string& name, int& value, const std::string& help, ValueCheck check = {});
  void option(const std::string& name, int64_t& value, const std::string& help,
              ValueCheck check = {});
  void option(const std::string& name, uint64_t& value, const std::string& help,
              ValueCheck check = {});
  void option(const std::string& name, double& value, const std::string& help,
              ValueCheck check = {});
  void option(const std::string& name, std::string& value, const std::string& help,
              ValueCheck check = {});
  // `--name V1 ... Vcount`: exactly `count` words.
  void option(const std::string& name, std::vector<std::string>& values, const std::string& help,
              int count);
  // `--name`: sets the variable to true.
  void flag(const std::string& name, bool& value, const std::string& help);

  /// Parses the arguments into the variables. Returns the status the program should exit with
  /// when it must stop here (--help was printed: 0; a bad argument was reported on stderr:
  /// non-zero), or nothing when it should go on.
  std::optional<int> parse(int argc, char** argv);

 private:
  std::unique_ptr<CLI::App> app_;
};

}  // namespace aclgrad::examples
