/* SPDX-License-Identifier: BSD-3-Clause */
/* Calibration (spx_plan_calibrate): the device description measured on generated matrices (a
 * 7-point Laplacian, power-law rows, 3-D elasticity): launch floor, bandwidth, cuSPARSE's factor
 * and call floor, the cost of idle lanes, the upload rate, each format's conversion rate, time
 * factor, gather cost and floor, HYB's atomic adds; then kept in the calibration file. It calls the generators (gen.h), the plan object and
 * the trial's one-candidate plans (plan_object_impl.h, plan_strategy_impl.h), the model, the
 * profile, the device file (plan_device_impl.h) and the staged arrays (stage_impl.h). */
#include "common.h"
#include "dmatrix.h"
#include "tuner.h"
#include "../device.h"
#include "../gen.h"
#include "../loader.h"
#include "../plan.h"

/* A one-candidate plan of a (format f on engine e) on ctx, built as a plan converts: with the
 * formats' default parameters (zeros are out of range for ELL, SELL, SELL16, SDIA, BSR and SS). */
static spx_status spx__plan_probe_plan(spx_context *ctx, const spx_csr *a, spx_format f, spx_plan_engine e, spx_plan **q) {
  spx_plan shell;
  memset(&shell, 0, sizeof shell);
  shell.ctx = ctx; shell.backend = spx_context_backend(ctx); shell.dtype = a->dtype;
  shell.nrows = a->nrows; shell.ncols = a->ncols; shell.ncand = 1;
  shell.cand[0].format = f; shell.cand[0].engine = e;
  spx_format_params_default(&shell.params);
  return spx__plan_fixed(&shell, a, 0, q);
}

/* Median microseconds of one candidate (format, engine) on a, built in ctx. */
static spx_status spx__plan_probe(spx_context *ctx, const spx_csr *a, spx_format f, spx_plan_engine e, double *us) {
  spx_plan *q = NULL;
  spx_status s;
  if ((s = spx__plan_probe_plan(ctx, a, f, e, &q))) return s;
  s = spx_plan_time(q, 15, us);
  spx_plan_destroy(q);
  return s;
}

/* The least of n probes of a candidate, microseconds (the first ones of a process can run at idle
 * clocks, up to twice the floor small matrices then run at). */
