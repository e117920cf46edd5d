/* SPDX-License-Identifier: BSD-3-Clause */
/* coo.cu: SpMV on COO (row-sorted triplets), two launches.
 *
 * MAPPING  spx_coo_scale: one thread per row, y = beta*y (0 when beta == 0, y not read).
 *          spx_coo_spmv: one thread per nonzero; a warp first sums runs of equal rows with a
 *          segmented shuffle scan, so only the last entry of each run in a warp issues an
 *          atomicAdd (rows are sorted: long rows cost one atomic per warp, not per entry).
 * BYTES    per nonzero: 4 (row) + 4 (col) + sizeof(T) (val) + x gathered; y read-modify-written
 *          per run per warp. Results depend on the atomics' order only through rounding.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_BLOCK.
 * ARGUMENTS  nrows, ncols, nnz, row, col, val, alpha, beta, x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_coo_scale(long long nrows, long long ncols, long long nnz, const int *__restrict__ row,
              const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
              double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  (void)ncols; (void)nnz; (void)row; (void)col; (void)val; (void)alpha; (void)x;
  if (i < nrows) y[i] = beta == 0.0 ? (spx_value_t)0 : (spx_value_t)(beta * y[i]);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_coo_spmv(long long nrows, long long ncols, long long nnz, const int *__restrict__ row,
             const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
             double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const bool live = k < nnz;
  const int r = live ? row[k] : -1;
  spx_value_t v = live ? (spx_value_t)(alpha * (double)(SPX_LDS(val + k) * __ldg(x + SPX_LDS(col + k)))) : (spx_value_t)0;
  (void)nrows; (void)ncols; (void)beta;
  /* Inclusive segmented scan over the warp: add the neighbour's value while it is the same row. */
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const spx_value_t u = __shfl_up_sync(0xffffffffu, v, off);
    const int ru = __shfl_up_sync(0xffffffffu, r, off);
    if (lane >= off && ru == r) v += u;
  }
  const int rn = __shfl_down_sync(0xffffffffu, r, 1);
  if (live && (lane == 31 || rn != r)) atomicAdd(y + r, v);
}
