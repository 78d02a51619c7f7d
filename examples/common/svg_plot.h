// A tiny SVG line-chart writer (no dependencies): charts side by side, each with axes, ticks,
// labels, a legend and any number of line series.
//
//   Chart loss{.title = "loss", .x_label = "epoch", .y_label = "cross-entropy"};
//   loss.series.push_back({.name = "train", .color = "#1f77b4", .xs = {...}, .ys = {...}});
//   std::string svg = render_svg({loss, accuracy});
#pragma once

#include <string>
#include <vector>

namespace aclgrad::examples {

struct Series {
  std::string name;
  std::string color = "#1f77b4";
  std::vector<double> xs, ys;
  /// Draw a dot at each point (for sparse series such as once-per-epoch values).
  bool markers = false;
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

/// An SVG document with the charts side by side, each chart_width x chart_height pixels.
/// Axis ranges cover every finite point (with a margin); empty charts get a placeholder range.
std::string render_svg(const std::vector<Chart>& charts, int chart_width = 480,
                       int chart_height = 340);

}  // namespace aclgrad::examples
