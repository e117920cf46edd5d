/* sell.cu: SpMV on SELL-C-sigma (slices of C rows, column-major inside a slice, rows sorted by
 * length within windows of sigma rows; padding -0.0 with a valid column).
 *
 * MAPPING  one thread per sorted position p: slice s = p / C, lane p % C; slot j of the row is at
 *          slice_ptr[s] + j*C + lane, so C consecutive threads read C consecutive slots (coalesced
 *          when C >= 32 or C divides the warp). The row is perm[p] (p when sigma = 1). Each slice
 *          is only as wide as its longest row: less padding than ELL on ragged matrices.
 * BYTES    per slot: 4 (col) + sizeof(T) (val) + x gathered; per row: 4 (perm, when sorted),
 *          y written (read when beta != 0); per slice: 4 (slice_ptr).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_C (slice height; absent: read c at run time), SPX_SORTED (1 when
 *            perm exists), SPX_BLOCK.
 * ARGUMENTS  nrows, ncols, nnz, c, sigma, nslices, nslots, perm, slice_ptr, col, val, alpha,
 *            beta, x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;

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
#pragma unroll 4
  for (int j = 0; j < width; j++) {
    const int q = b + j * C + lane;
    sum += val[q] * __ldg(x + col[q]);
  }
#if defined(SPX_SORTED) && SPX_SORTED == 0
  const long long i = p;
#else
  const long long i = perm ? perm[p] : p;
#endif
  y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}
