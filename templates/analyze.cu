/* analyze.cu: the auto-tuner's row profile of a CSR on the device, and the CSR's validation, so
 * that choosing a format costs microseconds instead of host passes over row_ptr and col_idx (on a
 * 20M-nonzero matrix the host passes cost 5-50 ms, tens to hundreds of SpMVs). The CSR is the
 * host's layout (64-bit row_ptr, 32-bit col_idx), uploaded once; the plan reuses the upload for
 * cuSPARSE and for the device conversions.
 *
 * spx_analyze_rows  one thread per row, warps of 32 consecutive rows (the host model's warp):
 *                   checks the row (row_ptr in order and within nnz, columns strictly increasing
 *                   and inside [0, ncols)), and reduces per warp then with one atomic per warp:
 *                     out[0] first bad row (min; ~0 when none)   out[1] longest row (max)
 *                     out[2] shortest row (min)                 out[3] empty rows
 *                     out[4] SS pieces (segments of 256 slots each row touches)
 *                     out[5] rows i with len(i+1) == len(i)     out[6] sum of len^2
 *                     out[7] idle lane-slots, one thread per row, lock-step warps
 *                     out[8] the same with tpr lanes per row (groups of 32/tpr rows)
 *                   and writes row_ptr as 32-bit (rp32, when not NULL: what cuSPARSE's 32-bit
 *                   CSR takes) on the way.
 * spx_analyze_hist  the row-length histogram, hist[len] for len <= nbins-1: per block in shared
 *                   memory for the first SPX_HIST_SHARED lengths, global atomics past them.
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

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_analyze_rows(long long n, long long ncols, long long nnz, const long long *__restrict__ rp,
                 const int *__restrict__ ci, int *__restrict__ rp32, int tpr, spx_u64 *__restrict__ out) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
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
  if ((threadIdx.x & 31) == 0 && (long long)(i) < n) {
    if (first_bad != ~0ull) atomicMin(&out[0], first_bad);
    atomicMax(&out[1], mx);
    atomicMin(&out[2], mn);
    if (empty) atomicAdd(&out[3], empty);
    atomicAdd(&out[4], pieces);
    if (kept) atomicAdd(&out[5], kept);
    atomicAdd(&out[6], sq);
    if (idle1) atomicAdd(&out[7], idle1);
    if (idlet) atomicAdd(&out[8], idlet);
  }
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_analyze_hist(long long n, const long long *__restrict__ rp, long long nbins, spx_u64 *__restrict__ hist) {
  __shared__ unsigned int h[SPX_HIST_SHARED];
  const int ns = nbins < SPX_HIST_SHARED ? (int)nbins : SPX_HIST_SHARED;
  for (int k = threadIdx.x; k < ns; k += blockDim.x) h[k] = 0;
  __syncthreads();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long l = rp[i + 1] - rp[i];
    if (l < ns) atomicAdd(&h[l], 1u);
    else if (l < nbins) atomicAdd(&hist[l], 1ull);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < ns; k += blockDim.x)
    if (h[k]) atomicAdd(&hist[k], (spx_u64)h[k]);
}
