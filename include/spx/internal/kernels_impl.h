/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU kernel of every in-tree format: which template, which kernels in which order, which
 * specialization constants, and the launch shape. One spec function per format; the table at the
 * bottom is the only list. Out-of-tree formats add theirs with spx_format_set_kernel. Specs are
 * decisions on the host (spx_dmatrix_plan needs no GPU): this file and its registry sit below the
 * device matrices that launch what they choose (cuda_impl.h, through kernels.h). */
#include "common.h"
#include "kernels.h"
#include "../cuda.h"

/* printf into the next define slot of a launch. */
void spx__kdef(spx_kernel_launch *l, const char *fmt, ...) {
  va_list ap;
  if (l->ndefines >= SPX_KERNEL_DEFINES_MAX) return;
  va_start(ap, fmt);
  vsnprintf(l->defines[l->ndefines++], sizeof l->defines[0], fmt, ap);
  va_end(ap);
}

/* A 1-D launch of `kernel` from `tmpl` covering `items` work items with `per_block` per block. */
static void spx__klaunch(spx_kernel_launch *l, const char *tmpl, const char *kernel, int64_t items,
                         unsigned block, int64_t per_block) {
  int64_t g = per_block > 0 ? (items + per_block - 1) / per_block : 1;
  memset(l, 0, sizeof *l);
  snprintf(l->template_name, sizeof l->template_name, "%s", tmpl);
  snprintf(l->kernel, sizeof l->kernel, "%s", kernel);
  l->grid[0] = (unsigned)(g < 1 ? 1 : g > 2147483647 ? 2147483647 : g);
  l->grid[1] = l->grid[2] = 1;
  l->block[0] = block; l->block[1] = l->block[2] = 1;
}

/* A shape constant as the kernels are specialized for it: above 32 rounded up to a bucket, so that
 * nearby matrices share one compiled kernel (the templates take it as a bound of the run-time
 * width). Eight buckets per doubling (33-36, 37-40, ..., 61-64): at most 3 extra steps of an
 * unrolled loop, each a load the L1 serves and an add of nothing. Up to 32 each value is its own:
 * there one extra step is a visible share of a row's work (bench/results/bench/buckets.txt).
 * options.exact_shape: no bucket (for comparison). */
static int64_t spx__shape_bucket(int64_t v, const spx_dmatrix_options *o) {
  int64_t step = 1;
  if (v <= 32 || o->exact_shape) return v;
  while (step * 16 < v) step *= 2; /* 2^(floor(log2(v-1)) - 3) */
  return (v + step - 1) / step * step;
}

/* " unrolled", or " unrolled to 40" where the bucket is past the value, for the summaries. */
static const char *spx__unrolled(int64_t v, const spx_dmatrix_options *o, char buf[40]) {
  int64_t b = spx__shape_bucket(v, o);
  if (b == v) return " unrolled";
  snprintf(buf, 40, " unrolled to %lld", (long long)b);
  return buf;
}

/* "ell K=27 unrolled, 256 threads" and the like. */
#define SPX__KSUM(plan, ...) snprintf((plan)->summary, sizeof (plan)->summary, __VA_ARGS__)

/* Longest loop a spec asks a template to unroll fully (ELL-like widths, diagonals, pairs): past it
 * the template's run-time loop is as fast and the cubin stays small. */
#define SPX__UNROLL_MAX 64

static spx_status spx__ks_ell(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                              spx_kernel_plan *p) {
  const spx_fmt_ell *e = (const spx_fmt_ell *)m->impl;
  unsigned b = o->block ? (unsigned)o->block : 256;
  spx_kernel_launch *l = &p->launch[0];
  char ub[40];
  (void)dev;
  p->nlaunch = 1;
  spx__klaunch(l, "ell", "spx_ell_spmv", m->nrows, b, b);
  if (e->k <= SPX__UNROLL_MAX) {
    spx__kdef(l, "SPX_K=%d", (int)spx__shape_bucket(e->k, o));
    l->nshape = 1;
  }
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (m->nrows * (int64_t)e->k >= INT32_MAX) spx__kdef(l, "SPX_SLOT_T=long long");
  SPX__KSUM(p, "ell: spx_ell_spmv K=%d%s, %u threads/block", (int)e->k, e->k <= SPX__UNROLL_MAX ? spx__unrolled(e->k, o, ub) : "", b);
  return SPX_OK;
}

