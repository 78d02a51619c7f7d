#include "examples/common/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace aclgrad::examples {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// "Nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks over span.
double tick_step(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string tick_label(double v, double step) {
  char buf[32];
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < step * 1e-6 ? 0.0 : v);
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  // Placeholder for empty ranges, a margin for flat ones, then snapped to the tick grid.
  void finish(bool pad) {
    if (lo > hi) lo = 0, hi = 1;
    if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
    if (pad) {
      const double m = 0.05 * (hi - lo);
      lo -= m, hi += m;
    }
  }
};

void render_chart(std::ostringstream& out, const Chart& chart, double ox, int w, int h) {
  const double left = ox + 62, right = ox + w - 16, top = 34, bottom = h - 48;
  Range xr, yr;
  for (const Series& s : chart.series) {
    for (size_t i = 0; i < std::min(s.xs.size(), s.ys.size()); ++i)
      xr.add(s.xs[i]), yr.add(s.ys[i]);
  }
  xr.finish(false);
  yr.finish(true);
  auto px = [&](double x) { return left + (x - xr.lo) / (xr.hi - xr.lo) * (right - left); };
  auto py = [&](double y) { return bottom - (y - yr.lo) / (yr.hi - yr.lo) * (bottom - top); };

  out << "<text x=\"" << fmt((left + right) / 2) << "\" y=\"20\" text-anchor=\"middle\" "
      << "font-size=\"15\" font-weight=\"bold\">" << escape(chart.title) << "</text>\n";
  // Grid and tick labels.
  const double xs = tick_step(xr.hi - xr.lo, 6), ys = tick_step(yr.hi - yr.lo, 6);
  for (double x = std::ceil(xr.lo / xs) * xs; x <= xr.hi + 1e-9 * xs; x += xs) {
    out << "<line x1=\"" << fmt(px(x)) << "\" y1=\"" << fmt(top) << "\" x2=\"" << fmt(px(x))
        << "\" y2=\"" << fmt(bottom) << "\" stroke=\"#e4e4e4\"/>\n"
        << "<text x=\"" << fmt(px(x)) << "\" y=\"" << fmt(bottom + 16)
        << "\" text-anchor=\"middle\" font-size=\"11\">" << tick_label(x, xs) << "</text>\n";
  }
  for (double y = std::ceil(yr.lo / ys) * ys; y <= yr.hi + 1e-9 * ys; y += ys) {
    out << "<line x1=\"" << fmt(left) << "\" y1=\"" << fmt(py(y)) << "\" x2=\"" << fmt(right)
        << "\" y2=\"" << fmt(py(y)) << "\" stroke=\"#e4e4e4\"/>\n"
        << "<text x=\"" << fmt(left - 6) << "\" y=\"" << fmt(py(y) + 4)
        << "\" text-anchor=\"end\" font-size=\"11\">" << tick_label(y, ys) << "</text>\n";
  }
  // Axes and labels.
  out << "<polyline points=\"" << fmt(left) << "," << fmt(top) << " " << fmt(left) << ","
      << fmt(bottom) << " " << fmt(right) << "," << fmt(bottom)
      << "\" fill=\"none\" stroke=\"#000\"/>\n"
      << "<text x=\"" << fmt((left + right) / 2) << "\" y=\"" << fmt(bottom + 36)
      << "\" text-anchor=\"middle\" font-size=\"12\">" << escape(chart.x_label) << "</text>\n"
      << "<text transform=\"translate(" << fmt(ox + 16) << "," << fmt((top + bottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << escape(chart.y_label)
      << "</text>\n";
  // Series, then the legend (top right).
  double ly = top + 14;
  for (const Series& s : chart.series) {
    const size_t n = std::min(s.xs.size(), s.ys.size());
    out << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"1.8\" points=\"";
    for (size_t i = 0; i < n; ++i) {
      if (std::isfinite(s.ys[i])) out << fmt(px(s.xs[i])) << "," << fmt(py(s.ys[i])) << " ";
    }
    out << "\"/>\n";
    if (s.markers) {
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.ys[i])) continue;
        out << "<circle cx=\"" << fmt(px(s.xs[i])) << "\" cy=\"" << fmt(py(s.ys[i]))
            << "\" r=\"3\" fill=\"" << s.color << "\"/>\n";
      }
    }
    out << "<line x1=\"" << fmt(right - 120) << "\" y1=\"" << fmt(ly - 4) << "\" x2=\""
        << fmt(right - 100) << "\" y2=\"" << fmt(ly - 4) << "\" stroke=\"" << s.color
        << "\" stroke-width=\"2\"/>\n"
        << "<text x=\"" << fmt(right - 95) << "\" y=\"" << fmt(ly) << "\" font-size=\"11\">"
        << escape(s.name) << "</text>\n";
    ly += 16;
  }
}

}  // namespace

std::string render_svg(const std::vector<Chart>& charts, int chart_width, int chart_height) {
  std::ostringstream out;
  const int width = chart_width * static_cast<int>(std::max<size_t>(charts.size(), 1));
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << chart_height << "\" viewBox=\"0 0 " << width << " " << chart_height
      << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  for (size_t i = 0; i < charts.size(); ++i) {
    render_chart(out, charts[i], static_cast<double>(i) * chart_width, chart_width, chart_height);
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace aclgrad::examples
