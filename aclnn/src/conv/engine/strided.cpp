#include "conv/engine/strided.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "conv/engine/geometry.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/engine/float8.h"
#include "conv/engine/half.h"
#include "conv/engine/source.h"
#include "meta.h"
#include "cpu/simd_variants.h"

namespace aclnn_cpu::conv {
namespace {

// Storage element types, distinguishable by type so the dtype switch happens once per call.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct E4M3FN {  // FLOAT8_E4M3FN
  uint8_t bits;
};
struct HiF8 {  // HIFLOAT8
  uint8_t bits;
};

template <typename T>
T load(float v) {
  return static_cast<T>(v);
}
template <typename T>
T load(double v) {
  return static_cast<T>(v);
}
template <typename T>
T load(F16 v) {
  return static_cast<T>(half_to_float(v.bits));
}
template <typename T>
T load(BF16 v) {
  return static_cast<T>(bf16_to_float(v.bits));
}
template <typename T>
T load(E4M3FN v) {
  return static_cast<T>(kE4m3fnValues[v.bits]);
}
template <typename T>
T load(HiF8 v) {
  return static_cast<T>(kHif8Values[v.bits]);
}

// Narrowing stores round to nearest even (HIFLOAT8: nearest, ties away; float8.h). (double ->
// fp16/bf16 goes through float, which can double-round in the last bit; only the DOUBLE-compute +
// 16-bit-output mix reaches it. 8-bit outputs come only from float compute.)
template <typename Dst, typename T>
Dst store(T v) {
  if constexpr (std::is_same_v<Dst, F16>) {
    return F16{float_to_half(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<Dst, BF16>) {
    return BF16{float_to_bf16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<Dst, E4M3FN>) {
    return E4M3FN{float_to_e4m3fn(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<Dst, HiF8>) {
    return HiF8{float_to_hif8(static_cast<float>(v))};
  } else {
    return static_cast<Dst>(v);
  }
}

// Calls fn(Tag{}) with Tag the storage type of `dtype`.
template <typename Fn>
void dispatch(aclDataType dtype, Fn&& fn) {
  switch (dtype) {
    case ACL_FLOAT:
      return fn(float{});
    case ACL_DOUBLE:
      return fn(double{});
    case ACL_FLOAT16:
      return fn(F16{});
    case ACL_BF16:
      return fn(BF16{});
    case ACL_FLOAT8_E4M3FN:
      return fn(E4M3FN{});
    case ACL_HIFLOAT8:
      return fn(HiF8{});
    default:
      throw std::logic_error("conv engine reached an unsupported dtype");
  }
}

// Runs body(row) for every row (i0, i1, i2, i3) of a 5-d view in parallel; rows are the
// innermost-dim runs, so a row's elements are `dims[4]` apart by `strides[4]`.
template <typename Body>
void for_each_row(const std::array<int64_t, 5>& dims, Body&& body) {
  const int64_t rows = dims[0] * dims[1] * dims[2] * dims[3];
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, dims[4]));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row != r.end(); ++row) body(row);
                    });
}

// Element offset (in elements, from the view origin) of the first element of `row`.
inline int64_t row_offset(const std::array<int64_t, 5>& dims, const std::array<int64_t, 5>& st,
                          int64_t row) {
  const int64_t i3 = row % dims[3];
  row /= dims[3];
  const int64_t i2 = row % dims[2];
  row /= dims[2];
  const int64_t i1 = row % dims[1];
  const int64_t i0 = row / dims[1];
  return i0 * st[0] + i1 * st[1] + i2 * st[2] + i3 * st[3];
}

// The view with its inner dims folded into dim 4 wherever they lie as one run (dim d's stride is
// the run's length times its element stride), while the run stays within kLongRow elements: the
// same elements in the same order, in fewer and longer rows, so the row loops below pay their
// per-row indexing and vector tails less often (a 28-wide NCHW output was 28 elements a row).
constexpr int64_t kLongRow = 16384;
View5 long_rows(View5 v) {
  for (int d = 3; d >= 0 && v.dims[4] == 1; --d) {  // a size-1 dim 4: its stride means nothing
    std::swap(v.dims[4], v.dims[d]);
    std::swap(v.strides[4], v.strides[d]);
  }
  for (int d = 3; d >= 0; --d) {
    if (v.dims[d] == 1) continue;
    if (v.strides[d] != v.dims[4] * v.strides[4] || v.dims[4] * v.dims[d] > kLongRow) break;
    v.dims[4] *= v.dims[d];
    v.dims[d] = 1;
  }
  return v;
}

template <typename T, Round R>
T rounded(T v) {
  if constexpr (std::is_same_v<T, float> && R == Round::kHf32) return round_to_hf32(v);
  if constexpr (std::is_same_v<T, float> && R == Round::kFp16) return round_to_half(v);
  return v;
}

template <typename T, Round R, typename Src>
void pack_rows(const View5& view, T* dst) {
  const View5 v = long_rows(view);
  const Src* base = reinterpret_cast<const Src*>(v.origin());
  const int64_t W = v.dims[4];
  const int64_t sw = v.strides[4];
  for_each_row(v.dims, [&](int64_t row) {
    const Src* p = base + row_offset(v.dims, v.strides, row);
    T* q = dst + row * W;
    if (sw == 1) {
      for (int64_t i = 0; i < W; ++i) q[i] = rounded<T, R>(load<T>(p[i]));
    } else {
      for (int64_t i = 0; i < W; ++i) q[i] = rounded<T, R>(load<T>(p[i * sw]));
    }
  });
}

// pack_rows for a float copy of a source the direct kernels' Source can read (every dtype but
// DOUBLE): its convert() is vectorised, where load() + rounded() go element by element (USE_FP16
// on fp32 spent more time rounding the operands than convolving them).
void pack_source_rows(const View5& view, SrcKind kind, float* dst) {
  const View5 v = long_rows(view);
  const Source base{v.origin(), kind};
  const int64_t W = v.dims[4];
  for_each_row(v.dims, [&](int64_t row) {
    base.at(row_offset(v.dims, v.strides, row)).convert(W, v.strides[4], dst + row * W);
  });
}

constexpr int64_t kAskBytes = 4096;

}  // namespace

