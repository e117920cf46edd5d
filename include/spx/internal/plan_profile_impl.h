/* SPDX-License-Identifier: BSD-3-Clause */
/* The tuner's row profile (tuner.h): what the byte predictors and the model read of a matrix's
 * structure, and the row statistics the papers' rules read (B, R). Row lengths (the histogram, the
 * longest row, SS's runs, the idle lane-slots of each lane mapping) are read in full; the counts
 * that depend on columns (RBP's runs, BSR's blocks, SELL's slots, SELL16's spans, SDIA's
 * diagonals, x's sectors) read every window of 256 rows, or a sample of windows scaled up on large
 * matrices. It calls the CSR checks and SDIA's offset count (host.h), the upload pool's worker
 * count (cuda_types.h) and the plan trace (dmatrix.h); nothing of the tuner above it. */
#include <unistd.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "cuda_types.h"
#include "dmatrix.h"
#include "host.h"
#include "tuner.h"
#include "../analyze.h"
#include "../csr.h"

/* Distinct 32-byte sectors of x per nonzero, over 32-row slices: 1 when every nonzero gathers
 * its own sector (random columns), about 1/(row length) or less on a stencil. */
double spx__pprof_xsec(const spx__pprof *p) { return p->x_nnz > 0 ? (double)p->x_sectors / (double)p->x_nnz : 0; }

/* Rows a pass over row lengths takes at a time: their 32-bit lengths (a validated row has fewer
 * than 2^31 entries) sit in a buffer on the stack, and the loops over them vectorize where loops
 * over 64-bit row pointers do not; a multiple of the warp, so that no warp spans two. */
#define SPX__PPROF_CHUNK 4096

/* The row-length part of the profile from row_ptr: row_max, hist, ss_runs (SS's segments of 256),
 * sorted_kept and, with idle, the idle lane-slots when `warp` lanes run consecutive rows in lock
 * step: idle_row, a thread per row (warp rows a group); idle_csr, tpr lanes per row (warp / tpr
 * rows a group, tpr a power of two <= warp). Two passes, the longest row first (the histogram's
 * size); the histogram counts into four copies in turn, so that rows of one length do not each
 * wait for the previous count. Integer sums, exact in double whatever the threads' order. */
static spx_status spx__pprof_rows(const spx_csr *a, int warp, int tpr, int idle, spx__pprof *p) {
  const int64_t n = a->nrows, *ptr = a->row_ptr, nch = (n + SPX__PPROF_CHUNK - 1) / SPX__PPROF_CHUNK;
  const int64_t g = tpr > 0 && warp / tpr > 0 ? warp / tpr : 1, t = tpr > 0 ? tpr : 1;
  int64_t c, i, kept = 0, ends = 0, hn, ways, *h;
  int32_t rmax = 0;
  double i1 = 0, im = 0;
  idle = idle && warp > 1;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(max : rmax) \
    num_threads(spx__host_threads_for(n, SPX__HOST_GRAIN)) if (n > 65536)
#endif
  for (c = 0; c < nch; c++) {
    const int64_t r1 = SPX__MIN(n, (c + 1) * SPX__PPROF_CHUNK);
    int64_t r;
    int32_t mx = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(max : mx)
#endif
    for (r = c * SPX__PPROF_CHUNK; r < r1; r++) {
      const int32_t l = (int32_t)(ptr[r + 1] - ptr[r]);
      mx = l > mx ? l : mx;
    }
    rmax = mx > rmax ? mx : rmax;
  }
  p->row_max = rmax;
  hn = (int64_t)rmax + 1;
  ways = hn <= 65536 ? 4 : 1; /* beyond that many lengths, rarely one length after another */
  if (!(h = p->hist = (int64_t *)spx__calloc((size_t)(ways * hn), sizeof *h))) return SPX_OUT_OF_MEMORY;
  /* per-thread histograms (an array-section reduction) while they stay small */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : kept, ends, i1, im, h[:ways * hn]) \
    num_threads(spx__host_threads_for(n, SPX__HOST_GRAIN)) if (n > 65536 && ways * hn <= 65536)
