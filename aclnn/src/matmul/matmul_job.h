// aclnnMatmul's validated problem and its execution: out[b] (M x N) = A[b] (M x K) * B[b] (K x N)
// for every index b of the (broadcast) batch, operands read in place with any strides, products
// accumulated in fp32, each output element rounded once to out's dtype.
//
// Execution: the outputs are cut into tiles of at most kRowTile x kColTile (a function of the
// shape alone), one oneTBB task each in the executor's arena. A task packs its rows of A from the
// caller's tensor (panels.h: 16-bit elements widened, FLOAT ones rounded per cubeMathType, as they
// are packed) K chunk by K chunk and runs our packed GEMM over its columns, B converted as the
// GEMM packs its panels; the fp32 sums go straight into an fp32 output with unit column stride,
// or into the task's tile and are then rounded into out. Every element's sum runs over k in the
// same order whatever the tiles and threads (the GEMM's K blocks, added one after another), so
// the result does not depend on the thread count. On the portable tier (no packed GEMM) a task
// converts blocks of A and B into its scratch and calls OpenBLAS.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "matmul/panels.h"

namespace aclnn_cpu::matmul {

// A matrix over the batch: matrix b = (i_0, ..., i_{d-1}) starts at sum_d i_d * batch_strides[d]
// elements past m's.
struct BatchedMat {
  SrcMat m;
  std::vector<int64_t> batch_strides;  // one per MatmulJob::batch dim (0: broadcast)
};

struct MatmulJob {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> batch;  // the output's batch dims (empty: one matrix)
  BatchedMat a, b;             // [M, K] and [K, N]
  // The output [M, N] (element (r, c) at r * out_rs + c * out_cs), FLOAT, FLOAT16 or BF16.
  void* out = nullptr;  // element (0, 0) of batch 0
  aclDataType out_dtype = ACL_FLOAT;
  int64_t out_rs = 0, out_cs = 0;
  std::vector<int64_t> out_batch_strides;
};

// Where a broadcast operand (B with every batch stride 0) lets the batch dims of A and out join
// their rows, merges them (one product of M * batch rows: fewer, larger tiles, B packed fewer
// times).
void fold_batch_into_rows(MatmulJob& job);

// Phase 1 tail: plans `job` and returns a registered executor for `api` plus the workspace size.
aclOpExecutor* make_executor(const char* api, MatmulJob job, uint64_t* workspace_size);

}  // namespace aclnn_cpu::matmul
