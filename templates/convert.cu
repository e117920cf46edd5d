/* SPDX-License-Identifier: BSD-3-Clause */
/* convert.cu: CSR -> SELL-C-sigma, SELL16, SDIA and BSR on the device, so that a plan (or a
 * time-stepping code handing in a new matrix) converts at device bandwidth instead of on the host.
 * Every result is the host converter's, array for array (tests compare them).
 *
 * SELL / SELL16: rows sorted by decreasing length inside windows of sigma with ties in row order,
 * padding -0.0 on the row's last column (an empty row's on its diagonal, clamped to the last
 * column), positions past the last row column (offset) 0, an entry's -0.0 stored as +0.0. Steps (the host drives them,
 * cuda_impl.h): spx_sell_sort (sigma > 1: perm), spx_sell_widths (the widest row of each slice), a
 * scan of the widths on the host (slice_ptr), spx_sell16_base (SELL16: each slice's smallest
 * column; slices spanning more than 65536 columns reported), then spx_sell_fill writes the slots.
 *
 * SDIA and BSR: a group of g lanes (g a power of two, 32 / g groups a warp) merges the sorted
 * rows of one slice (SDIA: its C rows' offsets column - row) or one block row (BSR: its r rows'
 * block columns col / c): each step the group's minimum over its rows' next keys is the next
 * diagonal / block column, and the rows at it move past. Pass 1 counts (spx_sdia_count,
 * spx_bsr_count), a scan gives the pointers (SDIA: on the host, which needs the widths anyway;
 * BSR: spx_scan_sums, spx_scan_tiles, spx_scan_apply), pass 2 merges again and writes
 * (spx_sdia_fill, spx_bsr_fill): per step one key and the group's C (SDIA, consecutive) or r x c
 * (BSR) values, padding -0.0, an entry's -0.0 stored as +0.0 (spx_val_store). Bytes: the CSR read
 * twice (pass 2 with values), the result written once.
 *
 * CONSTANTS  SPX_VALUE_T, SPX_BLOCK, SPX_SIGMA_MAX (largest sorting window, shared memory),
 *            SPX_RPL (SDIA rows per lane: ceil(C / 32) when C > 32, else 1).
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
#ifndef SPX_RPL
#define SPX_RPL 1
#endif
typedef SPX_VALUE_T spx_value_t;

/* Values move as bits (NaN payloads, -0.0 and denormals unchanged): the type of their size, and the
 * padding mark -0.0 in it. */
template <int N> struct spx_bits_of;
template <> struct spx_bits_of<8> { typedef unsigned long long type; };
template <> struct spx_bits_of<4> { typedef unsigned type; };
typedef spx_bits_of<sizeof(spx_value_t)>::type spx_bits_t;
#define SPX_PAD_BITS ((spx_bits_t)1 << (8 * sizeof(spx_bits_t) - 1))

/* An entry's bits as a padded format stores them: -0.0 becomes +0.0 (else it reads as padding). */
__device__ __forceinline__ spx_bits_t spx_entry(spx_bits_t v) { return v == SPX_PAD_BITS ? (spx_bits_t)0 : v; }

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
  const spx_bits_t *vb = (const spx_bits_t *)val; /* as bits: an entry's -0.0 stored as +0.0 */
  spx_bits_t *ob = (spx_bits_t *)out;
  if (q >= nrows) { /* past the last row: padding on column (offset) 0 */
    for (int j = 0; j < w; j++) {
      const long long k = b + (long long)j * c + lane;
      if (col16) col16[k] = 0;
      else col32[k] = 0;
      ob[k] = SPX_PAD_BITS;
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
    ob[k] = j < len ? spx_entry(vb[rb + j]) : SPX_PAD_BITS;
  }
}

/* ---- SDIA and BSR: groups of lanes merging sorted rows ----------------------------------------- */
#define SPX_FULL 0xffffffffu
#define SPX_NONE 0x7fffffff /* "no next key": above every key but one (INT_MAX itself, still right) */

/* The minimum of v over this lane's aligned group of g lanes (every lane of the warp calls it). */
__device__ __forceinline__ int spx_group_min(int v, int g) {
  for (int o = 1; o < g; o <<= 1) {
    const int w = __shfl_xor_sync(SPX_FULL, v, o);
    v = w < v ? w : v;
  }
  return v;
}

/* This lane's group as a ballot mask. */
__device__ __forceinline__ unsigned spx_group_mask(int g) {
  return g == 32 ? SPX_FULL : ((1u << g) - 1) << ((threadIdx.x & 31) & ~(g - 1));
}

