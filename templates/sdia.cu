/* SPDX-License-Identifier: BSD-3-Clause */
/* sdia.cu: SpMV on SDIA (sliced diagonals: slice s of C rows owns diagonals slice_ptr[s] ..
 * slice_ptr[s+1]-1 with offsets off[d] = column - row; row s*C + l's value on diagonal d at
 * val[d*C + l]; slots that are not entries hold -0.0).
 *
 * MAPPING  one thread per row, C consecutive threads per slice: for each diagonal of the slice the
 *          C lanes read C consecutive values (coalesced) and x at C consecutive columns (row +
 *          offset: coalesced too, mostly L1/L2 hits shared with the neighbouring diagonals). The
 *          offset is the same for the whole slice (one broadcast load). A column outside the
 *          matrix (a padded slot at the matrix edge) adds nothing. With SPX_WMAX (the widest
 *          slice) the diagonal loop is unrolled; without, it runs in unrolled groups of 8. Slots
 *          past a slice's width re-read its last slot instead of skipping loads (see below).
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

typedef SPX_SLOT_T spx_slot_t;

/* Slot d of the thread's row, for d below the slice's width w (> 0). A guarded slot (d may reach
 * past w) reads slot w-1 again (an L1 hit) and adds nothing: without guards that skip loads the
 * compiler issues every load of the unrolled loop before the first multiply. (A guard around the
 * dependent off -> x loads made it issue them one diagonal at a time: 17 registers, half the DRAM
 * bandwidth on 3-D Poisson; H100, Poisson 7-pt float 37.2 -> 27.1 us.) A column outside the
 * matrix (padding at the matrix edge) reads x[0] and adds nothing. */
#define SPX_SDIA_SLOT(d, guard)                                                          \
  {                                                                                      \
    const int dd_ = (guard) && (d) >= w ? w - 1 : (d);                                   \
    const spx_slot_t j_ = i + __ldg(off + b + dd_);                                      \
    const bool in_ = (!(guard) || (d) < w) && (unsigned long long)(long long)j_ < (unsigned long long)ncols; \
    const spx_value_t v_ = SPX_LDS(val + (spx_slot_t)(b + dd_) * C + lane);              \
    const spx_value_t x_ = __ldg(x + (in_ ? j_ : 0));                                    \
    sum += in_ ? v_ * x_ : (spx_value_t)0;                                               \
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
  (void)nnz; (void)nslices; (void)ndiags;
  const spx_slot_t i = (spx_slot_t)blockIdx.x * SPX_BLOCK + threadIdx.x;
  if (i >= nrows) return;
  const spx_slot_t s = i / C;
  const int lane = (int)(i - s * C);
  const int b = slice_ptr[s], w = slice_ptr[s + 1] - b;
  spx_value_t sum = 0;
  if (w > 0) { /* uniform across a slice */
#ifdef SPX_WMAX
#pragma unroll
    for (int d = 0; d < SPX_WMAX; d++) SPX_SDIA_SLOT(d, d > 0)
#else
    /* whole groups of 8 unguarded, then one guarded group for the rest */
    int d0 = 0;
    for (; d0 + 8 <= w; d0 += 8) {
#pragma unroll
      for (int d = 0; d < 8; d++) SPX_SDIA_SLOT(d0 + d, 0)
    }
    if (d0 < w) {
#pragma unroll
      for (int d = 0; d < 8; d++) SPX_SDIA_SLOT(d0 + d, d > 0)
    }
#endif
  }
  y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}
