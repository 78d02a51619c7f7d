#include "examples/common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace aclgrad::examples {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

ProgressBar::ProgressBar(std::string label, int64_t total, std::FILE* out, double plain_interval)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      out_(out),
      plain_interval_(plain_interval),
      interactive_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::render(int64_t done,
                                const std::vector<std::pair<std::string, double>>& metrics,
                                double samples_per_second) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0);
  const double eta = done > 0 ? elapsed * (1 - frac) / frac : NAN;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(frac * kWidth);
  std::string line = label_ + " [" + std::string(filled, '#') + std::string(kWidth - filled, '.') +
                     "] " + std::to_string(done) + "/" + std::to_string(total_);
  char buf[64];
  for (const auto& [name, value] : metrics) {
    std::snprintf(buf, sizeof buf, " %s %.4f", name.c_str(), value);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, " %.0f samples/s", samples_per_second);
  line += buf;
  // Appended piece by piece: GCC 12 reports a false -Wrestrict on `" " + std::string` chains.
  line += ' ';
  line += format_duration(elapsed);
  line += " ETA ";
  line += format_duration(eta);
  return line;
}

void ProgressBar::update(int64_t done, const std::vector<std::pair<std::string, double>>& metrics,
                         double samples_per_second) {
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  last_line_ = render(done, metrics, samples_per_second);
  if (interactive_) {
    if (since < 0.1 && done < total_) return;  // at most ~10 redraws per second
    std::fprintf(out_, "\r%s\033[K", last_line_.c_str());
  } else {
    if (since < plain_interval_) return;
    std::fprintf(out_, "%s\n", last_line_.c_str());
  }
  std::fflush(out_);
  last_draw_ = now;
}

void ProgressBar::finish() {
  if (interactive_) {
    std::fprintf(out_, "\r%s\033[K\n", last_line_.c_str());
  } else if (!last_line_.empty()) {
    std::fprintf(out_, "%s\n", last_line_.c_str());
  }
  std::fflush(out_);
}

}  // namespace aclgrad::examples