/* Row i's offset at k, 32-bit as the host computes it. */
__device__ __forceinline__ int spx_sdia_off(const int *__restrict__ col_idx, long long k, long long i) {
  return (int)((long long)col_idx[k] - i);
}

/* Both SDIA passes: the group of g lanes for slice s holds rows s*c + l + g*t (t < SPX_RPL, below c).
 * Pass 1 (count): count[s] = the slice's distinct offsets, or cap + 1 as soon as they pass cap
 * (the host's early stop). Pass 2 (fill): off and val of the slice's slice_ptr[s] .. diagonals.
 * Rows are walked forward while their offsets do not decrease; a row whose offsets do (legal in a
 * CSR, rare) sends its group back to the start, then every step scans the whole rows for the
 * smallest offset above the last (duplicates: the last entry wins, as on the host). */
__device__ __forceinline__ void spx_sdia_walk(long long nrows, int c, int g, long long nslices, long long cap,
                                              const long long *__restrict__ row_ptr, const int *__restrict__ col_idx,
                                              const spx_bits_t *__restrict__ val, int *__restrict__ count,
                                              const int *__restrict__ slice_ptr, int *__restrict__ off,
                                              spx_bits_t *__restrict__ out) {
  const int lane = threadIdx.x & 31, gl = lane & (g - 1);
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long s = warp * (32 / g) + lane / g;
  const unsigned gm = spx_group_mask(g);
  const bool fill = out != 0;
  long long kb[SPX_RPL], k[SPX_RPL], e[SPX_RPL];
  int nx[SPX_RPL]; /* walking: the offset at k (k < e) */
  long long base = 0, w = 0, d = 0;
  int last = 0, walk = 1, stop = s >= nslices;
  if (warp * (32 / g) >= nslices) return; /* the whole warp: no slice */
#pragma unroll
  for (int t = 0; t < SPX_RPL; t++) {
    const int j = gl + g * t;
    const long long i = s * c + j;
    kb[t] = e[t] = 0;
    if (!stop && j < c && i < nrows) { kb[t] = row_ptr[i]; e[t] = row_ptr[i + 1]; }
    k[t] = kb[t];
    nx[t] = k[t] < e[t] ? spx_sdia_off(col_idx, k[t], i) : 0;
  }
  if (fill && !stop) { base = slice_ptr[s]; w = slice_ptr[s + 1] - base; }
  for (;;) {
    int mine = SPX_NONE, has = 0;
#pragma unroll
    for (int t = 0; t < SPX_RPL; t++) {
      const long long i = s * c + gl + g * t;
      if (stop) break;
      if (walk) {
        if (k[t] < e[t]) {
          has = 1;
          mine = nx[t] < mine ? nx[t] : mine;
        }
      } else {
        for (long long q = kb[t]; q < e[t]; q++) {
          const int o = spx_sdia_off(col_idx, q, i);
          if ((d == 0 || o > last) && o <= mine) { mine = o; has = 1; }
        }
      }
    }
    const unsigned b = __ballot_sync(SPX_FULL, has);
    if (!b) break; /* every group of the warp is done */
    const int m = spx_group_min(mine, g);
    int bad = 0;
    if (b & gm) {
#pragma unroll
      for (int t = 0; t < SPX_RPL; t++) {
        const int j = gl + g * t;
        const long long i = s * c + j;
        spx_bits_t v = SPX_PAD_BITS;
        if (j >= c) break;
        if (walk) {
          while (k[t] < e[t] && nx[t] == m) {
            if (fill) v = spx_entry(val[k[t]]);
            if (++k[t] < e[t]) nx[t] = spx_sdia_off(col_idx, k[t], i);
          }
          bad |= k[t] < e[t] && nx[t] < m;
        } else if (fill) {
          for (long long q = kb[t]; q < e[t]; q++)
            if (spx_sdia_off(col_idx, q, i) == m) v = spx_entry(val[q]);
        }
        if (fill && d < w) out[(base + d) * c + j] = v;
      }
      if (fill && gl == 0 && d < w) off[base + d] = m;
      last = m;
      d++;
      if (!fill && d > cap) stop = 1; /* count = cap + 1: the host's early stop */
      if (fill && d >= w) stop = 1;   /* all w written: the rows are done too (unless one decreases) */
    }
    if (__ballot_sync(SPX_FULL, bad) & gm) { /* a row's offsets decrease: start over, scanning */
      walk = 0;
      d = 0;
      stop = s >= nslices;
    }
  }
  if (!fill && gl == 0 && s < nslices) count[s] = (int)d;
}