static spx_status spx__ks_ell_r(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                spx_kernel_plan *p) {
  const spx_fmt_ell_r *e = (const spx_fmt_ell_r *)m->impl;
  unsigned b = o->block ? (unsigned)o->block : 256;
  spx_kernel_launch *l = &p->launch[0];
  (void)dev;
  p->nlaunch = 1;
  spx__klaunch(l, "ell", "spx_ell_r_spmv", m->nrows, b, b);
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (m->nrows * (int64_t)e->k >= INT32_MAX) spx__kdef(l, "SPX_SLOT_T=long long");
  SPX__KSUM(p, "ell_r: spx_ell_r_spmv K<=%d, %u threads/block", (int)e->k, b);
  return SPX_OK;
}

int spx__tpr_of(double mean, int want) {
  int t = 1;
  if (want >= 1 && want <= 32 && !(want & (want - 1))) return want;
  while (t < 32 && 2.0 * t <= mean * 1.5) t *= 2;
  return t;
}

/* Threads per row of the CSR vector kernel: the largest power of two within 1..32 not above a fifth
 * of the mean row length (whole warps on short rows idle most lanes and lose bandwidth; the
 * rates are in docs/performance.md, "CSR kernel choice"), or `want` when it is one. */
static int spx__tpr_mean(double mean) {
  int t = 1;
  while (t < 32 && 2.0 * t * 5.0 <= mean) t *= 2;
  return t;
}
int spx__tpr(const spx_fmt *m, int want) {
  if (want >= 1 && want <= 32 && !(want & (want - 1))) return want;
  return spx__tpr_mean(m->nrows ? (double)m->nnz / (double)m->nrows : 0);
}

/* Threads per block for kernels that use warps and shared memory: o->block when it is a multiple of
 * 32 in 64..1024, else 256. */
static unsigned spx__kblock(const spx_dmatrix_options *o) {
  return o->block >= 64 && o->block <= 1024 && o->block % 32 == 0 ? (unsigned)o->block : 256;
}

/* Items (row ends + nonzeros) per block of the load-balanced CSR kernel: 8 per thread at 256
 * threads; the block stages them in 2048 * (4 + sizeof(T)) bytes of shared memory. */
#define SPX__LB_ITEMS 2048

/* When the vector kernel loses to load balancing: B = longest/mean row > 8 with rows of 64 or more
 * (a few long rows serialize their warps while the others idle), or mean row > 64 with a
 * coefficient of variation > 0.5 (whole-warp rows of very different lengths). Merge-path wins on
 * skewed rows and loses clearly on regular ones, hence vector unless skewed (docs/performance.md,
 * "CSR kernel choice"). From n rows, nnz nonzeros, the longest row and the sum of the squared row
 * lengths: integers, so that the row scan below and spx_csr_kernel_options' histogram give the
 * same numbers to the bit, and so the same kernel. */
static int spx__csr_skewed_sums(int64_t n, int64_t nnz, int64_t longest, int64_t sq, double *ratio) {
  const double mean = n > 0 ? (double)nnz / (double)n : 0, var = n > 0 ? (double)sq / (double)n - mean * mean : 0;
  *ratio = mean > 0 ? (double)longest / mean : 0;
  if (!(mean > 0)) return 0;
  return (*ratio > 8 && longest >= 64) || (mean > 64 && var > 0.25 * mean * mean);
}

/* The longest row and the sum of the squared lengths of c's n rows, in one pass: integer sums, no
 * chain of dependent floating-point adds (this runs on the planner's path for small matrices). */
static void spx__csr_row_sums(const spx_fmt_csr *c, int64_t n, int64_t *longest, int64_t *sq) {
  int64_t i, q = 0;
  int32_t mx = 0; /* 32-bit pointers, 32-bit lengths: their max vectorizes */
#if defined(_OPENMP)
#pragma omp simd reduction(max : mx) reduction(+ : q)
#endif
  for (i = 0; i < n; i++) {
    const int32_t len = c->ptr[i + 1] - c->ptr[i];
    mx = len > mx ? len : mx;
    q += (int64_t)len * len;
  }
  *longest = mx;
  *sq = q;
}

/* Products a CSR-stream block stages per chunk (2048 * sizeof(T) bytes of shared memory). */
#define SPX__STREAM_ITEMS 2048

/* When CSR-stream beats the vector and merge-path kernels: large matrices (small ones are latency-
 * bound, where its two barriers per chunk cost more than they save) with short rows on average and
 * no row so long that one thread's serial sum from shared memory dominates: it wins on short
 * irregular rows (graphs, circuits, power-law), ties on stencils and loses on long FEM rows
 * (docs/performance.md, "CSR kernel choice"). */
