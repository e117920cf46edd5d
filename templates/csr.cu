/* SPDX-License-Identifier: BSD-3-Clause */
/* csr.cu: SpMV on CSR (32-bit row pointers), "vector" kernel with SPX_TPR threads per row.
 *
 * MAPPING  SPX_TPR consecutive threads (1, 2, 4, 8, 16 or 32; a power of two dividing the warp)
 *          share a row: lane l reads entries ptr[i]+l, +TPR, ... (coalesced for TPR >= 8), then
 *          the lanes reduce with warp shuffles. TPR is picked from the mean row length, so short
 *          rows do not leave 31 of 32 lanes idle and long rows are read with whole warps.
 * BYTES    per nonzero: 4 (col) + sizeof(T) (val) + x gathered; per row: 4 (ptr), y written
 *          (read too when beta != 0).
 *
 * SPLIT    with SPX_SPLIT=S (small matrices with a few very long rows, where one launch of ~4 us is
 *          the whole SpMV and its time is that of the longest row): a row longer than S steps of its
 *          TPR lanes is left by its group and summed afterwards by the whole block (SPX_BLOCK lanes,
 *          a fixed reduction order: deterministic), so the longest row costs len/SPX_BLOCK steps
 *          instead of len/TPR. The launch must then use exactly SPX_BLOCK threads.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_TPR (threads per row; absent: 1), SPX_BLOCK (launch bound), SPX_SPLIT.
 * ARGUMENTS  nrows, ncols, nnz, ptr, col, val, alpha, beta, x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_TPR
#define SPX_TPR 1
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_csr_spmv(long long nrows, long long ncols, long long nnz, const int *__restrict__ ptr,
             const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
             double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long i = t / SPX_TPR;
  const int lane = (int)(t % SPX_TPR);
  spx_value_t sum = 0;
  int mine = i < nrows; /* this group writes y[i] */
  (void)ncols; (void)nnz;
#ifdef SPX_SPLIT
  __shared__ int nlong;
  __shared__ long long longrow[SPX_BLOCK / SPX_TPR];
  __shared__ spx_value_t wsum[SPX_BLOCK / 32];
  if (threadIdx.x == 0) nlong = 0;
  __syncthreads();
#endif
  if (mine) {
    const int beg = ptr[i], end = ptr[i + 1];
#ifdef SPX_SPLIT
    if (end - beg > SPX_SPLIT * SPX_TPR) { /* left to the whole block below */
      mine = 0;
      if (lane == 0) longrow[atomicAdd(&nlong, 1)] = i;
    } else
#endif
    for (int k = beg + lane; k < end; k += SPX_TPR) sum += SPX_LDS(val + k) * __ldg(x + SPX_LDS(col + k));
  }
  /* Every lane takes part in the shuffles (no early return above): the mask is the full warp. */
#if SPX_TPR > 1
#pragma unroll
  for (int off = SPX_TPR / 2; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off, SPX_TPR);
#endif
  if (mine && lane == 0)
    y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
#ifdef SPX_SPLIT
  __syncthreads(); /* nlong and longrow complete */
  /* The order rows were appended in varies, but each row's sum has one fixed order. */
  for (int r = 0; r < nlong; r++) {
    const long long row = longrow[r];
    const int end = ptr[row + 1];
    spx_value_t s = 0;
    for (int k = ptr[row] + (int)threadIdx.x; k < end; k += SPX_BLOCK) s += SPX_LDS(val + k) * __ldg(x + SPX_LDS(col + k));
#pragma unroll
    for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0) wsum[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      s = 0;
      for (int w = 0; w < SPX_BLOCK / 32; w++) s += wsum[w];
      y[row] = beta == 0.0 ? (spx_value_t)(alpha * s) : (spx_value_t)(alpha * s + beta * y[row]);
    }
    __syncthreads(); /* wsum is reused by the next row */
  }
#endif
}

/* spx_csr_stream_spmv: CSR-stream (Greathouse and Daga, SC'14, their "CSR-Stream" case) for short,
 * irregular rows, where one thread per row reads val and col scattered and a warp per row idles.
 *
 * MAPPING  block b owns rows [b*SPX_BLOCK, (b+1)*SPX_BLOCK), one row per thread for the sums. The
 *          block's nonzeros are contiguous in CSR; it walks them in chunks of SPX_BLOCK*SPX_NPT:
 *          thread t computes the products val[q]*x[col[q]] of q = chunk + t + k*SPX_BLOCK
 *          (coalesced loads, SPX_NPT independent ones in flight per thread) into shared memory,
 *          then each thread adds the products of its own row that fall in the chunk. Rows up to
 *          a few hundred long cost a few chunks; a piece of a row much longer than the rest of its
 *          warp's is added by the whole warp (below), so one long row does not hold its block up.
 * BYTES    per nonzero: 4 (col) + sizeof(T) (val) + x gathered; per row: 4 (ptr), y written (read
 *          when beta != 0). Shared: SPX_BLOCK*SPX_NPT*sizeof(T) + 4*(SPX_BLOCK+1).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_BLOCK (the launch must use exactly this many threads), SPX_NPT
 *            (nonzeros per thread per chunk; absent: 2048 / SPX_BLOCK), SPX_STREAM_LONG. */
