// Layers: parameter shapes and counts as in PyTorch, default init bounds, forward = the
// functional op, options and reprs (strings checked against torch 1.13), BatchNorm's running
// statistics, Dropout in train/eval, a tiny end-to-end training run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "autograd/autograd.h"
#include "nn/nn.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

void expect_same_values(const Tensor& a, const Tensor& b, double tol = 0.0) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) ASSERT_NEAR(va[i], vb[i], tol) << "element " << i;
}

// Default init: U(±1/√fan_in); with this many samples the largest |w| is close to the bound.
void expect_default_init(const Tensor& weight, const Tensor& bias, int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  EXPECT_LE(max_abs(weight), bound);
  if (weight.numel() >= 200) {
    EXPECT_GE(max_abs(weight), 0.95 * bound);
  }
  if (bias.defined()) {
    EXPECT_LE(max_abs(bias), bound);
  }
}

TEST(Linear, ShapesInitAndForward) {
  manual_seed(1);
  nn::Linear fc(400, 256);
  EXPECT_EQ(fc.weight.sizes(), (Shape{256, 400}));
  EXPECT_EQ(fc.bias.sizes(), (Shape{256}));
  expect_default_init(fc.weight, fc.bias, 400);
  // U(-b, b) has variance b²/3.
  const auto w = fc.weight.to_vector<double>();
  double mean = 0, var = 0;
  for (double v : w) mean += v;
  mean /= static_cast<double>(w.size());
  for (double v : w) var += (v - mean) * (v - mean);
  var /= static_cast<double>(w.size());
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(var / (0.05 * 0.05 / 3.0), 1.0, 0.03);

  Tensor x = randn({3, 5, 400});
  EXPECT_EQ(fc(x).sizes(), (Shape{3, 5, 256}));
  expect_same_values(fc(x), linear(x, fc.weight, fc.bias));
  nn::Linear nobias(nn::LinearOptions(3, 2).bias(false));
  EXPECT_FALSE(nobias.bias.defined());
  EXPECT_EQ(nobias.named_parameters().size(), 1u);
  EXPECT_EQ(nobias.extra_repr(), "in_features=3, out_features=2, bias=False");
}

TEST(Conv, WeightShapesAndCountsForEveryRank) {
  EXPECT_EQ(nn::Conv1d(4, 8, 3).weight.sizes(), (Shape{8, 4, 3}));
  EXPECT_EQ(nn::Conv2d(nn::Conv2dOptions(6, 4, {3, 5}).groups(2)).weight.sizes(),
            (Shape{4, 3, 3, 5}));
  nn::Conv3d c3(2, 4, 3);
  EXPECT_EQ(c3.weight.sizes(), (Shape{4, 2, 3, 3, 3}));
  EXPECT_EQ(c3.num_parameters(), 4 * 2 * 27 + 4);
  EXPECT_EQ(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(6, 4, 3).groups(2)).weight.sizes(),
            (Shape{6, 2, 3, 3}));
  EXPECT_EQ(nn::ConvTranspose1d(3, 5, 2).num_parameters(), 3 * 5 * 2 + 5);
  EXPECT_EQ(nn::ConvTranspose3d(nn::ConvTranspose3dOptions(2, 2, 2).bias(false)).num_parameters(),
            2 * 2 * 8);
  nn::ConvTBC tbc(4, 6, 3);
  EXPECT_EQ(tbc.weight.sizes(), (Shape{3, 4, 6}));
  EXPECT_EQ(tbc.bias.sizes(), (Shape{6}));
}

TEST(Conv, DefaultInitUsesFanInOfTheWeight) {
  manual_seed(2);
  nn::Conv2d grouped(nn::Conv2dOptions(6, 32, 3).groups(2));
  expect_default_init(grouped.weight, grouped.bias, 3 * 9);  // C_in / groups * k * k
  // ConvTranspose: fan_in = weight.size(1) * prod(k) = C_out / groups * prod(k).
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(16, 8, {2, 3}).groups(2));
  expect_default_init(up.weight, up.bias, 4 * 6);
  nn::ConvTBC tbc(40, 20, 3);  // the Conv1d default: fan_in = C_in * K
  expect_default_init(tbc.weight, tbc.bias, 120);
}

