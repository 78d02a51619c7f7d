// A progress bar for training loops, on stderr: one line redrawn with '\r' when stderr is a
// terminal, otherwise a plain line every `plain_interval` seconds (so logs stay readable).
//
//   ProgressBar bar("epoch 1/5", loader.size());
//   for (...) { ...; bar.update(done, {{"loss", loss}}, samples_per_second); }
//   bar.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace aclgrad::examples {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, std::FILE* out = stderr,
              double plain_interval = 10.0);
  /// done steps out of total; metrics are shown as "name value"; rate in samples/s.
  void update(int64_t done, const std::vector<std::pair<std::string, double>>& metrics,
              double samples_per_second);
  /// Ends the line (terminal) or prints the final state (plain).
  void finish();
  /// Whether the output is a terminal (bar redrawn in place).
  bool interactive() const { return interactive_; }

 private:
  std::string render(int64_t done, const std::vector<std::pair<std::string, double>>& metrics,
                     double samples_per_second) const;

  std::string label_;
  int64_t total_;
  std::FILE* out_;
  double plain_interval_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::string last_line_;
};

/// "1:05" / "1:02:03" for a duration in seconds.
std::string format_duration(double seconds);

}  // namespace aclgrad::examples