#ifndef SPX_STREAM_LONG
/* A piece of a row (in one chunk) longer than this is a candidate for its warp's joint sum. */
#define SPX_STREAM_LONG 128
#endif
#ifndef SPX_NPT
/* 2048 products per chunk whatever the block: a fixed 8 put 64 KiB of static shared memory in every
 * module of this file at 1024 threads (double), and ptxas refused the vector kernel's module too */
#define SPX_NPT (2048 / SPX_BLOCK)
#endif

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_csr_stream_spmv(long long nrows, long long ncols, long long nnz, const int *__restrict__ ptr,
                    const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
                    double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  __shared__ spx_value_t prod[SPX_BLOCK * SPX_NPT];
  __shared__ int sptr[SPX_BLOCK + 1];
  const long long r0 = (long long)blockIdx.x * SPX_BLOCK;
  const int nr = (int)(nrows - r0 < SPX_BLOCK ? nrows - r0 : SPX_BLOCK);
  const int t = threadIdx.x;
  (void)ncols; (void)nnz;
  for (int i = t; i <= nr; i += SPX_BLOCK) sptr[i] = ptr[r0 + i];
  __syncthreads();
  const int b0 = sptr[0], b1 = sptr[nr];
  const int mb = t < nr ? sptr[t] : b1, me = t < nr ? sptr[t + 1] : b1;
  spx_value_t sum = 0;
  for (int c0 = b0; c0 < b1; c0 += SPX_BLOCK * SPX_NPT) {
    const int c1 = b1 - c0 < SPX_BLOCK * SPX_NPT ? b1 : c0 + SPX_BLOCK * SPX_NPT;
#pragma unroll
    for (int k = 0; k < SPX_NPT; k++) {
      const int q = c0 + t + k * SPX_BLOCK;
      if (q < c1) prod[q - c0] = SPX_LDS(val + q) * __ldg(x + SPX_LDS(col + q));
    }
    __syncthreads();
    const int lo = mb > c0 ? mb : c0, hi = me < c1 ? me : c1;
#if SPX_BLOCK % 32 == 0
    /* A warp whose longest piece of a row in this chunk would keep one thread adding far longer
     * than the warp's 32 lanes take to add its long pieces together (a strided sum each, then a
     * butterfly: a fixed order) adds those together: one long row in a block of short ones costs
     * len/32 steps, not len/4 (the block waited on it). Many long pieces in a warp stay serial. */
    const unsigned longs = __ballot_sync(0xffffffffu, hi - lo > SPX_STREAM_LONG);
    int coop = 0;
    if (longs) {
      int most = hi - lo;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const int w = __shfl_xor_sync(0xffffffffu, most, o);
        most = w > most ? w : most;
      }
      coop = __popc(longs) * (most / 32 + 8) < most / 4;
    }
    if (!(coop && hi - lo > SPX_STREAM_LONG))
#endif
    {
      /* Four independent sums: a long row's thread keeps four shared-memory loads in flight
       * instead of waiting out each one's latency. */
      spx_value_t s1 = 0, s2 = 0, s3 = 0;
      int q = lo;
      for (; q + 4 <= hi; q += 4) {
        sum += prod[q - c0];
        s1 += prod[q + 1 - c0];
        s2 += prod[q + 2 - c0];
        s3 += prod[q + 3 - c0];
      }
      for (; q < hi; q++) sum += prod[q - c0];
      sum += (s1 + s2) + s3;
    }
#if SPX_BLOCK % 32 == 0
    if (coop) { /* coop is the warp's: every lane is here */
      const int lane = t & 31;
      unsigned m = longs;
      while (m) {
        const int j = __ffs(m) - 1;
        const int jlo = __shfl_sync(0xffffffffu, lo, j), jhi = __shfl_sync(0xffffffffu, hi, j);
        spx_value_t part = 0;
        m &= m - 1;
        for (int q = jlo + lane; q < jhi; q += 32) part += prod[q - c0];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
        if (lane == j) sum += part;
      }
    }
#endif
    __syncthreads(); /* the next chunk overwrites prod */
  }
  if (t < nr) {
    const long long i = r0 + t;
    y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
  }
}
