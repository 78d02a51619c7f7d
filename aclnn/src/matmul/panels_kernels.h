// The converting packers of panels.h as one template over a vector trait V, included by
// panels_avx512.cpp and panels_avx2.cpp inside their target regions, after they define V:
//
//   using F = <vector of W floats>;  static constexpr int W;     (W divides 48; W >= 8)
//   template <SrcKind K> static F load(const char* p);            W elements of kind K from p,
//                                                                 as fp32 operands (widened and
//                                                                 rounded as K says)
//   template <SrcKind K> static F load_n(const char* p, int64_t n);  the first n (< W), rest zero,
//                                                                 reading nothing past them
//   static F zero();  static void store(float* p, F v);  static void store8(float* p, F v)
//   static void transpose(F r[W]);                                r[i] row i in, column i out
//
// Internal linkage (an anonymous namespace in each including file): the instances for one
// target never meet the other's at link time. No standard-library template is used here.
#pragma once

#include <cstdint>

#include "int_math.h"
#include "matmul/panels.h"

namespace aclnn_cpu::matmul {
namespace {

template <class V>
using F_of = typename V::F;

template <conv::SrcKind K>
constexpr int64_t kElemBytes =
    K == conv::SrcKind::kF16 || K == conv::SrcKind::kBF16 || K == conv::SrcKind::kBF16Fp16 ? 2 : 4;

template <class V, conv::SrcKind K>
struct Packer {
  static constexpr int W = V::W;
  static constexpr int64_t kMR = 8;                 // rows of a packed A panel
  static constexpr int64_t kNR = gemm::kPanelCols;  // columns of a packed B panel
  static_assert(kNR % W == 0 && W >= kMR);

  static const char* at(const SrcMat& m, int64_t r, int64_t c) {
    return static_cast<const char*>(m.data) + (r * m.rs + c * m.cs) * kElemBytes<K>;
  }
  static F_of<V> load_or_zero(const char* p, int64_t valid) {
    if (valid >= W) return V::template load<K>(p);
    return valid > 0 ? V::template load_n<K>(p, valid) : V::zero();
  }

  // Ap[p][k][r] = A(p * 8 + r, k0 + k) for k < kc, zero for rows >= m.
  static void pack_a_block(const SrcMat& A, int64_t m, int64_t k0, int64_t kc, float* Ap) {
    for (int64_t p = 0; p < m; p += kMR, Ap += kc * kMR) {
      const int64_t rows = min64(kMR, m - p);
      if (A.cs == 1) {
        pack_a_rows(A, p, rows, k0, kc, Ap);
      } else if (A.rs == 1) {  // the panel's rows are adjacent at every k: one load per k
        for (int64_t k = 0; k < kc; ++k)
          V::store8(Ap + k * kMR, load_or_zero(at(A, p, k0 + k), rows));
      } else {
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t r = 0; r < kMR; ++r)
            Ap[k * kMR + r] = r < rows ? A.value(p + r, k0 + k) : 0.0f;
      }
    }
  }

  // A panel whose rows are contiguous along k: W k-values of each row loaded, W x W transposed
  // (rows past `rows` zero), each resulting vector's first 8 lanes being one k of the panel.
  static void pack_a_rows(const SrcMat& A, int64_t p, int64_t rows, int64_t k0, int64_t kc,
                          float* Ap) {
    int64_t k = 0;
    for (; k + W <= kc; k += W) {
      F_of<V> r[W];
      for (int i = 0; i < W; ++i)
        r[i] = i < rows ? V::template load<K>(at(A, p + i, k0 + k)) : V::zero();
      V::transpose(r);
      for (int i = 0; i < W; ++i) V::store8(Ap + (k + i) * kMR, r[i]);
    }
    for (; k < kc; ++k)
      for (int64_t r = 0; r < kMR; ++r) Ap[k * kMR + r] = r < rows ? A.value(p + r, k0 + k) : 0.0f;
  }