#endif
  for (c = 0; c < nch; c++) {
    int32_t l[SPX__PPROF_CHUNK + 1];
    const int64_t r0 = c * SPX__PPROF_CHUNK, r1 = SPX__MIN(n, r0 + SPX__PPROF_CHUNK), m = r1 - r0;
    const int64_t m1 = r1 < n ? m + 1 : m; /* one row past the chunk: its neighbour */
    int64_t r, q;
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (r = 0; r < m1; r++) l[r] = (int32_t)(ptr[r0 + r + 1] - ptr[r0 + r]);
    if (ways == 4) {
      for (r = 0; r + 4 <= m; r += 4) {
        h[l[r]]++; h[hn + l[r + 1]]++; h[2 * hn + l[r + 2]]++; h[3 * hn + l[r + 3]]++;
      }
    } else {
      r = 0;
    }
    for (; r < m; r++) h[l[r]]++;
#if defined(_OPENMP)
#pragma omp simd reduction(+ : kept)
#endif
    for (r = 0; r < m1 - 1; r++) kept += l[r] == l[r + 1];
    /* a nonempty row's segments are ((e - 1) >> 8) - (b >> 8) + 1 = (e >> 8) - (b >> 8) + 1, less
     * one where e is a multiple of 256; the (e >> 8) - (b >> 8) of all rows sum to nnz >> 8 */
#if defined(_OPENMP)
#pragma omp simd reduction(+ : ends)
#endif
    for (r = 0; r < m; r++) ends += (l[r] > 0) & (((uint32_t)ptr[r0 + r + 1] & 255u) == 0);
    for (q = 0; idle && q < m; q += warp) {
      const int64_t qe = SPX__MIN(m, q + warp);
      int64_t gs, wsum = 0;
      int32_t wmax = 0;
      /* a group of tpr-lane rows takes ceil(its longest row / tpr) steps: one division a group */
      for (gs = q; gs < qe; gs += g) {
        const int64_t ge = SPX__MIN(qe, gs + g);
        int64_t gsum = 0;
        int32_t gmax = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(max : gmax) reduction(+ : gsum)
#endif
        for (r = gs; r < ge; r++) {
          gmax = l[r] > gmax ? l[r] : gmax;
          gsum += l[r];
        }
        im += (double)(((int64_t)gmax + t - 1) / t * t * (ge - gs) - gsum);
        wmax = gmax > wmax ? gmax : wmax;
        wsum += gsum;
      }
      i1 += (double)((int64_t)wmax * (qe - q) - wsum);
    }
  }
  for (i = 0; ways == 4 && i < hn; i++) h[i] += h[hn + i] + h[2 * hn + i] + h[3 * hn + i];
  p->ss_runs = n ? (ptr[n] >> 8) - (ptr[0] >> 8) + (n - h[0]) - ends : 0;
  p->sorted_kept = kept;
  p->idle_row = i1;
  p->idle_csr = im;
  return SPX_OK;
}

void spx__pprof_free(spx__pprof *p) { SPX_FREE(p->hist); p->hist = NULL; }

/* Above this many nonzeros the profile reads the columns of a sample of rows only: selection must
 * cost little next to the SpMVs it serves, and a pass over every column index of a 20M-nonzero
 * matrix costs as much as a few hundred of them. Row lengths (row_ptr) are always read in full,
 * so ELL's K, the histogram and the idle-lane terms stay exact. */
#define SPX__PLAN_SAMPLE_NNZ ((int64_t)1 << 20)
#define SPX__PLAN_SAMPLE_WINDOWS 64  /* windows of 256 rows (SELL's sigma), evenly spaced */
/* Dense rows take fewer windows (down to 16), so that a sample reads about this many nonzeros:
 * the passes cost per nonzero, and 64 windows of rows of ~60 nonzeros would outlast the upload
 * the sample runs beside (docs/performance.md, selection cost). */
#define SPX__PLAN_SAMPLE_BUDGET ((int64_t)1 << 18)

/* Whether the column profile of a reads a sample of windows rather than all of them. */
int spx__plan_sampled(const spx_csr *a) {
  return a->nnz > SPX__PLAN_SAMPLE_NNZ && (a->nrows + 255) / 256 > 4 * SPX__PLAN_SAMPLE_WINDOWS;
}

