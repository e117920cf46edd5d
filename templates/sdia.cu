/* sdia.cu: SpMV on SDIA (sliced diagonals: slice s of C rows owns diagonals slice_ptr[s] ..
 * slice_ptr[s+1]-1 with offsets off[d] = column - row; row s*C + l's value on diagonal d at
 * val[d*C + l]; slots that are not entries hold -0.0).
 *
 * MAPPING  one thread per row, C consecutive threads per slice: for each diagonal of the slice the
 *          C lanes read C consecutive values (coalesced) and x at C consecutive columns (row +
 *          offset: coalesced too, mostly L1/L2 hits shared with the neighbouring diagonals). The
 *          offset is the same for the whole slice (one broadcast load). A column outside the
 *          matrix (a padded slot at the matrix edge) is skipped. With SPX_WMAX (the widest slice)
 *          the diagonal loop is unrolled with a guard uniform across a slice.
 * BYTES    per slot: sizeof(T) (val); per diagonal of a slice: 4 (off); per slice: 4 (slice_ptr);
 *          x read about once (neighbouring diagonals hit cache), y written (read when beta != 0).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_C (slice height; absent: read c at run time), SPX_WMAX (widest slice;
 *            absent: a run-time loop), SPX_SLOT_T (int, or long long past 2^31 slots), SPX_BLOCK.
 * ARGUMENTS  nrows, ncols, nnz, c, nslices, ndiags, slice_ptr, off, val, alpha, beta, x, y. */
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

#define SPX_SDIA_SLOT(d)                                                            \
  {                                                                                 \
    const long long j = i + __ldg(off + b + (d));                                   \
    const spx_value_t v = SPX_LDS(val + (SPX_SLOT_T)(b + (d)) * C + lane);          \
    if ((unsigned long long)j < (unsigned long long)ncols) sum += v * __ldg(x + j); \
  }

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sdia_spmv(long long nrows, long long ncols, long long nnz, int c, long long nslices, long long ndiags,
              const int *__restrict__ slice_ptr, const int *__restrict__ off, const spx_value_t *__restrict__ val,
              double alpha, double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
#ifdef SPX_C
  const int C = SPX_C;
#else
  const int C = c;
#endif
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  (void)nnz; (void)nslices; (void)ndiags;
  if (i >= nrows) return;
  const long long s = i / C;
  const int lane = (int)(i - s * C);
  const int b = slice_ptr[s], w = slice_ptr[s + 1] - b;
  spx_value_t sum = 0;
#ifdef SPX_WMAX
#pragma unroll
  for (int d = 0; d < SPX_WMAX; d++)
    if (d < w) SPX_SDIA_SLOT(d)
#else
#pragma unroll 4
  for (int d = 0; d < w; d++) SPX_SDIA_SLOT(d)
#endif
  y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}
