/* SPDX-License-Identifier: BSD-3-Clause */
/* csr_lb.cu: load-balanced SpMV on CSR (32-bit row pointers) for skewed row lengths: merge-path
 * (Merrill and Garland, SC'16) over the nrows row ends and nnz nonzeros, with atomics in place of
 * a fix-up pass. Two launches.
 *
 * MAPPING  The row ends ptr[1..n] and the nonzero indices 0..nnz-1 merged are nrows + nnz items;
 *          block b takes items [b*IPB, (b+1)*IPB), IPB = SPX_BLOCK * SPX_IPT, whatever the row
 *          lengths (a row of a million nonzeros spreads over many blocks; a run of empty rows
 *          costs one item each). The block's start and end on the merge path come from a 32-ary
 *          warp search on ptr (log32 steps, each one load per lane). The block stages its row ends
 *          and its nonzeros' products val*x (coalesced loads) in shared memory; each thread finds
 *          its own SPX_IPT items by a binary search there and walks them, finishing a row at each
 *          row end. A block-wide segmented scan hands every thread the open row's partial sum from
 *          the threads before it. Rows inside a block are written y = alpha*sum + beta*y (beta == 0
 *          does not read y). A row cut by a block boundary (its items in several blocks) gets one
 *          atomicAdd of alpha*piece per block, after spx_csr_lb_fix scaled it by beta.
 *          spx_csr_lb_fix: one warp per interior block boundary; finds the row the boundary cuts
 *          and, at the row's first cut, sets y = beta*y (0 when beta == 0).
 * BYTES    per nonzero: 4 (col) + sizeof(T) (val) + x gathered; per row: 4 (ptr), y written (read
 *          when beta != 0); per block: the searches (about 2 * 32 * log32(n) words, mostly cached)
 *          and an atomic on each cut row.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_BLOCK (threads per block: the launch must use exactly this many, a
 *            multiple of 32, >= 64), SPX_IPT (items per thread; the block's SPX_BLOCK*SPX_IPT items
 *            take (4 + sizeof(T)) bytes of static shared memory each, which must stay under
 *            48 KiB: spx uses 2048 items per block). No shape constants.
 * ARGUMENTS  nrows, ncols, nnz, ptr, col, val, alpha, beta, x, y. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
#ifndef SPX_IPT
#define SPX_IPT (2048 / SPX_BLOCK) /* 2048 items per block: under 48 KiB of shared memory at any block */
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

#define SPX_LB_IPB (SPX_BLOCK * SPX_IPT)
#define SPX_LB_WARPS (SPX_BLOCK / 32)

/* The merge-path coordinate of diagonal d: the number of row ends among the first d items, i.e.
 * the first i in [max(0, d - nnz), min(d, nrows)] with ptr[i+1] > d - i - 1. Called by a whole
 * warp (every lane gets the answer); each round tests 32 pivots at once. */
