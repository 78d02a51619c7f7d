// The GEMM panel sources of the implicit im2col (conv/kernels/im2col/im2col_panels.h) called
// directly, their AVX-512 and AVX2 bodies each where this process may run it, against the column
// matrix of im2col.h written out here element by element:
//
//   col[c * K + (kd * kH + kh) * kW + kw][(od * oH + oh) * oW + ow] =
//       x[c][od * s0 - pb0 + kd * d0][oh * s1 - pb1 + kh * d1][ow * s2 - pb2 + kw * d2]  (0:
//       padding)
//
// and the padded grid's plain shifts (GridPanels: row (c, kd, kh, kw) at grid column j is
// xp[c * plane + (kd * d0 * Hp + kh * d1) * Wp + kw * d2 + j]). A pack writes
// Bp[panel][k][48] = B(k0 + k, j0 + 48 panel + col), zero past n; the transposed sources have
// B(k, r) = col[r][col0 + k]. Copies, so bit for bit; nothing past the panels written. Edges: n
// and kc around the panel width and the 8 / 16-row transposes, blocks starting mid-channel and
// mid-row, stride, dilation, padding wider than the kernel, 3d. And SourceRows
// (source_panels.h), whose conversion dispatches by itself, on fp32 and bf16 rows.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/im2col/im2col_panels.h"
#include "conv/kernels/im2col/source_panels.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
namespace gemm = aclnn_cpu::gemm;
using namespace kernel_test;

constexpr int64_t kNR = gemm::kPanelCols;

enum class Source { kIm2col, kIm2colT, kGrid, kGridT };

class PanelTester {
 public:
  PanelTester& in(int64_t d, int64_t h, int64_t w) { return g_.in = {d, h, w}, *this; }
  PanelTester& k(int64_t d, int64_t h, int64_t w) { return g_.k = {d, h, w}, *this; }
  PanelTester& stride(int64_t d, int64_t h, int64_t w) { return g_.stride = {d, h, w}, *this; }
  PanelTester& dil(int64_t d, int64_t h, int64_t w) { return g_.dil = {d, h, w}, *this; }
  PanelTester& pad(int64_t before, int64_t after) {  // H and W alike
    g_.pad_before[1] = g_.pad_before[2] = before, g_.pad_after[1] = g_.pad_after[2] = after;
    return *this;
  }
  PanelTester& pad_d(int64_t before, int64_t after) {
    return g_.pad_before[0] = before, g_.pad_after[0] = after, *this;
  }
  PanelTester& C(int64_t v) { return C_ = v, *this; }
  // The block of the column matrix: rows [row0, row0 + rows) ((channel, tap) pairs) and
  // positions [col0 + pos0, col0 + pos0 + positions): B's rows k0, kc and columns j0, n, or
  // the other way round for the transposed sources.
  PanelTester& block(int64_t row0, int64_t rows, int64_t pos0, int64_t positions) {
    row0_ = row0, rows_ = rows, pos0_ = pos0, positions_ = positions;
    return *this;
  }
  PanelTester& col0(int64_t v) { return col0_ = v, *this; }