TEST(Conv, ForwardIsTheFunctionalOp) {
  manual_seed(3);
  Tensor x2 = randn({2, 4, 9, 8});
  nn::Conv2d c(nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).dilation({1, 2}).groups(2));
  expect_same_values(c(x2), conv2d(x2, c.weight, c.bias,
                                   {.stride = 2, .padding = 1, .dilation = {1, 2}, .groups = 2}));
  Tensor x1 = randn({2, 3, 10});
  nn::Conv1d same(nn::Conv1dOptions(3, 5, 4).padding("same").dilation(2).bias(false));
  EXPECT_EQ(same(x1).sizes(), (Shape{2, 5, 10}));
  nn::Conv1d valid(nn::Conv1dOptions(3, 5, 4).padding("valid"));
  EXPECT_EQ(valid(x1).sizes(), (Shape{2, 5, 7}));
  Tensor x3 = randn({1, 2, 5, 6, 7});
  nn::Conv3d c3(nn::Conv3dOptions(2, 3, {1, 2, 3}).padding({0, 1, 1}));
  expect_same_values(c3(x3), conv3d(x3, c3.weight, c3.bias, {.padding = {0, 1, 1}}));
  nn::ConvTranspose2d t(nn::ConvTranspose2dOptions(4, 2, 3).stride(2).padding(1).output_padding(1));
  const Tensor y = t(x2);
  EXPECT_EQ(y.sizes(), (Shape{2, 2, 18, 16}));
  expect_same_values(
      y, conv_transpose2d(x2, t.weight, t.bias, {.stride = 2, .padding = 1, .output_padding = 1}));
}

TEST(Conv, ReflectAndReplicatePaddingModesPadThenConvolve) {
  manual_seed(4);
  Tensor x = randn({1, 2, 6, 7});
  for (const char* mode : {"reflect", "replicate"}) {
    nn::Conv2d c(nn::Conv2dOptions(2, 3, 3).padding({1, 2}).padding_mode(mode));
    const Tensor want = conv2d(pad(x, {2, 2, 1, 1}, mode), c.weight, c.bias);
    expect_same_values(c(x), want);
    EXPECT_EQ(c(x).sizes(), (Shape{1, 3, 6, 9}));
  }
  nn::Conv1d same(nn::Conv1dOptions(2, 2, 4).padding("same").padding_mode("reflect"));
  Tensor x1 = randn({1, 2, 8});
  // total padding 3: 1 on the left, 2 on the right, as PyTorch.
  expect_same_values(same(x1), conv1d(pad(x1, {1, 2}, "reflect"), same.weight, same.bias));
}

TEST(Conv, ConvTBCIsAConv1dInTimeBatchChannelLayout) {
  manual_seed(5);
  nn::ConvTBC tbc(nn::ConvTBCOptions(3, 4, 3).padding(1));
  Tensor x = randn({7, 2, 3}, Dtype::Float64);
  tbc.to(Dtype::Float64);
  const Tensor y = tbc(x);
  EXPECT_EQ(y.sizes(), (Shape{7, 2, 4}));
  expect_same_values(y, conv_tbc(x, tbc.weight, tbc.bias, 1));
  // The same numbers as Conv1d on [B, C, T] with weight [C_out, C_in, K].
  const Tensor ref =
      conv1d(x.permute({1, 2, 0}), tbc.weight.permute({2, 1, 0}), tbc.bias, {.padding = 1})
          .permute({2, 0, 1});
  expect_same_values(y, ref, 1e-12);
  EXPECT_EQ(tbc.repr(), "ConvTBC(3, 4, kernel_size=(3,), padding=(1,))");
}

