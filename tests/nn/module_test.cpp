// Module and Sequential: registration, dotted names, traversal order (PyTorch's), train/eval,
// zero_grad, to(dtype), repr and parameter counts, load_state_dict validation.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "nn/nn.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

// Every state_dict entry of m: name -> dtype, shape and raw bytes.
std::map<std::string, std::string> snapshot(const nn::Module& m) {
  std::map<std::string, std::string> out;
  for (const auto& [name, t] : m.state_dict()) {
    const Tensor c = t.contiguous();
    out[name] = std::string(dtype_name(t.dtype())) + format_shape(t.sizes()) +
                std::string(static_cast<const char*>(c.data_ptr()),
                            static_cast<size_t>(c.numel() * c.element_size()));
  }
  return out;
}

// The model PyTorch prints in the repr tests (names/shapes checked with torch 1.13).
std::shared_ptr<nn::Sequential> small_cnn() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(3, 16, 5), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::BatchNorm2d>(16),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Dropout>(0.25),
      std::make_shared<nn::Linear>(nn::LinearOptions(64, 10).bias(false)));
}

struct Net : nn::Module {
  Net() : Module("Net") {
    features = register_module(
        "features", std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(1, 2, 3),
                                                     std::make_shared<nn::ReLU>()));
    fc = register_module("fc", std::make_shared<nn::Linear>(2, 3));
  }
  Tensor forward(const Tensor& x) override { return (*fc)(mean((*features)(x), {2, 3})); }
  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::Linear> fc;
};

std::vector<std::string> names_of(const nn::NamedList<Tensor>& list) {
  std::vector<std::string> out;
  for (const auto& [n, t] : list) out.push_back(n);
  return out;
}

TEST(Module, NamedParametersAndBuffersMatchPyTorch) {
  auto m = small_cnn();
  const auto params = m->named_parameters();
  ASSERT_EQ(names_of(params),
            (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "6.weight"}));
  EXPECT_EQ(params[0].second.sizes(), (Shape{16, 3, 5, 5}));
  EXPECT_EQ(params[4].second.sizes(), (Shape{10, 64}));
  EXPECT_EQ(names_of(m->named_buffers()),
            (std::vector<std::string>{"3.running_mean", "3.running_var", "3.num_batches_tracked"}));
  EXPECT_EQ(names_of(m->state_dict()),
            (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "3.running_mean",
                                      "3.running_var", "3.num_batches_tracked", "6.weight"}));
  for (const Tensor& p : m->parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  EXPECT_FALSE(m->find_tensor("3.running_mean").requires_grad());
}

TEST(Module, NestedDottedNamesAndTraversal) {
  Net net;
  EXPECT_EQ(
      names_of(net.named_parameters()),
      (std::vector<std::string>{"features.0.weight", "features.0.bias", "fc.weight", "fc.bias"}));
  EXPECT_TRUE(net.named_parameters(/*recurse=*/false).empty());
  std::vector<std::string> modules;
  for (const auto& [n, m] : net.named_modules()) modules.push_back(n + ":" + m->type_name());
  EXPECT_EQ(modules, (std::vector<std::string>{"features:Sequential", "features.0:Conv2d",
                                               "features.1:ReLU", "fc:Linear"}));
  ASSERT_EQ(net.children().size(), 2u);
  EXPECT_EQ(net.children()[1].get(), net.fc.get());
  EXPECT_EQ(net.find_tensor("fc.weight").impl(), net.fc->weight.impl());
  EXPECT_THROW(net.find_tensor("fc.nothing"), IndexError);
  int visited = 0;
  net.apply([&](nn::Module&) { ++visited; });
  EXPECT_EQ(visited, 5);
  // The member, the registry and parameters() share one impl.
  EXPECT_EQ(net.parameters()[2].impl(), net.fc->weight.impl());
}

TEST(Module, ParameterCountsFollowPyTorchFormulas) {
  EXPECT_EQ(nn::Conv2d(3, 16, 5).num_parameters(), 16 * 3 * 5 * 5 + 16);  // 1216
  EXPECT_EQ(nn::Linear(784, 128).num_parameters(), 784 * 128 + 128);
  EXPECT_EQ(nn::BatchNorm2d(16).num_parameters(), 32);
  // 1216 + 32 (BatchNorm) + 640 (bias-less Linear); buffers are not parameters.
  EXPECT_EQ(small_cnn()->num_parameters(), 1888);
  nn::Linear frozen(4, 2);
  frozen.bias.requires_grad_(false);
  EXPECT_EQ(frozen.num_parameters(), 10);
  EXPECT_EQ(frozen.num_parameters(/*trainable_only=*/true), 8);
}

