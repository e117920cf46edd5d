/* SPDX-License-Identifier: BSD-3-Clause */
/* The pressure Poisson equation (papers/002 (2-25), (2-26)) as a CSR matrix, and its solve through
 * spx: a plan per step (the matrix changes every step), Jacobi-preconditioned CG (the thesis's
 * scaled CG), the format chosen one of three ways (mps.h: MPS_SELECT_*). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "mps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double mps_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Pressure carriers: fluid and wall particles (dummies and ghosts have none). */
static int carries(const mps_particles *s, int64_t j) { return s->type[j] == MPS_FLUID || s->type[j] == MPS_WALL; }

/* The squared distance from particle i to j. */
static inline double dist2(const mps_particles *s, int64_t i, int64_t j) {
  double d[3];
  return mps_offset(s, i, j, d);
}

/* div u* at particle i by the MPS divergence model, d/n0 sum (u_j - u_i).(r_j - r_i)/r^2 w(r), over
 * the gradient's neighbours (fluid and wall particles; walls stand still); d = p->dim. */
static double divergence(const mps_view *v, int64_t i) {
  const mps_particles *s = v->s;
  const mps_params *p = v->p;
  double d = 0, re2 = p->re_grad * p->re_grad;
  MPS_NEIGHBOURS(v->g, i, j) {
    double dx = s->x[j] - s->x[i], dy = s->y[j] - s->y[i], r2 = dist2(s, i, j), q;
    if (j == i || !carries(s, j) || r2 >= re2 || r2 <= 0) continue;
    q = (s->u[j] - s->u[i]) * dx + (s->v[j] - s->v[i]) * dy;
    if (s->z) q += (s->w[j] - s->w[i]) * (s->z[j] - s->z[i]);
    d += q / r2 * mps_weight(sqrt(r2), p->re_grad, p->l0);
  }
  return (double)p->dim / p->n0_grad * d;
}

/* Entries of inner particle i's row: itself and its inner neighbours within re_lap. */
static int64_t k_count(const mps_view *v, int64_t i) {
  const mps_particles *s = v->s;
  double re2 = v->p->re_lap * v->p->re_lap;
  int64_t k = 1;
  MPS_NEIGHBOURS(v->g, i, j) {
    if (j != i && s->row[j] >= 0 && dist2(s, i, j) < re2) k++;
  }
  return k;
}

/* Row of inner particle i. Columns come in particle order (cells in increasing number, then
 * particles), which is increasing row order: sorted, as CSR wants. A neighbour on the free surface
 * (p = 0, Dirichlet) adds to the diagonal only. */
static void k_row(const mps_view *v, mps_ppe *e, int64_t i) {
  const mps_particles *s = v->s;
  const mps_params *p = v->p;
  double re2 = p->re_lap * p->re_lap, a = 2.0 * p->dim / (p->lambda * p->n0_lap * p->rho);
  double diag = p->compressibility / (p->dt * p->dt);
  int64_t k = e->row_ptr[s->row[i]], kd = k;
  MPS_NEIGHBOURS(v->g, i, j) {
    double r2 = dist2(s, i, j), c;
    if (j == i) {
      kd = k;
      e->col[k++] = s->row[i];
      continue;
    }
    if (!carries(s, j) || r2 >= re2) continue;
    c = a * mps_weight(sqrt(r2), p->re_lap, p->l0);
    diag += c;
    if (s->row[j] >= 0) {
      e->col[k] = s->row[j];
      e->val[k++] = -c;
    }
  }
  e->val[kd] = diag;
  e->b[s->row[i]] = p->relax / (p->dt * p->dt) * (s->nd[i] - p->n0_n) / p->n0_n;
  if (p->mixed) e->b[s->row[i]] -= divergence(v, i) / p->dt;
  e->x[s->row[i]] = s->p[i];
}

static int grow(void **ptr, int64_t *cap, int64_t need, size_t size) {
  void *q;
  if (need <= *cap) return 0;
  need += need / 4 + 16;
  if (!(q = realloc(*ptr, (size_t)need * size))) return -1;
  *ptr = q;
  *cap = need;
  return 0;
}

static int reserve_rows(mps_ppe *e, int64_t nrows) {
  int64_t cap = e->cap_rows;
  if (grow((void **)&e->row_ptr, &cap, nrows + 1, sizeof *e->row_ptr)) return -1;
  cap = e->cap_rows;
  if (grow((void **)&e->b, &cap, nrows + 1, sizeof *e->b)) return -1;
  cap = e->cap_rows;
  if (grow((void **)&e->x, &cap, nrows + 1, sizeof *e->x)) return -1;
  e->cap_rows = cap;
  return 0;
}

static int reserve_nnz(mps_ppe *e, int64_t nnz) {
  int64_t cap = e->cap_nnz;
  if (grow((void **)&e->col, &cap, nnz, sizeof *e->col)) return -1;
  cap = e->cap_nnz;
  if (grow((void **)&e->val, &cap, nnz, sizeof *e->val)) return -1;
  e->cap_nnz = cap;
  return 0;
}