TEST(Conv, OptionErrors) {
  EXPECT_NE(message_of<Error>([] {
              nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2));
            }).find("in_channels (3) must be divisible by groups (2)"),
            std::string::npos);
  EXPECT_NE(message_of<Error>([] {
              nn::Conv2d(nn::Conv2dOptions(4, 3, 3).groups(2));
            }).find("out_channels (3)"),
            std::string::npos);
  EXPECT_NE(message_of<Error>([] {
              nn::Conv2d(nn::Conv2dOptions(2, 2, 3).stride(2).padding("same"));
            }).find("padding='same' is not supported for strided convolutions"),
            std::string::npos);
  EXPECT_THROW(nn::Conv1dOptions(2, 2, 3).padding("full"), Error);
  EXPECT_THROW(nn::Conv1d(nn::Conv1dOptions(2, 2, 3).padding_mode("circular")), Error);
  EXPECT_THROW(nn::Conv2dOptions(2, 2, {3, 3, 3}), ShapeError);
}

TEST(Layers, ReprsMatchPyTorch) {
  EXPECT_EQ(
      nn::Conv1d(
          nn::Conv1dOptions(4, 8, 3).padding("same").dilation(2).groups(2).padding_mode("reflect"))
          .repr(),
      "Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=same, dilation=(2,), groups=2, "
      "padding_mode=reflect)");
  EXPECT_EQ(nn::ConvTranspose3d(nn::ConvTranspose3dOptions(4, 6, {2, 3, 4})
                                    .stride(2)
                                    .padding(1)
                                    .output_padding(1)
                                    .groups(2)
                                    .bias(false))
                .repr(),
            "ConvTranspose3d(4, 6, kernel_size=(2, 3, 4), stride=(2, 2, 2), padding=(1, 1, 1), "
            "output_padding=(1, 1, 1), groups=2, bias=False)");
  EXPECT_EQ(nn::AvgPool2d(nn::AvgPool2dOptions(3).stride(1).padding(1)).repr(),
            "AvgPool2d(kernel_size=3, stride=1, padding=1)");
  EXPECT_EQ(nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(2).padding(1).dilation(2).ceil_mode(true))
                .repr(),
            "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)");
  EXPECT_EQ(nn::AdaptiveAvgPool2d(1).repr(), "AdaptiveAvgPool2d(output_size=1)");
  EXPECT_EQ(nn::AdaptiveAvgPool2d({2, 3}).repr(), "AdaptiveAvgPool2d(output_size=(2, 3))");
  EXPECT_EQ(nn::LeakyReLU().repr(), "LeakyReLU(negative_slope=0.01)");
  EXPECT_EQ(nn::GELU().repr(), "GELU(approximate='none')");
  EXPECT_EQ(nn::GELU("tanh").repr(), "GELU(approximate='tanh')");
  EXPECT_EQ(nn::Softplus().repr(), "Softplus(beta=1, threshold=20)");
  EXPECT_EQ(nn::Softmax(1).repr(), "Softmax(dim=1)");
  EXPECT_EQ(nn::LogSoftmax(-1).repr(), "LogSoftmax(dim=-1)");
  EXPECT_EQ(nn::Identity().repr(), "Identity()");
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(2)).repr(),
            "Flatten(start_dim=0, end_dim=2)");
  EXPECT_EQ(nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(-1)).repr(),
            "Embedding(10, 3, padding_idx=9)");
  EXPECT_EQ(nn::BatchNorm1d(nn::BatchNormOptions(5).momentum(std::nullopt).affine(false)).repr(),
            "BatchNorm1d(5, eps=1e-05, momentum=None, affine=False, track_running_stats=True)");
}