/* Windows a sample of a reads: SPX__PLAN_SAMPLE_WINDOWS, fewer for rows past 16 nonzeros. */
int spx__plan_sample_windows(const spx_csr *a) {
  int64_t per = a->nrows > 0 ? 256 * ((a->nnz + a->nrows - 1) / a->nrows) : 1, w;
  w = (SPX__PLAN_SAMPLE_BUDGET + per - 1) / SPX__MAX(per, 1);
  return (int)SPX__MAX(16, SPX__MIN(SPX__PLAN_SAMPLE_WINDOWS, w));
}

/* 1 when stamp *t is not this pass's g (a first visit), and stamps it: without a branch, which on
 * scattered columns would mispredict and cost most of the profile. */
static inline int64_t spx__stamp_new(int32_t *t, int32_t g) {
  const int64_t n = *t != g;
  *t = g;
  return n;
}

static int spx__i64_desc(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a < b) - (a > b);
}

/* Distinct blocks of b columns in rows [r0, r1): with stamp (one int32 per block column, zeroed
 * once, indexed from block column boff) a block counts when its stamp is not this call's *gen;
 * without, the rows' block columns are sorted in buf (room for the rows' nonzeros). Every nonzero
 * stamps its block (spx__stamp_new). The divisor is a constant in each case of the switch: a
 * run-time 64-bit division per nonzero would cost most of the profile. */
#define SPX__PLAN_BLOCKS_CASE(B)                                                              \
  case B:                                                                                     \
    for (k = a->row_ptr[r0]; k < a->row_ptr[r1]; k++) {                                       \
      u += spx__stamp_new(&stamp[(uint32_t)a->col_idx[k] / B - boff], g);                      \
    }                                                                                         \
    return u;
static int64_t spx__plan_blocks(const spx_csr *a, int64_t r0, int64_t r1, int64_t b, int64_t *buf, int32_t *stamp,
                                uint32_t boff, int32_t *gen) {
  int64_t m = 0, i, k, u = 0;
  if (stamp) { /* stamp[block column - boff] */
    int32_t g = ++*gen;
    switch (b) {
      SPX__PLAN_BLOCKS_CASE(1)
      SPX__PLAN_BLOCKS_CASE(2)
      SPX__PLAN_BLOCKS_CASE(3)
      SPX__PLAN_BLOCKS_CASE(4)
      SPX__PLAN_BLOCKS_CASE(5)
      SPX__PLAN_BLOCKS_CASE(6)
      SPX__PLAN_BLOCKS_CASE(7)
      SPX__PLAN_BLOCKS_CASE(8)
    default:
      for (k = a->row_ptr[r0]; k < a->row_ptr[r1]; k++) u += spx__stamp_new(&stamp[a->col_idx[k] / b - boff], g);
      return u;
    }
  }
  for (i = r0; i < r1; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) buf[m++] = a->col_idx[k] / b;
  if (!m) return 0;
  qsort(buf, (size_t)m, sizeof *buf, spx__i64_desc);
  for (k = 0; k < m; k++) u += !k || buf[k] != buf[k - 1];
  return u;
}
#undef SPX__PLAN_BLOCKS_CASE

/* The longest row SELL's sorted slots take from a count of the window's lengths; longer rows sort. */
#define SPX__SELL_COUNT_MAX 1024

/* SELL's slots (C = 32) over a window of sw rows sorted by length (sigma 256): each slice takes
 * its longest row, the length at ranks 0, 32, 64, ... in descending order, read off a count of
 * the lengths (a sort per window cost a third of the profile); a window with a row past the
 * count's reach sorts. */
static int64_t spx__sell_sorted_slots(const int64_t *len, int64_t sw) {
  int32_t cnt[SPX__SELL_COUNT_MAX + 1];
  int64_t i, v, m = 0, seen = 0, next = 0, slots = 0;
  for (i = 0; i < sw; i++) m = SPX__MAX(m, len[i]);
  if (m > SPX__SELL_COUNT_MAX) {
    int64_t l2[256];
    memcpy(l2, len, sizeof(int64_t) * (size_t)sw);
    qsort(l2, (size_t)sw, sizeof *l2, spx__i64_desc);
    for (i = 0; i < sw; i += 32) slots += 32 * l2[i];
    return slots;
  }
  memset(cnt, 0, sizeof *cnt * (size_t)(m + 1));
  for (i = 0; i < sw; i++) cnt[len[i]]++;
  for (v = m; v >= 0 && next < sw; v--)
    for (seen += cnt[v]; next < seen; next += 32) slots += 32 * v;
  return slots;
}

