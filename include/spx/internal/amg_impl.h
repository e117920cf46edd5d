/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/amg.h: the names and options, the hierarchy's build (levels from
 * amg_setup_impl.h, smoothers from amg_smooth_impl.h, a plan per operator, the device arrays), the
 * V-, W- and F-cycles with a host twin and a GPU path (templates/amg.cu) that take the same steps
 * in the same order, setup reuse (spx_amg_update), AMG as the solver, and the report. */
#include "common.h"
#include "cuda_types.h"
#include "amg_levels.h"
#include "host.h"
#include "../amg.h"
#include "../csr.h"
#include "../device.h"
#include "../jit.h"
#include "../loader.h"

/* ---- Names and options ------------------------------------------------------------------------ */
static const char *const spx__amg_sm_names[] = {
#define SPX__AMG_SM_NAME(e, name, what) name,
    SPX_AMG_SMOOTHERS(SPX__AMG_SM_NAME)
#undef SPX__AMG_SM_NAME
};
static const char *const spx__amg_sm_what[] = {
#define SPX__AMG_SM_WHAT(e, name, what) what,
    SPX_AMG_SMOOTHERS(SPX__AMG_SM_WHAT)
#undef SPX__AMG_SM_WHAT
};

const char *spx_amg_smoother_name(spx_amg_smoother s) {
  return (unsigned)s < SPX_AMG_SMOOTHER_COUNT ? spx__amg_sm_names[s] : "unknown";
}
const char *spx_amg_smoother_description(spx_amg_smoother s) {
  return (unsigned)s < SPX_AMG_SMOOTHER_COUNT ? spx__amg_sm_what[s] : "unknown smoother";
}

static int spx__amg_streq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = *a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a, y = *b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b;
    if (x != y) return 0;
  }
  return *a == *b;
}

/* The index of name among names[0..n) (case-insensitive), or -1: the enums' parsers below. */
static int spx__amg_name_index(const char *const *names, int n, const char *name) {
  int k;
  for (k = 0; k < n; k++)
    if (spx__amg_streq_nocase(name, names[k])) return k;
  return -1;
}

