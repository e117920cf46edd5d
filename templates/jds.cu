/* SPDX-License-Identifier: BSD-3-Clause */
/* jds.cu: SpMV on JDS (rows sorted by decreasing length; jagged diagonal d holds entry d of every
 * sorted position p < its length, at jd_ptr[d] + p; no padding).
 *
 * MAPPING  one thread per sorted position p (papers/001 Figure 4): thread p walks the diagonals
 *          d = 0, 1, ... while p is shorter than diagonal d, reading slot jd_ptr[d] + p, so a warp
 *          reads 32 consecutive slots per diagonal (coalesced), and since rows are sorted by
 *          length the threads of a warp have nearly equal trip counts (little divergence). With
 *          SPX_NJD defined the diagonal loop is fully unrolled and the diagonal starts jd_ptr[]
 *          (read by every thread: broadcast) are independent loads the compiler hoists; without it
 *          the loop takes four diagonals per step with independent loads (long rows of a skewed
 *          matrix are one thread's work: JDS has no remedy for that, but the loads overlap).
 * BYTES    per nonzero: 4 (col) + sizeof(T) (val) + x gathered (cached); per row: 4 (perm), y
 *          written (read too when beta != 0) at perm[p]; per diagonal: 4 (jd_ptr, broadcast).
 *
 * CONSTANTS  SPX_VALUE_T (double|float), SPX_NJD (a bucket >= the number of jagged diagonals =
 *            the longest row; absent: njd read at run time), SPX_BLOCK (launch bound).
 * ARGUMENTS  nrows, ncols, nnz, njd, perm, jd_ptr, col, val, alpha, beta, x, y.
 *            (jd_ptr is 32-bit, so every slot index fits in int.) */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_jds_spmv(long long nrows, long long ncols, long long nnz, int njd, const int *__restrict__ perm,
             const int *__restrict__ jd_ptr, const int *__restrict__ col,
             const spx_value_t *__restrict__ val, double alpha, double beta,
             const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  spx_value_t sum = 0;
  (void)ncols; (void)nnz; (void)njd;
  if (p >= nrows) return;
  const int q = (int)p;
#ifdef SPX_NJD
#pragma unroll
  for (int d = 0; d < SPX_NJD; d++) { /* SPX_NJD: a bucket >= njd */
    if (d >= njd) break;
    const int b = __ldg(jd_ptr + d), e = __ldg(jd_ptr + d + 1);
    if (q >= e - b) break; /* diagonals only get shorter */
    sum += SPX_LDS(val + b + q) * __ldg(x + SPX_LDS(col + b + q));
  }
#else
  /* Four diagonals per step, their loads independent (a long row is not a chain of latencies). */
  for (int d = 0; d < njd; d += 4) {
    int b[5];
    bool on[4];
#pragma unroll
    for (int u = 0; u <= 4; u++) b[u] = d + u <= njd ? __ldg(jd_ptr + d + u) : 0;
#pragma unroll
    for (int u = 0; u < 4; u++) on[u] = d + u < njd && q < b[u + 1] - b[u];
#pragma unroll
    for (int u = 0; u < 4; u++)
      if (on[u]) sum += SPX_LDS(val + b[u] + q) * __ldg(x + SPX_LDS(col + b[u] + q));
    if (!on[3]) break;
  }
#endif
  const int i = perm[q];
  y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}