/* Offsets the profile counts per SDIA slice before it stops: past this many the slice is far over
 * any sensible fill (32 rows x 256 slots against a few hundred entries). */
#define SPX__SDIA_COUNT_MAX 256

/* The column-dependent counts over rows [w0, w1) (a window of 256 rows, or the whole matrix in
 * pieces): column runs (RBP), BSR blocks per square size, SELL slots and SELL16 column spans,
 * SDIA diagonals. */
static spx_status spx__pprof_cols(const spx_csr *a, int64_t w0, int64_t w1, spx__pprof *p, int64_t *buf,
                                  int32_t **stamps, int64_t *cap, int64_t most, int32_t *gen) {
  int64_t i, k, b, len[256], lo[256], hi[256], sw = w1 - w0, smin = INT64_MAX, smax = -1, nstamp = 0;
  int32_t *stamp = NULL;
  for (i = w0; i < w1; i++) {
    int64_t rb = a->row_ptr[i], e = a->row_ptr[i + 1], blocks = 0, bval = 0, c, was = 0;
    /* maximal runs of consecutive columns, counted without branches (on scattered columns the
     * branches mispredict, most of the pass): a nonzero continues a run when its column follows
     * its neighbour's; a run of two or more starts where continuing starts */
    for (k = rb + 1; k < e; k++) {
      c = a->col_idx[k] == a->col_idx[k - 1] + 1;
      blocks += c & !was;
      bval += c;
      was = c;
    }
    bval += blocks; /* each run's first nonzero */
    p->nnon += e - rb - bval;
    p->nblocks += blocks; p->nval += bval;
    p->max_blocks = SPX__MAX(p->max_blocks, blocks);
    p->max_bval = SPX__MAX(p->max_bval, bval);
    p->max_iso = SPX__MAX(p->max_iso, e - rb - bval);
    len[i - w0] = e - rb;
    /* columns are sorted within a row; an empty row's padding sits on its diagonal (ELL's rule) */
    lo[i - w0] = e > rb ? a->col_idx[rb] : (i < a->ncols ? i : a->ncols - 1);
    hi[i - w0] = e > rb ? a->col_idx[e - 1] : lo[i - w0];
  }
  /* BSR: the block rows of b rows that start in the window (whole ones); a sample reads the first
   * 64 rows of each window (BSR costs 8 passes, the rest one) and counts them 4 times. */
  /* The stamps cover the columns of the rows the block rows read (up to 8 past the window); a
   * wider span than the thread's stamps hold sorts instead. */
  for (i = w0; i < SPX__MIN(a->nrows, w1 + 8); i++)
    if (a->row_ptr[i + 1] > a->row_ptr[i]) {
      smin = SPX__MIN(smin, a->col_idx[a->row_ptr[i]]);
      smax = SPX__MAX(smax, a->col_idx[a->row_ptr[i + 1] - 1]);
    }
  /* The stamps this window indexes (spans, SDIA's offsets up to 32 rows further), grown on demand
   * and zeroed as they grow: a calloc of the most (4 MB) per thread would fault in and clear huge
   * pages beside the upload's copies, a large share of the sample's time. */
  if (smax >= 0 && smax - smin + 64 <= most) {
    int64_t need = smax - smin + 64;
    if (need > *cap) {
      int64_t nc = SPX__MIN(most, SPX__MAX(need, 2 * *cap));
      int32_t *t = (int32_t *)realloc(*stamps, (size_t)nc * sizeof *t);
      if (t) {
        memset(t + *cap, 0, (size_t)(nc - *cap) * sizeof *t);
        *stamps = t;
        *cap = nc;
      }
    }
    if (need <= *cap) { stamp = *stamps; nstamp = *cap; }
  }
  if (stamp && *gen > INT32_MAX - 1024) { memset(stamp, 0, sizeof *stamp * (size_t)nstamp); *gen = 0; }
  for (b = 1; b <= 8; b++) {
    int64_t bw1 = p->sampled ? SPX__MIN(w1, w0 + 64) : w1, got = 0;
    /* 1 x 1 blocks are the nonzeros (a row's columns are distinct): no pass */
    if (b == 1 && bw1 > w0) got = a->row_ptr[bw1] - a->row_ptr[w0];
    for (i = (w0 + b - 1) / b * b; b > 1 && i < bw1; i += b)
      got += spx__plan_blocks(a, i, SPX__MIN(i + b, a->nrows), b, buf, stamp, smax < 0 ? 0 : (uint32_t)(smin / b), gen);
    p->bsr_blocks[b] += p->sampled && bw1 > w0 ? got * (w1 - w0) / (bw1 - w0) : got;
  }
  /* SELL, C = 32: the window sorted by length (sigma 256), then slice by slice unsorted (sigma 1)
   * with SDIA's offsets and x's sectors of the same 32 rows */
  p->sell_slots[1] += spx__sell_sorted_slots(len, sw);
  for (i = 0; i < sw; i += 32) {
    int64_t w = 0, j, cmin = INT64_MAX, cmax = -1, r0 = w0 + i, r1 = SPX__MIN(w1, r0 + 32), u = 0, span;
    for (j = i; j < SPX__MIN(sw, i + 32); j++) {
      w = SPX__MAX(w, len[j]);
      cmin = SPX__MIN(cmin, lo[j]);
      cmax = SPX__MAX(cmax, hi[j]);
    }
    p->sell_slots[0] += w * 32;
    if (w > 0 && cmax - cmin > 65535) p->sell16_wide[0] = 1;
    /* SDIA's slice: its distinct offsets column - row, in [cmin - (r1 - 1), cmax - r0] */
    span = cmax - cmin + (r1 - r0);
    if (stamp && cmax >= 0 && span < nstamp) { /* one stamp per offset: O(1) a nonzero */
      int32_t g = ++*gen;
      int64_t base = cmin - (r1 - 1), q, kk;
      for (q = r0; q < r1; q++)
        for (kk = a->row_ptr[q]; kk < a->row_ptr[q + 1]; kk++)
          u += spx__stamp_new(&stamp[(int64_t)a->col_idx[kk] - q - base], g);
    } else /* a wide slice: sorted insertion into buf (room for the window's nonzeros) */
      u = spx__sdia_offsets(a, r0, r1, (int32_t *)buf, SPX__SDIA_COUNT_MAX);
    p->sdia_capped |= u > SPX__SDIA_COUNT_MAX;
    p->sdia_diags += u;
    p->sdia_slots += u * (r1 - w0 - i);
    /* the slice's distinct x sectors (32 bytes: 4 doubles, 8 floats); a sample counts the first
     * two slices of each window only (a ratio: fewer slices serve, and on random columns each
     * slice's stamps touch pages all over the stamp array) */
    if (cmax >= 0 && (!p->sampled || i < 64)) {
      int sh = SPX_DTYPE_SIZE(a->dtype) == 8 ? 2 : 3;
      int64_t sb = cmin >> sh, sspan = (cmax >> sh) - sb + 1, q, kk, m = 0, z = a->row_ptr[r1] - a->row_ptr[r0];
      u = 0;
      if (stamp && sspan < nstamp) {
        int32_t g = ++*gen;
        for (kk = a->row_ptr[r0]; kk < a->row_ptr[r1]; kk++)
          u += spx__stamp_new(&stamp[((int64_t)a->col_idx[kk] >> sh) - sb], g);
      } else if (z > 0) {
        for (kk = a->row_ptr[r0]; kk < a->row_ptr[r1]; kk++) buf[m++] = (int64_t)a->col_idx[kk] >> sh;
        qsort(buf, (size_t)m, sizeof *buf, spx__i64_desc);
        for (q = 0; q < m; q++) u += q == 0 || buf[q] != buf[q - 1];
      }
      p->x_sectors += u;
      p->x_nnz += z;
    }
  }
  { /* sigma 256 regroups rows inside the window: the window's span bounds every slice's */
    int64_t cmin = INT64_MAX, cmax = -1;
    for (i = 0; i < sw; i++) { cmin = SPX__MIN(cmin, lo[i]); cmax = SPX__MAX(cmax, hi[i]); }
    if (sw > 0 && cmax - cmin > 65535) p->sell16_wide[1] = 1;
    if (sw > 0 && cmax >= cmin) { p->x_span += cmax - cmin + 1; p->x_windows++; }
  }
  return SPX_OK;
}

