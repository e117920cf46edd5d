/* SPDX-License-Identifier: BSD-3-Clause */
/* ss.cu: SpMV on SS, segmented scan with a per-element index (papers/001 section 3.4, Oshima et
 * al.). The nonzeros in row order are cut into segments of seg slots; idx[k] is k's offset from
 * the start of its row or of its segment, whichever is later, so idx == 0 marks the head of a run
 * (a row piece inside one segment); run r adds to row run_row[r]; seg_run[s] is segment s's first
 * run. Two launches.
 *
 * MAPPING  spx_ss_scale: one thread per row, y = beta*y (0 when beta == 0, y not read).
 *          spx_ss_spmv: one block per tile of max(seg, SPX_BLOCK*SPX_VPT) slots (one segment, or
 *          several whole segments), walked in chunks of SPX_BLOCK*SPX_VPT slots. Thread t of a
 *          chunk takes SPX_VPT consecutive slots with 16-byte vector loads (col, idx, val: a warp
 *          reads one contiguous range), forms the products, and sums its run pieces in registers.
 *          Instead of the paper's halving loop (log2(seg) __syncthreads per segment), one block-
 *          wide scan per chunk (warp shuffles, then the warps' totals in shared memory) gives each
 *          thread the open run's partial sum from the threads before it (a segmented scan keyed by
 *          the heads) and the number of heads before it; a long segment carries both from chunk
 *          to chunk. The last slot of each run (the next slot is a head or starts a segment) then
 *          knows the run's sum and index (the tile's first run seg_run[..] + heads so far) and adds
 *          alpha*sum to y[run_row[run]]: a plain read-modify-write when the run lies strictly
 *          inside its segment (then it is its row's only run), an atomicAdd when it touches a
 *          segment boundary (its row may have runs in the neighbouring segments).
 * BYTES    per slot: 4 (col) + sizeof(T) (val) + 4 (idx) + x gathered; per run: 4 (run_row) and a
 *          y read-modify-write; per tile: 4 (seg_run). The scale pass reads (beta != 0) and writes
 *          y once.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_SEG (segment length, a power of two; absent: seg read at run time),
 *            SPX_BLOCK (threads per block, a power of two >= 32; the launch must use exactly this
 *            many), SPX_VPT (slots per thread, a power of two >= 4; default 8).
 * ARGUMENTS  nrows, ncols, nnz, seg, nseg, nruns, col, val, idx, run_row, seg_run, alpha, beta,
 *            x, y. (The converter keeps nseg*seg and nruns below 2^31.) */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
#ifndef SPX_VPT
#define SPX_VPT 8
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

#define SPX_SS_WARPS (SPX_BLOCK / 32)
#define SPX_SS_CHUNK (SPX_BLOCK * SPX_VPT)

