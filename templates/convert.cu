/* convert.cu: CSR -> SELL-C-sigma and SELL16 on the device, so that a plan (or a time-stepping code
 * handing in a new matrix) converts at device bandwidth instead of on the host. The result is the
 * host converter's, array for array (tests compare them): rows sorted by decreasing length inside
 * windows of sigma with ties in row order, padding -0.0 on the row's last column (an empty row's
 * on its diagonal, clamped to the last column), positions past the last row column (offset) 0.
 *
 * Steps (the host drives them, cuda_impl.h): spx_sell_sort (sigma > 1: perm), spx_sell_widths
 * (the widest row of each slice), a scan of the widths on the host (slice_ptr), spx_sell16_base
 * (SELL16: each slice's smallest column; slices spanning more than 65536 columns reported), then
 * spx_sell_fill writes the slots.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_BLOCK, SPX_SIGMA_MAX (largest sorting window, shared memory).
 * The CSR is the host's layout: 64-bit row_ptr, 32-bit col_idx, values of SPX_VALUE_T. */
#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
#ifndef SPX_SIGMA_MAX
#define SPX_SIGMA_MAX 4096
#endif
typedef SPX_VALUE_T spx_value_t;

/* One block per window of sigma rows: position = the number of rows of the window that come
 * before this one (longer, or as long and earlier), which is the host's stable order. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sell_sort(long long nrows, int sigma, const long long *__restrict__ row_ptr, int *__restrict__ perm) {
  __shared__ int len[SPX_SIGMA_MAX];
  const long long w0 = (long long)blockIdx.x * sigma;
  const int m = (int)(nrows - w0 < sigma ? nrows - w0 : sigma);
  for (int i = threadIdx.x; i < m; i += blockDim.x) len[i] = (int)(row_ptr[w0 + i + 1] - row_ptr[w0 + i]);
  __syncthreads();
  for (int i = threadIdx.x; i < m; i += blockDim.x) {
    const int li = len[i];
    int rank = 0;
    for (int j = 0; j < m; j++) {
      const int lj = len[j];
      rank += lj > li || (lj == li && j < i);
    }
    perm[w0 + rank] = (int)(w0 + i);
  }
}

/* One thread per slice: its widest row (rows through perm when sorted). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sell_widths(long long nrows, int c, long long nslices, const long long *__restrict__ row_ptr,
                const int *__restrict__ perm, int *__restrict__ width) {
  const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= nslices) return;
  const long long q1 = (s + 1) * c < nrows ? (s + 1) * c : nrows;
  long long w = 0;
  for (long long q = s * c; q < q1; q++) {
    const long long r = perm ? perm[q] : q, l = row_ptr[r + 1] - row_ptr[r];
    w = l > w ? l : w;
  }
  width[s] = (int)w;
}

/* One thread per slice: the smallest and largest column its slots use (padding included); a slice
 * spanning more than 65536 columns lowers *bad to its index (the first such slice is reported). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sell16_base(long long nrows, long long ncols, int c, long long nslices, const long long *__restrict__ row_ptr,
                const int *__restrict__ col_idx, const int *__restrict__ perm, const int *__restrict__ slice_ptr,
                int *__restrict__ cbase, long long *__restrict__ bad) {
  const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= nslices) return;
  const int w = (slice_ptr[s + 1] - slice_ptr[s]) / c;
  const long long q1 = (s + 1) * c < nrows ? (s + 1) * c : nrows;
  long long lo = 0x7fffffff, hi = -1;
  for (long long q = s * c; q < q1 && w > 0; q++) {
    const long long r = perm ? perm[q] : q, b = row_ptr[r], e = row_ptr[r + 1];
    if (e > b) {
      lo = col_idx[b] < lo ? col_idx[b] : lo;
      hi = col_idx[e - 1] > hi ? col_idx[e - 1] : hi;
    } else {
      const long long pc = r < ncols ? r : ncols - 1;
      lo = pc < lo ? pc : lo;
      hi = pc > hi ? pc : hi;
    }
  }
  if (hi < 0) lo = hi = 0;
  cbase[s] = (int)lo;
  if (hi - lo > 65535) atomicMin((unsigned long long *)bad, (unsigned long long)s);
}

/* One thread per position q of nslices * c: its row's slots, column-major in the slice (the c
 * lanes of a slice write consecutive addresses). col32 for SELL, col16 + cbase for SELL16. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sell_fill(long long nrows, long long ncols, int c, long long nslices, const long long *__restrict__ row_ptr,
              const int *__restrict__ col_idx, const spx_value_t *__restrict__ val, const int *__restrict__ perm,
              const int *__restrict__ slice_ptr, const int *__restrict__ cbase, int *__restrict__ col32,
              unsigned short *__restrict__ col16, spx_value_t *__restrict__ out) {
  const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= nslices * c) return;
  const long long s = q / c;
  const int lane = (int)(q - s * c), b = slice_ptr[s], w = (slice_ptr[s + 1] - b) / c;
  const spx_value_t pad = (spx_value_t)-0.0;
  if (q >= nrows) { /* past the last row: padding on column (offset) 0 */
    for (int j = 0; j < w; j++) {
      const long long k = b + (long long)j * c + lane;
      if (col16) col16[k] = 0;
      else col32[k] = 0;
      out[k] = pad;
    }
    return;
  }
  const long long r = perm ? perm[q] : q, rb = row_ptr[r];
  const int len = (int)(row_ptr[r + 1] - rb);
  const int pc = len > 0 ? col_idx[rb + len - 1] : (int)(r < ncols ? r : ncols - 1);
  const int base = cbase ? cbase[s] : 0;
  for (int j = 0; j < w; j++) {
    const long long k = b + (long long)j * c + lane;
    const int cj = j < len ? col_idx[rb + j] : pc;
    if (col16) col16[k] = (unsigned short)(cj - base);
    else col32[k] = cj;
    out[k] = j < len ? val[rb + j] : pad;
  }
}