/* The threads the column counts take beside the upload: the CPUs its pooled copies leave
 * (spx__h2d_workers_beside), at most 8; the pooled upload is fast enough that one thread would
 * outlast it. 1 without OpenMP. */
int spx__pprof_beside_threads(void) {
#if defined(_OPENMP)
  const long spare = spx__cpus() - spx__h2d_workers_beside() - 1;
  return (int)SPX__MAX(1, SPX__MIN((long)spx__host_threads(), SPX__MIN(spare, 8)));
#else
  return 1;
#endif
}

/* The column-dependent counts of p (nnon .. sdia_capped, sampled), window by window: every window,
 * or a sample scaled up. beside_upload: on a thread of its own beside the device profile's upload,
 * before the device has validated the CSR, so serial, and the rows it reads (each window and the
 * 8 rows past it) are checked first: SPX_INVALID_ARGUMENT, without a message, on a malformed one
 * (the caller's host validation names it). stop: see tuner.h. */
spx_status spx__pprof_columns(const spx_csr *a, int beside_upload, spx__pprof *p, atomic_int *stop) {
  int64_t nwin, w, rowmax_nnz = 0;
  nwin = (a->nrows + 255) / 256;
  p->sampled = spx__plan_sampled(a);
  {
    int64_t nw = p->sampled ? spx__plan_sample_windows(a) : nwin, rows = 0;
    for (w = 0; w < nw && beside_upload; w++) {
      int64_t w0 = (p->sampled ? w * nwin / nw : w) * 256;
      if (!spx__csr_rows_ok(a, w0, SPX__MIN(a->nrows, w0 + 256 + 8))) return SPX_INVALID_ARGUMENT;
    }
    for (w = 0; w < nw; w++) { /* room for the largest block row of 8 rows a window holds */
      int64_t w0 = (p->sampled ? w * nwin / nw : w) * 256, w1 = SPX__MIN(a->nrows, w0 + 256);
      int64_t e = a->nrows - w1 > 8 ? w1 + 8 : a->nrows, z = a->row_ptr[e] - a->row_ptr[w0];
      rowmax_nnz = SPX__MAX(rowmax_nnz, z);
    }
    /* Windows in parallel, each thread with its own counts, stamps (as many as the widest window
     * so far needs: a window spans few columns on most matrices) and sort buffer, merged at the
     * end: integer sums, so the result does not depend on the thread count. */
    {
      int64_t nstamp = SPX__MIN(a->ncols, (int64_t)1 << 20) + 1;
      int failed = 0;
#if defined(_OPENMP)
      const int nt = beside_upload ? spx__pprof_beside_threads() : spx__host_threads();
#pragma omp parallel reduction(+ : rows) reduction(| : failed) num_threads(nt) if (nt > 1 && nw >= 16)
#endif
      {
        spx__pprof loc;
        int32_t *stamp = NULL, gen = 0;
        int64_t *buf = (int64_t *)spx__alloc((size_t)rowmax_nnz + 1, sizeof *buf), ww, cap = 0;
        memset(&loc, 0, sizeof loc);
        loc.sampled = p->sampled;
        failed |= !buf;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 1) nowait
#endif
        for (ww = 0; ww < nw; ww++) {
          int64_t w0 = (p->sampled ? ww * nwin / nw : ww) * 256, w1 = SPX__MIN(a->nrows, w0 + 256);
          if (!buf || (stop && atomic_load_explicit(stop, memory_order_relaxed))) continue;
          spx__pprof_cols(a, w0, w1, &loc, buf, &stamp, &cap, nstamp + 64, &gen);
          rows += w1 - w0;
        }
#if defined(_OPENMP)
#pragma omp critical(spx__pprof_merge)
#endif
        {
          int b;
          p->nnon += loc.nnon; p->nblocks += loc.nblocks; p->nval += loc.nval;
          p->max_blocks = SPX__MAX(p->max_blocks, loc.max_blocks);
          p->max_bval = SPX__MAX(p->max_bval, loc.max_bval);
          p->max_iso = SPX__MAX(p->max_iso, loc.max_iso);
          for (b = 1; b <= 8; b++) p->bsr_blocks[b] += loc.bsr_blocks[b];
          p->sell_slots[0] += loc.sell_slots[0]; p->sell_slots[1] += loc.sell_slots[1];
          p->sell16_wide[0] |= loc.sell16_wide[0]; p->sell16_wide[1] |= loc.sell16_wide[1];
          p->sdia_diags += loc.sdia_diags; p->sdia_slots += loc.sdia_slots; p->sdia_capped |= loc.sdia_capped;
          p->x_sectors += loc.x_sectors; p->x_nnz += loc.x_nnz; p->x_span += loc.x_span; p->x_windows += loc.x_windows;
        }
        SPX_FREE(stamp);
        SPX_FREE(buf);
      }
      if (failed) { spx__pprof_free(p); return SPX_OUT_OF_MEMORY; }
      if (stop && atomic_load(stop)) return SPX_OK; /* stopped: the counts are partial */
    }
    if (p->sampled && rows > 0) { /* per-row averages of the sample, for every row */
      double f = (double)a->nrows / (double)rows;
      int b;
      p->nblocks = (int64_t)(f * (double)p->nblocks + 0.5);
      p->nval = (int64_t)(f * (double)p->nval + 0.5);
      p->nnon = (int64_t)(f * (double)p->nnon + 0.5);
      for (b = 1; b <= 8; b++) p->bsr_blocks[b] = (int64_t)(f * (double)p->bsr_blocks[b] + 0.5);
      p->sell_slots[0] = (int64_t)(f * (double)p->sell_slots[0] + 0.5);
      p->sell_slots[1] = (int64_t)(f * (double)p->sell_slots[1] + 0.5);
      p->sdia_diags = (int64_t)(f * (double)p->sdia_diags + 0.5);
      p->sdia_slots = (int64_t)(f * (double)p->sdia_slots + 0.5);
    }
  }
  p->cols_done = 1;
  return SPX_OK;
}

