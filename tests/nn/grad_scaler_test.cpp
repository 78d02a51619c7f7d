// GradScaler: scaling, unscale_ (values, inf/NaN detection, before clipping), skipped steps,
// backoff and growth of the scale as PyTorch's _amp_update_scale_, the order rules, a disabled
// scaler, and its state through a checkpoint file.
#include "nn/grad_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/checkpoint.h"
#include "nn/clip.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"
#include "tests/nn/temp_dir.h"

namespace aclgrad::amp {
namespace {

using testing::message_of;
using Vec = std::vector<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A float32 parameter holding values, with gradient grad.
Tensor param(const Vec& values, const Vec& grad) {
  const Shape shape{static_cast<int64_t>(values.size())};
  Tensor p = from_vector(values, shape, Dtype::Float32).requires_grad_();
  p.set_grad(from_vector(grad, shape, Dtype::Float32));
  return p;
}

Vec values_of(const Tensor& t) {
  return t.to_vector<double>();
}

TEST(GradScaler, ScaleMultipliesTheLossAndItsGradients) {
  GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  const Tensor w = from_vector(Vec{1.5, -2.0}, {2}, Dtype::Float32).requires_grad_();
  const Tensor loss = sum(mul(w, w));
  const Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.item<double>(), 65536.0 * 6.25);
  scaled.backward();
  EXPECT_EQ(values_of(w.grad()), (Vec{65536.0 * 3.0, 65536.0 * -4.0}));
}

TEST(GradScaler, ScalesA16BitLossInFloat32SoItCannotOverflow) {
  GradScaler scaler;
  const Tensor loss = full({}, 2.0, Dtype::Float16);
  const Tensor scaled = scaler.scale(loss);  // 131072 > float16's largest finite 65504
  EXPECT_EQ(scaled.dtype(), Dtype::Float32);
  EXPECT_EQ(scaled.item<double>(), 131072.0);
  const std::string msg =
      message_of<DtypeError>([&] { (void)scaler.scale(zeros({2}, Dtype::Int64)); });
  EXPECT_NE(msg.find("GradScaler::scale: outputs must be floating point, got int64"),
            std::string::npos)
      << msg;
}

TEST(GradScaler, UnscaleDividesByTheScaleExactlyAndStepUsesTheTrueGradients) {
  GradScaler scaler({.init_scale = 1024});
  Tensor p = param({1, 2}, {1024 * 0.5, 1024 * -0.25});
  Tensor q = param({1, 2}, {0.5, -0.25});  // the same update without scaling
  optim::SGD opt({p}, {.lr = 0.1}), ref({q}, {.lr = 0.1});
  EXPECT_TRUE(scaler.step(opt));
  ref.step();
  EXPECT_EQ(values_of(p.grad()), (Vec{0.5, -0.25}));
  EXPECT_EQ(values_of(p), values_of(q));
  scaler.update();
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(GradScaler, UnscaleBeforeClippingClipsTheTrueNormAndStepDoesNotDivideAgain) {
  GradScaler scaler({.init_scale = 256});
  Tensor p = param({0, 0}, {256 * 3.0, 256 * 4.0});  // true gradient (3, 4), norm 5
  optim::SGD opt({p}, {.lr = 1.0});
  scaler.unscale_(opt);
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({p}, 1.0), 5.0);
  const Vec clipped = values_of(p.grad());
  EXPECT_NEAR(clipped[0], 0.6, 1e-6);
  EXPECT_NEAR(clipped[1], 0.8, 1e-6);
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_EQ(values_of(p.grad()), clipped);  // not divided a second time
  EXPECT_EQ(values_of(p), (Vec{-clipped[0], -clipped[1]}));
}

TEST(GradScaler, InfOrNanGradientSkipsTheStepAndBacksOff) {
  for (double bad : {kInf, -kInf, std::nan("")}) {
    SCOPED_TRACE(bad);
    GradScaler scaler({.init_scale = 4096, .growth_interval = 3});
    Tensor p = param({1, 2}, {1.0, 1.0}), r = param({5}, {0.0});
    optim::Adam opt({p, r}, {.lr = 0.1});
    scaler.step(opt);  // a clean step first: the tracker counts it
    scaler.update();
    EXPECT_EQ(scaler.growth_tracker(), 1);
    p.set_grad(from_vector(Vec{1, 1}, {2}, Dtype::Float32));
    r.set_grad(from_vector(Vec{bad}, {1}, Dtype::Float32));
    const Vec before = values_of(p);
    const Tensor steps_before = opt.state(p).at("step").clone();
    EXPECT_FALSE(scaler.step(opt));
    EXPECT_EQ(values_of(p), before);  // no update, and no optimizer state advanced
    EXPECT_EQ(opt.state(p).at("step").item<double>(), steps_before.item<double>());
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 2048.0);
    EXPECT_EQ(scaler.growth_tracker(), 0);
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanStepsButNotPastFloat32) {
  GradScaler scaler({.init_scale = 8, .growth_factor = 4, .growth_interval = 3});
  Tensor p = param({1}, {1});
  optim::SGD opt({p}, {.lr = 0.0});
  const std::vector<double> scales = {8, 8, 32, 32, 32, 128};
  const std::vector<int64_t> trackers = {1, 2, 0, 1, 2, 0};
  for (size_t i = 0; i < scales.size(); ++i) {
    scaler.step(opt);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), scales[i]) << "update " << i;
    EXPECT_EQ(scaler.growth_tracker(), trackers[i]) << "update " << i;
  }
  GradScaler huge({.init_scale = 3e38, .growth_interval = 1});
  huge.step(opt);
  huge.update();
  EXPECT_EQ(huge.get_scale(), static_cast<double>(3e38f));  // x2 would overflow float32: kept
  EXPECT_EQ(huge.growth_tracker(), 0);
}