/* SDIA pass 1: diagonals per slice (see spx_sdia_walk); one warp per 32 / g slices. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sdia_count(long long nrows, int c, int g, long long nslices, long long cap, const long long *__restrict__ row_ptr,
               const int *__restrict__ col_idx, int *__restrict__ count) {
  spx_sdia_walk(nrows, c, g, nslices, cap, row_ptr, col_idx, 0, count, 0, 0, 0);
}

/* SDIA pass 2: off[slice_ptr[s] + d] and val[(slice_ptr[s] + d) * c + l] of every slice. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_sdia_fill(long long nrows, int c, int g, long long nslices, const long long *__restrict__ row_ptr,
              const int *__restrict__ col_idx, const spx_value_t *__restrict__ val, const int *__restrict__ slice_ptr,
              int *__restrict__ off, spx_value_t *__restrict__ out) {
  spx_sdia_walk(nrows, c, g, nslices, 0, row_ptr, col_idx, (const spx_bits_t *)val, 0, slice_ptr, off,
                (spx_bits_t *)out);
}

/* Both BSR passes: the group of g >= r lanes for block row I, lane l < r on row I*r + l. A step's
 * block column m is the group's smallest next col / c; the rows in it consume their columns
 * below (m + 1) * c. Pass 1 (cnt non-NULL: cnt[I+1] = blocks; always acc[0] += blocks, and
 * acc[1] = 1 when a column is out of range or a row's columns do not strictly increase, which the
 * host reports as SPX_INVALID_ARGUMENT). Pass 2 (out non-NULL, input checked by pass 1): bcol and the
 * r x c row-major blocks from brp[I] on, padding -0.0. */
__device__ __forceinline__ void spx_bsr_walk(long long nrows, long long ncols, int r, int c, int g, long long nbrows,
                                             const long long *__restrict__ row_ptr, const int *__restrict__ col_idx,
                                             const spx_bits_t *__restrict__ val, int *__restrict__ cnt,
                                             unsigned long long *__restrict__ acc, const int *__restrict__ brp,
                                             int *__restrict__ bcol, spx_bits_t *__restrict__ out) {
  __shared__ unsigned long long part[SPX_BLOCK / 32];
  const int lane = threadIdx.x & 31, gl = lane & (g - 1);
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long I = warp * (32 / g) + lane / g, i = I * r + gl;
  const unsigned gm = spx_group_mask(g);
  const bool fill = out != 0;
  long long k = 0, e = 0, prev = -1, base = 0, nb = 0, q = 0;
  int hb = 0, stop = I >= nbrows;
  /* no early return: pass 1 ends with a block-wide sum */
  if (I < nbrows && gl < r && i < nrows) {
    k = row_ptr[i];
    e = row_ptr[i + 1];
    if (k < e) hb = col_idx[k] / c;
  }
  if (fill && I < nbrows) { base = brp[I]; nb = brp[I + 1] - base; }
  for (;;) {
    const int has = !stop && k < e;
    const unsigned b = __ballot_sync(SPX_FULL, has);
    if (!b) break;
    const int m = spx_group_min(has ? hb : SPX_NONE, g);
    int bad = 0;
    if (b & gm) {
      const long long lim = (long long)m * c + c;
      if (fill) {
        if (gl < r && q < nb) {
          const long long at = ((base + q) * r + gl) * c;
          const long long c0 = (long long)m * c;
          for (int jj = 0; jj < c; jj++) {
            spx_bits_t v = SPX_PAD_BITS;
            if (has && hb == m && k < e && col_idx[k] == c0 + jj) v = spx_entry(val[k++]);
            out[at + jj] = v;
          }
          if (gl == 0) bcol[base + q] = m;
        }
      } else if (has && hb == m) {
        while (k < e && col_idx[k] < lim) {
          const long long cc = col_idx[k];
          if (cc <= prev || cc >= ncols) { bad = 1; break; }
          prev = cc;
          k++;
        }
      }
      if (k < e) hb = col_idx[k] / c;
      q++;
      if (fill && q >= nb) stop = 1; /* all nb written: the rows are done too */
    }
    if (__ballot_sync(SPX_FULL, bad) & gm) stop = 1;
    if (bad) atomicOr(&acc[1], 1ull);
  }
  if (fill) return;
  if (gl == 0 && I < nbrows && cnt) cnt[I + 1] = (int)q;
  {
    unsigned long long v = gl == 0 && I < nbrows ? (unsigned long long)q : 0ull;
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(SPX_FULL, v, o);
    if (lane == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long t = 0;
      for (int w = 0; w < (int)(blockDim.x >> 5); w++) t += part[w];
      if (t) atomicAdd(&acc[0], t);
    }
  }
}

