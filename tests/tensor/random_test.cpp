// Seeded random factories: reproducibility, independence of seeds, and distribution sanity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "tensor/creation.h"
#include "tensor/random.h"
#include "tests/tensor/test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}
size_t count_differing(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST(Random, SameSeedGivesSameValues) {
  Generator g1(42), g2(42);
  EXPECT_EQ(rand({1000}, Dtype::Float32, &g1).to_vector<float>(),
            rand({1000}, Dtype::Float32, &g2).to_vector<float>());
  EXPECT_EQ(randn({999}, Dtype::Float32, &g1).to_vector<float>(),
            randn({999}, Dtype::Float32, &g2).to_vector<float>());
  EXPECT_EQ(randint(0, 100, {500}, Dtype::Int64, &g1).to_vector<int64_t>(),
            randint(0, 100, {500}, Dtype::Int64, &g2).to_vector<int64_t>());
}

TEST(Random, ManualSeedResetsTheDefaultGenerator) {
  manual_seed(7);
  const auto a = randn({100}).to_vector<float>();
  const auto b = randn({100}).to_vector<float>();
  manual_seed(7);
  EXPECT_EQ(randn({100}).to_vector<float>(), a);
  EXPECT_EQ(randn({100}).to_vector<float>(), b);
  EXPECT_GT(count_differing(a, b), 95u);  // the sequence moves on between calls
  EXPECT_EQ(default_generator().seed(), 7u);
}

TEST(Random, DifferentSeedsGiveDifferentValues) {
  Generator g1(1), g2(2);
  EXPECT_GT(count_differing(rand({1000}, Dtype::Float32, &g1).to_vector<float>(),
                            rand({1000}, Dtype::Float32, &g2).to_vector<float>()),
            990u);
}

TEST(Random, CopiedGeneratorContinuesTheSameSequence) {
  Generator g(5);
  rand({10}, Dtype::Float32, &g);
  Generator copy = g;
  EXPECT_EQ(rand({50}, Dtype::Float32, &g).to_vector<float>(),
            rand({50}, Dtype::Float32, &copy).to_vector<float>());
}

TEST(Random, RandIsInUnitIntervalWithUniformMoments) {
  Generator g(123);
  for (Dtype dt : {Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::BFloat16}) {
    const auto v = rand({100000}, dt, &g).to_vector<double>();
    EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0) << dt;
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0) << dt;
    EXPECT_NEAR(mean_of(v), 0.5, 0.01) << dt;                 // standard error 0.0009
    EXPECT_NEAR(std_of(v), std::sqrt(1.0 / 12), 0.01) << dt;  // 0.2887
  }
}

TEST(Random, RandnHasZeroMeanUnitStd) {
  Generator g(2024);
  for (Dtype dt : {Dtype::Float32, Dtype::Float64}) {
    const auto v = randn({100000}, dt, &g).to_vector<double>();
    EXPECT_NEAR(mean_of(v), 0.0, 0.015) << dt;  // standard error 0.003
    EXPECT_NEAR(std_of(v), 1.0, 0.015) << dt;
    const double within1 =
        std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) < 1; }) / 1e5;
    EXPECT_NEAR(within1, 0.6827, 0.01) << dt;
  }
}

TEST(Random, NormalAndUniformInPlaceRespectParameters) {
  Generator g(9);
  Tensor t = empty({50000}, Dtype::Float64);
  normal_(t, 3.0, 0.5, &g);
  EXPECT_NEAR(mean_of(t.to_vector<double>()), 3.0, 0.02);
  EXPECT_NEAR(std_of(t.to_vector<double>()), 0.5, 0.02);
  uniform_(t, -2.0, 6.0, &g);
  const auto v = t.to_vector<double>();
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -2.0);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 6.0);
  EXPECT_NEAR(mean_of(v), 2.0, 0.05);
}

TEST(Random, InPlaceFillOfAViewTouchesOnlyTheView) {
  Tensor base = zeros({4, 6});
  uniform_(base.slice(1, 1, 6, 2), 1.0, 2.0);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 6; ++c) {
      const float x = base.at<float>({r, c});
      if (c % 2) {
        EXPECT_TRUE(x >= 1.0f && x < 2.0f) << x;
      } else {
        EXPECT_EQ(x, 0.0f);
      }
    }
  }
}

TEST(Random, RandintCoversTheHalfOpenRangeUniformly) {
  Generator g(77);
  const auto v = randint(-3, 5, {80000}, Dtype::Int64, &g).to_vector<int64_t>();
  std::map<int64_t, int> counts;
  for (int64_t x : v) ++counts[x];
  ASSERT_EQ(counts.size(), 8u);
  EXPECT_EQ(counts.begin()->first, -3);
  EXPECT_EQ(counts.rbegin()->first, 4);
  for (const auto& [value, n] : counts) EXPECT_NEAR(n, 10000, 500) << value;  // 5 sigma
}

TEST(Random, RandintFullInt64RangeAndFloatDtype) {
  Generator g(3);
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const auto v = randint(lo, hi, {1000}, Dtype::Int64, &g).to_vector<int64_t>();
  EXPECT_GT(std::count_if(v.begin(), v.end(), [](int64_t x) { return x < 0; }), 400);
  EXPECT_GT(std::count_if(v.begin(), v.end(), [](int64_t x) { return x > 0; }), 400);
  const auto f = randint(0, 3, {1000}, Dtype::Float32, &g).to_vector<float>();
  for (float x : f) EXPECT_TRUE(x == 0.0f || x == 1.0f || x == 2.0f) << x;
}

TEST(Random, BadArgumentsAreNamed) {
  std::string m = message_of<DtypeError>([] { rand({2}, Dtype::Int64); });
  EXPECT_EQ(m, "rand: expected a floating point dtype, got int64");
  m = message_of<DtypeError>([] { randn({2}, Dtype::Bool); });
  EXPECT_EQ(m, "randn: expected a floating point dtype, got bool");
  m = message_of<Error>([] { randint(5, 3, {2}); });
  EXPECT_EQ(m, "randint: low 5 must be less than high 3");
}

}  // namespace
}  // namespace aclgrad
