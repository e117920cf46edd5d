/* SPDX-License-Identifier: BSD-3-Clause */
/* bsr.cu: SpMV on BSR (r x c blocks; block b's entry (ii, jj) at val[(b*r + ii)*c + jj], row-major;
 * padding -0.0, also past the matrix edge in the last block row and block column).
 *
 * MAPPING  a group of R*W lanes per block row: lane q of the group takes row-in-block ii = q % R
 *          and block lane j = q / R, and walks the block row's blocks b = first + j, + W, ...,
 *          multiplying its block row (C values, fully unrolled with SPX_C) by x[col[b]*C ..].
 *          For one block the R lanes of ii = 0..R-1 read R consecutive rows of C values, so the W
 *          blocks a group reads per step are one contiguous run of W*R*C values: every sector
 *          fetched is used (the C unrolled loads of a lane hit the same sectors, from L1), x is a
 *          run of C values shared by the R lanes, col one load per block. The W lanes of each ii
 *          then add up with shuffles (stride R) and lane j = 0 writes y[I*R + ii]. W (a power of
 *          two with R*W <= 32, from the mean blocks per block row) puts 32/(R*W) block rows in a
 *          warp; W = 1 is one thread per row (no shuffles). Only the last block column checks
 *          the column edge; rows past the edge are computed on padding and not written.
 * BYTES    per block: R*C*sizeof(T) (val) + 4 (col) + C x values (cached); per block row: 4
 *          (row_ptr); per row: y written (read when beta != 0).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_R and SPX_C (block size; absent: r and c read at run time),
 *            SPX_W (block lanes per block row, a power of two, R*W <= 32; default 1),
 *            SPX_SLOT_T (int, or long long when nblocks*r*c >= 2^31), SPX_BLOCK (launch bound).
 * ARGUMENTS  nrows, ncols, nnz, r, c, nbrows, nbcols, nblocks, row_ptr, col, val, alpha, beta,
 *            x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_W
#define SPX_W 1
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
spx_bsr_spmv(long long nrows, long long ncols, long long nnz, int r, int c, long long nbrows,
             long long nbcols, long long nblocks, const int *__restrict__ row_ptr,
             const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
             double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
#ifdef SPX_R
  const int R = SPX_R;
#else
  const int R = r;
#endif
#ifdef SPX_C
  const int C = SPX_C;
#else
  const int C = c;
#endif
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long I;
  int ii, j;
  bool idle;
  (void)nnz; (void)nbcols; (void)nblocks;
#if SPX_W == 1
  I = tid / R;
  ii = (int)(tid - I * R);
  j = 0;
  if (I >= nbrows) return;
  idle = false;
#else
  {
    const int G = R * SPX_W, gpw = 32 / G, lane = (int)(tid & 31), slot = lane / G, q = lane - slot * G;
    I = (tid >> 5) * gpw + slot;
    ii = q % R;
    j = q / R;
    idle = slot >= gpw || I >= nbrows; /* stays for the shuffles below */
  }
#endif
  spx_value_t sum = 0;
  if (!idle) {
    const int end = row_ptr[I + 1];
    for (int b = row_ptr[I] + j; b < end; b += SPX_W) {
      const long long cb = (long long)SPX_LDS(col + b) * C;
      const spx_value_t *a = val + ((SPX_SLOT_T)b * R + ii) * C;
      if (cb + C <= ncols) {
#pragma unroll
        for (int jj = 0; jj < C; jj++) sum += SPX_LDS(a + jj) * __ldg(x + cb + jj);
      } else { /* the last block column, cut by the matrix edge */
        for (int jj = 0; jj < C && cb + jj < ncols; jj++) sum += SPX_LDS(a + jj) * __ldg(x + cb + jj);
      }
    }
  }
#if SPX_W > 1
#pragma unroll
  for (int off = SPX_W / 2; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off * R);
#endif
  const long long i = I * R + ii;
  if (!idle && j == 0 && i < nrows)
    y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}