TEST(Pooling, ForwardIsTheFunctionalOp) {
  manual_seed(6);
  Tensor x = randn({2, 3, 8, 9});
  nn::MaxPool2d mp(2);
  EXPECT_EQ(mp.options.stride().vec(), (Shape{2, 2}));  // stride defaults to kernel_size
  expect_same_values(mp(x), max_pool2d(x, {2, 2}, {2, 2}));
  nn::AvgPool2d ap(nn::AvgPool2dOptions(3).stride(1).padding(1).count_include_pad(false));
  expect_same_values(ap(x), avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}, false, false));
  nn::AvgPool2d div(nn::AvgPool2dOptions({2, 3}).divisor_override(2).ceil_mode(true));
  expect_same_values(div(x), avg_pool2d(x, {2, 3}, {2, 3}, {0, 0}, true, true, 2));
  Tensor x1 = randn({2, 3, 11});
  nn::MaxPool1d mp1(nn::MaxPool1dOptions(3).stride(2).padding(1).dilation(2));
  expect_same_values(mp1(x1), max_pool1d(x1, {3}, {2}, {1}, {2}));
  expect_same_values(nn::AvgPool1d(2)(x1), avg_pool1d(x1, {2}));
  Tensor x3 = randn({1, 2, 4, 6, 6});
  EXPECT_EQ(nn::MaxPool3d(2)(x3).sizes(), (Shape{1, 2, 2, 3, 3}));
  EXPECT_EQ(nn::AvgPool3d(nn::AvgPool3dOptions({1, 2, 3}))(x3).sizes(), (Shape{1, 2, 4, 3, 2}));
  // Global average pooling is the mean over H and W.
  nn::AdaptiveAvgPool2d gap(1);
  expect_same_values(gap(x).reshape({2, 3}), mean(x, {2, 3}), 1e-6);
  EXPECT_EQ(nn::AdaptiveAvgPool2d({2, 3})(x).sizes(), (Shape{2, 3, 2, 3}));
}

TEST(BatchNorm, ParametersBuffersAndInit) {
  nn::BatchNorm2d bn(16);
  EXPECT_EQ(bn.weight.to_vector<float>(), std::vector<float>(16, 1.0f));
  EXPECT_EQ(bn.bias.to_vector<float>(), std::vector<float>(16, 0.0f));
  EXPECT_EQ(bn.running_mean.to_vector<float>(), std::vector<float>(16, 0.0f));
  EXPECT_EQ(bn.running_var.to_vector<float>(), std::vector<float>(16, 1.0f));
  EXPECT_EQ(bn.num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), Dtype::Int64);
  EXPECT_EQ(bn.state_dict().size(), 5u);
  nn::BatchNorm1d plain(nn::BatchNormOptions(4).affine(false).track_running_stats(false));
  EXPECT_TRUE(plain.state_dict().empty());
  EXPECT_FALSE(plain.weight.defined());
}

TEST(BatchNorm, TrainingUpdatesRunningStatisticsAsPyTorch) {
  manual_seed(7);
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).momentum(0.1));
  bn.to(Dtype::Float64);
  Tensor x = randn({4, 3, 2, 2}, Dtype::Float64);
  const Tensor y = bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  const auto xv = x.to_vector<double>();
  for (int64_t c = 0; c < 3; ++c) {
    std::vector<double> vals;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t i = 0; i < 4; ++i) vals.push_back(xv[static_cast<size_t>((n * 3 + c) * 4 + i)]);
    double m = 0, ss = 0;
    for (double v : vals) m += v;
    m /= 16;
    for (double v : vals) ss += (v - m) * (v - m);
    EXPECT_NEAR(bn.running_mean.at<double>({c}), 0.1 * m, 1e-12);
    EXPECT_NEAR(bn.running_var.at<double>({c}), 0.9 + 0.1 * ss / 15, 1e-12);  // unbiased
    // Output normalised with the biased batch variance.
    EXPECT_NEAR(y.at<double>({0, c, 0, 0}), (vals[0] - m) / std::sqrt(ss / 16 + 1e-5), 1e-9);
  }
  // Eval: the running statistics, left unchanged.
  bn.eval();
  const Tensor rm = bn.running_mean.clone(), rv = bn.running_var.clone();
  const Tensor ye = bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  expect_same_values(bn.running_mean, rm);
  expect_same_values(ye, (x - rm.reshape({1, 3, 1, 1})) / sqrt(rv.reshape({1, 3, 1, 1}) + 1e-5),
                     1e-12);
}