/* BSR pass 1: blocks per block row (see spx_bsr_walk); one warp per 32 / g block rows. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_bsr_count(long long nrows, long long ncols, int r, int c, int g, long long nbrows,
              const long long *__restrict__ row_ptr, const int *__restrict__ col_idx, int *__restrict__ cnt,
              unsigned long long *__restrict__ acc) {
  spx_bsr_walk(nrows, ncols, r, c, g, nbrows, row_ptr, col_idx, 0, cnt, acc, 0, 0, 0);
}

/* BSR pass 2: block columns and values from the block row pointers brp. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_bsr_fill(long long nrows, long long ncols, int r, int c, int g, long long nbrows,
             const long long *__restrict__ row_ptr, const int *__restrict__ col_idx,
             const spx_value_t *__restrict__ val, const int *__restrict__ brp, int *__restrict__ bcol,
             spx_value_t *__restrict__ out) {
  spx_bsr_walk(nrows, ncols, r, c, g, nbrows, row_ptr, col_idx, (const spx_bits_t *)val, 0, 0, brp, bcol,
               (spx_bits_t *)out);
}

/* ---- Scan of 32-bit counts x[1..n] into pointers x[0..n] (x[0] = 0) -------------------------------
 * Tiles of blockDim.x * SPX_SCAN_ITEMS counts: spx_scan_sums sums each tile, spx_scan_tiles (one
 * block) turns the sums into each tile's start, spx_scan_apply writes the tile's pointers. The
 * host checks the total fits 32 bits before the last step. */
#define SPX_SCAN_ITEMS 8

/* The exclusive prefix of v over the block's threads, and in *total the block's sum. */
__device__ __forceinline__ long long spx_block_scan(long long v, long long *sh, long long *total) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  long long inc = v, before = 0, all = 0;
  for (int o = 1; o < 32; o <<= 1) {
    const long long y = __shfl_up_sync(SPX_FULL, inc, o);
    if (lane >= o) inc += y;
  }
  if (lane == 31) sh[wid] = inc;
  __syncthreads();
  for (int w = 0; w < nw; w++) {
    if (w < wid) before += sh[w];
    all += sh[w];
  }
  __syncthreads(); /* sh is free again */
  *total = all;
  return before + inc - v;
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_scan_sums(long long n, const int *__restrict__ x, long long *__restrict__ sums) {
  __shared__ long long sh[SPX_BLOCK / 32];
  const long long q0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * SPX_SCAN_ITEMS;
  long long v = 0, total;
  for (int t = 0; t < SPX_SCAN_ITEMS; t++)
    if (q0 + t < n) v += x[1 + q0 + t];
  spx_block_scan(v, sh, &total);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_scan_tiles(long long ntiles, long long *__restrict__ sums, long long *__restrict__ total) {
  __shared__ long long sh[SPX_BLOCK / 32];
  long long carry = 0;
  for (long long b = 0; b < ntiles; b += blockDim.x) {
    const long long t = b + threadIdx.x;
    long long all;
    const long long ex = spx_block_scan(t < ntiles ? sums[t] : 0, sh, &all);
    if (t < ntiles) sums[t] = carry + ex;
    carry += all;
  }
  if (threadIdx.x == 0) *total = carry;
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_scan_apply(long long n, int *__restrict__ x, const long long *__restrict__ sums) {
  __shared__ long long sh[SPX_BLOCK / 32];
  const long long q0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * SPX_SCAN_ITEMS;
  long long v[SPX_SCAN_ITEMS], run = 0, total;
#pragma unroll
  for (int t = 0; t < SPX_SCAN_ITEMS; t++) {
    v[t] = q0 + t < n ? x[1 + q0 + t] : 0;
    run += v[t];
  }
  run = spx_block_scan(run, sh, &total) + sums[blockIdx.x];
#pragma unroll
  for (int t = 0; t < SPX_SCAN_ITEMS; t++) {
    run += v[t];
    if (q0 + t < n) x[1 + q0 + t] = (int)run;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) x[0] = 0;
}