  void Test(Isa isa, Source source) const {
    conv::ConvGeometry g = g_;
    g.N = 1, g.C_in = C_, g.C_out = 1, g.groups = 1;
    for (int d = 0; d < 3; ++d)
      g.out[d] = static_cast<int64_t>(conv::conv_out_len(g.in[d], g.k[d], g.stride[d], g.dil[d],
                                                         g.pad_before[d], g.pad_after[d]));
    const bool grid = source == Source::kGrid || source == Source::kGridT;
    const bool transposed = source == Source::kIm2colT || source == Source::kGridT;
    ASSERT_LE(row0_ + rows_, C_ * g.k_size()) << "a block inside the column matrix";
    if (!grid) {
      ASSERT_LE(col0_ + pos0_ + positions_, g.out_size()) << "a block inside the matrix";
    }
    const int64_t k0 = transposed ? pos0_ : row0_, kc = transposed ? positions_ : rows_;
    const int64_t j0 = transposed ? row0_ : pos0_, n = transposed ? rows_ : positions_;
    Random rng(static_cast<uint32_t>(C_ * 31 + k0 * 7 + kc + j0 * 3 + n));
    // The padded grid the grid sources read: any row pitch and plane (a band's), here those of
    // the padded input, the plane with some slack.
    conv::PaddedGrid pg;
    pg.Dp = g.in[0] + g.pad_before[0] + g.pad_after[0];
    pg.Hp = g.in[1] + g.pad_before[1] + g.pad_after[1];
    pg.Wp = g.in[2] + g.pad_before[2] + g.pad_after[2];
    pg.plane = pg.Dp * pg.Hp * pg.Wp + 5;
    const int64_t x_elems =
        grid ? C_ * pg.plane + col0_ + pos0_ + positions_ + kNR : C_ * g.in_size();
    std::vector<float> x(static_cast<size_t>(x_elems));
    for (float& v : x) v = rng.Value();

    const int64_t panels = (n + kNR - 1) / kNR, elems = panels * kc * kNR;
    Buffer<float> Bp(elems + kNR, Poison());
    Buffer<float> tile(conv::Im2colPanelsT::tile_elems());
    const conv::GridSource gs{g, pg, x.data(), col0_};
    const bool avx512 = isa == Isa::kAvx512;
    switch (source) {
      case Source::kIm2col: {
        const conv::Im2colPanels p(g, x.data(), col0_);
        avx512 ? p.pack_avx512(k0, kc, j0, n, Bp.data()) : p.pack_avx2(k0, kc, j0, n, Bp.data());
        break;
      }
      case Source::kIm2colT: {
        const conv::Im2colPanelsT p(g, x.data(), col0_, tile.data());
        avx512 ? p.pack_avx512(k0, kc, j0, n, Bp.data()) : p.pack_avx2(k0, kc, j0, n, Bp.data());
        break;
      }
      case Source::kGrid: {
        const conv::GridPanels p(gs);
        avx512 ? p.pack_avx512(k0, kc, j0, n, Bp.data()) : p.pack_avx2(k0, kc, j0, n, Bp.data());
        break;
      }
      case Source::kGridT: {
        const conv::GridPanelsT p(gs);
        avx512 ? p.pack_avx512(k0, kc, j0, n, Bp.data()) : p.pack_avx2(k0, kc, j0, n, Bp.data());
        break;
      }
    }

    Mismatches bad;
    int64_t inside = 0;  // entries not in the padding: a block of padding alone tests little
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t c = 0; c < kNR; ++c) {
          const int64_t j = p * kNR + c;
          // (row, column) of the column matrix this entry stands for.
          const int64_t row = transposed ? j0 + j : k0 + k;
          const int64_t col = col0_ + (transposed ? k0 + k : j0 + j);
          const float want = j >= n ? 0.0f
                             : grid ? GridEntry(g, pg, x, row, col)
                                    : Entry(g, x, row, col);
          inside += want != 0.0f;
          bad.Equal(Bp[(p * kc + k) * kNR + c], want,
                    "panel " + std::to_string(p) + " k " + std::to_string(k) + " col " +
                        std::to_string(c));
        }
    for (int64_t i = elems; i < Bp.size(); ++i) bad.Untouched(Bp[i], Poison(), "past the panels");
    KERNEL_TEST_EXPECT_NONE(bad, Describe(isa, source, g));
    EXPECT_GT(inside, 0) << Describe(isa, source, g) << ": the block lies in the padding";
  }

 private:
  // The tap (kd, kh, kw) and channel of column-matrix row r.
  static void Decode(const conv::ConvGeometry& g, int64_t r, int64_t* c, int64_t (&tap)[3]) {
    const int64_t K = g.k_size(), q = r % K;
    *c = r / K;
    tap[0] = q / (g.k[1] * g.k[2]), tap[1] = q / g.k[2] % g.k[1], tap[2] = q % g.k[2];
  }
  static float Entry(const conv::ConvGeometry& g, const std::vector<float>& x, int64_t r,
                     int64_t j) {
    int64_t c, tap[3];
    Decode(g, r, &c, tap);
    const int64_t o[3] = {j / (g.out[1] * g.out[2]), j / g.out[2] % g.out[1], j % g.out[2]};
    int64_t at = c;
    for (int d = 0; d < 3; ++d) {
      const int64_t i = o[d] * g.stride[d] - g.pad_before[d] + tap[d] * g.dil[d];
      if (i < 0 || i >= g.in[d]) return 0.0f;
      at = at * g.in[d] + i;
    }
    return x[at];
  }
  static float GridEntry(const conv::ConvGeometry& g, const conv::PaddedGrid& pg,
                         const std::vector<float>& x, int64_t r, int64_t j) {
    int64_t c, tap[3];
    Decode(g, r, &c, tap);
    return x[c * pg.plane + (tap[0] * g.dil[0] * pg.Hp + tap[1] * g.dil[1]) * pg.Wp +
             tap[2] * g.dil[2] + j];
  }

  std::string Describe(Isa isa, Source source, const conv::ConvGeometry& g) const {
    static const char* const kNames[] = {"Im2colPanels", "Im2colPanelsT", "GridPanels",
                                         "GridPanelsT"};
    auto dims = [](const std::array<int64_t, 3>& a) {
      return std::to_string(a[0]) + "x" + std::to_string(a[1]) + "x" + std::to_string(a[2]);
    };
    return std::string(kNames[static_cast<int>(source)]) + " " + IsaName(isa) +
           ": C=" + std::to_string(C_) + " in " + dims(g.in) + " k " + dims(g.k) + " out " +
           dims(g.out) + " stride " + dims(g.stride) + " dil " + dims(g.dil) + " pad " +
           dims(g.pad_before) + " rows " + std::to_string(row0_) + "+" + std::to_string(rows_) +
           " positions " + std::to_string(col0_) + "+" + std::to_string(pos0_) + "+" +
           std::to_string(positions_);
  }

  conv::ConvGeometry g_;
  int64_t C_ = 3, row0_ = 0, rows_ = 27, pos0_ = 0, positions_ = 48, col0_ = 0;
};