#define SPX__STREAM_MEAN_MAX 32.0
#define SPX__STREAM_ROW_MAX 2048
static int spx__csr_stream_pays_stats(int64_t n, int64_t nnz, int64_t longest) {
  return nnz >= SPX__CSR_SMALL_NNZ && n > 0 && (double)nnz / (double)n <= SPX__STREAM_MEAN_MAX && longest <= SPX__STREAM_ROW_MAX;
}

/* A small matrix with a few long rows is latency-bound by its longest row, and the merge-path
 * kernel's two launches cost more than the imbalance: one launch of the vector kernel with enough
 * threads per row that the longest row takes at most ~8 steps (bench-small: G51, bcsstk08, bp_*).
 * Rows longer than 8 steps of a whole warp (hundreds of entries, bench-small: adder_dcop_*,
 * hangGlider_*) are summed by their whole block instead, in the same launch: returns 1 then. */
static int spx__csr_widen(int64_t longest, int *tpr) {
  while (*tpr < 32 && (longest + *tpr - 1) / *tpr > 8) *tpr *= 2;
  return (longest + *tpr - 1) / *tpr > 8;
}

double spx__csr_small_steps(int64_t n, int64_t nnz, int64_t longest, int64_t sq) {
  double ratio;
  int tpr = spx__tpr_mean(n > 0 ? (double)nnz / (double)n : 0);
  if (spx__csr_skewed_sums(n, nnz, longest, sq, &ratio) && spx__csr_widen(longest, &tpr)) return 8;
  return (double)((longest + tpr - 1) / tpr);
}

spx_status spx_csr_kernel_options(int64_t nrows, int64_t nnz, const int64_t *row_hist, int64_t row_max,
                                  spx_dmatrix_options *o) {
  double mean, ratio;
  int64_t l, rows = 0, sum = 0, sq = 0;
  if (!o || (!row_hist && nrows > 0)) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_kernel_options: NULL argument");
  memset(o, 0, sizeof *o);
  if (nrows < 0 || nnz < 0 || row_max < 0) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_kernel_options: negative size");
  for (l = 0; l <= row_max && nrows > 0; l++) {
    if (row_hist[l] < 0) return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_kernel_options: negative count of rows of length %lld", (long long)l);
    rows += row_hist[l];
    sum += row_hist[l] * l;
  }
  if (rows != nrows || sum != nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_csr_kernel_options: the histogram holds %lld rows and %lld nonzeros, "
                     "not %lld and %lld", (long long)rows, (long long)sum, (long long)nrows, (long long)nnz);
  /* each term is at most nnz * row_max once the sums agree: saturated where that would overflow */
  if (row_max > 0 && nnz > INT64_MAX / row_max) sq = INT64_MAX;
  else
    for (l = 0; l <= row_max && nrows > 0; l++) sq += row_hist[l] * l * l;
  mean = nrows > 0 ? (double)nnz / (double)nrows : 0;
  o->threads_per_row = spx__tpr_mean(mean);
  /* the rules of spx__ks_csr below, in its order, on the histogram's statistics (the same longest
   * row and sum of squares as its row scan) */
  if (nnz < SPX__CSR_SMALL_NNZ) {
    if (spx__csr_skewed_sums(nrows, nnz, row_max, sq, &ratio)) o->split = spx__csr_widen(row_max, &o->threads_per_row);
    return SPX_OK;
  }
  if (spx__csr_stream_pays_stats(nrows, nnz, row_max)) o->stream = 1;
  else if (spx__csr_skewed_sums(nrows, nnz, row_max, sq, &ratio)) o->load_balance = 1;
  return SPX_OK;
}

/* CSR: the vector kernel (csr.cu) with threads per row from the mean row length, or, on skewed
 * rows (spx__csr_skewed_sums) and unless threads_per_row is given, the merge-path kernel (csr_lb.cu):
 * spx_csr_lb_fix scales the rows that block boundaries cut (when there is more than one block),
 * then spx_csr_lb_spmv. */
