// Geometry constructors and the geometry sets of the convolution sweeps (declared in
// conv_case.h). No aclnn calls here, so the reference self-check links without the operators.
#include <string>

#include "support/conv_case.h"

namespace acltest {
namespace {

struct GroupOpt {
  const char* name;
  int64_t c_in, c_out, groups;
};
// 1, 2, depthwise (groups = C_in), depthwise with channel multiplier 2. Odd counts on purpose.
constexpr GroupOpt kGroupOpts[] = {
    {"g1", 3, 5, 1}, {"g2", 4, 6, 2}, {"dw", 3, 3, 3}, {"dw2", 3, 6, 3}};

// Small odd spatial sizes and per-dim different kernels that still fit with dilation 2 and no
// padding: span d*(k-1)+1 <= size in every dim.
const std::vector<int64_t>& SpatialSize(size_t rank) {
  static const std::vector<int64_t> s[3] = {{7}, {6, 5}, {4, 5, 3}};
  return s[rank - 1];
}
const std::vector<int64_t>& KernelSize(size_t rank) {
  static const std::vector<int64_t> k[3] = {{3}, {3, 2}, {2, 3, 2}};
  return k[rank - 1];
}

}  // namespace

naive::ConvGeom MakeGeom(std::vector<int64_t> input, std::vector<int64_t> weight,
                         std::vector<int64_t> stride, std::vector<int64_t> pad,
                         std::vector<int64_t> dilation, int64_t groups, bool transposed,
                         std::vector<int64_t> output_padding) {
  naive::ConvGeom g;
  g.input = std::move(input);
  g.weight = std::move(weight);
  g.stride = std::move(stride);
  g.pad_before = pad;
  g.pad_after = pad;
  g.dilation = std::move(dilation);
  g.groups = groups;
  g.transposed = transposed;
  g.output_padding =
      output_padding.empty() ? std::vector<int64_t>(g.spatial(), 0) : std::move(output_padding);
  return g;
}

naive::ConvGeom MakeGeom2dAsym(std::vector<int64_t> input, std::vector<int64_t> weight,
                               std::vector<int64_t> stride, std::array<int64_t, 4> pad,
                               std::vector<int64_t> dilation, int64_t groups, bool transposed,
                               std::vector<int64_t> output_padding) {
  naive::ConvGeom g = MakeGeom(std::move(input), std::move(weight), std::move(stride), {0, 0},
                               std::move(dilation), groups, transposed, std::move(output_padding));
  g.pad_before = {pad[0], pad[2]};
  g.pad_after = {pad[1], pad[3]};
  return g;
}

ConvCase MakeCase(const naive::ConvGeom& geom, std::string label, uint64_t seed) {
  ConvCase c;
  c.geom = geom;
  c.label = std::move(label);
  c.seed = seed;
  return c;
}

std::vector<ConvCase> GeometricCrossProduct() {
  std::vector<ConvCase> cases;
  uint64_t seed = 1;
  for (size_t rank = 1; rank <= 3; ++rank) {
    for (bool transposed : {false, true}) {
      for (int64_t s : {1, 2, 3}) {
        // padding: 0, 1, per-dim mixed, and (2d only) asymmetric [top, bottom, left, right]
        for (const char* pad : {"0", "1", "m", "a"}) {
          if (std::string(pad) == "a" && rank != 2) continue;
          for (int64_t d : {1, 2}) {
            for (const GroupOpt& go : kGroupOpts) {
              std::vector<int64_t> ops{0};
              if (transposed && s > 1) ops.push_back(s - 1);
              for (int64_t op : ops) {
                std::vector<int64_t> in{2, go.c_in}, wt;
                in.insert(in.end(), SpatialSize(rank).begin(), SpatialSize(rank).end());
                wt = transposed ? std::vector<int64_t>{go.c_in, go.c_out / go.groups}
                                : std::vector<int64_t>{go.c_out, go.c_in / go.groups};
                wt.insert(wt.end(), KernelSize(rank).begin(), KernelSize(rank).end());
                std::vector<int64_t> sv(rank, s), dv(rank, d), opv(rank, op), pv(rank, 0);
                for (size_t j = 0; j < rank; ++j) {
                  pv[j] = pad[0] == '1' ? 1 : pad[0] == 'm' ? std::vector<int64_t>{2, 0, 1}[j] : 0;
                }
                naive::ConvGeom g =
                    pad[0] == 'a'
                        ? MakeGeom2dAsym(in, wt, sv, {0, 2, 1, 0}, dv, go.groups, transposed, opv)
                        : MakeGeom(in, wt, sv, pv, dv, go.groups, transposed, opv);
                std::string label = std::to_string(rank) + (transposed ? "dT" : "dR") + "_s" +
                                    std::to_string(s) + "_p" + pad + "_d" + std::to_string(d) +
                                    "_" + go.name + (transposed ? "_op" + std::to_string(op) : "");
                cases.push_back(MakeCase(g, label, seed++));
              }
            }
          }
        }
      }
    }
  }
  return cases;
}

std::vector<ConvCase> RepresentativeCases() {
  std::vector<ConvCase> v;
  uint64_t seed = 5000;
  auto add = [&](const char* label, naive::ConvGeom g) { v.push_back(MakeCase(g, label, seed++)); };
  // ---- 1d
  add("c1d_odd_s2p1", MakeGeom({3, 5, 11}, {7, 5, 3}, {2}, {1}, {1}, 1));
  add("c1d_all_size1", MakeGeom({1, 1, 1}, {1, 1, 1}, {1}, {0}, {1}, 1));
  add("c1d_kernel_eq_input", MakeGeom({2, 2, 5}, {3, 2, 5}, {1}, {0}, {1}, 1));
  add("c1d_dw_d2p2", MakeGeom({2, 5, 9}, {10, 1, 3}, {1}, {2}, {2}, 5));
  add("c1d_k5_s2", MakeGeom({2, 3, 12}, {4, 3, 5}, {2}, {2}, {1}, 1));
  add("c1d_d3_s2p3", MakeGeom({1, 3, 13}, {2, 3, 3}, {2}, {3}, {3}, 1));
  add("t1d_g2_k4s3op2", MakeGeom({3, 4, 6}, {4, 3, 4}, {3}, {1}, {1}, 2, true, {2}));
  add("t1d_k1_s2op1", MakeGeom({2, 3, 5}, {3, 2, 1}, {2}, {0}, {1}, 1, true, {1}));
  // ---- 2d
  add("c2d_1x1", MakeGeom({3, 6, 5, 7}, {5, 6, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1));
  add("c2d_1x1_s2", MakeGeom({2, 3, 7, 6}, {5, 3, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1));
  add("c2d_hw1", MakeGeom({1, 3, 1, 1}, {4, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1));
  add("c2d_h1_k1x3", MakeGeom({2, 2, 1, 9}, {3, 2, 1, 3}, {1, 2}, {0, 1}, {1, 1}, 1));
  add("c2d_asym_s21", MakeGeom2dAsym({2, 3, 6, 7}, {5, 3, 3, 3}, {2, 1}, {0, 2, 1, 0}, {1, 1}, 1));
  add("c2d_perdim", MakeGeom({2, 3, 7, 8}, {4, 3, 3, 2}, {1, 3}, {1, 2}, {2, 1}, 1));
  add("c2d_kernel_eq_input", MakeGeom({2, 3, 5, 4}, {2, 3, 5, 4}, {1, 1}, {0, 0}, {1, 1}, 1));
  add("c2d_dw3x3_s2", MakeGeom({2, 6, 8, 8}, {6, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 6));
  add("c2d_dwx2_d2", MakeGeom({1, 4, 7, 5}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {2, 2}, 4));
  add("c2d_g3_k2x3_s2", MakeGeom({2, 6, 9, 7}, {9, 2, 2, 3}, {2, 2}, {0, 0}, {1, 1}, 3));
  add("c2d_s3_k2", MakeGeom({3, 2, 8, 7}, {3, 2, 2, 2}, {3, 3}, {0, 1}, {1, 1}, 1));
  add("c2d_wide", MakeGeom({2, 8, 12, 12}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1));
  add("t2d_k4s2p1", MakeGeom({2, 5, 4, 4}, {5, 3, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true));
  add("t2d_s3_op21_d12",
      MakeGeom({2, 2, 3, 5}, {2, 4, 3, 2}, {3, 3}, {1, 0}, {1, 2}, 1, true, {2, 1}));
  add("t2d_dw_s2op1",
      MakeGeom({2, 4, 5, 6}, {4, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 4, true, {1, 1}));
  add("t2d_g2_asym",
      MakeGeom2dAsym({3, 4, 4, 5}, {4, 3, 3, 3}, {2, 2}, {1, 0, 0, 2}, {1, 1}, 2, true, {1, 0}));
  add("t2d_1x1", MakeGeom({2, 3, 4, 5}, {3, 7, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true));
  add("t2d_hw1_s2", MakeGeom({1, 3, 1, 1}, {3, 2, 3, 3}, {2, 2}, {0, 0}, {1, 1}, 1, true));
  // ---- 3d
  add("c3d_mixed", MakeGeom({2, 3, 5, 6, 4}, {4, 3, 3, 3, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 1}, 1));
  add("c3d_1x1x1", MakeGeom({3, 5, 3, 4, 5}, {2, 5, 1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1));
  add("c3d_dwx2_d2",
      MakeGeom({1, 3, 4, 5, 5}, {6, 1, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 2, 1}, 3));
  add("c3d_size1", MakeGeom({1, 2, 1, 1, 1}, {3, 2, 1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1));
  add("c3d_kernel_eq_input",
      MakeGeom({2, 2, 2, 3, 3}, {3, 2, 2, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1));
  add("t3d_g2_s2op1", MakeGeom({2, 4, 2, 3, 3}, {4, 1, 2, 3, 2}, {2, 2, 2}, {0, 1, 0}, {1, 1, 1}, 2,
                               true, {1, 1, 1}));
  return v;
}

std::vector<ConvCase> LargeCases() {
  std::vector<ConvCase> v;
  uint64_t seed = 8000;
  auto add = [&](const char* label, naive::ConvGeom g) { v.push_back(MakeCase(g, label, seed++)); };
  add("c2d_28x28_c16_24", MakeGeom({4, 16, 28, 28}, {24, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1));
  add("c2d_1x1_c64", MakeGeom({2, 64, 17, 19}, {48, 64, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1));
  add("c2d_dw_k5s2_c32", MakeGeom({3, 32, 33, 33}, {32, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 32));
  add("c2d_g4_d2", MakeGeom({2, 24, 20, 23}, {20, 6, 3, 3}, {1, 2}, {2, 1}, {2, 2}, 4));
  add("c1d_long", MakeGeom({2, 16, 2003}, {16, 16, 7}, {1}, {3}, {1}, 1));
  add("c3d_c8", MakeGeom({2, 8, 10, 12, 12}, {8, 8, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1));
  add("t2d_k4s2_c16", MakeGeom({2, 16, 14, 14}, {16, 8, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true));
  add("t3d_s2_c6", MakeGeom({2, 6, 5, 6, 6}, {6, 4, 3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 1,
                            true, {1, 1, 1}));
  return v;
}

std::vector<ConvCase> EmptyCases() {
  std::vector<ConvCase> v;
  uint64_t seed = 9000;
  auto add = [&](const char* label, naive::ConvGeom g) { v.push_back(MakeCase(g, label, seed++)); };
  add("c2d_N0", MakeGeom({0, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1));
  add("c1d_N0_g2", MakeGeom({0, 4, 7}, {6, 2, 3}, {2}, {0}, {1}, 2));
  add("c3d_N0", MakeGeom({0, 2, 3, 4, 3}, {3, 2, 2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1));
  add("t2d_N0", MakeGeom({0, 4, 3, 3}, {4, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, {1, 1}));
  add("t1d_N0", MakeGeom({0, 3, 5}, {3, 2, 3}, {1}, {0}, {1}, 1, true));
  // C_in = 0 (regular only; weight's C is 0 too): output = bias, gradBias = sum of gradOutput.
  add("c2d_C0", MakeGeom({2, 0, 5, 5}, {4, 0, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1));
  add("c1d_C0", MakeGeom({3, 0, 6}, {2, 0, 2}, {2}, {1}, {1}, 1));
  return v;
}

}  // namespace acltest
