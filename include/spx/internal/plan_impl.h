/* SPDX-License-Identifier: BSD-3-Clause */
/* The tuner's entry (spx/plan.h): spx_plan_create and the selection behind it (options checked,
 * the context and the device description, the memory limit, the matrix's profile (plan_rows_impl.h),
 * the candidates, the strategy, the diagonal, an eager or lazy build), the deferred choice
 * (spx_plan_pending, spx_plan_upgrade), and the same on the caller's device arrays
 * (spx_plan_create_device). It calls every tuner room below it (tuner.h), the calibration
 * (spx_plan_calibrate), the staged arrays (stage_impl.h) and the CSR checks (host.h). */
#include "common.h"
#include "dmatrix.h"
#include "host.h"
#include "kernels.h" /* SPX__CSR_SMALL_NNZ */
#include "tuner.h"
#include "../plan.h"

/* ---- The options, the context, the device description, the diagonal -------------------------- */
/* The options, for the entry fn names in its messages. */
static spx_status spx__plan_check_options(const spx_plan_options *o, const char *fn) {
  if ((int)o->strategy < 0 || o->strategy >= SPX_PLAN_STRATEGY_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: strategy %d is not one of the %d strategies", fn, (int)o->strategy,
                     (int)SPX_PLAN_STRATEGY_COUNT);
  if (o->expected_calls < 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: expected_calls = %lld; it must be at least 1", fn,
                     (long long)o->expected_calls);
  if (o->memory_limit < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: negative memory_limit %lld", fn, (long long)o->memory_limit);
  if (o->dtype != -1 && o->dtype != SPX_DOUBLE && o->dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: dtype %d (use -1, SPX_DOUBLE or SPX_FLOAT)", fn, o->dtype);
  if (o->backend != SPX_BACKEND_AUTO && o->backend != SPX_BACKEND_HOST && o->backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: backend %d is not auto, host or cuda", fn, (int)o->backend);
  if (o->trial_reps < 1 || !(o->trial_share >= 0) || !(o->trial_gap == o->trial_gap))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: trial_reps must be >= 1, trial_share >= 0 and trial_gap a number", fn);
  if (!(o->convert_margin >= 0 && o->convert_margin < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: convert_margin %g is not in [0, 1)", fn, o->convert_margin);
  if (o->device && (!(o->device->bandwidth_gbs > 0) || o->device->warp < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the device description needs bandwidth_gbs > 0, warp >= 1", fn);
  return SPX_OK;
}

static spx_status spx__plan_check(const spx_csr *a, const spx_plan_options *o) {
  spx_status s;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: NULL matrix");
  if ((s = spx__plan_check_options(o, "spx_plan_create"))) return s;
  return spx__plan_stage_wanted(a, o) ? spx__csr_validate_head(a) : spx_csr_validate(a);
}

/* The plan's context: the caller's, checked against the options, or one of its own. */
spx_status spx__plan_context(spx_plan *p, spx_context *ctx, const spx_plan_options *o) {
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

/* The diagonal of a (the dtype-converted copy), for Jacobi preconditioning: the host pass, now. */
static spx_status spx__plan_diag(spx_plan *p, const spx_csr *a) {
  const int64_t n = SPX__MIN(a->nrows, a->ncols);
  double t0 = spx__now();
  SPX_FREE(p->diag);
  if (!(p->diag = (double *)spx__alloc((size_t)n + 1, sizeof *p->diag))) return SPX_OUT_OF_MEMORY;
  spx__advise_huge(p->diag, ((size_t)n + 1) * sizeof *p->diag); /* 2 MiB faults: most of the pass on 4 KiB pages */
  p->diag[n] = 0;
  spx__csr_diag_into(a, p->diag);
  p->want_ddiag = 0;
  p->diag_ms += 1e3 * (spx__now() - t0);
  spx__conv_mark(spx__plan_tracing(), "plan", "diagonal", &t0);
  return SPX_OK;
}

/* An eager plan's build in spx_plan_create: what it runs first (a racing plan's start, or the
 * choice), timed as the build's, not the selection's (nor the diagonal's, if taken on the way). */
static spx_status spx__plan_eager(spx_plan *p, const spx_csr *use) {
  const double tb = spx__now(), d0 = p->diag_ms;
  spx_status s = spx__plan_build_from(p, use);
  p->build_ms = 1e3 * (spx__now() - tb) - (p->diag_ms - d0);
  return s;
}

/* A racing plan's matrix for its candidates (spx__race_keep), timed as selection. */
static spx_status spx__plan_race_copy(spx_plan *p, spx_csr **own, const spx_csr *use) {
  double tb = spx__now();
  const int had = p->race && p->race->a;
  spx_status s;
  if (!p->race || had) return SPX_OK;
  s = spx__race_keep(p, own, use);
  p->select_ms += 1e3 * (spx__now() - tb);
  if (p->race && p->race->a && !had) spx__conv_mark(spx__plan_tracing(), "plan", "race copy", &tb);
  return s;
}

/* The model's constants: given, calibrated, or defaults; the free memory as last read (reading it
 * costs a driver call, tens of microseconds: spx__plan_limit_check reads it where it matters). */
spx_status spx__plan_devdesc(spx_plan *p, const spx_plan_options *o, spx_plan_device *d) {
  if (o->device) { *d = *o->device; return SPX_OK; }
  if (!o->no_calibrate && p->backend == SPX_BACKEND_CUDA && spx__plan_calibrated(p->ctx, 0, 0, d) == SPX_OK)
    return SPX_OK;
  spx_clear_error();
  return spx__plan_device_base(p->ctx, d, 0);
}

/* ---- The deferred choice --------------------------------------------------------------------- */
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
     * at the rate this plan's own staging upload ran (the calibration's 64 MB probe reads several
     * times faster than uploads of a few hundred MB do: docs/performance.md). */
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
    if (!s && !dm && p->dc.caller) /* src is the sizes alone: the caller's arrays are the matrix */
      s = spx__fail(SPX_UNSUPPORTED, "no device conversion of the caller's arrays to %s", spx_format_name(f));
    else if (!s && !dm)
      s = spx_dmatrix_convert(p->ctx, p->src, f, &p->params, NULL, &dm);
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

/* ---- Selection ------------------------------------------------------------------------------- */
/* Selection proper: analysis, candidates, strategy. Builds the plan only for trial (and auto's
 * trial). On return p->a holds the (dtype-converted) copy when the plan is not built yet; a racing
 * plan (auto) keeps that copy, or one of its own, for the candidates its SpMVs build. */
/* What getting spx's CSR kernels for a costs, ms: on the staged arrays with their options (staged
 * 1), else as a build of a's rows picks them (the rows are read only below the size where the
 * kernel rule reads more than the mean: above it, the mean row's kernel stands for them). The
 * model prices every kernel at a compile (jit_ms) because a candidate's shape is known only once
 * it is converted; CSR's is known before anything is built, so it is priced at what the JIT cache
 * makes it: nothing when this process has it loaded, a read and a module load when the cache
 * holds it. */
static double spx__plan_csr_kernel_ms(const spx_plan *p, const spx_plan_device *d, const spx_csr *a, int staged) {
  spx_dmatrix_options o;
  int w;
  if (p->backend != SPX_BACKEND_CUDA) return d->jit_ms;
  if (staged) o = p->csr_opt;
  else memset(&o, 0, sizeof o);
  w = spx__csr_kernels_where(p->ctx, a->nrows, a->ncols, a->nnz, p->dtype,
                             !staged && a->nnz < SPX__CSR_SMALL_NNZ ? a->row_ptr : NULL, &o);
  return w == SPX__JIT_LOADED ? 0 : w == SPX__JIT_HELD ? SPX__MIN(d->jit_hit_ms, d->jit_ms) : d->jit_ms;
}

/* spx's CSR candidate repriced at kernel_ms (spx__plan_csr_kernel_ms; its model price: jit_ms). */
static void spx__plan_reprice_csr(spx_plan *p, const spx_plan_device *d, double kernel_ms, int64_t calls) {
  int i;
  for (i = 0; i < p->ncand; i++) {
    spx_plan_candidate *c = &p->cand[i];
    if (c->engine != SPX_PLAN_ENGINE_SPX || c->format != SPX_FORMAT_CSR) continue;
    c->convert_ms += kernel_ms - d->jit_ms;
    spx__plan_score(c, calls);
  }
}

/* The plan's fields from the options, for a matrix of nrows x ncols whose values the plan keeps in
 * dtype (both entries: spx_plan_create's selection and spx_plan_create_device's). */
static void spx__plan_take_options(spx_plan *p, const spx_plan_options *o, int64_t nrows, int64_t ncols, spx_dtype dtype) {
  p->strategy = o->strategy;
  p->calls = o->expected_calls;
  p->margin = o->convert_margin;
  p->tiered = !o->no_tiered_jit && p->backend == SPX_BACKEND_CUDA;
  p->dtype = dtype;
  p->nrows = nrows; p->ncols = ncols;
  spx_format_params_default(&p->params);
}

/* The memory the matrix (+ x, y) may take: options.memory_limit, else on a GPU its free memory
 * (0 where the device does not say: no limit): as the context last read it where spx made the
 * device description (spx__plan_devdesc: no driver call; spx__plan_limit_check reads again where a
 * candidate comes near), from the driver where the caller gave the description. */
static void spx__plan_take_limit(spx_plan *p, const spx_plan_options *o, const spx_plan_device *dev) {
  p->limit = o->memory_limit;
  p->limit_seen = 0;
  if (p->limit || p->backend != SPX_BACKEND_CUDA) return;
  if (!o->device && dev->memory_bytes > 0) {
    p->limit = dev->memory_bytes;
    p->limit_seen = 1;
  } else {
    spx_device_info info;
    if (spx_context_device_info(p->ctx, &info) == SPX_OK && info.free_mem > 0) p->limit = info.free_mem;
    spx_clear_error();
  }
}

/* A candidate within this share of the free memory as last read makes the plan read it again. */
#define SPX__PLAN_LIMIT_NEAR 0.25

/* The limit taken from the free memory as last read (p->limit_seen) stands while every modelled
 * candidate (with the vectors, vec bytes) takes at most SPX__PLAN_LIMIT_NEAR of it: what other
 * allocations took since then is not worth a driver call a plan. Nearer, the driver is asked now
 * and the candidates fit again against its answer. */
static void spx__plan_limit_check(spx_plan *p, int64_t vec) {
  spx_device_info info;
  int i, near = 0;
  if (!p->limit_seen) return;
  for (i = 0; i < p->ncand; i++)
    near |= p->cand[i].predicted_us >= 0 && p->cand[i].bytes >= 0 &&
            (double)(p->cand[i].bytes + vec) > SPX__PLAN_LIMIT_NEAR * (double)p->limit;
  if (!near) return;
  p->limit_seen = 0;
  if (spx_context_device_info(p->ctx, &info) == SPX_OK && info.free_mem > 0) p->limit = info.free_mem;
  spx_clear_error();
  for (i = 0; i < p->ncand; i++) {
    spx_plan_candidate *c = &p->cand[i];
    const int was = c->fits;
    if (c->predicted_us < 0 || c->bytes < 0) continue; /* declined, not modelled: not a matter of memory */
    spx__plan_fit(c, vec, p->limit);
    if (c->fits && !was) c->note[0] = 0;
  }
}

/* The chosen candidate (and a deferred choice's staged conversion rate) into the plan's fields. */
static void spx__plan_take_choice(spx_plan *p, const spx_plan_device *dev) {
  if (p->pending) p->pend_staged_ns = dev->format_staged_convert_ns[p->cand[p->pend_idx].format];
  p->format = p->cand[p->chosen].format;
  p->engine = p->cand[p->chosen].engine;
}

spx_status spx__plan_select(spx_plan *p, const spx_csr *a0, const spx_plan_options *o) {
  spx_plan_device dev;
  spx_csr *a = NULL;
  const spx_csr *use = a0;
  spx__pprof rows, *rowsp = NULL; /* the row profile (the device's when staged) */
  double t0 = spx__now(), tl = t0, host_kms = -1; /* host_kms: spx__plan_csr_kernel_ms of the rows, once */
  const int tr = spx__plan_tracing(); /* per-stage wall times on stderr, to see where selection goes */
  spx_status s;
  memset(&rows, 0, sizeof rows);
#define SPX__PLAN_TRACE(what)                                                              \
  do {                                                                                     \
    if (tr) fprintf(stderr, "spx plan: %-10s %8.3f ms\n", what, 1e3 * (spx__now() - tl)); \
    tl = spx__now();                                                                       \
  } while (0)
  spx__plan_take_options(p, o, a0->nrows, a0->ncols, o->dtype == -1 ? a0->dtype : (spx_dtype)o->dtype);
  /* A copy only to change the value type; a lazy plan copies what it keeps at the end. */
  if (p->dtype != a0->dtype) {
    if ((s = spx_csr_copy(a0, p->dtype, &a))) return s;
    use = a;
  }
  SPX__PLAN_TRACE("copy");
  if ((s = spx__plan_devdesc(p, o, &dev))) goto fail;
  p->launch_us = dev.launch_us;
  SPX__PLAN_TRACE("device");
  spx__plan_take_limit(p, o, &dev);
  SPX__PLAN_TRACE("memory");
  /* profiled on the host beside the upload: first, so that the shortcut below prices spx's CSR
   * kernel from the rows, as the build will run it (the upload is the shortcut's too) */
  if (spx__plan_stage_wanted(use, o) && spx__plan_beside(use)) {
    if ((s = spx__plan_profile(p, a0, use, o, &dev, &rows, &rowsp))) goto fail;
    SPX__PLAN_TRACE(p->dc.ci ? "beside" : "rowstats");
  }
  if ((o->strategy == SPX_PLAN_AUTO || o->strategy == SPX_PLAN_MODEL) && !o->force && spx__plan_has_cusparse(p)) {
    spx_plan_candidate *c = &p->cand[0];
    int64_t vb = (int64_t)SPX_DTYPE_SIZE(p->dtype);
    spx__pprof q;
    memset(&q, 0, sizeof q);
    q.n = use->nrows; q.ncols = use->ncols; q.nnz = use->nnz;
    spx__plan_cusparse_cand(&dev, &q, vb, 0, p->limit, vb * (use->nrows + use->ncols), o->expected_calls, c);
    p->ncand = 1;
    spx__plan_limit_check(p, vb * (use->nrows + use->ncols));
    host_kms = spx__plan_csr_kernel_ms(p, &dev, use, p->csr_staged);
    if (c->fits &&
        spx__plan_nothing_pays(use, &dev, o->expected_calls, o->trial_share, c->predicted_us, host_kms)) {
      const double cs_us = c->predicted_us;
      /* cuSPARSE's arrays staged as a plan that profiles would (no columns: nothing else is priced):
       * the device validates them and the build wraps them (profiled beside the upload: done) */
      if (!rowsp && (s = spx__plan_rows(p, a0, use, o, &dev, 0, 1, &rows, NULL))) goto fail;
      p->ncand = 1;
      p->chosen = 0;
      snprintf(p->reason, sizeof p->reason,
               "%s: cusparse_csr, no profile: over %lld calls no format could save half the %.3g ms a kernel "
               "costs against its predicted %.3g us/SpMV",
               spx_plan_strategy_name(p->strategy), (long long)o->expected_calls, host_kms, cs_us);
      SPX__PLAN_TRACE("shortcut");
      goto chosen;
    }
  }
  if (!rowsp) {
    if ((s = spx__plan_profile(p, a0, use, o, &dev, &rows, &rowsp))) goto fail;
    SPX__PLAN_TRACE(p->dc.ci ? "devprofile" : "rowstats");
  }
  if ((s = spx__plan_candidates(use, rowsp, &dev, o->expected_calls, p->limit,
                                spx__plan_has_cusparse(p) ? (spx__plan_names_cusparse(o->force) ? 2 : 1) : 0,
                                p->backend == SPX_BACKEND_CUDA, p->cand, SPX_FORMAT_MAX + 1, &p->ncand, &p->params,
                                p->cols_stopped ? 0.0 : spx__plan_cols_share(o)))) /* stopped: not again */
    goto fail;
  if (p->backend == SPX_BACKEND_CUDA) { /* the shortcut's price stands unless the staged arrays give their own */
    if (p->csr_staged || host_kms < 0) host_kms = spx__plan_csr_kernel_ms(p, &dev, use, p->csr_staged);
    spx__plan_reprice_csr(p, &dev, host_kms, o->expected_calls);
  }
  spx__plan_limit_check(p, (int64_t)SPX_DTYPE_SIZE(p->dtype) * (use->nrows + use->ncols));
  SPX__PLAN_TRACE("model");
  if ((s = spx__plan_strategy(p, use, o))) goto fail;
chosen:
  if (o->defer && !p->built && (s = spx__plan_defer(p, use, use == a0 ? NULL : &a))) goto fail;
  spx__plan_take_choice(p, &dev);
  SPX__PLAN_TRACE("strategy");
#undef SPX__PLAN_TRACE
  /* the staged arrays (allocated, uploaded) are the build's input (cuSPARSE's arrays, the device
   * converters'), not the choice */
  p->select_ms = 1e3 * (spx__now() - t0 - p->stage_upload_s);
  spx__pprof_free(&rows);
  /* The diagonal is the solvers' (Jacobi), not the choice's: timed in neither select_ms nor
   * build_ms. A staged plan owes it, taken when first asked for or before the last thing that can
   * give it goes (spx__plan_diag_take: a kernel on the staged arrays, else a pass over a copy), so
   * that creating it waits for neither; any other plan takes it here, from the matrix in hand. */
  p->want_ddiag = !o->no_diagonal && p->dc.ci;
  if (!o->no_diagonal && !p->want_ddiag && (s = spx__plan_diag(p, use))) goto fail;
  if (!p->built && o->eager) {
    /* where nothing is staged the race's copy comes first: a host start runs on it */
    if (!p->dc.ci && (s = spx__plan_race_copy(p, &a, use))) goto fail;
    if ((s = spx__plan_eager(p, use))) goto fail;
    /* else the race's candidates build from the staged arrays where their values are up (a start
     * or the build put them there), from a copy where not */
    if ((s = spx__plan_race_copy(p, &a, use))) goto fail;
  } else if (!p->built && spx__plan_staged(p) && !o->defer) {
    /* the choice builds from the staged arrays (a wrap, a device conversion), the race's candidates
     * too (a host conversion downloads them at its turn): their values go up now, as the build
     * would upload them first, and the plan keeps no copy of the matrix (a copy of a large one
     * costs more than that upload) */
    double tu = spx__now();
    if ((s = spx__dcsr_values(&p->dc, use))) goto fail;
    p->stage_upload_s += spx__now() - tu;
  } else if (!p->built) {
    double tc = spx__now();
    if (!a && (s = spx_csr_copy(a0, p->dtype, &a))) goto fail;
    p->copy_ms = 1e3 * (spx__now() - tc);
    p->a = a;
    a = NULL;
    spx__race_share(p, p->a); /* the lazy copy serves the race too: spx_plan_build hands it over */
  }
  /* owed, but nothing the plan kept can give it (a build converted on the host let the staged
   * arrays go before their values went up): from the matrix in hand */
  if (p->want_ddiag && !spx__plan_diag_can(p) && (s = spx__plan_diag(p, use))) goto fail;
  if (tr)
    fprintf(stderr, "spx plan: %-10s %8.3f ms: select_ms %.3f, staging upload %.3f, build %.3f, lazy copy %.3f, diagonal %.3f%s\n",
            "selected", 1e3 * (spx__now() - t0), p->select_ms, 1e3 * p->stage_upload_s, p->build_ms, p->copy_ms, p->diag_ms,
            p->want_ddiag ? " (owed: taken when first needed)" : "");
  spx_csr_destroy(a);
  return SPX_OK;
fail:
  spx__pprof_free(&rows);
  spx_csr_destroy(a);
  return s;
}

/* SPX_PLAN_TRACE: create's whole time, part by part. The staging upload and the build (a racing
 * plan's start: the values' upload and a wrap of the staged CSR) are what a cuSPARSE plan of the
 * matrix pays too (its upload and analysis); the rest is what choosing costs the caller. */
static void spx__plan_trace_create(const spx_plan *p, double t_check, double t_ctx, double t_all) {
  const double up = 1e3 * p->stage_upload_s,
               other = t_all - t_check - t_ctx - p->select_ms - up - p->build_ms - p->copy_ms - p->diag_ms;
  fprintf(stderr,
          "spx plan: %-10s %8.3f ms = validate %.3f + context %.3f + select_ms %.3f + staging upload %.3f + build %.3f (%s)"
          " + lazy copy %.3f + diagonal %.3f + other %.3f\nspx plan: %-10s %8.3f ms beyond the staging upload and the build\n",
          "create", t_all, t_check, t_ctx, p->select_ms, up, p->build_ms,
          !p->built ? "lazy: at the first SpMV" : p->race && p->race->started ? "the race's start, the CSR as it is" : "the choice",
          p->copy_ms, p->diag_ms, other, "exposed", t_all - up - p->build_ms);
}

spx_status spx_plan_create(spx_context *ctx, const spx_csr *a, const spx_plan_options *options, spx_plan **out) {
  spx_plan_options o;
  spx_plan *p;
  spx_status s;
  const int tr = spx__plan_tracing();
  double tv, tc, t_check, t_ctx;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_create: NULL output");
  *out = NULL;
  if (options) o = *options;
  else spx_plan_options_default(&o);
  tv = spx__now();
  if ((s = spx__plan_check(a, &o))) return s;
  t_check = 1e3 * (spx__now() - tv);
  if (tr)
    fprintf(stderr, "spx plan: %-10s %8.3f ms (strategy %s, %lld calls, %lld nonzeros)\n", "validate", t_check,
            spx_plan_strategy_name(o.strategy), (long long)o.expected_calls, (long long)a->nnz);
  if (!(p = (spx_plan *)spx__calloc(1, sizeof *p))) return SPX_OUT_OF_MEMORY;
  p->stage = 1;
  tc = spx__now();
  s = spx__plan_context(p, ctx, &o);
  t_ctx = 1e3 * (spx__now() - tc);
  /* an eager plan is built in the selection (spx__plan_eager): spx_plan_build has nothing left */
  if (s || (s = spx__plan_select(p, a, &o)) || (o.eager && (s = spx_plan_build(p)))) {
    spx_plan_destroy(p);
    return s;
  }
  if (tr) spx__plan_trace_create(p, t_check, t_ctx, 1e3 * (spx__now() - tv));
  *out = p;
  return SPX_OK;
}

/* ---- A CSR on the device (spx_plan_create_device) -----------------------------------------------
 * The staged path without the upload: the caller's arrays are adopted as the plan's staged CSR (dc,
 * not owned: spx__dcsr_adopt), checked and profiled there. The model sees the row profile and the
 * matrix's sizes alone (a CSR without arrays, sz), so no predictor, converter or column pass may
 * read host arrays: it prices the formats whose model needs no column counts, and every build
 * comes from the arrays (a wrap or a device conversion; spx__dcsr_download refuses the rest). */
#define SPX__PLAN_DCSR "spx_plan_create_device"

/* The formats converted on the device, for messages ("none" where SPX_DEVICE_CONVERT=0). */
static void spx__plan_device_formats(char *buf, size_t len) {
  size_t n = 0;
  int f;
  buf[0] = 0;
  for (f = 0; f < SPX_FORMAT_COUNT && n < len; f++)
    if (spx__plan_on_device(1, f)) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", spx_format_name((spx_format)f));
  if (!n) snprintf(buf, len, "none here: SPX_DEVICE_CONVERT=0");
}

/* The arguments, before anything is made: the host entry's option checks, the CSR's sizes,
 * pointers and value type, then the backend (the host backend has no device memory). */
static spx_status spx__plan_dcsr_check(spx_context *ctx, const spx_dcsr *a, const spx_plan_options *o) {
  spx_status s;
  if (!ctx || !a)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL %s", SPX__PLAN_DCSR,
                     !a ? "matrix" : "context (the arrays live on a CUDA context's device)");
  if ((s = spx__plan_check_options(o, SPX__PLAN_DCSR))) return s;
  if (a->nrows < 0 || a->ncols < 0 || a->nnz < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: negative size (%lld x %lld, nnz %lld)", SPX__PLAN_DCSR,
                     (long long)a->nrows, (long long)a->ncols, (long long)a->nnz);
  if (a->nrows > INT32_MAX || a->ncols > INT32_MAX || a->nnz > INT32_MAX)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: %lld x %lld with %lld nonzeros: 32-bit row pointers and columns "
                     "need each below 2^31", SPX__PLAN_DCSR, (long long)a->nrows, (long long)a->ncols, (long long)a->nnz);
  if (a->dtype != SPX_DOUBLE && a->dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: dtype %d is neither SPX_DOUBLE nor SPX_FLOAT", SPX__PLAN_DCSR, (int)a->dtype);
  if (!a->row_ptr || !a->col_idx || !a->val)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: %s is a zero device pointer (every array must be an allocation, "
                     "also where nnz is 0)", SPX__PLAN_DCSR, !a->row_ptr ? "row_ptr" : !a->col_idx ? "col_idx" : "val");
  if (o->dtype != -1 && o->dtype != (int)a->dtype)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: options.dtype %s differs from the arrays' %s (a plan on device arrays "
                     "keeps their value type: -1)", SPX__PLAN_DCSR, spx_dtype_name((spx_dtype)o->dtype),
                     spx_dtype_name(a->dtype));
  if (spx_context_backend(ctx) != SPX_BACKEND_CUDA)
    return spx__fail(SPX_NOT_AVAILABLE, "%s: the context uses the host backend, which has no device memory (a host "
                     "CSR takes spx_plan_create)", SPX__PLAN_DCSR);
  if (o->backend == SPX_BACKEND_HOST)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: options ask for the host backend; a plan on device arrays runs on "
                     "cuda", SPX__PLAN_DCSR);
  return SPX_OK;
}

/* The caller's arrays adopted (p->dc) and profiled on the device: rows and p->an; a malformed CSR
 * named by its first bad row. */
static spx_status spx__plan_dcsr_rows(spx_plan *p, const spx_dcsr *a, const spx_csr *sz, spx__pprof *rows) {
  uint64_t r[9] = {0};
  int64_t *hist = NULL;
  double t0 = spx__now();
  spx_status s;
  if ((s = spx__dcsr_adopt(p->ctx, a, spx__plan_tpr(sz), &p->dc, r, &hist))) return s;
  if (r[0] != ~0ull) return spx__dcsr_bad_row(&p->dc, r[0], SPX__PLAN_DCSR);
  spx__plan_rows_of(p, sz, r, hist, rows);
  p->an.seconds = spx__now() - t0;
  return SPX_OK;
}

/* Why candidate c cannot run from the arrays (NULL: it can): a format converted on the host only,
 * a conversion of a matrix without nonzeros (csr runs it), a format the model could not price
 * without the host's column counts (options.force still builds it). */
static const char *spx__plan_dcsr_out(const spx_plan *p, const spx_plan_candidate *c) {
  if (c->engine == SPX_PLAN_ENGINE_CUSPARSE || c->format == SPX_FORMAT_CSR) return NULL;
  if (!spx__plan_on_device(1, (int)c->format)) return "from device arrays: converted on the host only";
  if (p->dc.nnz == 0) return "from device arrays: no nonzeros, csr runs them as they are";
  if (c->predicted_us < 0 && spx__plan_reads_columns(c->format))
    return "not modelled from device arrays: its model reads column counts (force builds it)";
  return NULL;
}

/* The model's candidates (spx__plan_candidates) on the device's row profile and sizes sz, without
 * column counts (cols_share 0: never read; a matrix without nonzeros has them all 0). max ends the
 * model's loop with the in-tree formats, before a registered one, whose predictor or converter
 * would read host arrays; cuSPARSE follows them, as the model adds it. Then every candidate that
 * cannot run from the arrays leaves the running with its note. */
static spx_status spx__plan_dcsr_candidates(spx_plan *p, const spx_csr *sz, spx__pprof *rows, const spx_plan_device *dev,
                                            const spx_plan_options *o, int64_t limit) {
  const int cus = spx__plan_has_cusparse(p), only = cus && spx__plan_names_cusparse(o->force);
  const int64_t vb = (int64_t)SPX_DTYPE_SIZE(sz->dtype);
  int f, i, nin = 0;
  spx_status s;
  for (f = 0; f < SPX_FORMAT_COUNT; f++) nin += spx_format_info((spx_format)f) && spx_format_has_kernel((spx_format)f);
  if (sz->nnz == 0) rows->cols_done = 1;
  if ((s = spx__plan_candidates(sz, rows, dev, o->expected_calls, limit, only ? 2 : 0, 1, p->cand, nin, &p->ncand,
                                &p->params, 0.0)))
    return s;
  if (cus && !only) {
    spx__pprof q;
    memset(&q, 0, sizeof q);
    q.n = sz->nrows; q.ncols = sz->ncols; q.nnz = sz->nnz;
    spx__plan_cusparse_cand(dev, &q, vb, 0, limit, vb * (sz->nrows + sz->ncols), o->expected_calls, &p->cand[p->ncand++]);
  }
  for (i = 0; i < p->ncand; i++) {
    spx_plan_candidate *c = &p->cand[i];
    const char *why = spx__plan_dcsr_out(p, c);
    if (!why) continue;
    snprintf(c->note, sizeof c->note, "%s", why);
    c->fits = 0;
    c->predicted_us = c->score_us = c->convert_ms = -1;
  }
  return SPX_OK;
}

/* options.force on device arrays: a format converted on the host only, or any but csr on a matrix
 * without nonzeros, is refused (SPX_UNSUPPORTED); one the model could not price (its model reads
 * column counts) runs unpriced; cusparse, csr and the priced ones are forced as spx_plan_create
 * forces them (which also names a name that is no candidate). */
static spx_status spx__plan_dcsr_forced(spx_plan *p, const spx_plan_options *o) {
  char list[160];
  spx_format f;
  int i;
  if (spx__plan_names_cusparse(o->force) || spx_format_from_name(o->force, &f) != SPX_OK) {
    spx_clear_error();
    return spx__plan_strategy(p, NULL, o);
  }
  spx__plan_device_formats(list, sizeof list);
  if (f != SPX_FORMAT_CSR && !spx__plan_on_device(1, (int)f))
    return spx__fail(SPX_UNSUPPORTED, "%s: forced %s converts on the host only; a plan on device arrays runs csr, "
                     "cusparse or a format converted on the device (%s)", SPX__PLAN_DCSR, spx_format_name(f), list);
  if (f != SPX_FORMAT_CSR && p->dc.nnz == 0)
    return spx__fail(SPX_UNSUPPORTED, "%s: forced %s: the matrix has no nonzeros, which csr and cusparse run as they "
                     "are", SPX__PLAN_DCSR, spx_format_name(f));
  for (i = 0; i < p->ncand; i++) {
    spx_plan_candidate *c = &p->cand[i];
    if (c->engine != SPX_PLAN_ENGINE_SPX || c->format != f || c->predicted_us >= 0) continue;
    c->fits = 1; /* its bytes are known once built: no limit applies before */
    p->chosen = i;
    snprintf(p->reason, sizeof p->reason, "forced: %s (not modelled: its model reads column counts, which device "
             "arrays do not give; converted on the device)", spx_format_name(f));
    return SPX_OK;
  }
  return spx__plan_strategy(p, NULL, o);
}

/* spx__plan_select for the caller's device CSR a: the profile, the candidates, the choice (use NULL
 * everywhere: builds, a trial's and a race's candidates take dc), a deferred choice (its src the
 * sizes alone: spx_plan_upgrade converts dc), an eager build. The diagonal is owed from the start,
 * so that whatever lets the arrays go takes it first. */
static spx_status spx__plan_select_dcsr(spx_plan *p, const spx_dcsr *a, const spx_plan_options *o) {
  spx_plan_device dev;
  spx_csr sz, *src = NULL;
  spx__pprof rows;
  double t0 = spx__now();
  spx_status s;
  memset(&rows, 0, sizeof rows);
  memset(&sz, 0, sizeof sz);
  sz.nrows = a->nrows; sz.ncols = a->ncols; sz.nnz = a->nnz; sz.dtype = a->dtype;
  spx__plan_take_options(p, o, a->nrows, a->ncols, a->dtype);
  if ((s = spx__plan_devdesc(p, o, &dev))) goto fail;
  p->launch_us = dev.launch_us;
  spx__plan_take_limit(p, o, &dev);
  if ((s = spx__plan_dcsr_rows(p, a, &sz, &rows))) goto fail;
  /* spx's CSR kernel wraps the arrays, the kernel the host rule picks from the histogram (the mean
   * row's vector kernel where it cannot tell) */
  p->csr_staged = 1;
  if (spx_csr_kernel_options(sz.nrows, sz.nnz, rows.hist, rows.row_max, &p->csr_opt)) {
    memset(&p->csr_opt, 0, sizeof p->csr_opt);
    spx_clear_error();
  }
  if ((s = spx__plan_dcsr_candidates(p, &sz, &rows, &dev, o, p->limit))) goto fail;
  spx__plan_limit_check(p, (int64_t)SPX_DTYPE_SIZE(sz.dtype) * (sz.nrows + sz.ncols));
  spx__plan_reprice_csr(p, &dev, spx__plan_csr_kernel_ms(p, &dev, &sz, 1), o->expected_calls);
  p->want_ddiag = !o->no_diagonal;
  if ((s = o->force ? spx__plan_dcsr_forced(p, o) : spx__plan_strategy(p, NULL, o))) goto fail;
  if (o->defer && !p->built) {
    if (!(src = (spx_csr *)spx__calloc(1, sizeof *src))) { s = SPX_OUT_OF_MEMORY; goto fail; }
    *src = sz;
    if ((s = spx__plan_defer(p, src, &src))) goto fail;
  }
  spx__plan_take_choice(p, &dev);
  p->select_ms = 1e3 * (spx__now() - t0);
  if (!p->built && o->eager && (s = spx__plan_eager(p, NULL))) goto fail;
  if (spx__plan_tracing())
    fprintf(stderr, "spx plan: %-10s %8.3f ms: select_ms %.3f, build %.3f (%s), diagonal %s\n", "device csr",
            1e3 * (spx__now() - t0), p->select_ms, p->build_ms, p->built ? "built" : "lazy: at the first SpMV",
            p->want_ddiag ? "owed: taken when first needed" : "none kept");
  spx__pprof_free(&rows);
  SPX_FREE(src);
  return SPX_OK;
fail:
  spx__pprof_free(&rows);
  SPX_FREE(src);
  return s;
}

spx_status spx_plan_create_device(spx_context *ctx, const spx_dcsr *a, const spx_plan_options *options,
                                  spx_plan **out) {
  spx_plan_options o;
  spx_plan *p;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL output", SPX__PLAN_DCSR);
  *out = NULL;
  if (options) o = *options;
  else spx_plan_options_default(&o);
  if ((s = spx__plan_dcsr_check(ctx, a, &o))) return s;
  if (!(p = (spx_plan *)spx__calloc(1, sizeof *p))) return SPX_OUT_OF_MEMORY;
  if ((s = spx__plan_context(p, ctx, &o)) || (s = spx__plan_select_dcsr(p, a, &o)) || (o.eager && (s = spx_plan_build(p)))) {
    spx_plan_destroy(p);
    return s;
  }
  *out = p;
  return SPX_OK;
}
#undef SPX__PLAN_DCSR