static spx_status spx__ks_csr(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                              spx_kernel_plan *p) {
  unsigned b = o->block ? (unsigned)o->block : 256;
  int tpr = spx__tpr(m, o->threads_per_row);
  spx_kernel_launch *l = &p->launch[0];
  const spx_fmt_csr *c = (const spx_fmt_csr *)m->impl;
  double ratio = 0;
  int64_t longest = 0, sq = 0;
  int split = 0, skewed = 0, pays = 0;
  (void)dev;
  /* the rows decide only where the options leave it open (none fixed, streaming not refused) */
  if (c->ptr && m->nrows > 0 && m->nnz > 0 && !o->threads_per_row && !o->load_balance && o->stream <= 0) {
    spx__csr_row_sums(c, m->nrows, &longest, &sq);
    skewed = spx__csr_skewed_sums(m->nrows, m->nnz, longest, sq, &ratio);
    pays = o->stream == 0 && spx__csr_stream_pays_stats(m->nrows, m->nnz, longest);
  }
  if (skewed && m->nnz < SPX__CSR_SMALL_NNZ) {
    split = spx__csr_widen(longest, &tpr);
  } else if (o->load_balance > 0 || (skewed && !pays)) {
    int64_t ipb, nblk;
    int ipt;
    b = spx__kblock(o);
    ipt = SPX__LB_ITEMS / (int)b;
    ipb = (int64_t)b * ipt;
    nblk = (m->nrows + m->nnz + ipb - 1) / ipb;
    p->nlaunch = 0;
    if (nblk > 1) {
      l = &p->launch[p->nlaunch++];
      spx__klaunch(l, "csr_lb", "spx_csr_lb_fix", (nblk - 1) * 32, b, b);
      spx__kdef(l, "SPX_BLOCK=%u", b);
      spx__kdef(l, "SPX_IPT=%d", ipt);
    }
    l = &p->launch[p->nlaunch++];
    spx__klaunch(l, "csr_lb", "spx_csr_lb_spmv", m->nrows + m->nnz, b, ipb);
    spx__kdef(l, "SPX_BLOCK=%u", b);
    spx__kdef(l, "SPX_IPT=%d", ipt);
    if (o->load_balance > 0)
      SPX__KSUM(p, "csr: merge-path load balancing (forced), %d items/thread, %u threads/block%s", ipt, b,
                nblk > 1 ? ", cut rows by atomics" : "");
    else
      SPX__KSUM(p, "csr: merge-path load balancing (longest/mean row %.1f), %d items/thread, %u threads/block%s",
                ratio, ipt, b, nblk > 1 ? ", cut rows by atomics" : "");
    return SPX_OK;
  }
  if (o->stream > 0 || pays) {
    /* A chunk of SPX__STREAM_ITEMS products in shared memory whatever the block size. */
    int npt;
    b = spx__kblock(o);
    npt = SPX__STREAM_ITEMS / (int)b;
    p->nlaunch = 1;
    spx__klaunch(l, "csr", "spx_csr_stream_spmv", m->nrows, b, b);
    spx__kdef(l, "SPX_BLOCK=%u", b);
    spx__kdef(l, "SPX_NPT=%d", npt);
    SPX__KSUM(p, "csr: spx_csr_stream_spmv (block-streamed products, %d per thread per chunk), %u threads/block",
              npt, b);
    return SPX_OK;
  }
  if (o->split > 0) split = 1;
  if (b % (unsigned)tpr || (split && (b % 32 || b > 1024))) b = 256;
  p->nlaunch = 1;
  spx__klaunch(l, "csr", "spx_csr_spmv", m->nrows, b, b / (unsigned)tpr);
  spx__kdef(l, "SPX_TPR=%d", tpr);
  if (split) spx__kdef(l, "SPX_SPLIT=8"); /* a shape constant too: the generic kernel goes without */
  l->nshape = l->ndefines;
  spx__kdef(l, "SPX_BLOCK=%u", b);
  SPX__KSUM(p, "csr: spx_csr_spmv %d threads/row, %u threads/block%s", tpr, b,
            split ? ", rows over 8 steps summed by the whole block" : "");
  return SPX_OK;
}

/* Widest slice a SELL kernel unrolls (guarded, uniform per slice): wider ones loop at run time. */
#define SPX__SELL_UNROLL_MAX 32

/* SELL and SELL16: one thread per sorted position, C fixed, the slot loop unrolled up to the widest
 * slice when that is at most SPX__SELL_UNROLL_MAX (loads of a row all in flight at once). */
static spx_status spx__ks_sellx(const spx_fmt *m, const spx_dmatrix_options *o, spx_kernel_plan *p, const char *name,
                                const char *kernel, int32_t c, int32_t sigma, int64_t nslices, const int32_t *slice_ptr) {
  unsigned b = o->block ? (unsigned)o->block : 256;
  spx_kernel_launch *l = &p->launch[0];
  int64_t sl, wmax = 0;
  for (sl = 0; slice_ptr && sl < nslices; sl++) wmax = SPX__MAX(wmax, (slice_ptr[sl + 1] - slice_ptr[sl]) / c);
  p->nlaunch = 1;
  spx__klaunch(l, "sell", kernel, m->nrows, b, b);
  spx__kdef(l, "SPX_C=%d", (int)c);
  if (wmax <= SPX__SELL_UNROLL_MAX) spx__kdef(l, "SPX_WMAX=%d", (int)SPX__MIN(spx__shape_bucket(wmax, o), SPX__SELL_UNROLL_MAX));
  l->nshape = l->ndefines;
  spx__kdef(l, "SPX_BLOCK=%u", b);
  SPX__KSUM(p, "%s: %s C=%d sigma=%d, widest slice %d%s, %u threads/block", name, kernel, (int)c, (int)sigma,
            (int)wmax, wmax <= SPX__SELL_UNROLL_MAX ? " unrolled" : "", b);
  return SPX_OK;
}