int mps_ppe_reserve(mps_ppe *e, int64_t nrows, int64_t nnz) { return reserve_rows(e, nrows) || reserve_nnz(e, nnz) ? -1 : 0; }

void mps_ppe_view(mps_ppe *e, int64_t nrows, int64_t nnz) {
  e->a.nrows = e->a.ncols = nrows;
  e->a.nnz = nnz;
  e->a.dtype = SPX_DOUBLE;
  e->a.row_ptr = e->row_ptr;
  e->a.col_idx = e->col;
  e->a.val.d = e->val;
}

int mps_ppe_build(mps_ppe *e, const mps_view *v, int64_t nrows) {
  const mps_particles *s = v->s;
  int64_t i, nnz, longest = 0;
  if (reserve_rows(e, nrows)) return -1;
  e->row_ptr[0] = 0;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++)
    if (s->row[i] >= 0) e->row_ptr[s->row[i] + 1] = k_count(v, i);
  for (i = 0; i < nrows; i++) { /* a scan on the GPU (which keeps the longest row the same way) */
    if (e->row_ptr[i + 1] > longest) longest = e->row_ptr[i + 1];
    e->row_ptr[i + 1] += e->row_ptr[i];
  }
  e->row_max = longest;
  nnz = e->row_ptr[nrows];
  if (reserve_nnz(e, nnz)) return -1;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++)
    if (s->row[i] >= 0) k_row(v, e, i);
  mps_ppe_view(e, nrows, nnz);
  return 0;
}

void mps_ppe_free(mps_ppe *e) {
  free(e->row_ptr);
  free(e->col);
  free(e->val);
  free(e->b);
  free(e->x);
  memset(e, 0, sizeof *e);
}

/* ---- the solve and the format choice -------------------------------------------------------- */
/* The lagged choice (papers/002 section 4.2, Figure 4-5): step k's matrix chooses step k+1's format
 * by formula (5-1), spx's mps rule (spx_plan_rule_choice) on B = longest row / mean row and
 * R = nnz / (rows x columns), which the build gives for nothing (its longest row): the choice costs
 * microseconds, on the step's own thread, where the thesis ran it on a host thread beside the
 * solve. Where the choice cannot be planned (a format over the device's memory, cuSPARSE missing)
 * the step falls back as spx's rule does: jds, then csr (make_plan). */
static void plan_name(const spx_plan *p, char *out, size_t len) {
  if (spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE) snprintf(out, len, "cusparse");
  else snprintf(out, len, "%s", spx_format_name(spx_plan_format(p)));
}

/* spx's mps rule, formula (5-1), on B and R (spx_plan_rule_choice); cuSPARSE's choice is spx's csr
 * on the host backend, which has no cuSPARSE. */
static void choose_5_1(const mps_solver *m, int64_t nrows, int64_t ncols, int64_t nnz, int64_t row_max, char *out,
                       size_t len) {
  double mean = nrows ? (double)nnz / (double)nrows : 0;
  double B = nnz ? (double)row_max / mean : 0;
  double R = nrows && ncols ? (double)nnz / ((double)nrows * (double)ncols) : 0;
  const char *f = spx_plan_rule_choice(SPX_PLAN_MPS, B, R);
  if (!strcmp(f, "cusparse") && spx_context_backend(m->ctx) != SPX_BACKEND_CUDA) f = "csr";
  snprintf(out, len, "%s", f);
}

static const char *const known[4] = {"csr", "ell", "jds", "cusparse"};

int mps_solver_init(mps_solver *m, spx_backend backend, const char *select) {
  spx_context_options co;
  int i;
  memset(m, 0, sizeof *m);
  if (!strcmp(select, "lagged")) m->mode = MPS_SELECT_LAGGED;
  else if (!strcmp(select, "auto")) m->mode = MPS_SELECT_AUTO;
  else {
    for (i = 0; i < 4 && strcmp(select, known[i]); i++) {}
    if (i == 4) {
      fprintf(stderr, "mps: --select %s: expected csr, ell, jds, cusparse, lagged or auto\n", select);
      return 2;
    }
    m->mode = MPS_SELECT_FIXED;
    snprintf(m->fixed, sizeof m->fixed, "%s", select);
  }
  memset(&co, 0, sizeof co);
  co.backend = backend;
  if (spx_context_create(&co, &m->ctx)) {
    fprintf(stderr, "mps: %s\n", spx_last_error());
    return 1;
  }
  if (m->mode == MPS_SELECT_FIXED && !strcmp(m->fixed, "cusparse") && spx_context_backend(m->ctx) != SPX_BACKEND_CUDA) {
    fprintf(stderr, "mps: --select cusparse needs the CUDA backend; this run has the host backend\n");
    return 2;
  }
  m->last_iters = 50;
  return 0;
}

void mps_solver_free(mps_solver *m) {
  spx_context_destroy(m->ctx);
  memset(m, 0, sizeof *m);
}

/* Options of step k's plan: the forced format (fixed, lagged) or spx's choice. A forced format
 * needs no cost model: no_calibrate keeps spx from measuring the device (a few seconds at the
 * first plan of a process where the tuner's cache holds no calibration, docs/tuner.md) for a
 * model nothing here reads; auto reads it. */
