/* SPDX-License-Identifier: BSD-3-Clause */
/* convert.cu: CSR -> SELL-C-sigma, SELL16, SDIA, BSR, ELL, ELL-R and JDS on the device, so that a
 * plan (or a time-stepping code handing in a new matrix) converts at device bandwidth instead of on
 * the host. Every result is the host converter's, array for array (tests compare them).
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
 * ELL / ELL-R and JDS: spx_rows_max finds the longest row (and checks the row pointers, and the
 * columns of a CSR not staged: a bad one is left to the host path, which reports it). ELL:
 * spx_ell_fill, a thread per row, writes its k slots column-major (padding as SELL's, an entry's
 * -0.0 stored as +0.0; ELL-R its length too).
 * JDS: a stable counting sort of the rows by length, longest first, ties in row order (the host's):
 * per 8-bit digit of longest - length, least significant first, spx_jds_count counts each tile's
 * digits, a scan (spx_scan_*) makes them positions and spx_jds_scatter moves the rows; then
 * spx_jds_diags finds each jagged diagonal's length (a binary search over the sorted lengths), a
 * scan makes jd_ptr and spx_jds_fill, a thread per sorted position, writes its row's entries at
 * jd_ptr[d] + p (values moved as they are: JDS has no padding).
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

/* ---- ELL, ELL-R and JDS ------------------------------------------------------------------------- */

/* Grid-stride: acc[0] = the longest row (atomicMax, one per warp), acc[1] = 1 when row_ptr[0] != 0,
 * row_ptr[n] != nnz, a row pointer is below the one before it, or (col_idx non-NULL) a column is
 * outside [0, ncols): what the host's check refuses (the converter then leaves the matrix to the
 * host path, which reports it). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_rows_max(long long nrows, long long ncols, long long nnz, const long long *__restrict__ row_ptr,
             const int *__restrict__ col_idx, unsigned long long *__restrict__ acc) {
  const long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
  unsigned long long m = 0;
  int bad = 0;
  for (long long i = t0; i < nrows; i += step) {
    const long long b = row_ptr[i], e = row_ptr[i + 1];
    if (e < b || (i == 0 && b != 0) || (i == nrows - 1 && e != nnz)) bad = 1;
    else if ((unsigned long long)(e - b) > m) m = (unsigned long long)(e - b);
  }
  for (long long k = t0; col_idx && k < nnz; k += step) bad |= col_idx[k] < 0 || col_idx[k] >= ncols;
  for (int o = 16; o; o >>= 1) {
    const unsigned long long w = __shfl_xor_sync(SPX_FULL, m, o);
    m = w > m ? w : m;
  }
  bad = __ballot_sync(SPX_FULL, bad) != 0;
  if ((threadIdx.x & 31) == 0) {
    if (m) atomicMax(&acc[0], m);
    if (bad) atomicOr(&acc[1], 1ull);
  }
}

/* ELL (ELL-R: rl non-NULL): one thread per row i, its k slots at i + j*nrows (a warp writes 32
 * consecutive slots per j): the entries, then padding -0.0 on the row's last column (an empty
 * row's on min(i, ncols - 1)); k >= the longest row. 64-bit slots: nrows * k may pass 2^31. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_ell_fill(long long nrows, long long ncols, int k, const long long *__restrict__ row_ptr,
             const int *__restrict__ col_idx, const spx_value_t *__restrict__ val, int *__restrict__ col,
             spx_value_t *__restrict__ out, int *__restrict__ rl) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows) return;
  const long long rb = row_ptr[i];
  const int len = (int)(row_ptr[i + 1] - rb);
  const int pc = len > 0 ? col_idx[rb + len - 1] : (int)(i < ncols ? i : ncols - 1);
  const spx_bits_t *vb = (const spx_bits_t *)val;
  spx_bits_t *ob = (spx_bits_t *)out;
  for (int j = 0; j < k; j++) {
    const long long s = i + (long long)j * nrows;
    col[s] = j < len ? col_idx[rb + j] : pc;
    ob[s] = j < len ? spx_entry(vb[rb + j]) : SPX_PAD_BITS;
  }
  if (rl) rl[i] = len;
}

/* JDS's counting sort: positions in tiles of SPX_JDS_TILE, a block each; the key of row r is
 * longest - its length (ascending: longest first), sorted one 8-bit digit a pass. */
#define SPX_JDS_TILE 2048
#define SPX_JDS_BINS 256

__device__ __forceinline__ int spx_jds_digit(const long long *__restrict__ row_ptr, long long r, long long longest,
                                             int shift) {
  return (int)(((longest - (row_ptr[r + 1] - row_ptr[r])) >> shift) & (SPX_JDS_BINS - 1));
}

/* The lanes of this warp that are `on` with this lane's digit dg (every lane of the warp calls it). */
__device__ __forceinline__ unsigned spx_jds_peers(int on, int dg) {
  unsigned same = __ballot_sync(SPX_FULL, on);
  for (int b = 0; b < 8; b++) {
    const unsigned m = __ballot_sync(SPX_FULL, (dg >> b) & 1);
    same &= (dg >> b) & 1 ? m : ~m;
  }
  return same;
}

