/* SPDX-License-Identifier: BSD-3-Clause */
/* hyb.cu: SpMV on HYB (Bell and Garland): an ELL part of width K (column-major, padding -0.0 with
 * a valid column) plus a row-sorted COO part with the entries past K. Two launches.
 *
 * MAPPING  spx_hyb_ell: one thread per row, as ell.cu: slot j of row i at i + j*nrows, so a warp
 *          reads 32 consecutive slots per j (coalesced); all K slots without a branch, the loop
 *          fully unrolled when SPX_K is defined. It writes y = alpha*(ELL part) + beta*y for every
 *          row (beta == 0 does not read y), so no separate scaling pass is needed.
 *          spx_hyb_coo (only when the COO part is not empty): one thread per COO entry; a warp
 *          sums runs of equal rows with a segmented shuffle scan and only the last entry of each
 *          run in the warp issues an atomicAdd of alpha*sum (rows are sorted).
 * BYTES    ELL part, per slot: 4 (col) + sizeof(T) (val) + x gathered; per row: y written (read
 *          when beta != 0). COO part, per entry: 4 (row) + 4 (col) + sizeof(T) (val) + x gathered,
 *          and one y read-modify-write per row run per warp.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_K (a bucket of the ELL width, >= k; absent: k's loop), SPX_SLOT_T (int, or
 *            long long when nrows*K >= 2^31), SPX_BLOCK (launch bound).
 * ARGUMENTS  nrows, ncols, nnz, k, ncoo, ell_col, ell_val, coo_row, coo_col, coo_val, alpha, beta,
 *            x, y. */
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

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_hyb_ell(long long nrows, long long ncols, long long nnz, int k, long long ncoo,
            const int *__restrict__ ell_col, const spx_value_t *__restrict__ ell_val,
            const int *__restrict__ coo_row, const int *__restrict__ coo_col,
            const spx_value_t *__restrict__ coo_val, double alpha, double beta,
            const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const SPX_SLOT_T i = (SPX_SLOT_T)blockIdx.x * blockDim.x + threadIdx.x;
  spx_value_t sum = 0;
  (void)ncols; (void)nnz; (void)k; (void)ncoo; (void)coo_row; (void)coo_col; (void)coo_val;
  if (i >= nrows) return;
#ifdef SPX_K
  /* SPX_K is a bucket >= k: slots past k read slot k-1 again and add -0.0 (as ell.cu) */
#pragma unroll
  for (int j = 0; j < SPX_K; j++) {
    const SPX_SLOT_T s = i + (SPX_SLOT_T)(j < k ? j : k - 1) * (SPX_SLOT_T)nrows;
    const spx_value_t t = SPX_LDS(ell_val + s) * __ldg(x + SPX_LDS(ell_col + s));
    sum += j < k ? t : (spx_value_t)-0.0;
  }
#else
  for (int j = 0; j < k; j++) {
    const SPX_SLOT_T s = i + (SPX_SLOT_T)j * (SPX_SLOT_T)nrows;
    sum += SPX_LDS(ell_val + s) * __ldg(x + SPX_LDS(ell_col + s));
  }
#endif
  y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_hyb_coo(long long nrows, long long ncols, long long nnz, int k, long long ncoo,
            const int *__restrict__ ell_col, const spx_value_t *__restrict__ ell_val,
            const int *__restrict__ coo_row, const int *__restrict__ coo_col,
            const spx_value_t *__restrict__ coo_val, double alpha, double beta,
            const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const bool live = q < ncoo;
  const int r = live ? coo_row[q] : -1;
  spx_value_t v = live ? SPX_LDS(coo_val + q) * __ldg(x + SPX_LDS(coo_col + q)) : (spx_value_t)0;
  (void)nrows; (void)ncols; (void)nnz; (void)k; (void)ell_col; (void)ell_val; (void)beta;
  /* Inclusive segmented scan over the warp (rows sorted: equal rows are contiguous). Every lane
   * takes part: the grid is a whole number of warps (blockDim is a multiple of 32). */
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const spx_value_t u = __shfl_up_sync(0xffffffffu, v, off);
    const int ru = __shfl_up_sync(0xffffffffu, r, off);
    if (lane >= off && ru == r) v += u;
  }
  const int rn = __shfl_down_sync(0xffffffffu, r, 1);
  if (live && (lane == 31 || rn != r)) atomicAdd(y + r, (spx_value_t)(alpha * v));
}