spx_status spx_amg_smoother_parse(const char *name, spx_amg_smoother *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_smoother_parse: NULL argument");
  if ((k = spx__amg_name_index(spx__amg_sm_names, SPX_AMG_SMOOTHER_COUNT, name)) >= 0) {
    *out = (spx_amg_smoother)k;
    return SPX_OK;
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown smoother '%s': jacobi, l1jacobi, chebyshev or gs", name);
}

static const char *const spx__amg_cycle_names[] = {
#define SPX__AMG_CYCLE_NAME(e, name, what) name,
    SPX_AMG_CYCLES(SPX__AMG_CYCLE_NAME)
#undef SPX__AMG_CYCLE_NAME
};

const char *spx_amg_cycle_type_name(spx_amg_cycle_type c) {
  return (unsigned)c < SPX_AMG_CYCLE_COUNT ? spx__amg_cycle_names[c] : "unknown";
}

spx_status spx_amg_cycle_type_parse(const char *name, spx_amg_cycle_type *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_cycle_type_parse: NULL argument");
  if ((k = spx__amg_name_index(spx__amg_cycle_names, SPX_AMG_CYCLE_COUNT, name)) >= 0) {
    *out = (spx_amg_cycle_type)k;
    return SPX_OK;
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown cycle '%s': v, w or f", name);
}

static const char *const spx__amg_agg_names[] = {"auto", "greedy", "mis2"};

const char *spx_amg_aggregation_name(spx_amg_aggregation a) {
  return (unsigned)a <= SPX_AMG_AGG_MIS2 ? spx__amg_agg_names[a] : "unknown";
}

spx_status spx_amg_aggregation_parse(const char *name, spx_amg_aggregation *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_aggregation_parse: NULL argument");
  if ((k = spx__amg_name_index(spx__amg_agg_names, SPX_AMG_AGG_MIS2 + 1, name)) >= 0) {
    *out = (spx_amg_aggregation)k;
    return SPX_OK;
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown aggregation '%s': auto, greedy or mis2", name);
}

static const char *const spx__amg_coarsening_names[] = {"sa", "rs"};

const char *spx_amg_coarsening_name(spx_amg_coarsening c) {
  return (unsigned)c <= SPX_AMG_RS ? spx__amg_coarsening_names[c] : "unknown";
}

spx_status spx_amg_coarsening_parse(const char *name, spx_amg_coarsening *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_coarsening_parse: NULL argument");
  if ((k = spx__amg_name_index(spx__amg_coarsening_names, SPX_AMG_RS + 1, name)) >= 0) {
    *out = (spx_amg_coarsening)k;
    return SPX_OK;
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown coarsening '%s': sa (smoothed aggregation) or rs (Ruge-Stueben)",
                   name);
}

static const char *const spx__amg_rs_interp_names[] = {"direct", "ext+i"};

const char *spx_amg_rs_interp_name(spx_amg_rs_interp i) {
  return (unsigned)i <= SPX_AMG_RS_EXTENDED_I ? spx__amg_rs_interp_names[i] : "unknown";
}

spx_status spx_amg_rs_interp_parse(const char *name, spx_amg_rs_interp *out) {
  int k;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_rs_interp_parse: NULL argument");
  if ((k = spx__amg_name_index(spx__amg_rs_interp_names, SPX_AMG_RS_EXTENDED_I + 1, name)) >= 0) {
    *out = (spx_amg_rs_interp)k;
    return SPX_OK;
  }
  if (spx__amg_streq_nocase(name, "extended") || spx__amg_streq_nocase(name, "extended+i")) {
    *out = SPX_AMG_RS_EXTENDED_I;
    return SPX_OK;
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown RS interpolation '%s': direct or ext+i (extended+i)", name);
}

void spx_amg_options_default(spx_amg_options *o) {
  int l;
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->theta = 0.08;
  o->theta_decay = 0.5;
  o->max_levels = 10;
  o->coarse_size = 500;
  o->dense_max = 2000;
  o->coarse_sweeps = 20;
  o->prolong_omega = 4.0 / 3.0;
  o->power_iters = 15;
  o->gpu_setup_rows = 20000;
  o->aggregation = SPX_AMG_AGG_AUTO;
  o->coarsening = SPX_AMG_SA;
  o->rs_theta = 0.25;
  o->rs_trunc = 0.2;
  o->rs_interp = SPX_AMG_RS_DIRECT;
  o->rs_pmax = 4;
  o->smoother = SPX_AMG_CHEBYSHEV;
  o->pre_sweeps = o->post_sweeps = 1;
  o->cheb_degree = 2;
  o->cheb_ratio = 0.3;
  o->coloring = SPX_AMG_COLOR_GREEDY;
  o->relaxed_fraction = 0.9;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    o->level[l].smoother = o->level[l].pre_sweeps = o->level[l].post_sweeps = -1;
    o->level[l].damping = 0;
  }
}

/* ---- Setup: the hierarchy ---------------------------------------------------------------------- */
/* The smoother, sweeps and damping of level l (its overrides, else the global options, else the
 * smoother's own damping). */
static void spx__amg_level_cfg(const spx_amg_options *o, int l, spx__amg_level *L) {
  const spx_amg_level_options *lo = &o->level[l];
  L->smoother = lo->smoother >= 0 ? lo->smoother : (int)o->smoother;
  L->pre = lo->pre_sweeps >= 0 ? lo->pre_sweeps : o->pre_sweeps;
  L->post = lo->post_sweeps >= 0 ? lo->post_sweeps : o->post_sweeps;
  L->w = lo->damping > 0 ? lo->damping : o->damping > 0 ? o->damping : L->smoother == SPX_AMG_JACOBI ? 2.0 / 3.0 : 1.0;
}

/* Why level l (n rows) is the coarsest before coarsening it (coarse_size, max_levels), in the
 * report's stop line; 0 when it coarsens. */
static int spx__amg_last_level(spx_amg *m, int l, int64_t n) {
  spx_amg_report *rep = &m->rep;
  if (n <= m->o.coarse_size)
    snprintf(rep->stop, sizeof rep->stop, "level %d has %lld rows <= coarse_size %lld", l + 1, (long long)n,
             (long long)m->o.coarse_size);
  else if (l + 1 == m->o.max_levels)
    snprintf(rep->stop, sizeof rep->stop, "max_levels %d reached (the coarsest has %lld rows)", m->o.max_levels,
             (long long)n);
  else return 0;
  return 1;
}

/* The levels from m->lv[0].A, their smoothers and the coarse LU: each level's steps on the GPU
 * where it is large enough (amg_setup_impl.h decides), else on the host. */
static spx_status spx__amg_hierarchy(spx_amg *m) {
  spx_amg_report *rep = &m->rep;
  double rhoA[SPX_AMG_MAX_LEVELS], *d = NULL, t;
  int l, stop = 0;
  spx_status st;
  for (l = 0; !stop; l++) {
    spx__amg_level *L = &m->lv[l];
    const int64_t n = L->A->nrows;
    int stalled = 0;
    rhoA[l] = -1;
    spx__amg_level_cfg(&m->o, l, L);
    stop = spx__amg_last_level(m, l, n);
    t = spx__now();
    if (!(d = (double *)spx__alloc((size_t)n + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
    if ((st = spx__amg_level_diag(m, l, !stop, d))) goto fail;
    if (L->setup_gpu) { /* the GPU level's start (A up, its arrays, the diagonal): the strength's */
      const double dt = 1e3 * (spx__now() - t);
      rep->strength_ms += dt;
      rep->strength_gpu_ms += dt;
    } else rep->smoother_ms += 1e3 * (spx__now() - t);
    if (!stop) {
      st = m->o.coarsening == SPX_AMG_RS ? spx__amg_rs_coarsen(m, l, &stalled, &rhoA[l])
                                         : spx__amg_coarsen(m, l, d, &stalled, &rhoA[l]);
      if (st) goto fail;
      stop = stalled;
    }
    m->nl = l + 1;
    t = spx__now();
    /* the coarsest level by LU needs no smoother */
    if (!(stop && n <= m->o.dense_max) && (st = spx__amg_smoother_setup(m, l, d, rhoA[l]))) goto fail;
    rep->smoother_ms += 1e3 * (spx__now() - t);
    SPX_FREE(d);
  }
  if (m->cuda) spx__amg_gpu_work_free(m);
  if (m->lv[m->nl - 1].A->nrows <= m->o.dense_max) {
    t = spx__now();
    st = spx__amg_lu(m->lv[m->nl - 1].A, &m->lu, &m->piv, &rep->coarse_zero_pivots);
    rep->coarse_ms = 1e3 * (spx__now() - t);
  }
  return st;
fail:
  SPX_FREE(d);
  return st;
}

/* ---- Setup: plans and vectors ------------------------------------------------------------------ */
static void spx__amg_plan_name(const spx_plan *p, char *buf, size_t len) {
  if (!p) buf[0] = 0;
  else snprintf(buf, len, "%s", spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr"
                                                                                   : spx_format_name(spx_plan_format(p)));
}

/* A plan of a with the options every level shares (force NULL: theirs), built and its kernel final
 * (tiered JIT): a stand-in kernel would make the cycle's rounding depend on timing. */
static spx_status spx__amg_plan(spx_amg *m, const spx_csr *a, int no_diag, const char *force, spx_plan **p) {
  spx_plan_options o = m->po;
  spx_status st;
  o.dtype = SPX_DOUBLE;
  if (force) o.force = force;
  if (no_diag) o.no_diagonal = 1;
  st = spx_plan_create(m->ctx, a, &o, p);
  if (st == SPX_UNSUPPORTED && !o.force) { /* the choice's converter declined what the model's sample did not
                                              show (a SELL16 slice too wide): the CSR baseline */
    spx_clear_error();
    o.force = "csr";
    st = spx_plan_create(m->ctx, a, &o, p);
  }
  if (st || (st = spx_plan_build(*p)) || (st = spx_plan_wait(*p)))
    return spx__wrap(st, "spx_amg_create: the plan of a %lld x %lld operator", (long long)a->nrows, (long long)a->ncols);
  return SPX_OK;
}

/* SPX_PLAN_TRACE: one plan's choice and time on stderr. */
static void spx__amg_plan_mark(int l, const char *op, const spx_plan *p, double *t) {
  char name[24];
  double now;
  if (!spx__plan_tracing()) return;
  now = spx__now();
  spx__amg_plan_name(p, name, sizeof name);
  fprintf(stderr, "spx amg: level %d plan of %s: %-12s %8.3f ms (%s)\n", l, op, name, 1e3 * (now - *t),
          spx_plan_strategy_name(spx_plan_strategy_of(p)));
  *t = now;
}

static spx_status spx__amg_plans(spx_amg *m) {
  double t = spx__now(), t0 = t;
  int l;
  spx_status st;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if ((st = spx__amg_plan(m, L->A, 0, NULL, &L->pA))) return st;
    spx__amg_plan_mark(l, "A", L->pA, &t);
    if (!L->P) continue;
    if ((st = spx__amg_plan(m, L->P, 1, NULL, &L->pP))) return st;
    spx__amg_plan_mark(l, "P", L->pP, &t);
    if ((st = spx__amg_plan(m, L->R, 1, NULL, &L->pR))) return st;
    spx__amg_plan_mark(l, "R", L->pR, &t);
  }
  m->rep.plan_ms = 1e3 * (spx__now() - t0);
  return SPX_OK;
}

/* Work vectors of every level (level 0's x and b are the caller's): host arrays. */
static spx_status spx__amg_host_vectors(spx_amg *m) {
  int l;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    size_t n = (size_t)L->A->nrows + 1;
    if ((l > 0 && (!(L->x = spx__calloc(n, sizeof(double))) || !(L->b = spx__calloc(n, sizeof(double))))) ||
        !(L->r = spx__calloc(n, sizeof(double))) || !(L->t = spx__calloc(n, sizeof(double))))
      return SPX_OUT_OF_MEMORY;
  }
  return SPX_OK;
}

static spx_status spx__amg_upload(spx_amg *m, const void *src, size_t bytes, spx_devptr *dst) {
  spx_status st;
  if ((st = spx_device_alloc(m->ctx, bytes + 8, dst))) return st;
  return bytes ? spx_device_upload(m->ctx, *dst, src, bytes) : SPX_OK;
}

/* CUDA gs: the color-ordered rows of C in slices of 32 rows, column major (the template's layout):
 * soff[c] the first slice of color c, sp[s] slice s's first slot, sp[s + 1] - sp[s] 32 times its
 * longest row; padding is (the row's own column, 0), lanes past a color's last row (0, 0). Built
 * on the host, uploaded with perm, freed. values_only: the layout is on the device already (the
 * same pattern, so the same slots): only the values go up. */
static spx_status spx__amg_slices(spx_amg *m, spx__amg_level *L, int values_only) {
  const spx_csr *C = L->C;
  int64_t ns = 0, s, c, k, *sp = NULL;
  int32_t *col = NULL;
  double *val = NULL;
  spx_status st = SPX_OUT_OF_MEMORY;
  if (!L->soff && !(L->soff = (int64_t *)spx__alloc((size_t)L->ncolors + 1, sizeof(int64_t)))) return SPX_OUT_OF_MEMORY;
  for (c = 0; c < L->ncolors; c++) {
    L->soff[c] = ns;
    ns += (L->coff[c + 1] - L->coff[c] + 31) / 32;
  }
  L->soff[L->ncolors] = ns;
  if (!(sp = (int64_t *)spx__calloc((size_t)ns + 1, sizeof(int64_t)))) goto done;
  for (c = 0; c < L->ncolors; c++)
    for (s = L->soff[c]; s < L->soff[c + 1]; s++) {
      int64_t k0 = L->coff[c] + 32 * (s - L->soff[c]), k1 = SPX__MIN(k0 + 32, L->coff[c + 1]), w = 0;
      for (k = k0; k < k1; k++) w = SPX__MAX(w, C->row_ptr[k + 1] - C->row_ptr[k]);
      sp[s + 1] = sp[s] + 32 * w;
    }
  if (!(col = (int32_t *)spx__calloc((size_t)sp[ns] + 1, sizeof(int32_t))) ||
      !(val = (double *)spx__calloc((size_t)sp[ns] + 1, sizeof(double))))
    goto done;
  for (c = 0; c < L->ncolors; c++)
    for (s = L->soff[c]; s < L->soff[c + 1]; s++) {
      int64_t k0 = L->coff[c] + 32 * (s - L->soff[c]), k1 = SPX__MIN(k0 + 32, L->coff[c + 1]);
      int64_t w = (sp[s + 1] - sp[s]) / 32, j;
      for (k = k0; k < k1; k++)
        for (j = 0; j < w; j++) {
          int64_t q = sp[s] + 32 * j + (k - k0), e = C->row_ptr[k] + j;
          col[q] = e < C->row_ptr[k + 1] ? C->col_idx[e] : L->perm[k];
          val[q] = e < C->row_ptr[k + 1] ? C->val.d[e] : 0.0;
        }
    }
  if (values_only) st = sp[ns] ? spx_device_upload(m->ctx, L->dval, val, (size_t)sp[ns] * sizeof(double)) : SPX_OK;
  else if (!(st = spx__amg_upload(m, sp, ((size_t)ns + 1) * sizeof(int64_t), &L->dsp)) &&
      !(st = spx__amg_upload(m, col, (size_t)sp[ns] * sizeof(int32_t), &L->dcol)) &&
      !(st = spx__amg_upload(m, val, (size_t)sp[ns] * sizeof(double), &L->dval)))
    st = spx__amg_upload(m, L->perm, (size_t)C->nrows * sizeof(int32_t), &L->dperm);
done:
  SPX_FREE(sp);
  SPX_FREE(col);
  SPX_FREE(val);
  return st;
}

/* CUDA: the kernels, the vectors, the inverse diagonals and the gs arrays on the device; the
 * coarsest b and x on the host. */
static spx_status spx__amg_device(spx_amg *m) {
  const char *defs[2] = {"SPX_VALUE_T=double", "SPX_BLOCK=256"};
  const int64_t n0 = m->lv[0].A->nrows;
  double t = spx__now();
  int64_t g, want;
  int l, k;
  spx_status st;
  for (k = 0; k < SPX__AK_COUNT; k++)
    if ((st = spx_jit_kernel(m->ctx, "amg", spx__amg_knames[k], 2, defs, &m->fn[k]))) return st;
  /* a fixed grid (the dot's partials, and so its sums, depend on it): a few blocks per SM */
  want = m->ctx->info.sm_count > 0 ? 8 * (int64_t)m->ctx->info.sm_count : 1024;
  g = (n0 + SPX__AMG_BLOCK - 1) / SPX__AMG_BLOCK;
  m->grid = (unsigned)SPX__MAX(1, SPX__MIN(g, SPX__MIN(want, 4096)));
  if ((st = spx_device_alloc(m->ctx, (size_t)m->grid * sizeof(double), &m->part))) return st;
  if (!(m->hpart = (double *)spx__alloc(m->grid, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    const int64_t n = L->A->nrows;
    const size_t vb = ((size_t)n + 1) * sizeof(double);
    spx_devptr v[4] = {0, 0, 0, 0};
    for (k = l > 0 ? 0 : 2; k < 4; k++) {
      if ((st = spx_device_alloc(m->ctx, vb, &v[k]))) return st;
      if (k == 0) L->x = SPX__AMG_VP(v[0]);
      if (k == 1) L->b = SPX__AMG_VP(v[1]);
      if (k == 2) L->r = SPX__AMG_VP(v[2]);
      if (k == 3) L->t = SPX__AMG_VP(v[3]);
    }
    if (L->dinv && (st = spx__amg_upload(m, L->dinv, (size_t)n * sizeof(double), &L->ddinv))) return st;
    if (L->C && (st = spx__amg_slices(m, L, 0))) return st;
  }
  if (m->lu) {
    const size_t nc = (size_t)m->lv[m->nl - 1].A->nrows + 1;
    if (!(m->hb = (double *)spx__alloc(nc, sizeof(double))) || !(m->hx = (double *)spx__alloc(nc, sizeof(double))))
      return SPX_OUT_OF_MEMORY;
  }
  st = spx_context_synchronize(m->ctx);
  m->rep.device_ms = 1e3 * (spx__now() - t);
  return st;
}

/* ---- The V-cycle ------------------------------------------------------------------------------- */
/* The coarsest level: the LU (on the host; on CUDA b goes down and x up), else its smoother. */
static spx_status spx__amg_coarse(spx_amg *m, const void *b, void *x, int xzero) {
  const int l = m->nl - 1;
  const int64_t n = m->lv[l].A->nrows;
  spx_status st;
  if (!m->lu) return spx__amg_smooth(m, l, b, x, m->o.coarse_sweeps, xzero);
  if (!m->cuda) {
    spx__amg_lu_solve(n, m->lu, m->piv, (const double *)b, (double *)x);
    return SPX_OK;
  }
  if ((st = spx_device_download(m->ctx, m->hb, SPX__AMG_DP(b), (size_t)n * sizeof(double)))) return st;
  spx__amg_lu_solve(n, m->lu, m->piv, m->hb, m->hx);
  return spx_device_upload(m->ctx, SPX__AMG_DP(x), m->hx, (size_t)n * sizeof(double));
}

/* One cycle of type c (an spx_amg_cycle_type) from level l down. The coarse correction solves
 * A_{l+1} e = R r: V by one cycle, W by two (the second from the first's e), F by an F-cycle then a
 * V-cycle. A second visit reads only N->b, which the first left as it was, and skips the coarsest
 * level's LU (an exact solve again would change nothing). */
static spx_status spx__amg_cycle_from(spx_amg *m, int l, int c, const void *b, void *x, int xzero) {
  spx__amg_level *L = &m->lv[l], *N;
  spx_status st;
  if (l == m->nl - 1) return spx__amg_coarse(m, b, x, xzero);
  N = &m->lv[l + 1];
  if ((st = spx__amg_smooth(m, l, b, x, L->pre, xzero)) || (st = spx__amg_resid(m, l, b, x, L->r)) ||
      (st = spx__amg_spmv(m, L->pR, 1.0, L->r, 0.0, N->b)) || (st = spx__amg_cycle_from(m, l + 1, c, N->b, N->x, 1)))
    return st;
  if (c != SPX_AMG_CYCLE_V && !(l + 1 == m->nl - 1 && m->lu) &&
      (st = spx__amg_cycle_from(m, l + 1, c == SPX_AMG_CYCLE_W ? SPX_AMG_CYCLE_W : SPX_AMG_CYCLE_V, N->b, N->x, 0)))
    return st;
  if ((st = spx__amg_spmv(m, L->pP, 1.0, N->x, 1.0, x))) return st;
  return spx__amg_smooth(m, l, b, x, L->post, 0);
}

/* The options' cycle on the fine level; refused while a failed update left the levels inconsistent. */
static spx_status spx__amg_vcycle(spx_amg *m, int l, const void *b, void *x, int xzero) {
  if (m->broken)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg: the last spx_amg_update failed part way, so the levels are "
                     "inconsistent; update again with a good matrix, or destroy the hierarchy");
  return spx__amg_cycle_from(m, l, (int)m->o.cycle, b, x, xzero);
}

/* ---- Entry points ------------------------------------------------------------------------------ */
static spx_status spx__amg_check_options(const spx_amg_options *o) {
  const char *fn = "spx_amg_create";
  int l;
  if (!(o->theta >= 0 && o->theta <= 1) || !(o->theta_decay > 0 && o->theta_decay <= 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: theta = %g (0 to 1) or theta_decay = %g (above 0, at most 1) out of "
                     "range", fn, o->theta, o->theta_decay);
  if (o->max_levels < 1 || o->max_levels > SPX_AMG_MAX_LEVELS)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: max_levels = %d; it is 1 to %d", fn, o->max_levels, SPX_AMG_MAX_LEVELS);
  if (o->coarse_size < 1 || o->dense_max < 0 || o->coarse_sweeps < 1 || o->coarse_sweeps > 1000)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: coarse_size = %lld (>= 1), dense_max = %lld (>= 0), coarse_sweeps = %d "
                     "(1 to 1000)", fn, (long long)o->coarse_size, (long long)o->dense_max, o->coarse_sweeps);
  if (!(o->prolong_omega >= 0 && o->prolong_omega < 2) || o->power_iters < 0 || o->power_iters > 1000)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: prolong_omega = %g (0 to 2) or power_iters = %d (0 to 1000) out of range",
                     fn, o->prolong_omega, o->power_iters);
  if (o->gpu_setup_rows < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: gpu_setup_rows = %lld; it is >= 0 (0: the whole setup on the host)", fn,
                     (long long)o->gpu_setup_rows);
  if ((unsigned)o->aggregation > SPX_AMG_AGG_MIS2 || (unsigned)o->plan_trials > 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: aggregation %d (SPX_AMG_AGG_AUTO, _GREEDY or _MIS2) or plan_trials "
                     "%d (0 or 1) out of range", fn, (int)o->aggregation, o->plan_trials);
  if ((unsigned)o->coarsening > SPX_AMG_RS)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: coarsening %d is not an spx_amg_coarsening (SPX_AMG_SA or SPX_AMG_RS)",
                     fn, (int)o->coarsening);
  if (!(o->rs_theta > 0 && o->rs_theta < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rs_theta = %g; it is above 0 and below 1", fn, o->rs_theta);
  if (!(o->rs_trunc >= 0 && o->rs_trunc < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rs_trunc = %g; it is 0 (no truncation) or above, and below 1", fn,
                     o->rs_trunc);
  if ((unsigned)o->rs_interp > SPX_AMG_RS_EXTENDED_I)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rs_interp %d is not an spx_amg_rs_interp (SPX_AMG_RS_DIRECT or "
                     "SPX_AMG_RS_EXTENDED_I)", fn, (int)o->rs_interp);
  if (o->rs_pmax < 0 || o->rs_pmax > SPX_AMG_RS_PMAX_MAX)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: rs_pmax = %d; it is 0 (no cap) to %d", fn, o->rs_pmax,
                     SPX_AMG_RS_PMAX_MAX);
  if ((unsigned)o->smoother >= SPX_AMG_SMOOTHER_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: smoother %d is not an spx_amg_smoother", fn, (int)o->smoother);
  if (o->pre_sweeps < 0 || o->pre_sweeps > 100 || o->post_sweeps < 0 || o->post_sweeps > 100)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: pre_sweeps = %d and post_sweeps = %d; each is 0 to 100", fn,
                     o->pre_sweeps, o->post_sweeps);
  if (!(o->damping >= 0 && o->damping < 2))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: damping = %g; it is 0 (the smoother's own) or below 2", fn, o->damping);
  if (o->cheb_degree < 1 || o->cheb_degree > 8 || !(o->cheb_ratio > 0 && o->cheb_ratio < 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: cheb_degree = %d (1 to 8) or cheb_ratio = %g (between 0 and 1) out of "
                     "range", fn, o->cheb_degree, o->cheb_ratio);
  if ((unsigned)o->coloring > SPX_AMG_COLOR_WELSH_POWELL || !(o->relaxed_fraction > 0 && o->relaxed_fraction <= 1))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: coloring %d or relaxed_fraction %g (above 0, at most 1) out of range", fn,
                     (int)o->coloring, o->relaxed_fraction);
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    const spx_amg_level_options *lo = &o->level[l];
    if (lo->smoother < -1 || lo->smoother >= SPX_AMG_SMOOTHER_COUNT || lo->pre_sweeps < -1 || lo->pre_sweeps > 100 ||
        lo->post_sweeps < -1 || lo->post_sweeps > 100 || !(lo->damping >= 0 && lo->damping < 2))
      return spx__fail(SPX_INVALID_ARGUMENT, "%s: level[%d] = {smoother %d, sweeps %d/%d, damping %g} out of range", fn,
                       l, lo->smoother, lo->pre_sweeps, lo->post_sweeps, lo->damping);
  }
  if ((unsigned)o->cycle >= SPX_AMG_CYCLE_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: cycle %d is not an spx_amg_cycle_type (V, W or F)", fn, (int)o->cycle);
  if (o->plan && o->plan->dtype == SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: plans of float are not supported: AMG runs in double", fn);
  return SPX_OK;
}

/* Row i's first non-finite value (a NaN or Inf would surface levels down, far from its cause), or
 * -1. */
static int64_t spx__amg_nonfinite(const spx_csr *a, int64_t i) {
  int64_t k;
  for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
    if (!spx__amg_finite(a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k])) return k;
  return -1;
}

/* a is square, not empty and valid with finite entries: its rows checked in parallel (offsets,
 * columns increasing and in range, values), spx_csr_validate's message for a bad row, the first
 * non-finite entry's otherwise. */
static spx_status spx__amg_check_matrix(const char *fn, const spx_csr *a) {
  int64_t n, i, bad_row, bad_val, k;
  spx_status st;
  if (!a) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL matrix", fn);
  if (a->nrows != a->ncols)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is %lld x %lld; AMG needs a square matrix", fn,
                     (long long)a->nrows, (long long)a->ncols);
  if (a->nrows == 0) return spx__fail(SPX_INVALID_ARGUMENT, "%s: the matrix is empty (0 x 0)", fn);
  if ((st = spx__csr_validate_head(a))) return spx__wrap(st, "%s", fn);
  n = bad_row = bad_val = a->nrows;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(min : bad_row, bad_val) if (n > 16384)
#endif
  for (i = 0; i < n; i++) {
    if (!spx__csr_rows_ok(a, i, i + 1)) {
      if (i < bad_row) bad_row = i;
    } else if (spx__amg_nonfinite(a, i) >= 0 && i < bad_val)
      bad_val = i;
  }
  if (bad_row < n) return spx__wrap((st = spx_csr_validate(a)) ? st : SPX_INVALID_ARGUMENT, "%s", fn);
  if (bad_val == n) return SPX_OK;
  k = spx__amg_nonfinite(a, bad_val);
  return spx__fail(SPX_INVALID_ARGUMENT, "%s: a[%lld][%d] = %g: AMG needs finite entries", fn, (long long)bad_val,
                   a->col_idx[k], a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k]);
}

/* Elements per chunk of the input's parallel copy. */
#define SPX__AMG_COPY_CHUNK 65536

/* The fine level's A: the input (checked) in double, its arrays copied in parallel chunks. */
static spx_status spx__amg_copy_input(const spx_csr *a, spx_csr **out) {
  const int64_t nnz = a->nnz, nc = (nnz + SPX__AMG_COPY_CHUNK - 1) / SPX__AMG_COPY_CHUNK;
  spx_csr *A = NULL;
  int64_t c;
  spx_status st;
  if ((st = spx_csr_create(a->nrows, a->ncols, nnz, SPX_DOUBLE, &A))) return st;
  memcpy(A->row_ptr, a->row_ptr, ((size_t)a->nrows + 1) * sizeof(int64_t));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (nc > 4)
#endif
  for (c = 0; c < nc; c++) {
    const int64_t lo = c * SPX__AMG_COPY_CHUNK, hi = SPX__MIN(nnz, lo + SPX__AMG_COPY_CHUNK);
    int64_t k;
    memcpy(A->col_idx + lo, a->col_idx + lo, (size_t)(hi - lo) * sizeof(int32_t));
    if (a->dtype == SPX_DOUBLE) memcpy(A->val.d + lo, a->val.d + lo, (size_t)(hi - lo) * sizeof(double));
    else
      for (k = lo; k < hi; k++) A->val.d[k] = a->val.f[k];
  }
  *out = A;
  return SPX_OK;
}

/* Frees everything a hierarchy holds, built or half built. */
void spx_amg_destroy(spx_amg *m) {
  int l;
  if (!m) return;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    spx__amg_level *L = &m->lv[l];
    spx_plan_destroy(L->pA);
    spx_plan_destroy(L->pP);
    spx_plan_destroy(L->pR);
    spx_csr_destroy(L->A);
    spx_csr_destroy(L->P);
    spx_csr_destroy(L->R);
    spx_csr_destroy(L->AP);
    spx_csr_destroy(L->C);
    SPX_FREE(L->agg);
    SPX_FREE(L->dinv);
    SPX_FREE(L->color);
    SPX_FREE(L->perm);
    SPX_FREE(L->coff);
    SPX_FREE(L->soff);
    if (m->cuda) {
      spx_device_free(m->ctx, SPX__AMG_DP(L->x));
      spx_device_free(m->ctx, SPX__AMG_DP(L->b));
      spx_device_free(m->ctx, SPX__AMG_DP(L->r));
      spx_device_free(m->ctx, SPX__AMG_DP(L->t));
      spx_device_free(m->ctx, L->ddinv);
      spx_device_free(m->ctx, L->dsp);
      spx_device_free(m->ctx, L->dcol);
      spx_device_free(m->ctx, L->dval);
      spx_device_free(m->ctx, L->dperm);
    } else {
      SPX_FREE(L->x);
      SPX_FREE(L->b);
      SPX_FREE(L->r);
      SPX_FREE(L->t);
    }
  }
  if (m->cuda) {
    spx_device_free(m->ctx, m->part);
    spx__amg_gpu_free(m);
  }
  SPX_FREE(m->hpart);
  SPX_FREE(m->lu);
  SPX_FREE(m->piv);
  SPX_FREE(m->hb);
  SPX_FREE(m->hx);
  if (m->own_ctx) spx_context_destroy(m->ctx);
  SPX_FREE(m);
}

/* The report's per-level lines and complexities. */
static void spx__amg_fill_report(spx_amg *m) {
  spx_amg_report *r = &m->rep;
  double nnz = 0, rows = 0;
  int l;
  r->levels = m->nl;
  r->cycle = m->o.cycle;
  r->aggregation = m->o.aggregation;
  r->coarsening = m->o.coarsening;
  r->rs_interp = m->o.rs_interp;
  r->coarse_direct = m->lu != NULL;
  for (l = 0; l < m->nl; l++) {
    const spx__amg_level *L = &m->lv[l];
    spx_amg_level_info *li = &r->level[l];
    li->rows = L->A->nrows;
    li->nnz = L->A->nnz;
    li->p_cols = L->P ? L->P->ncols : 0;
    li->p_nnz = L->P ? L->P->nnz : 0;
    li->smoother = (spx_amg_smoother)L->smoother;
    li->pre_sweeps = L->pre;
    li->post_sweeps = L->post;
    li->damping = L->w;
    li->colors = L->ncolors;
    li->rho = L->rho;
    li->agg_gpu = L->agg_gpu;
    li->mis2 = L->mis2;
    li->p_gpu = L->p_gpu;
    li->rap_gpu = L->rap_gpu;
    li->rho_gpu = L->rho_gpu;
    spx__amg_plan_name(L->pA, li->format, sizeof li->format);
    spx__amg_plan_name(L->pP, li->p_format, sizeof li->p_format);
    spx__amg_plan_name(L->pR, li->r_format, sizeof li->r_format);
    nnz += (double)L->A->nnz;
    rows += (double)L->A->nrows;
  }
  r->operator_complexity = nnz / (double)SPX__MAX(1, m->lv[0].A->nnz);
  r->grid_complexity = rows / (double)m->lv[0].A->nrows;
}

spx_status spx_amg_create(spx_context *ctx, const spx_csr *a, const spx_amg_options *options, spx_amg **out) {
  spx_amg *m;
  spx_amg_options o;
  double t0 = spx__now();
  spx_status st;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_create: NULL output");
  *out = NULL;
  if (options) o = *options;
  else spx_amg_options_default(&o);
  if ((st = spx__amg_check_options(&o)) || (st = spx__amg_check_matrix("spx_amg_create", a))) return st;
  if (!(m = (spx_amg *)spx__calloc(1, sizeof *m))) return SPX_OUT_OF_MEMORY;
  m->o = o; /* o.plan is copied (with its device) for spx_amg_update's plans, and forgotten */
  if (o.plan) {
    m->po = *o.plan;
    if (o.plan->device) {
      m->pdev = *o.plan->device;
      m->po.device = &m->pdev;
    }
  } else {
    spx_plan_options_default(&m->po);
    m->po.eager = 1;
  }
  /* a timed choice per level and operator costs more than the setup itself: the model's choice
   * unless the caller asks for the trials */
  if (!o.plan_trials && !m->po.force && (m->po.strategy == SPX_PLAN_AUTO || m->po.strategy == SPX_PLAN_TRIAL))
    m->po.strategy = SPX_PLAN_MODEL;
  if ((st = spx__amg_copy_input(a, &m->lv[0].A))) goto fail;
  m->rep.input_ms = 1e3 * (spx__now() - t0);
  if (!ctx) {
    spx_context_options co = {o.plan ? o.plan->backend : SPX_BACKEND_AUTO, 0};
    if ((st = spx_context_create(&co, &m->ctx))) goto fail;
    m->own_ctx = 1;
  } else m->ctx = ctx;
  m->cuda = spx_context_backend(m->ctx) == SPX_BACKEND_CUDA;
  if ((st = spx__amg_hierarchy(m)) || (st = spx__amg_plans(m)) ||
      (st = m->cuda ? spx__amg_device(m) : spx__amg_host_vectors(m)))
    goto fail;
  m->o.plan = NULL;
  m->po.force = NULL; /* the caller's string; an update forces each plan's own choice */
  spx__amg_fill_report(m);
  m->rep.setup_ms = 1e3 * (spx__now() - t0);
  *out = m;
  return SPX_OK;
fail:
  spx_amg_destroy(m);
  return st;
}

/* ---- Setup reuse (spx_amg_update) --------------------------------------------------------------- */
/* a has the pattern of the fine level and a nonzero diagonal (checked before anything changes, so
 * that a refusal leaves the hierarchy as it was). */
static spx_status spx__amg_same_pattern(const spx_amg *m, const spx_csr *a) {
  const spx_csr *A0 = m->lv[0].A;
  int64_t i, k;
  if (a->nrows != A0->nrows || a->nnz != A0->nnz)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: the matrix is %lld x %lld with %lld nonzeros; the hierarchy "
                     "was set up for %lld x %lld with %lld (setup reuse needs the same pattern: create a new hierarchy)",
                     (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, (long long)A0->nrows,
                     (long long)A0->ncols, (long long)A0->nnz);
  for (i = 0; i < a->nrows; i++) {
    int diag = 0;
    if (a->row_ptr[i + 1] != A0->row_ptr[i + 1])
      return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: row %lld has %lld nonzeros where the hierarchy's matrix has "
                       "%lld (setup reuse needs the same pattern: create a new hierarchy)", (long long)i,
                       (long long)(a->row_ptr[i + 1] - a->row_ptr[i]), (long long)(A0->row_ptr[i + 1] - A0->row_ptr[i]));
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      if (a->col_idx[k] != A0->col_idx[k])
        return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: row %lld has column %d where the hierarchy's matrix has "
                         "%d (setup reuse needs the same pattern: create a new hierarchy)", (long long)i, a->col_idx[k],
                         A0->col_idx[k]);
      if (a->col_idx[k] == i) diag = (a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k]) != 0;
    }
    if (!diag)
      return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: a[%lld][%lld] = 0: AMG needs a nonzero diagonal",
                       (long long)i, (long long)i);
  }
  return SPX_OK;
}