static void step_options(const mps_solver *m, spx_plan_options *o) {
  spx_plan_options_default(o);
  o->expected_calls = m->last_iters > 1 ? m->last_iters : 1;
  o->eager = 1;
  o->no_calibrate = m->mode != MPS_SELECT_AUTO;
  if (m->mode == MPS_SELECT_FIXED) o->force = m->fixed;
  if (m->mode == MPS_SELECT_LAGGED) o->force = m->current;
}

/* The step's plan. A lagged choice that cannot be planned falls back as spx's rule does
 * (plan_strategy_impl.h spx__plan_heuristic): cuSPARSE to spx's csr, a format that does not fit to
 * jds, then csr. */
/* The step's matrix: a host CSR, or (a == NULL) the GPU path's device CSR. */
static spx_status create(mps_solver *m, const spx_csr *a, const spx_dcsr *da, const spx_plan_options *o, spx_plan **plan) {
  return a ? spx_plan_create(m->ctx, a, o, plan) : spx_plan_create_device(m->ctx, da, o, plan);
}

static spx_status make_plan(mps_solver *m, const spx_csr *a, const spx_dcsr *da, spx_plan_options *o, spx_plan **plan) {
  static const char *const after_cusparse[2] = {"csr", "jds"}, *const after_other[2] = {"jds", "csr"};
  const char *const *fallback = strcmp(o->force ? o->force : "", "cusparse") ? after_other : after_cusparse;
  spx_status st = create(m, a, da, o, plan);
  int k;
  for (k = 0; st && m->mode == MPS_SELECT_LAGGED && k < 2; k++) {
    if (!strcmp(o->force, fallback[k])) continue;
    spx_clear_error();
    o->force = fallback[k];
    if (!(st = create(m, a, da, o, plan))) m->fallbacks++;
  }
  return st;
}

static void count_use(mps_solver *m, const char *name) {
  int i;
  for (i = 0; i < 4 && strcmp(name, known[i]); i++) {}
  if (i < 4) m->uses[i]++;
  else m->uses_other++;
  if (m->steps > 0 && strcmp(name, m->last)) m->switches++;
  snprintf(m->last, sizeof m->last, "%s", name);
  m->steps++;
}

static int fail(const char *what) {
  fprintf(stderr, "mps: %s: %s\n", what, spx_last_error());
  return 1;
}

/* One step's plan and solve on a (host) or da (device), b and x on the plan's side (host_vectors). */
static int solve_step(mps_solver *m, const spx_csr *a, const spx_dcsr *da, int64_t row_max, const void *b, void *x,
                      int host_vectors) {
  spx_plan_options o;
  spx_solve_options so;
  spx_solve_report rep;
  spx_plan *plan = NULL;
  spx_status st;
  char used[16];
  double t0 = mps_now(), t1;
  int64_t nrows = a ? a->nrows : da->nrows, ncols = a ? a->ncols : da->ncols, nnz = a ? a->nnz : da->nnz;
  if (nrows == 0) return 0;
  if (m->mode == MPS_SELECT_LAGGED) { /* step k+1's format from step k's matrix */
    choose_5_1(m, nrows, ncols, nnz, row_max, m->next, sizeof m->next);
    if (!m->current[0]) snprintf(m->current, sizeof m->current, "%s", m->next); /* step 0: its own */
    m->t_choice += mps_now() - t0;
  }
  step_options(m, &o);
  if (make_plan(m, a, da, &o, &plan)) return fail("plan");
  plan_name(plan, used, sizeof used);
  m->last_B = spx_plan_analysis(plan)->B;
  m->last_R = spx_plan_analysis(plan)->R;
  t1 = mps_now();
  m->t_select += t1 - t0;
  spx_solve_options_default(&so);
  so.maxit = 20000;
  so.host_vectors = host_vectors;
  so.rtol = m->rtol;
  so.no_graph = m->no_graph;
  st = spx_solve_pcg_jacobi(plan, b, x, &so, &rep);
  m->t_solve += mps_now() - t1;
  spx_plan_destroy(plan);
  if (m->mode == MPS_SELECT_LAGGED) snprintf(m->current, sizeof m->current, "%s", m->next);
  if (st && st != SPX_NOT_CONVERGED) return fail("pressure solve");
  if (st) m->unconverged++;
  m->iterations += rep.iterations;
  m->last_iters = rep.iterations > 1 ? rep.iterations : 1;
  m->last_resid = rep.true_rel_resid;
  count_use(m, used);
  return 0;
}

int mps_solver_step(mps_solver *m, mps_ppe *e, const void *b, void *x) {
  /* device vectors (the GPU particle path) solve on the device, on a plan from the host CSR */
  return solve_step(m, &e->a, NULL, e->row_max, b ? b : e->b, b ? x : e->x, b == NULL);
}

int mps_solver_step_device(mps_solver *m, const spx_dcsr *a, int64_t row_max, void *b, void *x) {
  return solve_step(m, NULL, a, row_max, b, x, 0);
}