TEST(Module, ReprMatchesPyTorch) {
  EXPECT_EQ(small_cnn()->repr(),
            "Sequential(\n"
            "  (0): Conv2d(3, 16, kernel_size=(5, 5), stride=(1, 1))\n"
            "  (1): ReLU()\n"
            "  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
            "  (3): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
            "track_running_stats=True)\n"
            "  (4): Flatten(start_dim=1, end_dim=-1)\n"
            "  (5): Dropout(p=0.25, inplace=False)\n"
            "  (6): Linear(in_features=64, out_features=10, bias=False)\n"
            ")");
  EXPECT_EQ(Net().repr(),
            "Net(\n"
            "  (features): Sequential(\n"
            "    (0): Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1))\n"
            "    (1): ReLU()\n"
            "  )\n"
            "  (fc): Linear(in_features=2, out_features=3, bias=True)\n"
            ")");
  const std::string s = small_cnn()->to_string();
  EXPECT_NE(s.find("\nTotal params: 1888\nTrainable params: 1888"), std::string::npos) << s;
  std::ostringstream os;
  os << nn::ReLU();
  EXPECT_EQ(os.str(), "ReLU()\nTotal params: 0\nTrainable params: 0");
}

TEST(Module, RegistrationErrors) {
  nn::Module m("Custom");
  m.register_parameter("w", zeros({2}));
  EXPECT_NE(message_of<Error>([&] {
              m.register_buffer("w", zeros({2}));
            }).find("cannot register buffer 'w': the name is already used"),
            std::string::npos);
  EXPECT_NE(message_of<Error>([&] { m.register_parameter("a.b", zeros({2})); }).find("'.'"),
            std::string::npos);
  EXPECT_THROW(m.register_parameter("", zeros({2})), Error);
  EXPECT_THROW(m.register_parameter("u", Tensor()), Error);
  EXPECT_THROW(m.register_module("n", std::shared_ptr<nn::Module>()), Error);
  Tensor leaf = ones({2}).requires_grad_();
  EXPECT_NE(message_of<Error>([&] {
              m.register_parameter("nonleaf", leaf * 2.0);
            }).find("must be a leaf"),
            std::string::npos);
  EXPECT_THROW(m.register_parameter("ints", zeros({2}, Dtype::Int64)), DtypeError);
  // A non-trainable int64 parameter is fine (requires_grad = false).
  EXPECT_NO_THROW(m.register_parameter("counter", zeros({}, Dtype::Int64), false));
  EXPECT_NE(message_of<Error>([&] { m.forward(zeros({1})); }).find("Custom"), std::string::npos);
}