/* Pass 1: hist[1 + digit * ntiles + tile] = the tile's positions (of perm_in; rows in order when
 * NULL) with that digit; digit-major, so a scan makes each the first position its rows move to.
 * One shared atomic per digit a warp meets (rows of one length, the common case, would serialize
 * on one counter). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_jds_count(long long nrows, long long longest, int shift, long long ntiles, const long long *__restrict__ row_ptr,
              const int *__restrict__ perm_in, int *__restrict__ hist) {
  __shared__ int h[SPX_JDS_BINS];
  const long long t0 = (long long)blockIdx.x * SPX_JDS_TILE;
  const int lane = threadIdx.x & 31;
  for (int d = threadIdx.x; d < SPX_JDS_BINS; d += blockDim.x) h[d] = 0;
  __syncthreads();
  for (int u = 0; u < SPX_JDS_TILE; u += blockDim.x) { /* the bound is the block's: every lane ballots */
    const long long q = t0 + u + threadIdx.x;
    const int on = u + (int)threadIdx.x < SPX_JDS_TILE && q < nrows;
    const int dg = on ? spx_jds_digit(row_ptr, perm_in ? perm_in[q] : q, longest, shift) : 0;
    const unsigned same = spx_jds_peers(on, dg);
    if (on && lane == __ffs(same) - 1) atomicAdd(&h[dg], __popc(same));
  }
  __syncthreads();
  for (int d = threadIdx.x; d < SPX_JDS_BINS; d += blockDim.x) hist[1 + (long long)d * ntiles + blockIdx.x] = h[d];
}

/* Pass 2 (stable): the row at position q of the tile goes to perm_out[off[digit * ntiles + tile] +
 * the tile's positions before q with its digit]. Rounds of one position a thread, in order; in a
 * round a warp ranks its lanes by ballots over the digit's bits, and the warps before add theirs
 * (wc); run[d] carries each digit's count past the rounds done. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_jds_scatter(long long nrows, long long longest, int shift, long long ntiles, const long long *__restrict__ row_ptr,
                const int *__restrict__ perm_in, const int *__restrict__ off, int *__restrict__ perm_out) {
  __shared__ int run[SPX_JDS_BINS];
  __shared__ int wc[SPX_BLOCK / 32][SPX_JDS_BINS];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const long long t0 = (long long)blockIdx.x * SPX_JDS_TILE;
  for (int d = threadIdx.x; d < SPX_JDS_BINS; d += blockDim.x) run[d] = off[(long long)d * ntiles + blockIdx.x];
  for (int u = 0; u < SPX_JDS_TILE; u += blockDim.x) {
    const long long q = t0 + u + threadIdx.x;
    const int on = u + (int)threadIdx.x < SPX_JDS_TILE && q < nrows;
    const int r = on ? (perm_in ? perm_in[q] : (int)q) : 0;
    const int dg = on ? spx_jds_digit(row_ptr, r, longest, shift) : 0;
    const unsigned same = spx_jds_peers(on, dg);
    for (int d = threadIdx.x; d < SPX_JDS_BINS; d += blockDim.x)
      for (int v = 0; v < nw; v++) wc[v][d] = 0;
    __syncthreads();
    if (on && lane == __ffs(same) - 1) wc[w][dg] = __popc(same);
    __syncthreads();
    if (on) {
      int pos = run[dg] + __popc(same & ((1u << lane) - 1));
      for (int v = 0; v < w; v++) pos += wc[v][dg];
      perm_out[pos] = r;
    }
    __syncthreads();
    /* column d of wc is this thread's alone here and in the next round's zeroing: no barrier */
    for (int d = threadIdx.x; d < SPX_JDS_BINS; d += blockDim.x)
      for (int v = 0; v < nw; v++) run[d] += wc[v][d];
  }
}

/* One thread per jagged diagonal d < njd: its length (the rows longer than d: the first sorted
 * position whose row is at most d long, by binary search, as lengths never increase along perm)
 * into jd[1 + d], which a scan makes jd_ptr. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_jds_diags(long long nrows, long long njd, const long long *__restrict__ row_ptr, const int *__restrict__ perm,
              int *__restrict__ jd) {
  const long long d = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= njd) return;
  long long lo = 0, hi = nrows; /* positions before lo: longer than d; from hi on: not */
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2, r = perm[mid];
    if (row_ptr[r + 1] - row_ptr[r] > d) lo = mid + 1;
    else hi = mid;
  }
  jd[1 + d] = (int)lo;
}

/* One thread per sorted position p: entry d of its row at jd_ptr[d] + p (a warp writes 32
 * consecutive slots per diagonal), values as they are (no padding, so -0.0 stays). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_jds_fill(long long nrows, const long long *__restrict__ row_ptr, const int *__restrict__ col_idx,
             const spx_value_t *__restrict__ val, const int *__restrict__ perm, const int *__restrict__ jd_ptr,
             int *__restrict__ col, spx_value_t *__restrict__ out) {
  const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= nrows) return;
  const long long r = perm[p], rb = row_ptr[r];
  const int len = (int)(row_ptr[r + 1] - rb);
  const spx_bits_t *vb = (const spx_bits_t *)val;
  spx_bits_t *ob = (spx_bits_t *)out;
  for (int d = 0; d < len; d++) {
    const long long s = (long long)jd_ptr[d] + p;
    col[s] = col_idx[rb + d];
    ob[s] = vb[rb + d];
  }
}