bool View5::contiguous() const {
  int64_t expected = 1;
  for (int d = 4; d >= 0; --d) {
    if (dims[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= dims[d];
  }
  return true;
}

char* View5::origin() const {
  return data + offset * static_cast<int64_t>(dtype_size(dtype));
}

template <typename T>
bool usable_in_place(const View5& v, Round round) {
  const aclDataType want = std::is_same_v<T, double> ? ACL_DOUBLE : ACL_FLOAT;
  return v.dtype == want && round == Round::kNone && v.contiguous();
}

template <typename T>
void pack(const View5& src, T* dst, Round round) {
  if (src.numel() == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    SrcKind kind;
    if (src_kind_of(src.dtype, round, &kind)) return pack_source_rows(src, kind, dst);
  }
  dispatch(src.dtype, [&](auto tag) {
    using Src = decltype(tag);
    switch (round) {
      case Round::kNone:
        return pack_rows<T, Round::kNone, Src>(src, dst);
      case Round::kHf32:
        return pack_rows<T, Round::kHf32, Src>(src, dst);
      case Round::kFp16:
        return pack_rows<T, Round::kFp16, Src>(src, dst);
    }
  });
}

template <typename T>
void unpack(const T* src, const View5& view) {
  if (view.numel() == 0) return;
  const View5 dst = long_rows(view);
  dispatch(dst.dtype, [&](auto tag) {
    using Dst = decltype(tag);
    Dst* base = reinterpret_cast<Dst*>(dst.origin());
    const int64_t W = dst.dims[4];
    const int64_t sw = dst.strides[4];
    for_each_row(dst.dims, [&](int64_t row) {
      Dst* p = base + row_offset(dst.dims, dst.strides, row);
      const T* q = src + row * W;
      if constexpr (std::is_same_v<T, float> &&
                    (std::is_same_v<Dst, F16> || std::is_same_v<Dst, BF16>)) {
        if (sw == 1) {  // vectorised where the CPU can, bit-identical rounding
          narrow16(std::is_same_v<Dst, BF16>, q, W, reinterpret_cast<uint16_t*>(p));
          return;
        }
      }
      for (int64_t i = 0; i < W; ++i) p[i * sw] = store<Dst>(q[i]);
    });
  });
}

// acc[i] += p[i] for i < n (double accumulators, lane-wise: vectorizes without reassociation).
[[gnu::always_inline]] inline void add_run_f32_body(double* __restrict acc,
                                                    const float* __restrict p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(p[i]);
}
ACLNN_SIMD_VARIANTS(void, add_run_f32, (double* acc, const float* p, int64_t n), (acc, p, n))

template <typename T>
void channel_sum(const View5& src, T* out) {
  const int64_t C = src.dims[1];
  if (C == 0) return;
  if (src.numel() == 0) {
    fill_zero(out, C);
    return;
  }
  const auto& d = src.dims;
  const auto& s = src.strides;
  const bool narrow = src.dtype == ACL_FLOAT16 || src.dtype == ACL_BF16;
  if ((src.dtype == ACL_FLOAT || narrow) && C > 1 && s[1] == 1) {
    // Channels-last (e.g. ConvTbc's [T, B, C]): each task owns kBlock contiguous channels and
    // adds whole rows of them (fp16 / bf16 rows converted exactly first); per channel the order
    // is still n, d, h, w, as below.
    constexpr int64_t kBlock = 64;
    SrcKind kind = SrcKind::kF32;
    src_kind_of(src.dtype, Round::kNone, &kind);
    const Source base{src.origin(), kind};
    tbb::parallel_for(int64_t{0}, ceil_div(C, kBlock), [&](int64_t b) {
      const int64_t c0 = b * kBlock, nc = std::min(C, c0 + kBlock) - c0;
      double acc[kBlock] = {};
      float row[kBlock];
      for (int64_t n = 0; n < d[0]; ++n)
        for (int64_t i2 = 0; i2 < d[2]; ++i2)
          for (int64_t i3 = 0; i3 < d[3]; ++i3)
            for (int64_t i4 = 0; i4 < d[4]; ++i4) {
              const Source r = base.at(n * s[0] + i2 * s[2] + i3 * s[3] + i4 * s[4] + c0);
              if (kind != SrcKind::kF32) r.convert(nc, 1, row);
              add_run_f32(acc, kind == SrcKind::kF32 ? static_cast<const float*>(r.data) : row, nc);
            }
      for (int64_t c = 0; c < nc; ++c) out[c0 + c] = static_cast<T>(acc[c]);
    });
    return;
  }
  if ((src.dtype == ACL_FLOAT || narrow) && (d[4] == 1 || s[4] == 1)) {
    // fp32 (or fp16/bf16, converted exactly a chunk at a time by Source::convert, vectorised on
    // AVX-512 and AVX2 + F16C) with unit innermost stride: merge the spatial dims that are
    // contiguous with it into one run, sum each run with sum_run_f32 (16 double lanes) and the runs
    // in order (n, then outer spatial dims). (The element-at-a-time loop below took a sizeable
    // share of a converting call; measured: bench/RESULTS.md, design strided.sum-runs.)
    constexpr int64_t kSumChunk = 512;
    int64_t run = d[4], inner = 4;
    while (inner > 2 && (d[inner - 1] == 1 || s[inner - 1] == run)) run *= d[--inner];
    SrcKind kind = SrcKind::kF32;
    src_kind_of(src.dtype, Round::kNone, &kind);
    const Source base{src.origin(), kind};
    const int64_t n2 = inner > 2 ? d[2] : 1, n3 = inner > 3 ? d[3] : 1;
    const int64_t runs = d[0] * n2 * n3;
    const auto run_at = [&](int64_t c, int64_t k) {  // run k of channel c, in (n, i2, i3) order
      const int64_t i3 = k % n3, i2 = k / n3 % n2, n = k / (n2 * n3);
      return base.at(n * s[0] + c * s[1] + i2 * s[2] + i3 * s[3]);
    };
    tbb::parallel_for(int64_t{0}, C, [&](int64_t c) {
      double acc = 0;
      float chunk[kSumChunk];  // 16-bit runs converted (exactly) a chunk at a time
      for (int64_t k = 0; k < runs; ++k) {
        const Source r = run_at(c, k);
        if (kind == SrcKind::kF32) {
          // The next run asked for meanwhile (its first kAskBytes): runs a sample apart are
          // on other pages, where the hardware prefetcher starts over (ct2d_decoder's
          // gradBias: 16 runs of 4 KB a channel, the loads waited on memory).
          if (k + 1 < runs) prefetch_bytes(run_at(c, k + 1).data, std::min(run * 4, kAskBytes));
          acc += sum_run_f32(static_cast<const float*>(r.data), run);
          continue;
        }
        for (int64_t j = 0; j < run; j += kSumChunk) {
          const int64_t len = std::min(kSumChunk, run - j);
          r.at(j).convert(len, 1, chunk);
          acc += sum_run_f32(chunk, len);
        }
      }
      out[c] = static_cast<T>(acc);
    });
    return;
  }
  dispatch(src.dtype, [&](auto tag) {
    using Src = decltype(tag);
    const Src* base = reinterpret_cast<const Src*>(src.origin());
    tbb::parallel_for(int64_t{0}, C, [&](int64_t c) {
      double acc = 0;  // fixed order: n, d, h, w
      for (int64_t n = 0; n < d[0]; ++n)
        for (int64_t i2 = 0; i2 < d[2]; ++i2)
          for (int64_t i3 = 0; i3 < d[3]; ++i3) {
            const Src* p = base + n * s[0] + c * s[1] + i2 * s[2] + i3 * s[3];
            for (int64_t i4 = 0; i4 < d[4]; ++i4) acc += load<double>(p[i4 * s[4]]);
          }
      out[c] = static_cast<T>(acc);
    });
  });
}

template <typename T>
void add_channel_bias(T* buf, const T* bias, int64_t N, int64_t C, int64_t S) {
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, S))),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t nc = r.begin(); nc != r.end(); ++nc)
          add_bias_block(buf + nc * S, S, 1, S, bias + nc % C);
      });
}