static spx_status spx__ks_sell(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                               spx_kernel_plan *p) {
  const spx_fmt_sell *e = (const spx_fmt_sell *)m->impl;
  (void)dev;
  return spx__ks_sellx(m, o, p, "sell", "spx_sell_spmv", e->c, e->sigma, e->nslices, e->slice_ptr);
}

static spx_status spx__ks_sell16(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                 spx_kernel_plan *p) {
  const spx_fmt_sell16 *e = (const spx_fmt_sell16 *)m->impl;
  (void)dev;
  return spx__ks_sellx(m, o, p, "sell16", "spx_sell16_spmv", e->c, e->sigma, e->nslices, e->slice_ptr);
}

/* SDIA: a thread per row; the widest slice unrolls the diagonal loop (as SELL's slots). */
static spx_status spx__ks_sdia(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                               spx_kernel_plan *p) {
  const spx_fmt_sdia *e = (const spx_fmt_sdia *)m->impl;
  unsigned b = o->block ? (unsigned)o->block : 256;
  spx_kernel_launch *l = &p->launch[0];
  int64_t sl, wmax = 0;
  (void)dev;
  for (sl = 0; e->slice_ptr && sl < e->nslices; sl++) wmax = SPX__MAX(wmax, e->slice_ptr[sl + 1] - e->slice_ptr[sl]);
  p->nlaunch = 1;
  spx__klaunch(l, "sdia", "spx_sdia_spmv", m->nrows, b, b);
  spx__kdef(l, "SPX_C=%d", (int)e->c);
  if (wmax <= SPX__SELL_UNROLL_MAX) spx__kdef(l, "SPX_WMAX=%d", (int)SPX__MIN(spx__shape_bucket(wmax, o), SPX__SELL_UNROLL_MAX));
  l->nshape = l->ndefines;
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (e->ndiags * (int64_t)e->c >= INT32_MAX || m->nrows + m->ncols >= INT32_MAX) spx__kdef(l, "SPX_SLOT_T=long long");
  SPX__KSUM(p, "sdia: spx_sdia_spmv C=%d, widest slice %d diagonals%s, %u threads/block", (int)e->c, (int)wmax,
            wmax <= SPX__SELL_UNROLL_MAX ? " unrolled" : "", b);
  return SPX_OK;
}

static spx_status spx__ks_coo(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                              spx_kernel_plan *p) {
  unsigned b = o->block ? (unsigned)o->block : 256;
  (void)dev;
  p->nlaunch = 2;
  spx__klaunch(&p->launch[0], "coo", "spx_coo_scale", m->nrows, b, b);
  spx__kdef(&p->launch[0], "SPX_BLOCK=%u", b);
  spx__klaunch(&p->launch[1], "coo", "spx_coo_spmv", m->nnz, b, b);
  spx__kdef(&p->launch[1], "SPX_BLOCK=%u", b);
  SPX__KSUM(p, "coo: scale y, then warp-segmented atomics, %u threads/block", b);
  return SPX_OK;
}

/* JDS: one thread per sorted position; the diagonal loop unrolled over SPX_NJD when it is short. */
static spx_status spx__ks_jds(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                              spx_kernel_plan *p) {
  const spx_fmt_jds *e = (const spx_fmt_jds *)m->impl;
  unsigned b = o->block ? (unsigned)o->block : 256;
  spx_kernel_launch *l = &p->launch[0];
  char ub[40];
  int unroll = e->njd <= SPX__UNROLL_MAX;
  (void)dev;
  p->nlaunch = 1;
  spx__klaunch(l, "jds", "spx_jds_spmv", m->nrows, b, b);
  if (unroll) {
    spx__kdef(l, "SPX_NJD=%d", (int)spx__shape_bucket(e->njd, o));
    l->nshape = 1;
  }
  spx__kdef(l, "SPX_BLOCK=%u", b);
  SPX__KSUM(p, "jds: spx_jds_spmv %d diagonals%s, %u threads/block", (int)e->njd, unroll ? spx__unrolled(e->njd, o, ub) : "", b);
  return SPX_OK;
}

/* HYB: the ELL part writes alpha*sum + beta*y (K unrolled), then the COO part adds with warp-
 * segmented atomics (only when it has entries). */
