#include "examples/common/command_line.h"

#include <CLI/CLI.hpp>
#include <cmath>

namespace aclgrad::examples {
namespace {

void apply(CLI::Option* option, const ValueCheck& check) {
  switch (check.kind) {
    case ValueCheck::Kind::none:
      break;
    case ValueCheck::Kind::positive:
      option->check(CLI::PositiveNumber);
      break;
    case ValueCheck::Kind::non_negative:
      option->check(CLI::NonNegativeNumber);
      break;
    case ValueCheck::Kind::range:
      if (check.low == std::floor(check.low) && check.high == std::floor(check.high))
        option->check(CLI::Range(static_cast<int64_t>(check.low),  // shown as integers
                                 static_cast<int64_t>(check.high)));
      else
        option->check(CLI::Range(check.low, check.high));
      break;
    case ValueCheck::Kind::member_of:
      option->check(CLI::IsMember(check.members));
      break;
  }
}

template <typename T>
void add(CLI::App& app, const std::string& name, T& value, const std::string& help,
         const ValueCheck& check) {
  apply(app.add_option(name, value, help)->capture_default_str(), check);
}

}  // namespace

CommandLine::CommandLine(const std::string& description, const std::string& program_name)
    : app_(std::make_unique<CLI::App>(description, program_name)) {}

CommandLine::~CommandLine() = default;

void CommandLine::option(const std::string& name, int& value, const std::string& help,
                         ValueCheck check) {
  add(*app_, name, value, help, check);
}
void CommandLine::option(const std::string& name, int64_t& value, const std::string& help,
                         ValueCheck check) {
  add(*app_, name, value, help, check);
}
void CommandLine::option(const std::string& name, uint64_t& value, const std::string& help,
                         ValueCheck check) {
  add(*app_, name, value, help, check);
}
void CommandLine::option(const std::string& name, double& value, const std::string& help,
                         ValueCheck check) {
  add(*app_, name, value, help, check);
}
void CommandLine::option(const std::string& name, std::string& value, const std::string& help,
                         ValueCheck check) {
  add(*app_, name, value, help, check);
}
void CommandLine::option(const std::string& name, std::vector<std::string>& values,
                         const std::string& help, int count) {
  app_->add_option(name, values, help)->expected(count);
}
void CommandLine::flag(const std::string& name, bool& value, const std::string& help) {
  app_->add_flag(name, value, help);
}

std::optional<int> CommandLine::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app_->exit(e);  // prints the help (status 0) or the error (non-zero)
  }
  return std::nullopt;
}

}  // namespace aclgrad::examples