/* The name that forces plan p's choice again: "cusparse", or its format's. */
static const char *spx__amg_force_name(const spx_plan *p) {
  return spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse" : spx_format_name(spx_plan_format(p));
}

/* The Galerkin operators' values, level by level: A P into its kept pattern, then R (A P), on the
 * side that formed them (the GPU's: the numeric phases of cuSPARSE's reuse API). Classical
 * coarsening's P follows A's values (direct interpolation): its values, and R's, come first. */
static spx_status spx__amg_update_rap(spx_amg *m) {
  int l;
  spx_status st;
  m->rep.rap_gpu_ms = 0;
  for (l = 0; l + 1 < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if (L->gpu) {
      double t = spx__now();
      st = spx__amg_gpu_update(m, l);
      m->rep.rap_gpu_ms += 1e3 * (spx__now() - t);
      if (st) return st;
    } else if ((m->o.coarsening == SPX_AMG_RS && (st = spx__amg_rs_values(m, l))) ||
               (st = spx__amg_spgemm_values(L->A, L->P, L->AP)) ||
               (st = spx__amg_spgemm_values(L->R, L->AP, m->lv[l + 1].A)))
      return st;
  }
  return SPX_OK;
}

/* Every level's diagonal checked and its smoother's values made again (the levels with a smoother:
 * all but a coarsest solved by LU). */