static spx_status spx__ks_hyb(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                              spx_kernel_plan *p) {
  const spx_fmt_hyb *e = (const spx_fmt_hyb *)m->impl;
  unsigned b = spx__kblock(o);
  spx_kernel_launch *l = &p->launch[0];
  char ub[40];
  int unroll = e->k <= SPX__UNROLL_MAX;
  (void)dev;
  p->nlaunch = 1;
  spx__klaunch(l, "hyb", "spx_hyb_ell", m->nrows, b, b);
  if (unroll) {
    spx__kdef(l, "SPX_K=%d", (int)spx__shape_bucket(e->k, o));
    l->nshape = 1;
  }
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (m->nrows * (int64_t)e->k >= INT32_MAX) spx__kdef(l, "SPX_SLOT_T=long long");
  if (e->ncoo > 0) {
    l = &p->launch[p->nlaunch++];
    spx__klaunch(l, "hyb", "spx_hyb_coo", e->ncoo, b, b);
    spx__kdef(l, "SPX_BLOCK=%u", b);
  }
  SPX__KSUM(p, "hyb: spx_hyb_ell K=%d%s%s, %u threads/block", (int)e->k, unroll ? spx__unrolled(e->k, o, ub) : "",
            e->ncoo > 0 ? " + spx_hyb_coo warp-segmented atomics" : "", b);
  return SPX_OK;
}

/* SS: scale y by beta, then one block per tile of max(seg, block*SPX__SS_VPT) slots. The block
 * is a power of two (tiles must hold whole segments). */
#define SPX__SS_VPT 8
static spx_status spx__ks_ss(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                             spx_kernel_plan *p) {
  const spx_fmt_ss *e = (const spx_fmt_ss *)m->impl;
  unsigned b = spx__kblock(o);
  int64_t tile;
  (void)dev;
  while (b & (b - 1)) b &= b - 1; /* round down to a power of two */
  tile = e->seg > (int64_t)b * SPX__SS_VPT ? e->seg : (int64_t)b * SPX__SS_VPT;
  p->nlaunch = 2;
  spx__klaunch(&p->launch[0], "ss", "spx_ss_scale", m->nrows, b, b);
  spx__kdef(&p->launch[0], "SPX_BLOCK=%u", b);
  spx__klaunch(&p->launch[1], "ss", "spx_ss_spmv", e->nseg * e->seg, b, tile);
  spx__kdef(&p->launch[1], "SPX_SEG=%d", (int)e->seg);
  p->launch[1].nshape = 1;
  spx__kdef(&p->launch[1], "SPX_BLOCK=%u", b);
  spx__kdef(&p->launch[1], "SPX_VPT=%d", SPX__SS_VPT);
  SPX__KSUM(p, "ss: scale y, then spx_ss_spmv seg=%d, %lld slots/block, %d per thread, block scan, %u threads/block",
            (int)e->seg, (long long)tile, SPX__SS_VPT, b);
  return SPX_OK;
}

/* BSR: R*W lanes per block row (W block lanes, a power of two with R*W <= 32, up to the mean blocks
 * per block row); C unrolled. */
static spx_status spx__ks_bsr(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                              spx_kernel_plan *p) {
  const spx_fmt_bsr *e = (const spx_fmt_bsr *)m->impl;
  unsigned b = spx__kblock(o);
  spx_kernel_launch *l = &p->launch[0];
  double mb = e->nbrows ? (double)e->nblocks / (double)e->nbrows : 0;
  int w = 1;
  (void)dev;
  while (2 * w * e->r <= 32 && 2 * w <= mb) w *= 2;
  p->nlaunch = 1;
  if (w == 1) spx__klaunch(l, "bsr", "spx_bsr_spmv", e->nbrows * e->r, b, b);
  else {
    int64_t gpw = 32 / (e->r * w), warps = (e->nbrows + gpw - 1) / gpw;
    spx__klaunch(l, "bsr", "spx_bsr_spmv", warps * 32, b, b);
  }
  spx__kdef(l, "SPX_R=%d", (int)e->r);
  spx__kdef(l, "SPX_C=%d", (int)e->c);
  l->nshape = 2;
  spx__kdef(l, "SPX_W=%d", w);
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (e->nblocks * e->r * e->c >= INT32_MAX) spx__kdef(l, "SPX_SLOT_T=long long");
  SPX__KSUM(p, "bsr: spx_bsr_spmv %dx%d blocks unrolled, %d lanes per block row (%d per block-row row), "
            "%u threads/block", (int)e->r, (int)e->c, (int)e->r * w, w, b);
  return SPX_OK;
}

