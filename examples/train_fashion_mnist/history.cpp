#include "examples/train_fashion_mnist/history.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "examples/common/svg_plot.h"

namespace aclgrad::fmnist {

namespace {

// %.17g round-trips doubles exactly, so a resumed run rewrites identical numbers.
std::string row(const EpochRecord& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                static_cast<long long>(r.epoch), static_cast<long long>(r.step), r.train_loss,
                r.test_loss, r.test_acc, r.lr, r.seconds, r.samples_per_second);
  return buf;
}

}  // namespace

std::string History::csv() const {
  std::string out = "epoch,step,train_loss,test_loss,test_acc,lr,seconds,samples_per_s\n";
  for (const EpochRecord& r : epochs) out += row(r);
  return out;
}

std::string History::svg() const {
  using examples::Chart;
  using examples::Series;
  auto series = [](const char* name, const char* color, bool markers) {
    Series s;
    s.name = name, s.color = color, s.markers = markers;
    return s;
  };
  Series curve = series("train (running)", "#9ecae1", false);
  for (const LossPoint& p : train_curve) curve.xs.push_back(p.epoch), curve.ys.push_back(p.loss);
  Series train = series("train (epoch)", "#1f77b4", true);
  Series test = series("test", "#d62728", true);
  Series acc = series("test accuracy", "#2ca02c", true);
  for (const EpochRecord& r : epochs) {
    const double x = static_cast<double>(r.epoch);
    train.xs.push_back(x), train.ys.push_back(r.train_loss);
    test.xs.push_back(x), test.ys.push_back(r.test_loss);
    acc.xs.push_back(x), acc.ys.push_back(100 * r.test_acc);
  }
  Chart loss{.title = "Fashion-MNIST loss",
             .x_label = "epoch",
             .y_label = "cross-entropy",
             .series = {curve, train, test}};
  Chart accuracy{.title = "Fashion-MNIST test accuracy",
                 .x_label = "epoch",
                 .y_label = "accuracy (%)",
                 .series = {acc}};
  return examples::render_svg({loss, accuracy});
}

void History::store(std::map<std::string, std::string>& metadata) const {
  std::string rows;
  for (const EpochRecord& r : epochs) rows += row(r);
  metadata["history.epochs"] = rows;
  std::string curve;
  char buf[64];
  for (const LossPoint& p : train_curve) {
    std::snprintf(buf, sizeof buf, "%.17g,%.17g\n", p.epoch, p.loss);
    curve += buf;
  }
  metadata["history.curve"] = curve;
}

History History::parse(const std::map<std::string, std::string>& metadata) {
  History h;
  auto get = [&](const char* key) {
    const auto it = metadata.find(key);
    if (it == metadata.end()) throw std::runtime_error(std::string("missing metadata ") + key);
    return it->second;
  };
  std::istringstream rows(get("history.epochs"));
  for (std::string line; std::getline(rows, line);) {
    EpochRecord r;
    long long epoch = 0, step = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lf,%lf,%lf,%lf,%lf,%lf", &epoch, &step, &r.train_loss,
                    &r.test_loss, &r.test_acc, &r.lr, &r.seconds, &r.samples_per_second) != 8) {
      throw std::runtime_error("malformed history.epochs row '" + line + "'");
    }
    r.epoch = epoch, r.step = step;
    h.epochs.push_back(r);
  }
  std::istringstream curve(get("history.curve"));
  for (std::string line; std::getline(curve, line);) {
    LossPoint p;
    if (std::sscanf(line.c_str(), "%lf,%lf", &p.epoch, &p.loss) != 2) {
      throw std::runtime_error("malformed history.curve row '" + line + "'");
    }
    h.train_curve.push_back(p);
  }
  return h;
}

}  // namespace aclgrad::fmnist
