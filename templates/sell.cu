/* SPDX-License-Identifier: BSD-3-Clause */
/* sell.cu: SpMV on SELL-C-sigma (slices of C rows, column-major inside a slice, rows sorted by
 * length within windows of sigma rows; padding -0.0 with a valid column), and on SELL16 (the same
 * layout with 16-bit column offsets from a per-slice base column).
 *
 * MAPPING  one thread per sorted position p: slice s = p / C, lane p % C; slot j of the row is at
 *          slice_ptr[s] + j*C + lane, so C consecutive threads read C consecutive slots (coalesced
 *          when C >= 32 or C divides the warp). The row is perm[p] (p when sigma = 1). Each slice
 *          is only as wide as its longest row: less padding than ELL on ragged matrices. With
 *          SPX_WMAX (the widest slice) the slot loop is unrolled with a guard that is uniform
 *          across a slice, so every load of the row is in flight at once.
 * BYTES    per slot: 4 (col; SELL16: 2) + sizeof(T) (val) + x gathered; per row: 4 (perm, when
 *          sorted), y written (read when beta != 0); per slice: 4 (slice_ptr; SELL16 + 4 cbase).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_C (slice height; absent: read c at run time), SPX_WMAX (widest slice;
 *            absent: a run-time loop), SPX_SORTED (1 when perm exists), SPX_BLOCK.
 * ARGUMENTS  nrows, ncols, nnz, c, sigma, nslices, nslots, perm, slice_ptr, [cbase,] col, val,
 *            alpha, beta, x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

/* sum over the width slots of the row at lane of the slice starting at slot b; xb is x offset by
 * the slice's base column (SELL16) or x itself. */
#ifdef SPX_WMAX
#define SPX_SELL_ROW(sum, xb, col, val, b, width, C, lane) \
  _Pragma("unroll") for (int j = 0; j < SPX_WMAX; j++) \
    if (j < (width)) { const int q = (b) + j * (C) + (lane); (sum) += SPX_LDS((val) + q) * __ldg((xb) + SPX_LDS((col) + q)); }
#else
#define SPX_SELL_ROW(sum, xb, col, val, b, width, C, lane) \
  _Pragma("unroll 4") for (int j = 0; j < (width); j++) { \
    const int q = (b) + j * (C) + (lane); (sum) += SPX_LDS((val) + q) * __ldg((xb) + SPX_LDS((col) + q)); }
#endif

/* y[row of position p] = alpha*sum + beta*y; beta == 0 does not read y. */
#if defined(SPX_SORTED) && SPX_SORTED == 0
#define SPX_SELL_ROW_OF(p, perm) (p)
#else
#define SPX_SELL_ROW_OF(p, perm) ((perm) ? (long long)(perm)[p] : (p))
#endif
#define SPX_SELL_STORE(p, perm, sum, alpha, beta, y) do { \
    const long long i_ = SPX_SELL_ROW_OF(p, perm); \
    (y)[i_] = (beta) == 0.0 ? (spx_value_t)((alpha) * (sum)) : (spx_value_t)((alpha) * (sum) + (beta) * (y)[i_]); \
  } while (0)

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sell_spmv(long long nrows, long long ncols, long long nnz, int c, int sigma, long long nslices,
              long long nslots, const int *__restrict__ perm, const int *__restrict__ slice_ptr,
              const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
              double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
#ifdef SPX_C
  const int C = SPX_C;
#else
  const int C = c;
#endif
  const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  (void)ncols; (void)nnz; (void)sigma; (void)nslices; (void)nslots;
  if (p >= nrows) return;
  const long long s = p / C;
  const int lane = (int)(p - s * C);
  const int b = slice_ptr[s], width = (slice_ptr[s + 1] - b) / C;
  spx_value_t sum = 0;
  SPX_SELL_ROW(sum, x, col, val, b, width, C, lane);
  SPX_SELL_STORE(p, perm, sum, alpha, beta, y);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sell16_spmv(long long nrows, long long ncols, long long nnz, int c, int sigma, long long nslices,
                long long nslots, const int *__restrict__ perm, const int *__restrict__ slice_ptr,
                const int *__restrict__ cbase, const unsigned short *__restrict__ col,
                const spx_value_t *__restrict__ val, double alpha, double beta,
                const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
#ifdef SPX_C
  const int C = SPX_C;
#else
  const int C = c;
#endif
  const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  (void)ncols; (void)nnz; (void)sigma; (void)nslices; (void)nslots;
  if (p >= nrows) return;
  const long long s = p / C;
  const int lane = (int)(p - s * C);
  const int b = slice_ptr[s], width = (slice_ptr[s + 1] - b) / C;
  const spx_value_t *xb = x + cbase[s];
  spx_value_t sum = 0;
  SPX_SELL_ROW(sum, xb, col, val, b, width, C, lane);
  SPX_SELL_STORE(p, perm, sum, alpha, beta, y);
}