TEST(Module, TrainEvalPropagatesToEveryDescendant) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  for (const auto& [n, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << n;
  net.features->train();
  EXPECT_FALSE(net.is_training());
  EXPECT_TRUE((*net.features)[0]->is_training());
  net.train();
  for (const auto& [n, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << n;
}

TEST(Module, ZeroGradClearsOrZeroes) {
  Net net;
  Tensor x = randn({2, 1, 5, 5});
  sum(net(x)).backward();
  for (const Tensor& p : net.parameters()) ASSERT_TRUE(p.grad().defined());
  net.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : net.parameters()) {
    ASSERT_TRUE(p.grad().defined());
    for (double v : p.grad().to_vector<double>()) EXPECT_EQ(v, 0.0);
  }
  net.zero_grad();
  for (const Tensor& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToDoubleKeepsIdentityFlagsAndValues) {
  auto m = small_cnn();
  auto conv = m->at<nn::Conv2d>(0);
  auto bn = m->at<nn::BatchNorm2d>(3);
  const TensorImpl* weight_impl = conv->weight.impl();
  const std::vector<float> before = conv->weight.to_vector<float>();
  conv->bias.requires_grad_(false);
  conv->weight.set_grad(ones(conv->weight.sizes()));
  nn::Module* identity = m.get();

  m->to(Dtype::Float64);
  EXPECT_EQ(m.get(), identity);
  EXPECT_EQ(conv->weight.impl(), weight_impl);
  EXPECT_EQ(m->parameters()[0].impl(), weight_impl);
  EXPECT_EQ(conv->weight.dtype(), Dtype::Float64);
  EXPECT_TRUE(conv->weight.requires_grad());
  EXPECT_FALSE(conv->bias.requires_grad());
  EXPECT_TRUE(conv->weight.is_leaf());
  EXPECT_EQ(conv->weight.grad().dtype(), Dtype::Float64);
  const std::vector<double> after = conv->weight.to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) ASSERT_EQ(after[i], static_cast<double>(before[i]));
  EXPECT_EQ(bn->running_mean.dtype(), Dtype::Float64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), Dtype::Int64);  // non-floating buffers stay

  // The converted model runs (and trains) in float64.
  m->eval();
  Tensor y = (*m)(randn({1, 3, 8, 8}, Dtype::Float64));
  EXPECT_EQ(y.dtype(), Dtype::Float64);
  EXPECT_EQ(y.sizes(), (Shape{1, 10}));
  sum(y).backward();
  EXPECT_EQ(m->at<nn::Linear>(6)->weight.grad().dtype(), Dtype::Float64);
  EXPECT_THROW(m->to(Dtype::Int64), DtypeError);
}

TEST(Module, TiedParametersAreCountedOnce) {
  auto a = std::make_shared<nn::Linear>(4, 4);
  nn::Module holder("Holder");
  holder.register_parameter("shared", a->weight);  // the same tensor under a second name
  holder.register_module("a", a);
  EXPECT_EQ(names_of(holder.named_parameters()),
            (std::vector<std::string>{"shared", "a.bias"}));  // a.weight deduplicated
  EXPECT_EQ(holder.num_parameters(), 16 + 4);
  EXPECT_EQ(holder.state_dict().size(), 3u);  // the state keeps every name
}

TEST(Sequential, IndexingTypedAccessAndForwardChain) {
  auto l1 = std::make_shared<nn::Linear>(4, 8);
  auto l2 = std::make_shared<nn::Linear>(8, 2);
  nn::Sequential seq{l1, std::make_shared<nn::ReLU>(), l2};
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(seq[0].get(), l1.get());
  EXPECT_EQ(seq[-1].get(), l2.get());
  EXPECT_EQ(seq.at<nn::Linear>(2).get(), l2.get());
  EXPECT_THROW(seq[3], IndexError);
  EXPECT_THROW(seq[-4], IndexError);
  EXPECT_NE(message_of<Error>([&] { seq.at<nn::Linear>(1); }).find("ReLU"), std::string::npos);
  Tensor x = randn({5, 4});
  const Tensor want = linear(relu(linear(x, l1->weight, l1->bias)), l2->weight, l2->bias);
  EXPECT_EQ(seq(x).to_vector<float>(), want.to_vector<float>());

  seq.push_back(std::make_shared<nn::Sigmoid>());
  EXPECT_EQ(seq.named_children().back().first, "3");
  nn::Sequential named{{"fc", std::make_shared<nn::Linear>(2, 2)},
                       {"act", std::make_shared<nn::Tanh>()}};
  EXPECT_EQ(names_of(named.named_parameters()), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  nn::Sequential empty;
  EXPECT_EQ(empty(x).impl(), x.impl());
}

TEST(Module, FunctionalWrapsAFunction) {
  nn::Functional sq([](const Tensor& x) { return x * x; }, "Square");
  EXPECT_EQ(sq.repr(), "Square()");
  EXPECT_EQ(sq(tensor({3.0f})).item<float>(), 9.0f);
}

TEST(LoadStateDict, CopiesInPlaceAndKeepsIdentity) {
  Net a, b;
  const TensorImpl* impl = b.fc->weight.impl();
  std::map<std::string, Tensor> state;
  for (const auto& [n, t] : a.state_dict()) state[n] = t;
  b.load_state_dict(state);
  EXPECT_EQ(snapshot(a), snapshot(b));
  EXPECT_EQ(b.fc->weight.impl(), impl);
  EXPECT_FALSE(b.fc->weight.shares_storage(a.fc->weight));
  EXPECT_TRUE(b.fc->weight.requires_grad());
}

TEST(LoadStateDict, EveryProblemIsListedAndNothingIsModified) {
  Net net;
  const auto before = snapshot(net);
  std::map<std::string, Tensor> state;
  for (const auto& [n, t] : net.state_dict()) state[n] = zeros_like(t);
  state.erase("fc.bias");
  state["fc.weight"] = zeros({2, 3});
  state["features.0.bias"] = zeros({2}, Dtype::Float64);
  state["extra"] = zeros({1});
  const std::string msg =
      message_of<Error>([&] { net.load_state_dict(state, true, "ckpt.safetensors"); });
  EXPECT_NE(msg.find("'ckpt.safetensors'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 problems"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing tensor 'fc.bias' (expected shape [3], dtype float32)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("shape mismatch for 'fc.weight': expected [3, 2], got [2, 3]"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("dtype mismatch for 'features.0.bias': expected float32, got float64"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("unexpected tensor 'extra'"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(net), before);

  // Non-strict: missing and unexpected names are allowed, mismatches are not.
  state["fc.weight"] = zeros({3, 2});
  state["features.0.bias"] = zeros({2});
  net.load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(net.fc->weight.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_NE(net.fc->bias.to_vector<float>(), std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace aclgrad
