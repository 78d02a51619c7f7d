// bf16 GEMM on AMX tiles, fp32 accumulation:
//
//   C[M, N] (fp32, ldc) = A[M, K] * B[K, N]   (+ C when `accumulate`), A and B bf16
//
// The operands are packed first (scalar code, any CPU), zero-padded to whole tiles:
//   A panels  Ap[M/16][K/32][16 rows][32 k]          one 16 x 64-byte tile per (panel, k block)
//   B panels  Bp[N/16][K/32][16 k pairs][16 n][2]    VNNI order: a row holds a pair of consecutive
//                                                    k for 16 columns, one tile per (panel, block)
// (dimensions rounded up). The kernel runs a 32 x 32 block of C at a time in four fp32 tiles
// (tmm0-3), with two A tiles (tmm4-5) and two B tiles (tmm6-7) loaded per k block of 32: four
// TDPBF16PS per 4 KB loaded, oneDNN's brgemm blocking. A block past the last panel reads a panel
// of zeros. C is stored tile by tile through a 1 KB buffer, so edge tiles write only their valid
// rows and columns.
//
// The kernel is a template over the tile implementation (gemm/amx_tiles.h): AmxModel on every
// machine (tests), AmxUnit where the CPU has AMX and Linux granted the tile data.
#pragma once

#include <cstdint>

#include "gemm/amx_tiles.h"

namespace aclnn_cpu::gemm {

// A bf16 matrix as a strided view: element (r, c) at p[r * rs + c * cs].
struct Bf16Mat {
  const uint16_t* p = nullptr;
  int64_t rs = 0;
  int64_t cs = 1;
};

inline constexpr int64_t kAmxRows = 16;  // rows of a tile = M and N of a panel
inline constexpr int64_t kAmxK = 32;     // bf16 k of one tile row (64 bytes)

inline int64_t amx_round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}
// Elements of the packed A and B (both padded to whole panels and k blocks).
inline int64_t amx_packed_a_elems(int64_t M, int64_t K) {
  return amx_round_up(M, kAmxRows) * amx_round_up(K, kAmxK);
}
inline int64_t amx_packed_b_elems(int64_t K, int64_t N) {
  return amx_round_up(N, kAmxRows) * amx_round_up(K, kAmxK);
}

// Packs A [M, K] into A panels (Ap: amx_packed_a_elems), B [K, N] into VNNI B panels (Bp:
// amx_packed_b_elems); padding is zero.
void amx_pack_a(int64_t M, int64_t K, Bf16Mat A, uint16_t* Ap);
void amx_pack_b(int64_t K, int64_t N, Bf16Mat B, uint16_t* Bp);

// C = Ap * Bp (+ C) on the model, and (where cpu::may_use(cpu::kAmxFeatures)) on the unit; both
// take the packed operands of the functions above.
void amx_gemm_bf16_model(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                         float* C, int64_t ldc, bool accumulate);
void amx_gemm_bf16_unit(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                        float* C, int64_t ldc, bool accumulate);

// The tiles this build of the library runs the AMX kernels on (gemm/amx_backend.cpp, the one
// source compiled per backend):
//   kOff    none: the shipped library where the bf16_amx policy is off (no AMX, capped, refused)
//   kUnit   the CPU's tiles (the shipped library where the policy is on)
//   kModel  the software model: only the test build libaclnn_amx_model, so that every machine
//           runs the conv algorithms' AMX paths (packing, edges, tails) through the public API
enum class AmxTiles { kOff = 0, kUnit = 1, kModel = 2 };
AmxTiles amx_tiles();
inline bool amx_tiles_run() {
  return amx_tiles() != AmxTiles::kOff;
}
const char* amx_tiles_name(AmxTiles t);  // "off", "on", "model"
// C = Ap * Bp (+ C) on the tiles of amx_tiles() (never called when it is kOff).
void amx_gemm_bf16(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                   float* C, int64_t ldc, bool accumulate);

// A panel of zeros for blocks past the last panel (one tile: 16 rows of 64 bytes).
extern const uint16_t kAmxZeroTile[kAmxRows * kAmxK];

// The kernel over either tile implementation. Tiles: every tile 16 rows x 64 bytes.
template <class Tiles>
void amx_gemm_bf16_tiles(Tiles& tiles, int64_t M, int64_t N, int64_t K, const uint16_t* Ap,
                         const uint16_t* Bp, float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  const int64_t mp = (M + kAmxRows - 1) / kAmxRows, np = (N + kAmxRows - 1) / kAmxRows;
  const int64_t kb = (K + kAmxK - 1) / kAmxK;
  const int64_t tile = kAmxRows * kAmxK;  // bf16 elements of one packed tile
  TileConfig cfg;
  for (int t = 0; t < kTiles; ++t) cfg.set(t, kTileRows, kTileRowBytes);
  tiles.configure(cfg);
  alignas(64) float out[kAmxRows * kAmxRows];  // one C tile on its way to C
  for (int64_t i = 0; i < mp; i += 2) {
    for (int64_t j = 0; j < np; j += 2) {
      tiles.template zero<0>();
      tiles.template zero<1>();
      tiles.template zero<2>();
      tiles.template zero<3>();
      for (int64_t k = 0; k < kb; ++k) {
        const uint16_t* a0 = Ap + (i * kb + k) * tile;
        const uint16_t* a1 = i + 1 < mp ? Ap + ((i + 1) * kb + k) * tile : kAmxZeroTile;
        const uint16_t* b0 = Bp + (j * kb + k) * tile;
        const uint16_t* b1 = j + 1 < np ? Bp + ((j + 1) * kb + k) * tile : kAmxZeroTile;
        tiles.template load<4>(a0, kTileRowBytes);
        tiles.template load<5>(a1, kTileRowBytes);
        tiles.template load<6>(b0, kTileRowBytes);
        tiles.template load<7>(b1, kTileRowBytes);
        tiles.template dpbf16ps<0, 4, 6>();
        tiles.template dpbf16ps<1, 4, 7>();
        tiles.template dpbf16ps<2, 5, 6>();
        tiles.template dpbf16ps<3, 5, 7>();
      }
      // C tile (r, c) of the block: rows i + r, columns j + c (in panels).
      for (int q = 0; q < 4; ++q) {
        const int64_t r0 = (i + q / 2) * kAmxRows, c0 = (j + q % 2) * kAmxRows;
        if (r0 >= M || c0 >= N) continue;
        switch (q) {
          case 0:
            tiles.template store<0>(out, kAmxRows * 4);
            break;
          case 1:
            tiles.template store<1>(out, kAmxRows * 4);
            break;
          case 2:
            tiles.template store<2>(out, kAmxRows * 4);
            break;
          default:
            tiles.template store<3>(out, kAmxRows * 4);
            break;
        }
        const int64_t rows = M - r0 < kAmxRows ? M - r0 : kAmxRows;
        const int64_t cols = N - c0 < kAmxRows ? N - c0 : kAmxRows;
        for (int64_t r = 0; r < rows; ++r) {
          float* c = C + (r0 + r) * ldc + c0;
          const float* o = out + r * kAmxRows;
          if (accumulate) {
            for (int64_t x = 0; x < cols; ++x) c[x] += o[x];
          } else {
            for (int64_t x = 0; x < cols; ++x) c[x] = o[x];
          }
        }
      }
    }
  }
  tiles.release();
}

}  // namespace aclnn_cpu::gemm