TEST(GradScaler, UpdateWithANewScaleSetsIt) {
  GradScaler scaler;
  Tensor p = param({1}, {1});
  optim::SGD opt({p});
  scaler.step(opt);
  scaler.update(512.0);
  EXPECT_EQ(scaler.get_scale(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_NE(message_of<Error>([&] {
              scaler.update(kInf);
            }).find("new_scale must be positive and finite, got inf"),
            std::string::npos);
  EXPECT_EQ(scaler.get_scale(), 512.0);
}

TEST(GradScaler, RefusesCallsOutOfOrder) {
  GradScaler scaler;
  Tensor p = param({1}, {1});
  optim::SGD opt({p});
  EXPECT_NE(message_of<Error>([&] { scaler.update(); }).find("no inf checks were recorded"),
            std::string::npos);
  scaler.unscale_(opt);
  EXPECT_NE(message_of<Error>([&] {
              scaler.unscale_(opt);
            }).find("unscale_: already called on this optimizer since the last update()"),
            std::string::npos);
  scaler.step(opt);
  EXPECT_NE(message_of<Error>([&] { scaler.step(opt); }).find("step: already called"),
            std::string::npos);
  EXPECT_NE(message_of<Error>([&] { scaler.unscale_(opt); }).find("called after step()"),
            std::string::npos);
  scaler.update();
  scaler.unscale_(opt);  // a new iteration
  Tensor no_grad = from_vector(Vec{1}, {1}, Dtype::Float32).requires_grad_();
  optim::SGD empty({no_grad});
  EXPECT_NE(message_of<Error>([&] { scaler.step(empty); }).find("none of its parameters"),
            std::string::npos);
}

TEST(GradScaler, RefusesBadOptions) {
  EXPECT_NE(message_of<Error>([] {
              GradScaler s({.growth_factor = 1.0});
            }).find("growth_factor should be > 1, got 1"),
            std::string::npos);
  EXPECT_NE(message_of<Error>([] {
              GradScaler s({.backoff_factor = 1.5});
            }).find("backoff_factor should be in (0, 1), got 1.5"),
            std::string::npos);
  EXPECT_NE(message_of<Error>([] { GradScaler s({.init_scale = 1e39}); }).find("init_scale"),
            std::string::npos);
}

TEST(GradScaler, DisabledIsAPassThrough) {
  GradScaler scaler({.enabled = false});
  Tensor p = param({1, 2}, {1, kInf});
  optim::SGD opt({p}, {.lr = 1.0});
  const Tensor loss = full({}, 3.0);
  EXPECT_EQ(scaler.scale(loss).impl(), loss.impl());
  EXPECT_TRUE(scaler.step(opt));  // not skipped: nothing is checked
  EXPECT_EQ(values_of(p), (Vec{0, -kInf}));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_TRUE(scaler.state_dict().metadata.empty());
}

TEST(GradScaler, StateSurvivesACheckpointFile) {
  GradScaler scaler(
      {.init_scale = 1000, .growth_factor = 3, .backoff_factor = 0.25, .growth_interval = 4});
  Tensor p = param({1}, {1});
  optim::SGD opt({p}, {.lr = 0.0});
  for (double g : {kInf, 1.0, 1.0}) {  // backoff, then two clean steps
    p.set_grad(full({1}, g));
    scaler.step(opt);
    scaler.update();
  }
  ASSERT_EQ(scaler.get_scale(), 250.0);
  ASSERT_EQ(scaler.growth_tracker(), 2);
  testing::TempDir dir;
  nn::Metadata meta;
  for (const auto& [k, v] : scaler.state_dict().metadata) meta["grad_scaler." + k] = v;
  nn::save_safetensors(dir.file("ckpt.safetensors"), nn::TensorMap{{"p", p}}, meta);

  nn::Metadata loaded;
  nn::load_safetensors(dir.file("ckpt.safetensors"), &loaded);
  optim::StateDict dict;
  for (const auto& [k, v] : loaded) dict.metadata[k.substr(std::string("grad_scaler.").size())] = v;
  GradScaler restored;
  restored.load_state_dict(dict);
  EXPECT_EQ(restored.get_scale(), 250.0);
  EXPECT_EQ(restored.growth_tracker(), 2);
  EXPECT_EQ(restored.options().growth_factor, 3.0);
  EXPECT_EQ(restored.options().backoff_factor, 0.25);
  EXPECT_EQ(restored.options().growth_interval, 4);
  // Both continue the same way: two more clean steps grow the scale x3.
  for (GradScaler* s : {&scaler, &restored}) {
    for (int i = 0; i < 2; ++i) {
      p.set_grad(full({1}, 1.0));
      s->step(opt);
      s->update();
    }
    EXPECT_EQ(s->get_scale(), 750.0);
  }
}

TEST(GradScaler, LoadStateDictRefusesIncompleteStateAndChangesNothing) {
  GradScaler scaler({.init_scale = 64});
  EXPECT_NE(message_of<Error>([&] { scaler.load_state_dict({}); }).find("the state dict is empty"),
            std::string::npos);
  optim::StateDict dict = GradScaler().state_dict();
  dict.metadata.erase("growth_tracker");
  EXPECT_NE(message_of<Error>([&] {
              scaler.load_state_dict(dict);
            }).find("metadata has no 'growth_tracker'"),
            std::string::npos);
  dict = GradScaler().state_dict();
  dict.metadata["growth_tracker"] = "-1";
  EXPECT_NE(message_of<Error>([&] {
              scaler.load_state_dict(dict);
            }).find("growth_tracker must be a count, got -1"),
            std::string::npos);
  dict = GradScaler().state_dict();
  dict.metadata["backoff_factor"] = "2";
  EXPECT_NE(message_of<Error>([&] { scaler.load_state_dict(dict); }).find("backoff_factor"),
            std::string::npos);
  EXPECT_EQ(scaler.get_scale(), 64.0);
}

}  // namespace
}  // namespace aclgrad::amp
