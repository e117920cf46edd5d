/* SPDX-License-Identifier: BSD-3-Clause */
/* analyze.cu: the auto-tuner's row profile of a CSR on the device, and the CSR's validation, so
 * that choosing a format costs microseconds instead of host passes over row_ptr and col_idx (on a
 * 20M-nonzero matrix the host passes cost 5-50 ms, tens to hundreds of SpMVs). The CSR is the
 * host's layout (64-bit row_ptr, 32-bit col_idx), uploaded once; the plan reuses the upload for
 * cuSPARSE and for the device conversions.
 *
 * spx_analyze_rows  one thread per row, warps of 32 consecutive rows (the host model's warp),
 *                   grid-stride: checks the row (row_ptr in order and within nnz, columns strictly
 *                   increasing and inside [0, ncols)), and reduces per warp, per block, then with
 *                   one atomic per block (per-warp atomics on nine words serialized in L2 and
 *                   took most of the 0.3 ms this kernel cost on 2M rows). out[] starts all zero:
 *                     out[0] ~(first bad row) (0 when none)     out[1] longest row (max)
 *                     out[2] ~(shortest row)                    out[3] empty rows
 *                     out[4] SS pieces (segments of 256 slots each row touches)
 *                     out[5] rows i with len(i+1) == len(i)     out[6] sum of len^2
 *                     out[7] idle lane-slots, one thread per row, lock-step warps
 *                     out[8] the same with tpr lanes per row (groups of 32/tpr rows)
 *                     out[9 + len] rows of length len, for len < SPX_HIST_SHARED (per block in
 *                     shared memory first)
 *                   and writes row_ptr as 32-bit (rp32, when not NULL: what cuSPARSE's 32-bit
 *                   CSR takes) on the way.
 * spx_analyze_hist  the histogram's tail (lengths from SPX_HIST_SHARED on), only when rows are that
 *                   long.
 * spx_analyze_diag  the diagonal a_ii (0 where absent) of the validated CSR with its values, for
 *                   Jacobi: one thread per row, scanning its sorted columns up to i.
 * spx_analyze_widen a CSR that lives on the device already (32-bit row pointers, the caller's:
 *                   spx_plan_create_device): its row pointers written as the 64-bit ones the
 *                   rows kernel and the converters read, one thread per pointer, grid-stride;
 *                   row_ptr[0] != 0 marks row 0 bad, row_ptr[n] != nnz the last row (out[0] as
 *                   spx_analyze_rows keeps it, which runs after). 12 bytes per row.
 *
 * CONSTANTS  SPX_BLOCK (threads per block, a multiple of 32), SPX_HIST_SHARED (shared bins).
 * Integer results only (sums of integers), so they do not depend on the launch shape. */
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
#ifndef SPX_HIST_SHARED
#define SPX_HIST_SHARED 2048
#endif

typedef unsigned long long spx_u64;