static spx_status spx__plan_probe_least(spx_context *ctx, const spx_csr *a, spx_format f, spx_plan_engine e, int n,
                                        double *us) {
  spx_status s;
  int k;
  *us = 0;
  for (k = 0; k < n; k++) {
    double t = 0;
    if ((s = spx__plan_probe(ctx, a, f, e, &t))) return s;
    if (k == 0 || t < *us) *us = t;
  }
  return SPX_OK;
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
 * two runs (the first compiles). Measured apart because the whole spx_dmatrix_convert rate less a
 * scaled upload misprices it by up to an order of magnitude (docs/performance.md). Failures leave
 * the rate unmeasured (the estimate falls back to that difference). */
static void spx__plan_cal_staged(spx_context *ctx, const spx_csr *a, int f, const spx_format_params *dp, spx__dcsr *dc,
                                 spx_plan_device *d) {
  uint64_t r[9];
  int64_t *hist = NULL;
  double up, t0 = 0;
  int rep;
  spx_dmatrix *dm = NULL;
  if (!dc->ctx) {
    if (spx__dcsr_stage(ctx, a, spx__plan_tpr(a), 0, dc, r, &hist, &up) || r[0] != ~0ull || spx__dcsr_values(dc, a)) {
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

/* Rounds of the floor probes: each format's floor is the least of its rounds. */
#define SPX__CAL_FLOOR_ROUNDS 3

/* Tests only: microseconds added to format f's floor probe in round `round`, as a transient would
 * (the GPU's floors are measured on the host backend's code in CI). NULL: none. */
double (*spx__cal_test_noise)(int f, int round) = NULL;

/* Waits (at most max_s seconds) until no background job runs: the tiered JIT's compiles of the
 * calibration's earlier steps take CPU from the host side of every launch a floor times. */
static void spx__cal_jobs_idle(double max_s) {
  const double end = spx__now() + max_s;
  while (spx__jobs_busy() > 0 && spx__now() < end) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* format_floor_us: each format with a GPU kernel on a 3-D Poisson matrix of 8^3 rows (3.3k
 * nonzeros, 40 KB: no bytes worth counting at any GPU's bandwidth). What a format's launches and
 * fixed kernel work cost is its own (two launches, a permutation, a per-block pass). The formats
 * are probed in rounds, each floor the least of its rounds, after the background jobs end: a
 * transient (clocks, a compile still running) then lifts every format alike and the least of
 * later rounds drops it, where probing each format's repeats back to back read the first formats
 * a microsecond and more high in one calibration and not in the next (docs/performance.md). A
 * format whose probes all fail keeps its floor unmeasured. */
spx_status spx__plan_cal_floors(spx_context *ctx, spx_plan_device *d) {
  spx_csr *tiny = NULL;
  double least[SPX_FORMAT_MAX];
  spx_status s;
  int f, round;
  const int side = SPX__PLAN_FLOOR_PROBE_SIDE;
  if ((s = spx_gen_poisson3d(side, side, side, 7, SPX_DOUBLE, &tiny))) return s;
  spx__cal_jobs_idle(10.0);
  for (f = 0; f < SPX_FORMAT_MAX; f++) least[f] = 0;
  for (round = 0; round < SPX__CAL_FLOOR_ROUNDS; round++)
    for (f = 0; f < spx_format_count() && f < SPX_FORMAT_MAX; f++) {
      double us = 0;
      if (!spx_format_has_kernel((spx_format)f)) continue;
      if (spx__plan_probe(ctx, tiny, (spx_format)f, SPX_PLAN_ENGINE_SPX, &us) != SPX_OK || !(us > 0)) {
        spx_clear_error();
        continue;
      }
      if (spx__cal_test_noise) us += spx__cal_test_noise(f, round);
      if (least[f] == 0 || us < least[f]) least[f] = us;
      spx_clear_error();
    }
  for (f = 0; f < spx_format_count() && f < SPX_FORMAT_MAX; f++)
    if (least[f] > 0) d->format_floor_us[f] = least[f];
  spx_csr_destroy(tiny);
  return SPX_OK;
}

/* atomic_row_ns: HYB on a banded matrix (columns i .. i+4: no gathers) whose rows have 4
 * nonzeros, 3 in 10 of them 5, so that HYB's K is 4 and those rows' fifth entries make its COO
 * part: the time beyond the prediction without the term, per atomic add (spx__plan_hyb_atomics).
 * Rows enough that the bytes (about 60 MB) stream from device memory. */
static spx_status spx__plan_cal_atomics(spx_context *ctx, spx_plan_device *d) {
  const int64_t n = 4000000;
  spx_csr *a = NULL;
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  spx_plan_device d0 = *d;
  spx__pprof pp;
  double us = 0, atomics;
  int64_t i, nnz = 0;
  int k, nc = 0;
  spx_status s;
  memset(&pp, 0, sizeof pp);
  for (i = 0; i < n; i++) nnz += 4 + (i % 10 < 3);
  if ((s = spx_csr_create(n, n + 4, nnz, SPX_DOUBLE, &a))) return s;
  for (i = 0, nnz = 0; i < n; i++) {
    int64_t j, len = 4 + (i % 10 < 3);
    for (j = 0; j < len; j++) {
      a->col_idx[nnz] = (int32_t)(i + j);
      a->val.d[nnz++] = j == 0 ? 4.0 : -1.0;
    }
    a->row_ptr[i + 1] = nnz;
  }
  d0.atomic_row_ns = 0;
  /* one row profile for the model's prediction and the atomic count */
  if ((s = spx__pprof_make(a, d->warp, 2, NULL, &pp)) ||
      (s = spx__plan_candidates(a, &pp, &d0, 1, 0, 0, 0, c, SPX_FORMAT_MAX + 1, &nc, NULL, -1)) ||
      (s = spx__plan_probe(ctx, a, SPX_FORMAT_HYB, SPX_PLAN_ENGINE_SPX, &us)))
    goto done;
  atomics = spx__plan_hyb_atomics(&pp, spx_format_info(SPX_FORMAT_HYB));
  for (k = 0; k < nc; k++)
    if (c[k].format == SPX_FORMAT_HYB && c[k].engine == SPX_PLAN_ENGINE_SPX && c[k].predicted_us > 0 && atomics > 0 &&
        us > c[k].predicted_us)
      d->atomic_row_ns = 1e3 * (us - c[k].predicted_us) / atomics;
done:
  spx__pprof_free(&pp);
  spx_clear_error();
  spx_csr_destroy(a);
  return s == SPX_OUT_OF_MEMORY ? s : SPX_OK; /* a probe that fails leaves the term unmeasured */
}

/* The gather costs (spx_plan_device.format_gather): every format and cuSPARSE on power-law rows
 * (2..2000 nonzeros, exponent 2.2) with random columns, 3M rows: x is 24 MB in double, past most
 * GPUs' L2 and half of the largest, so the gathers reach well beyond what one SM's L1 holds. */
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

/* The median microseconds of spx's CSR kernel on a (as spx__plan_probe), timed after the device
 * was kept busy on it for about 100 ms: an idle GPU's clocks rise over the first milliseconds of
 * load, and the floors measured first (the launch, cuSPARSE's call) read up to 1.5x high at idle
 * clocks. One build serves the warm-up and the probe. */
static spx_status spx__plan_probe_warm(spx_context *ctx, const spx_csr *a, double *us) {
  spx_plan *q = NULL;
  double t0;
  spx_status s;
  if ((s = spx__plan_probe_plan(ctx, a, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_SPX, &q))) return s;
  t0 = spx__now();
  while (!(s = spx_plan_time(q, 20, us)) && spx_context_backend(ctx) == SPX_BACKEND_CUDA && spx__now() - t0 < 0.1) {}
  if (!s) s = spx_plan_time(q, 15, us);
  spx_plan_destroy(q);
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
  double t_launch = 0, t_csr = 0, t_cs = -1, t_call = 0, t_er = 0, bal, idle_term, bpus;
  int cuda = spx_context_backend(ctx) == SPX_BACKEND_CUDA, k;
  spx_status s;
  memset(&pp, 0, sizeof pp);
  if ((s = spx_csr_from_coo(1, 1, 1, &z, &z, &one, SPX_DOUBLE, &tiny)) ||
      /* 2M rows, 15M nonzeros (about 200 MB in double): well past any L2, so what the kernels
       * stream is device memory (a grid that fits the L2 would read it as faster memory). */
      (s = spx_gen_poisson3d(cuda ? 128 : 40, cuda ? 128 : 40, cuda ? 128 : 40, 7, SPX_DOUBLE, &lap)) ||
      (s = spx_gen_powerlaw(200000, 2.0, 2, 400, 7, SPX_DOUBLE, &pl)))
    goto done;
  /* The CSR kernel on the Laplacian (the clocks brought up on it), then the launch floor */
  if ((s = spx__plan_probe_warm(ctx, lap, &t_csr))) goto done;
  if ((s = spx__plan_probe_least(ctx, tiny, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_SPX, 3, &t_launch))) goto done;
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
    /* cuSPARSE's call floor, as the launch floor above: its host API takes longer per call than
     * spx's launch, and calls in a stream wait on it, not on the device */
    if (ls.loaded && spx__plan_probe_least(ctx, tiny, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_CUSPARSE, 3, &t_call) == SPX_OK &&
        t_call > 0)
      d->cusparse_call_us = t_call;
    spx_clear_error();
  }
  /* Idle lanes: ELL-R runs a thread per row; what it loses against the balanced prediction. */
  if (d->warp > 1) {
    if ((s = spx__pprof_make(pl, d->warp, 1, NULL, &pp))) goto done;
    if ((s = spx__plan_probe(ctx, pl, SPX_FORMAT_ELL_R, SPX_PLAN_ENGINE_SPX, &t_er))) goto done;
    bpus = d->bandwidth_gbs * 1e3;
    d->imbalance_weight = 0;
    /* the bytes the model charges ELL-R (its warps' slots, idle ones moved with their neighbours),
     * so the weight is what an idle lane-slot costs beyond them: at most a busy slot's */
    bal = spx__plan_time_us(d, &pp, 8, spx__pr_ell_r(&pp, 8), 0, 1);
    idle_term = pp.idle_row * 12.0 / bpus;
    d->imbalance_weight = idle_term > 0 ? (t_er - bal) / idle_term : 0;
    d->imbalance_weight = d->imbalance_weight < 0 ? 0 : d->imbalance_weight > 1 ? 1 : d->imbalance_weight;
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
  if (!s && cuda) s = spx__plan_cal_atomics(ctx, d); /* before the gathers: HYB's there has atomics too */
  if (!s && cuda) s = spx__plan_cal_gather(ctx, d);
  if (!s && cuda) s = spx__plan_cal_floors(ctx, d);
  d->calibrated = 1;
done:
  spx__pprof_free(&pp);
  spx_csr_destroy(tiny);
  spx_csr_destroy(lap);
  spx_csr_destroy(pl);
  return s;
}

spx_status spx_plan_calibrate(spx_context *ctx, int force, spx_plan_device *out) {
  if (!ctx || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_calibrate: NULL argument");
  return spx__plan_calibrated(ctx, force, 1, out);
}

spx_status spx__plan_calibrated(spx_context *ctx, int force, int fresh, spx_plan_device *out) {
  spx_plan_device d;
  const char *path;
  char keep[1400];
  spx_status s;
  if ((s = spx__plan_device_base(ctx, &d, fresh))) return s;
  path = spx_plan_device_path(d.name);
  keep[0] = 0;
  if (path) snprintf(keep, sizeof keep, "%s", path);
  if (!force && keep[0]) {
    spx_plan_device c;
    int hit;
    /* The file once per process: every plan asks, and reading it each time would add to every
     * selection's cost */
    hit = spx__calib_get(keep, d.name, &c);
    if (hit || (spx_plan_device_load(keep, &c) == SPX_OK && c.calibrated && !strcmp(c.name, d.name))) {
      if (!hit) spx__calib_keep(keep, &c);
      c.memory_bytes = d.memory_bytes; /* free memory is now (or as last read), not then */
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