static spx_status spx__amg_update_smoothers(spx_amg *m) {
  double *d = NULL;
  int l;
  spx_status st = SPX_OK;
  if (!(d = (double *)spx__alloc((size_t)m->lv[0].A->nrows + 1, sizeof(double)))) return SPX_OUT_OF_MEMORY;
  for (l = 0; l < m->nl && !st; l++) { /* coarser levels are smaller: d fits them all */
    if (!(st = spx__amg_diag("spx_amg_update", m->lv[l].A, l, d)) && m->lv[l].dinv)
      st = spx__amg_smoother_values(m, l, d, -1);
  }
  if (m->cuda) spx__amg_gpu_work_free(m); /* the GPU's rho made them */
  SPX_FREE(d);
  return st;
}

/* The plan *p of a made again, forced to its first choice; the old one goes once the new one
 * stands. */
static spx_status spx__amg_replan(spx_amg *m, const spx_csr *a, int no_diag, spx_plan **p) {
  spx_plan *q = NULL;
  spx_status st;
  if ((st = spx__amg_plan(m, a, no_diag, spx__amg_force_name(*p), &q))) return st;
  spx_plan_destroy(*p);
  *p = q;
  return SPX_OK;
}

/* Each level's plan of A made again; with classical coarsening those of P and R too (their values
 * changed). */
