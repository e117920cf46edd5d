/* SPDX-License-Identifier: BSD-3-Clause */
/* The auto-tuner (spx/plan.h): candidates, byte predictors, the cost model, the heuristics of the
 * two papers, the trial, calibration, plans and re-selection. */
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "config.h"
#include "../plan.h"
#include "../cuda.h"
#include "../baseline.h"
#include "../gen.h"

/* ---- Strategies ------------------------------------------------------------------------------ */
static const char *const spx__plan_snames[] = {
#define SPX__PS_NAME(e, name, what) name,
    SPX_PLAN_STRATEGIES(SPX__PS_NAME)
#undef SPX__PS_NAME
};
static const char *const spx__plan_sdescs[] = {
#define SPX__PS_DESC(e, name, what) what,
    SPX_PLAN_STRATEGIES(SPX__PS_DESC)
#undef SPX__PS_DESC
};

const char *spx_plan_strategy_name(spx_plan_strategy s) {
  return (int)s >= 0 && s < SPX_PLAN_STRATEGY_COUNT ? spx__plan_snames[s] : "unknown";
}
const char *spx_plan_strategy_description(spx_plan_strategy s) {
  return (int)s >= 0 && s < SPX_PLAN_STRATEGY_COUNT ? spx__plan_sdescs[s] : "";
}

static int spx__plan_ieq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, y = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
    if (x != y) return 0;
  }
  return *a == *b;
}

/* A forced name that means the cuSPARSE engine (NULL: none forced). */
static int spx__plan_names_cusparse(const char *name) {
  return name && (spx__plan_ieq(name, "cusparse") || spx__plan_ieq(name, "cusparse_csr"));
}

spx_status spx_plan_strategy_parse(const char *name, spx_plan_strategy *out) {
  int i;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_strategy_parse: NULL argument");
  for (i = 0; i < SPX_PLAN_STRATEGY_COUNT; i++)
    if (spx__plan_ieq(name, spx__plan_snames[i])) { *out = (spx_plan_strategy)i; return SPX_OK; }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown strategy \"%s\" (auto, kubota, mps, trial, model)", name);
}

void spx_plan_options_default(spx_plan_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->strategy = SPX_PLAN_AUTO;
  o->expected_calls = 1000;
  o->backend = SPX_BACKEND_AUTO;
  o->dtype = -1;
  o->trial_reps = 20;
  o->trial_share = 0.02;
  /* H100, the large set: the top two's predictions lie 2-6% apart where the trial can change the
   * choice (ct2010, bayer10, power-law) and 16-32% apart elsewhere, where the model's choice was
   * the oracle's; a trial there only cost (26 ms inside a 13-iteration BiCGSTAB on cage10 once the
   * calibration priced it at the share's edge). */
  o->trial_gap = 1.1;
  o->convert_margin = 0.05;
}

/* ---- The row structure the predictors read ---------------------------------------------------- */
typedef struct spx__pprof {
  int64_t n, ncols, nnz, row_max;
  int64_t *hist;       /* hist[len]: rows of length len, 0 .. row_max */
  int64_t nblocks, nval, nnon, max_blocks, max_bval; /* column runs (RBP) */
  int64_t ss_runs;     /* row pieces of SS with its default segment */
  double idle_row;     /* idle lane-slots of one thread per row, warps of consecutive rows */
  double idle_sorted;  /* the same with rows sorted by length (JDS) */
  double idle_csr;     /* the CSR vector kernel's groups (tpr lanes per row) */
  int tpr;
  int64_t bsr_blocks[9];  /* [b]: blocks of b x b (BSR) */
  int64_t sell_slots[2];  /* SELL with C = 32: slots with sigma 1, sigma 256 */
  int sell16_wide[2];     /* some slice spans more than 65536 columns (sigma 1); some window (256) */
  int64_t sdia_diags;     /* SDIA with C = 32: diagonals summed over the slices */
  int64_t sdia_slots;     /* ... times each slice's real rows */
  int sdia_capped;        /* some slice has over SPX__SDIA_COUNT_MAX offsets (counts are lower bounds) */
  int sampled;            /* the column counts above are a sample scaled up (estimates) */
  int64_t sorted_kept;    /* rows i with len(i + 1) == len(i): still neighbours once sorted by length */
  int64_t x_sectors;      /* distinct 32-byte sectors of x each 32-row slice reads, summed ... */
  int64_t x_nnz;          /* ... over slices holding this many nonzeros (their ratio: x locality) */
  int64_t x_span;         /* columns from the first to the last one of each 256-row window, summed ... */
  int64_t x_windows;      /* ... over this many windows */
  int cols_done;          /* the column counts above are filled (spx__pprof_columns) */
} spx__pprof;

/* Distinct 32-byte sectors of x per nonzero, over 32-row slices: 1 when every nonzero gathers
 * its own sector (random columns), about 1/(row length) or less on a stencil. */
static double spx__pprof_xsec(const spx__pprof *p) { return p->x_nnz > 0 ? (double)p->x_sectors / (double)p->x_nnz : 0; }

/* Idle lane-slots when `warp` lanes run `warp/tpr` consecutive rows, tpr lanes each, in lock step. */
static double spx__plan_idle(const spx_csr *a, int warp, int tpr) {
  int64_t g = warp / tpr > 0 ? warp / tpr : 1, i, j;
  double idle = 0;
  if (warp <= 1) return 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 2048) private(j) reduction(+ : idle) num_threads(spx__host_threads()) if (a->nrows > 65536)
#endif
  for (i = 0; i < a->nrows; i += g) {
    int64_t steps = 0, sum = 0, e = SPX__MIN(a->nrows, i + g);
    for (j = i; j < e; j++) {
      int64_t l = a->row_ptr[j + 1] - a->row_ptr[j];
      steps = SPX__MAX(steps, (l + tpr - 1) / tpr);
      sum += l;
    }
    idle += (double)(steps * tpr * (e - i) - sum);
  }
  return idle;
}

static void spx__pprof_free(spx__pprof *p) { SPX_FREE(p->hist); p->hist = NULL; }

/* Above this many nonzeros the profile reads the columns of a sample of rows only: selection must
 * cost little next to the SpMVs it serves, and a pass over every column index of a 20M-nonzero
 * matrix costs as much as a few hundred of them. Row lengths (row_ptr) are always read in full,
 * so ELL's K, the histogram and the idle-lane terms stay exact. */
#define SPX__PLAN_SAMPLE_NNZ ((int64_t)1 << 20)
#define SPX__PLAN_SAMPLE_WINDOWS 64  /* windows of 256 rows (SELL's sigma), evenly spaced */
/* Dense rows take fewer windows (down to 16), so that a sample reads about this many nonzeros:
 * the passes cost per nonzero, and 64 windows of bcsstk16 x69 (59 a row, ~1M nonzeros) took 4.3
 * ms beside a 3 ms upload on the H100 host, where Poisson's 64 windows read 115K. */
#define SPX__PLAN_SAMPLE_BUDGET ((int64_t)1 << 18)

/* Whether the column profile of a reads a sample of windows rather than all of them. */
static int spx__plan_sampled(const spx_csr *a) {
  return a->nnz > SPX__PLAN_SAMPLE_NNZ && (a->nrows + 255) / 256 > 4 * SPX__PLAN_SAMPLE_WINDOWS;
}

/* Windows a sample of a reads: SPX__PLAN_SAMPLE_WINDOWS, fewer for rows past 16 nonzeros. */
static int spx__plan_sample_windows(const spx_csr *a) {
  int64_t per = a->nrows > 0 ? 256 * ((a->nnz + a->nrows - 1) / a->nrows) : 1, w;
  w = (SPX__PLAN_SAMPLE_BUDGET + per - 1) / SPX__MAX(per, 1);
  return (int)SPX__MAX(16, SPX__MIN(SPX__PLAN_SAMPLE_WINDOWS, w));
}

static int spx__i64_desc(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a < b) - (a > b);
}

/* Distinct blocks of b columns in rows [r0, r1): with stamp (one int32 per block column, zeroed
 * once, indexed from block column boff) a block counts when its stamp is not this call's *gen;
 * without, the rows' block columns
 * are sorted in buf (room for the rows' nonzeros). Columns are sorted within a row, so a row's
 * repeats of one block column are adjacent and skipped before the stamp is touched. The divisor is
 * a constant in each case of the switch: a run-time 64-bit division per nonzero cost most of the
 * profile (measured: 9 ms of a 10 ms model on a 27M-nonzero elasticity matrix). */
#define SPX__PLAN_BLOCKS_CASE(B)                                                              \
  case B:                                                                                     \
    for (i = r0; i < r1; i++) {                                                               \
      uint32_t prev = UINT32_MAX;                                                             \
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {                                   \
        uint32_t bc = (uint32_t)a->col_idx[k] / B - boff;                                     \
        if (bc == prev) continue;                                                             \
        prev = bc;                                                                            \
        if (stamp[bc] != g) { stamp[bc] = g; u++; }                                           \
      }                                                                                       \
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
      for (i = r0; i < r1; i++)
        for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
          int32_t *t = &stamp[a->col_idx[k] / b - boff];
          if (*t != g) { *t = g; u++; }
        }
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

/* Offsets the profile counts per SDIA slice before it stops: past this many the slice is far over
 * any sensible fill (32 rows x 256 slots against a few hundred entries). */
#define SPX__SDIA_COUNT_MAX 256

/* The column-dependent counts over rows [w0, w1) (a window of 256 rows, or the whole matrix in
 * pieces): column runs (RBP), BSR blocks per square size, SELL slots and SELL16 column spans,
 * SDIA diagonals. */
static spx_status spx__pprof_cols(const spx_csr *a, int64_t w0, int64_t w1, spx__pprof *p, int64_t *buf,
                                  int32_t **stamps, int64_t *cap, int64_t most, int32_t *gen) {
  int64_t i, k, b, len[256], lo[256], hi[256], sw = w1 - w0, sig, smin = INT64_MAX, smax = -1, nstamp = 0;
  int32_t *stamp = NULL;
  for (i = w0; i < w1; i++) {
    int64_t rb = a->row_ptr[i], e = a->row_ptr[i + 1], blocks = 0, bval = 0;
    for (k = rb; k < e;) { /* maximal runs of consecutive columns */
      int64_t r = k + 1;
      while (r < e && a->col_idx[r] == a->col_idx[r - 1] + 1) r++;
      if (r - k >= 2) { blocks++; bval += r - k; }
      else p->nnon++;
      k = r;
    }
    p->nblocks += blocks; p->nval += bval;
    p->max_blocks = SPX__MAX(p->max_blocks, blocks);
    p->max_bval = SPX__MAX(p->max_bval, bval);
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
   * and zeroed as they grow: a calloc of the most (4 MB) per thread faulted in and cleared huge
   * pages, a third of the sample's time, beside the upload's copies. */
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
    for (i = (w0 + b - 1) / b * b; i < bw1; i += b)
      got += spx__plan_blocks(a, i, SPX__MIN(i + b, a->nrows), b, buf, stamp, smax < 0 ? 0 : (uint32_t)(smin / b), gen);
    p->bsr_blocks[b] += p->sampled && bw1 > w0 ? got * (w1 - w0) / (bw1 - w0) : got;
  }
  /* SELL, C = 32: unsorted slices (sigma 1), then the window sorted by length (sigma 256). */
  for (sig = 0; sig < 2; sig++) {
    int64_t l2[256];
    memcpy(l2, len, sizeof(int64_t) * (size_t)sw);
    if (sig) qsort(l2, (size_t)sw, sizeof *l2, spx__i64_desc);
    for (i = 0; i < sw; i += 32) {
      int64_t w = 0, j, cmin = INT64_MAX, cmax = -1;
      for (j = i; j < SPX__MIN(sw, i + 32); j++) {
        w = SPX__MAX(w, l2[j]);
        if (!sig) { cmin = SPX__MIN(cmin, lo[j]); cmax = SPX__MAX(cmax, hi[j]); }
      }
      p->sell_slots[sig] += w * 32;
      if (!sig && w > 0 && cmax - cmin > 65535) p->sell16_wide[0] = 1;
      if (!sig) { /* SDIA's slice: its distinct offsets column - row, in [cmin - (r1 - 1), cmax - r0] */
        int64_t r0 = w0 + i, r1 = SPX__MIN(w1, r0 + 32), u = 0, span = cmax - cmin + (r1 - r0);
        if (stamp && cmax >= 0 && span < nstamp) { /* one stamp per offset: O(1) a nonzero */
          int32_t g = ++*gen;
          int64_t base = cmin - (r1 - 1), q, kk;
          for (q = r0; q < r1; q++)
            for (kk = a->row_ptr[q]; kk < a->row_ptr[q + 1]; kk++) {
              int32_t *t = &stamp[(int64_t)a->col_idx[kk] - q - base];
              if (*t != g) { *t = g; u++; }
            }
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
            for (kk = a->row_ptr[r0]; kk < a->row_ptr[r1]; kk++) {
              int32_t *t = &stamp[((int64_t)a->col_idx[kk] >> sh) - sb];
              if (*t != g) { *t = g; u++; }
            }
          } else if (z > 0) {
            for (kk = a->row_ptr[r0]; kk < a->row_ptr[r1]; kk++) buf[m++] = (int64_t)a->col_idx[kk] >> sh;
            qsort(buf, (size_t)m, sizeof *buf, spx__i64_desc);
            for (q = 0; q < m; q++) u += q == 0 || buf[q] != buf[q - 1];
          }
          p->x_sectors += u;
          p->x_nnz += z;
        }
      }
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

/* The column-dependent counts of p (nnon .. sdia_capped, sampled), window by window: every window,
 * or a sample scaled up. beside_upload: on a thread of its own beside the device profile's upload,
 * before the device has validated the CSR, so serial, and the rows it reads (each window and the
 * 8 rows past it) are checked first: SPX_INVALID_ARGUMENT, without a message, on a malformed one
 * (the caller's host validation names it). */
static spx_status spx__pprof_columns(const spx_csr *a, int beside_upload, spx__pprof *p) {
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
      /* beside the upload, the CPUs its pooled copies leave (spx__h2d_workers_beside): the upload runs at
       * 30 GB/s since the pool, so one thread here (4-7 ms on 20M nonzeros) came to outlast it */
      int nt = spx__host_threads();
      if (beside_upload) {
        long spare = sysconf(_SC_NPROCESSORS_ONLN) - spx__h2d_workers_beside() - 1;
        nt = (int)SPX__MAX(1, SPX__MIN((long)nt, SPX__MIN(spare, 8)));
      }
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
          if (!buf) continue;
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
static int spx__plan_tpr(const spx_csr *a) {
  double mean = a->nrows ? (double)a->nnz / (double)a->nrows : 0;
  int t = 1;
  while (t < 32 && 2.0 * t <= mean / 5.0) t *= 2;
  return t;
}

/* full 0: row lengths only (what a forced cuSPARSE candidate needs); 1: everything; 2: all but the
 * column counts (spx__plan_candidates reads them when they pay). given (may be NULL): the
 * row-length part already measured on the device (row_max, hist, ss_runs, sorted_kept, idle_row,
 * idle_csr), and the column counts when given->cols_done. */
static spx_status spx__pprof_make(const spx_csr *a, int warp, int full, const spx__pprof *given, spx__pprof *p) {
  int64_t i;
  spx_status s;
  const int tr = spx__plan_tracing(); /* the model's passes, under the plan's trace */
  double tl = spx__now();
#define SPX__PPROF_TRACE(what)                                                                         \
  do {                                                                                                 \
    if (tr) fprintf(stderr, "spx plan:   %-8s %8.3f ms\n", what, 1e3 * (spx__now() - tl)); \
    tl = spx__now();                                                                                   \
  } while (0)
  enum { seg = 256 }; /* SS's default segment; a constant, so the per-row divisions are shifts */
  memset(p, 0, sizeof *p);
  p->n = a->nrows; p->ncols = a->ncols; p->nnz = a->nnz;
  if (given) { /* everything it holds; the histogram is the caller's, so copied */
    *p = *given;
    if (!(p->hist = (int64_t *)spx__alloc((size_t)given->row_max + 1, sizeof *p->hist))) return SPX_OUT_OF_MEMORY;
    memcpy(p->hist, given->hist, ((size_t)given->row_max + 1) * sizeof *p->hist);
  } else {
    int64_t rmax = 0, runs = 0, kept = 0, *h;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 8192) reduction(max : rmax) num_threads(spx__host_threads()) if (a->nrows > 65536)
#endif
    for (i = 0; i < a->nrows; i++) rmax = SPX__MAX(rmax, a->row_ptr[i + 1] - a->row_ptr[i]);
    p->row_max = rmax;
    if (!(h = p->hist = (int64_t *)spx__calloc((size_t)rmax + 1, sizeof *p->hist))) return SPX_OUT_OF_MEMORY;
    /* Per-thread histograms (an array-section reduction) while they stay small. */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 8192) reduction(+ : runs, kept, h[:rmax + 1]) num_threads(spx__host_threads()) \
    if (a->nrows > 65536 && rmax < 65536)
#endif
    for (i = 0; i < a->nrows; i++) {
      int64_t b = a->row_ptr[i], e = a->row_ptr[i + 1];
      h[e - b]++;
      if (e > b) runs += ((e - 1) >> 8) - (b >> 8) + 1; /* / seg, for the non-negative offsets */
      kept += i + 1 < a->nrows && a->row_ptr[i + 2] - e == e - b;
    }
    p->ss_runs = runs;
    p->sorted_kept = kept;
  }
  SPX__PPROF_TRACE("rows");
  if (!full) return SPX_OK;
  if (full == 1 && !p->cols_done && (s = spx__pprof_columns(a, 0, p))) {
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
       * cost 0.24 ms on 2M rows, most of the model) */
      left %= warp;
      if (left > 0) { mx = len; in = left; sum = left * len; }
    }
    if (in) p->idle_sorted += (double)(mx * in - sum);
  }
  p->tpr = spx__plan_tpr(a);
  if (!given) {
    p->idle_row = spx__plan_idle(a, warp, 1);
    p->idle_csr = spx__plan_idle(a, warp, p->tpr);
  }
  SPX__PPROF_TRACE("idle");
#undef SPX__PPROF_TRACE
  return SPX_OK;
}

/* ---- Byte predictors ------------------------------------------------------------------------
 * One per format spx knows the layout of, keyed by registry name: the bytes spx_fmt_bytes would
 * give after conversion with default parameters, from the row structure alone (tests check they are
 * equal). A format without one is converted to learn its bytes. `map` says how lanes meet rows,
 * which picks the imbalance term: FLAT (nonzeros spread evenly: COO, SS), PADDED (padding already
 * in the bytes: ELL, SELL), ROW (a thread per row in row order), SORTED (rows sorted: JDS), CSR
 * (the vector kernel's lanes per row). */
