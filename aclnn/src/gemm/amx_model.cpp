// The software model of the AMX tile operations (gemm/amx_tiles.h), per the Intel SDM's
// pseudo-code for LDTILECFG, TILEZERO, TILELOADD, TDPBF16PS and TILESTORED (palette 1).
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gemm/amx_tiles.h"

namespace aclnn_cpu::gemm {

namespace {

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

float amx_flush(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

float amx_bf16_input(uint16_t bits) {
  return amx_flush(bits_to_float(static_cast<uint32_t>(bits) << 16));  // DAZ
}

void AmxModel::configure(const TileConfig& cfg) {
  if (cfg.palette != 1)
    throw std::logic_error("AmxModel: palette " + std::to_string(cfg.palette) + ", expected 1");
  for (int t = 0; t < kTiles; ++t)
    if (cfg.rows[t] > kTileRows || cfg.colsb[t] > kTileRowBytes || cfg.colsb[t] % 4 != 0)
      throw std::logic_error("AmxModel: tile " + std::to_string(t) + " configured as " +
                             std::to_string(cfg.rows[t]) + " rows x " +
                             std::to_string(cfg.colsb[t]) + " bytes (at most 16 x 64, bytes % 4)");
  cfg_ = cfg;
  configured_ = true;
  std::memset(reg_, 0, sizeof(reg_));  // LDTILECFG zeroes every tile
}

void AmxModel::release() {
  configured_ = false;
  cfg_ = TileConfig{};
  std::memset(reg_, 0, sizeof(reg_));
}

void AmxModel::zero_tile(int t) {
  if (!configured_) throw std::logic_error("AmxModel: TILEZERO before LDTILECFG");
  std::memset(reg_[t], 0, sizeof(reg_[t]));
}

void AmxModel::load_tile(int t, const void* base, int64_t stride_bytes) {
  if (!configured_) throw std::logic_error("AmxModel: TILELOADD before LDTILECFG");
  std::memset(reg_[t], 0, sizeof(reg_[t]));
  const auto* src = static_cast<const uint8_t*>(base);
  for (int r = 0; r < cfg_.rows[t]; ++r)
    std::memcpy(reg_[t][r], src + r * stride_bytes, cfg_.colsb[t]);
}

void AmxModel::store_tile(int t, void* base, int64_t stride_bytes) const {
  if (!configured_) throw std::logic_error("AmxModel: TILESTORED before LDTILECFG");
  auto* dst = static_cast<uint8_t*>(base);
  for (int r = 0; r < cfg_.rows[t]; ++r)
    std::memcpy(dst + r * stride_bytes, reg_[t][r], cfg_.colsb[t]);
}

// C[m][n] += (sum_p A[m][p].lo * B[p][n].lo) + (sum_p A[m][p].hi * B[p][n].hi), the two sums
// kept apart as fused multiply-adds in p order, then added, then added to C: each step rounded to
// nearest even in fp32, denormal inputs read as zero and denormal results flushed to zero.
void AmxModel::dpbf16ps_tiles(int c, int a, int b) {
  if (!configured_) throw std::logic_error("AmxModel: TDPBF16PS before LDTILECFG");
  const int M = cfg_.rows[c], N = cfg_.colsb[c] / 4, P = cfg_.colsb[a] / 4;
  if (cfg_.rows[a] != M || cfg_.rows[b] != P || cfg_.colsb[b] != cfg_.colsb[c])
    throw std::logic_error("AmxModel: TDPBF16PS on tiles of mismatched shapes (#UD)");
  for (int m = 0; m < M; ++m) {
    float even[16] = {}, odd[16] = {};
    for (int p = 0; p < P; ++p) {
      uint16_t ap[2];
      std::memcpy(ap, &reg_[a][m][4 * p], 4);
      const float a_lo = amx_bf16_input(ap[0]), a_hi = amx_bf16_input(ap[1]);
      for (int n = 0; n < N; ++n) {
        uint16_t bp[2];
        std::memcpy(bp, &reg_[b][p][4 * n], 4);
        even[n] = amx_flush(std::fmaf(a_lo, amx_bf16_input(bp[0]), even[n]));
        odd[n] = amx_flush(std::fmaf(a_hi, amx_bf16_input(bp[1]), odd[n]));
      }
    }
    for (int n = 0; n < N; ++n) {
      float acc;
      std::memcpy(&acc, &reg_[c][m][4 * n], 4);
      acc = amx_flush(amx_flush(acc) + amx_flush(even[n] + odd[n]));
      std::memcpy(&reg_[c][m][4 * n], &acc, 4);
    }
  }
}

}  // namespace aclnn_cpu::gemm