/* Block lengths of an RBP matrix, 2..SPX__UNROLL_MAX counted one by one (longer ones only in total). */
typedef struct spx__rbp_runs {
  int64_t count[SPX__UNROLL_MAX + 1], total;
} spx__rbp_runs;

/* Adds the blocks given by nb first/last pairs at comp_col[base + 2q*stride], [base + (2q+1)*stride],
 * stopping at a padding pair (last < first). */
static void spx__rbp_runs_add(spx__rbp_runs *h, const int32_t *comp_col, int64_t base, int64_t stride, int64_t nb) {
  int64_t q;
  for (q = 0; q < nb; q++) {
    int64_t f = comp_col[base + 2 * q * stride], len = comp_col[base + (2 * q + 1) * stride] - f + 1;
    if (len <= 0) break;
    h->total++;
    if (len <= SPX__UNROLL_MAX) h->count[len]++;
  }
}

/* SPX_RUN: the most frequent block length when it covers at least half of the blocks (the template
 * unrolls blocks of that length, loops over the others), else 0; *all = 1 when every block has it. */
static int spx__rbp_run(const spx__rbp_runs *h, int *all) {
  int len, best = 0;
  for (len = 2; len <= SPX__UNROLL_MAX; len++)
    if (h->count[len] > h->count[best]) best = len;
  *all = best && h->count[best] == h->total;
  return best && 2 * h->count[best] >= h->total ? best : 0;
}

/* RBP-CSR: Algorithm 2 widened to TPR lanes per row (the power of two nearest the mean blocks plus
 * isolated entries per row; threads_per_row forces it, 1 is the paper's thread per row); SPX_RUN
 * unrolls the common block length, SPX_RUN_ALL (every block that long) drops the length scan. */
static spx_status spx__ks_rbp_csr(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                  spx_kernel_plan *p) {
  const spx_fmt_rbp_csr *e = (const spx_fmt_rbp_csr *)m->impl;
  unsigned b = spx__kblock(o);
  spx_kernel_launch *l = &p->launch[0];
  double mean = m->nrows ? (double)(e->nblocks + e->nnon) / (double)m->nrows : 0;
  int tpr = spx__tpr_of(mean, o->threads_per_row), run, all;
  spx__rbp_runs h;
  (void)dev;
  memset(&h, 0, sizeof h);
  if (e->comp_col) spx__rbp_runs_add(&h, e->comp_col, 0, 1, e->nblocks);
  run = spx__rbp_run(&h, &all);
  p->nlaunch = 1;
  spx__klaunch(l, "rbp", "spx_rbp_csr_spmv", m->nrows, b, b / (unsigned)tpr);
  if (run) spx__kdef(l, "SPX_RUN=%d", run);
  if (run && all) spx__kdef(l, "SPX_RUN_ALL=1");
  l->nshape = l->ndefines;
  spx__kdef(l, "SPX_TPR=%d", tpr);
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (run) SPX__KSUM(p, "rbp_csr: spx_rbp_csr_spmv runs of %d unrolled (%s), %d threads/row, %u threads/block", run,
                     all ? "all" : "most", tpr, b);
  else SPX__KSUM(p, "rbp_csr: spx_rbp_csr_spmv %d threads/row, %u threads/block", tpr, b);
  return SPX_OK;
}

/* RBP-ELL and RBP-ELL-R: one thread per row; SPX_KC unrolls the pair loop when Kc is small,
 * SPX_RUN the common block length. rl NULL for RBP-ELL. */
static spx_status spx__ks_rbpe(const spx_fmt *m, const spx_dmatrix_options *o, spx_kernel_plan *p, const char *name,
                               const char *kernel, int32_t kv, int32_t kc, const int32_t *comp_col,
                               const int32_t *rl) {
  unsigned b = o->block ? (unsigned)o->block : 256;
  spx_kernel_launch *l = &p->launch[0];
  char ub[40];
  int run, all, unroll = kc <= SPX__UNROLL_MAX;
  int64_t i, n = m->nrows;
  spx__rbp_runs h;
  memset(&h, 0, sizeof h);
  for (i = 0; comp_col && i < n; i++) spx__rbp_runs_add(&h, comp_col, i, n, rl ? rl[i] : kc / 2);
  run = spx__rbp_run(&h, &all);
  p->nlaunch = 1;
  spx__klaunch(l, "rbp", kernel, n, b, b);
  if (unroll) spx__kdef(l, "SPX_KC=%d", (int)spx__shape_bucket(kc, o)); /* pairs: even, as kc is */
  if (run) spx__kdef(l, "SPX_RUN=%d", run);
  l->nshape = l->ndefines;
  spx__kdef(l, "SPX_BLOCK=%u", b);
  if (n * (int64_t)(kv > kc ? kv : kc) >= INT32_MAX) spx__kdef(l, "SPX_SLOT_T=long long");
  if (run) SPX__KSUM(p, "%s: %s Kv=%d Kc=%d%s, runs of %d unrolled (%s), %u threads/block", name, kernel, (int)kv,
                     (int)kc, unroll ? spx__unrolled(kc, o, ub) : "", run, all ? "all" : "most", b);
  else SPX__KSUM(p, "%s: %s Kv=%d Kc=%d%s, %u threads/block", name, kernel, (int)kv, (int)kc, unroll ? spx__unrolled(kc, o, ub) : "", b);
  return SPX_OK;
}