enum { SPX__MAP_FLAT, SPX__MAP_PADDED, SPX__MAP_ROW, SPX__MAP_SORTED, SPX__MAP_CSR };

typedef int64_t (*spx__pred_fn)(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb);

/* A parameter's descriptor default by name (SPX_AUTO when the format decides, or has none). */
static int64_t spx__plan_pdef(const spx_format_vtable *vt, const char *name) {
  int i;
  for (i = 0; i < vt->layout->nparams; i++)
    if (!strcmp(vt->layout->params[i].name, name)) return vt->layout->params[i].def;
  return SPX_AUTO;
}

static int64_t spx__pb_coo(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return p->nnz * (8 + vb);
}
static int64_t spx__pb_csr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return 4 * (p->n + 1) + p->nnz * (4 + vb);
}
static int64_t spx__pb_ell(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t k = spx__plan_pdef(vt, "k");
  return p->n * (k == SPX_AUTO ? p->row_max : k) * (4 + vb);
}
static int64_t spx__pb_ell_r(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return p->n * p->row_max * (4 + vb) + 4 * p->n;
}
static int64_t spx__pb_jds(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return 4 * p->n + 4 * (p->row_max + 1) + p->nnz * (4 + vb);
}
/* HYB's ELL width: the parameter, or Bell and Garland's rule as the converter applies it. */
static int64_t spx__plan_hyb_k(const spx__pprof *p, const spx_format_vtable *vt) {
  int64_t k = spx__plan_pdef(vt, "k"), rows = p->n, i;
  if (k != SPX_AUTO) return k;
  for (i = 0; i < p->row_max; i++) {
    rows -= p->hist[i];
    if (3 * rows < p->n || rows < 4096) return i;
  }
  return p->row_max;
}
static int64_t spx__pb_hyb(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t k = spx__plan_hyb_k(p, vt), i, ncoo = 0;
  for (i = k + 1; i <= p->row_max; i++) ncoo += p->hist[i] * (i - k);
  return p->n * k * (4 + vb) + ncoo * (8 + vb);
}
static int64_t spx__pb_ss(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t seg = spx__plan_pdef(vt, "seg"), nseg;
  if (seg != 256) return -1; /* the profile counted runs for 256 */
  nseg = (p->nnz + seg - 1) / seg;
  return nseg * seg * (8 + vb) + 4 * p->ss_runs + 4 * (nseg + 1);
}
static int64_t spx__pb_rbp_csr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return vb * p->nval + 8 * p->nblocks + 12 * (p->n + 1) + (vb + 4) * p->nnon;
}
static int64_t spx__pb_rbp_ell(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  (void)vt; return vb * p->n * p->max_bval + 8 * p->n * p->max_blocks + 4 * (p->n + 1) + (vb + 4) * p->nnon;
}
static int64_t spx__pb_rbp_ell_r(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  return spx__pb_rbp_ell(p, vt, vb) + 4 * p->n;
}

/* SELL-C-sigma and SELL16 with C = 32 and sigma 1 or 256 (the descriptors' defaults); another C
 * or sigma has no predictor (converted to learn its bytes). */
static int64_t spx__pb_sell(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t c = spx__plan_pdef(vt, "c"), sigma = spx__plan_pdef(vt, "sigma");
  if (c != 32 || (sigma != 1 && sigma != 256)) return -1;
  return (sigma > 1 ? 4 * p->n : 0) + 4 * ((p->n + c - 1) / c + 1) + p->sell_slots[sigma > 1] * (4 + vb);
}
/* -2: the converter would decline (a slice spans more than 16 bits of columns). */
static int64_t spx__pb_sell16(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t c = spx__plan_pdef(vt, "c"), sigma = spx__plan_pdef(vt, "sigma"), slot = 2 + vb, ns = (p->n + c - 1) / c;
  if (c != 32 || (sigma != 1 && sigma != 256 && sigma != SPX_AUTO)) return -1;
  if (sigma == SPX_AUTO) /* the converter's rule: sort only when it saves more than the perm array */
    sigma = p->n > 1 && p->sell_slots[1] * slot + 4 * p->n < p->sell_slots[0] * slot ? 256 : 1;
  /* A wide slice seen (even in a sample: its windows are real slices) means the converter declines. */
  if (sigma == 1 && p->sell16_wide[0]) return -2;
  /* Sorted windows: the window's span only bounds its slices'. A whole profile lets the converter
   * decide; a sampled one declines too (converting a large matrix to find out costs seconds). */
  if (sigma > 1 && p->sell16_wide[1]) return p->sampled ? -2 : -1;
  return (sigma > 1 ? 4 * p->n : 0) + 4 * (ns + 1) + 4 * ns + p->sell_slots[sigma > 1] * slot;
}
/* BSR's square block of least bytes (ties to the smaller), as the converter picks; its bytes. */
static int64_t spx__plan_bsr_best(const spx__pprof *p, int64_t vb, int64_t *bytes_out) {
  int64_t b, best = -1, bb = 1;
  for (b = 1; b <= 8; b++) {
    int64_t bytes = 4 * ((p->n + b - 1) / b + 1) + 4 * p->bsr_blocks[b] + vb * p->bsr_blocks[b] * b * b;
    if (best < 0 || bytes < best) { best = bytes; bb = b; }
  }
  if (bytes_out) *bytes_out = best;
  return bb;
}
static int64_t spx__pb_bsr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t bytes;
  if (spx__plan_pdef(vt, "r") != SPX_AUTO || spx__plan_pdef(vt, "c") != SPX_AUTO) return -1;
  spx__plan_bsr_best(p, vb, &bytes);
  return bytes;
}

/* SDIA with C = 32: -2 when the converter would decline (over its fill limit; capped counts are
 * lower bounds, so over stays over), -1 (convert to learn) when a sample lands near the limit or a
 * slice was not counted out. */
static int64_t spx__pb_sdia(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb) {
  int64_t c = spx__plan_pdef(vt, "c"), mf = spx__plan_pdef(vt, "max_fill"), ns = (p->n + 31) / 32;
  if (c != 32 || mf < 1) return -1;
  if (p->sdia_slots > mf * p->nnz) return -2;
  if (p->sdia_capped || (p->sampled && 10 * p->sdia_slots > 9 * mf * p->nnz)) return -1;
  return 4 * (ns + 1) + p->sdia_diags * (4 + 32 * vb);
}

/* The longest serial walk one thread of a format's kernel makes, in steps of the device's chain_ns:
 * NONE (nonzeros spread evenly over threads: COO, SS, cuSPARSE), ROW (a thread walks a whole row,
 * or its slice's widest: factor x the longest row), HYB (its ELL part's width K), CSR (the vector
 * kernel's lanes per row; none where the kernel balances by nonzeros). The factors (a step's cost
 * against ELL-R's: SELL16 decodes offsets, RBP-ELL reads two arrays a step, RBP-CSR walks runs,
 * BSR blocks) were fitted on the fit half of the shared matrices (bench/corpus/split.tsv). */
enum { SPX__CHAIN_NONE, SPX__CHAIN_ROW, SPX__CHAIN_HYB, SPX__CHAIN_CSR };

/* Predictors by registry name. _(name, predictor or NULL, lane mapping, kernel launches, reads the
 * column counts (estimates when the profile is sampled), why the converter declines when the
 * predictor says -2, serial walk, its factor) */
#define SPX__SPAN_NOTE "a slice spans more than 65536 columns"
#define SPX__FILL_NOTE "the slices' diagonals exceed sdia_max_fill slots per nonzero"
#define SPX__PLAN_PREDICTORS(_)                                                                                        \
  _("coo",       spx__pb_coo,        SPX__MAP_FLAT,   2, 0, NULL,           SPX__CHAIN_NONE, 0.0)  \
  _("csr",       spx__pb_csr,        SPX__MAP_CSR,    1, 0, NULL,           SPX__CHAIN_CSR,  1.0)  \
  _("ell",       spx__pb_ell,        SPX__MAP_PADDED, 1, 0, NULL,           SPX__CHAIN_ROW,  1.0)  \
  _("ell_r",     spx__pb_ell_r,      SPX__MAP_ROW,    1, 0, NULL,           SPX__CHAIN_ROW,  1.0)  \
  _("jds",       spx__pb_jds,        SPX__MAP_SORTED, 1, 0, NULL,           SPX__CHAIN_ROW,  1.05) \
  _("sell",      spx__pb_sell,       SPX__MAP_PADDED, 1, 1, NULL,           SPX__CHAIN_ROW,  1.0)  \
  _("sell16",    spx__pb_sell16,     SPX__MAP_PADDED, 1, 1, SPX__SPAN_NOTE, SPX__CHAIN_ROW,  1.45) \
  _("bsr",       spx__pb_bsr,        SPX__MAP_FLAT,   1, 1, NULL,           SPX__CHAIN_ROW,  0.48) \
  _("hyb",       spx__pb_hyb,        SPX__MAP_PADDED, 2, 0, NULL,           SPX__CHAIN_HYB,  1.0)  \
  _("rbp_csr",   spx__pb_rbp_csr,    SPX__MAP_ROW,    1, 1, NULL,           SPX__CHAIN_ROW,  0.6)  \
  _("rbp_ell",   spx__pb_rbp_ell,    SPX__MAP_ROW,    1, 1, NULL,           SPX__CHAIN_ROW,  1.7)  \
  _("rbp_ell_r", spx__pb_rbp_ell_r,  SPX__MAP_ROW,    1, 1, NULL,           SPX__CHAIN_ROW,  1.75) \
  _("ss",        spx__pb_ss,         SPX__MAP_FLAT,   2, 0, NULL,           SPX__CHAIN_NONE, 0.0)  \
  _("sdia",      spx__pb_sdia,       SPX__MAP_PADDED, 1, 1, SPX__FILL_NOTE, SPX__CHAIN_ROW,  1.0)

typedef struct spx__plan_pred {
  const char *name;
  spx__pred_fn fn;
  int map, launches, cols;
  const char *declines;
  int chain;
  double chain_factor;
} spx__plan_pred;

static const spx__plan_pred spx__plan_preds[] = {
#define SPX__PP_ROW(name, fn, map, launches, cols, declines, chain, cf) {name, fn, map, launches, cols, declines, chain, cf},
    SPX__PLAN_PREDICTORS(SPX__PP_ROW)
#undef SPX__PP_ROW
    /* the sentinel (a registered format without a predictor): a thread per row, the safe guess */
    {NULL, NULL, SPX__MAP_FLAT, 1, 0, NULL, SPX__CHAIN_ROW, 1.0}};

static const spx__plan_pred *spx__plan_pred_of(const char *name) {
  const spx__plan_pred *q;
  for (q = spx__plan_preds; q->name; q++)
    if (!strcmp(q->name, name)) return q;
  return q; /* the sentinel: no predictor, flat mapping, one launch */
}

/* The device's step of a serial walk when the description leaves it 0: an H100's, fitted on the fit
 * half of the shared matrices (a thread walking a row of L nonzeros adds about L x 90 ns). */
#define SPX__PLAN_CHAIN_NS 90.0
/* Blocks of 256 threads an SM holds at once (2048 threads): a long row holds its block's slot. */
#define SPX__PLAN_BLOCK_SLOTS 8

/* What every format's serial walk shares, counted once per selection: the rounds in which the
 * blocks holding a long row (over half the longest) take the device's block slots, and the steps
 * of CSR's kernel (0 where it balances by nonzeros; spx_csr_kernel_options' choice). */
typedef struct spx__plan_walk {
  int64_t rounds;
  double csr_steps;
  int csr_balanced;
} spx__plan_walk;

static void spx__plan_walk_make(const spx_plan_device *d, const spx__pprof *p, spx__plan_walk *w) {
  spx_dmatrix_options o;
  int64_t l, nlong = 0, blocks, slots;
  memset(w, 0, sizeof *w);
  w->rounds = 1;
  if (d->warp <= 1 || !p->hist || p->n == 0) return;
  if (spx_csr_kernel_options(p->n, p->nnz, p->hist, p->row_max, &o) == SPX_OK) {
    w->csr_balanced = o.stream || o.load_balance;
    if (!w->csr_balanced) {
      int tpr = o.threads_per_row > 0 ? o.threads_per_row : 1;
      w->csr_steps = (double)((p->row_max + tpr - 1) / tpr);
      /* a small matrix's kernel widens its lanes per row until the longest takes ~8 steps (kernels_impl.h) */
      if (p->nnz < SPX__CSR_SMALL_NNZ && w->csr_steps > 8) w->csr_steps = 8;
    }
  }
  spx_clear_error();
  for (l = p->row_max / 2 + 1; l <= p->row_max; l++) nlong += p->hist[l];
  blocks = SPX__MIN(nlong, (p->n + 255) / 256);
  slots = (int64_t)d->sms * SPX__PLAN_BLOCK_SLOTS;
  if (slots > 0) w->rounds = SPX__MAX(1, (blocks + slots - 1) / slots); /* SM count unknown: one round */
}

/* Microseconds of the longest serial walk of format q's kernel on p (0 on the host, and for
 * formats that spread nonzeros evenly): rounds x its steps x chain_ns. */
static double spx__plan_chain_us(const spx_plan_device *d, const spx__pprof *p, const spx__plan_walk *w,
                                 const spx__plan_pred *q, const spx_format_vtable *vt) {
  double steps = 0, ns = d->chain_ns > 0 ? d->chain_ns : SPX__PLAN_CHAIN_NS;
  if (d->warp <= 1 || !p->hist || p->n == 0) return 0;
  switch (q->chain) {
  case SPX__CHAIN_ROW: steps = (double)p->row_max; break;
  case SPX__CHAIN_HYB: steps = (double)spx__plan_hyb_k(p, vt); break;
  case SPX__CHAIN_CSR: steps = w->csr_steps; break;
  default: return 0;
  }
  return 1e-3 * (double)w->rounds * steps * q->chain_factor * ns;
}