class Panels : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { KERNEL_TEST_SKIP_UNLESS_RUNS(GetParam()); }
};

// Forward forms: rows are (channel, tap), columns output positions.
TEST_P(Panels, ColumnsAroundPanels) {
  for (Source s : {Source::kIm2col, Source::kGrid})
    for (int64_t n : {1, 7, 8, 16, 47, 48, 49, 96, 97, 480, 768})
      PanelTester().in(1, 30, 30).k(1, 3, 3).pad(1, 1).block(0, 27, 0, n).Test(GetParam(), s);
}

TEST_P(Panels, RowBlocksFromMidChannel) {
  for (Source s : {Source::kIm2col, Source::kGrid})
    for (int64_t k0 : {0, 4, 9, 13})
      for (int64_t kc : {1, 5, 14})
        PanelTester()
            .in(1, 9, 11)
            .k(1, 3, 3)
            .pad(1, 1)
            .block(k0, kc, 17, 50)
            .col0(3)
            .Test(GetParam(), s);
}

// Transposed forms: rows are output positions (kc of them), columns (channel, tap) rows.
TEST_P(Panels, TransposedAroundTiles) {
  for (Source s : {Source::kIm2colT, Source::kGridT})
    for (int64_t kc : {1, 7, 8, 9, 15, 16, 17, 33, 256})
      for (int64_t n : {1, 9, 48, 50})
        PanelTester()
            .in(1, 20, 20)
            .k(1, 3, 3)
            .pad(1, 1)
            .C(6)
            .block(3, n, 11, kc)
            .Test(GetParam(), s);
}

