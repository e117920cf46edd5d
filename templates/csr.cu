/* csr.cu: SpMV on CSR (32-bit row pointers), "vector" kernel with SPX_TPR threads per row.
 *
 * MAPPING  SPX_TPR consecutive threads (1, 2, 4, 8, 16 or 32; a power of two dividing the warp)
 *          share a row: lane l reads entries ptr[i]+l, +TPR, ... (coalesced for TPR >= 8), then
 *          the lanes reduce with warp shuffles. TPR is picked from the mean row length, so short
 *          rows do not leave 31 of 32 lanes idle and long rows are read with whole warps.
 * BYTES    per nonzero: 4 (col) + sizeof(T) (val) + x gathered; per row: 4 (ptr), y written
 *          (read too when beta != 0).
 *
 * CONSTANTS  SPX_VALUE_T, SPX_TPR (threads per row; absent: 1), SPX_BLOCK (launch bound).
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

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_csr_spmv(long long nrows, long long ncols, long long nnz, const int *__restrict__ ptr,
             const int *__restrict__ col, const spx_value_t *__restrict__ val, double alpha,
             double beta, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long i = t / SPX_TPR;
  const int lane = (int)(t % SPX_TPR);
  spx_value_t sum = 0;
  (void)ncols; (void)nnz;
  if (i < nrows) {
    const int end = ptr[i + 1];
    for (int k = ptr[i] + lane; k < end; k += SPX_TPR) sum += val[k] * __ldg(x + col[k]);
  }
  /* Every lane takes part in the shuffles (no early return above): the mask is the full warp. */
#if SPX_TPR > 1
#pragma unroll
  for (int off = SPX_TPR / 2; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off, SPX_TPR);
#endif
  if (i < nrows && lane == 0)
    y[i] = beta == 0.0 ? (spx_value_t)(alpha * sum) : (spx_value_t)(alpha * sum + beta * y[i]);
}