/* The CSR kernel's threads per row: a power of two near a fifth of the mean row. */
int spx__plan_tpr(const spx_csr *a) {
  double mean = a->nrows ? (double)a->nnz / (double)a->nrows : 0;
  int t = 1;
  while (t < 32 && 2.0 * t <= mean / 5.0) t *= 2;
  return t;
}

/* full 0: row lengths only (what a forced cuSPARSE candidate needs); 1: everything; 2: all but the
 * column counts (spx__plan_candidates reads them when they pay). given (may be NULL): the
 * row-length part already measured on the device (row_max, hist, ss_runs, sorted_kept, idle_row,
 * idle_csr), and the column counts when given->cols_done. */
spx_status spx__pprof_make(const spx_csr *a, int warp, int full, const spx__pprof *given, spx__pprof *p) {
  spx_status s;
  const int tr = spx__plan_tracing(); /* the model's passes, under the plan's trace */
  double tl = spx__now();
#define SPX__PPROF_TRACE(what)                                                                         \
  do {                                                                                                 \
    if (tr) fprintf(stderr, "spx plan:   %-8s %8.3f ms\n", what, 1e3 * (spx__now() - tl)); \
    tl = spx__now();                                                                                   \
  } while (0)
  memset(p, 0, sizeof *p);
  p->n = a->nrows; p->ncols = a->ncols; p->nnz = a->nnz;
  if (given) { /* everything it holds; the histogram is the caller's, so copied */
    *p = *given;
    p->idle_sorted = 0; /* recomputed from the histogram below */
    if (!(p->hist = (int64_t *)spx__alloc((size_t)given->row_max + 1, sizeof *p->hist))) return SPX_OUT_OF_MEMORY;
    memcpy(p->hist, given->hist, ((size_t)given->row_max + 1) * sizeof *p->hist);
  } else {
    p->tpr = spx__plan_tpr(a);
    if ((s = spx__pprof_rows(a, warp, p->tpr, full != 0, p))) return s;
  }
  SPX__PPROF_TRACE("rows");
  if (!full) return SPX_OK;
  if (full == 1 && !p->cols_done && (s = spx__pprof_columns(a, 0, p, NULL))) {
    spx__pprof_free(p);
    return s;
  }
  SPX__PPROF_TRACE("columns");
  /* Sorted rows: walk the histogram from the longest down, warps of `warp` rows. */
  if (warp > 1) {
    int64_t len = p->row_max, left = 0, in = 0, mx = 0, sum = 0;
    for (; len >= 0; len--) {
      left = p->hist[len];
      if (in > 0 && left > 0) { /* top up the open warp */
        int64_t take = SPX__MIN(left, warp - in);
        in += take; sum += take * len; left -= take;
        if (in == warp) { p->idle_sorted += (double)(mx * warp - sum); in = 0; sum = 0; }
      }
      /* whole warps of this one length idle nowhere: skip them in one step (a row at a time
       * would be most of the model on millions of rows) */
      left %= warp;
      if (left > 0) { mx = len; in = left; sum = left * len; }
    }
    if (in) p->idle_sorted += (double)(mx * in - sum);
  }
  if (given) p->tpr = spx__plan_tpr(a);
  SPX__PPROF_TRACE("idle");
#undef SPX__PPROF_TRACE
  return SPX_OK;
}