/* Four consecutive elements, 16-byte aligned. */
__device__ __forceinline__ void spx_ss_load4(const int *p, int *o) {
  const int4 a = *(const int4 *)p;
  o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
}
__device__ __forceinline__ void spx_ss_load4(const float *p, float *o) {
  const float4 a = *(const float4 *)p;
  o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
}
__device__ __forceinline__ void spx_ss_load4(const double *p, double *o) {
  const double2 a = *(const double2 *)p, b = *(const double2 *)(p + 2);
  o[0] = a.x; o[1] = a.y; o[2] = b.x; o[3] = b.y;
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_ss_scale(long long nrows, long long ncols, long long nnz, int seg, long long nseg, long long nruns,
             const int *__restrict__ col, const spx_value_t *__restrict__ val, const int *__restrict__ idx,
             const int *__restrict__ run_row, const int *__restrict__ seg_run, double alpha, double beta,
             const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  (void)ncols; (void)nnz; (void)seg; (void)nseg; (void)nruns; (void)col; (void)val; (void)idx;
  (void)run_row; (void)seg_run; (void)alpha; (void)x;
  if (i < nrows) y[i] = beta == 0.0 ? (spx_value_t)0 : (spx_value_t)(beta * y[i]);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_ss_spmv(long long nrows, long long ncols, long long nnz, int seg, long long nseg, long long nruns,
            const int *__restrict__ col, const spx_value_t *__restrict__ val, const int *__restrict__ idx,
            const int *__restrict__ run_row, const int *__restrict__ seg_run, double alpha, double beta,
            const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
#ifdef SPX_SEG
  const long long L = SPX_SEG;
#else
  const long long L = seg;
#endif
  __shared__ spx_value_t s_tail[SPX_SS_WARPS]; /* the run open at the warp's end: its sum so far */
  __shared__ int s_heads[SPX_SS_WARPS];        /* heads in the warp */
  const long long nslots = nseg * L;
  const long long tile = L > SPX_SS_CHUNK ? L : SPX_SS_CHUNK;
  const long long t0 = (long long)blockIdx.x * tile;
  const long long tend = t0 + tile < nslots ? t0 + tile : nslots;
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  (void)nrows; (void)ncols; (void)nnz; (void)nruns; (void)beta;
  if (t0 >= nslots) return; /* whole block: an empty matrix still gets a grid of one */
  const int run0 = seg_run[t0 / L];
  spx_value_t carry = 0; /* the run open at the end of the previous chunk */
  int heads = 0;         /* heads in the tile before this chunk */
  for (long long c0 = t0; c0 < tend; c0 += SPX_SS_CHUNK) {
    const long long k0 = c0 + (long long)t * SPX_VPT;
    int ci[SPX_VPT], ix[SPX_VPT];
    spx_value_t p[SPX_VPT];
    if (k0 + SPX_VPT <= tend) {
#pragma unroll
      for (int u = 0; u < SPX_VPT; u += 4) {
        spx_ss_load4(col + k0 + u, ci + u);
        spx_ss_load4(idx + k0 + u, ix + u);
        spx_ss_load4(val + k0 + u, p + u);
      }
#pragma unroll
      for (int u = 0; u < SPX_VPT; u++) p[u] *= __ldg(x + ci[u]);
    } else {
#pragma unroll
      for (int u = 0; u < SPX_VPT; u++) {
        const bool live = k0 + u < tend;
        ix[u] = live ? idx[k0 + u] : 1; /* dead slots: not heads, no value */
        p[u] = live ? SPX_LDS(val + k0 + u) * __ldg(x + SPX_LDS(col + k0 + u)) : (spx_value_t)0;
      }
    }
    /* This thread's heads and the sum since its last head (all of it when it has none). */
    int cnt = 0;
    spx_value_t tail = 0;
#pragma unroll
    for (int u = 0; u < SPX_VPT; u++) {
      if (ix[u] == 0) { cnt++; tail = 0; }
      tail += p[u];
    }
    /* Inclusive warp scan: head counts added, tails segmented (a thread with a head restarts). */
    int ic = cnt;
    spx_value_t iv = tail;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const int cu = __shfl_up_sync(0xffffffffu, ic, off);
      const spx_value_t vu = __shfl_up_sync(0xffffffffu, iv, off);
      if (lane >= off) {
        if (ic == 0) iv += vu; /* no head in this lane's window: the run from the left goes on */
        ic += cu;
      }
    }
    if (lane == 31) { s_tail[w] = iv; s_heads[w] = ic; }
    /* Exclusive within the warp. */
    int ec = __shfl_up_sync(0xffffffffu, ic, 1);
    spx_value_t ev = __shfl_up_sync(0xffffffffu, iv, 1);
    if (lane == 0) { ec = 0; ev = 0; }
    /* Whether the next thread's first slot is a head (lane 31 reads it). */
    int nh = __shfl_down_sync(0xffffffffu, ix[0], 1) == 0;
    if (lane == 31) nh = k0 + SPX_VPT < tend && idx[k0 + SPX_VPT] == 0;
    __syncthreads();
    /* The warps before this one, and (in every thread alike) the whole chunk. */
    spx_value_t in = 0, open = 0;
    int before = 0, all = 0;
    bool closed = false, any = false;
#pragma unroll
    for (int u = SPX_SS_WARPS - 1; u >= 0; u--) {
      const int hu = s_heads[u];
      if (u < w) {
        if (!closed) in += s_tail[u];
        closed |= hu != 0;
        before += hu;
      }
      if (!any) open += s_tail[u];
      any |= hu != 0;
      all += hu;
    }
    if (!closed) in += carry;
    if (ec == 0) ev += in; /* no head before this thread in the warp: the open run goes on */
    /* Walk the slots again: close each run at its last slot. */
    spx_value_t run = ev;
    int h = heads + before + ec;
#pragma unroll
    for (int u = 0; u < SPX_VPT; u++) {
      const long long k = k0 + u;
      if (ix[u] == 0) { run = 0; h++; }
      run += p[u];
      const bool lastseg = ((k + 1) & (L - 1)) == 0;
      const bool end = lastseg || (u + 1 < SPX_VPT ? ix[u + 1] == 0 : nh != 0);
      if (end && k < tend) {
        const int row = run_row[run0 + h - 1];
        const spx_value_t add = (spx_value_t)(alpha * run);
        if (lastseg || ((k - ix[u]) & (L - 1)) == 0) atomicAdd(y + row, add);
        else y[row] = y[row] + add;
      }
    }
    carry = any ? open : carry + open;
    heads += all;
    if (c0 + SPX_SS_CHUNK < tend) __syncthreads(); /* s_tail and s_heads are rewritten */
  }
}