  // Bp[panel][k][c] = B(k0 + k, j0 + panel * 48 + c) for k < kc, zero for columns >= n.
  static void pack_b(const SrcMat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
    const int64_t panels = (n + kNR - 1) / kNR;
    if (B.cs == 1) {  // rows contiguous: each row of the block read once, left to right
      for (int64_t k = 0; k < kc; ++k) {
        const char* row = at(B, k0 + k, j0);
        for (int64_t p = 0; p < panels; ++p) {
          float* d = Bp + (p * kc + k) * kNR;
          for (int64_t q = 0; q < kNR; q += W)
            V::store(d + q, load_or_zero(row + (p * kNR + q) * kElemBytes<K>, n - p * kNR - q));
        }
      }
      return;
    }
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t cols = min64(kNR, n - p * kNR);
      float* d = Bp + p * kc * kNR;
      for (int64_t c = 0; c < kNR; c += W) {
        const int64_t valid = cols - c;  // columns of this group of W that exist
        if (valid <= 0) {
          for (int64_t k = 0; k < kc; ++k) V::store(d + k * kNR + c, V::zero());
        } else if (B.rs == 1) {
          pack_b_columns(B, k0, kc, j0 + p * kNR + c, valid, d + c);
        } else {
          for (int64_t k = 0; k < kc; ++k)
            for (int64_t i = 0; i < W; ++i)
              d[k * kNR + c + i] = i < valid ? B.value(k0 + k, j0 + p * kNR + c + i) : 0.0f;
        }
      }
    }
  }

  // W columns (those from `valid` on zero) of a B whose columns are contiguous along k: W
  // k-values of each column loaded and transposed into W rows of the panel.
  static void pack_b_columns(const SrcMat& B, int64_t k0, int64_t kc, int64_t j, int64_t valid,
                             float* d) {
    int64_t k = 0;
    for (; k + W <= kc; k += W) {
      F_of<V> r[W];
      for (int i = 0; i < W; ++i)
        r[i] = i < valid ? V::template load<K>(at(B, k0 + k, j + i)) : V::zero();
      V::transpose(r);
      for (int i = 0; i < W; ++i) V::store(d + (k + i) * kNR, r[i]);
    }
    for (; k < kc; ++k)
      for (int64_t i = 0; i < W; ++i) d[k * kNR + i] = i < valid ? B.value(k0 + k, j + i) : 0.0f;
  }
};

// The instance for a runtime kind; false for kinds the packers do not read.
template <class V>
bool pack_a_block_as(const SrcMat& A, int64_t m, int64_t k0, int64_t kc, float* Ap) {
  using conv::SrcKind;
  switch (A.kind) {
    case SrcKind::kF32:
      Packer<V, SrcKind::kF32>::pack_a_block(A, m, k0, kc, Ap);
      return true;
    case SrcKind::kF32Hf32:
      Packer<V, SrcKind::kF32Hf32>::pack_a_block(A, m, k0, kc, Ap);
      return true;
    case SrcKind::kF32Fp16:
      Packer<V, SrcKind::kF32Fp16>::pack_a_block(A, m, k0, kc, Ap);
      return true;
    case SrcKind::kF16:
      Packer<V, SrcKind::kF16>::pack_a_block(A, m, k0, kc, Ap);
      return true;
    case SrcKind::kBF16:
      Packer<V, SrcKind::kBF16>::pack_a_block(A, m, k0, kc, Ap);
      return true;
    default:
      return false;
  }
}

template <class V>
bool pack_b_as(const SrcMat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  using conv::SrcKind;
  switch (B.kind) {
    case SrcKind::kF32:
      Packer<V, SrcKind::kF32>::pack_b(B, k0, kc, j0, n, Bp);
      return true;
    case SrcKind::kF32Hf32:
      Packer<V, SrcKind::kF32Hf32>::pack_b(B, k0, kc, j0, n, Bp);
      return true;
    case SrcKind::kF32Fp16:
      Packer<V, SrcKind::kF32Fp16>::pack_b(B, k0, kc, j0, n, Bp);
      return true;
    case SrcKind::kF16:
      Packer<V, SrcKind::kF16>::pack_b(B, k0, kc, j0, n, Bp);
      return true;
    case SrcKind::kBF16:
      Packer<V, SrcKind::kBF16>::pack_b(B, k0, kc, j0, n, Bp);
      return true;
    default:
      return false;
  }
}

}  // namespace
}  // namespace aclnn_cpu::matmul
