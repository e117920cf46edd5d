/* SPDX-License-Identifier: BSD-3-Clause */
/* rbp.cu: SpMV on the row block packing formats of papers/000: RBP-CSR (Algorithm 2), RBP-ELL and
 * RBP-ELL-R. A block is a run of >= 2 consecutive columns of a row, stored as its values and only
 * its first and last column; isolated nonzeros sit in a CSR part (row_ptr, csr_col, csr_val).
 *
 * MAPPING  spx_rbp_csr_spmv: SPX_TPR consecutive lanes per row (1 = the paper's Algorithm 2, one
 *          thread per row). Lane l takes blocks q = l, l+TPR, ... of the row: with SPX_RUN_ALL
 *          (every block in the matrix has SPX_RUN columns) block q's values start at
 *          val_ptr[i] + q*RUN and only its first column is read; otherwise the lanes take TPR
 *          blocks per round and an exclusive shuffle scan of the block lengths gives each lane
 *          its values' offset. A block of the common length SPX_RUN is fully unrolled, others
 *          loop. The isolated part is read TPR-strided (coalesced), then the lanes reduce with
 *          shuffles.
 *          spx_rbp_ell_spmv / spx_rbp_ell_r_spmv: one thread per row, column-major as ELL: pair q
 *          of row i at comp_col[i + 2q*N], [i + (2q+1)*N], value v at comp_val[i + v*N], so a warp
 *          reads 32 consecutive words per step (coalesced). The pair loop is unrolled over SPX_KC/2
 *          and stops at the row's first padding pair (1, 0) (RBP-ELL) or after rl[i] pairs
 *          (RBP-ELL-R); blocks of the common length SPX_RUN are unrolled too. The isolated part
 *          is per-thread CSR.
 * BYTES    per block value: sizeof(T) + x (contiguous within a block); per block: 8 (first and last
 *          column; RBP-CSR with SPX_RUN_ALL reads 4); per isolated nonzero: 4 + sizeof(T) + x gathered;
 *          per row: RBP-CSR 12 (val_ptr, col_ptr, row_ptr), RBP-ELL 4 (row_ptr) + the padding of
 *          the pair columns read before the first padding pair (8), RBP-ELL-R 8 (row_ptr, rl); y
 *          written (read when beta != 0).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_RUN (the common block length, unrolled; absent: every block loops),
 *            SPX_RUN_ALL (defined: every block has SPX_RUN columns; RBP-CSR then skips the scan),
 *            SPX_KC (a bucket >= Kc, the pair-column width of RBP-ELL(-R); absent: kc read at run time),
 *            SPX_TPR (RBP-CSR lanes per row, a power of two <= 32; default 1),
 *            SPX_SLOT_T (int, or long long when nrows * max(kv, kc) >= 2^31), SPX_BLOCK.
 * ARGUMENTS  RBP-CSR: nrows, ncols, nnz, nblocks, nval, nnon, comp_val, comp_col, val_ptr, col_ptr,
 *            row_ptr, csr_val, csr_col, alpha, beta, x, y.
 *            RBP-ELL: nrows, ncols, nnz, kv, kc, nnon, comp_val, comp_col, row_ptr, csr_val,
 *            csr_col, alpha, beta, x, y. RBP-ELL-R: the same with rl after comp_col. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_TPR
#define SPX_TPR 1
#endif
#ifndef SPX_SLOT_T
#define SPX_SLOT_T int
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
typedef SPX_VALUE_T spx_value_t;
#include "spmv_loads.cuh"

/* y[i] = alpha*sum + beta*y[i]; beta == 0 does not read y (it may hold NaN). */
#define SPX_RBP_STORE(y, i, sum, alpha, beta) \
  (y)[i] = (beta) == 0.0 ? (spx_value_t)((alpha) * (sum)) : (spx_value_t)((alpha) * (sum) + (beta) * (y)[i])