template <typename T>
void fill_zero(T* buf, int64_t count) {
  if (count > 0) std::memset(buf, 0, static_cast<size_t>(count) * sizeof(T));
}

void pack_raw(const View5& view, void* dst) {
  const View5 v = long_rows(view);
  dispatch(v.dtype, [&]<typename S>(S) {
    const S* base = reinterpret_cast<const S*>(v.origin());
    S* out = static_cast<S*>(dst);
    const int64_t W = v.dims[4], sw = v.strides[4];
    for_each_row(v.dims, [&](int64_t row) {
      const S* p = base + row_offset(v.dims, v.strides, row);
      for (int64_t i = 0; i < W; ++i) out[row * W + i] = p[i * sw];
    });
  });
}

#define ACLNN_CONV_INSTANTIATE(T)                                             \
  template bool usable_in_place<T>(const View5&, Round);                      \
  template void pack<T>(const View5&, T*, Round);                             \
  template void unpack<T>(const T*, const View5&);                            \
  template void channel_sum<T>(const View5&, T*);                             \
  template void add_channel_bias<T>(T*, const T*, int64_t, int64_t, int64_t); \
  template void fill_zero<T>(T*, int64_t);
ACLNN_CONV_INSTANTIATE(float)
ACLNN_CONV_INSTANTIATE(double)
#undef ACLNN_CONV_INSTANTIATE

}  // namespace aclnn_cpu::conv
