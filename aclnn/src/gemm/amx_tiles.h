// AMX tiles (Intel's matrix unit) behind one small interface, with two implementations that the
// bf16 tile kernels (gemm/amx_gemm.h) are written over:
//
//   AmxUnit   the instructions: ldtilecfg, tilezero, tileloadd, tdpbf16ps, tilestored,
//             tilerelease (gemm/amx_unit.cpp). Call only where cpu::may_use(cpu::kAmxFeatures),
//             which includes Linux's tile-data permission (cpu/features.cpp asks for it).
//   AmxModel  the same operations in software, exactly as Intel's pseudo-code defines them
//             (gemm/amx_model.cpp), so that every machine, whatever its CPU, runs the kernels'
//             packing, edges and tails, and AMX machines check the instructions against it. The
//             shipped library never takes this path.
//
// Tiles are the 8 registers of palette 1: up to 16 rows of 64 bytes each. A configuration gives
// each tile its rows and its bytes per row (colsb); loads and stores move rows x colsb bytes, and
// everything past them reads as zero. TDPBF16PS C += A * B takes C as fp32 [M][N] (colsb = 4 N),
// A as bf16 pairs [M][K/2] (colsb = 4 (K/2)) and B as bf16 pairs in VNNI order [K/2][N] (each
// row: N columns of one pair of consecutive k), and for every (m, n):
//   even = sum over pairs p of fp32(A[m][p].lo) * fp32(B[p][n].lo)   (fused multiply-adds, in p
//   order) odd  = sum over pairs p of fp32(A[m][p].hi) * fp32(B[p][n].hi) C[m][n] = C[m][n] + (even
//   + odd)
// each step rounded to nearest even in fp32, input denormals read as zero and output denormals
// flushed to zero (DAZ, FTZ; MXCSR is neither read nor written).
#pragma once

#include <cstdint>

namespace aclnn_cpu::gemm {

inline constexpr int kTiles = 8;
inline constexpr int kTileRows = 16;
inline constexpr int kTileRowBytes = 64;

// The 64-byte operand of ldtilecfg, palette 1 (Intel SDM, "TILECFG").
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tiles 0..7 (8..15 reserved, 0)
  uint8_t rows[16] = {};    // rows of tiles 0..7 (8..15 reserved, 0)

  void set(int tile, int nrows, int bytes_per_row) {
    rows[tile] = static_cast<uint8_t>(nrows);
    colsb[tile] = static_cast<uint16_t>(bytes_per_row);
  }
};
static_assert(sizeof(TileConfig) == 64);

// The software model. Its operations take the tile numbers as template arguments, as the
// instructions encode them, so a kernel compiles against either implementation unchanged.
class AmxModel {
 public:
  void configure(const TileConfig& cfg);
  template <int T>
  void zero() {
    zero_tile(T);
  }
  template <int T>
  void load(const void* base, int64_t stride_bytes) {
    load_tile(T, base, stride_bytes);
  }
  template <int C, int A, int B>
  void dpbf16ps() {
    dpbf16ps_tiles(C, A, B);
  }
  template <int T>
  void store(void* base, int64_t stride_bytes) const {
    store_tile(T, base, stride_bytes);
  }
  void release();

 private:
  void zero_tile(int t);
  void load_tile(int t, const void* base, int64_t stride_bytes);
  void dpbf16ps_tiles(int c, int a, int b);
  void store_tile(int t, void* base, int64_t stride_bytes) const;

  TileConfig cfg_;
  bool configured_ = false;
  alignas(64) uint8_t reg_[kTiles][kTileRows][kTileRowBytes] = {};
};

// The instructions (gemm/amx_unit.cpp, compiled for amx-tile and amx-bf16). The tile numbers
// are template arguments because the instructions encode them; each is instantiated for 0..7.
class AmxUnit {
 public:
  void configure(const TileConfig& cfg);
  template <int T>
  void zero();
  template <int T>
  void load(const void* base, int64_t stride_bytes);
  template <int C, int A, int B>
  void dpbf16ps();
  template <int T>
  void store(void* base, int64_t stride_bytes) const;
  void release();
};

// fp32 of a bf16 as TDPBF16PS reads it (make_fp32, then denormals as zero), and the FTZ of its
// results: shared by the model and the tests' reference.
float amx_bf16_input(uint16_t bits);
float amx_flush(float x);

}  // namespace aclnn_cpu::gemm