static __device__ __forceinline__ long long spx_lb_search(long long d, long long nrows, long long nnz,
                                                          const int *__restrict__ ptr, int lane) {
  long long lo = d - nnz > 0 ? d - nnz : 0, hi = d < nrows ? d : nrows;
  while (hi - lo > 32) {
    const long long span = hi - lo, p = lo + span * lane / 32;
    const bool c = (long long)ptr[p + 1] <= d - p - 1;
    const int n = __popc(__ballot_sync(0xffffffffu, c)); /* true on lanes 0 .. n-1 (monotone) */
    const long long nlo = n > 0 ? lo + span * (n - 1) / 32 + 1 : lo;
    const long long nhi = n < 32 ? lo + span * n / 32 : hi;
    lo = nlo;
    hi = nhi;
  }
  const long long p = lo + lane;
  const bool c = p < hi && (long long)ptr[p + 1] <= d - p - 1;
  return lo + __popc(__ballot_sync(0xffffffffu, c));
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_csr_lb_fix(long long nrows, long long ncols, long long nnz, const int *__restrict__ ptr,
               const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
               double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long b = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32 + 1; /* boundary */
  const long long d = b * SPX_LB_IPB;
  (void)ncols; (void)col; (void)val; (void)alpha; (void)x;
  if (d >= nrows + nnz) return; /* the whole warp */
  const long long i = spx_lb_search(d, nrows, nnz, ptr, threadIdx.x & 31);
  if ((threadIdx.x & 31) == 0 && i < nrows) {
    const long long pi = ptr[i];
    /* Row i has nonzeros before the boundary (it is cut), and none before the previous one. */
    if (pi < d - i && pi + i >= d - SPX_LB_IPB)
      y[i] = beta == 0.0 ? (spx_value_t)0 : (spx_value_t)(beta * y[i]);
  }
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_csr_lb_spmv(long long nrows, long long ncols, long long nnz, const int *__restrict__ ptr,
                const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
                double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  __shared__ int s_end[SPX_LB_IPB];          /* ptr[i0+1 ..]: the block's row ends */
  __shared__ spx_value_t s_prod[SPX_LB_IPB]; /* val*x of the block's nonzeros */
  __shared__ long long s_row[2];             /* i0, i1 */
  __shared__ int s_cut[2];                   /* row i0 began before the block; row i1 goes on after it */
  __shared__ spx_value_t s_wv[SPX_LB_WARPS];
  __shared__ int s_wf[SPX_LB_WARPS];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const long long items = nrows + nnz, d0 = (long long)blockIdx.x * SPX_LB_IPB;
  (void)ncols;
  if (d0 >= items) return; /* the whole block (an empty matrix still gets a grid of one) */
  const long long d1 = d0 + SPX_LB_IPB < items ? d0 + SPX_LB_IPB : items;
  if (w < 2) {
    const long long d = w ? d1 : d0, i = spx_lb_search(d, nrows, nnz, ptr, lane);
    if (lane == 0) {
      s_row[w] = i;
      s_cut[w] = i < nrows && (long long)ptr[i] < d - i;
    }
  }
  __syncthreads();
  const long long i0 = s_row[0], i1 = s_row[1];
  const int j0 = (int)(d0 - i0), nr = (int)(i1 - i0), nz = (int)(d1 - i1) - j0;
#pragma unroll
  for (int u = 0; u < SPX_IPT; u++) {
    const int k = t + u * SPX_BLOCK;
    if (k < nr) s_end[k] = ptr[i0 + 1 + k];
    if (k < nz) s_prod[k] = SPX_LDS(val + j0 + k) * __ldg(x + SPX_LDS(col + j0 + k));
  }
  __syncthreads();
  /* This thread's items start at local diagonal dl: binary search in shared memory. */
  const int dl = t * SPX_IPT < nr + nz ? t * SPX_IPT : nr + nz;
  int lo = dl - nz > 0 ? dl - nz : 0, hi = dl < nr ? dl : nr;
  while (lo < hi) {
    const int p = (lo + hi) >> 1;
    if (s_end[p] <= j0 + (dl - p - 1)) lo = p + 1;
    else hi = p;
  }
  int ia = lo, jb = dl - lo;
  const int count = nr + nz - dl < SPX_IPT ? nr + nz - dl : SPX_IPT;
  spx_value_t run = 0, first = 0;
  long long first_row = -1;
#pragma unroll
  for (int u = 0; u < SPX_IPT; u++) {
    if (u < count) {
      if (ia < nr && s_end[ia] <= j0 + jb) { /* row i0 + ia ends */
        const long long i = i0 + ia;
        if (first_row < 0) { first_row = i; first = run; } /* needs the carry: written below */
        else y[i] = beta == 0.0 ? (spx_value_t)(alpha * run) : (spx_value_t)(alpha * run + beta * y[i]);
        run = 0;
        ia++;
      } else {
        run += s_prod[jb];
        jb++;
      }
    }
  }
  /* Segmented scan over the threads of (ended a row, open sum): (f1, v1) + (f2, v2) =
   * (f1 | f2, f2 ? v2 : v1 + v2). Inclusive in the warp, then across warps. */
  int f = first_row >= 0;
  spx_value_t v = run;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const spx_value_t vu = __shfl_up_sync(0xffffffffu, v, off);
    const int fu = __shfl_up_sync(0xffffffffu, f, off);
    if (lane >= off) {
      if (!f) v += vu;
      f |= fu;
    }
  }
  if (lane == 31) { s_wv[w] = v; s_wf[w] = f; }
  /* This thread's exclusive value within the warp. */
  spx_value_t ev = __shfl_up_sync(0xffffffffu, v, 1);
  int ef = __shfl_up_sync(0xffffffffu, f, 1);
  if (lane == 0) { ev = 0; ef = 0; }
  __syncthreads();
  spx_value_t cv = 0; /* the warps before this one */
  int cf = 0;
  for (int u = 0; u < w; u++) {
    if (s_wf[u]) { cv = s_wv[u]; cf = 1; }
    else cv += s_wv[u];
  }
  if (!ef) ev += cv;
  ef |= cf;
  if (first_row >= 0) {
    const spx_value_t s = first + ev;
    if (!ef && s_cut[0]) atomicAdd(y + first_row, (spx_value_t)(alpha * s)); /* row i0, cut */
    else y[first_row] = beta == 0.0 ? (spx_value_t)(alpha * s) : (spx_value_t)(alpha * s + beta * y[first_row]);
  }
  if (t == SPX_BLOCK - 1 && s_cut[1]) { /* row i1 goes on in the next block */
    const spx_value_t s = first_row >= 0 ? run : run + ev;
    atomicAdd(y + i1, (spx_value_t)(alpha * s));
  }
}