void spx__plan_rowstats_finish(const spx_csr *a, double sq, spx_analysis *an) {
  if (a->nrows) {
    an->row_mean = (double)a->nnz / (double)a->nrows;
    an->row_stddev = spx__sqrt(SPX__MAX(0.0, sq / (double)a->nrows - an->row_mean * an->row_mean));
  }
  an->B = a->nnz ? (double)an->row_max / an->row_mean : 0;
  an->R = a->nrows && a->ncols ? (double)a->nnz / ((double)a->nrows * (double)a->ncols) : 0;
}

/* The same from a profile's histogram (p->hist, p->row_max of a): no pass over the rows. The sums
 * are of integers, so the numbers are spx__plan_rowstats' to the bit. */
void spx__plan_rowstats_of(const spx_csr *a, const spx__pprof *p, spx_analysis *an) {
  double t0 = spx__now();
  int64_t l, sq = 0;
  memset(an, 0, sizeof *an);
  an->nrows = a->nrows; an->ncols = a->ncols; an->nnz = a->nnz;
  for (l = p->row_max; l >= 0; l--)
    if (p->hist[l]) {
      an->row_min = l;
      sq += p->hist[l] * l * l;
    }
  an->row_max = a->nrows ? p->row_max : 0;
  an->empty_rows = a->nrows ? p->hist[0] : 0;
  spx__plan_rowstats_finish(a, (double)sq, an);
  an->seconds = spx__now() - t0;
}