static spx_status spx__amg_update_plans(spx_amg *m) {
  int l;
  spx_status st;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if ((st = spx__amg_replan(m, L->A, 0, &L->pA))) return st;
    if (m->o.coarsening != SPX_AMG_RS || !L->P) continue;
    if ((st = spx__amg_replan(m, L->P, 1, &L->pP)) || (st = spx__amg_replan(m, L->R, 1, &L->pR))) return st;
  }
  return SPX_OK;
}

/* CUDA: the inverse diagonals and the gs slices' values into the arrays already there. */
static spx_status spx__amg_update_device(spx_amg *m) {
  int l;
  spx_status st;
  for (l = 0; l < m->nl; l++) {
    spx__amg_level *L = &m->lv[l];
    if (L->dinv && (st = spx_device_upload(m->ctx, L->ddinv, L->dinv, (size_t)L->A->nrows * sizeof(double)))) return st;
    if (L->C && (st = spx__amg_slices(m, L, 1))) return st;
  }
  return spx_context_synchronize(m->ctx);
}

spx_status spx_amg_update(spx_amg *m, const spx_csr *a) {
  spx_amg_report *rep;
  spx__amg_level *L0;
  double t0 = spx__now(), t;
  int64_t k;
  spx_status st;
  if (!m) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_update: NULL hierarchy");
  if ((st = spx__amg_check_matrix("spx_amg_update", a)) || (st = spx__amg_same_pattern(m, a))) return st;
  rep = &m->rep;
  L0 = &m->lv[0];
  m->broken = 1; /* until every step below has run */
  rep->strength_ms = rep->aggregate_ms = rep->prolong_ms = rep->strength_gpu_ms = rep->aggregate_gpu_ms = 0;
  rep->prolong_gpu_ms = rep->input_ms = 0;
  rep->coarse_zero_pivots = 0;
  t = spx__now();
  for (k = 0; k < a->nnz; k++) L0->A->val.d[k] = a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k];
  st = spx__amg_update_rap(m);
  rep->rap_ms = 1e3 * (spx__now() - t);
  if (st) return st;
  t = spx__now();
  st = spx__amg_update_smoothers(m);
  rep->smoother_ms = 1e3 * (spx__now() - t);
  if (st) return st;
  if (rep->coarse_direct) { /* the create's choice (m->lu is NULL after a failed update) */
    t = spx__now();
    SPX_FREE(m->lu);
    SPX_FREE(m->piv);
    st = spx__amg_lu(m->lv[m->nl - 1].A, &m->lu, &m->piv, &rep->coarse_zero_pivots);
    rep->coarse_ms = 1e3 * (spx__now() - t);
    if (st) return st;
  }
  t = spx__now();
  st = spx__amg_update_plans(m);
  rep->plan_ms = 1e3 * (spx__now() - t);
  if (st) return st;
  rep->device_ms = 0;
  if (m->cuda) {
    t = spx__now();
    st = spx__amg_update_device(m);
    rep->device_ms = 1e3 * (spx__now() - t);
    if (st) return st;
  }
  spx__amg_fill_report(m);
  rep->updates++;
  rep->setup_ms = 1e3 * (spx__now() - t0);
  m->broken = 0;
  return SPX_OK;
}