/* Reduction over aligned groups of g lanes (g a power of two <= 32): every lane gets its group's. */
__device__ __forceinline__ spx_u64 spx_group_max(spx_u64 v, int g) {
  for (int o = 1; o < g; o <<= 1) { const spx_u64 w = __shfl_xor_sync(0xffffffffu, v, o); v = w > v ? w : v; }
  return v;
}
__device__ __forceinline__ spx_u64 spx_group_sum(spx_u64 v, int g) {
  for (int o = 1; o < g; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ spx_u64 spx_group_min(spx_u64 v, int g) {
  for (int o = 1; o < g; o <<= 1) { const spx_u64 w = __shfl_xor_sync(0xffffffffu, v, o); v = w < v ? w : v; }
  return v;
}

/* Idle lane-slots of the groups of g = 32/tpr consecutive rows this lane's row belongs to, summed
 * over the warp (lane 0's value; the other lanes' are partial): steps = the group's longest row in
 * units of tpr, idle = steps * tpr * (rows of the group) - the group's nonzeros. */
__device__ __forceinline__ spx_u64 spx_idle(spx_u64 len, int valid, int tpr) {
  const int g = 32 / tpr;
  const spx_u64 steps = spx_group_max(valid ? (len + tpr - 1) / tpr : 0, g);
  const spx_u64 rows = spx_group_sum((spx_u64)valid, g), sum = spx_group_sum(valid ? len : 0, g);
  const int lane = threadIdx.x & 31;
  spx_u64 idle = (lane & (g - 1)) == 0 ? steps * (spx_u64)tpr * rows - sum : 0;
  return spx_group_sum(idle, 32);
}

/* Warp-aggregated add of 1 to h[key] by the calling lanes (lanes with equal keys add once, by
 * their lowest lane): rows of equal length, the common case, would serialize on one shared word. */
__device__ __forceinline__ void spx_hist_add(unsigned int *h, unsigned int key) {
  const unsigned int same = __match_any_sync(__activemask(), key);
  if ((int)(threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&h[key], (unsigned int)__popc(same));
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_analyze_rows(long long n, long long ncols, long long nnz, const long long *__restrict__ rp,
                 const int *__restrict__ ci, int *__restrict__ rp32, int tpr, spx_u64 *__restrict__ out) {
  __shared__ unsigned int h[SPX_HIST_SHARED];
  __shared__ spx_u64 red[SPX_BLOCK / 32][9];
  spx_u64 acc[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}; /* this warp's, in lane 0 */
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = threadIdx.x; k < SPX_HIST_SHARED; k += SPX_BLOCK) h[k] = 0;
  __syncthreads();
  /* Grid-stride over tiles of SPX_BLOCK rows (the loop bound is the block's, so every lane of a
   * warp takes part in the shuffles): one atomic per counter per block, not per warp. */
  for (long long base = (long long)blockIdx.x * SPX_BLOCK; base < n; base += (long long)gridDim.x * SPX_BLOCK) {
    const long long i = base + threadIdx.x;
    const int valid = i < n;
    long long b = 0, e = 0;
    int bad = 0;
    if (valid) {
      b = rp[i];
      e = rp[i + 1];
      if (rp32) {
        rp32[i] = (int)b;
        if (i == n - 1) rp32[n] = (int)e;
      }
      bad = b < 0 || e < b || e > nnz;
      if (!bad) {
        int prev = -1;
        for (long long k = b; k < e; k++) {
          const int c = ci[k];
          if (c <= prev || (long long)c >= ncols) { bad = 1; break; }
          prev = c;
        }
      }
    }
    const spx_u64 len = valid && !bad ? (spx_u64)(e - b) : 0;
    if (valid && len < SPX_HIST_SHARED) spx_hist_add(h, (unsigned int)len);
    const spx_u64 first_bad = spx_group_min(valid && bad ? (spx_u64)i : ~0ull, 32);
    const spx_u64 mx = spx_group_max(len, 32);
    const spx_u64 mn = spx_group_min(valid ? len : ~0ull, 32);
    const spx_u64 empty = spx_group_sum(valid && len == 0, 32);
    const spx_u64 pieces = spx_group_sum(valid && e > b ? (spx_u64)(((e - 1) >> 8) - (b >> 8) + 1) : 0, 32);
    spx_u64 kept = 0;
    if (valid && i + 1 < n) {
      const long long e2 = rp[i + 2];
      kept = e2 - e == e - b;
    }
    kept = spx_group_sum(kept, 32);
    const spx_u64 sq = spx_group_sum(len * len, 32);
    const spx_u64 idle1 = spx_idle(len, valid, 1);
    const spx_u64 idlet = tpr > 1 ? spx_idle(len, valid, tpr) : idle1;
    /* min fields kept complemented, so every field starts at 0 and reduces by max or sum */
    acc[0] = max(acc[0], ~first_bad);
    acc[1] = max(acc[1], mx);
    acc[2] = max(acc[2], ~mn);
    acc[3] += empty; acc[4] += pieces; acc[5] += kept; acc[6] += sq; acc[7] += idle1; acc[8] += idlet;
  }
  if (lane == 0)
    for (int k = 0; k < 9; k++) red[warp][k] = acc[k];
  __syncthreads();
  if (threadIdx.x < 9) {
    const int k = threadIdx.x;
    spx_u64 v = red[0][k];
    for (int w = 1; w < SPX_BLOCK / 32; w++) v = (k <= 2) ? max(v, red[w][k]) : v + red[w][k];
    if (v) {
      if (k <= 2) atomicMax(&out[k], v);
      else atomicAdd(&out[k], v);
    }
  }
  for (int k = threadIdx.x; k < SPX_HIST_SHARED; k += SPX_BLOCK)
    if (h[k]) atomicAdd(&out[9 + k], (spx_u64)h[k]);
}

/* The histogram's tail: rows of length lo..nbins-1 (longer than the shared bins of
 * spx_analyze_rows; few rows, so global atomics), hist[len - lo]. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_analyze_hist(long long n, const long long *__restrict__ rp, long long lo, long long nbins, spx_u64 *__restrict__ hist) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long l = rp[i + 1] - rp[i];
    if (l >= lo && l < nbins) atomicAdd(&hist[l - lo], 1ull);
  }
}

/* d[i] = a_ii (0 when row i has none), i < n = min(rows, cols); SPX_VALUE_T: the values' type. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_analyze_diag(long long n, const long long *__restrict__ rp, const int *__restrict__ ci,
                 const SPX_VALUE_T *__restrict__ va, double *__restrict__ d) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    double v = 0;
    for (long long k = rp[i], e = rp[i + 1]; k < e; k++) {
      const long long c = ci[k];
      if (c >= i) {
        if (c == i) v = (double)va[k];
        break;
      }
    }
    d[i] = v;
  }
}

/* rp[i] = rp32[i], i <= n; a first pointer other than 0 or a last other than nnz lowers the first
 * bad row (out[0], complemented, as spx_analyze_rows keeps it) to row 0 or row n - 1. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_analyze_widen(long long n, long long nnz, const int *__restrict__ rp32, long long *__restrict__ rp,
                  spx_u64 *__restrict__ out) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += (long long)gridDim.x * blockDim.x) {
    const long long v = rp32[i];
    rp[i] = v;
    if ((i == 0 && v != 0) || (i == n && v != nnz)) atomicMax(out, ~(spx_u64)(i == n && n > 0 ? n - 1 : 0));
  }
}