static spx_status spx__ks_rbp_ell(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                  spx_kernel_plan *p) {
  const spx_fmt_rbp_ell *e = (const spx_fmt_rbp_ell *)m->impl;
  (void)dev;
  return spx__ks_rbpe(m, o, p, "rbp_ell", "spx_rbp_ell_spmv", e->kv, e->kc, e->comp_col, NULL);
}

static spx_status spx__ks_rbp_ell_r(const spx_fmt *m, const spx_dmatrix_options *o, const spx_device_info *dev,
                                    spx_kernel_plan *p) {
  const spx_fmt_rbp_ell_r *e = (const spx_fmt_rbp_ell_r *)m->impl;
  (void)dev;
  return spx__ks_rbpe(m, o, p, "rbp_ell_r", "spx_rbp_ell_r_spmv", e->kv, e->kc, e->comp_col, e->rl);
}

/* Formats with a GPU kernel. _(ENUM suffix, spec function) */
#define SPX__KERNELS(_)                \
  _(COO,       spx__ks_coo)            \
  _(CSR,       spx__ks_csr)            \
  _(ELL,       spx__ks_ell)            \
  _(ELL_R,     spx__ks_ell_r)          \
  _(JDS,       spx__ks_jds)            \
  _(SELL,      spx__ks_sell)           \
  _(HYB,       spx__ks_hyb)            \
  _(RBP_CSR,   spx__ks_rbp_csr)        \
  _(RBP_ELL,   spx__ks_rbp_ell)        \
  _(RBP_ELL_R, spx__ks_rbp_ell_r)      \
  _(SS,        spx__ks_ss)             \
  _(BSR,       spx__ks_bsr)            \
  _(SELL16,    spx__ks_sell16)         \
  _(SDIA,      spx__ks_sdia)

/* The registry: in-tree specs from the table above, then what spx_format_set_kernel adds. */
static spx_kernel_spec_fn spx__kernel_specs[SPX_FORMAT_MAX];
static int spx__kernel_specs_ready;

static void spx__kernel_specs_init(void) {
  if (spx__kernel_specs_ready) return;
#define SPX__KSET(E, fn) spx__kernel_specs[SPX_FORMAT_##E] = fn;
  SPX__KERNELS(SPX__KSET)
#undef SPX__KSET
  spx__kernel_specs_ready = 1;
}

spx_kernel_spec_fn spx__kernel_spec(spx_format f) {
  spx__kernel_specs_init();
  return f >= 0 && f < SPX_FORMAT_MAX ? spx__kernel_specs[f] : NULL;
}

spx_status spx_format_set_kernel(spx_format f, spx_kernel_spec_fn fn) {
  if (!spx_format_info(f)) return spx__fail(SPX_INVALID_ARGUMENT, "spx_format_set_kernel: unknown format %d", (int)f);
  spx__kernel_specs_init();
  spx__kernel_specs[f] = fn;
  return SPX_OK;
}

int spx_format_has_kernel(spx_format f) {
  spx__kernel_specs_init();
  return f >= 0 && f < SPX_FORMAT_MAX && spx__kernel_specs[f] != NULL;
}

spx_status spx_dmatrix_plan(const spx_fmt *m, const spx_dmatrix_options *opt, spx_kernel_plan *plan) {
  spx_dmatrix_options o;
  spx_device_info dev;
  spx_kernel_spec_fn spec;
  if (!m || !plan) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dmatrix_plan: NULL argument");
  memset(plan, 0, sizeof *plan);
  if (!(spec = spx__kernel_spec(m->format)))
    return spx__fail(SPX_UNSUPPORTED, "format '%s' has no GPU kernel", spx_format_name(m->format));
  if (opt) o = *opt;
  else memset(&o, 0, sizeof o);
  memset(&dev, 0, sizeof dev);
  return spec(m, &o, &dev, plan);
}