/* One block's products: len values a[0], a[stride], ... times x[f ..]; unrolled when the block
 * has the common length SPX_RUN. */
static __device__ __forceinline__ spx_value_t spx_rbp_block(const spx_value_t *__restrict__ a, SPX_SLOT_T stride,
                                                            int f, int len, const spx_value_t *__restrict__ x) {
  spx_value_t s = 0;
#ifdef SPX_RUN
  if (len == SPX_RUN) {
#pragma unroll
    for (int u = 0; u < SPX_RUN; u++) s += SPX_LDS(a + (SPX_SLOT_T)u * stride) * __ldg(x + f + u);
    return s;
  }
#endif
  for (int u = 0; u < len; u++) s += SPX_LDS(a + (SPX_SLOT_T)u * stride) * __ldg(x + f + u);
  return s;
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_rbp_csr_spmv(long long nrows, long long ncols, long long nnz, long long nblocks, long long nval,
                 long long nnon, const spx_value_t *__restrict__ comp_val, const int *__restrict__ comp_col,
                 const int *__restrict__ val_ptr, const int *__restrict__ col_ptr,
                 const int *__restrict__ row_ptr, const spx_value_t *__restrict__ csr_val,
                 const int *__restrict__ csr_col, double alpha, double beta,
                 const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long i = t / SPX_TPR;
  const int lane = (int)(t % SPX_TPR);
  spx_value_t sum = 0;
  (void)ncols; (void)nnz; (void)nblocks; (void)nval; (void)nnon;
  if (i < nrows) {
    const int v0 = val_ptr[i], c0 = col_ptr[i], nb = (col_ptr[i + 1] - c0) >> 1;
#if defined(SPX_RUN) && defined(SPX_RUN_ALL)
    /* Every block has RUN columns: block q's values start at q*RUN, and its last column is not
     * needed. */
    for (int q = lane; q < nb; q += SPX_TPR) {
      const int f = comp_col[c0 + 2 * q];
      const spx_value_t *a = comp_val + v0 + q * SPX_RUN;
#pragma unroll
      for (int u = 0; u < SPX_RUN; u++) sum += SPX_LDS(a + u) * __ldg(x + f + u);
    }
#elif SPX_TPR == 1
    /* Algorithm 2: the values of a block follow one another; its columns count up from first. */
    for (int q = 0, jj = v0; q < nb; q++) {
      const int f = comp_col[c0 + 2 * q], len = comp_col[c0 + 2 * q + 1] - f + 1;
      sum += spx_rbp_block(comp_val + jj, 1, f, len, x);
      jj += len;
    }
#else
    /* TPR blocks per round, an exclusive scan of their lengths gives each lane its values. The
     * lanes of one row run the same rounds, so the shuffles name only this row's lanes. */
    const unsigned gmask = (0xffffffffu >> (32 - SPX_TPR)) << ((threadIdx.x & 31) & ~(SPX_TPR - 1));
    for (int q0 = 0, base = v0; q0 < nb; q0 += SPX_TPR) {
      const int q = q0 + lane;
      int f = 0, len = 0;
      if (q < nb) {
        f = comp_col[c0 + 2 * q];
        len = comp_col[c0 + 2 * q + 1] - f + 1;
      }
      int incl = len;
#pragma unroll
      for (int off = 1; off < SPX_TPR; off *= 2) {
        const int o = __shfl_up_sync(gmask, incl, off, SPX_TPR);
        if (lane >= off) incl += o;
      }
      if (len) sum += spx_rbp_block(comp_val + base + incl - len, 1, f, len, x);
      base += __shfl_sync(gmask, incl, SPX_TPR - 1, SPX_TPR);
    }
#endif
    const int e = row_ptr[i + 1];
    for (int j = row_ptr[i] + lane; j < e; j += SPX_TPR) sum += SPX_LDS(csr_val + j) * __ldg(x + SPX_LDS(csr_col + j));
  }
  /* Every lane takes part (no early return above): the mask is the full warp. */
#if SPX_TPR > 1
#pragma unroll
  for (int off = SPX_TPR / 2; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off, SPX_TPR);
#endif
  if (i < nrows && lane == 0) SPX_RBP_STORE(y, i, sum, alpha, beta);
}

/* Row i's blocks in the ELL layout: at most npairs pairs, stopping at the first padding pair. */
static __device__ __forceinline__ spx_value_t
spx_rbpe_blocks(SPX_SLOT_T i, SPX_SLOT_T n, int npairs, const spx_value_t *__restrict__ comp_val,
                const int *__restrict__ comp_col, const spx_value_t *__restrict__ x) {
  spx_value_t sum = 0;
  SPX_SLOT_T v = i; /* the next value slot: i + (values so far) * n */
#ifdef SPX_KC
#pragma unroll
  for (int q = 0; q < SPX_KC / 2; q++) {
    if (q >= npairs) break;
#else
  for (int q = 0; q < npairs; q++) {
#endif
    const SPX_SLOT_T s = i + (SPX_SLOT_T)(2 * q) * n;
    const int f = comp_col[s], len = comp_col[s + n] - f + 1;
    if (len <= 0) break; /* the padding pair (1, 0): pairs after it are padding too */
    sum += spx_rbp_block(comp_val + v, n, f, len, x);
    v += (SPX_SLOT_T)len * n;
  }
  return sum;
}

/* Row i's isolated nonzeros (the CSR part). */
static __device__ __forceinline__ spx_value_t
spx_rbpe_isolated(long long i, const int *__restrict__ row_ptr, const spx_value_t *__restrict__ csr_val,
                  const int *__restrict__ csr_col, const spx_value_t *__restrict__ x) {
  spx_value_t sum = 0;
  const int e = row_ptr[i + 1];
  for (int j = row_ptr[i]; j < e; j++) sum += SPX_LDS(csr_val + j) * __ldg(x + SPX_LDS(csr_col + j));
  return sum;
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_rbp_ell_spmv(long long nrows, long long ncols, long long nnz, int kv, int kc, long long nnon,
                 const spx_value_t *__restrict__ comp_val, const int *__restrict__ comp_col,
                 const int *__restrict__ row_ptr, const spx_value_t *__restrict__ csr_val,
                 const int *__restrict__ csr_col, double alpha, double beta,
                 const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const SPX_SLOT_T i = (SPX_SLOT_T)blockIdx.x * blockDim.x + threadIdx.x;
  (void)ncols; (void)nnz; (void)kv; (void)nnon;
  if (i >= nrows) return;
  const spx_value_t sum = spx_rbpe_blocks(i, (SPX_SLOT_T)nrows, kc / 2, comp_val, comp_col, x) +
                          spx_rbpe_isolated(i, row_ptr, csr_val, csr_col, x);
  SPX_RBP_STORE(y, i, sum, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_rbp_ell_r_spmv(long long nrows, long long ncols, long long nnz, int kv, int kc, long long nnon,
                   const spx_value_t *__restrict__ comp_val, const int *__restrict__ comp_col,
                   const int *__restrict__ rl, const int *__restrict__ row_ptr,
                   const spx_value_t *__restrict__ csr_val, const int *__restrict__ csr_col, double alpha,
                   double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const SPX_SLOT_T i = (SPX_SLOT_T)blockIdx.x * blockDim.x + threadIdx.x;
  (void)ncols; (void)nnz; (void)kv; (void)kc; (void)nnon;
  if (i >= nrows) return;
  const spx_value_t sum = spx_rbpe_blocks(i, (SPX_SLOT_T)nrows, rl[i], comp_val, comp_col, x) +
                          spx_rbpe_isolated(i, row_ptr, csr_val, csr_col, x);
  SPX_RBP_STORE(y, i, sum, alpha, beta);
}