/* The part of spx_analyze the strategies read (row lengths: B, R), from row_ptr alone: the full
 * analysis walks every column and the transpose, which costs more than the choice is worth. a is
 * validated (spx_csr_validate). */
void spx__plan_rowstats(const spx_csr *a, spx_analysis *an) {
  double t0 = spx__now();
  int64_t i, sq = 0; /* integer sums: exact, and no chain of dependent floating-point adds */
  memset(an, 0, sizeof *an);
  an->nrows = a->nrows; an->ncols = a->ncols; an->nnz = a->nnz;
  { /* a validated row (strictly increasing columns in [0, ncols), ncols < 2^31) has fewer than 2^31
     * entries: 32-bit lanes, whose min and max vectorize where 64-bit ones do not (x86-64's
     * baseline); this pass is on every small plan's setup */
    const int64_t nb = (a->nrows + 4095) / 4096, *ptr = a->row_ptr;
    int32_t mn = a->nrows ? INT32_MAX : 0, mx = 0;
    int64_t empty = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : mn) reduction(max : mx) reduction(+ : empty, sq) \
    num_threads(spx__host_threads_for(a->nrows, SPX__HOST_GRAIN)) if (a->nrows > 16384)
#endif
    for (i = 0; i < nb; i++) { /* blocks of 4096 rows, each a vector loop */
      const int64_t e = SPX__MIN(a->nrows, 4096 * (i + 1));
      int64_t r;
#if defined(_OPENMP)
#pragma omp simd reduction(min : mn) reduction(max : mx) reduction(+ : empty, sq)
#endif
      for (r = 4096 * i; r < e; r++) {
        const int32_t l = (int32_t)(ptr[r + 1] - ptr[r]);
        mn = l < mn ? l : mn;
        mx = l > mx ? l : mx;
        empty += l == 0;
        sq += (int64_t)l * l;
      }
    }
    an->row_min = mn; an->row_max = mx; an->empty_rows = empty;
  }
  spx__plan_rowstats_finish(a, (double)sq, an);
  an->seconds = spx__now() - t0;
}