TEST_P(Panels, StrideDilationPaddingAnd3d) {
  for (Source s : {Source::kIm2col, Source::kIm2colT}) {
    PanelTester()
        .in(1, 11, 13)
        .k(1, 3, 3)
        .stride(1, 2, 2)
        .pad(1, 0)
        .block(2, 16, 5, 22)
        .Test(GetParam(), s);
    PanelTester()
        .in(1, 9, 17)
        .k(1, 2, 3)
        .dil(1, 3, 2)
        .pad(2, 2)
        .block(0, 18, 0, 60)
        .Test(GetParam(), s);
    PanelTester()
        .in(1, 4, 5)
        .k(1, 2, 2)
        .pad(4, 3)
        .block(1, 8, 7, 40)
        .Test(GetParam(), s);  // wide padding
    PanelTester()
        .in(3, 5, 6)
        .k(2, 2, 3)
        .stride(2, 1, 3)
        .pad(1, 1)
        .pad_d(1, 1)
        .block(3, 20, 2, 20)
        .Test(GetParam(), s);
  }
  for (Source s : {Source::kGrid, Source::kGridT}) {
    PanelTester()
        .in(1, 9, 17)
        .k(1, 2, 3)
        .dil(1, 3, 2)
        .pad(2, 2)
        .block(0, 18, 0, 60)
        .Test(GetParam(), s);
    PanelTester()
        .in(3, 5, 6)
        .k(2, 2, 3)
        .dil(2, 1, 1)
        .pad(1, 1)
        .pad_d(1, 1)
        .block(3, 20, 2, 33)
        .col0(4)
        .Test(GetParam(), s);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, Panels, ::testing::Values(Isa::kAvx512, Isa::kAvx2), IsaParamName);

// SourceRows: B(k, j) = element k * ld + j of the source, converted: fp32 as is, bf16 widened.
// Its conversion picks its own ISA (test_source_convert checks each); the caps reach the others.
TEST(SourceRows, PanelsOfRowsConverted) {
  for (bool bf16 : {false, true})
    for (int64_t n : {1, 47, 48, 49, 480, 481, 1000})
      for (int64_t kc : {1, 5}) {
        Random rng(static_cast<uint32_t>(n + kc));
        const int64_t ld = n + 9, k0 = 2, j0 = 3, rows = k0 + kc;
        std::vector<float> values(static_cast<size_t>(rows * ld));
        std::vector<uint16_t> b16(values.size());
        for (size_t i = 0; i < values.size(); ++i) b16[i] = ToBf16(values[i] = rng.Value());
        if (bf16)
          for (size_t i = 0; i < values.size(); ++i) values[i] = FromBf16(b16[i]);
        const conv::Source src{bf16 ? static_cast<const void*>(b16.data()) : values.data(),
                               bf16 ? conv::SrcKind::kBF16 : conv::SrcKind::kF32};
        const int64_t panels = (n - j0 + kNR - 1) / kNR, elems = panels * kc * kNR;
        Buffer<float> Bp(elems + kNR, Poison());
        conv::SourceRows(src, ld).pack(k0, kc, j0, n - j0, Bp.data());
        Mismatches bad;
        for (int64_t p = 0; p < panels; ++p)
          for (int64_t k = 0; k < kc; ++k)
            for (int64_t c = 0; c < kNR; ++c) {
              const int64_t j = p * kNR + c;
              const float want = j >= n - j0 ? 0.0f : values[(k0 + k) * ld + j0 + j];
              bad.Equal(Bp[(p * kc + k) * kNR + c], want,
                        "panel " + std::to_string(p) + " k " + std::to_string(k) + " col " +
                            std::to_string(c));
            }
        for (int64_t i = elems; i < Bp.size(); ++i)
          bad.Untouched(Bp[i], Poison(), "past the panels");
        KERNEL_TEST_EXPECT_NONE(bad, std::string(bf16 ? "bf16" : "fp32") +
                                         " n=" + std::to_string(n) + " kc=" + std::to_string(kc) +
                                         " (" + cpu::describe() + ")");
      }
}

}  // namespace
