/* SPDX-License-Identifier: BSD-3-Clause */
/* Re-selection (spx_reselect): a matrix that changes every step gets its next plan selected (and
 * converted on the host) on a worker thread while the caller works with the current one. It calls
 * the selection (plan_impl.h: spx__plan_select, its context and device description) and the plan
 * object; the worker runs the model's strategies, never a trial. */
#include <pthread.h>
#include "common.h"
#include "tuner.h"
#include "../plan.h"

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