/* ---- Device descriptions ------------------------------------------------------------------------ */
spx_status spx_plan_device_default(spx_context *ctx, spx_plan_device *d) {
  spx_device_info info;
  if (!d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_default: NULL argument");
  memset(d, 0, sizeof *d);
  if (ctx && spx_context_backend(ctx) == SPX_BACKEND_CUDA) {
    spx_status s = spx_context_device_info(ctx, &info);
    if (s) return s;
    snprintf(d->name, sizeof d->name, "%.63s", info.name);
    /* An SpMV kernel reaches about 80 % of the DDR peak on recent parts. */
    d->bandwidth_gbs = info.peak_bandwidth_gbs > 0 ? 0.8 * info.peak_bandwidth_gbs : 500;
    d->launch_us = 4;
    d->imbalance_weight = 0.5;
    d->x_miss = 0.25;
    d->cache_bytes = info.l2_bytes > 0 ? info.l2_bytes : 4 << 20;
    d->warp = 32;
    d->cusparse_factor = 1.1;
    d->h2d_gbs = 12;
    d->convert_ns_per_byte = 1.0;
    d->convert_ns_per_nnz = 1.0;
    d->jit_ms = 5;
    d->memory_bytes = info.free_mem > 0 ? info.free_mem : info.total_mem;
    d->chain_ns = SPX__PLAN_CHAIN_NS;
    d->sms = info.sm_count;
    return SPX_OK;
  }
  snprintf(d->name, sizeof d->name, "host");
  d->bandwidth_gbs = 10;
  d->launch_us = 0.5;
  d->imbalance_weight = 0;
  d->x_miss = 0.25;
  d->cache_bytes = 32 << 20;
  d->warp = 1;
  d->cusparse_factor = 1;
  d->convert_ns_per_byte = 1.0;
  d->convert_ns_per_nnz = 1.0;
  return SPX_OK;
}

/* Device JSON: one flat object of numbers and the name; fields unknown to this reader are ignored. */
#define SPX__PLAN_DEV_FIELDS(_)                                          \
  _(bandwidth_gbs,       double)                                         \
  _(launch_us,           double)                                         \
  _(imbalance_weight,    double)                                         \
  _(x_miss,              double)                                         \
  _(cache_bytes,         int64_t)                                        \
  _(warp,                int)                                            \
  _(cusparse_factor,     double)                                         \
  _(h2d_gbs,             double)                                         \
  _(convert_ns_per_byte, double)                                         \
  _(convert_ns_per_nnz,  double)                                         \
  _(jit_ms,              double)                                         \
  _(memory_bytes,        int64_t)                                        \
  _(gather_cusparse,     double)                                         \
  _(gather_default,      double)                                         \
  _(chain_ns,            double)                                         \
  _(sms,                 int)                                            \
  _(calibrated,          int)

/* The calibration file's contents as last loaded or saved by this process, keyed by its path. */
static pthread_mutex_t spx__calib_lock = PTHREAD_MUTEX_INITIALIZER;
static spx_plan_device spx__calib;
static char spx__calib_path[1400];
static int spx__calib_have;
static void spx__calib_keep(const char *path, const spx_plan_device *d) {
  pthread_mutex_lock(&spx__calib_lock);
  snprintf(spx__calib_path, sizeof spx__calib_path, "%s", path);
  spx__calib = *d;
  spx__calib_have = 1;
  pthread_mutex_unlock(&spx__calib_lock);
}

spx_status spx_plan_device_save(const char *path, const spx_plan_device *d) {
  FILE *f;
  spx_file *out;
  const char *c;
  spx_status s;
  if (!path || !d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_save: NULL argument");
  pthread_mutex_lock(&spx__calib_lock); /* a file rewritten is read again */
  spx__calib_have = 0;
  pthread_mutex_unlock(&spx__calib_lock);
  /* private: a link planted at path is replaced, never written through */
  if ((s = spx_file_create(path, 1, &out))) return s;
  f = spx_file_stream(out);
  fprintf(f, "{\n  \"name\": \"");
  for (c = d->name; *c; c++) fputc(*c == '"' || *c == '\\' ? '_' : *c, f);
  fprintf(f, "\"");
#define SPX__PD_W(field, type) fprintf(f, ",\n  \"" #field "\": %.9g", (double)d->field);
  SPX__PLAN_DEV_FIELDS(SPX__PD_W)
#undef SPX__PD_W
  {
    int k;
    for (k = 0; k < spx_format_count() && k < SPX_FORMAT_MAX; k++) {
      const char *nm = spx_format_name((spx_format)k);
      if (d->format_factor[k] > 0) fprintf(f, ",\n  \"factor_%s\": %.9g", nm, d->format_factor[k]);
      if (d->format_convert_ns[k] > 0) fprintf(f, ",\n  \"convert_%s\": %.9g", nm, d->format_convert_ns[k]);
      if (d->format_staged_convert_ns[k] > 0) fprintf(f, ",\n  \"staged_convert_%s\": %.9g", nm, d->format_staged_convert_ns[k]);
      if (d->format_factor_block[k] > 0) fprintf(f, ",\n  \"blockfactor_%s\": %.9g", nm, d->format_factor_block[k]);
      if (d->format_gather[k] > 0) fprintf(f, ",\n  \"gather_%s\": %.9g", nm, d->format_gather[k]);
    }
  }
  fprintf(f, "\n}\n");
  return spx_file_commit(out);
}

/* The number after "key": in text, or 0 when absent. */
static int spx__plan_json_num(const char *text, const char *key, double *v) {
  char pat[80];
  const char *p;
  char *end;
  snprintf(pat, sizeof pat, "\"%s\"", key);
  if (!(p = strstr(text, pat))) return 0;
  p += strlen(pat);
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (*p++ != ':') return 0;
  *v = strtod(p, &end);
  return end != p;
}

/* Integer fields: a number outside the type's range (or not finite) is a parse error, not a cast
 * with undefined behaviour. */
static int spx__plan_num_ok(double v, int is_int, int bits) {
  double lim = bits == 32 ? 2147483647.0 : 9.2e18;
  if (v - v != 0) return 0; /* NaN or infinite */
  return !is_int || (v >= -lim && v <= lim);
}

spx_status spx_plan_device_parse(const char *text, const char *what, spx_plan_device *d) {
  const char *p;
  double v;
  int k;
  if (!text || !d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_parse: NULL argument");
  if (!what) what = "tuner file";
  memset(d, 0, sizeof *d);
  if ((p = strstr(text, "\"name\"")) && (p = strchr(p + 6, '"'))) {
    size_t i = 0;
    for (p++; *p && *p != '"' && i + 1 < sizeof d->name; p++) d->name[i++] = *p;
    d->name[i] = 0;
  }
#define SPX__PD_R(field, type)                                                                          \
  if (!spx__plan_json_num(text, #field, &v)) return spx__fail(SPX_PARSE, "%s: no \"%s\"", what, #field); \
  /* (type)0.5 == 0: an integer field (int: 32 bits, int64_t: 64) */                                     \
  if (!spx__plan_num_ok(v, (type)0.5 == 0, sizeof(type) == 4 ? 32 : 64))                                   \
    return spx__fail(SPX_PARSE, "%s: \"%s\" = %g is out of range", what, #field, v);                       \
  d->field = (type)v;
  SPX__PLAN_DEV_FIELDS(SPX__PD_R)
#undef SPX__PD_R
  for (k = 0; k < spx_format_count() && k < SPX_FORMAT_MAX; k++) { /* optional, by format name; finite */
    char key[80];
    snprintf(key, sizeof key, "factor_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_factor[k] = v;
    snprintf(key, sizeof key, "convert_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_convert_ns[k] = v;
    snprintf(key, sizeof key, "staged_convert_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_staged_convert_ns[k] = v;
    snprintf(key, sizeof key, "blockfactor_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_factor_block[k] = v;
    snprintf(key, sizeof key, "gather_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_gather[k] = v;
  }
  if (!(d->bandwidth_gbs > 0) || d->warp < 1 || d->launch_us < 0)
    return spx__fail(SPX_PARSE, "%s: bandwidth_gbs, warp and launch_us out of range", what);
  return SPX_OK;
}

spx_status spx_plan_device_load(const char *path, spx_plan_device *d) {
  FILE *f;
  char text[16384];
  size_t n;
  if (!path || !d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_load: NULL argument");
  if (!(f = fopen(path, "r"))) return spx__fail(SPX_IO, "%s: cannot open: %s", path, strerror(errno));
  n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  return spx_plan_device_parse(text, path, d);
}

const char *spx_plan_device_path(const char *device_name) {
  static SPX__THREAD_LOCAL char path[1400];
  const char *root = spx_jit_cache_dir(), *c;
  char name[80];
  size_t i = 0;
  if (!root || !device_name) return NULL;
  for (c = device_name; *c && i + 1 < sizeof name; c++)
    name[i++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ? *c : '_';
  name[i] = 0;
  /* v10: uploads through the pinned pool (h2d_gbs 4-5x the pageable path's, and every rate with an
   * upload in it); v9: staged_convert_NAME; v8: random-gather costs (gather_NAME, gather_cusparse, gather_default); v7: SDIA and BSR convert on the device (their rates are spx_dmatrix_convert's, upload
   * included); v6: host BSR and SDIA conversion 2-10x faster (their rates measured again); v5:
   * SDIA and the cache-streaming loads (every factor measured again); v4: block formats also
   * calibrated on an elasticity matrix (v3: SELL and SELL16 conversion rates the device
   * converter's; v2: the host's; v1 files read the L2). */
  if (snprintf(path, sizeof path, "%s/tuner/v11/%s.json", root, name) >= (int)sizeof path) return NULL;
  return path;
}

/* mkdir -p of the directory part of path. */
static void spx__plan_mkdirs(const char *path) {
  char d[1400];
  size_t i;
  snprintf(d, sizeof d, "%s", path);
  for (i = 1; d[i]; i++)
    if (d[i] == '/') { d[i] = 0; mkdir(d, 0700); d[i] = '/'; }
}

/* ---- The model ---------------------------------------------------------------------------------- */
/* Predicted microseconds per SpMV for a format storing `bytes`, with `idle` idle lane-slots. */
static double spx__plan_time_us(const spx_plan_device *d, const spx__pprof *p, int64_t vb, int64_t bytes,
                                double idle, int launches) {
  double bpus = d->bandwidth_gbs * 1e3; /* bytes per microsecond */
  double moved = (double)bytes + (double)(vb * (p->ncols + p->n));
  if (p->ncols * vb > d->cache_bytes) moved += d->x_miss * (double)(p->nnz * vb);
  return d->launch_us * launches + moved / bpus + d->imbalance_weight * idle * (double)(4 + vb) / bpus;
}

/* Host nanoseconds per nonzero of the column profile on one thread (runs, 8 block sizes, SELL's
 * slots, SDIA's offsets, x sectors: measured 26-49 on the build machine's Xeon). */
#define SPX__PLAN_COLS_NS 30.0
/* Whether the column profile pays: its priced cost (the windows it reads, one thread) at most
 * `share` of the work `calls` SpMVs do on the CSR baseline as the model prices it from the rows. */
static int spx__plan_columns_pay(const spx_csr *a, const spx_plan_device *d, const spx__pprof *p, int64_t calls,
                                 double share) {
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype);
  double read = (double)a->nnz, work_ms;
  if (spx__plan_sampled(a)) read = (double)spx__plan_sample_windows(a) * 256.0 * (double)a->nnz / (double)a->nrows;
  work_ms = 1e-3 * (double)calls * spx__plan_time_us(d, p, vb, spx__pb_csr(p, NULL, vb), 0, 1);
  return 1e-6 * SPX__PLAN_COLS_NS * read <= share * work_ms;
}

/* Random-gather microseconds of p at d's bandwidth (see spx_plan_device.format_gather): 0 on the
 * host, and on matrices whose windows stay within a small part of the cache. */
static double spx__plan_gather_us(const spx_plan_device *d, const spx__pprof *p, int64_t vb) {
  double span, reach;
  if (d->warp <= 1 || p->x_windows == 0 || d->cache_bytes <= 0 || !(d->bandwidth_gbs > 0)) return 0;
  span = (double)p->x_span / (double)p->x_windows * (double)vb;
  reach = span >= (double)d->cache_bytes ? 1.0 : span / (double)d->cache_bytes;
  return (double)p->nnz * 32.0 * spx__pprof_xsec(p) * reach / (d->bandwidth_gbs * 1e3);
}

/* Formats spx_dmatrix_convert converts on the device (their calibrated rate covers the upload):
 * SELL, SELL16, SDIA and BSR (cuda_impl.h). */
static int spx__plan_on_device(int cuda, int f) { return cuda && spx__device_converts(f); }

/* Conversion (host, or device) + upload + one compile, milliseconds; f < 0: no format-specific rate. */
static double spx__plan_conv_ms(const spx_plan_device *d, const spx__pprof *p, int64_t bytes, int cuda, int f) {
  int known = f >= 0 && f < SPX_FORMAT_MAX && d->format_convert_ns[f] > 0;
  double ms = known ? 1e-6 * d->format_convert_ns[f] * (double)bytes
                    : 1e-6 * (d->convert_ns_per_nnz * (double)p->nnz + d->convert_ns_per_byte * (double)bytes);
  if (d->h2d_gbs > 0 && !(known && spx__plan_on_device(cuda, f))) ms += (double)bytes / (d->h2d_gbs * 1e6);
  if (cuda) ms += d->jit_ms;
  return ms;
}

/* A plan that wraps the CSR as it is (cuSPARSE's, or spx's kernel on the staged arrays): narrowing
 * the row pointers, the upload, and `fixed_ms` (a handle and work buffer, or a kernel compile). */
static double spx__plan_wrap_ms(const spx_plan_device *d, const spx__pprof *p, int64_t bytes, double fixed_ms) {
  return 1e-6 * d->convert_ns_per_nnz * (double)p->n + (d->h2d_gbs > 0 ? (double)bytes / (d->h2d_gbs * 1e6) : 0) + fixed_ms;
}

static void spx__plan_score(spx_plan_candidate *c, int64_t calls) {
  c->score_us = c->predicted_us + 1e3 * c->convert_ms / (double)(calls > 0 ? calls : 1);
}

/* cuSPARSE CSR as a candidate: the CSR's bytes at the device's streaming model times its factor,
 * plus its gather; no host conversion besides narrowing the row pointers, a handle and a buffer. */
static void spx__plan_cusparse_cand(const spx_plan_device *d, const spx__pprof *p, int64_t vb, double gather,
                                    int64_t limit, int64_t vec, int64_t calls, spx_plan_candidate *c) {
  memset(c, 0, sizeof *c);
  c->format = SPX_FORMAT_CSR;
  c->engine = SPX_PLAN_ENGINE_CUSPARSE;
  c->measured_us = -1;
  c->bytes = spx__pb_csr(p, NULL, vb);
  c->padding = 1;
  c->fits = !(limit > 0 && c->bytes + vec > limit);
  if (!c->fits) snprintf(c->note, sizeof c->note, "over the %.1f MB limit", 1e-6 * (double)limit);
  c->predicted_us = c->stream_us = d->cusparse_factor * spx__plan_time_us(d, p, vb, c->bytes, 0, 1) + d->gather_cusparse * gather;
  c->convert_ms = spx__plan_wrap_ms(d, p, c->bytes, 0.5);
  spx__plan_score(c, calls);
}

/* Rows sorted by length (JDS) put unrelated rows side by side in a warp: their x reads stop sharing
 * sectors. Bytes-equivalent of that: each nonzero of a row that lost its neighbour reads its own
 * 32-byte sector from L2, at SPX__PLAN_SCATTER_WEIGHT of a DRAM byte (L2 moves about twice DRAM's
 * bandwidth on A100/H100). Measured on an H100 before this term: JDS ran 2.7x its prediction on
 * ct2010 x60 and 6.1x on power-law rows, and the model chose it there; on 3-D Poisson (rows keep
 * their neighbours) it ran at its prediction. */
#define SPX__PLAN_SCATTER_WEIGHT 0.5
static int64_t spx__plan_scatter(const spx__pprof *p, int map) {
  double lost;
  if (map != SPX__MAP_SORTED || p->n < 2) return 0;
  lost = 1.0 - (double)p->sorted_kept / (double)(p->n - 1);
  return (int64_t)(SPX__PLAN_SCATTER_WEIGHT * lost * 32.0 * (double)p->nnz);
}

/* Whether a block format meets blocks in this matrix (its block factor applies): BSR's best square
 * block is larger than 1, RBP's runs average 4 columns or more. */
static int spx__plan_blocky(const spx__pprof *p, spx__pred_fn fn, int64_t vb) {
  if (fn == spx__pb_bsr) return spx__plan_bsr_best(p, vb, NULL) > 1;
  if (fn == spx__pb_rbp_csr || fn == spx__pb_rbp_ell || fn == spx__pb_rbp_ell_r) return p->nblocks > 0 && p->nval >= 4 * p->nblocks;
  return 0;
}

/* Fills the candidates of a (dtype of a). cuSPARSE CSR last when with_cusparse.
 * with_cusparse 2: the cuSPARSE candidate alone (a plan forced to it reads no columns: the baseline
 * pays what a cuSPARSE user pays, not our model). */
/* With params non-NULL, the profile's choices go there for the build: BSR's block size (the build
 * then converts once instead of counting blocks for 8 sizes first). */
/* cols_share < 0: the profile reads the column counts; else only when they cost at most that share
 * of the expected work (spx__plan_columns_pay), and without them the formats whose prediction
 * needs them are not modelled, and say so. */
static spx_status spx__plan_candidates(const spx_csr *a, const spx__pprof *rows, const spx_plan_device *d, int64_t calls,
                                       int64_t limit, int with_cusparse, int cuda, spx_plan_candidate *out, int max, int *n,
                                       spx_format_params *params, double cols_share) {
  spx__pprof p;
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype), vec = vb * (a->nrows + a->ncols);
  int f, k = 0;
  spx_status s;
  const int tr = spx__plan_tracing();
  double tc = spx__now(), gather;
  spx__plan_walk walk;
  if ((s = spx__pprof_make(a, d->warp, with_cusparse == 2 ? 0 : 2, rows, &p))) return s;
  if (with_cusparse != 2 && !p.cols_done && (cols_share < 0 || spx__plan_columns_pay(a, d, &p, calls, cols_share)) &&
      (s = spx__pprof_columns(a, 0, &p)))
    goto fail;
  gather = spx__plan_gather_us(d, &p, vb);
  spx__plan_walk_make(d, &p, &walk);
  if (tr)
    fprintf(stderr, "spx plan:   profile  %8.3f ms (x sectors per nonzero %.4f, window span %.0f columns, gather %.4g us; "
            "columns %s)\n", 1e3 * (spx__now() - tc), spx__pprof_xsec(&p),
            p.x_windows ? (double)p.x_span / (double)p.x_windows : 0.0, gather,
            !p.cols_done ? "skipped" : rows && rows->cols_done ? "from the device profile" : cols_share < 0 ? "always read" : "paid");
  for (f = 0; f < spx_format_count() && k < max && with_cusparse != 2; f++) {
    const spx_format_vtable *vt = spx_format_info((spx_format)f);
    const spx__plan_pred *q;
    spx_plan_candidate *c = &out[k];
    double idle = 0;
    if (tr && f > 0 && spx__now() - tc > 5e-6)
      fprintf(stderr, "spx plan:   %-8.8s %8.3f ms\n", spx_format_name((spx_format)(f - 1)), 1e3 * (spx__now() - tc));
    tc = spx__now();
    if (!vt || !spx_format_has_kernel((spx_format)f)) continue;
    q = spx__plan_pred_of(vt->name);
    memset(c, 0, sizeof *c);
    c->format = (spx_format)f;
    c->engine = SPX_PLAN_ENGINE_SPX;
    c->measured_us = -1;
    c->bytes = -1;
    if (q->cols && !p.cols_done) { /* its bytes need the column counts, which were not worth reading */
      snprintf(c->note, sizeof c->note, "not modelled: the column profile costs more than %s", "the choice can save here");
      c->fits = 0;
      c->predicted_us = c->score_us = c->convert_ms = -1;
      k++;
      continue;
    }
    if (q->fn) c->bytes = q->fn(&p, vt, vb);
    if (params && q->fn == spx__pb_bsr && c->bytes >= 0) params->bsr_r = params->bsr_c = spx__plan_bsr_best(&p, vb, NULL);
    if (c->bytes == -2) { /* the predictor knows the converter declines */
      snprintf(c->note, sizeof c->note, "declined: %s%s", q->declines ? q->declines : "the converter would decline",
               p.sampled ? " (from sampled windows)" : "");
      c->fits = 0;
      c->predicted_us = c->score_us = c->convert_ms = -1;
      k++;
      continue;
    }
    if (c->bytes >= 0 && p.sampled && q->cols)
      snprintf(c->note, sizeof c->note, "bytes estimated from %d sampled windows of 256 rows", spx__plan_sample_windows(a));
    if (c->bytes < 0) { /* no predictor: convert once and ask */
      spx_fmt *m = NULL;
      s = spx_fmt_from_csr(a, (spx_format)f, NULL, &m);
      if (s == SPX_UNSUPPORTED || s == SPX_RANGE) {
        snprintf(c->note, sizeof c->note, "declined: %.80s", spx_last_error());
        spx_clear_error();
        c->fits = 0;
        c->predicted_us = c->score_us = c->convert_ms = -1;
        k++;
        continue;
      }
      if (s) goto fail;
      c->bytes = spx_fmt_bytes(m);
      c->bytes_exact = 1;
      spx_fmt_destroy(m);
    }
    switch (q->map) {
    case SPX__MAP_ROW: idle = p.idle_row; break;
    case SPX__MAP_SORTED: idle = p.idle_sorted; break;
    case SPX__MAP_CSR: idle = walk.csr_balanced ? 0 : p.idle_csr; break;
    default: idle = 0;
    }
    c->idle = p.nnz ? idle / (double)p.nnz : 0;
    c->padding = 1; /* stored slots / nnz, from the bytes: slots cost 4 + vb each */
    if (q->map == SPX__MAP_PADDED && p.nnz) c->padding = (double)c->bytes / (double)(p.nnz * (4 + vb));
    if (q->fn == spx__pb_sdia && p.nnz) c->padding = (double)p.sdia_slots / (double)p.nnz; /* slots carry no index */
    c->fits = !(limit > 0 && c->bytes + vec > limit);
    if (!c->fits)
      snprintf(c->note, sizeof c->note, "%.1f MB + vectors over the %.1f MB limit", 1e-6 * (double)c->bytes,
               1e-6 * (double)limit);
    /* the streaming model (launches + bytes + idle lanes) times the format's calibrated factor,
     * plus its gather cost; at least the longest serial walk */
    c->predicted_us = spx__plan_time_us(d, &p, vb, c->bytes + spx__plan_scatter(&p, q->map), idle, q->launches);
    if (f < SPX_FORMAT_MAX) {
      double ff = d->format_factor[f];
      if (d->format_factor_block[f] > 0 && spx__plan_blocky(&p, q->fn, vb)) ff = d->format_factor_block[f];
      if (ff > 0) c->predicted_us *= ff;
      c->predicted_us += (d->format_gather[f] > 0 ? d->format_gather[f] : d->gather_default) * gather;
    }
    c->stream_us = c->predicted_us;
    c->chain_us = spx__plan_chain_us(d, &p, &walk, q, vt);
    if (c->chain_us > c->predicted_us) c->predicted_us = c->chain_us;
    c->convert_ms = spx__plan_conv_ms(d, &p, c->bytes, cuda, f);
    if (rows && cuda && f == SPX_FORMAT_CSR && a->nnz <= INT32_MAX) /* wraps the staged arrays, as cuSPARSE does */
      c->convert_ms = spx__plan_wrap_ms(d, &p, c->bytes, d->jit_ms);
    else if (rows && f < SPX_FORMAT_MAX && d->format_staged_convert_ns[f] > 0 && spx__plan_on_device(cuda, f))
      /* converted on the device from the staged arrays: the CSR's upload priced as for the wraps (all
       * candidates share it), then the calibrated staged conversion. The whole-conversion rate (its
       * own upload from pageable memory at the calibration's rate) made BSR 42.6 ms on bcsstk16 x69
       * where the H100 converted in ~2.5 ms, and auto took cuSPARSE for 200 SpMVs that BSR ran
       * 7 ms faster. */
      c->convert_ms = spx__plan_wrap_ms(d, &p, spx__pb_csr(&p, NULL, vb), d->jit_ms) +
                      1e-6 * d->format_staged_convert_ns[f] * (double)c->bytes;
    spx__plan_score(c, calls);
    k++;
  }
  if (with_cusparse && k < max) spx__plan_cusparse_cand(d, &p, vb, gather, limit, vec, calls, &out[k++]);
  spx__pprof_free(&p);
  *n = k;
  return SPX_OK;
fail:
  spx__pprof_free(&p);
  return s;
}

spx_status spx_plan_model(const spx_csr *a, const spx_plan_device *dev, int64_t expected_calls,
                          int64_t memory_limit, int with_cusparse, spx_plan_candidate *out, int max, int *n) {
  spx_status s;
  if (!a || !dev || !out || !n || max < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_model: NULL argument or negative max");
  *n = 0;
  if (!(dev->bandwidth_gbs > 0) || dev->warp < 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_model: the device needs bandwidth_gbs > 0 and warp >= 1");
  if (expected_calls < 0 || memory_limit < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_model: negative expected_calls or memory_limit");
  if ((s = spx_csr_validate(a))) return s;
  return spx__plan_candidates(a, NULL, dev, expected_calls, memory_limit, with_cusparse, dev->h2d_gbs > 0, out, max, n, NULL, -1);
}

/* ---- Plans --------------------------------------------------------------------------------------- */
struct spx_plan {
  spx_context *ctx;
  int own_ctx;
  spx_backend backend;
  spx_plan_strategy strategy;
  spx_dtype dtype;
  int64_t nrows, ncols;
  spx_format format;
  spx_plan_engine engine;
  spx_format_params params;
  double margin;           /* options.convert_margin */
  spx_csr *a;              /* a copy, kept until built (lazy plans) */
  spx_fmt *fmt;            /* the converted matrix (host backend: what runs) */
  spx_dmatrix *dm;
  spx_cusparse_plan *cs;
  int built;
  spx_analysis an;
  spx_plan_candidate cand[SPX_FORMAT_MAX + 1];
  int ncand, chosen;       /* chosen: index into cand */
  int64_t calls;           /* expected_calls */
  double select_ms, build_ms;
  double *diag;            /* a_ii, min(nrows, ncols) entries (Jacobi) */
  int stage;               /* spx_plan_create may profile on the device (not the re-selection worker) */
  double stage_upload_s;   /* of which the CSR's device arrays: allocation and upload, seconds */
  spx__dcsr dc;            /* the CSR as staged for the device profile: the build's input, then
                            * cuSPARSE's arrays (freed after cs) or spx's CSR kernel's (after dm) */
  int pending, pend_idx;   /* defer: the choice (cand[pend_idx]) waits for spx_plan_upgrade */
  const spx_csr *src;      /* defer: the matrix to convert then (the caller's, or own_src) */
  spx_csr *own_src;        /* defer: the plan's copy when the value type changed */
  double upgrade_ms;       /* defer: what spx_plan_upgrade took */
  double pend_staged_ns;   /* defer: the pending format's calibrated conversion from staged arrays, ns/byte (0: none) */
  spx_dmatrix_options csr_opt; /* the CSR kernel the host rule would pick, from the profile (staged) */
  int csr_staged;          /* 1: a CSR plan wraps the staged arrays (csr_opt set) */
  int want_ddiag;          /* 1: the build takes the diagonal from the staged arrays (spx__plan_ddiag) */
  int dc_borrowed;         /* 1: dc is the parent plan's (a trial candidate): never freed here */
  int tiered;              /* the build's dmatrix is tiered (options.no_tiered_jit 0, CUDA, not a trial) */
  int64_t limit;           /* the selection's memory limit in bytes (0: none) */
  spx_cusparse_plan *start; /* tiered: cuSPARSE on the staged CSR while dm has no kernel to run */
  int start_keeps_dc;      /* 1: dm runs on dc's arrays (spx's CSR kernel): they stay when start goes */
  char reason[768];
};

/* Lets go of the staged arrays: frees them, or forgets them where they are the parent plan's. */
static void spx__plan_drop_dc(spx_plan *p) {
  if (p->dc_borrowed) memset(&p->dc, 0, sizeof p->dc);
  else spx__dcsr_free(&p->dc);
  p->dc_borrowed = 0;
}

static void spx__plan_unbuild(spx_plan *p) {
  spx_cusparse_plan_destroy(p->start); p->start = NULL;
  spx_dmatrix_destroy(p->dm); p->dm = NULL;
  spx_cusparse_plan_destroy(p->cs); p->cs = NULL;
  spx_fmt_destroy(p->fmt); p->fmt = NULL;
  spx__plan_drop_dc(p);
  p->built = 0;
}

/* Whether the plan builds from its staged device arrays (p->dc): cuSPARSE and spx's CSR kernel wrap
 * them, the device converters convert from them; every other build starts from the host CSR. The
 * one test for spx__plan_build_from's path and for a trial candidate's loan of its parent's arrays. */
static int spx__plan_staged(const spx_plan *p) {
  if (p->backend != SPX_BACKEND_CUDA || !p->dc.ci || p->fmt) return 0;
  if (p->engine == SPX_PLAN_ENGINE_CUSPARSE || (p->format == SPX_FORMAT_CSR && p->csr_staged))
    return p->dc.rp32 != 0;
  return spx__plan_on_device(1, (int)p->format);
}

/* The diagonal from the staged arrays once their values are up (when create asked for it); on
 * failure none, and create's host pass makes it. */
static void spx__plan_ddiag(spx_plan *p) {
  int64_t n = SPX__MIN(p->nrows, p->ncols);
  if (!p->want_ddiag || p->diag) return;
  p->want_ddiag = 0;
  if (!(p->diag = (double *)spx__alloc((size_t)n + 1, sizeof *p->diag))) return;
  spx__advise_huge(p->diag, ((size_t)n + 1) * sizeof *p->diag);
  p->diag[n] = 0;
  if (spx__dcsr_diag(&p->dc, p->diag)) {
    SPX_FREE(p->diag);
    spx_clear_error();
  }
}

static int spx__plan_has_cusparse(const spx_plan *p);

/* ---- Tiered JIT at the plan: nothing waits for NVRTC -----------------------------------------------
 * A tiered build (spx_dmatrix_options.tiered) never compiles in the caller's way: the dmatrix runs
 * its format's generic kernel while the specialized one compiles, or, with neither in the JIT
 * caches, has nothing to run. Then SpMVs go to cuSPARSE on the CSR staged for the device profile
 * (no compile, nothing copied: the values go up if they are not yet), and the first SpMV after the
 * compile ended moves to the chosen kernel. The staged CSR and the chosen format live side by side
 * meanwhile, so this start is taken only where both fit the memory limit. */
static int spx__plan_start_fits(const spx_plan *p, int64_t nnz) {
  const spx_plan_candidate *c = &p->cand[p->chosen];
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(p->dtype);
  int64_t csr = 4 * (p->nrows + 1) + nnz * (4 + vb), vec = vb * (p->nrows + p->ncols);
  return p->limit <= 0 || c->bytes + csr + vec <= p->limit;
}

/* Starts SpMVs on cuSPARSE when the built dmatrix has no kernel yet: over the staged arrays, or,
 * where the matrix was not staged, over a CSR of its own uploaded from a (a second copy of the
 * pattern for the compile's duration, against a first SpMV that waits tens to hundreds of ms).
 * 1 when it did; any failure here only means no start (the first SpMV waits for the compile). */
static int spx__plan_start(spx_plan *p, const spx_csr *a) {
  const int staged = p->dc.ci && p->dc.rp32;
  size_t n;
  if (!p->tiered || !p->dm || spx__dmatrix_runnable(p->dm) || (!staged && !a) || !spx__plan_has_cusparse(p) ||
      !spx__plan_start_fits(p, staged ? p->dc.nnz : a->nnz))
    return 0;
  if (staged) {
    spx_cusparse_device_csr w;
    if (spx__dcsr_values(&p->dc, a)) { spx_clear_error(); return 0; }
    memset(&w, 0, sizeof w);
    w.nrows = p->dc.nrows; w.ncols = p->dc.ncols; w.nnz = p->dc.nnz; w.dtype = p->dc.dtype;
    w.row_ptr = p->dc.rp32; w.col_idx = p->dc.ci; w.val = p->dc.va;
    if (spx_cusparse_plan_create_device_csr(p->ctx, &w, SPX_CUSPARSE_CSR_ALG1, NULL, &p->start)) p->start = NULL;
  } else if (spx_cusparse_plan_create(p->ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &p->start)) {
    p->start = NULL;
  }
  if (!p->start) {
    spx_clear_error();
    return 0;
  }
  n = strlen(p->reason);
  snprintf(p->reason + n, sizeof p->reason - n, "; its kernel compiles in the background: cuSPARSE runs until then");
  return 1;
}

/* Ends the start once the dmatrix can run (wait: waits for its compile): SpMVs already queued on
 * cuSPARSE finish before its buffer and the staged arrays go. */
static spx_status spx__plan_start_end(spx_plan *p, int wait) {
  spx_status s;
  if (!p->start || (!wait && !spx__dmatrix_runnable(p->dm))) return SPX_OK;
  if ((s = spx_dmatrix_wait(p->dm)) || (s = spx_context_synchronize(p->ctx))) return s;
  spx_cusparse_plan_destroy(p->start);
  p->start = NULL;
  if (!p->start_keeps_dc) spx__plan_drop_dc(p);
  return SPX_OK;
}

/* Converts a to the plan's choice and makes it runnable on the backend. */
static spx_status spx__plan_build_from(spx_plan *p, const spx_csr *a) {
  spx_dmatrix_options dmo;
  spx_status s;
  memset(&dmo, 0, sizeof dmo);
  dmo.tiered = p->tiered;
  /* where the plan has cuSPARSE on the staged arrays to start on, the generic CSR kernel (one
   * thread a row) would be the slower stand-in */
  if (p->tiered && p->format == SPX_FORMAT_CSR) dmo.tiered = 2;
  if (p->built) return SPX_OK;
  if (spx__plan_staged(p)) {
    /* first: it allocates va. A conversion reads the pattern while the values go up (it waits for
     * them before its fill); the wraps need them at once. */
    const int wraps = p->engine == SPX_PLAN_ENGINE_CUSPARSE || (p->format == SPX_FORMAT_CSR && p->csr_staged);
    const int tr = spx__plan_tracing();
    double tm = spx__now();
    if ((s = wraps ? spx__dcsr_values(&p->dc, a) : spx__dcsr_values_begin(&p->dc, a))) return s;
    spx__conv_mark(tr, "plan", wraps ? "values" : "values start", &tm);
    if (p->engine == SPX_PLAN_ENGINE_CUSPARSE) {
      /* the staged arrays, wrapped (cuSPARSE does not copy them): they live as long as the plan */
      spx_cusparse_device_csr w;
      memset(&w, 0, sizeof w);
      w.nrows = p->dc.nrows; w.ncols = p->dc.ncols; w.nnz = p->dc.nnz; w.dtype = p->dc.dtype;
      w.row_ptr = p->dc.rp32; w.col_idx = p->dc.ci; w.val = p->dc.va;
      if ((s = spx_cusparse_plan_create_device_csr(p->ctx, &w, SPX_CUSPARSE_CSR_ALG1, NULL, &p->cs))) return s;
      spx__conv_mark(tr, "plan", "cusparse", &tm);
      spx__plan_ddiag(p);
      p->built = 1;
      return SPX_OK;
    }
    if (p->format == SPX_FORMAT_CSR && p->csr_staged) {
      /* the staged arrays are a CSR already: spx's kernel wraps them (nothing converted or copied),
       * with the kernel the host rule would pick; they live as long as the plan */
      spx_dmatrix_options o = p->csr_opt;
      o.tiered = dmo.tiered;
      if ((s = spx_dmatrix_wrap_csr(p->ctx, p->dc.nrows, p->dc.ncols, p->dc.nnz, p->dc.rp32, p->dc.ci, p->dc.va,
                                    p->dc.dtype, &o, &p->dm)))
        return s;
      spx__plan_ddiag(p);
      p->start_keeps_dc = 1;
      (void)spx__plan_start(p, a);
      p->built = 1;
      return SPX_OK;
    }
    /* converted from the staged arrays: no second upload (BSR with the profile's block size) */
    s = spx__dmatrix_convert_device(p->ctx, a, p->format, &p->params, &dmo, &p->dc, &p->dm);
    spx__conv_mark(tr, "plan", "convert", &tm);
    if (!s && p->dm) {
      spx__plan_ddiag(p);
      spx__conv_mark(tr, "plan", "diagonal", &tm);
    }
    if (s || !p->dm || !spx__plan_start(p, a)) spx__plan_drop_dc(p);
    spx__conv_mark(tr, "plan", "free staged", &tm);
    if (s) return s;
    if (p->dm) { p->built = 1; return SPX_OK; }
  }
  /* The rest converts from the host CSR. The staged arrays stay only for a tiered build's start. */
  if (!p->tiered || p->engine == SPX_PLAN_ENGINE_CUSPARSE || !spx__plan_start_fits(p, p->dc.nnz)) spx__plan_drop_dc(p);
  if (p->engine == SPX_PLAN_ENGINE_CUSPARSE) {
    if ((s = spx_cusparse_plan_create(p->ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &p->cs))) return s;
  } else {
    /* On a GPU, SELL, SELL16, SDIA and BSR convert on the device (spx_dmatrix_convert); the
     * re-selection worker may have converted on its thread already. */
    if (p->backend == SPX_BACKEND_CUDA && !p->fmt) {
      s = spx_dmatrix_convert(p->ctx, a, p->format, &p->params, &dmo, &p->dm);
    } else {
      if (!p->fmt && (s = spx_fmt_from_csr(a, p->format, &p->params, &p->fmt))) return s;
      if (p->backend == SPX_BACKEND_CUDA) {
        s = spx_dmatrix_create(p->ctx, p->fmt, &dmo, &p->dm);
        spx_fmt_destroy(p->fmt);
        p->fmt = NULL;
      }
    }
    if (s || !p->dm || !spx__plan_start(p, a)) spx__plan_drop_dc(p);
    if (s) return s;
  }
  p->built = 1;
  return SPX_OK;
}

spx_status spx_plan_wait(spx_plan *p) {
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_wait: NULL plan");
  if (!p->built) return SPX_OK;
  if (p->start) return spx__plan_start_end(p, 1);
  return p->dm ? spx_dmatrix_wait(p->dm) : SPX_OK;
}

const spx_dmatrix *spx_plan_dmatrix(const spx_plan *p) { return p && p->built ? p->dm : NULL; }

int spx_plan_compiling(const spx_plan *p) { return p && (p->start || spx_dmatrix_compiling(p->dm)); }

spx_status spx_plan_build(spx_plan *p) {
  spx_status s;
  double t0;
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_build: NULL plan");
  if (p->built) return SPX_OK;
  if (!p->a) return spx__fail(SPX_INTERNAL, "spx_plan_build: the plan lost its matrix");
  t0 = spx__now();
  if ((s = spx__plan_build_from(p, p->a))) { spx__plan_unbuild(p); return s; }
  p->build_ms = 1e3 * (spx__now() - t0);
  spx_csr_destroy(p->a);
  p->a = NULL;
  return SPX_OK;
}

spx_status spx_plan_spmv(spx_plan *p, double alpha, const void *x, double beta, void *y) {
  spx_status s;
  if (!p || !x || !y) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_spmv: NULL argument");
  if (!p->built && (s = spx_plan_build(p))) return s;
  if (p->start && (s = spx__plan_start_end(p, 0))) return s;
  if (p->start) return spx_cusparse_spmv(p->start, alpha, (spx_devptr)(uintptr_t)x, beta, (spx_devptr)(uintptr_t)y);
  if (p->cs) return spx_cusparse_spmv(p->cs, alpha, (spx_devptr)(uintptr_t)x, beta, (spx_devptr)(uintptr_t)y);
  if (p->dm) return spx_dmatrix_spmv(p->dm, alpha, (spx_devptr)(uintptr_t)x, beta, (spx_devptr)(uintptr_t)y);
  if (p->fmt) return spx_fmt_spmv(p->fmt, alpha, x, beta, y);
  return spx__fail(SPX_INTERNAL, "spx_plan_spmv: a built plan holds no matrix");
}

void spx_plan_destroy(spx_plan *p) {
  if (!p) return;
  spx__plan_unbuild(p);
  spx_csr_destroy(p->a);
  spx_csr_destroy(p->own_src);
  SPX_FREE(p->diag);
  if (p->own_ctx) spx_context_destroy(p->ctx);
  SPX_FREE(p);
}

static int spx__plan_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* What spx_plan_time takes, in ms, for a plan of `us` per SpMV. On a GPU 4 SpMVs warm up and size
 * the samples, then min(reps, 64) samples of about half a millisecond each, at least one SpMV (the
 * estimate was (reps + 4) SpMVs: 3 ms on Poisson 128^3 where the trial took 20, so auto tried the
 * best two inside a 300-iteration solve); on the host one warm-up and one SpMV a sample. */
static double spx__plan_time_ms(int cuda, double us, int reps) {
  const int ns = reps < 64 ? reps : 64;
  return cuda ? 1e-3 * (4 * us + ns * (us > 500 ? us : 500)) : 1e-3 * (1 + ns) * us;
}

spx_status spx_plan_time(spx_plan *p, int reps, double *us) {
  double samples[64], ms = 0, t0;
  int64_t vs, i;
  int k, inner = 1, ns;
  spx_status s;
  if (!p || !us || reps < 1) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_time: NULL argument or reps < 1");
  if ((!p->built && (s = spx_plan_build(p))) || (s = spx_plan_wait(p))) return s;
  ns = reps < 64 ? reps : 64;
  vs = (int64_t)SPX_DTYPE_SIZE(p->dtype);
  if (p->backend == SPX_BACKEND_CUDA) {
    spx_devptr x = 0, y = 0;
    spx_timer *t = NULL;
    /* x: every byte 0x3f, a finite normal value in float (0.747) and double (3.0e-4), set on the
     * device: a host fill and upload of x cost a trial more than its SpMVs on large matrices */
    if (!(s = spx_device_alloc(p->ctx, (size_t)((p->ncols + 1) * vs), &x)) &&
        !(s = spx_device_alloc(p->ctx, (size_t)((p->nrows + 1) * vs), &y)) &&
        !(s = spx_device_memset(p->ctx, x, 0x3f, (size_t)(p->ncols * vs))) && !(s = spx_timer_create(p->ctx, &t))) {
      const void *vx = (const void *)(uintptr_t)x;
      void *vy = (void *)(uintptr_t)y;
      for (k = 0; k < 3 && !s; k++) s = spx_plan_spmv(p, 1.0, vx, 0.0, vy);
      if (!s && !(s = spx_timer_start(t)) && !(s = spx_plan_spmv(p, 1.0, vx, 0.0, vy)) && !(s = spx_timer_stop(t, &ms))) {
        inner = ms > 0 ? (int)(0.5 / ms) : 1000; /* samples of about half a millisecond */
        inner = inner < 1 ? 1 : inner > 1000 ? 1000 : inner;
        for (k = 0; k < ns && !s; k++) {
          if ((s = spx_timer_start(t))) break;
          for (i = 0; i < inner && !s; i++) s = spx_plan_spmv(p, 1.0, vx, 0.0, vy);
          if (!s && !(s = spx_timer_stop(t, &ms))) samples[k] = 1e3 * ms / inner;
        }
      }
    }
    spx_timer_destroy(t);
    spx_device_free(p->ctx, x);
    spx_device_free(p->ctx, y);
  } else {
    void *hx = spx__alloc((size_t)p->ncols + 1, (size_t)vs), *hy = spx__alloc((size_t)p->nrows + 1, (size_t)vs);
    s = hx && hy ? SPX_OK : SPX_OUT_OF_MEMORY;
    for (i = 0; !s && i < p->ncols; i++) {
      if (p->dtype == SPX_FLOAT) ((float *)hx)[i] = 0.5f + (float)(i % 7) * 0.1f;
      else ((double *)hx)[i] = 0.5 + (double)(i % 7) * 0.1;
    }
    if (!s) s = spx_plan_spmv(p, 1.0, hx, 0.0, hy); /* warm-up */
    for (k = 0; k < ns && !s; k++) {
      t0 = spx__now();
      s = spx_plan_spmv(p, 1.0, hx, 0.0, hy);
      samples[k] = 1e6 * (spx__now() - t0);
    }
    SPX_FREE(hx);
    SPX_FREE(hy);
  }
  if (s) return s;
  qsort(samples, (size_t)ns, sizeof *samples, spx__plan_cmp);
  *us = samples[ns / 2];
  return SPX_OK;
}

/* ---- The papers' heuristics ------------------------------------------------------------------
 * papers/001 (Kubota), section 5, formula (2), R printed in %:
 *   ELL if B < 2.0 and R < 0.048 %;  cuSPARSE CSR if B > 8.0 or R >= 0.048 %;  else JDS.
 * papers/002 (MPS thesis), section 5.2.2, formula (5-1), R as a FRACTION (its Figure 5-4 gives R
 * from 0.0053 to 0.0078 on 5824-row matrices, i.e. 30-45 nonzeros a row; read as % it would be
 * under one nonzero a row). The thesis prints the CSR line as "B < 2.7 or R >= 0.005455", the other
 * way round from its text ("CSR for matrices of large variation and high density"; 2.7 is "0.1
 * below the largest B observed") and from Kubota's rule, which it also copies as "B < 8.0" in
 * (4-3). Taken literally, JDS could only follow B >= 2.7 and CSR would take every matrix with
 * B < 2.7 that misses ELL. We implement what the text means:
 *   ELL if B < 2.3 and R < 0.005455;  CSR if B > 2.7 or R >= 0.005455;  else JDS.
 * spx_analysis.R is a fraction, so Kubota's 0.048 % is 0.00048 here. */
typedef struct spx__plan_rule {
  double ell_b, csr_b, r; /* thresholds, R as a fraction */
  const char *r_text;     /* R as the paper prints it */
  double r_scale;         /* to print R in the paper's unit */
  const char *r_unit;
} spx__plan_rule;

static const spx__plan_rule spx__plan_kubota = {2.0, 8.0, 0.00048, "0.048 %", 100.0, " %"};
static const spx__plan_rule spx__plan_mps = {2.3, 2.7, 0.005455, "0.005455", 1.0, ""};

/* The rule's choice: SPX_FORMAT_ELL, SPX_FORMAT_JDS, or CSR with *cusparse = 1. */
static spx_format spx__plan_rule_apply(const spx__plan_rule *r, const spx_analysis *an, int *cusparse,
                                       char *why, size_t len) {
  double B = an->B, R = an->R, Rp = an->R * r->r_scale;
  *cusparse = 0;
  if (B < r->ell_b && R < r->r) {
    snprintf(why, len, "B = %.3g < %.3g and R = %.4g%s < %s -> ell", B, r->ell_b, Rp, r->r_unit, r->r_text);
    return SPX_FORMAT_ELL;
  }
  if (B > r->csr_b || R >= r->r) {
    *cusparse = 1;
    if (B > r->csr_b) snprintf(why, len, "B = %.3g > %.3g -> cuSPARSE csr", B, r->csr_b);
    else snprintf(why, len, "R = %.4g%s >= %s -> cuSPARSE csr", Rp, r->r_unit, r->r_text);
    return SPX_FORMAT_CSR;
  }
  snprintf(why, len, "%.3g <= B = %.3g <= %.3g%s, R = %.4g%s -> jds", r->ell_b, B, r->csr_b,
           B < r->ell_b ? " (R rules ELL out)" : "", Rp, r->r_unit);
  return SPX_FORMAT_JDS;
}

static int spx__plan_find(const spx_plan *p, spx_format f, spx_plan_engine e) {
  int i;
  for (i = 0; i < p->ncand; i++)
    if (p->cand[i].format == f && p->cand[i].engine == e) return i;
  return -1;
}

static int spx__plan_usable(const spx_plan *p, int i) { return i >= 0 && p->cand[i].fits && p->cand[i].predicted_us >= 0; }

/* Heuristic choice with the fallbacks: a choice that does not fit (the paper's out-of-memory ELL
 * cases) goes to JDS, then CSR; cuSPARSE that is not there goes to spx's CSR. */
static spx_status spx__plan_heuristic(spx_plan *p, const spx__plan_rule *r) {
  char why[300];
  int cus, i;
  spx_format f = spx__plan_rule_apply(r, &p->an, &cus, why, sizeof why);
  size_t n = (size_t)snprintf(p->reason, sizeof p->reason, "%s: %s", spx_plan_strategy_name(p->strategy), why);
  i = spx__plan_find(p, f, cus ? SPX_PLAN_ENGINE_CUSPARSE : SPX_PLAN_ENGINE_SPX);
  if (i < 0 && cus) {
    n += (size_t)snprintf(p->reason + n, sizeof p->reason - n, "; cuSPARSE is not available (%s backend): spx csr",
                          p->backend == SPX_BACKEND_CUDA ? "no library on the" : "host");
    i = spx__plan_find(p, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_SPX);
  }
  if (!spx__plan_usable(p, i)) {
    static const spx_format order[] = {SPX_FORMAT_JDS, SPX_FORMAT_CSR};
    int k, j = -1;
    for (k = 0; k < 2 && j < 0; k++) {
      j = spx__plan_find(p, order[k], SPX_PLAN_ENGINE_SPX);
      if (!spx__plan_usable(p, j)) j = -1;
    }
    if (j < 0) {
      j = spx__plan_find(p, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_CUSPARSE);
      if (!spx__plan_usable(p, j)) j = -1;
    }
    if (j < 0) return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "%s; neither it nor jds nor csr fits the memory limit", p->reason);
    n += (size_t)snprintf(p->reason + n, sizeof p->reason - n, "; %s does not fit (%s): %s%s",
                          i >= 0 ? spx_format_name(p->cand[i].format) : "it", i >= 0 ? p->cand[i].note : "not a candidate",
                          p->cand[j].engine == SPX_PLAN_ENGINE_CUSPARSE ? "cuSPARSE " : "", spx_format_name(p->cand[j].format));
    i = j;
  }
  (void)n;
  p->chosen = i;
  return SPX_OK;
}

/* A candidate's rank key: its score, a CSR baseline's (spx's CSR kernel, cuSPARSE) less the
 * margin a conversion has to beat it by (options.convert_margin). */
static double spx__plan_key(const spx_plan *p, int i) {
  const spx_plan_candidate *c = &p->cand[i];
  int baseline = c->engine == SPX_PLAN_ENGINE_CUSPARSE || c->format == SPX_FORMAT_CSR;
  return baseline ? c->score_us * (1.0 - p->margin) : c->score_us;
}

/* Candidate indices usable, sorted by rank key (best first). */
static int spx__plan_ranked(const spx_plan *p, int *idx) {
  int i, j, k = 0;
  for (i = 0; i < p->ncand; i++)
    if (spx__plan_usable(p, i)) idx[k++] = i;
  for (i = 1; i < k; i++) { /* insertion sort: a dozen entries */
    int v = idx[i];
    for (j = i; j > 0 && spx__plan_key(p, idx[j - 1]) > spx__plan_key(p, v); j--) idx[j] = idx[j - 1];
    idx[j] = v;
  }
  return k;
}

static const char *spx__plan_cname(const spx_plan_candidate *c) {
  return c->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(c->format);
}

static spx_status spx__plan_model_choice(spx_plan *p) {
  int idx[SPX_FORMAT_MAX + 1], k = spx__plan_ranked(p, idx);
  const spx_plan_candidate *b;
  if (!k) return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "no candidate format fits the memory limit");
  p->chosen = idx[0];
  b = &p->cand[idx[0]];
  snprintf(p->reason, sizeof p->reason,
           "%s: %s predicted %.3g us/SpMV + %.3g ms conversion / %lld calls = %.3g us (next: %s %.3g us)",
           spx_plan_strategy_name(p->strategy), spx__plan_cname(b), b->predicted_us, b->convert_ms,
           (long long)p->calls, b->score_us,
           k > 1 ? spx__plan_cname(&p->cand[idx[1]]) : "none", k > 1 ? p->cand[idx[1]].score_us : 0.0);
  if (k > 1 && p->cand[idx[1]].score_us < b->score_us) {
    size_t n = strlen(p->reason);
    snprintf(p->reason + n, sizeof p->reason - n, "; a conversion must score %.0f%% below the CSR baseline", 100 * p->margin);
  }
  return SPX_OK;
}

/* A plan for one candidate, built, in p's context (for the trial). */
static spx_status spx__plan_fixed(spx_plan *p, const spx_csr *a, int i, spx_plan **out) {
  spx_plan *q = (spx_plan *)spx__calloc(1, sizeof *q);
  spx_status s;
  if (!q) return SPX_OUT_OF_MEMORY;
  q->ctx = p->ctx; q->backend = p->backend; q->dtype = p->dtype; q->nrows = p->nrows; q->ncols = p->ncols;
  q->format = p->cand[i].format; q->engine = p->cand[i].engine;
  q->params = p->params; /* the profile's choices (BSR's block) */
  q->dc = p->dc; /* on loan: the candidate builds from the staged arrays as the chosen plan would (a
                  * conversion there, or a wrap), so the trial costs what the model priced */
  q->csr_staged = p->csr_staged;
  q->csr_opt = p->csr_opt;
  if (spx__plan_staged(q)) {
    /* the values go up into p's arrays before the loan (build_from would allocate them in q's copy) */
    if ((s = spx__dcsr_values(&p->dc, a))) { memset(&q->dc, 0, sizeof q->dc); spx_plan_destroy(q); return s; }
    q->dc = p->dc;
    q->dc_borrowed = 1;
  } else {
    memset(&q->dc, 0, sizeof q->dc); /* a host build: nothing borrowed */
  }
  if ((s = spx__plan_build_from(q, a))) { spx_plan_destroy(q); return s; }
  *out = q;
  return SPX_OK;
}

/* Times the candidates in idx[0..k) and keeps the fastest built in p (at most two built at once). */
static spx_status spx__plan_trial(spx_plan *p, const spx_csr *a, const int *idx, int k, int reps) {
  spx_plan *best = NULL;
  double best_us = 0;
  int i, bi = -1;
  spx_status s;
  for (i = 0; i < k; i++) {
    spx_plan *q = NULL;
    double us;
    spx_plan_candidate *c = &p->cand[idx[i]];
    if ((s = spx__plan_fixed(p, a, idx[i], &q)) || (s = spx_plan_time(q, reps, &us))) {
      if (s == SPX_OUT_OF_MEMORY) { spx_plan_destroy(q); spx_plan_destroy(best); return s; }
      snprintf(c->note, sizeof c->note, "trial failed: %.80s", spx_last_error());
      spx_clear_error();
      spx_plan_destroy(q);
      continue;
    }
    c->measured_us = us;
    if (!best || us < best_us) { spx_plan_destroy(best); best = q; best_us = us; bi = idx[i]; }
    else spx_plan_destroy(q);
  }
  if (!best) return spx__fail(SPX_UNSUPPORTED, "trial: no candidate could be built and timed");
  p->chosen = bi;
  p->fmt = best->fmt; p->dm = best->dm; p->cs = best->cs; p->built = 1;
  /* A winner that wraps the staged arrays (CSR, cuSPARSE) keeps them for the plan's life; one
   * converted from them (its build let go of its borrowed copy) or from the host is done with them. */
  if (!best->dc.ci) spx__dcsr_free(&p->dc);
  best->fmt = NULL; best->dm = NULL; best->cs = NULL;
  spx_plan_destroy(best);
  return SPX_OK;
}

/* Whether the context has cuSPARSE. */
static int spx__plan_has_cusparse(const spx_plan *p) {
  spx_lib_status ls;
  if (p->backend != SPX_BACKEND_CUDA) return 0;
  spx_lib_status_get(SPX_LIB_CUSPARSE, &ls);
  return ls.loaded;
}

/* From this many nonzeros a CUDA plan profiles the rows and validates the CSR on the device: the
 * host passes cost more than the kernels by a factor of 100 or more (and the upload is one every
 * plan of that matrix pays anyway). SPX_PLAN_DEVICE_PROFILE=0 keeps it all on the host. */
#define SPX__PLAN_STAGE_NNZ ((int64_t)1 << 20)
static int spx__plan_stage_wanted(const spx_csr *a, const spx_plan_options *o) {
  const char *e = spx__cfg()->plan_device_profile;
  return a && a->nnz >= SPX__PLAN_STAGE_NNZ && o->backend != SPX_BACKEND_HOST && !o->device &&
         o->strategy != SPX_PLAN_TRIAL && !(e && *e == '0');
}

static spx_status spx__plan_check(const spx_csr *a, const spx_plan_options *o) {
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: NULL matrix");
  if ((int)o->strategy < 0 || o->strategy >= SPX_PLAN_STRATEGY_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: strategy %d is not one of the %d strategies",
                     (int)o->strategy, (int)SPX_PLAN_STRATEGY_COUNT);
  if (o->expected_calls < 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: expected_calls = %lld; it must be at least 1",
                     (long long)o->expected_calls);
  if (o->memory_limit < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: negative memory_limit %lld", (long long)o->memory_limit);
  if (o->dtype != -1 && o->dtype != SPX_DOUBLE && o->dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: dtype %d (use -1, SPX_DOUBLE or SPX_FLOAT)", o->dtype);
  if (o->backend != SPX_BACKEND_AUTO && o->backend != SPX_BACKEND_HOST && o->backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: backend %d is not auto, host or cuda", (int)o->backend);
  if (o->trial_reps < 1 || !(o->trial_share >= 0) || !(o->trial_gap == o->trial_gap))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: trial_reps must be >= 1, trial_share >= 0 and trial_gap a number");
  if (!(o->convert_margin >= 0 && o->convert_margin < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: convert_margin %g is not in [0, 1)", o->convert_margin);
  if (o->device && (!(o->device->bandwidth_gbs > 0) || o->device->warp < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: the device description needs bandwidth_gbs > 0, warp >= 1");
  return spx__plan_stage_wanted(a, o) ? spx__csr_validate_head(a) : spx_csr_validate(a);
}

/* The plan's context: the caller's, checked against the options, or one of its own. */
static spx_status spx__plan_context(spx_plan *p, spx_context *ctx, const spx_plan_options *o) {
  if (ctx) {
    spx_backend b = spx_context_backend(ctx);
    if (o->backend != SPX_BACKEND_AUTO && o->backend != b)
      return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: options ask for the %s backend, the context is %s",
                       o->backend == SPX_BACKEND_CUDA ? "cuda" : "host", spx_backend_name(ctx));
    p->ctx = ctx;
  } else {
    spx_context_options co = {o->backend, 0};
    spx_status s = spx_context_create(&co, &p->ctx);
    if (s) return s;
    p->own_ctx = 1;
  }
  p->backend = spx_context_backend(p->ctx);
  return SPX_OK;
}

/* The diagonal of a (the dtype-converted copy), for Jacobi preconditioning. */
static spx_status spx__plan_diag(spx_plan *p, const spx_csr *a) {
  int64_t n = SPX__MIN(a->nrows, a->ncols), i, k;
  SPX_FREE(p->diag);
  if (!(p->diag = (double *)spx__alloc((size_t)n + 1, sizeof *p->diag))) return SPX_OUT_OF_MEMORY;
  spx__advise_huge(p->diag, ((size_t)n + 1) * sizeof *p->diag); /* 2 MiB faults: most of the pass on 4 KiB pages */
  p->diag[n] = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 8192) private(k) num_threads(spx__host_threads()) if (n > 65536)
#endif
  for (i = 0; i < n; i++) {
    double d = 0;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      if (a->col_idx[k] >= i) {
        if (a->col_idx[k] == i) d = a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k];
        break;
      }
    p->diag[i] = d; /* every element written by its thread: first touch in parallel */
  }
  return SPX_OK;
}

/* options.force: that candidate by name, when it is one and fits. */
static spx_status spx__plan_forced(spx_plan *p, const char *name) {
  char list[256];
  size_t n = 0;
  int i, cus = spx__plan_names_cusparse(name);
  list[0] = 0;
  for (i = 0; i < p->ncand; i++) {
    const spx_plan_candidate *c = &p->cand[i];
    if (cus ? c->engine == SPX_PLAN_ENGINE_CUSPARSE
            : c->engine == SPX_PLAN_ENGINE_SPX && spx__plan_ieq(name, spx_format_name(c->format))) {
      if (!c->fits) return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "forced %s does not fit: %s", name, c->note);
      if (c->predicted_us < 0) return spx__fail(SPX_UNSUPPORTED, "forced %s: %s", name, c->note);
      p->chosen = i;
      /* forced to cuSPARSE the plan reads no columns: no x-gather term in that prediction */
      snprintf(p->reason, sizeof p->reason, "forced: %s (predicted %.3g us/SpMV%s)", spx__plan_cname(c), c->predicted_us,
               cus ? " from the row lengths alone" : "");
      return SPX_OK;
    }
    if (n < sizeof list) n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", spx__plan_cname(c));
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "forced plan \"%s\" is not a candidate on the %s backend (candidates: %s)", name,
                   p->backend == SPX_BACKEND_CUDA ? "cuda" : "host", list);
}

/* The model's constants: given, calibrated, or defaults. */
static spx_status spx__plan_devdesc(spx_plan *p, const spx_plan_options *o, spx_plan_device *d) {
  if (o->device) { *d = *o->device; return SPX_OK; }
  if (!o->no_calibrate && p->backend == SPX_BACKEND_CUDA && spx_plan_calibrate(p->ctx, 0, d) == SPX_OK) return SPX_OK;
  spx_clear_error();
  return spx_plan_device_default(p->ctx, d);
}

static void spx__plan_rowstats_finish(const spx_csr *a, double sq, spx_analysis *an) {
  if (a->nrows) {
    an->row_mean = (double)a->nnz / (double)a->nrows;
    an->row_stddev = spx__sqrt(SPX__MAX(0.0, sq / (double)a->nrows - an->row_mean * an->row_mean));
  }
  an->B = a->nnz ? (double)an->row_max / an->row_mean : 0;
  an->R = a->nrows && a->ncols ? (double)a->nnz / ((double)a->nrows * (double)a->ncols) : 0;
}

typedef struct spx__plan_cols_job {
  const spx_csr *a;
  spx__pprof *p;
  spx_status s;
  double seconds;
} spx__plan_cols_job;

static void *spx__plan_cols_thread(void *arg) {
  spx__plan_cols_job *j = (spx__plan_cols_job *)arg;
  double t0 = spx__now();
  j->s = spx__pprof_columns(j->a, 1, j->p);
  j->seconds = spx__now() - t0;
  return NULL;
}

/* Stages a on the device (p->dc) and fills the row-length profile and p->an from analyze.cu's
 * counters. SPX_OK with *done 0: not staged (the caller profiles on the host). A malformed CSR
 * fails with spx_csr_validate's message. */
static spx_status spx__plan_stage(spx_plan *p, const spx_csr *a, int columns, spx__pprof *rows, int *done) {
  uint64_t r[9] = {0};
  int64_t *hist = NULL;
  double t0 = spx__now(), tj;
  const int tr = spx__plan_tracing();
  spx__plan_cols_job job;
  pthread_t th;
  int threaded;
  spx_status s;
  *done = 0;
  memset(rows, 0, sizeof *rows);
  /* The sampled column counts read only the host arrays: on a thread of their own (and the CPUs the
   * upload's pool leaves) while this one uploads (3-8 ms on these sizes since the pool). A plan
   * forced to cuSPARSE reads no columns (columns 0): the baseline pays what a cuSPARSE user pays. */
  memset(&job, 0, sizeof job);
  job.a = a;
  job.p = rows;
  threaded = columns && pthread_create(&th, NULL, spx__plan_cols_thread, &job) == 0;
  s = spx__dcsr_stage(p->ctx, a, spx__plan_tpr(a), &p->dc, r, &hist, &p->stage_upload_s);
  tj = spx__now();
  if (threaded) pthread_join(th, NULL);
  else if (columns) spx__plan_cols_thread(&job);
  if (tr)
    fprintf(stderr, "spx plan:   stage: alloc %.3f upload %.3f rows %.3f hist %.3f, columns (thread) %.3f, join wait %.3f ms\n",
            1e3 * p->dc.stage_s[0], 1e3 * p->dc.stage_s[1], 1e3 * p->dc.stage_s[2], 1e3 * p->dc.stage_s[3],
            1e3 * job.seconds, 1e3 * (spx__now() - tj));
  if (s || job.s) {
    spx__dcsr_free(&p->dc);
    SPX_FREE(hist);
    memset(rows, 0, sizeof *rows);
    p->stage_upload_s = 0;
    spx_clear_error(); /* no memory for the staging, say: the host path does the same job */
    return SPX_OK;
  }
  if (r[0] != ~0ull) {
    spx__dcsr_free(&p->dc);
    if ((s = spx_csr_validate(a))) return s;
    return spx__fail(SPX_INTERNAL, "the device profile found row %llu malformed and the host validation did not",
                     (unsigned long long)r[0]);
  }
  rows->n = a->nrows; rows->ncols = a->ncols; rows->nnz = a->nnz; /* the column counts are there */
  rows->row_max = (int64_t)r[1];
  rows->hist = hist;
  rows->ss_runs = (int64_t)r[4];
  rows->sorted_kept = (int64_t)r[5];
  rows->idle_row = (double)r[7];
  rows->idle_csr = (double)r[8];
  rows->tpr = spx__plan_tpr(a);
  memset(&p->an, 0, sizeof p->an);
  p->an.nrows = a->nrows; p->an.ncols = a->ncols; p->an.nnz = a->nnz;
  p->an.row_min = a->nrows ? (int64_t)r[2] : 0;
  p->an.row_max = (int64_t)r[1];
  p->an.empty_rows = (int64_t)r[3];
  spx__plan_rowstats_finish(a, (double)r[6], &p->an);
  p->an.seconds = spx__now() - t0;
  *done = 1;
  return SPX_OK;
}

/* The part of spx_analyze the strategies read (row lengths: B, R), from row_ptr alone: the full
 * analysis walks every column and the transpose, which costs more than the choice is worth. */
static void spx__plan_rowstats(const spx_csr *a, spx_analysis *an) {
  double t0 = spx__now(), sq = 0;
  int64_t i;
  memset(an, 0, sizeof *an);
  an->nrows = a->nrows; an->ncols = a->ncols; an->nnz = a->nnz;
  {
    int64_t mn = a->nrows ? INT64_MAX : 0, mx = 0, empty = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 4096) reduction(min : mn) reduction(max : mx) reduction(+ : empty, sq) \
    num_threads(spx__host_threads()) if (a->nrows > 16384)
#endif
    for (i = 0; i < a->nrows; i++) {
      int64_t l = a->row_ptr[i + 1] - a->row_ptr[i];
      mn = SPX__MIN(mn, l);
      mx = SPX__MAX(mx, l);
      empty += l == 0;
      sq += (double)l * (double)l;
    }
    an->row_min = mn; an->row_max = mx; an->empty_rows = empty;
  }
  spx__plan_rowstats_finish(a, sq, an);
  an->seconds = spx__now() - t0;
}

/* Selection proper: analysis, candidates, strategy. Builds the plan only for trial (and auto's
 * trial). On return p->a holds the (dtype-converted) copy when the plan is not built yet. */
/* defer: when the choice converts, start on the CSR as it is and keep the choice pending. The start
 * is spx's CSR kernel or cuSPARSE, whichever the model predicts faster, among those that convert
 * nothing: on a GPU cuSPARSE's wrap, or spx's kernel when the CSR is staged; on the host, spx's.
 * *own (the plan's value-type copy of the matrix) moves into the plan, which converts it later. */
static spx_status spx__plan_defer(spx_plan *p, const spx_csr *use, spx_csr **own) {
  int i, start = -1, cuda = p->backend == SPX_BACKEND_CUDA;
  const spx_plan_candidate *c = &p->cand[p->chosen];
  if (c->engine == SPX_PLAN_ENGINE_CUSPARSE || c->format == SPX_FORMAT_CSR) return SPX_OK; /* nothing to convert */
  for (i = 0; i < p->ncand; i++) {
    const spx_plan_candidate *q = &p->cand[i];
    int ok = q->format == SPX_FORMAT_CSR && spx__plan_usable(p, i) &&
             (q->engine == SPX_PLAN_ENGINE_CUSPARSE || !cuda || p->csr_staged);
    if (ok && (start < 0 || q->predicted_us < p->cand[start].predicted_us)) start = i;
  }
  if (start < 0) return SPX_OK;
  p->pending = 1;
  p->pend_idx = p->chosen;
  p->chosen = start;
  if (own && *own) { p->own_src = *own; *own = NULL; p->src = p->own_src; }
  else p->src = use;
  {
    size_t n = strlen(p->reason);
    snprintf(p->reason + n, sizeof p->reason - n, "; deferred: starts on %s (nothing to convert), %s pending",
             spx__plan_cname(&p->cand[start]), spx__plan_cname(&p->cand[p->pend_idx]));
  }
  return SPX_OK;
}

int spx_plan_pending(const spx_plan *p, spx_plan_pending_info *info) {
  if (!p || !p->pending) return 0;
  if (info) {
    info->format = p->cand[p->pend_idx].format;
    info->current_us = p->cand[p->chosen].predicted_us;
    info->pending_us = p->cand[p->pend_idx].predicted_us;
    info->convert_ms = p->cand[p->pend_idx].convert_ms;
    if (p->dc.ci && p->pend_staged_ns > 0 && spx__plan_on_device(p->backend == SPX_BACKEND_CUDA, (int)info->format)) {
      /* measured from staged arrays by the calibration (kernels from the JIT cache) */
      info->convert_ms = 1e-6 * p->pend_staged_ns * (double)p->cand[p->pend_idx].bytes;
      return 1;
    }
    /* Uncalibrated: from the staged arrays the device converters upload nothing: the model's rate (calibrated on
     * spx_dmatrix_convert, which uploads the CSR from pageable host memory first) less that upload,
     * at the rate this plan's own staging upload ran (the calibration's 64 MB probe reads 2-3x
     * faster than uploads of a few hundred MB do: on the H100 host 20 GB/s against 7.5). */
    if (p->dc.ci && p->dc.stage_s[1] > 0 && spx__plan_on_device(p->backend == SPX_BACKEND_CUDA, (int)info->format)) {
      double pattern = (double)(8 * (p->dc.nrows + 1) + 4 * p->dc.nnz);
      double whole = pattern + (double)p->dc.nnz * (double)SPX_DTYPE_SIZE(p->dc.dtype);
      double up = 1e3 * p->dc.stage_s[1] * whole / pattern; /* the pattern's upload time, scaled */
      info->convert_ms = info->convert_ms > up ? info->convert_ms - up : 0;
    }
  }
  return 1;
}

spx_status spx_plan_upgrade(spx_plan *p) {
  spx_dmatrix *dm = NULL;
  spx_fmt *fmt = NULL;
  spx_format f;
  spx_status s;
  double t0 = spx__now();
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_upgrade: NULL plan");
  if (!p->pending) return SPX_OK;
  if (!p->src) return spx__fail(SPX_INTERNAL, "spx_plan_upgrade: the deferred plan lost its matrix");
  if (!p->built && (s = spx_plan_build(p))) return s;
  f = p->cand[p->pend_idx].format;
  /* the new arrays first: on failure the running plan is untouched (its staged arrays included) */
  if (p->backend == SPX_BACKEND_CUDA) {
    s = SPX_OK;
    if (p->dc.ci && p->dc.has_values && spx__plan_on_device(1, (int)f))
      s = spx__dmatrix_convert_device(p->ctx, p->src, f, &p->params, NULL, &p->dc, &dm);
    if (!s && !dm) s = spx_dmatrix_convert(p->ctx, p->src, f, &p->params, NULL, &dm);
  } else {
    s = spx_fmt_from_csr(p->src, f, &p->params, &fmt);
  }
  if (s) return spx__wrap(s, "spx_plan_upgrade: building the pending %s", spx_format_name(f));
  /* SpMVs queued on the running plan read its arrays: let them finish before those go */
  if (p->backend == SPX_BACKEND_CUDA && (s = spx_context_synchronize(p->ctx))) {
    spx_dmatrix_destroy(dm);
    return s;
  }
  spx__plan_unbuild(p); /* the start plan, then the staged CSR it ran on */
  p->dm = dm;
  p->fmt = fmt;
  p->built = 1;
  p->chosen = p->pend_idx;
  p->format = f;
  p->engine = SPX_PLAN_ENGINE_SPX;
  p->pending = 0;
  p->src = NULL;
  spx_csr_destroy(p->own_src);
  p->own_src = NULL;
  p->upgrade_ms = 1e3 * (spx__now() - t0);
  return SPX_OK;
}

/* Whether no conversion can pay back on a: even a format as fast as reading the values once (at the
 * smallest calibrated factor, one launch, no imbalance) would save at most half the model's
 * per-kernel price (jit_ms) over expected_calls against cuSPARSE as the model prices it without its
 * column profile (skipped there too: it would not pay). Then the model's ranking is known before
 * it is made: auto and model take cuSPARSE CSR as it is, without the profile. *cs_us: cuSPARSE's
 * prediction. Setup on small matrices used to spend 0.5-2 ms on a profile whose answer this was. */
/* Whether no conversion can pay back on a (q: its sizes only): even a format as fast as reading
 * the values once (at the smallest calibrated factor, one launch, no imbalance) would save at most
 * half the model's per-kernel price (jit_ms) over expected_calls against cuSPARSE's prediction
 * cs_us, made as the model makes it without the column profile (skipped there too: it would not
 * pay). Then the model's ranking is known before it is made: auto and model take cuSPARSE CSR as
 * it is, without the profile. */
static int spx__plan_nothing_pays(const spx_csr *a, const spx_plan_device *d, const spx__pprof *q, int64_t calls,
                                  double share, double cs_us) {
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(a->dtype);
  double fmin = 1;
  int f;
  for (f = 0; f < SPX_FORMAT_MAX; f++) {
    if (d->format_factor[f] > 0) fmin = SPX__MIN(fmin, d->format_factor[f]);
    if (d->format_factor_block[f] > 0) fmin = SPX__MIN(fmin, d->format_factor_block[f]);
  }
  if (!(d->jit_ms > 0) || spx__plan_columns_pay(a, d, q, calls, share)) return 0;
  return (double)calls * (cs_us - fmin * spx__plan_time_us(d, q, vb, a->nnz * vb, 0, 1)) <= 0.5 * 1e3 * d->jit_ms;
}

static spx_status spx__plan_select(spx_plan *p, const spx_csr *a0, const spx_plan_options *o) {
  spx_plan_device dev;
  spx_csr *a = NULL;
  const spx_csr *use = a0;
  spx__pprof rows, *rowsp = NULL; /* the device's row profile, when staged */
  int64_t limit = o->memory_limit;
  double t0 = spx__now(), tl = t0;
  const int tr = spx__plan_tracing(); /* per-stage wall times on stderr, to see where selection goes */
  spx_status s;
  memset(&rows, 0, sizeof rows);
#define SPX__PLAN_TRACE(what)                                                              \
  do {                                                                                     \
    if (tr) fprintf(stderr, "spx plan: %-10s %8.3f ms\n", what, 1e3 * (spx__now() - tl)); \
    tl = spx__now();                                                                       \
  } while (0)
  p->strategy = o->strategy;
  p->calls = o->expected_calls;
  p->margin = o->convert_margin;
  p->tiered = !o->no_tiered_jit && p->backend == SPX_BACKEND_CUDA;
  p->dtype = o->dtype == -1 ? a0->dtype : (spx_dtype)o->dtype;
  p->nrows = a0->nrows; p->ncols = a0->ncols;
  spx_format_params_default(&p->params);
  /* A copy only to change the value type; a lazy plan copies what it keeps at the end. */
  if (p->dtype != a0->dtype) {
    if ((s = spx_csr_copy(a0, p->dtype, &a))) return s;
    use = a;
  }
  SPX__PLAN_TRACE("copy");
  if ((s = spx__plan_devdesc(p, o, &dev))) goto fail;
  SPX__PLAN_TRACE("device");
  if (limit == 0 && p->backend == SPX_BACKEND_CUDA) {
    spx_device_info info;
    if (spx_context_device_info(p->ctx, &info) == SPX_OK && info.free_mem > 0) limit = info.free_mem;
    spx_clear_error();
  }
  p->limit = limit;
  SPX__PLAN_TRACE("memory");
  if ((o->strategy == SPX_PLAN_AUTO || o->strategy == SPX_PLAN_MODEL) && !o->force && spx__plan_has_cusparse(p)) {
    spx_plan_candidate *c = &p->cand[0];
    int64_t vb = (int64_t)SPX_DTYPE_SIZE(p->dtype);
    spx__pprof q;
    memset(&q, 0, sizeof q);
    q.n = use->nrows; q.ncols = use->ncols; q.nnz = use->nnz;
    spx__plan_cusparse_cand(&dev, &q, vb, 0, limit, vb * (use->nrows + use->ncols), o->expected_calls, c);
    if (c->fits && spx__plan_nothing_pays(use, &dev, &q, o->expected_calls, o->trial_share, c->predicted_us)) {
      const double cs_us = c->predicted_us;
      if (spx__plan_stage_wanted(a0, o) && (s = spx_csr_validate(a0))) goto fail; /* not staged: validated here */
      spx__plan_rowstats(use, &p->an);
      p->ncand = 1;
      p->chosen = 0;
      snprintf(p->reason, sizeof p->reason,
               "%s: cusparse_csr, no profile: over %lld calls no format could save half the %.3g ms a kernel "
               "costs against its predicted %.3g us/SpMV",
               spx_plan_strategy_name(p->strategy), (long long)o->expected_calls, dev.jit_ms, cs_us);
      SPX__PLAN_TRACE("shortcut");
      goto chosen;
    }
  }
  {
    int staged = 0;
    if (p->stage && p->backend == SPX_BACKEND_CUDA && dev.warp == 32 && spx__plan_stage_wanted(a0, o) &&
        (s = spx__plan_stage(p, use, !spx__plan_names_cusparse(o->force), &rows, &staged)))
      goto fail;
    if (staged) {
      rowsp = &rows;
      /* a CSR plan can run spx's kernel on the staged arrays: the kernel choice from the histogram */
      if (rows.hist && p->dc.rp32) {
        p->csr_staged = spx_csr_kernel_options(use->nrows, use->nnz, rows.hist, rows.row_max, &p->csr_opt) == SPX_OK;
      }
    }
    else { /* spx__plan_check left the full validation to the device profile, which did not run */
      if (spx__plan_stage_wanted(a0, o) && (s = spx_csr_validate(a0))) goto fail;
      spx__plan_rowstats(use, &p->an);
    }
  }
  SPX__PLAN_TRACE(rowsp ? "devprofile" : "rowstats");
  if ((s = spx__plan_candidates(use, rowsp, &dev, o->expected_calls, limit,
                                spx__plan_has_cusparse(p) ? (spx__plan_names_cusparse(o->force) ? 2 : 1) : 0,
                                p->backend == SPX_BACKEND_CUDA, p->cand, SPX_FORMAT_MAX + 1, &p->ncand, &p->params,
                                /* a forced candidate, the trial and the papers' rules read them
                                 * always (they convert or time every candidate, or need no model);
                                 * a staged plan has its sample from beside the upload */
                                o->force || o->strategy == SPX_PLAN_TRIAL || o->strategy == SPX_PLAN_KUBOTA ||
                                        o->strategy == SPX_PLAN_MPS ? -1.0 : o->trial_share)))
    goto fail;
  SPX__PLAN_TRACE("model");
  if (o->force) s = spx__plan_forced(p, o->force);
  else switch (p->strategy) {
  case SPX_PLAN_KUBOTA: s = spx__plan_heuristic(p, &spx__plan_kubota); break;
  case SPX_PLAN_MPS: s = spx__plan_heuristic(p, &spx__plan_mps); break;
  case SPX_PLAN_MODEL: s = spx__plan_model_choice(p); break;
  case SPX_PLAN_TRIAL: {
    int idx[SPX_FORMAT_MAX + 1], k = spx__plan_ranked(p, idx);
    if (!k) { s = spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "no candidate format fits the memory limit"); break; }
    if (!(s = spx__plan_trial(p, use, idx, k, o->trial_reps)))
      snprintf(p->reason, sizeof p->reason, "trial: %s measured %.3g us/SpMV, fastest of %d candidates timed",
               spx__plan_cname(&p->cand[p->chosen]), p->cand[p->chosen].measured_us, k);
    break;
  }
  default: { /* AUTO */
    const int cuda = p->backend == SPX_BACKEND_CUDA;
    int idx[SPX_FORMAT_MAX + 1], k;
    double trial_ms, work_ms, gap;
    if ((s = spx__plan_model_choice(p))) break;
    k = spx__plan_ranked(p, idx);
    /* A trial of the best two converts the runner-up too, and times each as spx_plan_time does. */
    trial_ms = k > 1 ? p->cand[idx[1]].convert_ms + spx__plan_time_ms(cuda, p->cand[idx[0]].predicted_us, o->trial_reps) +
                           spx__plan_time_ms(cuda, p->cand[idx[1]].predicted_us, o->trial_reps)
                     : 0;
    work_ms = 1e-3 * (double)o->expected_calls * p->cand[idx[0]].predicted_us;
    gap = k > 1 ? p->cand[idx[1]].predicted_us / p->cand[idx[0]].predicted_us : 0;
    if (k > 1 && gap > o->trial_gap) {
      size_t n = strlen(p->reason);
      snprintf(p->reason + n, sizeof p->reason - n, "; no trial (the runner-up predicted %.0f%% slower)", 100 * (gap - 1));
    } else if (k > 1 && trial_ms <= o->trial_share * work_ms) {
      char model_reason[400]; /* the model's sentence, bounded so the trial's fits after it */
      snprintf(model_reason, sizeof model_reason, "%.399s", p->reason);
      if (!(s = spx__plan_trial(p, use, idx, 2, o->trial_reps)))
        snprintf(p->reason, sizeof p->reason, "%s; trial of the best two (%.3g ms <= %.3g x %.3g ms of work): %s %.3g us vs %s %.3g us",
                 model_reason, trial_ms, o->trial_share, work_ms, spx__plan_cname(&p->cand[idx[0]]),
                 p->cand[idx[0]].measured_us, spx__plan_cname(&p->cand[idx[1]]), p->cand[idx[1]].measured_us);
    } else if (k > 1) {
      size_t n = strlen(p->reason);
      snprintf(p->reason + n, sizeof p->reason - n, "; no trial (%.3g ms > %.3g x %.3g ms of work)", trial_ms,
               o->trial_share, work_ms);
    }
  }
  }
  if (s) goto fail;
chosen:
  if (o->defer && !p->built && (s = spx__plan_defer(p, use, use == a0 ? NULL : &a))) goto fail;
  if (p->pending) p->pend_staged_ns = dev.format_staged_convert_ns[p->cand[p->pend_idx].format];
  p->format = p->cand[p->chosen].format;
  p->engine = p->cand[p->chosen].engine;
  SPX__PLAN_TRACE("strategy");
#undef SPX__PLAN_TRACE
  /* the staged arrays (allocated, uploaded) are the build's input (cuSPARSE's arrays, the device
   * converters'), not the choice */
  p->select_ms = 1e3 * (spx__now() - t0 - p->stage_upload_s);
  spx__pprof_free(&rows);
  /* The diagonal is the solvers' (Jacobi), not the choice's: kept beside the plan, not timed as
   * selection. An eager build from the staged arrays takes it from them on the device
   * (spx__plan_ddiag: the host pass over col_idx took 4-12 ms on 20-27M nonzeros); else, or when
   * that did not come, the host pass. */
  p->want_ddiag = !o->no_diagonal && !p->built && o->eager && spx__plan_staged(p);
  if (!o->no_diagonal && !p->want_ddiag) {
    if ((s = spx__plan_diag(p, use))) goto fail;
    if (tr) fprintf(stderr, "spx plan: %-10s %8.3f ms\n", "diagonal", 1e3 * (spx__now() - tl));
  }
  if (!p->built && o->eager) {
    double tb = spx__now();
    s = spx__plan_build_from(p, use);
    p->want_ddiag = 0;
    if (!s && !o->no_diagonal && !p->diag) s = spx__plan_diag(p, use); /* the device's did not come */
    if (s) goto fail;
    p->build_ms = 1e3 * (spx__now() - tb); /* an eager build is the build's, not the selection's */
  } else if (!p->built) {
    if (!a && (s = spx_csr_copy(a0, p->dtype, &a))) goto fail;
    p->a = a;
    return SPX_OK;
  }
  spx_csr_destroy(a);
  return SPX_OK;
fail:
  spx__pprof_free(&rows);
  spx_csr_destroy(a);
  return s;
}

spx_status spx_plan_create(spx_context *ctx, const spx_csr *a, const spx_plan_options *options, spx_plan **out) {
  spx_plan_options o;
  spx_plan *p;
  spx_status s;
  const int tr = spx__plan_tracing();
  double tv, tb;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: NULL output");
  *out = NULL;
  if (options) o = *options;
  else spx_plan_options_default(&o);
  tv = spx__now();
  if ((s = spx__plan_check(a, &o))) return s;
  if (tr)
    fprintf(stderr, "spx plan: %-10s %8.3f ms (strategy %s, %lld calls, %lld nonzeros)\n", "validate",
            1e3 * (spx__now() - tv), spx_plan_strategy_name(o.strategy), (long long)o.expected_calls, (long long)a->nnz);
  if (!(p = (spx_plan *)spx__calloc(1, sizeof *p))) return SPX_OUT_OF_MEMORY;
  p->stage = 1;
  if ((s = spx__plan_context(p, ctx, &o)) || (s = spx__plan_select(p, a, &o))) {
    spx_plan_destroy(p);
    return s;
  }
  tb = spx__now();
  if (o.eager && (s = spx_plan_build(p))) {
    spx_plan_destroy(p);
    return s;
  }
  if (tr) /* the build (eager), then the whole call: what the parts above leave out */
    fprintf(stderr, "spx plan: %-10s %8.3f ms (build_ms %.3f, stage upload %.3f ms)\nspx plan: %-10s %8.3f ms\n", "build",
            1e3 * (spx__now() - tb), p->build_ms, 1e3 * p->stage_upload_s, "create", 1e3 * (spx__now() - tv));
  *out = p;
  return SPX_OK;
}

spx_format spx_plan_format(const spx_plan *p) { return p ? p->format : SPX_FORMAT_COUNT; }
spx_plan_engine spx_plan_engine_of(const spx_plan *p) { return p ? p->engine : SPX_PLAN_ENGINE_SPX; }
spx_plan_strategy spx_plan_strategy_of(const spx_plan *p) { return p ? p->strategy : SPX_PLAN_STRATEGY_COUNT; }
spx_backend spx_plan_backend(const spx_plan *p) { return p ? p->backend : SPX_BACKEND_HOST; }
spx_dtype spx_plan_dtype(const spx_plan *p) { return p ? p->dtype : SPX_DOUBLE; }
const spx_format_params *spx_plan_params(const spx_plan *p) { return p ? &p->params : NULL; }
double spx_plan_predicted_us(const spx_plan *p) { return p ? p->cand[p->chosen].predicted_us : -1; }
double spx_plan_convert_ms(const spx_plan *p) { return p ? p->cand[p->chosen].convert_ms : -1; }
double spx_plan_select_ms(const spx_plan *p) { return p ? p->select_ms : -1; }
const char *spx_plan_reason(const spx_plan *p) { return p ? p->reason : ""; }
const spx_analysis *spx_plan_analysis(const spx_plan *p) { return p ? &p->an : NULL; }
spx_context *spx_plan_context(const spx_plan *p) { return p ? p->ctx : NULL; }
int64_t spx_plan_nrows(const spx_plan *p) { return p ? p->nrows : 0; }
int64_t spx_plan_ncols(const spx_plan *p) { return p ? p->ncols : 0; }
/* The matrix arrays staged on the device during the choice are the build's input (a cuSPARSE
 * plan's own arrays, the device converters'): their allocation and upload count here. */
double spx_plan_build_ms(const spx_plan *p) { return p && p->built && p->build_ms > 0 ? p->build_ms + 1e3 * p->stage_upload_s : 0; }
/* The plan's diagonal without a copy (the GPU solver uploads it as it is); NULL: none kept. */
static const double *spx__plan_diag_kept(const spx_plan *p) { return p ? p->diag : NULL; }

spx_status spx_plan_diagonal(const spx_plan *p, double *out) {
  if (!p || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_diagonal: NULL argument");
  if (!p->diag)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_diagonal: the plan kept no diagonal (made with options.no_diagonal)");
  memcpy(out, p->diag, (size_t)SPX__MIN(p->nrows, p->ncols) * sizeof *out);
  return SPX_OK;
}
int64_t spx_plan_bytes(const spx_plan *p) {
  if (!p) return 0;
  if (p->dm) return spx_dmatrix_bytes(p->dm);
  if (p->cs) { /* a cuSPARSE plan wrapping the staged CSR owns none of its arrays: count what it reads */
    int64_t b = spx_cusparse_plan_device_bytes(p->cs);
    if (p->dc.rp32 && p->dc.ci && p->dc.va)
      b += 4 * (p->dc.nrows + 1) + p->dc.nnz * (4 + (int64_t)SPX_DTYPE_SIZE(p->dc.dtype));
    return b;
  }
  if (p->fmt) return spx_fmt_bytes(p->fmt);
  return p->cand[p->chosen].bytes;
}
const spx_plan_candidate *spx_plan_candidates(const spx_plan *p, int *n) {
  if (n) *n = p ? p->ncand : 0;
  return p ? p->cand : NULL;
}

static void spx__plan_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

/* `, "key": v`, or null where v is not a time (negative: not modelled, not timed). */
static void spx__plan_json_time(FILE *f, const char *key, double v) {
  if (v >= 0 && v <= 1e300) fprintf(f, ", \"%s\": %.6g", key, v);
  else fprintf(f, ", \"%s\": null", key);
}

spx_status spx_plan_print(const spx_plan *p, FILE *f, int json) {
  int i;
  if (!p || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_print: NULL argument");
  if (json) {
    fprintf(f, "{\"strategy\": \"%s\", \"backend\": \"%s\", \"format\": \"%s\", \"engine\": \"%s\", \"dtype\": \"%s\", "
               "\"predicted_us\": %.6g, \"convert_ms\": %.6g, \"select_ms\": %.6g, \"B\": %.6g, \"R\": %.6g, \"reason\": ",
            spx_plan_strategy_name(p->strategy), p->backend == SPX_BACKEND_CUDA ? "cuda" : "host",
            spx_format_name(p->format), p->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse" : "spx",
            spx_dtype_name(p->dtype), spx_plan_predicted_us(p), spx_plan_convert_ms(p), p->select_ms, p->an.B, p->an.R);
    spx__plan_json_str(f, p->reason);
    fprintf(f, ", \"candidates\": [");
    for (i = 0; i < p->ncand; i++) {
      const spx_plan_candidate *c = &p->cand[i];
      /* what is not known (a declined format's bytes and times, an untimed candidate) is null */
      fprintf(f, "%s{\"name\": \"%s\", \"bytes\": ", i ? ", " : "", spx__plan_cname(c));
      if (c->bytes >= 0) fprintf(f, "%lld", (long long)c->bytes);
      else fputs("null", f);
      fprintf(f, ", \"bytes_exact\": %d, \"fits\": %d, \"padding\": %.4g, \"idle\": %.4g", c->bytes_exact, c->fits,
              c->padding, c->idle);
      spx__plan_json_time(f, "predicted_us", c->predicted_us);
      spx__plan_json_time(f, "stream_us", c->stream_us);
      spx__plan_json_time(f, "chain_us", c->chain_us);
      spx__plan_json_time(f, "convert_ms", c->convert_ms);
      spx__plan_json_time(f, "score_us", c->score_us);
      spx__plan_json_time(f, "measured_us", c->measured_us);
      fputs(", \"note\": ", f);
      spx__plan_json_str(f, c->note);
      fputc('}', f);
    }
    fprintf(f, "]}\n");
  } else {
    fprintf(f, "strategy    %s\nbackend     %s\nformat      %s%s (%s)\npredicted   %.4g us/SpMV, conversion %.4g ms, selection %.4g ms\nreason      %s\n",
            spx_plan_strategy_name(p->strategy), p->backend == SPX_BACKEND_CUDA ? "cuda" : "host",
            p->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cuSPARSE " : "", spx_format_name(p->format), spx_dtype_name(p->dtype),
            spx_plan_predicted_us(p), spx_plan_convert_ms(p), p->select_ms, p->reason);
  }
  return ferror(f) ? spx__fail(SPX_IO, "spx_plan_print: write failed") : SPX_OK;
}

/* ---- Calibration --------------------------------------------------------------------------------- */
/* Median microseconds of one candidate (format, engine) on a, built in ctx. */
static spx_status spx__plan_probe(spx_context *ctx, const spx_csr *a, spx_format f, spx_plan_engine e, double *us) {
  spx_plan shell, *q = NULL;
  spx_status s;
  memset(&shell, 0, sizeof shell);
  shell.ctx = ctx; shell.backend = spx_context_backend(ctx); shell.dtype = a->dtype;
  shell.nrows = a->nrows; shell.ncols = a->ncols; shell.ncand = 1;
  shell.cand[0].format = f; shell.cand[0].engine = e;
  if ((s = spx__plan_fixed(&shell, a, 0, &q))) return s;
  s = spx_plan_time(q, 15, us);
  spx_plan_destroy(q);
  return s;
}

static int spx__plan_dcmp(const void *a, const void *b) { return spx__plan_cmp(a, b); }

/* A plan of format f on ctx for a, to be handed its converted matrix and timed. */
static spx_plan *spx__plan_shell(spx_context *ctx, const spx_csr *a, int f) {
  spx_plan *q = (spx_plan *)spx__calloc(1, sizeof *q);
  if (!q) return NULL;
  q->ctx = ctx; q->backend = spx_context_backend(ctx); q->dtype = a->dtype; q->nrows = a->nrows; q->ncols = a->ncols;
  q->format = (spx_format)f; q->engine = SPX_PLAN_ENGINE_SPX;
  spx_format_params_default(&q->params);
  return q;
}

/* Per format on the calibration matrix a: host conversion (ns per byte of the result) and the
 * kernel's measured time over the model's (which has no per-format factor yet); the median
 * conversion rate becomes the default for formats not measured. */
#define SPX__CAL_STREAM 0
#define SPX__CAL_BLOCK 1
#define SPX__CAL_GATHER 2
/* What a calibration pass stores for a kernel measured at us where the model predicted pred. */
static double spx__cal_value(int mode, double us, double pred, double gather) {
  if (mode != SPX__CAL_GATHER) return us / pred;
  /* a format at or under its streaming prediction pays nothing for gathers; a tiny positive
   * value keeps it "measured" (0 would mean gather_default) */
  return us > pred ? (us - pred) / gather : 1e-6;
}

/* format_staged_convert_ns[f]: f converted on the device from a's CSR already there (staged into
 * *dc on first use, values included), as spx_plan_upgrade converts a deferred plan; the second of
 * two runs (the first compiles). Measured on the H100 before this term: the upgrades took 0.9-2.4 ms
 * on 2-27M nonzeros where the whole spx_dmatrix_convert rate less a scaled upload said 0-43 ms.
 * Failures leave the rate unmeasured (the estimate falls back to that difference). */
static void spx__plan_cal_staged(spx_context *ctx, const spx_csr *a, int f, const spx_format_params *dp, spx__dcsr *dc,
                                 spx_plan_device *d) {
  uint64_t r[9];
  int64_t *hist = NULL;
  double up, t0 = 0;
  int rep;
  spx_dmatrix *dm = NULL;
  if (!dc->ctx) {
    if (spx__dcsr_stage(ctx, a, spx__plan_tpr(a), dc, r, &hist, &up) || r[0] != ~0ull || spx__dcsr_values(dc, a)) {
      SPX_FREE(hist);
      spx__dcsr_free(dc);
      spx_clear_error();
      return;
    }
    SPX_FREE(hist);
  }
  for (rep = 0; rep < 2; rep++) {
    spx_dmatrix_destroy(dm);
    dm = NULL;
    t0 = spx__now();
    if (spx__dmatrix_convert_device(ctx, a, (spx_format)f, dp, NULL, dc, &dm) || !dm || spx_context_synchronize(ctx)) break;
    t0 = spx__now() - t0;
  }
  if (rep == 2 && spx_dmatrix_bytes(dm) > 0) d->format_staged_convert_ns[f] = 1e9 * t0 / (double)spx_dmatrix_bytes(dm);
  spx_dmatrix_destroy(dm);
  spx_clear_error();
}

/* mode 1 (block): the block formats' factor on a matrix of 3x3 blocks; mode 2 (gather): each
 * format's time beyond its full streaming prediction (factors included) on a matrix with random
 * columns, per microsecond of its gather bytes (`gather`: spx__plan_gather_us of a). */
static spx_status spx__plan_cal_formats(spx_context *ctx, const spx_csr *a, int mode, double gather, spx_plan_device *d) {
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  double conv[SPX_FORMAT_MAX + 1];
  double *factor = mode == SPX__CAL_BLOCK ? d->format_factor_block : mode == SPX__CAL_GATHER ? d->format_gather : d->format_factor;
  int n, k, nc = 0, block = mode == SPX__CAL_BLOCK;
  spx_status s;
  spx__dcsr dc; /* a staged on the device: the deferred plans' upgrades convert from there */
  spx_format_params dp;
  spx_plan_device d0 = *d; /* predictions without the term measured: a factor is measured / predicted */
  memset(&dc, 0, sizeof dc);
  spx_format_params_default(&dp);
  memset(d0.format_gather, 0, sizeof d0.format_gather);
  d0.gather_default = d0.gather_cusparse = 0;
  if (mode != SPX__CAL_GATHER) {
    memset(d0.format_factor, 0, sizeof d0.format_factor);
    memset(d0.format_factor_block, 0, sizeof d0.format_factor_block);
  } else if (!(gather > 0)) {
    return SPX_OK; /* no gathers to measure (the host, a matrix within the cache) */
  }
  if ((s = spx__plan_candidates(a, NULL, &d0, 1, 0, 0, 0, c, SPX_FORMAT_MAX + 1, &n, NULL, -1))) return s;
  for (k = 0; k < n; k++) {
    int f = (int)c[k].format;
    spx_plan *q;
    spx_fmt *m = NULL;
    double t0, us;
    const char *nm = spx_format_name((spx_format)f);
    if (c[k].engine != SPX_PLAN_ENGINE_SPX || !(c[k].predicted_us > 0) || f >= SPX_FORMAT_MAX) continue;
    if (block && strcmp(nm, "bsr") && strncmp(nm, "rbp_", 4)) continue;
    if (spx__plan_on_device(spx_context_backend(ctx) == SPX_BACKEND_CUDA, f)) {
      /* Converted on the device: the whole spx_dmatrix_convert (upload included), once to compile */
      spx_dmatrix *dm = NULL;
      int rep;
      for (rep = 0; rep < 2; rep++) {
        spx_dmatrix_destroy(dm);
        dm = NULL;
        t0 = spx__now();
        if (spx_dmatrix_convert(ctx, a, (spx_format)f, NULL, NULL, &dm) || spx_context_synchronize(ctx)) break;
        t0 = spx__now() - t0;
      }
      if (!dm || rep < 2) { spx_clear_error(); spx_dmatrix_destroy(dm); continue; }
      if (spx_dmatrix_bytes(dm) > 0 && mode != SPX__CAL_GATHER) {
        d->format_convert_ns[f] = 1e9 * t0 / (double)spx_dmatrix_bytes(dm); /* not in the host median */
        spx__plan_cal_staged(ctx, a, f, &dp, &dc, d);
      }
      if (!(q = spx__plan_shell(ctx, a, f))) { spx_dmatrix_destroy(dm); return SPX_OUT_OF_MEMORY; }
      q->dm = dm;
      q->built = 1;
      if (spx_plan_time(q, 15, &us) == SPX_OK && us > 0) factor[f] = spx__cal_value(mode, us, c[k].predicted_us, gather);
      spx_clear_error();
      spx_plan_destroy(q);
      continue;
    }
    t0 = spx__now();
    if (spx_fmt_from_csr(a, (spx_format)f, NULL, &m)) { spx_clear_error(); continue; }
    t0 = spx__now() - t0;
    if (spx_fmt_bytes(m) > 0 && mode == SPX__CAL_STREAM) conv[nc++] = d->format_convert_ns[f] = 1e9 * t0 / (double)spx_fmt_bytes(m);
    if (!(q = spx__plan_shell(ctx, a, f))) { spx_fmt_destroy(m); return SPX_OUT_OF_MEMORY; }
    q->fmt = m; /* built from the conversion just timed */
    if (spx__plan_build_from(q, a) == SPX_OK && spx_plan_time(q, 15, &us) == SPX_OK && us > 0)
      factor[f] = spx__cal_value(mode, us, c[k].predicted_us, gather);
    spx_clear_error();
    spx_plan_destroy(q);
  }
  spx__dcsr_free(&dc);
  if (nc) {
    qsort(conv, (size_t)nc, sizeof *conv, spx__plan_dcmp);
    d->convert_ns_per_byte = conv[nc / 2];
    d->convert_ns_per_nnz = 0; /* folded into the per-byte rate */
  }
  return SPX_OK;
}

/* The gather costs (spx_plan_device.format_gather): every format and cuSPARSE on power-law rows
 * (2..2000 nonzeros, exponent 2.2) with random columns, 3M rows: x is 24 MB in double, half the
 * L2 of an H100 and past most others, so the gathers reach well beyond what one SM's L1 holds. */
static spx_status spx__plan_cal_gather(spx_context *ctx, spx_plan_device *d) {
  spx_csr *r = NULL;
  spx__pprof pp;
  double g[SPX_FORMAT_MAX], t_cs = -1, gather;
  int k, ng = 0;
  spx_status s;
  spx_lib_status ls;
  memset(&pp, 0, sizeof pp);
  if ((s = spx_gen_powerlaw(3000000, 2.2, 2, 2000, 7, SPX_DOUBLE, &r)) || (s = spx__pprof_make(r, d->warp, 1, NULL, &pp)))
    goto done;
  gather = spx__plan_gather_us(d, &pp, 8);
  if ((s = spx__plan_cal_formats(ctx, r, SPX__CAL_GATHER, gather, d))) goto done;
  for (k = 0; k < SPX_FORMAT_MAX; k++)
    if (d->format_gather[k] > 0) g[ng++] = d->format_gather[k];
  if (ng) {
    qsort(g, (size_t)ng, sizeof *g, spx__plan_dcmp);
    d->gather_default = g[ng / 2];
  }
  spx_lib_status_get(SPX_LIB_CUSPARSE, &ls);
  if (ls.loaded && d->cusparse_factor > 0 && gather > 0 &&
      spx__plan_probe(ctx, r, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_CUSPARSE, &t_cs) == SPX_OK && t_cs > 0) {
    double pred = d->cusparse_factor * spx__plan_time_us(d, &pp, 8, spx__pb_csr(&pp, NULL, 8), 0, 1);
    d->gather_cusparse = spx__cal_value(SPX__CAL_GATHER, t_cs, pred, gather);
  }
  spx_clear_error();
  s = SPX_OK;
done:
  spx__pprof_free(&pp);
  spx_csr_destroy(r);
  return s;
}

/* Measures d on ctx: streaming bandwidth of a CSR SpMV on a 7-point Laplacian, the launch floor on a
 * 1 x 1 matrix, cuSPARSE relative to the model, the cost of idle lanes on a power-law matrix with
 * ELL-R (one thread per row), upload bandwidth and host conversion rates. */
static spx_status spx__plan_measure(spx_context *ctx, spx_plan_device *d) {
  const int32_t z = 0;
  const double one = 1;
  spx_csr *tiny = NULL, *lap = NULL, *pl = NULL;
  spx__pprof pp;
  double t_launch = 0, t_csr = 0, t_cs = -1, t_er = 0, bal, idle_term, bpus;
  int cuda = spx_context_backend(ctx) == SPX_BACKEND_CUDA, k;
  spx_status s;
  memset(&pp, 0, sizeof pp);
  if ((s = spx_csr_from_coo(1, 1, 1, &z, &z, &one, SPX_DOUBLE, &tiny)) ||
      /* 2M rows, 15M nonzeros (about 200 MB in double): well past any L2, so what the kernels
       * stream is device memory (a 64^3 grid fits the H100's 50 MB L2 and read 60 % fast). */
      (s = spx_gen_poisson3d(cuda ? 128 : 40, cuda ? 128 : 40, cuda ? 128 : 40, 7, SPX_DOUBLE, &lap)) ||
      (s = spx_gen_powerlaw(200000, 2.0, 2, 400, 7, SPX_DOUBLE, &pl)))
    goto done;
  /* The launch floor: the least of three probes (the first ones of a process can run at idle
   * clocks: one calibration read twice the floor small matrices then ran at) */
  for (k = 0; k < 3; k++) {
    double t = 0;
    if ((s = spx__plan_probe(ctx, tiny, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_SPX, &t))) goto done;
    if (k == 0 || t < t_launch) t_launch = t;
  }
  if ((s = spx__plan_probe(ctx, lap, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_SPX, &t_csr))) goto done;
  d->launch_us = t_launch;
  if ((s = spx__pprof_make(lap, d->warp, 1, NULL, &pp))) goto done;
  { /* bandwidth from the balanced CSR time: moved bytes / (time - launch) */
    double moved = (double)(spx__pb_csr(&pp, NULL, 8) + 8 * (lap->nrows + lap->ncols));
    double busy = t_csr - t_launch > 0.05 * t_csr ? t_csr - t_launch : t_csr;
    d->bandwidth_gbs = moved / (busy * 1e3);
  }
  spx__pprof_free(&pp);
  if (cuda) {
    spx_lib_status ls;
    spx_lib_status_get(SPX_LIB_CUSPARSE, &ls);
    if (ls.loaded && spx__plan_probe(ctx, lap, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_CUSPARSE, &t_cs) == SPX_OK && t_cs > 0)
      d->cusparse_factor = t_cs / t_csr;
    spx_clear_error();
  }
  /* Idle lanes: ELL-R runs a thread per row; what it loses against the balanced prediction. */
  if (d->warp > 1) {
    if ((s = spx__pprof_make(pl, d->warp, 1, NULL, &pp))) goto done;
    if ((s = spx__plan_probe(ctx, pl, SPX_FORMAT_ELL_R, SPX_PLAN_ENGINE_SPX, &t_er))) goto done;
    bpus = d->bandwidth_gbs * 1e3;
    d->imbalance_weight = 0;
    /* the same bytes the model charges ELL-R, so the weight absorbs what the padding does not cost */
    bal = spx__plan_time_us(d, &pp, 8, spx__pb_ell_r(&pp, NULL, 8), 0, 1);
    idle_term = pp.idle_row * 12.0 / bpus;
    d->imbalance_weight = idle_term > 0 ? (t_er - bal) / idle_term : 0;
    d->imbalance_weight = d->imbalance_weight < 0 ? 0 : d->imbalance_weight > 2 ? 2 : d->imbalance_weight;
  }
  if (cuda) { /* upload bandwidth: 64 MB, best of three */
    size_t bytes = 64u << 20;
    void *h = spx__calloc(bytes, 1);
    spx_devptr dp = 0;
    double best = 0;
    if (h && spx_device_alloc(ctx, bytes, &dp) == SPX_OK)
      for (k = 0; k < 3; k++) {
        double t0 = spx__now();
        if (spx_device_upload(ctx, dp, h, bytes)) break;
        t0 = spx__now() - t0;
        if (t0 > 0 && (best == 0 || (double)bytes / t0 > best)) best = (double)bytes / t0;
      }
    if (best > 0) d->h2d_gbs = best * 1e-9;
    spx_device_free(ctx, dp);
    SPX_FREE(h);
    spx_clear_error();
  }
  if (!(s = spx__plan_cal_formats(ctx, lap, SPX__CAL_STREAM, 0, d))) {
    spx_csr *el = NULL; /* the block formats again where they meet blocks (3 unknowns per node) */
    if (!(s = spx_gen_elasticity3d(cuda ? 36 : 10, cuda ? 36 : 10, cuda ? 36 : 10, SPX_DOUBLE, &el)))
      s = spx__plan_cal_formats(ctx, el, SPX__CAL_BLOCK, 0, d);
    spx_csr_destroy(el);
  }
  if (!s && cuda) s = spx__plan_cal_gather(ctx, d);
  d->calibrated = 1;
done:
  spx__pprof_free(&pp);
  spx_csr_destroy(tiny);
  spx_csr_destroy(lap);
  spx_csr_destroy(pl);
  return s;
}

spx_status spx_plan_calibrate(spx_context *ctx, int force, spx_plan_device *out) {
  spx_plan_device d;
  const char *path;
  char keep[1400];
  spx_status s;
  if (!ctx || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_calibrate: NULL argument");
  if ((s = spx_plan_device_default(ctx, &d))) return s;
  path = spx_plan_device_path(d.name);
  keep[0] = 0;
  if (path) snprintf(keep, sizeof keep, "%s", path);
  if (!force && keep[0]) {
    spx_plan_device c;
    int hit;
    /* The file once per process: every plan asks, and parsing it cost 0.1 ms of each selection */
    pthread_mutex_lock(&spx__calib_lock);
    hit = spx__calib_have && !strcmp(spx__calib_path, keep) && !strcmp(spx__calib.name, d.name);
    if (hit) c = spx__calib;
    pthread_mutex_unlock(&spx__calib_lock);
    if (hit || (spx_plan_device_load(keep, &c) == SPX_OK && c.calibrated && !strcmp(c.name, d.name))) {
      if (!hit) spx__calib_keep(keep, &c);
      c.memory_bytes = d.memory_bytes; /* free memory is now, not then */
      *out = c;
      return SPX_OK;
    }
    spx_clear_error();
  }
  if ((s = spx__plan_measure(ctx, &d))) return s;
  { /* Measured under a profiler or sanitizer (or on a busy GPU) the constants describe that, not the
     * device: use them for this process but do not store them for every later one. */
    spx_device_info info;
    if (spx_context_device_info(ctx, &info) == SPX_OK && info.peak_bandwidth_gbs > 0 &&
        d.bandwidth_gbs < 0.25 * info.peak_bandwidth_gbs) {
      spx__warn("spx: tuner calibration measured %.0f GB/s, under a quarter of the device's %.0f GB/s peak "
                "(a sanitizer or profiler, or a busy GPU?); not saved\n", d.bandwidth_gbs, info.peak_bandwidth_gbs);
      keep[0] = 0;
    }
    spx_clear_error();
  }
  if (keep[0]) {
    spx__plan_mkdirs(keep);
    if (spx_plan_device_save(keep, &d)) {
      spx__warn("spx: tuner calibration not saved: %s\n", spx_last_error());
      spx_clear_error();
    } else {
      spx__calib_keep(keep, &d);
    }
  }
  *out = d;
  return SPX_OK;
}

/* ---- Re-selection --------------------------------------------------------------------------------- */
struct spx_reselect {
  spx_context *ctx;
  int own_ctx;
  spx_plan_options o;
  spx_plan_device dev;
  pthread_t th;
  int pending;
  const spx_csr *a;
  spx_plan *plan;      /* selected (and host-converted) by the worker */
  spx_status st;
  char err[1100];
  double t_start, t_done;
  int64_t step;
  int have_prev;
  spx_format prev_format;
  spx_plan_engine prev_engine;
};

static void *spx__reselect_worker(void *arg) {
  spx_reselect *r = (spx_reselect *)arg;
  spx_plan *p = (spx_plan *)spx__calloc(1, sizeof *p);
  spx_status s = SPX_OUT_OF_MEMORY;
  if (p) {
    p->ctx = r->ctx;
    p->backend = spx_context_backend(r->ctx);
    s = spx__plan_select(p, r->a, &r->o);
    /* A host conversion belongs to the hidden work too; SELL, SELL16, SDIA and BSR convert on the
     * GPU at the swap (spx_dmatrix_convert), which costs a few SpMVs, not a host pass. */
    if (!s && p->engine == SPX_PLAN_ENGINE_SPX && !p->fmt &&
        !spx__plan_on_device(p->backend == SPX_BACKEND_CUDA, (int)p->format))
      s = spx_fmt_from_csr(p->a, p->format, &p->params, &p->fmt);
  }
  if (s) {
    snprintf(r->err, sizeof r->err, "%s", spx_last_error());
    spx_plan_destroy(p);
    p = NULL;
  }
  r->plan = p;
  r->st = s;
  r->t_done = spx__now();
  return NULL;
}

spx_status spx_reselect_create(spx_context *ctx, const spx_plan_options *options, spx_reselect **out) {
  spx_reselect *r;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_create: NULL output");
  *out = NULL;
  if (!(r = (spx_reselect *)spx__calloc(1, sizeof *r))) return SPX_OUT_OF_MEMORY;
  if (options) r->o = *options;
  else spx_plan_options_default(&r->o);
  if (r->o.strategy == SPX_PLAN_TRIAL) {
    SPX_FREE(r);
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_create: the trial strategy times on the device the caller is "
                                           "using; pick kubota, mps, model or auto (which runs as model here)");
  }
  if (r->o.strategy == SPX_PLAN_AUTO) r->o.strategy = SPX_PLAN_MODEL; /* no trial beside the caller's work */
  if ((int)r->o.strategy < 0 || r->o.strategy >= SPX_PLAN_STRATEGY_COUNT || r->o.expected_calls < 1 ||
      r->o.memory_limit < 0) {
    SPX_FREE(r);
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_create: bad strategy, expected_calls or memory_limit");
  }
  {
    spx_plan shell;
    memset(&shell, 0, sizeof shell);
    if ((s = spx__plan_context(&shell, ctx, &r->o))) { SPX_FREE(r); return s; }
    r->ctx = shell.ctx;
    r->own_ctx = shell.own_ctx;
    /* Calibrate (or read the calibration) and load cuSPARSE now, on this thread, not the worker's. */
    if ((s = spx__plan_devdesc(&shell, &r->o, &r->dev))) {
      if (r->own_ctx) spx_context_destroy(r->ctx);
      SPX_FREE(r);
      return s;
    }
    (void)spx__plan_has_cusparse(&shell);
  }
  r->o.device = &r->dev;
  *out = r;
  return SPX_OK;
}

spx_status spx_reselect_submit(spx_reselect *r, const spx_csr *a) {
  int e;
  if (!r || !a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_submit: NULL argument");
  if (r->pending) return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_submit: step %lld is still pending; call spx_reselect_next first", (long long)r->step);
  r->a = a;
  r->plan = NULL;
  r->st = SPX_OK;
  r->err[0] = 0;
  r->t_start = spx__now();
  r->t_done = r->t_start;
  if ((e = pthread_create(&r->th, NULL, spx__reselect_worker, r)) != 0)
    return spx__fail(SPX_INTERNAL, "spx_reselect_submit: pthread_create: %s", strerror(e));
  r->pending = 1;
  return SPX_OK;
}

spx_status spx_reselect_next(spx_reselect *r, spx_plan **plan, spx_reselect_step *info) {
  double t_call, t_joined;
  spx_plan *p;
  spx_status s;
  if (plan) *plan = NULL;
  if (!r || !plan) return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_next: NULL argument");
  if (!r->pending) return spx__fail(SPX_INVALID_ARGUMENT, "spx_reselect_next: nothing submitted");
  t_call = spx__now();
  pthread_join(r->th, NULL);
  t_joined = spx__now();
  r->pending = 0;
  r->step++;
  if (r->st) return spx__fail(r->st, "re-selection of step %lld: %s", (long long)(r->step - 1), r->err);
  p = r->plan;
  r->plan = NULL;
  if ((s = spx_plan_build(p))) { spx_plan_destroy(p); return s; }
  if (info) {
    double sel = 1e3 * (r->t_done - r->t_start);
    info->step = r->step - 1;
    info->format = p->format;
    info->engine = p->engine;
    info->switched = r->have_prev && (p->format != r->prev_format || p->engine != r->prev_engine);
    info->select_ms = sel;
    info->hidden_ms = SPX__MIN(sel, 1e3 * (t_call - r->t_start));
    if (info->hidden_ms < 0) info->hidden_ms = 0;
    info->exposed_ms = 1e3 * (spx__now() - t_call);
    (void)t_joined;
  }
  r->have_prev = 1;
  r->prev_format = p->format;
  r->prev_engine = p->engine;
  *plan = p;
  return SPX_OK;
}

void spx_reselect_destroy(spx_reselect *r) {
  if (!r) return;
  if (r->pending) pthread_join(r->th, NULL);
  spx_plan_destroy(r->plan);
  if (r->own_ctx) spx_context_destroy(r->ctx);
  SPX_FREE(r);
}