TEST(BatchNorm, CumulativeAverageWithoutMomentumAndNoTracking) {
  manual_seed(8);
  nn::BatchNorm1d bn(nn::BatchNormOptions(2).momentum(std::nullopt));
  Tensor a = randn({8, 2}), b = randn({8, 2});
  bn(a);
  bn(b);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  const Tensor want = (mean(a, {0}) + mean(b, {0})) / 2.0;  // factors 1, then 1/2
  expect_same_values(bn.running_mean, want, 1e-6);
  // Without running statistics, eval mode also normalises with the batch statistics.
  nn::BatchNorm1d free(nn::BatchNormOptions(2).track_running_stats(false));
  const Tensor yt = free(a);
  free.eval();
  expect_same_values(free(a), yt);
  EXPECT_NE(message_of<ShapeError>([&] {
              bn(randn({2, 2, 2, 2}));
            }).find("BatchNorm1d: expected 2D or 3D input (got 4D input)"),
            std::string::npos);
  EXPECT_THROW(nn::BatchNorm2d(3)(randn({2, 3, 4})), ShapeError);
  EXPECT_THROW(nn::BatchNorm3d(3)(randn({2, 3, 4, 4})), ShapeError);
}

TEST(Dropout, TrainingMasksAndEvalIsIdentity) {
  manual_seed(9);
  nn::Dropout drop(0.5);
  Tensor x = ones({20000});
  const auto y = drop(x).to_vector<float>();
  const auto zeros_n = std::count(y.begin(), y.end(), 0.0f);
  EXPECT_NEAR(static_cast<double>(zeros_n) / 20000.0, 0.5, 0.02);
  for (float v : y) ASSERT_TRUE(v == 0.0f || v == 2.0f);
  drop.eval();
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(nn::Dropout(1.5), Error);
}

TEST(Layers, FlattenActivationsAndIdentity) {
  manual_seed(10);
  Tensor x = randn({2, 3, 4, 5}).requires_grad_();
  nn::Flatten flat;
  const Tensor y = flat(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 60}));
  sum(y).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), std::vector<float>(120, 1.0f));
  Tensor z = randn({4, 6});
  expect_same_values(nn::ReLU()(z), relu(z));
  expect_same_values(nn::LeakyReLU(0.2)(z), leaky_relu(z, 0.2));
  expect_same_values(nn::Sigmoid()(z), sigmoid(z));
  expect_same_values(nn::Tanh()(z), tanh(z));
  expect_same_values(nn::GELU("tanh")(z), gelu(z, "tanh"));
  expect_same_values(nn::Softplus(nn::SoftplusOptions().beta(2).threshold(10))(z),
                     softplus(z, 2, 10));
  expect_same_values(nn::Softmax(1)(z), softmax(z, 1));
  expect_same_values(nn::LogSoftmax(0)(z), log_softmax(z, 0));
  EXPECT_EQ(nn::Identity()(z).impl(), z.impl());
  EXPECT_THROW(nn::GELU("fast"), Error);
}

TEST(Layers, TinyNetworkLearnsXor) {
  manual_seed(11);
  nn::Sequential net{std::make_shared<nn::Linear>(2, 16), std::make_shared<nn::Tanh>(),
                     std::make_shared<nn::Linear>(16, 1)};
  const Tensor x = tensor({0.f, 0.f, 0.f, 1.f, 1.f, 0.f, 1.f, 1.f}, {4, 2});
  const Tensor t = tensor({0.f, 1.f, 1.f, 0.f}, {4, 1});
  double first = 0, last = 0;
  for (int step = 0; step < 400; ++step) {
    net.zero_grad();
    Tensor loss = mse_loss(net(x), t);
    loss.backward();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    NoGradGuard no_grad;
    for (const Tensor& p : net.parameters()) p.copy_(p - p.grad() * 0.2);
  }
  EXPECT_LT(last, 1e-4);
  EXPECT_LT(last, first);
}

}  // namespace
}  // namespace aclgrad