spx_status spx_amg_cycle(spx_amg *m, const void *b, void *x) {
  if (!m || !b || !x) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_cycle: NULL argument");
  m->rep.cycles++;
  return spx__amg_vcycle(m, 0, b, x, 0);
}

spx_status spx_amg_precond(void *data, const void *r, void *z) {
  spx_amg *m = (spx_amg *)data;
  if (!m || !r || !z) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_precond: NULL argument");
  m->rep.cycles++;
  return spx__amg_vcycle(m, 0, r, z, 1);
}

spx_plan *spx_amg_plan(const spx_amg *m) { return m ? m->lv[0].pA : NULL; }
spx_context *spx_amg_context(const spx_amg *m) { return m ? m->ctx : NULL; }
const spx_amg_report *spx_amg_report_of(const spx_amg *m) { return m ? &m->rep : NULL; }

spx_status spx_amg_level(const spx_amg *m, int level, spx_amg_level_view *out) {
  const spx__amg_level *L;
  if (!m || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_level: NULL argument");
  if (level < 0 || level >= m->nl)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_level: level %d; the hierarchy has levels 0 to %d", level, m->nl - 1);
  L = &m->lv[level];
  out->A = L->A;
  out->P = L->P;
  out->R = L->R;
  out->aggregate = L->agg;
  out->color = L->color;
  out->colors = L->ncolors;
  out->plan_A = L->pA;
  out->plan_P = L->pP;
  out->plan_R = L->pR;
  return SPX_OK;
}

/* ---- AMG as the solver --------------------------------------------------------------------------- */
static spx_status spx__amg_solve_end(spx_solve_report *r, spx_status st, const char *msg) {
  r->status = st;
  snprintf(r->message, sizeof r->message, "%s", msg);
  if (st) spx__fail(st, "%s", msg);
  return st;
}

/* The cycles of spx_amg_solve on vectors of the backend (b, x). */
static spx_status spx__amg_iterate(spx_amg *m, const void *b, void *x, const spx_solve_options *o,
                                   spx_solve_report *r) {
  const int64_t n = m->lv[0].A->nrows;
  void *res = m->lv[0].r; /* free between cycles */
  double bb, rr, t0 = spx__now();
  int64_t it = 0, s0;
  char msg[256];
  spx_status st;
  if ((st = spx__amg_dot(m, n, b, b, &bb)) || (st = spx__amg_resid(m, 0, b, x, res)) ||
      (st = spx__amg_dot(m, n, res, res, &rr)))
    return st;
  r->bnorm = spx__sqrt(bb);
  r->tol = SPX__MAX(o->rtol * r->bnorm, o->atol);
  r->setup_ms += 1e3 * (spx__now() - t0);
  t0 = spx__now();
  s0 = m->spmv0;
  for (;;) {
    r->resid = spx__sqrt(rr);
    if (it < o->history_len) o->history[it] = r->resid;
    if (!spx__amg_finite(rr)) {
      snprintf(msg, sizeof msg, "amg: the residual norm became %g after cycle %lld (NaN or Inf in the matrix, b or x)",
               r->resid, (long long)it);
      st = SPX_BREAKDOWN;
      break;
    }
    if (r->resid <= r->tol) {
      snprintf(msg, sizeof msg, "amg: converged in %lld cycles, ||r|| = %.3g <= %.3g", (long long)it, r->resid, r->tol);
      st = SPX_OK;
      break;
    }
    if (it >= o->maxit) {
      snprintf(msg, sizeof msg, "amg: not converged in %lld cycles: ||r|| = %.3g > %.3g (||r||/||b|| = %.3g)",
               (long long)it, r->resid, r->tol, r->bnorm > 0 ? r->resid / r->bnorm : r->resid);
      st = SPX_NOT_CONVERGED;
      break;
    }
    m->rep.cycles++;
    if ((st = spx__amg_vcycle(m, 0, b, x, 0)) || (st = spx__amg_resid(m, 0, b, x, res)) ||
        (st = spx__amg_dot(m, n, res, res, &rr)))
      return st;
    it++;
  }
  r->iterations = it;
  r->solve_ms = 1e3 * (spx__now() - t0);
  r->spmvs = m->spmv0 - s0 + 1;
  r->spmvs_per_iter = it > 0 ? (int)((m->spmv0 - s0) / it) : 0;
  r->true_resid = r->resid; /* every cycle's residual is computed from scratch */
  r->history_count = o->history_len > 0 ? SPX__MIN(it + 1, o->history_len) : 0;
  return spx__amg_solve_end(r, st, msg);
}

spx_status spx_amg_solve(spx_amg *m, const void *b, void *x, const spx_solve_options *options,
                         spx_solve_report *report) {
  spx_solve_options o;
  spx_solve_report scratch, *r = report ? report : &scratch;
  const void *db = b;
  void *dx = x;
  spx_devptr ub = 0, ux = 0;
  double t0 = spx__now();
  int64_t n;
  spx_status st;
  memset(r, 0, sizeof *r);
  r->method = "amg";
  r->upgraded_at = -1;
  if (options) o = *options;
  else spx_solve_options_default(&o);
  if (!m || !b || !x) return spx__amg_solve_end(r, SPX_INVALID_ARGUMENT, "spx_amg_solve: NULL argument");
  n = r->n = m->lv[0].A->nrows;
  if (!(o.rtol >= 0) || !(o.atol >= 0) || !spx__amg_finite(o.rtol) || !spx__amg_finite(o.atol) ||
      (!(o.rtol > 0) && !(o.atol > 0)) || o.maxit < 1 || o.history_len < 0 || (o.history_len > 0 && !o.history) ||
      o.precond)
    return spx__amg_solve_end(r, SPX_INVALID_ARGUMENT, "spx_amg_solve: rtol and atol must be finite, >= 0 and not both "
                              "0, maxit >= 1, history given for history_len > 0, and precond NULL (AMG is the method)");
  r->analysis_ms = spx_plan_select_ms(m->lv[0].pA);
  r->build_ms = spx_plan_build_ms(m->lv[0].pA);
  if (m->cuda && o.host_vectors) { /* the caller's host arrays through device copies */
    const size_t bytes = (size_t)n * sizeof(double);
    if ((st = spx_device_alloc(m->ctx, bytes + 8, &ub)) || (st = spx_device_alloc(m->ctx, bytes + 8, &ux)) ||
        (st = spx_device_upload(m->ctx, ub, b, bytes)) || (st = spx_device_upload(m->ctx, ux, x, bytes)))
      goto done;
    db = SPX__AMG_VP(ub);
    dx = SPX__AMG_VP(ux);
  }
  r->setup_ms = 1e3 * (spx__now() - t0);
  st = spx__amg_iterate(m, db, dx, &o, r);
  if (ux && (st == SPX_OK || st == SPX_NOT_CONVERGED || st == SPX_BREAKDOWN)) {
    double t1 = spx__now();
    spx_status s2 = spx_device_download(m->ctx, x, ux, (size_t)n * sizeof(double));
    r->check_ms = 1e3 * (spx__now() - t1);
    if (s2) st = s2;
  }
done:
  if (st && st != SPX_NOT_CONVERGED && st != SPX_BREAKDOWN) {
    r->status = st;
    snprintf(r->message, sizeof r->message, "%.250s", spx_last_error());
  }
  r->rel_resid = r->bnorm > 0 ? r->resid / r->bnorm : r->resid;
  r->true_rel_resid = r->bnorm > 0 ? r->true_resid / r->bnorm : r->true_resid;
  r->per_iter_us = r->iterations > 0 ? 1e3 * r->solve_ms / (double)r->iterations : 0;
  if (m && m->cuda) {
    spx_device_free(m->ctx, ub);
    spx_device_free(m->ctx, ux);
  }
  return st;
}

/* ---- The report -------------------------------------------------------------------------------- */
/* The aggregation rule of each level that coarsens, as runs of levels ("MIS(2) on levels 0-1,
 * greedy on level 2"). */
static void spx__amg_print_rules(const spx_amg_report *r, FILE *f) {
  int l = 0, lo;
  if (r->levels < 2) return;
  if (r->coarsening == SPX_AMG_RS) {
    fprintf(f, "  coarsening      classical (rs): PMIS C/F split and %s interpolation on level%s 0%s",
            r->rs_interp == SPX_AMG_RS_EXTENDED_I ? "extended+i" : "direct", r->levels > 2 ? "s" : "",
            r->levels > 2 ? "-" : "");
    if (r->levels > 2) fprintf(f, "%d", r->levels - 2);
    fprintf(f, " (the levels' P columns are their C points)\n");
    return;
  }
  fprintf(f, "  aggregates      ");
  while (l + 1 < r->levels) {
    const int rule = r->level[l].mis2;
    for (lo = l; l + 1 < r->levels && r->level[l].mis2 == rule; l++) {}
    fprintf(f, "%s%s on level%s %d", lo ? ", " : "", rule ? "MIS(2)" : "greedy", l - 1 > lo ? "s" : "", lo);
    if (l - 1 > lo) fprintf(f, "-%d", l - 1);
  }
  fprintf(f, " (option %s)\n", spx_amg_aggregation_name(r->aggregation));
}

/* Level l's flag of step k (0 strength and aggregation, 1 rho_F, P and R, 2 RAP, 3 the smoother's
 * rho) set. */
static int spx__amg_step_gpu(const spx_amg_level_info *li, int k) {
  return k == 0 ? li->agg_gpu : k == 1 ? li->p_gpu : k == 2 ? li->rap_gpu : li->rho_gpu;
}

/* The levels whose step k ran on the GPU, as "levels 0-2" or "level 0" (a GPU side is a prefix of
 * the levels that coarsen: the sizes fall and a failure hands the rest to the host), or "". */
static void spx__amg_level_span(const spx_amg_report *r, int k, char *buf, size_t len) {
  int l, lo = -1, hi = -1;
  for (l = 0; l < r->levels; l++)
    if (spx__amg_step_gpu(&r->level[l], k)) {
      if (lo < 0) lo = l;
      hi = l;
    }
  if (lo < 0) buf[0] = 0;
  else if (lo == hi) snprintf(buf, len, "level %d", lo);
  else snprintf(buf, len, "levels %d-%d", lo, hi);
}

/* Which setup steps ran on the GPU, on which levels and their share of the phases' milliseconds,
 * and why the host took levels the GPU was asked for. */
static void spx__amg_print_where(const spx_amg_report *r, FILE *f) {
  char sp[4][32];
  int k;
  for (k = 0; k < 4; k++) spx__amg_level_span(r, k, sp[k], sizeof sp[k]);
  if (sp[0][0] || sp[1][0] || sp[2][0] || sp[3][0]) {
    fprintf(f, "  setup on the GPU ");
    if (sp[0][0])
      fprintf(f, " strength and aggregates on %s (%.3f + %.3f ms%s),", sp[0], r->strength_gpu_ms, r->aggregate_gpu_ms,
              r->aggregation == SPX_AMG_AGG_GREEDY ? "; the greedy rule's pass on the host" : "");
    if (sp[1][0]) fprintf(f, " rho_F, P and R on %s (%.3f ms),", sp[1], r->prolong_gpu_ms);
    if (sp[2][0]) fprintf(f, " RAP on %s (%.3f ms, cuSPARSE SpGEMM),", sp[2], r->rap_gpu_ms);
    if (sp[3][0]) fprintf(f, " the smoothers' rho on %s,", sp[3]);
    fprintf(f, " the rest on the host\n");
  }
  if (r->gpu_note[0]) fprintf(f, "  setup on the host %s\n", r->gpu_note);
}

spx_status spx_amg_report_print(const spx_amg_report *r, FILE *f, int json) {
  int l;
  if (!r || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_amg_report_print: NULL argument");
  if (json) {
    const char *c;
    fprintf(f, "{\"levels\": %d, \"operator_complexity\": %.6g, \"grid_complexity\": %.6g, \"coarse_direct\": %d, "
               "\"setup_ms\": %.6g, \"strength_ms\": %.6g, \"aggregate_ms\": %.6g, \"prolong_ms\": %.6g, \"rap_ms\": %.6g, "
               "\"smoother_ms\": %.6g, \"coarse_ms\": %.6g, \"plan_ms\": %.6g, \"device_ms\": %.6g, \"cycles\": %lld, "
               "\"coarse_zero_pivots\": %lld, \"cycle\": \"%s\", \"updates\": %lld, \"input_ms\": %.6g, "
               "\"aggregation\": \"%s\", \"strength_gpu_ms\": %.6g, \"aggregate_gpu_ms\": %.6g, \"prolong_gpu_ms\": %.6g, "
               "\"rap_gpu_ms\": %.6g, \"coarsening\": \"%s\", \"rs_interp\": \"%s\", \"gpu_note\": \"",
            r->levels, r->operator_complexity, r->grid_complexity, r->coarse_direct, r->setup_ms, r->strength_ms,
            r->aggregate_ms, r->prolong_ms, r->rap_ms, r->smoother_ms, r->coarse_ms, r->plan_ms, r->device_ms,
            (long long)r->cycles, (long long)r->coarse_zero_pivots, spx_amg_cycle_type_name(r->cycle),
            (long long)r->updates, r->input_ms, spx_amg_aggregation_name(r->aggregation),
            r->strength_gpu_ms, r->aggregate_gpu_ms, r->prolong_gpu_ms, r->rap_gpu_ms,
            spx_amg_coarsening_name(r->coarsening), spx_amg_rs_interp_name(r->rs_interp));
    for (c = r->gpu_note; *c; c++) {
      if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
      else if ((unsigned char)*c >= 0x20) fputc(*c, f);
    }
    fprintf(f, "\", \"stop\": \"");
    for (c = r->stop; *c; c++) {
      if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
      else if ((unsigned char)*c >= 0x20) fputc(*c, f);
    }
    fprintf(f, "\", \"level\": [");
    for (l = 0; l < r->levels; l++) {
      const spx_amg_level_info *li = &r->level[l];
      fprintf(f, "%s{\"rows\": %lld, \"nnz\": %lld, \"p_cols\": %lld, \"p_nnz\": %lld, \"weak\": %lld, \"smoother\": \"%s\", "
                 "\"pre_sweeps\": %d, \"post_sweeps\": %d, \"damping\": %.6g, \"colors\": %d, \"rho\": %.6g, "
                 "\"omega\": %.6g, \"format\": \"%s\", \"p_format\": \"%s\", \"r_format\": \"%s\", \"agg_gpu\": %d, "
                 "\"p_gpu\": %d, \"rap_gpu\": %d, \"rho_gpu\": %d, \"aggregates\": \"%s\"}",
              l ? ", " : "", (long long)li->rows, (long long)li->nnz, (long long)li->p_cols, (long long)li->p_nnz,
              (long long)li->weak, spx_amg_smoother_name(li->smoother), li->pre_sweeps, li->post_sweeps, li->damping,
              li->colors, li->rho, li->omega, li->format, li->p_format, li->r_format, li->agg_gpu, li->p_gpu,
              li->rap_gpu, li->rho_gpu,
              !li->p_cols ? "" : r->coarsening == SPX_AMG_RS ? "pmis" : li->mis2 ? "mis2" : "greedy");
    }
    fprintf(f, "]}");
    return SPX_OK;
  }
  fprintf(f, "amg               %d levels, %s-cycle, operator complexity %.3f, grid complexity %.3f; %s\n", r->levels,
          r->cycle == SPX_AMG_CYCLE_W ? "W" : r->cycle == SPX_AMG_CYCLE_F ? "F" : "V", r->operator_complexity,
          r->grid_complexity, r->stop);
  spx__amg_print_rules(r, f);
  fprintf(f, "  level      rows        nnz  nnz/row  smoother   sweeps  damping colors      rho  P omega  format (A, P, R)\n");
  for (l = 0; l < r->levels; l++) {
    const spx_amg_level_info *li = &r->level[l];
    const int last = l == r->levels - 1;
    char sm[16];
    snprintf(sm, sizeof sm, "%s", last && r->coarse_direct ? "dense LU" : spx_amg_smoother_name(li->smoother));
    fprintf(f, "  %5d %9lld %10lld %8.2f  %-10s %2d/%-2d %8.3f %6d %8.4f %8.4f  %s%s%s%s%s\n", l, (long long)li->rows,
            (long long)li->nnz, (double)li->nnz / (double)SPX__MAX(1, li->rows), sm, li->pre_sweeps, li->post_sweeps,
            li->damping, li->colors, li->rho, li->omega, li->format, li->p_format[0] ? ", " : "", li->p_format,
            li->r_format[0] ? ", " : "", li->r_format);
  }
  if (r->coarse_zero_pivots)
    fprintf(f, "  the coarsest matrix is singular to rounding: %lld zero pivots, those unknowns set to 0 (a consistent "
               "singular system still converges)\n", (long long)r->coarse_zero_pivots);
  if (r->updates)
    fprintf(f, "  reused          the last of %lld updates (same pattern): %s; the times below are that update's\n",
            (long long)r->updates, r->coarsening == SPX_AMG_RS ? "C/F splits, P's and R's patterns and colorings kept, "
            "P's and R's values made again" : "aggregates, P, R, colorings and their plans kept");
  fprintf(f, "  setup %.3f ms: input %.3f, strength %.3f, aggregation %.3f, prolongation %.3f, RAP %.3f, smoothers %.3f, "
             "coarse LU %.3f, plans %.3f, device %.3f\n",
          r->setup_ms, r->input_ms, r->strength_ms, r->aggregate_ms, r->prolong_ms, r->rap_ms, r->smoother_ms, r->coarse_ms,
          r->plan_ms, r->device_ms);
  spx__amg_print_where(r, f);
  return SPX_OK;
}
