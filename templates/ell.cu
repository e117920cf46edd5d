/* SPDX-License-Identifier: BSD-3-Clause */
/* ell.cu: SpMV on ELL and ELL-R (column-major n x K slots, padding -0.0 with a valid column).
 *
 * MAPPING  one thread per row; thread i reads slot j of its row at i + j*nrows, so a warp reads
 *          32 consecutive slots per j (coalesced). ELL runs all K slots with no branch (padding
 *          multiplies x at a valid column by -0.0); with SPX_K (a bucket >= K) it is fully unrolled.
 *          ELL-R stops at the row's length rl[i] (fewer reads on ragged rows, one more array).
 * BYTES    per slot: 4 (col) + sizeof(T) (val) + x gathered (cached); per row: y read (beta != 0)
 *          and written; ELL-R adds 4 per row (rl).
 *
 * CONSTANTS  SPX_VALUE_T (double|float), SPX_K (a bucket of the row width, >= k; absent: k's loop),
 *            SPX_SLOT_T (int, or long long when nrows*K >= 2^31), SPX_BLOCK (launch bound).
 * ARGUMENTS  the descriptor's scalars and arrays in order, then alpha, beta, x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_SLOT_T
#define SPX_SLOT_T int
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

/* y[i] = alpha*sum + beta*y[i]; beta == 0 does not read y (it may hold NaN). */
#define SPX_STORE(y, i, sum, alpha, beta) \
  (y)[i] = (beta) == 0.0 ? (spx_value_t)((alpha) * (sum)) : (spx_value_t)((alpha) * (sum) + (beta) * (y)[i])

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_ell_spmv(long long nrows, long long ncols, long long nnz, int k, const int *__restrict__ col,
             const spx_value_t *__restrict__ val, double alpha, double beta,
             const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const SPX_SLOT_T i = (SPX_SLOT_T)blockIdx.x * blockDim.x + threadIdx.x;
  spx_value_t sum = 0;
  (void)ncols; (void)nnz; (void)k;
  if (i >= nrows) return;
#ifdef SPX_K
  /* SPX_K is a bucket >= k: slots past k read slot k-1 again (an L1 hit) and add -0.0, so every
   * load stays unconditional and in flight at once (a guard that skips them serializes them) */
#pragma unroll
  for (int j = 0; j < SPX_K; j++) {
    const SPX_SLOT_T s = i + (SPX_SLOT_T)(j < k ? j : k - 1) * (SPX_SLOT_T)nrows;
    const spx_value_t t = SPX_LDS(val + s) * __ldg(x + SPX_LDS(col + s));
    sum += j < k ? t : (spx_value_t)-0.0;
  }
#else
  for (int j = 0; j < k; j++) {
    const SPX_SLOT_T s = i + (SPX_SLOT_T)j * (SPX_SLOT_T)nrows;
    sum += SPX_LDS(val + s) * __ldg(x + SPX_LDS(col + s));
  }
#endif
  SPX_STORE(y, i, sum, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_ell_r_spmv(long long nrows, long long ncols, long long nnz, int k, const int *__restrict__ col,
               const spx_value_t *__restrict__ val, const int *__restrict__ rl, double alpha,
               double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const SPX_SLOT_T i = (SPX_SLOT_T)blockIdx.x * blockDim.x + threadIdx.x;
  spx_value_t sum = 0;
  (void)ncols; (void)nnz; (void)k;
  if (i >= nrows) return;
  const int len = rl[i];
#pragma unroll 4
  for (int j = 0; j < len; j++) {
    const SPX_SLOT_T s = i + (SPX_SLOT_T)j * (SPX_SLOT_T)nrows;
    sum += SPX_LDS(val + s) * __ldg(x + SPX_LDS(col + s));
  }
  SPX_STORE(y, i, sum, alpha, beta);
}
