/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/amg.h on the host backend: AMG-PCG on 3-D Poisson (far fewer iterations than CG, the
 * same count at 16^3 and 32^3), every smoother's V-cycle convergence factor (two-grid and
 * multilevel), the aggregates and P (every row in one aggregate, orthonormal tentative columns, the
 * smoothed P against its formula), R A P against a dense product, the colorings (strict: no coupled
 * rows share a color; relaxed: only weak couplings do), AMG-PCG and AMG-BiCGSTAB on shared SPD
 * matrices, the standalone iteration, the report, bad input and options (each failing with its
 * status and a sentence, nothing leaked: the ASan build checks), determinism; setup reuse
 * (spx_amg_update: the same hierarchy as a fresh setup where P is unchanged, Galerkin operators
 * P^T A_new P, refusals, recovery after a failure part way, its time against a full setup); the
 * W- and F-cycles; the setup's host twins (strength, both aggregation rules, P row by row, rho
 * through the mask) against straightforward references and across thread counts; the amg kernels
 * compile (NVRTC, no GPU); and a GPU part (test_gpu_*, skipped without a GPU) that runs the same
 * checks on the CUDA backend against the host's counts, the GPU setup's steps against their host
 * twins (aggregates and P bit for bit), and twice for bitwise determinism. */
#define _POSIX_C_SOURCE 200809L
#include "spx_test.h"
#include <spx/internal/amg_levels.h> /* the setup's host twins */
#if defined(_OPENMP)
#include <omp.h>
#endif

/* ---- Helpers ------------------------------------------------------------------------------------ */
static spx_plan_options host_plan_options(void) {
  spx_plan_options o;
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST;
  o.no_calibrate = 1;
  o.eager = 1;
  return o;
}

/* A hierarchy of a on ctx (NULL: the host backend) with o (NULL: defaults); fails the test
 * otherwise. */
static spx_amg *amg_make(spx_context *ctx, const spx_csr *a, const spx_amg_options *o) {
  static spx_plan_options po;
  spx_amg_options oo;
  spx_amg *m = NULL;
  if (o) oo = *o;
  else spx_amg_options_default(&oo);
  if (!ctx && !oo.plan) {
    po = host_plan_options();
    oo.plan = &po;
  }
  if (spx_amg_create(ctx, a, &oo, &m) != SPX_OK) fail_msg("spx_amg_create: %s", spx_last_error());
  assert_non_null(m);
  return m;
}

/* 3-D Poisson n^3 whose z couplings are eps times the x and y ones (the paper's anisotropic
 * diffusion). */
static spx_csr *aniso(int64_t n, double eps) {
  spx_csr *a;
  assert_int_equal(spx_gen_poisson3d_aniso(n, n, n, 1, 1, eps, SPX_DOUBLE, &a), SPX_OK);
  return a;
}

/* ||b - A x|| / ||b|| by the reference SpMV. */
static double rel_resid(const spx_csr *a, const double *b, const double *x) {
  int64_t n = a->nrows, i;
  double *q = malloc((size_t)n * 8), num = 0, den = 0;
  assert_non_null(q);
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, q), SPX_OK);
  for (i = 0; i < n; i++) {
    double d = b[i] - q[i];
    if (d != d) { num = 1e300; break; }
    num += d * d;
    den += b[i] * b[i];
  }
  free(q);
  return sqrt(num / den);
}

static double *rand_vec(int64_t n) {
  double *v = malloc((size_t)n * 8 + 8);
  assert_non_null(v);
  spx_test_fill(v, n);
  return v;
}

/* A Krylov solve of a x = b (x0 = 0) preconditioned by m (m NULL: none), to rtol; checks the
 * residual independently and returns the iterations. */
static int64_t pcg(spx_amg *m, const spx_csr *a, spx_plan *p, const double *b, double rtol, int bicgstab,
                   const char *what) {
  spx_solve_options o;
  spx_solve_report r;
  double *x = calloc((size_t)a->nrows + 1, 8);
  spx_status s;
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = 20000;
  if (m) {
    o.precond = spx_amg_precond;
    o.precond_data = m;
  }
  s = bicgstab ? spx_solve_bicgstab(p, b, x, &o, &r) : spx_solve_cg(p, b, x, &o, &r);
  if (s != SPX_OK) fail_msg("%s: %s (%s)", what, spx_last_error(), r.message);
  if (!(rel_resid(a, b, x) <= 3 * rtol)) fail_msg("%s: recomputed residual %.3g > %.3g", what, rel_resid(a, b, x), rtol);
  if (m) assert_true(r.precond_calls >= r.iterations);
  free(x);
  return r.iterations;
}

/* The V-cycle's convergence factor: standalone AMG from x0 = 0 on a random b, the mean rate
 * (||r_k|| / ||r_0||)^(1/k) over the cycles to rtol 1e-8 (at most 200). */
static double cycle_factor(spx_amg *m, const spx_csr *a, const double *b, int64_t *cycles) {
  spx_solve_options o;
  spx_solve_report r;
  double *x = calloc((size_t)a->nrows + 1, 8), hist[256];
  spx_status s;
  spx_solve_options_default(&o);
  o.maxit = 200;
  o.history = hist;
  o.history_len = 256;
  s = spx_amg_solve(m, b, x, &o, &r);
  if (s != SPX_OK && s != SPX_NOT_CONVERGED) fail_msg("spx_amg_solve: %s", r.message);
  assert_string_equal(r.method, "amg");
  assert_true(r.iterations > 0);
  assert_true(r.history_count == r.iterations + 1);
  /* the report's residual is ||b - A x|| of the x returned */
  assert_true(fabs(rel_resid(a, b, x) - r.rel_resid) <= 1e-6 * r.rel_resid + 1e-14);
  free(x);
  *cycles = r.iterations;
  return pow(hist[r.iterations] / hist[0], 1.0 / (double)r.iterations);
}

/* ---- AMG-PCG on Poisson ------------------------------------------------------------------------- */
/* AMG-PCG on 3-D Poisson: under 20 iterations to 1e-8 at 32^3, far fewer than CG, about the same
 * count at 16^3 and 32^3 (the hierarchy keeps the condition number bounded as h shrinks). */
static void test_poisson_pcg(void **state) {
  static const int64_t sizes[] = {16, 32};
  int64_t it_amg[2], it_cg[2];
  int k;
  (void)state;
  for (k = 0; k < 2; k++) {
    spx_csr *a;
    spx_amg *m;
    double *b;
    const spx_amg_report *r;
    assert_int_equal(spx_gen_poisson3d(sizes[k], sizes[k], sizes[k], 7, SPX_DOUBLE, &a), SPX_OK);
    m = amg_make(NULL, a, NULL);
    r = spx_amg_report_of(m);
    b = rand_vec(a->nrows);
    it_amg[k] = pcg(m, a, spx_amg_plan(m), b, 1e-8, 0, "amg-pcg");
    it_cg[k] = pcg(NULL, a, spx_amg_plan(m), b, 1e-8, 0, "cg");
    print_message("poisson %lld^3: %d levels, operator complexity %.3f, grid %.3f; AMG-PCG %lld iterations, CG %lld\n",
                  (long long)sizes[k], r->levels, r->operator_complexity, r->grid_complexity, (long long)it_amg[k],
                  (long long)it_cg[k]);
    assert_true(r->levels >= 2);
    assert_true(r->operator_complexity > 1 && r->operator_complexity < 2.5);
    assert_true(r->cycles == it_amg[k]); /* one for r_0 and one per iteration that did not stop */
    assert_true(it_amg[k] < 20);
    assert_true(4 * it_amg[k] < it_cg[k]);
    free(b);
    spx_amg_destroy(m);
    spx_csr_destroy(a);
  }
  if (it_amg[1] > it_amg[0] + 3) fail_msg("h-dependence: %lld iterations at 16^3, %lld at 32^3", (long long)it_amg[0],
                                          (long long)it_amg[1]);
}

/* AMG-preconditioned BiCGSTAB on Poisson and on the anisotropic diffusion. */
static void test_bicgstab(void **state) {
  spx_csr *a, *an;
  spx_amg *m, *ma;
  spx_amg_options o;
  double *b;
  int64_t it, ita;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(24, 24, 24, 7, SPX_DOUBLE, &a), SPX_OK);
  an = aniso(24, 1e-4);
  b = rand_vec(a->nrows);
  m = amg_make(NULL, a, NULL);
  spx_amg_options_default(&o);
  o.smoother = SPX_AMG_GS;
  ma = amg_make(NULL, an, &o);
  it = pcg(m, a, spx_amg_plan(m), b, 1e-8, 1, "amg-bicgstab poisson");
  ita = pcg(ma, an, spx_amg_plan(ma), b, 1e-8, 1, "amg-bicgstab anisotropic");
  print_message("AMG-BiCGSTAB: poisson 24^3 %lld iterations, anisotropic (gs) %lld\n", (long long)it, (long long)ita);
  assert_true(it < 12 && ita < 30);
  free(b);
  spx_amg_destroy(m);
  spx_amg_destroy(ma);
  spx_csr_destroy(a);
  spx_csr_destroy(an);
}

/* ---- Smoothers ---------------------------------------------------------------------------------- */
typedef struct smoother_case {
  const char *name;
  spx_amg_smoother sm;
  int relaxed, wp;
  double two_grid, multi; /* bounds on the convergence factors */
} smoother_case;

static const smoother_case smoother_cases[] = {
    {"jacobi", SPX_AMG_JACOBI, 0, 0, 0.7, 0.75},
    {"l1jacobi", SPX_AMG_L1_JACOBI, 0, 0, 0.75, 0.8},
    {"chebyshev", SPX_AMG_CHEBYSHEV, 0, 0, 0.35, 0.4},
    {"gs", SPX_AMG_GS, 0, 0, 0.35, 0.4},
    {"gs relaxed", SPX_AMG_GS, 1, 0, 0.35, 0.4},
    {"gs welsh-powell", SPX_AMG_GS, 0, 1, 0.35, 0.4},
};

/* Every smoother reduces the error of a V-cycle: the convergence factor of two-grid (max_levels 2)
 * and multilevel cycles on Poisson under a bound per smoother, two sweeps under the one-sweep factor
 * (and under 0.2 for the polynomial and Gauss-Seidel smoothers), and AMG-PCG converges with each
 * (a symmetric preconditioner: CG meets no r.z <= 0). */
static void test_smoothers(void **state) {
  spx_csr *a;
  double *b;
  size_t k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  b = rand_vec(a->nrows);
  for (k = 0; k < sizeof smoother_cases / sizeof *smoother_cases; k++) {
    const smoother_case *c = &smoother_cases[k];
    spx_amg_options o;
    spx_amg *m2, *ml, *m22;
    double f2, fl, f22;
    int64_t c2, cl, c22, it;
    spx_amg_options_default(&o);
    o.smoother = c->sm;
    o.relaxed_coloring = c->relaxed;
    o.coloring = c->wp ? SPX_AMG_COLOR_WELSH_POWELL : SPX_AMG_COLOR_GREEDY;
    o.coarse_size = 50;
    ml = amg_make(NULL, a, &o);
    o.max_levels = 2;
    o.dense_max = 8000;
    m2 = amg_make(NULL, a, &o);
    o.pre_sweeps = o.post_sweeps = 2;
    m22 = amg_make(NULL, a, &o);
    assert_int_equal(spx_amg_report_of(m2)->levels, 2);
    assert_true(spx_amg_report_of(ml)->levels >= 3);
    f2 = cycle_factor(m2, a, b, &c2);
    fl = cycle_factor(ml, a, b, &cl);
    f22 = cycle_factor(m22, a, b, &c22);
    it = pcg(ml, a, spx_amg_plan(ml), b, 1e-8, 0, c->name);
    print_message("%-16s factor two-grid %.3f (%lld cycles), two-grid 2+2 sweeps %.3f, %d levels %.3f (%lld cycles); "
                  "AMG-PCG %lld iterations\n", c->name, f2, (long long)c2, f22, spx_amg_report_of(ml)->levels, fl,
                  (long long)cl, (long long)it);
    if (!(f2 < c->two_grid) || !(fl < c->multi) || !(f22 < f2))
      fail_msg("%s: factors %.3f (two-grid), %.3f (multilevel), %.3f (2+2 sweeps) over the bounds %.2f, %.2f, %.3f",
               c->name, f2, fl, f22, c->two_grid, c->multi, f2);
    if (c->sm == SPX_AMG_CHEBYSHEV || c->sm == SPX_AMG_GS) assert_true(f22 < 0.2);
    assert_true(it < 25);
    spx_amg_destroy(m2);
    spx_amg_destroy(ml);
    spx_amg_destroy(m22);
  }
  free(b);
  spx_csr_destroy(a);
}

/* Per-level smoothers (the paper's GS-JC mixed: Gauss-Seidel on the fine level, Jacobi below) and
 * sweeps show in the report and converge. */
static void test_per_level(void **state) {
  spx_csr *a;
  spx_amg_options o;
  spx_amg *m;
  const spx_amg_report *r;
  double *b;
  int64_t it;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  spx_amg_options_default(&o);
  o.smoother = SPX_AMG_JACOBI;
  o.coarse_size = 50;
  o.level[0].smoother = SPX_AMG_GS;
  o.level[0].damping = 1.0;
  o.level[1].pre_sweeps = o.level[1].post_sweeps = 2;
  o.level[1].damping = 0.6;
  m = amg_make(NULL, a, &o);
  r = spx_amg_report_of(m);
  assert_true(r->levels >= 3);
  assert_int_equal(r->level[0].smoother, SPX_AMG_GS);
  assert_true(r->level[0].colors >= 2);
  assert_int_equal(r->level[1].smoother, SPX_AMG_JACOBI);
  assert_int_equal(r->level[1].pre_sweeps, 2);
  assert_true(r->level[1].damping == 0.6);
  assert_true(fabs(r->level[2].damping - 2.0 / 3.0) < 1e-15);
  b = rand_vec(a->nrows);
  it = pcg(m, a, spx_amg_plan(m), b, 1e-8, 0, "gs-jacobi mixed");
  print_message("GS on level 0, Jacobi below: AMG-PCG %lld iterations\n", (long long)it);
  assert_true(it < 20);
  free(b);
  spx_amg_destroy(m);
  spx_csr_destroy(a);
}

/* ---- The hierarchy ------------------------------------------------------------------------------ */
/* Aggregates and P on 2-D Poisson: every row in exactly one aggregate (each aggregate nonempty); the
 * tentative P (prolong_omega 0) has one entry per row, in its aggregate's column, and orthonormal
 * columns; the smoothed P (theta 0: A_F = A) equals (I - omega D^-1 A) T with the report's omega,
 * computed here. */
static void test_prolongation(void **state) {
  spx_csr *a;
  spx_amg_options o;
  spx_amg *mt, *ms;
  spx_amg_level_view vt, vs;
  int64_t n, nagg, i, k, *size;
  double *norm2, omega;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(30, 25, 1, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  spx_amg_options_default(&o);
  o.prolong_omega = 0;
  o.coarse_size = 20;
  mt = amg_make(NULL, a, &o);
  assert_int_equal(spx_amg_level(mt, 0, &vt), SPX_OK);
  assert_non_null(vt.P);
  assert_non_null(vt.aggregate);
  nagg = vt.P->ncols;
  assert_true(nagg > 1 && nagg < n / 3);
  size = calloc((size_t)nagg, sizeof *size);
  norm2 = calloc((size_t)nagg, sizeof *norm2);
  for (i = 0; i < n; i++) {
    assert_true(vt.aggregate[i] >= 0 && vt.aggregate[i] < nagg);
    size[vt.aggregate[i]]++;
  }
  for (i = 0; i < nagg; i++) assert_true(size[i] > 0);
  assert_int_equal(vt.P->nnz, n);
  for (i = 0; i < n; i++) {
    assert_int_equal(vt.P->row_ptr[i + 1] - vt.P->row_ptr[i], 1);
    assert_int_equal(vt.P->col_idx[vt.P->row_ptr[i]], vt.aggregate[i]);
    norm2[vt.aggregate[i]] += vt.P->val.d[vt.P->row_ptr[i]] * vt.P->val.d[vt.P->row_ptr[i]];
  }
  for (i = 0; i < nagg; i++) assert_true(fabs(norm2[i] - 1) < 1e-14); /* one entry a row: columns orthogonal */
  /* the smoothed P against the formula, dense */
  o.prolong_omega = 4.0 / 3.0;
  o.theta = 0;
  ms = amg_make(NULL, a, &o);
  assert_int_equal(spx_amg_level(ms, 0, &vs), SPX_OK);
  omega = spx_amg_report_of(ms)->level[0].omega;
  assert_true(omega > 0.5 && omega < 1.0); /* 4/3 over rho(D^-1 A) in (1.33, 2.67) */
  assert_true(vs.P->ncols == vs.R->nrows && vs.P->nrows == n);
  {
    double *ref = calloc((size_t)(n * vs.P->ncols), 8), *got = calloc((size_t)(n * vs.P->ncols), 8), *t, *diag;
    int64_t m = vs.P->ncols, j;
    t = calloc((size_t)m, 8);
    diag = calloc((size_t)n, 8);
    for (i = 0; i < m; i++) size[i] = 0;
    for (i = 0; i < n; i++) size[vs.aggregate[i]]++;
    for (i = 0; i < n; i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
        if (a->col_idx[k] == i) diag[i] = a->val.d[k];
    for (i = 0; i < n; i++) {
      ref[i * m + vs.aggregate[i]] += 1 / sqrt((double)size[vs.aggregate[i]]);
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
        j = a->col_idx[k];
        ref[i * m + vs.aggregate[j]] -= omega / diag[i] * a->val.d[k] / sqrt((double)size[vs.aggregate[j]]);
      }
      for (k = vs.P->row_ptr[i]; k < vs.P->row_ptr[i + 1]; k++) {
        if (k > vs.P->row_ptr[i]) assert_true(vs.P->col_idx[k] > vs.P->col_idx[k - 1]); /* sorted */
        got[i * m + vs.P->col_idx[k]] = vs.P->val.d[k];
      }
    }
    for (i = 0; i < n * m; i++)
      if (fabs(ref[i] - got[i]) > 1e-13) fail_msg("P[%lld][%lld] = %.17g, formula %.17g", (long long)(i / m), (long long)(i % m), got[i], ref[i]);
    free(ref); free(got); free(t); free(diag);
  }
  free(size);
  free(norm2);
  spx_amg_destroy(mt);
  spx_amg_destroy(ms);
  spx_csr_destroy(a);
}

/* A_c = P^T A P and R = P^T, dense, on every level of a small hierarchy (3-D Poisson and a shared
 * structural matrix). */
static void check_galerkin(spx_amg *m) {
  int l, levels = spx_amg_report_of(m)->levels;
  assert_true(levels >= 2);
  for (l = 0; l + 1 < levels; l++) {
    spx_amg_level_view v, c;
    int64_t n, nc, i, j, k, q;
    double *A, *P, *AP, *Ac, amax = 0;
    assert_int_equal(spx_amg_level(m, l, &v), SPX_OK);
    assert_int_equal(spx_amg_level(m, l + 1, &c), SPX_OK);
    n = v.A->nrows;
    nc = c.A->nrows;
    assert_true(v.P->nrows == n && v.P->ncols == nc && v.R->nrows == nc && v.R->ncols == n);
    assert_int_equal(spx_csr_validate(c.A), SPX_OK);
    A = calloc((size_t)(n * n), 8); P = calloc((size_t)(n * nc), 8); AP = calloc((size_t)(n * nc), 8);
    Ac = calloc((size_t)(nc * nc), 8);
    for (i = 0; i < n; i++) {
      for (k = v.A->row_ptr[i]; k < v.A->row_ptr[i + 1]; k++) A[i * n + v.A->col_idx[k]] = v.A->val.d[k];
      for (k = v.P->row_ptr[i]; k < v.P->row_ptr[i + 1]; k++) P[i * nc + v.P->col_idx[k]] = v.P->val.d[k];
    }
    for (i = 0; i < nc; i++) /* R = P^T exactly */
      for (k = v.R->row_ptr[i]; k < v.R->row_ptr[i + 1]; k++) assert_true(v.R->val.d[k] == P[v.R->col_idx[k] * nc + i]);
    assert_int_equal(v.R->nnz, v.P->nnz);
    for (i = 0; i < n; i++)
      for (k = 0; k < n; k++)
        if (A[i * n + k] != 0)
          for (j = 0; j < nc; j++) AP[i * nc + j] += A[i * n + k] * P[k * nc + j];
    for (i = 0; i < nc; i++)
      for (q = 0; q < n; q++)
        if (P[q * nc + i] != 0)
          for (j = 0; j < nc; j++) Ac[i * nc + j] += P[q * nc + i] * AP[q * nc + j];
    for (i = 0; i < nc * nc; i++) amax = fmax(amax, fabs(Ac[i]));
    for (i = 0; i < nc; i++) {
      double *row = calloc((size_t)nc, 8);
      for (k = c.A->row_ptr[i]; k < c.A->row_ptr[i + 1]; k++) row[c.A->col_idx[k]] = c.A->val.d[k];
      for (j = 0; j < nc; j++)
        if (fabs(row[j] - Ac[i * nc + j]) > 1e-12 * amax)
          fail_msg("level %d: A_c[%lld][%lld] = %.17g, P^T A P %.17g", l + 1, (long long)i, (long long)j, row[j],
                   Ac[i * nc + j]);
      free(row);
    }
    free(A); free(P); free(AP); free(Ac);
  }
}

static void test_galerkin(void **state) {
  spx_csr *a, *s;
  spx_amg_options o;
  spx_amg *m, *ms;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(9, 8, 7, 7, SPX_DOUBLE, &a), SPX_OK);
  spx_amg_options_default(&o);
  o.coarse_size = 10;
  m = amg_make(NULL, a, &o);
  assert_true(spx_amg_report_of(m)->levels >= 3);
  check_galerkin(m);
  s = spx_test_shared("bcsstk08");
  o.coarse_size = 100;
  ms = amg_make(NULL, s, &o);
  check_galerkin(ms);
  spx_amg_destroy(m);
  spx_amg_destroy(ms);
  spx_csr_destroy(a);
  spx_csr_destroy(s);
}

static void same_hierarchy(spx_amg *m1, spx_amg *m2);

/* ---- The setup's steps: the host twins of templates/amg_setup.cu -------------------------------- */
/* Matrix k of the twins' tests (NULL past the last): 3-D Poisson, the anisotropic diffusion (weak z
 * couplings), a shared structural matrix (uneven rows and values), each with a theta. */
static spx_csr *twin_matrix(int k, double *theta) {
  spx_csr *a = NULL;
  *theta = 0.08;
  if (k == 0) assert_int_equal(spx_gen_poisson3d(14, 13, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  else if (k == 1) a = aniso(12, 1e-4);
  else if (k == 2) {
    a = spx_test_shared("bcsstk08");
    *theta = 0.05;
  } else if (k == 3) { /* a coarse level (R A P of a 16^3 Laplacian): few rows, long ones */
    spx_csr *f = NULL, *P = NULL, *R = NULL, *AP = NULL;
    const int64_t n = 16 * 16 * 16;
    uint8_t *mask = malloc((size_t)7 * n);
    int32_t *agg = malloc((size_t)n * 4);
    double *d = calloc((size_t)n, 8), *dF = calloc((size_t)n, 8), rho;
    int64_t weak, nagg;
    assert_int_equal(spx_gen_poisson3d(16, 16, 16, 7, SPX_DOUBLE, &f), SPX_OK);
    assert_int_equal(spx__amg_diag("test", f, 0, d), SPX_OK);
    spx__amg_strength(f, d, *theta, mask, dF, &weak);
    assert_int_equal(spx__amg_aggregate(f, mask, 0, agg, &nagg), SPX_OK);
    assert_int_equal(spx__amg_rho(f, mask, dF, 15, &rho), SPX_OK);
    assert_int_equal(spx__amg_prolong(f, mask, dF, agg, nagg, 4.0 / 3.0 / rho, &P), SPX_OK);
    assert_int_equal(spx_csr_transpose(P, &R), SPX_OK);
    assert_int_equal(spx__amg_spgemm(f, P, &AP), SPX_OK);
    assert_int_equal(spx__amg_spgemm(R, AP, &a), SPX_OK);
    free(mask); free(agg); free(d); free(dF);
    spx_csr_destroy(f); spx_csr_destroy(P); spx_csr_destroy(R); spx_csr_destroy(AP);
    *theta = 0; /* every entry strong: its rows whole */
  }
  return a;
}

/* The strength by its definition off the diagonal, |a_ij| >= theta sqrt(|a_ii a_jj|) (entries
 * within rounding of the threshold skipped), and A_F's diagonal (the weak entries summed onto a_ii
 * in column order, unless that zeroes it or flips its sign): the twin's mask, dF and weak count. */
static void test_strength_twin(void **state) {
  int k;
  (void)state;
  for (k = 0; k < 3; k++) {
    double theta, *d, *dF;
    spx_csr *a = twin_matrix(k, &theta);
    const int64_t n = a->nrows;
    uint8_t *mask = malloc((size_t)a->nnz + 1);
    int64_t i, q, weak = -1, want = 0, strong = 0;
    d = calloc((size_t)n, 8);
    dF = calloc((size_t)n, 8);
    assert_int_equal(spx__amg_diag("test", a, 0, d), SPX_OK);
    spx__amg_strength(a, d, theta, mask, dF, &weak);
    for (i = 0; i < n; i++) {
      double lump = 0;
      for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++) {
        const int32_t j = a->col_idx[q];
        const double v = fabs(a->val.d[q]), cut = theta * sqrt(fabs(d[i] * d[j]));
        if (j == i) {
          assert_int_equal(mask[q], 0);
          continue;
        }
        if (fabs(v - cut) > 1e-12 * cut && mask[q] != (v >= cut && v > 0))
          fail_msg("matrix %d: a[%lld][%d] = %g, threshold %g, mask %d", k, (long long)i, j, a->val.d[q], cut, mask[q]);
        strong += mask[q];
        if (!mask[q]) {
          lump += a->val.d[q];
          want++;
        }
      }
      if (!((d[i] + lump) * d[i] > 0)) lump = 0;
      assert_true(dF[i] == d[i] + lump);
    }
    assert_int_equal(weak, want);
    assert_true(strong > 0 && (k != 1 || weak > 0)); /* the anisotropic matrix has weak entries */
    free(mask); free(d); free(dF);
    spx_csr_destroy(a);
  }
}

/* Every row in exactly one aggregate of 0..nagg-1, each aggregate nonempty and connected through
 * strong entries (a root and its neighbours, rows attached to a member, or a row alone). */
static void check_aggregates(const spx_csr *a, const uint8_t *mask, const int32_t *agg, int64_t nagg, const char *what) {
  const int64_t n = a->nrows;
  int64_t *up = malloc((size_t)n * 8), *root_of = malloc((size_t)nagg * 8), i, q;
  for (i = 0; i < nagg; i++) root_of[i] = -1;
  for (i = 0; i < n; i++) {
    if (agg[i] < 0 || agg[i] >= nagg) fail_msg("%s: row %lld in aggregate %d of %lld", what, (long long)i, agg[i], (long long)nagg);
    up[i] = i;
  }
  for (i = 0; i < n; i++) /* union-find over the strong entries inside an aggregate */
    for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++) {
      int64_t x = i, y = a->col_idx[q];
      if (!mask[q] || agg[x] != agg[y]) continue;
      while (up[x] != x) x = up[x];
      while (up[y] != y) y = up[y];
      if (x != y) up[x < y ? y : x] = x < y ? x : y;
    }
  for (i = 0; i < n; i++) {
    int64_t x = i;
    while (up[x] != x) x = up[x];
    if (root_of[agg[i]] < 0) root_of[agg[i]] = x;
    else if (root_of[agg[i]] != x) fail_msg("%s: aggregate %d is not connected (row %lld)", what, agg[i], (long long)i);
  }
  for (i = 0; i < nagg; i++)
    if (root_of[i] < 0) fail_msg("%s: aggregate %lld is empty", what, (long long)i);
  free(up);
  free(root_of);
}

/* The greedy rule as spx had it before the twins, on an explicit strength graph: pass 1 roots in
 * row order whose strong neighbours are all free, pass 2 the first strong neighbour of pass 1,
 * pass 3 the rows left. */
static int64_t greedy_reference(const spx_csr *a, const uint8_t *mask, int32_t *agg) {
  const int64_t n = a->nrows;
  int64_t i, q, next = 0;
  for (i = 0; i < n; i++) agg[i] = -1;
  for (i = 0; i < n; i++) {
    int has = 0, free_all = 1;
    if (agg[i] != -1) continue;
    for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++)
      if (mask[q]) {
        has = 1;
        free_all &= agg[a->col_idx[q]] == -1;
      }
    if (!has || !free_all) continue;
    agg[i] = (int32_t)next;
    for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++)
      if (mask[q]) agg[a->col_idx[q]] = (int32_t)next;
    next++;
  }
  for (i = 0; i < n; i++)
    if (agg[i] == -1)
      for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++)
        if (mask[q] && agg[a->col_idx[q]] >= 0) {
          agg[i] = -2 - agg[a->col_idx[q]];
          break;
        }
  for (i = 0; i < n; i++) {
    if (agg[i] <= -2) agg[i] = -2 - agg[i];
    else if (agg[i] == -1) agg[i] = (int32_t)next++;
  }
  return next;
}

/* Both aggregation rules: valid, connected aggregates; the greedy rule as before the twins; the
 * MIS(2) rule about as coarse (aggregates of 4 to 30 rows on Poisson), and the same aggregates with
 * one thread as with several. */
static void test_aggregate_twin(void **state) {
  int k;
  (void)state;
  for (k = 0; k < 3; k++) {
    double theta, *d, *dF;
    spx_csr *a = twin_matrix(k, &theta);
    const int64_t n = a->nrows;
    uint8_t *mask = malloc((size_t)a->nnz + 1);
    int32_t *agg = malloc((size_t)n * 4), *ref = malloc((size_t)n * 4);
    int64_t weak, nagg = 0, nref;
    d = calloc((size_t)n, 8);
    dF = calloc((size_t)n, 8);
    assert_int_equal(spx__amg_diag("test", a, 0, d), SPX_OK);
    spx__amg_strength(a, d, theta, mask, dF, &weak);
    assert_int_equal(spx__amg_aggregate(a, mask, 0, agg, &nagg), SPX_OK);
    check_aggregates(a, mask, agg, nagg, "greedy");
    nref = greedy_reference(a, mask, ref);
    assert_int_equal(nagg, nref);
    assert_memory_equal(agg, ref, (size_t)n * 4);
    assert_int_equal(spx__amg_aggregate(a, mask, 1, agg, &nagg), SPX_OK);
    check_aggregates(a, mask, agg, nagg, "mis2");
    print_message("matrix %d (%lld rows): %lld greedy aggregates, %lld MIS(2)\n", k, (long long)n, (long long)nref,
                  (long long)nagg);
    if (k == 0) assert_true(nagg >= n / 30 && nagg <= n / 4);
#if defined(_OPENMP)
    {
      int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      assert_int_equal(spx__amg_aggregate(a, mask, 1, ref, &nref), SPX_OK);
      omp_set_num_threads(threads);
      assert_int_equal(nagg, nref);
      assert_memory_equal(agg, ref, (size_t)n * 4);
    }
#endif
    free(mask); free(agg); free(ref); free(d); free(dF);
    spx_csr_destroy(a);
  }
}

/* P = (I - omega D_F^-1 A_F) T by the twin (rows from A's kept entries) against the dense product:
 * each row's columns the distinct aggregates of its diagonal and strong entries, increasing, and
 * the values to rounding; omega 0 gives T (one entry a row, 1 / sqrt(|aggregate|)). rho of
 * D_F^-1 A_F through the mask is bit for bit that of A_F made explicit. Each value is also the
 * GPU kernel's sum bit for bit (its terms in A's column order, each step rounded alone), on a
 * coarse level too, whose rows hold more kept entries than the twin sorts by insertion. */
static void test_prolong_twin(void **state) {
  int k, rule;
  (void)state;
  for (k = 0; k < 4; k++)
    for (rule = 0; rule < 2; rule++) {
      double theta, *d, *dF, *ref, *size, omega, rho, rho2, amax = 0;
      spx_csr *a = twin_matrix(k, &theta), *P = NULL, *T = NULL, *F = NULL;
      int64_t rowmax = 0;
      const int64_t n = a->nrows;
      uint8_t *mask = malloc((size_t)a->nnz + 1);
      int32_t *agg = malloc((size_t)n * 4);
      int64_t weak, nagg = 0, i, q, c;
      d = calloc((size_t)n, 8);
      dF = calloc((size_t)n, 8);
      assert_int_equal(spx__amg_diag("test", a, 0, d), SPX_OK);
      spx__amg_strength(a, d, theta, mask, dF, &weak);
      assert_int_equal(spx__amg_aggregate(a, mask, rule, agg, &nagg), SPX_OK);
      /* A_F explicit: the kept entries, dF on the diagonal */
      assert_int_equal(spx_csr_create(n, n, a->nnz, SPX_DOUBLE, &F), SPX_OK);
      for (i = 0, c = 0; i < n; i++) {
        for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++)
          if (a->col_idx[q] == i || mask[q]) {
            F->col_idx[c] = a->col_idx[q];
            F->val.d[c++] = a->col_idx[q] == i ? dF[i] : a->val.d[q];
          }
        F->row_ptr[i + 1] = c;
      }
      F->nnz = c;
      assert_int_equal(spx__amg_rho(a, mask, dF, 15, &rho), SPX_OK);
      assert_int_equal(spx__amg_rho(F, NULL, dF, 15, &rho2), SPX_OK);
      assert_true(rho == rho2 && rho > 0);
      omega = 4.0 / 3.0 / rho;
      assert_int_equal(spx__amg_prolong(a, mask, dF, agg, nagg, omega, &P), SPX_OK);
      assert_int_equal(spx__amg_prolong(a, mask, dF, agg, nagg, 0, &T), SPX_OK);
      assert_int_equal(spx_csr_validate(P), SPX_OK);
      size = calloc((size_t)nagg, 8);
      for (i = 0; i < n; i++) size[agg[i]] += 1;
      assert_int_equal(T->nnz, n);
      for (i = 0; i < n; i++) {
        assert_int_equal(T->col_idx[i], agg[i]);
        assert_true(fabs(T->val.d[i] - 1 / sqrt(size[agg[i]])) <= 1e-15);
      }
      ref = calloc((size_t)nagg, 8);
      for (i = 0; i < n; i++) { /* row i of (I - omega D_F^-1 A_F) T, dense */
        int64_t cnt = 0;
        memset(ref, 0, (size_t)nagg * 8);
        for (q = F->row_ptr[i]; q < F->row_ptr[i + 1]; q++) {
          const int64_t j = F->col_idx[q];
          ref[agg[j]] += ((j == i) - omega / dF[i] * F->val.d[q]) / sqrt(size[agg[j]]);
        }
        for (q = F->row_ptr[i]; q < F->row_ptr[i + 1]; q++) {
          int64_t e, seen = 0;
          for (e = F->row_ptr[i]; e < q; e++) seen |= agg[F->col_idx[e]] == agg[F->col_idx[q]];
          cnt += !seen;
        }
        assert_int_equal(P->row_ptr[i + 1] - P->row_ptr[i], cnt);
        for (q = P->row_ptr[i]; q < P->row_ptr[i + 1]; q++) {
          const double want = ref[P->col_idx[q]];
          double v = 0;
          int64_t e, first = 1;
          amax = fmax(amax, fabs(want));
          if (fabs(P->val.d[q] - want) > 1e-14 * fmax(1, fabs(want)))
            fail_msg("matrix %d: P[%lld][%d] = %.17g, dense %.17g", k, (long long)i, P->col_idx[q], P->val.d[q], want);
          for (e = a->row_ptr[i]; e < a->row_ptr[i + 1]; e++) /* the kernel's order */
            if ((a->col_idx[e] == i || mask[e]) && agg[a->col_idx[e]] == P->col_idx[q]) {
              const int diag = a->col_idx[e] == i;
              const double sd = omega / dF[i], fv = (diag ? 1.0 : 0.0) - sd * (diag ? dF[i] : a->val.d[e]);
              const double t = fv * (1.0 / spx__sqrt(size[P->col_idx[q]])); /* the twin's scale */
              v = first ? t : v + t;
              first = 0;
            }
          if (P->val.d[q] != v)
            fail_msg("matrix %d: P[%lld][%d] = %.17g, in the kernel's order %.17g", k, (long long)i, P->col_idx[q],
                     P->val.d[q], v);
        }
        if (k == 3) rowmax = SPX__MAX(rowmax, F->row_ptr[i + 1] - F->row_ptr[i]);
      }
      assert_true(amax > 0.1);
      if (k == 3) assert_true(rowmax > 32); /* the heap sort's rows */
      free(ref); free(size); free(mask); free(agg); free(d); free(dF);
      spx_csr_destroy(P); spx_csr_destroy(T); spx_csr_destroy(F); spx_csr_destroy(a);
    }
}

/* The whole hierarchy (every level's A, P, R and aggregates) and AMG-PCG's x are the same bit for
 * bit with one thread and with several, for both rules (rows in parallel past 16384: 36^3). The
 * MIS(2) rule's hierarchy: AMG-PCG within one iteration of the greedy rule's, with a smaller
 * operator complexity. */
static void test_thread_count(void **state) {
  spx_csr *a;
  double *b;
  int rule;
  int64_t it[2];
  double oc[2];
  (void)state;
  assert_int_equal(spx_gen_poisson3d(36, 36, 36, 7, SPX_DOUBLE, &a), SPX_OK);
  b = rand_vec(a->nrows);
  for (rule = 0; rule < 2; rule++) {
    spx_amg_options o;
    spx_amg *m1, *m2;
    spx_amg_options_default(&o);
    o.aggregation = rule ? SPX_AMG_AGG_MIS2 : SPX_AMG_AGG_GREEDY;
    m1 = amg_make(NULL, a, &o);
#if defined(_OPENMP)
    {
      int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      m2 = amg_make(NULL, a, &o);
      omp_set_num_threads(threads);
    }
#else
    m2 = amg_make(NULL, a, &o);
#endif
    same_hierarchy(m1, m2);
    assert_int_equal(spx_amg_report_of(m1)->level[0].mis2, rule);
    it[rule] = pcg(m1, a, spx_amg_plan(m1), b, 1e-8, 0, rule ? "mis2" : "greedy");
    oc[rule] = spx_amg_report_of(m1)->operator_complexity;
    print_message("%s: AMG-PCG %lld iterations, operator complexity %.3f\n", rule ? "MIS(2)" : "greedy",
                  (long long)it[rule], oc[rule]);
    spx_amg_destroy(m1);
    spx_amg_destroy(m2);
  }
  assert_true(it[1] <= it[0] + 1 && oc[1] < oc[0]);
  free(b);
  spx_csr_destroy(a);
}

/* ---- Colorings ---------------------------------------------------------------------------------- */
/* Checks level l's coloring of hierarchy m: every row colored in 0..colors-1, every color used, and
 * no two rows of one color coupled (relaxed: unless the coupling is weak in both rows' view,
 * |a_ij| < frac * the row's largest off-diagonal). Returns the couplings ignored. */
static int64_t check_coloring(spx_amg *m, int l, int relaxed, double frac) {
  spx_amg_level_view v;
  const spx_csr *A;
  double *rmax;
  int64_t n, i, k, ignored = 0;
  int *used;
  assert_int_equal(spx_amg_level(m, l, &v), SPX_OK);
  A = v.A;
  n = A->nrows;
  assert_non_null(v.color);
  assert_true(v.colors >= 1);
  rmax = calloc((size_t)n, 8);
  used = calloc((size_t)v.colors, sizeof *used);
  for (i = 0; i < n; i++) {
    assert_true(v.color[i] >= 0 && v.color[i] < v.colors);
    used[v.color[i]] = 1;
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (A->col_idx[k] != i) rmax[i] = fmax(rmax[i], fabs(A->val.d[k]));
  }
  for (i = 0; i < v.colors; i++) assert_true(used[i]);
  for (i = 0; i < n; i++)
    for (k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      int64_t j = A->col_idx[k], q;
      double aij = fabs(A->val.d[k]), aji = 0;
      if (j == i || aij == 0 || v.color[i] != v.color[j]) continue;
      if (!relaxed) fail_msg("level %d: rows %lld and %lld are coupled (%g) and share color %d", l, (long long)i,
                             (long long)j, A->val.d[k], v.color[i]);
      for (q = A->row_ptr[j]; q < A->row_ptr[j + 1]; q++)
        if (A->col_idx[q] == i) aji = fabs(A->val.d[q]);
      if (!(aij < frac * rmax[i]) || !(aji < frac * rmax[j]))
        fail_msg("level %d: a strong coupling of rows %lld and %lld (%g, %g; row maxima %g, %g) in one color", l,
                 (long long)i, (long long)j, aij, aji, rmax[i], rmax[j]);
      ignored++;
    }
  free(rmax);
  free(used);
  return ignored;
}

/* Strict colorings (greedy and Welsh-Powell) are valid on every level; relaxed ones ignore only
 * weak couplings and, on the anisotropic problem's coarse levels, need fewer colors. */
static void test_coloring(void **state) {
  spx_csr *a;
  spx_amg_options o;
  spx_amg *ms, *mw, *mr;
  int l, levels, cs = 0, cr = 0;
  int64_t ignored = 0;
  (void)state;
  a = aniso(16, 1e-2);
  spx_amg_options_default(&o);
  o.smoother = SPX_AMG_GS;
  o.coarse_size = 20;
  o.dense_max = 0; /* the coarsest level smoothed too: colored */
  ms = amg_make(NULL, a, &o);
  o.coloring = SPX_AMG_COLOR_WELSH_POWELL;
  mw = amg_make(NULL, a, &o);
  o.coloring = SPX_AMG_COLOR_GREEDY;
  o.relaxed_coloring = 1;
  mr = amg_make(NULL, a, &o);
  levels = spx_amg_report_of(ms)->levels;
  assert_true(levels >= 3);
  assert_int_equal(spx_amg_report_of(mr)->levels, levels);
  for (l = 0; l < levels; l++) {
    int c1 = spx_amg_report_of(ms)->level[l].colors, c2 = spx_amg_report_of(mw)->level[l].colors,
        c3 = spx_amg_report_of(mr)->level[l].colors;
    check_coloring(ms, l, 0, 0);
    check_coloring(mw, l, 0, 0);
    ignored += check_coloring(mr, l, 1, 0.9);
    print_message("level %d: %lld rows, colors greedy %d, Welsh-Powell %d, relaxed %d\n", l,
                  (long long)spx_amg_report_of(ms)->level[l].rows, c1, c2, c3);
    cs += c1;
    cr += c3;
  }
  assert_true(ignored > 0);
  assert_true(cr < cs);
  spx_amg_destroy(ms);
  spx_amg_destroy(mw);
  spx_amg_destroy(mr);
  spx_csr_destroy(a);
}

/* ---- Shared matrices ---------------------------------------------------------------------------- */
/* AMG-PCG on SPD matrices of power networks and structures converges to 1e-8 in fewer iterations
 * than CG and than Jacobi-PCG. */
static void test_shared_spd(void **state) {
  static const char *const names[] = {"1138_bus", "662_bus", "bcsstk08", "bcsstk16", "bcsstk21"};
  size_t k;
  (void)state;
  for (k = 0; k < sizeof names / sizeof *names; k++) {
    spx_csr *a = spx_test_shared(names[k]);
    spx_amg *m = amg_make(NULL, a, NULL);
    double *b = rand_vec(a->nrows), *x = calloc((size_t)a->nrows, 8);
    spx_solve_options o;
    spx_solve_report rj;
    int64_t it_amg, it_cg;
    it_amg = pcg(m, a, spx_amg_plan(m), b, 1e-8, 0, names[k]);
    it_cg = pcg(NULL, a, spx_amg_plan(m), b, 1e-8, 0, names[k]);
    spx_solve_options_default(&o);
    o.maxit = 20000;
    assert_int_equal(spx_solve_pcg_jacobi(spx_amg_plan(m), b, x, &o, &rj), SPX_OK);
    print_message("%-9s %5lld rows, %d levels: AMG-PCG %lld iterations, Jacobi-PCG %lld, CG %lld\n", names[k],
                  (long long)a->nrows, spx_amg_report_of(m)->levels, (long long)it_amg, (long long)rj.iterations,
                  (long long)it_cg);
    assert_true(spx_amg_report_of(m)->levels >= 2);
    if (!(2 * it_amg < rj.iterations && 2 * it_amg < it_cg))
      fail_msg("%s: AMG-PCG %lld iterations, Jacobi-PCG %lld, CG %lld", names[k], (long long)it_amg,
               (long long)rj.iterations, (long long)it_cg);
    free(b);
    free(x);
    spx_amg_destroy(m);
    spx_csr_destroy(a);
  }
}

/* ---- Small cases, the coarse solve, determinism, the report ------------------------------------ */
/* A matrix of at most coarse_size rows is one level, the dense LU: one cycle solves it; with
 * dense_max 0 the coarsest level is smoothed instead, and AMG-PCG still converges. A float input
 * is taken (copied to double). */
static void test_coarse(void **state) {
  spx_csr *a, *af, *big;
  spx_amg_options o;
  spx_amg *m, *mf, *ms;
  double *b, *x;
  int64_t n, it, it_lu;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(7, 6, 5, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  m = amg_make(NULL, a, NULL);
  assert_int_equal(spx_amg_report_of(m)->levels, 1);
  assert_int_equal(spx_amg_report_of(m)->coarse_direct, 1);
  b = rand_vec(n);
  x = calloc((size_t)n, 8);
  assert_int_equal(spx_amg_cycle(m, b, x), SPX_OK);
  assert_true(rel_resid(a, b, x) < 1e-13);
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
  mf = amg_make(NULL, af, NULL);
  memset(x, 0, (size_t)n * 8);
  assert_int_equal(spx_amg_precond(mf, b, x), SPX_OK);
  assert_true(rel_resid(a, b, x) < 1e-6); /* A in float, rounded */
  free(b);
  free(x);
  assert_int_equal(spx_gen_poisson3d(16, 16, 16, 7, SPX_DOUBLE, &big), SPX_OK);
  b = rand_vec(big->nrows);
  spx_amg_options_default(&o);
  ms = amg_make(NULL, big, &o);
  it_lu = pcg(ms, big, spx_amg_plan(ms), b, 1e-8, 0, "coarse lu");
  spx_amg_destroy(ms);
  o.dense_max = 0;
  ms = amg_make(NULL, big, &o);
  assert_int_equal(spx_amg_report_of(ms)->coarse_direct, 0);
  it = pcg(ms, big, spx_amg_plan(ms), b, 1e-8, 0, "coarse smoothed");
  print_message("16^3: AMG-PCG %lld iterations with the coarse LU, %lld with %d coarse sweeps\n", (long long)it_lu,
                (long long)it, o.coarse_sweeps);
  assert_true(it <= it_lu + 5);
  free(b);
  spx_amg_destroy(m);
  spx_amg_destroy(mf);
  spx_amg_destroy(ms);
  spx_csr_destroy(a);
  spx_csr_destroy(af);
  spx_csr_destroy(big);
}

/* The same solve twice, and on two hierarchies of the same matrix: the same x bit for bit. */
static void test_determinism(void **state) {
  spx_csr *a;
  spx_amg_options o;
  spx_amg *m1, *m2;
  spx_solve_options so;
  spx_solve_report r;
  double *b, *x1, *x2, *x3;
  int64_t n;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(24, 20, 18, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  spx_amg_options_default(&o);
  o.smoother = SPX_AMG_GS;
  o.relaxed_coloring = 1;
  m1 = amg_make(NULL, a, &o);
  m2 = amg_make(NULL, a, &o);
  b = rand_vec(n);
  x1 = calloc((size_t)n, 8); x2 = calloc((size_t)n, 8); x3 = calloc((size_t)n, 8);
  spx_solve_options_default(&so);
  so.precond = spx_amg_precond;
  so.precond_data = m1;
  assert_int_equal(spx_solve_cg(spx_amg_plan(m1), b, x1, &so, &r), SPX_OK);
  assert_int_equal(spx_solve_cg(spx_amg_plan(m1), b, x2, &so, &r), SPX_OK);
  so.precond_data = m2;
  assert_int_equal(spx_solve_cg(spx_amg_plan(m2), b, x3, &so, &r), SPX_OK);
  assert_memory_equal(x1, x2, (size_t)n * 8);
  assert_memory_equal(x1, x3, (size_t)n * 8);
  free(b); free(x1); free(x2); free(x3);
  spx_amg_destroy(m1);
  spx_amg_destroy(m2);
  spx_csr_destroy(a);
}

/* The report: levels, rows and nnz per level as the level views have them, the complexities
 * recomputed, the phases' times within the setup's, and both printed forms. */
static void test_report(void **state) {
  spx_csr *a;
  spx_amg_options o;
  spx_amg *m;
  const spx_amg_report *r;
  double nnz = 0, rows = 0, parts;
  int l;
  char *buf = NULL;
  size_t len = 0;
  FILE *f;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  spx_amg_options_default(&o);
  assert_int_equal(o.gpu_setup_rows, 20000);
  o.gpu_setup_rows = 1; /* asks every level for the GPU: the host backend has none, and says nothing */
  m = amg_make(NULL, a, &o);
  r = spx_amg_report_of(m);
  assert_true(r->levels >= 2 && r->levels <= SPX_AMG_MAX_LEVELS);
  assert_true(r->prolong_gpu_ms == 0 && r->rap_gpu_ms == 0 && r->gpu_note[0] == 0);
  for (l = 0; l < r->levels; l++) {
    spx_amg_level_view v;
    assert_int_equal(spx_amg_level(m, l, &v), SPX_OK);
    assert_int_equal(r->level[l].rows, v.A->nrows);
    assert_int_equal(r->level[l].nnz, v.A->nnz);
    assert_true(r->level[l].format[0] != 0);
    assert_true(r->level[l].agg_gpu == 0 && r->level[l].p_gpu == 0 && r->level[l].rap_gpu == 0 && r->level[l].rho_gpu == 0);
    assert_true(v.plan_A == (l == 0 ? spx_amg_plan(m) : v.plan_A) && v.plan_A);
    if (l + 1 < r->levels) {
      assert_int_equal(r->level[l].p_nnz, v.P->nnz);
      assert_true(r->level[l].p_format[0] && r->level[l].r_format[0] && v.plan_P && v.plan_R);
      assert_true(r->level[l].omega > 0);
    }
    nnz += (double)v.A->nnz;
    rows += (double)v.A->nrows;
  }
  assert_true(fabs(r->operator_complexity - nnz / (double)a->nnz) < 1e-12);
  assert_true(fabs(r->grid_complexity - rows / (double)a->nrows) < 1e-12);
  assert_true(r->level[0].rho > 1.5 && r->level[0].rho <= 2.0); /* chebyshev's rho(D^-1 A), Gershgorin 2 */
  parts = r->input_ms + r->strength_ms + r->aggregate_ms + r->prolong_ms + r->rap_ms + r->smoother_ms + r->coarse_ms +
          r->plan_ms + r->device_ms;
  assert_true(r->input_ms > 0 && r->aggregation == SPX_AMG_AGG_AUTO && r->level[0].mis2 == 0); /* AUTO on the host */
  assert_true(parts > 0 && parts <= r->setup_ms * 1.001 + 0.01);
  assert_true(strstr(r->stop, "coarse_size") != NULL);
  f = open_memstream(&buf, &len);
  assert_int_equal(spx_amg_report_print(r, f, 0), SPX_OK);
  assert_int_equal(spx_amg_report_print(r, f, 1), SPX_OK);
  fclose(f);
  assert_non_null(strstr(buf, "operator complexity"));
  assert_non_null(strstr(buf, "dense LU"));
  assert_non_null(strstr(buf, "\"operator_complexity\": "));
  assert_non_null(strstr(buf, "\"smoother\": \"chebyshev\""));
  assert_non_null(strstr(buf, "\"gpu_note\": \"\", \"stop\": \"level"));
  assert_non_null(strstr(buf, "\"agg_gpu\": 0, \"p_gpu\": 0, \"rap_gpu\": 0, \"rho_gpu\": 0, \"aggregates\": \"greedy\"}"));
  assert_non_null(strstr(buf, "\"aggregation\": \"auto\""));
  assert_non_null(strstr(buf, "aggregates      greedy on levels 0-"));
  assert_non_null(strstr(buf, "setup ") && strstr(buf, ": input "));
  assert_null(strstr(buf, "setup on the")); /* no GPU line, no fallback line */
  free(buf);
  assert_int_equal(spx_amg_report_print(NULL, stdout, 0), SPX_INVALID_ARGUMENT);
  spx_amg_destroy(m);
  spx_csr_destroy(a);
}

/* ---- Bad input ---------------------------------------------------------------------------------- */
static void expect_fail(const spx_csr *a, const spx_amg_options *o, spx_status want, const char *words) {
  spx_amg *m = (spx_amg *)(uintptr_t)1;
  spx_plan_options po = host_plan_options();
  spx_amg_options oo;
  spx_status s;
  if (o) oo = *o;
  else spx_amg_options_default(&oo);
  if (!oo.plan) oo.plan = &po;
  s = spx_amg_create(NULL, a, &oo, &m);
  if (s != want) fail_msg("expected %s, got %s: %s", spx_status_string(want), spx_status_string(s), spx_last_error());
  assert_null(m);
  if (!strstr(spx_last_error(), words)) fail_msg("'%s' does not say '%s'", spx_last_error(), words);
}

/* Non-square, empty, a zero or NaN or missing diagonal entry, a singular matrix, bad options: each
 * its status and a sentence naming the problem; nothing leaks (the ASan build checks). */
static void test_bad_input(void **state) {
  spx_csr *a, *r, *z, *e, *lap;
  spx_amg_options o;
  int32_t ri[] = {0, 1, 1}, ci[] = {0, 0, 2};
  double rv[] = {1, 2, 3};
  int64_t i, k;
  spx_amg *m;
  spx_solve_options so;
  spx_solve_report rep;
  spx_amg_level_view v;
  double b[4] = {1, 1, 1, 1}, x[4] = {0, 0, 0, 0};
  (void)state;
  expect_fail(NULL, NULL, SPX_INVALID_ARGUMENT, "NULL matrix");
  assert_int_equal(spx_csr_from_coo(2, 3, 3, ri, ci, rv, SPX_DOUBLE, &r), SPX_OK);
  expect_fail(r, NULL, SPX_INVALID_ARGUMENT, "square");
  assert_int_equal(spx_csr_create(0, 0, 0, SPX_DOUBLE, &e), SPX_OK);
  expect_fail(e, NULL, SPX_INVALID_ARGUMENT, "empty");
  /* zero diagonal at row 37 of a matrix large enough to coarsen: named, nothing leaked */
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &z), SPX_OK);
  for (i = 0; i < z->nrows; i++)
    for (k = z->row_ptr[i]; k < z->row_ptr[i + 1]; k++)
      if (z->col_idx[k] == i && i == 37) z->val.d[k] = 0;
  expect_fail(z, NULL, SPX_INVALID_ARGUMENT, "a[37][37] = 0");
  for (i = 0; i < z->nrows; i++)
    for (k = z->row_ptr[i]; k < z->row_ptr[i + 1]; k++)
      if (z->col_idx[k] == i) z->val.d[k] = i == 37 ? 6.0 : i == 600 ? NAN : z->val.d[k];
  expect_fail(z, NULL, SPX_INVALID_ARGUMENT, "a[600][600] = nan");
  spx_csr_destroy(z);
  {
    /* row 1 without a diagonal entry */
    int32_t r2[] = {0, 1, 2, 2}, c2[] = {0, 2, 1, 2};
    double v2[] = {2, -1, -1, 2};
    assert_int_equal(spx_csr_from_coo(3, 3, 4, r2, c2, v2, SPX_DOUBLE, &z), SPX_OK);
    expect_fail(z, NULL, SPX_INVALID_ARGUMENT, "a[1][1] = 0");
    spx_csr_destroy(z);
  }
  /* NaN off the diagonal */
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &lap), SPX_OK);
  lap->val.d[lap->row_ptr[500] + 1] = NAN;
  expect_fail(lap, NULL, SPX_INVALID_ARGUMENT, "a[500][");
  expect_fail(lap, NULL, SPX_INVALID_ARGUMENT, "finite entries");
  spx_csr_destroy(lap);
  /* options */
  spx_amg_options_default(&o);
  o.theta = -1;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "theta");
  spx_amg_options_default(&o);
  o.max_levels = 0;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "max_levels");
  spx_amg_options_default(&o);
  o.smoother = (spx_amg_smoother)99;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "smoother");
  spx_amg_options_default(&o);
  o.gpu_setup_rows = -1;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "gpu_setup_rows = -1");
  spx_amg_options_default(&o);
  o.cheb_degree = 0;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "cheb_degree");
  spx_amg_options_default(&o);
  o.level[3].smoother = 7;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "level[3]");
  {
    spx_plan_options po = host_plan_options();
    po.dtype = SPX_FLOAT;
    spx_amg_options_default(&o);
    o.plan = &po;
    expect_fail(a, &o, SPX_INVALID_ARGUMENT, "float");
  }
  assert_int_equal(spx_amg_create(NULL, a, NULL, NULL), SPX_INVALID_ARGUMENT);
  /* names */
  {
    spx_amg_smoother s;
    assert_int_equal(spx_amg_smoother_parse("GS", &s), SPX_OK);
    assert_int_equal(s, SPX_AMG_GS);
    assert_int_equal(spx_amg_smoother_parse("sor", &s), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "chebyshev"));
    assert_string_equal(spx_amg_smoother_name(SPX_AMG_L1_JACOBI), "l1jacobi");
    assert_string_equal(spx_amg_smoother_name((spx_amg_smoother)42), "unknown");
  }
  /* the solve's and the views' arguments */
  assert_int_equal(spx_csr_create(4, 4, 4, SPX_DOUBLE, &z), SPX_OK);
  for (i = 0; i < 4; i++) {
    z->row_ptr[i + 1] = i + 1;
    z->col_idx[i] = (int32_t)i;
    z->val.d[i] = 2;
  }
  m = amg_make(NULL, z, NULL);
  spx_solve_options_default(&so);
  so.rtol = 0;
  assert_int_equal(spx_amg_solve(m, b, x, &so, &rep), SPX_INVALID_ARGUMENT);
  assert_int_equal(rep.status, SPX_INVALID_ARGUMENT);
  spx_solve_options_default(&so);
  so.precond = spx_amg_precond;
  assert_int_equal(spx_amg_solve(m, b, x, &so, &rep), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_amg_solve(m, NULL, x, NULL, &rep), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_amg_solve(m, b, x, NULL, &rep), SPX_OK);
  assert_true(fabs(x[2] - 0.5) < 1e-15);
  assert_int_equal(spx_amg_level(m, 1, &v), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_amg_cycle(NULL, b, x), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_amg_precond(m, NULL, x), SPX_INVALID_ARGUMENT);
  assert_null(spx_amg_plan(NULL));
  spx_amg_destroy(m);
  spx_amg_destroy(NULL);
  spx_csr_destroy(z);
  spx_csr_destroy(a);
  spx_csr_destroy(r);
  spx_csr_destroy(e);
}

/* The standalone iteration: converges on Poisson with every smoother to its tolerance, stops at
 * maxit with SPX_NOT_CONVERGED, and reports a NaN as a breakdown. */
static void test_standalone(void **state) {
  spx_csr *a;
  spx_amg *m;
  spx_solve_options o;
  spx_solve_report r;
  double *b, *x;
  int64_t n;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  m = amg_make(NULL, a, NULL);
  b = rand_vec(n);
  x = calloc((size_t)n, 8);
  spx_solve_options_default(&o);
  o.rtol = 1e-10;
  assert_int_equal(spx_amg_solve(m, b, x, &o, &r), SPX_OK);
  assert_true(rel_resid(a, b, x) <= 1.0001e-10 && r.rel_resid <= 1e-10);
  assert_true(r.iterations > 5 && r.iterations < 40);
  assert_non_null(strstr(r.message, "converged"));
  memset(x, 0, (size_t)n * 8);
  o.maxit = 3;
  assert_int_equal(spx_amg_solve(m, b, x, &o, &r), SPX_NOT_CONVERGED);
  assert_int_equal(r.iterations, 3);
  assert_non_null(strstr(spx_last_error(), "not converged"));
  x[5] = NAN;
  assert_int_equal(spx_amg_solve(m, b, x, &o, &r), SPX_BREAKDOWN);
  assert_non_null(strstr(r.message, "NaN"));
  free(b);
  free(x);
  spx_amg_destroy(m);
  spx_csr_destroy(a);
}

/* A singular consistent system, the graph Laplacian of a grid (pure Neumann: rows sum to 0) with b
 * in its range: the coarsest operator is singular to rounding, its zero pivot is counted and its
 * unknown set to 0, and AMG-PCG converges. */
static void test_singular(void **state) {
  spx_csr *lap;
  spx_amg *m;
  double *b, *y;
  int64_t i, k, it;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(14, 13, 12, 7, SPX_DOUBLE, &lap), SPX_OK);
  for (i = 0; i < lap->nrows; i++) {
    double s = 0;
    int64_t kd = -1;
    for (k = lap->row_ptr[i]; k < lap->row_ptr[i + 1]; k++) {
      if (lap->col_idx[k] == i) kd = k;
      else s += lap->val.d[k];
    }
    lap->val.d[kd] = -s;
  }
  m = amg_make(NULL, lap, NULL);
  assert_int_equal(spx_amg_report_of(m)->coarse_zero_pivots, 1);
  y = rand_vec(lap->nrows);
  b = malloc((size_t)lap->nrows * 8);
  assert_int_equal(spx_csr_spmv(lap, 1.0, y, 0.0, b), SPX_OK);
  it = pcg(m, lap, spx_amg_plan(m), b, 1e-8, 0, "neumann");
  print_message("Neumann Laplacian 14x13x12: AMG-PCG %lld iterations\n", (long long)it);
  assert_true(it < 25);
  free(b);
  free(y);
  spx_amg_destroy(m);
  spx_csr_destroy(lap);
}

/* ---- Setup reuse -------------------------------------------------------------------------------- */
/* A copy of a with its values mapped: scale > 0 multiplies every entry; scale 0 perturbs the
 * off-diagonals symmetrically by up to +-30% (a fixed hash of the pair) and makes the diagonal
 * 1.05 times the row's off-diagonal |sum| (SPD, strictly dominant). */
static spx_csr *revalue(const spx_csr *a, double scale) {
  spx_csr *c;
  int64_t i, k;
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &c), SPX_OK);
  for (i = 0; i < c->nrows; i++) {
    double off = 0;
    int64_t kd = -1;
    for (k = c->row_ptr[i]; k < c->row_ptr[i + 1]; k++) {
      int64_t j = c->col_idx[k], lo = j < i ? j : i, hi = j < i ? i : j;
      if (scale > 0) c->val.d[k] *= scale;
      else if (j == i) kd = k;
      else {
        uint64_t h = (uint64_t)(lo * 2654435761u + hi * 40503u) * 0x9E3779B97F4A7C15ull;
        c->val.d[k] *= 1.0 + 0.6 * ((double)(h >> 11) / 9007199254740992.0 - 0.5);
        off += fabs(c->val.d[k]);
      }
    }
    if (kd >= 0) c->val.d[kd] = 1.05 * off + (off == 0);
  }
  return c;
}

/* Two hierarchies hold the same matrices bit for bit on every level (A, P, R and the aggregates). */
static void same_hierarchy(spx_amg *m1, spx_amg *m2) {
  int l, levels = spx_amg_report_of(m1)->levels;
  assert_int_equal(spx_amg_report_of(m2)->levels, levels);
  for (l = 0; l < levels; l++) {
    spx_amg_level_view v1, v2;
    assert_int_equal(spx_amg_level(m1, l, &v1), SPX_OK);
    assert_int_equal(spx_amg_level(m2, l, &v2), SPX_OK);
    assert_int_equal(v1.A->nnz, v2.A->nnz);
    assert_memory_equal(v1.A->row_ptr, v2.A->row_ptr, (size_t)(v1.A->nrows + 1) * 8);
    assert_memory_equal(v1.A->col_idx, v2.A->col_idx, (size_t)v1.A->nnz * 4);
    if (memcmp(v1.A->val.d, v2.A->val.d, (size_t)v1.A->nnz * 8)) fail_msg("level %d: the operators' values differ", l);
    if (!v1.P) continue;
    assert_memory_equal(v1.aggregate, v2.aggregate, (size_t)v1.A->nrows * 4);
    assert_int_equal(v1.P->nnz, v2.P->nnz);
    assert_memory_equal(v1.P->col_idx, v2.P->col_idx, (size_t)v1.P->nnz * 4);
    assert_memory_equal(v1.P->val.d, v2.P->val.d, (size_t)v1.P->nnz * 8);
    assert_memory_equal(v1.R->val.d, v2.R->val.d, (size_t)v1.R->nnz * 8);
  }
}

/* spx_amg_update with every smoother: a (reused for) 2a, an exact scaling that leaves the strength
 * test, the aggregates and P as they were, gives the hierarchy a fresh setup of 2a gives, bit for
 * bit, and the same x from one cycle and from AMG-PCG; perturbed values keep the aggregates and P
 * (the same arrays), make every Galerkin operator P^T A_new P (dense check), and AMG-PCG converges
 * within 2 iterations of a fresh setup's; the report counts the update and zeroes the kept phases. */
static void test_update(void **state) {
  static const spx_amg_smoother sms[] = {SPX_AMG_CHEBYSHEV, SPX_AMG_JACOBI, SPX_AMG_L1_JACOBI, SPX_AMG_GS};
  spx_csr *a, *a2, *a3;
  double *b;
  size_t k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(10, 9, 8, 7, SPX_DOUBLE, &a), SPX_OK);
  a2 = revalue(a, 2.0);
  a3 = revalue(a, 0);
  b = rand_vec(a->nrows);
  for (k = 0; k < sizeof sms / sizeof *sms; k++) {
    spx_amg_options o;
    spx_amg *m, *f2, *f3;
    spx_amg_report r0;
    spx_amg_level_view v0, v1;
    const int32_t *agg0;
    double *x1 = calloc((size_t)a->nrows, 8), *x2 = calloc((size_t)a->nrows, 8);
    int64_t it_u, it_f;
    spx_amg_options_default(&o);
    o.smoother = sms[k];
    o.relaxed_coloring = sms[k] == SPX_AMG_GS;
    o.coarse_size = 10;
    m = amg_make(NULL, a, &o);
    r0 = *spx_amg_report_of(m);
    assert_int_equal(r0.updates, 0);
    assert_int_equal(spx_amg_level(m, 0, &v0), SPX_OK);
    agg0 = v0.aggregate;
    f2 = amg_make(NULL, a2, &o);
    if (spx_amg_update(m, a2) != SPX_OK) fail_msg("update: %s", spx_last_error());
    same_hierarchy(m, f2);
    assert_int_equal(spx_amg_cycle(m, b, x1), SPX_OK);
    assert_int_equal(spx_amg_cycle(f2, b, x2), SPX_OK);
    if (memcmp(x1, x2, (size_t)a->nrows * 8)) fail_msg("%s: a cycle after the update differs from a fresh setup's",
                                                      spx_amg_smoother_name(sms[k]));
    assert_int_equal(pcg(m, a2, spx_amg_plan(m), b, 1e-8, 0, "updated 2a"), pcg(f2, a2, spx_amg_plan(f2), b, 1e-8, 0, "2a"));
    /* perturbed: P kept, the operators follow A */
    if (spx_amg_update(m, a3) != SPX_OK) fail_msg("update: %s", spx_last_error());
    assert_int_equal(spx_amg_level(m, 0, &v1), SPX_OK);
    assert_ptr_equal(v1.aggregate, agg0);
    check_galerkin(m);
    f3 = amg_make(NULL, a3, &o);
    it_u = pcg(m, a3, spx_amg_plan(m), b, 1e-8, 0, "updated perturbed");
    it_f = pcg(f3, a3, spx_amg_plan(f3), b, 1e-8, 0, "fresh perturbed");
    print_message("update %-9s: perturbed AMG-PCG %lld iterations (fresh setup %lld); setup %.2f ms, update %.2f ms\n",
                  spx_amg_smoother_name(sms[k]), (long long)it_u, (long long)it_f, r0.setup_ms,
                  spx_amg_report_of(m)->setup_ms);
    assert_true(it_u <= it_f + 2 && it_u >= it_f - 2);
    assert_int_equal(spx_amg_report_of(m)->updates, 2);
    assert_true(spx_amg_report_of(m)->strength_ms == 0 && spx_amg_report_of(m)->aggregate_ms == 0 &&
                spx_amg_report_of(m)->prolong_ms == 0);
    assert_int_equal(spx_amg_report_of(m)->levels, r0.levels);
    free(x1);
    free(x2);
    spx_amg_destroy(m);
    spx_amg_destroy(f2);
    spx_amg_destroy(f3);
  }
  free(b);
  spx_csr_destroy(a);
  spx_csr_destroy(a2);
  spx_csr_destroy(a3);
}

/* The update's refusals: another pattern (other nnz; the same nnz with one column moved), a zero
 * diagonal, a NaN, NULL: each SPX_INVALID_ARGUMENT with a sentence, the hierarchy as it was (a
 * cycle gives the x it gave before). A failure part way (values whose products overflow) leaves
 * the hierarchy refusing cycles until a good update, after which it equals a fresh setup again.
 * Nothing leaks (the ASan build checks). */
static void test_update_refused(void **state) {
  spx_csr *a, *other, *moved, *zero, *nan_, *huge, *a2;
  spx_amg_options o;
  spx_amg *m, *f2;
  double *b, *x0, *x1;
  int64_t n, k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(10, 9, 8, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(9, 10, 8, 7, SPX_DOUBLE, &other), SPX_OK); /* same rows, other nnz */
  n = a->nrows;
  spx_amg_options_default(&o);
  o.coarse_size = 10;
  m = amg_make(NULL, a, &o);
  b = rand_vec(n);
  x0 = calloc((size_t)n, 8);
  x1 = calloc((size_t)n, 8);
  assert_int_equal(spx_amg_cycle(m, b, x0), SPX_OK);
  moved = revalue(a, 1.0); /* row 0: columns 0, 1, 10, 90; 90 -> 91 keeps the rows sorted */
  assert_int_equal(moved->col_idx[moved->row_ptr[1] - 1], 90);
  moved->col_idx[moved->row_ptr[1] - 1] = 91;
  zero = revalue(a, 1.0);
  for (k = zero->row_ptr[5]; k < zero->row_ptr[6]; k++) zero->val.d[k] = zero->col_idx[k] == 5 ? 0 : -1;
  nan_ = revalue(a, 1.0);
  nan_->val.d[7] = NAN;
  assert_int_equal(spx_amg_update(m, other), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "same pattern"));
  assert_int_equal(spx_amg_update(m, moved), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "column 91"));
  assert_int_equal(spx_amg_update(m, zero), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "a[5][5] = 0"));
  assert_int_equal(spx_amg_update(m, nan_), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "finite"));
  assert_int_equal(spx_amg_update(m, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_amg_update(NULL, a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_amg_cycle(m, b, x1), SPX_OK);
  assert_memory_equal(x0, x1, (size_t)n * 8);
  assert_int_equal(spx_amg_report_of(m)->updates, 0);
  /* part way: every entry 1.7e308 (finite) overflows A P */
  huge = revalue(a, 1.0);
  for (k = 0; k < huge->nnz; k++) huge->val.d[k] = 1.7e308;
  assert_int_not_equal(spx_amg_update(m, huge), SPX_OK);
  print_message("an overflowing update: %s\n", spx_last_error());
  memset(x1, 0, (size_t)n * 8);
  assert_int_equal(spx_amg_cycle(m, b, x1), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_amg_update failed"));
  assert_int_equal(spx_amg_precond(m, b, x1), SPX_INVALID_ARGUMENT);
  a2 = revalue(a, 2.0);
  assert_int_equal(spx_amg_update(m, a2), SPX_OK);
  f2 = amg_make(NULL, a2, &o);
  same_hierarchy(m, f2);
  memset(x0, 0, (size_t)n * 8);
  memset(x1, 0, (size_t)n * 8);
  assert_int_equal(spx_amg_cycle(m, b, x0), SPX_OK);
  assert_int_equal(spx_amg_cycle(f2, b, x1), SPX_OK);
  assert_memory_equal(x0, x1, (size_t)n * 8);
  free(b); free(x0); free(x1);
  spx_amg_destroy(m);
  spx_amg_destroy(f2);
  spx_csr_destroy(a); spx_csr_destroy(other); spx_csr_destroy(moved); spx_csr_destroy(zero);
  spx_csr_destroy(nan_); spx_csr_destroy(huge); spx_csr_destroy(a2);
}

/* The reuse's time by phase against a full setup, 48^3 Poisson (printed; the update must be
 * faster, as it skips strength, aggregation, prolongation and the symbolic products). */
static void test_update_time(void **state) {
  spx_csr *a, *a3;
  spx_amg *m;
  spx_amg_report full;
  const spx_amg_report *u;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(48, 48, 48, 7, SPX_DOUBLE, &a), SPX_OK);
  a3 = revalue(a, 0);
  m = amg_make(NULL, a, NULL);
  full = *spx_amg_report_of(m);
  assert_int_equal(spx_amg_update(m, a3), SPX_OK);
  u = spx_amg_report_of(m);
  print_message("48^3 setup %.2f ms (strength %.2f, aggregation %.2f, prolongation %.2f, RAP %.2f, smoothers %.2f, "
                "LU %.2f, plans %.2f); update %.2f ms (RAP %.2f, smoothers %.2f, LU %.2f, plans %.2f)\n",
                full.setup_ms, full.strength_ms, full.aggregate_ms, full.prolong_ms, full.rap_ms, full.smoother_ms,
                full.coarse_ms, full.plan_ms, u->setup_ms, u->rap_ms, u->smoother_ms, u->coarse_ms, u->plan_ms);
  assert_true(u->setup_ms < full.setup_ms);
  spx_amg_destroy(m);
  spx_csr_destroy(a);
  spx_csr_destroy(a3);
}

/* ---- Classical Ruge-Stueben coarsening (options.coarsening SPX_AMG_RS) ------------------------- */
static spx_amg_options rs_options(void) {
  spx_amg_options o;
  spx_amg_options_default(&o);
  o.coarsening = SPX_AMG_RS;
  return o;
}

/* 2-D 5-point Poisson n^2: the anisotropic generator's one plane, its z coefficient negligible. */
static spx_csr *poisson2d(int64_t n) {
  spx_csr *a;
  assert_int_equal(spx_gen_poisson3d_aniso(n, n, 1, 1, 1, 1e-12, SPX_DOUBLE, &a), SPX_OK);
  return a;
}

/* Entry k of row i is strong by the classical rule, straight from its definition: the couplings of
 * the sign opposite the diagonal's against the largest of them, or |a_ik| against the largest
 * |a_ij| where the row has none of that sign. */
static int rs_strong(const spx_csr *a, int64_t i, int64_t k, double theta) {
  double s = 1, mo = 0, ma = 0;
  int64_t q;
  if (a->col_idx[k] == i || a->val.d[k] == 0) return 0;
  for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++)
    if (a->col_idx[q] == i) s = a->val.d[q] < 0 ? -1 : 1;
  for (q = a->row_ptr[i]; q < a->row_ptr[i + 1]; q++)
    if (a->col_idx[q] != i) {
      mo = fmax(mo, -s * a->val.d[q]);
      ma = fmax(ma, fabs(a->val.d[q]));
    }
  return mo > 0 ? -s * a->val.d[k] >= theta * mo : fabs(a->val.d[k]) >= theta * ma;
}

/* Marks C^_i of F row i in inset (strong C neighbours and those of strong F neighbours), or with
 * clear set clears them (and w) again. */
static void ext_set(const spx_csr *a, const int32_t *agg, double theta, int64_t i, char *inset, double *w, int clear) {
  int64_t k, q;
  for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
    const int32_t j = a->col_idx[k];
    if (clear) inset[j] = 0, w[j] = 0;
    if (!rs_strong(a, i, k, theta)) continue;
    if (agg[j] >= 0) inset[j] |= !clear;
    else
      for (q = a->row_ptr[j]; q < a->row_ptr[j + 1]; q++) {
        if (clear) inset[a->col_idx[q]] = 0, w[a->col_idx[q]] = 0;
        else if (rs_strong(a, j, q, theta) && agg[a->col_idx[q]] >= 0) inset[a->col_idx[q]] = 1;
      }
  }
}

/* F row i's extended+i weights before truncation into w (by fine row; inset: C^_i), from amg.h's
 * formula: w_ij = -(a_ij + sum_{k in F^s_i} a_ik abar_kj / d_k) / a~_ii. */
static void ext_ref(const spx_csr *a, const int32_t *agg, double theta, int64_t i, char *inset, double *w) {
  double di = 0, dia;
  int64_t k, q;
  ext_set(a, agg, theta, i, inset, w, 0);
  for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
    if (a->col_idx[k] == i) di = a->val.d[k];
  dia = di;
  for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
    const int32_t j = a->col_idx[k];
    double sj = 1, d = 0;
    if (j == i) continue;
    if (inset[j]) {
      w[j] += a->val.d[k];
      continue;
    }
    if (!rs_strong(a, i, k, theta) || agg[j] >= 0) {
      dia += a->val.d[k];
      continue;
    }
    for (q = a->row_ptr[j]; q < a->row_ptr[j + 1]; q++)
      if (a->col_idx[q] == j) sj = a->val.d[q] < 0 ? -1 : 1;
    for (q = a->row_ptr[j]; q < a->row_ptr[j + 1]; q++)
      if (sj * a->val.d[q] < 0 && (inset[a->col_idx[q]] || a->col_idx[q] == i)) d += a->val.d[q];
    if (d == 0) dia += a->val.d[k];
    for (q = a->row_ptr[j]; q < a->row_ptr[j + 1] && d != 0; q++) {
      if (!(sj * a->val.d[q] < 0)) continue;
      if (a->col_idx[q] == i) dia += a->val.d[k] * (a->val.d[q] / d);
      else if (inset[a->col_idx[q]]) w[a->col_idx[q]] += a->val.d[k] * (a->val.d[q] / d);
    }
  }
  if (!(dia * di > 0)) dia = di;
  for (k = 0; k < a->nrows; k++)
    if (inset[k]) w[k] = -w[k] / dia;
}

/* An extended+i F row of level l: each P column a C point of C^_i (distance two through strong
 * connections); at most pmax entries; with o's truncation off (rs_trunc and rs_pmax 0) the
 * reference's nonzero weights (to rounding: 1e-12 of the row's largest); where every off-diagonal has the sign opposite the diagonal's (the
 * weights are then positive) the sum of the reference's (truncation rescales the weights it keeps),
 * and 1 where the row of A also sums to zero. cpt: coarse row -> fine row. */
static void check_ext_row(const spx_amg_level_view *v, int l, int64_t i, double theta, const spx_amg_options *o,
                          const int32_t *cpt, int opposite, char *inset, double *w) {
  const spx_csr *P = v->P, *a = v->A;
  const int exact = o->rs_trunc == 0 && o->rs_pmax == 0, sums = opposite && theta == o->rs_theta;
  double sum = 0, ref = 0, di = 0, rowsum = 0, wmax = 0;
  int64_t q, k, nz = 0;
  ext_ref(a, v->aggregate, theta, i, inset, w);
  for (k = 0; k < a->nrows; k++) {
    ref += inset[k] ? w[k] : 0;
    nz += inset[k] && w[k] != 0;
    wmax = fmax(wmax, inset[k] ? fabs(w[k]) : 0);
  }
  for (q = P->row_ptr[i]; q < P->row_ptr[i + 1]; q++) {
    const int32_t j = cpt[P->col_idx[q]];
    if (!inset[j]) fail_msg("level %d: row %lld interpolates from coarse row %d, not in C^_i", l, (long long)i,
                            P->col_idx[q]);
    if (exact && !(fabs(P->val.d[q] - w[j]) <= 1e-12 * wmax))
      fail_msg("level %d: row %lld's weight for fine row %d is %.17g, not %.17g", l, (long long)i, j, P->val.d[q], w[j]);
    sum += P->val.d[q];
  }
  for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
    rowsum += a->val.d[k];
    if (a->col_idx[k] == i) di = a->val.d[k];
  }
  if (exact) assert_int_equal(P->row_ptr[i + 1] - P->row_ptr[i], nz);
  if (o->rs_pmax) assert_true(P->row_ptr[i + 1] - P->row_ptr[i] <= o->rs_pmax);
  if (sums && !(fabs(sum - ref) <= 1e-12 * fabs(ref)))
    fail_msg("level %d: row %lld's weights sum to %.17g, not the untruncated %.17g", l, (long long)i, sum, ref);
  if (sums && fabs(rowsum) <= 1e-14 * fabs(di) && !(fabs(sum - 1) <= 1e-12))
    fail_msg("level %d: row %lld of A sums to zero but its weights to %.17g", l, (long long)i, sum);
  ext_set(a, v->aggregate, theta, i, inset, w, 1);
}

/* Level l of an RS hierarchy (o: its options): the C points numbered in row order (aggregate: a C
 * row's coarse row, -1 for an F row) and as many as P's columns; P's C rows identity rows; an F row
 * has a strong C neighbour when it has a strong dependency at all, and then a nonempty row of P.
 * Direct: an F row interpolates only from strong C neighbours, and where every off-diagonal has the
 * sign opposite the diagonal's its weights sum to -sum_k a_ik / a_ii (truncation rescales the
 * weights it keeps); extended+i: check_ext_row. theta: the strength the checks use. Returns the F
 * rows with no strong dependency. */
static int64_t check_rs_level(spx_amg *m, int l, double theta, const spx_amg_options *o) {
  spx_amg_level_view v;
  int64_t i, k, q, next = 0, lonely = 0;
  int32_t *cpt;
  char *inset;
  double *w;
  assert_int_equal(spx_amg_level(m, l, &v), SPX_OK);
  assert_non_null(v.P);
  cpt = calloc((size_t)v.P->ncols + 1, 4);
  inset = calloc((size_t)v.A->nrows, 1);
  w = calloc((size_t)v.A->nrows, 8);
  for (i = 0; i < v.A->nrows; i++)
    if (v.aggregate[i] >= 0 && v.aggregate[i] < v.P->ncols) cpt[v.aggregate[i]] = (int32_t)i;
  for (i = 0; i < v.A->nrows; i++) {
    const int32_t c = v.aggregate[i];
    double off = 0, di = 0, sum = 0;
    int strong = 0, strong_c = 0, opposite = 1;
    if (c >= 0) {
      assert_int_equal(c, next++);
      assert_int_equal(v.P->row_ptr[i + 1] - v.P->row_ptr[i], 1);
      assert_int_equal(v.P->col_idx[v.P->row_ptr[i]], c);
      assert_true(v.P->val.d[v.P->row_ptr[i]] == 1.0);
      continue;
    }
    assert_int_equal(c, -1);
    for (k = v.A->row_ptr[i]; k < v.A->row_ptr[i + 1]; k++) {
      const int s = rs_strong(v.A, i, k, theta);
      if (v.A->col_idx[k] == i) di = v.A->val.d[k];
      else off += v.A->val.d[k];
      strong |= s;
      strong_c |= s && v.aggregate[v.A->col_idx[k]] >= 0;
    }
    for (k = v.A->row_ptr[i]; k < v.A->row_ptr[i + 1]; k++)
      if (v.A->col_idx[k] != i && v.A->val.d[k] * di >= 0) opposite = 0;
    if (strong && !strong_c) fail_msg("level %d: F row %lld has strong dependencies but no strong C neighbour", l,
                                      (long long)i);
    lonely += !strong;
    assert_true(!strong || v.P->row_ptr[i + 1] > v.P->row_ptr[i]);
    if (o->rs_interp == SPX_AMG_RS_EXTENDED_I) {
      check_ext_row(&v, l, i, theta, o, cpt, opposite && strong, inset, w);
      continue;
    }
    for (q = v.P->row_ptr[i]; q < v.P->row_ptr[i + 1]; q++) { /* each column a strong C neighbour */
      int found = 0;
      for (k = v.A->row_ptr[i]; k < v.A->row_ptr[i + 1]; k++)
        found |= v.aggregate[v.A->col_idx[k]] == v.P->col_idx[q] && rs_strong(v.A, i, k, theta);
      if (!found) fail_msg("level %d: row %lld interpolates from coarse row %d, not a strong C neighbour", l,
                           (long long)i, v.P->col_idx[q]);
      sum += v.P->val.d[q];
    }
    if (opposite && strong && !(fabs(sum + off / di) <= 1e-12 * fabs(off / di)))
      fail_msg("level %d: row %lld's weights sum to %.17g, not %.17g", l, (long long)i, sum, -off / di);
  }
  assert_int_equal(next, v.P->ncols);
  free(cpt);
  free(inset);
  free(w);
  return lonely;
}

/* The report's text and JSON name the interpolation. */
static void check_rs_report(spx_amg *m, spx_amg_rs_interp interp) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(spx_amg_report_print(spx_amg_report_of(m), f, 0), SPX_OK);
  assert_int_equal(spx_amg_report_print(spx_amg_report_of(m), f, 1), SPX_OK);
  fclose(f);
  assert_non_null(strstr(buf, interp ? "extended+i interpolation" : "direct interpolation"));
  assert_non_null(strstr(buf, interp ? "\"rs_interp\": \"ext+i\"" : "\"rs_interp\": \"direct\""));
  free(buf);
}

/* RS convergence on Poisson, with either interpolation: two-grid (max_levels 2) and multilevel
 * V-cycle factors under bounds on 2-D 5-point 64^2 and 3-D 7-point 20^3 (PMIS: weaker than SA's
 * there, so the bounds are looser than test_smoothers'), AMG-PCG under 20 iterations, every
 * level's split and P valid (check_rs_level), the report's coarsening and interpolation, and the
 * Galerkin operators P^T A P on a small 3-D problem. Extended+i's multilevel factor on 3-D is
 * below direct's (the distance-two interpolation's point). */
static void test_rs_poisson(void **state) {
  static const double two_grid[2] = {0.5, 0.4}, multi[2] = {0.75, 0.55};
  double f3[2] = {0, 0};
  int e;
  (void)state;
  for (e = 0; e < 4; e++) {
    const int k = e % 2, ext = e / 2;
    spx_csr *a = k ? NULL : poisson2d(64);
    spx_amg_options o = rs_options();
    spx_amg *m2, *ml;
    double *b, f2, fl;
    int64_t c2, cl, it;
    int l;
    const spx_amg_report *r;
    o.rs_interp = ext ? SPX_AMG_RS_EXTENDED_I : SPX_AMG_RS_DIRECT;
    if (k) assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
    b = rand_vec(a->nrows);
    o.coarse_size = 50;
    ml = amg_make(NULL, a, &o);
    o.max_levels = 2;
    o.dense_max = 8000;
    m2 = amg_make(NULL, a, &o);
    r = spx_amg_report_of(ml);
    assert_int_equal(r->coarsening, SPX_AMG_RS);
    assert_int_equal(spx_amg_report_of(m2)->levels, 2);
    assert_true(r->levels >= 3);
    assert_int_equal(r->rs_interp, o.rs_interp);
    check_rs_report(ml, o.rs_interp);
    for (l = 0; l + 1 < r->levels; l++) {
      check_rs_level(ml, l, o.rs_theta, &o);
      assert_true(r->level[l].p_cols == r->level[l + 1].rows && r->level[l].omega == 0);
    }
    f2 = cycle_factor(m2, a, b, &c2);
    fl = cycle_factor(ml, a, b, &cl);
    if (k) f3[ext] = fl;
    it = pcg(ml, a, spx_amg_plan(ml), b, 1e-8, 0, k ? "rs 3-d" : "rs 2-d");
    print_message("RS %s %s: factor two-grid %.3f (%lld cycles), %d levels %.3f (%lld cycles); operator complexity "
                  "%.3f, grid %.3f; AMG-PCG %lld iterations\n", spx_amg_rs_interp_name(o.rs_interp),
                  k ? "3-D 20^3" : "2-D 64^2", f2, (long long)c2, r->levels, fl, (long long)cl, r->operator_complexity,
                  r->grid_complexity, (long long)it);
    if (!(f2 < two_grid[k]) || !(fl < multi[k]))
      fail_msg("RS factors %.3f (two-grid), %.3f (multilevel) over the bounds %.2f, %.2f", f2, fl, two_grid[k], multi[k]);
    assert_true(it < 20);
    /* distance-two interpolation makes denser coarse operators: its own bound */
    assert_true(r->operator_complexity > 1 && r->operator_complexity < (ext ? 3.5 : 3.0));
    free(b);
    spx_amg_destroy(m2);
    spx_amg_destroy(ml);
    spx_csr_destroy(a);
  }
  print_message("RS 3-D 20^3 V-cycle factors: direct %.3f, ext+i %.3f\n", f3[0], f3[1]);
  if (!(f3[1] < f3[0])) fail_msg("RS ext+i's 3-D factor %.3f is not below direct's %.3f", f3[1], f3[0]);
  for (e = 0; e < 2; e++) {
    spx_csr *a;
    spx_amg_options o = rs_options();
    spx_amg *m;
    assert_int_equal(spx_gen_poisson3d(9, 8, 7, 7, SPX_DOUBLE, &a), SPX_OK);
    o.rs_interp = e ? SPX_AMG_RS_EXTENDED_I : SPX_AMG_RS_DIRECT;
    o.coarse_size = 10;
    m = amg_make(NULL, a, &o);
    check_galerkin(m);
    spx_amg_destroy(m);
    spx_csr_destroy(a);
  }
}

/* The split's rules on matrices with couplings of both signs (a structural matrix, whose rows
 * mix them) and on the anisotropic problem; with truncation off every strong C neighbour is
 * kept (direct: P's F rows as long as their strong C neighbours; extended+i: the formula's
 * weights); a row without strong dependencies (a decoupled row) is an F point that interpolates
 * from none. */
static void rs_split_case(spx_amg_rs_interp interp) {
  spx_csr *s = spx_test_shared("bcsstk08"), *an = aniso(16, 1e-4), *d;
  spx_amg_options o = rs_options();
  spx_amg *m, *ma, *m0, *md;
  spx_amg_level_view v;
  double *b;
  int64_t i, k;
  int l;
  o.rs_interp = interp;
  o.coarse_size = 100;
  m = amg_make(NULL, s, &o);
  ma = amg_make(NULL, an, &o);
  for (l = 0; l + 1 < spx_amg_report_of(m)->levels; l++) check_rs_level(m, l, o.rs_theta, &o);
  for (l = 0; l + 1 < spx_amg_report_of(ma)->levels; l++) check_rs_level(ma, l, o.rs_theta, &o);
  o.rs_trunc = 0;
  o.rs_pmax = 0;
  m0 = amg_make(NULL, s, &o);
  assert_int_equal(spx_amg_level(m0, 0, &v), SPX_OK);
  for (l = 0; l + 1 < spx_amg_report_of(m0)->levels; l++) check_rs_level(m0, l, o.rs_theta, &o);
  for (i = 0; i < v.A->nrows && interp == SPX_AMG_RS_DIRECT; i++) {
    int64_t want = 0;
    if (v.aggregate[i] >= 0) continue;
    for (k = v.A->row_ptr[i]; k < v.A->row_ptr[i + 1]; k++)
      want += rs_strong(v.A, i, k, o.rs_theta) && v.aggregate[v.A->col_idx[k]] >= 0;
    assert_int_equal(v.P->row_ptr[i + 1] - v.P->row_ptr[i], want);
  }
  /* 2-D Poisson with row 5 decoupled (its couplings both ways zeroed, kept as entries) */
  d = poisson2d(32);
  for (i = 0; i < d->nrows; i++)
    for (k = d->row_ptr[i]; k < d->row_ptr[i + 1]; k++)
      if ((i == 5) != (d->col_idx[k] == 5)) d->val.d[k] = 0;
  o.coarse_size = 50;
  md = amg_make(NULL, d, &o);
  assert_int_equal(spx_amg_level(md, 0, &v), SPX_OK);
  assert_int_equal(v.aggregate[5], -1);
  assert_int_equal(v.P->row_ptr[6] - v.P->row_ptr[5], 0);
  assert_true(check_rs_level(md, 0, o.rs_theta, &o) >= 1);
  b = rand_vec(d->nrows);
  assert_true(pcg(md, d, spx_amg_plan(md), b, 1e-8, 0, "rs decoupled row") < 30);
  free(b);
  spx_amg_destroy(m);
  spx_amg_destroy(ma);
  spx_amg_destroy(m0);
  spx_amg_destroy(md);
  spx_csr_destroy(s);
  spx_csr_destroy(an);
  spx_csr_destroy(d);
}

/* rs_split_case with each interpolation (extended+i: truncation off gives exactly the formula's
 * weights, check_ext_row). */
static void test_rs_split(void **state) {
  (void)state;
  rs_split_case(SPX_AMG_RS_DIRECT);
  rs_split_case(SPX_AMG_RS_EXTENDED_I);
}

/* The split and the whole hierarchy (every level's A, P, R and split) are the same bit for bit with
 * one thread and with several (rows in parallel past 16384: 36^3), and run to run; with either
 * interpolation. */
/* A hierarchy of a made with `threads` OpenMP threads (0: as many as there are; at least `least`
 * where there are fewer), the thread count restored after. */
static spx_amg *amg_at_threads(const spx_csr *a, const spx_amg_options *o, int threads, int least) {
  spx_amg *m;
#if defined(_OPENMP)
  const int had = omp_get_max_threads();
  omp_set_num_threads(threads ? threads : had < least ? least : had);
  m = amg_make(NULL, a, o);
  omp_set_num_threads(had);
#else
  (void)threads;
  (void)least;
  m = amg_make(NULL, a, o);
#endif
  return m;
}

static void rs_threads_case(spx_amg_rs_interp interp) {
  spx_csr *a;
  spx_amg_options o = rs_options();
  spx_amg *m1, *m2, *m3;
  o.rs_interp = interp;
  assert_int_equal(spx_gen_poisson3d(36, 36, 36, 7, SPX_DOUBLE, &a), SPX_OK);
  m1 = amg_make(NULL, a, &o);
  m2 = amg_at_threads(a, &o, 1, 1);
  m3 = amg_at_threads(a, &o, 0, 3);
  assert_true(spx_amg_report_of(m1)->levels >= 3);
  same_hierarchy(m1, m2);
  same_hierarchy(m1, m3);
  spx_amg_destroy(m1);
  spx_amg_destroy(m2);
  spx_amg_destroy(m3);
  spx_csr_destroy(a);
}

/* Extended+i on a structural matrix (couplings of both signs; coarse levels of few long rows, also
 * shared among threads): the same hierarchy with one thread and with several, with the cap and
 * truncation and without (long rows of P through the threads' buffers). */
static void rs_threads_ext_shared(void) {
  spx_csr *a = spx_test_shared("bcsstk16");
  int e;
  for (e = 0; e < 2; e++) {
    spx_amg_options o = rs_options();
    spx_amg *m1, *m2;
    o.rs_interp = SPX_AMG_RS_EXTENDED_I;
    o.rs_pmax = e ? 0 : o.rs_pmax;
    o.rs_trunc = e ? 0 : o.rs_trunc;
    m1 = amg_at_threads(a, &o, 1, 1);
    m2 = amg_at_threads(a, &o, 0, 2);
    assert_true(spx_amg_report_of(m1)->levels >= 3);
    same_hierarchy(m1, m2);
    spx_amg_destroy(m1);
    spx_amg_destroy(m2);
  }
  spx_csr_destroy(a);
}

static void test_rs_threads(void **state) {
  (void)state;
  rs_threads_case(SPX_AMG_RS_DIRECT);
  rs_threads_case(SPX_AMG_RS_EXTENDED_I);
  rs_threads_ext_shared();
}

/* RS-AMG-PCG on shared SPD matrices (a power network and structural ones) converges to 1e-8 in
 * fewer than half CG's iterations. */
static void test_rs_shared(void **state) {
  static const char *const names[] = {"1138_bus", "bcsstk08", "bcsstk16"};
  size_t k;
  (void)state;
  for (k = 0; k < sizeof names / sizeof *names; k++) {
    spx_csr *a = spx_test_shared(names[k]);
    spx_amg_options o = rs_options();
    spx_amg *m = amg_make(NULL, a, &o);
    double *b = rand_vec(a->nrows);
    int64_t it_amg = pcg(m, a, spx_amg_plan(m), b, 1e-8, 0, names[k]), it_cg = pcg(NULL, a, spx_amg_plan(m), b, 1e-8, 0,
                                                                                  names[k]);
    print_message("RS %-9s %5lld rows, %d levels, operator complexity %.3f: AMG-PCG %lld iterations, CG %lld\n",
                  names[k], (long long)a->nrows, spx_amg_report_of(m)->levels,
                  spx_amg_report_of(m)->operator_complexity, (long long)it_amg, (long long)it_cg);
    assert_true(spx_amg_report_of(m)->levels >= 2);
    if (!(2 * it_amg < it_cg)) fail_msg("%s: RS AMG-PCG %lld iterations, CG %lld", names[k], (long long)it_amg,
                                        (long long)it_cg);
    free(b);
    spx_amg_destroy(m);
    spx_csr_destroy(a);
  }
}

/* spx_amg_update with RS: for 2a (an exact scaling: the same strength, split and P) the hierarchy
 * a fresh setup of 2a gives, bit for bit, and the same cycle; for perturbed values the split and
 * P's pattern kept (the same arrays), P's values made again (the interpolation of the new values:
 * check_rs_level's rules), the Galerkin operators P^T A_new P, and AMG-PCG within 3 iterations of
 * a fresh setup's. */
static void rs_update_case(spx_amg_rs_interp interp) {
  spx_csr *a, *a2, *a3;
  spx_amg_options o = rs_options();
  spx_amg *m, *f2, *f3;
  spx_amg_level_view v0, v1;
  double *b, *x1, *x2, p0;
  int64_t it_u, it_f, nnz0;
  o.rs_interp = interp;
  assert_int_equal(spx_gen_poisson3d(10, 9, 8, 7, SPX_DOUBLE, &a), SPX_OK);
  a2 = revalue(a, 2.0);
  a3 = revalue(a, 0);
  b = rand_vec(a->nrows);
  x1 = calloc((size_t)a->nrows, 8);
  x2 = calloc((size_t)a->nrows, 8);
  o.coarse_size = 10;
  m = amg_make(NULL, a, &o);
  f2 = amg_make(NULL, a2, &o);
  assert_int_equal(spx_amg_level(m, 0, &v0), SPX_OK);
  nnz0 = v0.P->nnz;
  if (spx_amg_update(m, a2) != SPX_OK) fail_msg("update: %s", spx_last_error());
  same_hierarchy(m, f2);
  assert_int_equal(spx_amg_cycle(m, b, x1), SPX_OK);
  assert_int_equal(spx_amg_cycle(f2, b, x2), SPX_OK);
  if (memcmp(x1, x2, (size_t)a->nrows * 8)) fail_msg("%s", "RS: a cycle after the update differs from a fresh setup's");
  p0 = v0.P->val.d[v0.P->nnz - 1];
  if (spx_amg_update(m, a3) != SPX_OK) fail_msg("update: %s", spx_last_error());
  assert_int_equal(spx_amg_level(m, 0, &v1), SPX_OK);
  assert_ptr_equal(v1.aggregate, v0.aggregate);
  assert_ptr_equal(v1.P, v0.P);
  assert_int_equal(v1.P->nnz, nnz0);
  assert_true(v1.P->val.d[v1.P->nnz - 1] != p0 || v1.aggregate[v1.A->nrows - 1] >= 0);
  check_rs_level(m, 0, o.rs_theta * 0.5, &o); /* the perturbation moves strengths: a looser threshold */
  check_galerkin(m);
  f3 = amg_make(NULL, a3, &o);
  it_u = pcg(m, a3, spx_amg_plan(m), b, 1e-8, 0, "rs updated perturbed");
  it_f = pcg(f3, a3, spx_amg_plan(f3), b, 1e-8, 0, "rs fresh perturbed");
  print_message("RS %s update: perturbed AMG-PCG %lld iterations (fresh setup %lld)\n", spx_amg_rs_interp_name(interp), (long long)it_u, (long long)it_f);
  assert_true(it_u <= it_f + 3);
  assert_int_equal(spx_amg_report_of(m)->updates, 2);
  free(b);
  free(x1);
  free(x2);
  spx_amg_destroy(m);
  spx_amg_destroy(f2);
  spx_amg_destroy(f3);
  spx_csr_destroy(a);
  spx_csr_destroy(a2);
  spx_csr_destroy(a3);
}

static void test_rs_update(void **state) {
  (void)state;
  rs_update_case(SPX_AMG_RS_DIRECT);
  rs_update_case(SPX_AMG_RS_EXTENDED_I);
}

/* The options: defaults SA (coarsening 0) with rs_theta 0.25, rs_trunc 0.2, rs_interp direct and
 * rs_pmax 4; a bad rs_theta, rs_trunc, coarsening, rs_interp or rs_pmax fails with
 * SPX_INVALID_ARGUMENT naming the option, nothing leaked; the names parse both ways. */
static void test_rs_options(void **state) {
  static const double bad_theta[] = {0, 1, -0.5, NAN}, bad_trunc[] = {-0.1, 1, NAN};
  static const int bad_pmax[] = {-1, SPX_AMG_RS_PMAX_MAX + 1};
  spx_csr *a;
  spx_amg_options o;
  spx_amg_coarsening c = SPX_AMG_SA;
  spx_amg_rs_interp ri = SPX_AMG_RS_DIRECT;
  size_t k;
  (void)state;
  spx_amg_options_default(&o);
  assert_int_equal(o.coarsening, SPX_AMG_SA);
  assert_true(o.rs_theta == 0.25 && o.rs_trunc == 0.2);
  assert_true(o.rs_interp == SPX_AMG_RS_DIRECT && o.rs_pmax == 4);
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  for (k = 0; k < sizeof bad_theta / sizeof *bad_theta; k++) {
    o = rs_options();
    o.rs_theta = bad_theta[k];
    expect_fail(a, &o, SPX_INVALID_ARGUMENT, "rs_theta");
  }
  for (k = 0; k < sizeof bad_trunc / sizeof *bad_trunc; k++) {
    o = rs_options();
    o.rs_trunc = bad_trunc[k];
    expect_fail(a, &o, SPX_INVALID_ARGUMENT, "rs_trunc");
  }
  o = rs_options();
  o.coarsening = (spx_amg_coarsening)7;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "coarsening 7");
  o = rs_options();
  o.rs_interp = (spx_amg_rs_interp)5;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "rs_interp 5");
  for (k = 0; k < sizeof bad_pmax / sizeof *bad_pmax; k++) {
    o = rs_options();
    o.rs_interp = SPX_AMG_RS_EXTENDED_I;
    o.rs_pmax = bad_pmax[k];
    expect_fail(a, &o, SPX_INVALID_ARGUMENT, "rs_pmax");
  }
  assert_int_equal(spx_amg_rs_interp_parse("EXT+I", &ri), SPX_OK);
  assert_int_equal(ri, SPX_AMG_RS_EXTENDED_I);
  ri = SPX_AMG_RS_DIRECT;
  assert_int_equal(spx_amg_rs_interp_parse("extended", &ri), SPX_OK);
  assert_int_equal(ri, SPX_AMG_RS_EXTENDED_I);
  assert_int_equal(spx_amg_rs_interp_parse("direct", &ri), SPX_OK);
  assert_int_equal(ri, SPX_AMG_RS_DIRECT);
  assert_int_equal(spx_amg_rs_interp_parse("ff1", &ri), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "'ff1'"));
  assert_string_equal(spx_amg_rs_interp_name(SPX_AMG_RS_EXTENDED_I), "ext+i");
  assert_string_equal(spx_amg_rs_interp_name((spx_amg_rs_interp)9), "unknown");
  assert_int_equal(spx_amg_coarsening_parse("RS", &c), SPX_OK);
  assert_int_equal(c, SPX_AMG_RS);
  assert_int_equal(spx_amg_coarsening_parse("sa", &c), SPX_OK);
  assert_int_equal(c, SPX_AMG_SA);
  assert_int_equal(spx_amg_coarsening_parse("cljp", &c), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "'cljp'"));
  assert_string_equal(spx_amg_coarsening_name(SPX_AMG_RS), "rs");
  assert_string_equal(spx_amg_coarsening_name((spx_amg_coarsening)9), "unknown");
  spx_csr_destroy(a);
}

/* ---- Cycles ------------------------------------------------------------------------------------- */
/* V, W and F on 3-D Poisson (four levels and more): each converges standalone with a factor below
 * 0.25 (the V-cycle's is about 0.22 here, where four levels add up their errors), the W-cycle's
 * factor at most the V-cycle's; AMG-PCG with W and AMG-BiCGSTAB with F converge;
 * the names parse and a bad cycle is refused. */
static void test_cycles(void **state) {
  spx_csr *a;
  spx_amg_options o;
  double *b, f[SPX_AMG_CYCLE_COUNT];
  spx_amg_cycle_type c;
  int k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(24, 22, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  b = rand_vec(a->nrows);
  for (k = 0; k < SPX_AMG_CYCLE_COUNT; k++) {
    spx_amg *m;
    int64_t cycles, it;
    spx_amg_options_default(&o);
    o.cycle = (spx_amg_cycle_type)k;
    o.coarse_size = 30;
    m = amg_make(NULL, a, &o);
    assert_true(spx_amg_report_of(m)->levels >= 4);
    assert_int_equal(spx_amg_report_of(m)->cycle, k);
    f[k] = cycle_factor(m, a, b, &cycles);
    it = pcg(m, a, spx_amg_plan(m), b, 1e-8, k == SPX_AMG_CYCLE_F, spx_amg_cycle_type_name(o.cycle));
    print_message("%s-cycle: factor %.4f (%lld cycles), AMG-%s %lld iterations\n", spx_amg_cycle_type_name(o.cycle),
                  f[k], (long long)cycles, k == SPX_AMG_CYCLE_F ? "BiCGSTAB" : "PCG", (long long)it);
    assert_true(f[k] < 0.25);
    spx_amg_destroy(m);
  }
  assert_true(f[SPX_AMG_CYCLE_W] <= f[SPX_AMG_CYCLE_V]);
  assert_int_equal(spx_amg_cycle_type_parse("W", &c), SPX_OK);
  assert_int_equal(c, SPX_AMG_CYCLE_W);
  assert_int_equal(spx_amg_cycle_type_parse("x", &c), SPX_INVALID_ARGUMENT);
  assert_string_equal(spx_amg_cycle_type_name(SPX_AMG_CYCLE_F), "f");
  spx_amg_options_default(&o);
  o.cycle = (spx_amg_cycle_type)7;
  expect_fail(a, &o, SPX_INVALID_ARGUMENT, "cycle 7");
  free(b);
  spx_csr_destroy(a);
}

/* The amg kernels (the cycle's and the setup's) compile for sm_80 and sm_90 (NVRTC only, no GPU). */
static void test_kernels_compile(void **state) {
  static const char *const archs[] = {"sm_80", "sm_90"};
  const char *defs[2] = {"SPX_VALUE_T=double", "SPX_BLOCK=256"};
  int a, origin;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  for (a = 0; a < 2; a++) {
    if (spx_jit_compile_only("amg", 2, defs, archs[a], &origin) != SPX_OK)
      fail_msg("amg %s: %s", archs[a], spx_last_error());
    if (spx_jit_compile_only("amg_setup", 1, defs + 1, archs[a], &origin) != SPX_OK)
      fail_msg("amg_setup %s: %s", archs[a], spx_last_error());
  }
}

/* ---- GPU ---------------------------------------------------------------------------------------- */
static spx_context *gpu_ctx(void) {
  spx_context *g = NULL;
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  if (spx_device_count() < 1 || spx_context_create(&co, &g) != SPX_OK) {
    spx_clear_error();
    return NULL;
  }
  return g;
}

/* AMG-PCG on the GPU with device vectors: x (malloc'd, on the host) and the iterations. */
static double *gpu_pcg(spx_context *g, spx_amg *m, const spx_csr *a, const double *b, int host_vectors, int64_t *it) {
  spx_solve_options o;
  spx_solve_report r;
  int64_t n = a->nrows;
  size_t bytes = (size_t)n * 8;
  double *x = calloc((size_t)n, 8);
  spx_devptr db = 0, dx = 0;
  spx_status s;
  spx_solve_options_default(&o);
  o.precond = spx_amg_precond;
  o.precond_data = m;
  o.host_vectors = host_vectors;
  if (host_vectors) s = spx_solve_cg(spx_amg_plan(m), b, x, &o, &r);
  else {
    assert_int_equal(spx_device_alloc(g, bytes, &db), SPX_OK);
    assert_int_equal(spx_device_alloc(g, bytes, &dx), SPX_OK);
    assert_int_equal(spx_device_upload(g, db, b, bytes), SPX_OK);
    assert_int_equal(spx_device_memset(g, dx, 0, bytes), SPX_OK);
    s = spx_solve_cg(spx_amg_plan(m), (const void *)(uintptr_t)db, (void *)(uintptr_t)dx, &o, &r);
    assert_int_equal(spx_device_download(g, x, dx, bytes), SPX_OK);
    spx_device_free(g, db);
    spx_device_free(g, dx);
  }
  if (s != SPX_OK) fail_msg("gpu amg-pcg: %s (%s)", spx_last_error(), r.message);
  assert_true(rel_resid(a, b, x) <= 3e-8);
  *it = r.iterations;
  return x;
}

/* The same hierarchy settings on the GPU and the host (the MIS(2) rule on both: AUTO would take
 * the greedy one on the host): the same levels; AMG-PCG within +-2 of the host's iterations, under
 * 20 at 32^3, with the tuner's formats per level. Two GPU solves (device and host vectors) give the
 * same bits where every level's plan runs a deterministic kernel (forced CSR here: COO, HYB and the
 * load-balanced CSR, which the tuner may pick, add with atomics). */
static void test_gpu_amg_pcg(void **state) {
  static const spx_amg_smoother sms[] = {SPX_AMG_CHEBYSHEV, SPX_AMG_JACOBI, SPX_AMG_GS};
  spx_context *g = gpu_ctx();
  spx_csr *a;
  double *b;
  size_t k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(32, 32, 32, 7, SPX_DOUBLE, &a), SPX_OK);
  b = rand_vec(a->nrows);
  for (k = 0; k < sizeof sms / sizeof *sms; k++) {
    spx_amg_options o;
    spx_plan_options po;
    spx_amg *mh, *mg, *mc;
    int64_t ith, itg, itc, itc2;
    double *x1, *x2;
    spx_amg_options_default(&o);
    o.smoother = sms[k];
    o.aggregation = SPX_AMG_AGG_MIS2;
    mh = amg_make(NULL, a, &o);
    mg = amg_make(g, a, &o);
    assert_int_equal(spx_amg_report_of(mg)->levels, spx_amg_report_of(mh)->levels);
    ith = pcg(mh, a, spx_amg_plan(mh), b, 1e-8, 0, "host");
    free(gpu_pcg(g, mg, a, b, 0, &itg));
    print_message("GPU %s: AMG-PCG %lld iterations (host %lld)\n", spx_amg_smoother_name(sms[k]), (long long)itg,
                  (long long)ith);
    if (k == 0) spx_amg_report_print(spx_amg_report_of(mg), stdout, 0);
    assert_true(itg >= ith - 2 && itg <= ith + 2 && itg < 20);
    spx_plan_options_default(&po);
    po.force = "csr";
    po.eager = 1;
    o.plan = &po;
    mc = amg_make(g, a, &o);
    x1 = gpu_pcg(g, mc, a, b, 0, &itc);
    x2 = gpu_pcg(g, mc, a, b, 1, &itc2);
    assert_true(itc >= ith - 2 && itc <= ith + 2);
    assert_int_equal(itc, itc2);
    if (memcmp(x1, x2, (size_t)a->nrows * 8)) fail_msg("%s: two GPU solves differ", spx_amg_smoother_name(sms[k]));
    free(x1);
    free(x2);
    spx_amg_destroy(mh);
    spx_amg_destroy(mg);
    spx_amg_destroy(mc);
  }
  free(b);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* One V-cycle of every smoother on the GPU against the host's (the same hierarchy): the same x up to
 * rounding; and the standalone iteration on the GPU (host vectors) converges in the host's cycles
 * +-1, and AMG-BiCGSTAB converges. */
static void test_gpu_cycle(void **state) {
  spx_context *g = gpu_ctx();
  spx_csr *a;
  double *b;
  int64_t n;
  size_t k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(20, 18, 16, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  b = rand_vec(n);
  for (k = 0; k < sizeof smoother_cases / sizeof *smoother_cases; k++) {
    const smoother_case *c = &smoother_cases[k];
    spx_amg_options o;
    spx_amg *mh, *mg;
    spx_solve_options so;
    spx_solve_report rh, rg;
    double *xh = calloc((size_t)n, 8), *xg = calloc((size_t)n, 8), err;
    spx_devptr db = 0, dx = 0;
    spx_amg_options_default(&o);
    o.smoother = c->sm;
    o.relaxed_coloring = c->relaxed;
    o.coloring = c->wp ? SPX_AMG_COLOR_WELSH_POWELL : SPX_AMG_COLOR_GREEDY;
    o.coarse_size = 50;
    mh = amg_make(NULL, a, &o);
    mg = amg_make(g, a, &o);
    assert_int_equal(spx_amg_cycle(mh, b, xh), SPX_OK);
    assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &db), SPX_OK);
    assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &dx), SPX_OK);
    assert_int_equal(spx_device_upload(g, db, b, (size_t)n * 8), SPX_OK);
    assert_int_equal(spx_device_memset(g, dx, 0, (size_t)n * 8), SPX_OK);
    assert_int_equal(spx_amg_cycle(mg, (const void *)(uintptr_t)db, (void *)(uintptr_t)dx), SPX_OK);
    assert_int_equal(spx_device_download(g, xg, dx, (size_t)n * 8), SPX_OK);
    err = spx_test_relerr(xg, xh, n);
    if (!(err < 1e-10)) fail_msg("%s: one GPU V-cycle differs from the host's by %.3g", c->name, err);
    spx_solve_options_default(&so);
    so.host_vectors = 1;
    memset(xh, 0, (size_t)n * 8);
    memset(xg, 0, (size_t)n * 8);
    assert_int_equal(spx_amg_solve(mh, b, xh, &so, &rh), SPX_OK);
    if (spx_amg_solve(mg, b, xg, &so, &rg) != SPX_OK) fail_msg("%s: %s", c->name, rg.message);
    assert_true(rg.iterations >= rh.iterations - 1 && rg.iterations <= rh.iterations + 1);
    assert_true(rel_resid(a, b, xg) <= 1.01e-8);
    if (k == 0) {
      spx_solve_options_default(&so);
      so.host_vectors = 1;
      so.precond = spx_amg_precond;
      so.precond_data = mg;
      memset(xg, 0, (size_t)n * 8);
      assert_int_equal(spx_solve_bicgstab(spx_amg_plan(mg), b, xg, &so, &rg), SPX_OK);
      assert_true(rel_resid(a, b, xg) <= 3e-8);
    }
    spx_device_free(g, db);
    spx_device_free(g, dx);
    free(xh);
    free(xg);
    spx_amg_destroy(mh);
    spx_amg_destroy(mg);
  }
  free(b);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* AMG-PCG on the shared SPD matrices on the GPU: converges in the host's iterations +-2. */
static void test_gpu_shared_spd(void **state) {
  static const char *const names[] = {"1138_bus", "bcsstk16"};
  spx_context *g = gpu_ctx();
  size_t k;
  (void)state;
  if (!g) skip();
  for (k = 0; k < sizeof names / sizeof *names; k++) {
    spx_csr *a = spx_test_shared(names[k]);
    spx_amg *mh = amg_make(NULL, a, NULL), *mg = amg_make(g, a, NULL);
    double *b = rand_vec(a->nrows), *x;
    int64_t ith = pcg(mh, a, spx_amg_plan(mh), b, 1e-8, 0, names[k]), itg;
    x = gpu_pcg(g, mg, a, b, 1, &itg);
    print_message("GPU %s: AMG-PCG %lld iterations (host %lld)\n", names[k], (long long)itg, (long long)ith);
    assert_true(itg >= ith - 2 && itg <= ith + 2);
    free(x);
    free(b);
    spx_amg_destroy(mh);
    spx_amg_destroy(mg);
    spx_csr_destroy(a);
  }
  spx_context_destroy(g);
}

/* Setup reuse and W/F cycles on the GPU, gs and chebyshev (the update re-uploads the inverse
 * diagonals and the gs slices' values): after an update to 2a a cycle gives the x a fresh GPU setup
 * of 2a gives, bit for bit (plans forced to CSR: deterministic kernels); after a perturbed update
 * AMG-PCG converges within 2 of the host's updated hierarchy; one W- and one F-cycle match the
 * host's to rounding. */
static void test_gpu_amg_update(void **state) {
  static const spx_amg_smoother sms[] = {SPX_AMG_GS, SPX_AMG_CHEBYSHEV};
  spx_context *g = gpu_ctx();
  spx_csr *a, *a2, *a3;
  double *b;
  int64_t n;
  size_t k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(20, 18, 16, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  a2 = revalue(a, 2.0);
  a3 = revalue(a, 0);
  b = rand_vec(n);
  for (k = 0; k < sizeof sms / sizeof *sms; k++) {
    spx_amg_options o;
    spx_plan_options po;
    spx_amg *mg, *fg, *mh;
    double *x1, *x2, *xh = calloc((size_t)n, 8);
    int64_t itg, ith, c;
    spx_amg_options_default(&o);
    o.smoother = sms[k];
    o.coarse_size = 50;
    spx_plan_options_default(&po);
    po.force = "csr";
    po.eager = 1;
    o.plan = &po;
    mg = amg_make(g, a, &o);
    fg = amg_make(g, a2, &o);
    if (spx_amg_update(mg, a2) != SPX_OK) fail_msg("gpu update: %s", spx_last_error());
    x1 = gpu_pcg(g, mg, a2, b, 1, &itg);
    x2 = gpu_pcg(g, fg, a2, b, 1, &ith);
    assert_int_equal(itg, ith);
    if (memcmp(x1, x2, (size_t)n * 8)) fail_msg("%s: GPU AMG-PCG after an update differs from a fresh setup's",
                                               spx_amg_smoother_name(sms[k]));
    free(x1);
    free(x2);
    o.plan = NULL;
    mh = amg_make(NULL, a, &o);
    assert_int_equal(spx_amg_update(mh, a3), SPX_OK);
    assert_int_equal(spx_amg_update(mg, a3), SPX_OK);
    ith = pcg(mh, a3, spx_amg_plan(mh), b, 1e-8, 0, "host updated");
    free(gpu_pcg(g, mg, a3, b, 1, &itg));
    assert_true(itg >= ith - 2 && itg <= ith + 2);
    spx_amg_destroy(mh);
    spx_amg_destroy(mg);
    spx_amg_destroy(fg);
    for (c = SPX_AMG_CYCLE_W; c <= SPX_AMG_CYCLE_F; c++) { /* one cycle, host vs GPU */
      spx_devptr db = 0, dx = 0;
      double *xg = calloc((size_t)n, 8), err;
      o.cycle = (spx_amg_cycle_type)c;
      mh = amg_make(NULL, a, &o);
      mg = amg_make(g, a, &o);
      memset(xh, 0, (size_t)n * 8);
      assert_int_equal(spx_amg_cycle(mh, b, xh), SPX_OK);
      assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &db), SPX_OK);
      assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &dx), SPX_OK);
      assert_int_equal(spx_device_upload(g, db, b, (size_t)n * 8), SPX_OK);
      assert_int_equal(spx_device_memset(g, dx, 0, (size_t)n * 8), SPX_OK);
      assert_int_equal(spx_amg_cycle(mg, (const void *)(uintptr_t)db, (void *)(uintptr_t)dx), SPX_OK);
      assert_int_equal(spx_device_download(g, xg, dx, (size_t)n * 8), SPX_OK);
      err = spx_test_relerr(xg, xh, n);
      if (!(err < 1e-10)) fail_msg("%s %s-cycle: GPU differs from the host by %.3g", spx_amg_smoother_name(sms[k]),
                                   spx_amg_cycle_type_name(o.cycle), err);
      spx_device_free(g, db);
      spx_device_free(g, dx);
      free(xg);
      spx_amg_destroy(mh);
      spx_amg_destroy(mg);
    }
    free(xh);
  }
  free(b);
  spx_csr_destroy(a);
  spx_csr_destroy(a2);
  spx_csr_destroy(a3);
  spx_context_destroy(g);
}

/* ---- Setup on the GPU ----------------------------------------------------------------------------- */
/* A hierarchy on the GPU with o (NULL: defaults) whose levels of at least gpu_rows rows form P, R
 * and A_c on the GPU (0: all on the host), every plan forced to CSR: deterministic kernels, and the
 * same format on both sides whatever the tuner would pick, so that only the setup's side differs. */
static spx_amg *gpu_setup_make(spx_context *g, const spx_csr *a, const spx_amg_options *o, int64_t gpu_rows) {
  static spx_plan_options po;
  spx_amg_options oo;
  if (o) oo = *o;
  else spx_amg_options_default(&oo);
  spx_plan_options_default(&po);
  po.force = "csr";
  po.eager = 1;
  oo.plan = &po;
  oo.gpu_setup_rows = gpu_rows;
  return amg_make(g, a, &oo);
}

/* got has want's pattern exactly (row pointers, columns) and its values within tol times want's
 * largest |value|. */
static void same_pattern_close(const spx_csr *got, const spx_csr *want, double tol, const char *what, int l) {
  double mx = 0, worst = 0;
  int64_t k;
  if (got->nrows != want->nrows || got->ncols != want->ncols || got->nnz != want->nnz)
    fail_msg("%s of level %d: %lld x %lld with %lld entries; the host's %lld x %lld with %lld", what, l,
             (long long)got->nrows, (long long)got->ncols, (long long)got->nnz, (long long)want->nrows,
             (long long)want->ncols, (long long)want->nnz);
  if (memcmp(got->row_ptr, want->row_ptr, (size_t)(got->nrows + 1) * 8) ||
      memcmp(got->col_idx, want->col_idx, (size_t)got->nnz * 4))
    fail_msg("%s of level %d: the pattern differs from the host's", what, l);
  for (k = 0; k < want->nnz; k++) {
    mx = fmax(mx, fabs(want->val.d[k]));
    worst = fmax(worst, fabs(got->val.d[k] - want->val.d[k]));
  }
  if (!(worst <= tol * mx))
    fail_msg("%s of level %d: values differ from the host's by %.3g (tolerance %.3g of the largest, %.3g)", what, l,
             worst, tol, mx);
}

/* Level l's steps by the host twins from the GPU hierarchy's own A (its host copy is the device's,
 * bit for bit): the aggregates and P (with the GPU's omega) must be the GPU's exactly, and the GPU's
 * omega within 1e-12 of the twin's (rho's sums run per block there). */
static void check_gpu_twins(spx_amg *mg, int l, const char *what) {
  const spx_amg_report *r = spx_amg_report_of(mg);
  spx_amg_level_view v;
  spx_amg_options o;
  double theta, *d, *dF, rho;
  uint8_t *mask;
  int32_t *agg;
  int64_t n, weak, nagg, k;
  spx_csr *P = NULL;
  assert_int_equal(spx_amg_level(mg, l, &v), SPX_OK);
  spx_amg_options_default(&o);
  for (theta = o.theta, k = 0; k < l; k++) theta *= o.theta_decay;
  n = v.A->nrows;
  d = calloc((size_t)n, 8);
  dF = calloc((size_t)n, 8);
  mask = malloc((size_t)v.A->nnz + 1);
  agg = malloc((size_t)n * 4);
  assert_int_equal(spx__amg_diag("test", v.A, l, d), SPX_OK);
  spx__amg_strength(v.A, d, theta, mask, dF, &weak);
  assert_int_equal(weak, r->level[l].weak);
  assert_int_equal(spx__amg_aggregate(v.A, mask, r->level[l].mis2, agg, &nagg), SPX_OK);
  assert_int_equal(nagg, v.P->ncols);
  if (memcmp(agg, v.aggregate, (size_t)n * 4)) fail_msg("%s level %d: the GPU's aggregates are not the twin's", what, l);
  assert_int_equal(spx__amg_rho(v.A, mask, dF, o.power_iters, &rho), SPX_OK);
  if (!(fabs(o.prolong_omega / rho - r->level[l].omega) <= 1e-12 * r->level[l].omega))
    fail_msg("%s level %d: omega %.17g on the GPU, %.17g by the twin", what, l, r->level[l].omega, o.prolong_omega / rho);
  assert_int_equal(spx__amg_prolong(v.A, mask, dF, agg, nagg, r->level[l].omega, &P), SPX_OK);
  assert_int_equal(P->nnz, v.P->nnz);
  if (memcmp(P->row_ptr, v.P->row_ptr, (size_t)(n + 1) * 8) || memcmp(P->col_idx, v.P->col_idx, (size_t)P->nnz * 4) ||
      memcmp(P->val.d, v.P->val.d, (size_t)P->nnz * 8))
    fail_msg("%s level %d: the GPU's P is not the twin's bit for bit", what, l);
  spx_csr_destroy(P);
  free(d); free(dF); free(mask); free(agg);
}

/* The GPU setup's hierarchy mg against the host setup's mh of the same matrix and options (one
 * aggregation rule on both; mg made with gpu_setup_rows gpu_rows, mh with 0). The same levels and
 * aggregates (the strength test reads values equal to rounding, far from its threshold here);
 * every level's A, P and R with the host's patterns exactly and values within 1e-12 of the
 * largest: the products' entries are sums of at most a few hundred terms that cuSPARSE adds in
 * another order, and omega comes from rho's per-block sums, errors of about 1e-14 of the largest,
 * carried to the coarser levels at that size. Each GPU level's aggregates and P are its twins'
 * exactly (check_gpu_twins). R is P^T exactly on either side (a transpose moves values). Each level
 * coarsening with at least gpu_rows rows ran its steps on the GPU (report flags, no fallback note),
 * the others and mh's on the host. */
static void check_gpu_setup(spx_amg *mg, spx_amg *mh, int64_t gpu_rows, const char *what) {
  const spx_amg_report *rg = spx_amg_report_of(mg), *rh = spx_amg_report_of(mh);
  int l, any = 0;
  assert_int_equal(rg->levels, rh->levels);
  if (rg->gpu_note[0]) fail_msg("%s: the GPU setup fell back to the host: %s", what, rg->gpu_note);
  assert_true(rh->gpu_note[0] == 0 && rh->prolong_gpu_ms == 0 && rh->rap_gpu_ms == 0 && rh->aggregate_gpu_ms == 0);
  for (l = 0; l < rg->levels; l++) {
    const spx_amg_level_info *lg = &rg->level[l], *lh = &rh->level[l];
    spx_amg_level_view vg, vh;
    spx_csr *t;
    const int on_gpu = l + 1 < rg->levels && lg->rows >= gpu_rows;
    assert_int_equal(spx_amg_level(mg, l, &vg), SPX_OK);
    assert_int_equal(spx_amg_level(mh, l, &vh), SPX_OK);
    same_pattern_close(vg.A, vh.A, 1e-12, "A", l);
    if (lg->agg_gpu != on_gpu || lg->p_gpu != on_gpu || lg->rap_gpu != on_gpu || lh->agg_gpu || lh->p_gpu ||
        lh->rap_gpu || lh->rho_gpu)
      fail_msg("%s level %d (%lld rows): strength %s, P %s, RAP %s on the GPU; want %s", what, l, (long long)lg->rows,
               lg->agg_gpu ? "" : "not", lg->p_gpu ? "" : "not", lg->rap_gpu ? "" : "not", on_gpu ? "all" : "none");
    any |= on_gpu;
    if (!vg.P) {
      assert_null(vh.P);
      continue;
    }
    assert_int_equal(lg->mis2, lh->mis2);
    assert_memory_equal(vg.aggregate, vh.aggregate, (size_t)vg.A->nrows * 4);
    assert_true(fabs(lg->omega - lh->omega) <= 1e-12 * lh->omega);
    same_pattern_close(vg.P, vh.P, 1e-12, "P", l);
    same_pattern_close(vg.R, vh.R, 1e-12, "R", l);
    assert_int_equal(spx_csr_transpose(vg.P, &t), SPX_OK);
    assert_int_equal(t->nnz, vg.R->nnz);
    if (memcmp(t->row_ptr, vg.R->row_ptr, (size_t)(t->nrows + 1) * 8) ||
        memcmp(t->col_idx, vg.R->col_idx, (size_t)t->nnz * 4) || memcmp(t->val.d, vg.R->val.d, (size_t)t->nnz * 8))
      fail_msg("%s level %d: the GPU's R is not P^T", what, l);
    spx_csr_destroy(t);
    if (on_gpu) check_gpu_twins(mg, l, what);
  }
  assert_true(any && rg->prolong_gpu_ms > 0 && rg->rap_gpu_ms > 0 && rg->strength_gpu_ms > 0 && rg->aggregate_gpu_ms > 0);
  assert_true(rg->prolong_gpu_ms <= rg->prolong_ms && rg->rap_gpu_ms <= rg->rap_ms &&
              rg->strength_gpu_ms <= rg->strength_ms && rg->aggregate_gpu_ms <= rg->aggregate_ms);
}

/* The setup on the GPU (every level that coarsens: gpu_setup_rows 1) against the host's with the
 * same rule, MIS(2) (all on the GPU) and greedy (the strength on the GPU, the greedy pass on the
 * host), on 3-D Poisson, the anisotropic diffusion and a shared SPD matrix (check_gpu_setup), and
 * AMG-PCG on the GPU takes the host setup's iterations exactly. The default gpu_setup_rows (20000)
 * on 32^3 Poisson: level 0 on the GPU, the levels below on the host, as the host's again, and the
 * report says so. The default options (AUTO) there: MIS(2) on level 0, greedy below, and AMG-PCG
 * within 2 iterations of the host's all-greedy hierarchy. */
static void test_gpu_setup(void **state) {
  static const char *const names[] = {"poisson 24^3", "anisotropic 24^3", "bcsstk16", "poisson 32^3 default"};
  spx_context *g = gpu_ctx();
  size_t k;
  int rule;
  (void)state;
  if (!g) skip();
  for (k = 0; k < sizeof names / sizeof *names; k++)
    for (rule = 0; rule < 3; rule++) {
      spx_csr *a = NULL;
      spx_amg_options o;
      spx_amg *mg, *mh;
      double *b, *x;
      int64_t itg, ith, rows = k == 3 ? 20000 : 1;
      char *buf = NULL, what[64];
      size_t len = 0;
      FILE *f;
      if (rule == 2 && k != 3) continue; /* AUTO: the default case only */
      if (k == 0) assert_int_equal(spx_gen_poisson3d(24, 24, 24, 7, SPX_DOUBLE, &a), SPX_OK);
      if (k == 1) a = aniso(24, 1e-4);
      if (k == 2) a = spx_test_shared("bcsstk16");
      if (k == 3) assert_int_equal(spx_gen_poisson3d(32, 32, 32, 7, SPX_DOUBLE, &a), SPX_OK);
      spx_amg_options_default(&o); /* chebyshev: gs's coloring reads which entries are exactly 0, and a sum that
                                      cancels may end exactly 0 on one side and at rounding size on the other */
      o.aggregation = rule == 0 ? SPX_AMG_AGG_MIS2 : rule == 1 ? SPX_AMG_AGG_GREEDY : SPX_AMG_AGG_AUTO;
      snprintf(what, sizeof what, "%s, %s", names[k], spx_amg_aggregation_name(o.aggregation));
      mg = gpu_setup_make(g, a, &o, rows);
      mh = gpu_setup_make(g, a, &o, 0);
      if (rule < 2) check_gpu_setup(mg, mh, rows, what);
      b = rand_vec(a->nrows);
      x = gpu_pcg(g, mg, a, b, 1, &itg);
      free(x);
      x = gpu_pcg(g, mh, a, b, 1, &ith);
      free(x);
      print_message("GPU setup %s: %d levels, strength %.2f, aggregation %.2f, P %.2f and RAP %.2f ms on the GPU of "
                    "%.2f, %.2f, %.2f and %.2f (host setup: %.2f, %.2f, %.2f and %.2f); AMG-PCG %lld iterations (host "
                    "setup %lld)\n", what, spx_amg_report_of(mg)->levels, spx_amg_report_of(mg)->strength_gpu_ms,
                    spx_amg_report_of(mg)->aggregate_gpu_ms, spx_amg_report_of(mg)->prolong_gpu_ms,
                    spx_amg_report_of(mg)->rap_gpu_ms, spx_amg_report_of(mg)->strength_ms,
                    spx_amg_report_of(mg)->aggregate_ms, spx_amg_report_of(mg)->prolong_ms,
                    spx_amg_report_of(mg)->rap_ms, spx_amg_report_of(mh)->strength_ms,
                    spx_amg_report_of(mh)->aggregate_ms, spx_amg_report_of(mh)->prolong_ms,
                    spx_amg_report_of(mh)->rap_ms, (long long)itg, (long long)ith);
      if (rule < 2) assert_int_equal(itg, ith);
      else assert_true(itg <= ith + 2 && spx_amg_report_of(mg)->level[0].mis2 && !spx_amg_report_of(mg)->level[1].mis2);
      f = open_memstream(&buf, &len);
      assert_int_equal(spx_amg_report_print(spx_amg_report_of(mg), f, 0), SPX_OK);
      fclose(f);
      if (!strstr(buf, k == 3 ? "rho_F, P and R on level 0 (" : "rho_F, P and R on level") ||
          !strstr(buf, k == 3 ? "strength and aggregates on level 0 (" : "strength and aggregates on level") ||
          (rule == 2 && !strstr(buf, "aggregates      MIS(2) on level 0, greedy on level")))
        fail_msg("%s: the report says\n%s", what, buf);
      if (k == 3) printf("%s", buf);
      free(buf);
      free(b);
      spx_amg_destroy(mg);
      spx_amg_destroy(mh);
      spx_csr_destroy(a);
    }
  spx_context_destroy(g);
}

/* spx_amg_update of a hierarchy set up on the GPU (every level that coarsens; four levels) runs the
 * products' numeric phases only (cuSPARSE's reuse compute over the kept symbolic state): an update
 * to 2a gives the hierarchy a fresh GPU setup of 2a gives, bit for bit (CSR_ALG_DETERMINITIC; a
 * second fresh setup equals the first too), and the same AMG-PCG x; a perturbed update gives the
 * host-updated hierarchy's operators to rounding and its AMG-PCG iterations exactly; the report
 * counts RAP's GPU time and no prolongation. */
static void test_gpu_setup_update(void **state) {
  spx_context *g = gpu_ctx();
  spx_csr *a, *a2, *a3;
  spx_amg_options o;
  spx_amg *mg, *fg, *fg2, *mh;
  const spx_amg_report *r;
  double *b, *x1, *x2;
  int64_t n, it1, it2, l;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(20, 18, 16, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  a2 = revalue(a, 2.0);
  a3 = revalue(a, 0);
  b = rand_vec(n);
  spx_amg_options_default(&o);
  o.coarse_size = 50;
  o.aggregation = SPX_AMG_AGG_MIS2; /* the host's hierarchy below takes the GPU's rule */
  mg = gpu_setup_make(g, a, &o, 1);
  fg = gpu_setup_make(g, a2, &o, 1);
  fg2 = gpu_setup_make(g, a2, &o, 1);
  assert_true(spx_amg_report_of(mg)->levels >= 3);
  same_hierarchy(fg, fg2);
  if (spx_amg_update(mg, a2) != SPX_OK) fail_msg("gpu setup update: %s", spx_last_error());
  r = spx_amg_report_of(mg);
  assert_int_equal(r->updates, 1);
  assert_true(r->rap_gpu_ms > 0 && r->rap_gpu_ms <= r->rap_ms && r->prolong_gpu_ms == 0 && r->prolong_ms == 0);
  for (l = 0; l + 1 < r->levels; l++) assert_true(r->level[l].p_gpu == 1 && r->level[l].rap_gpu == 1);
  for (l = 1; l < r->levels; l++) /* the smoothers' rho of the updated levels on the GPU (level 0's: A_F = A) */
    if (r->level[l].smoother == SPX_AMG_CHEBYSHEV && (l + 1 < r->levels || !r->coarse_direct)) assert_true(r->level[l].rho_gpu);
  same_hierarchy(mg, fg);
  x1 = gpu_pcg(g, mg, a2, b, 1, &it1);
  x2 = gpu_pcg(g, fg, a2, b, 1, &it2);
  assert_int_equal(it1, it2);
  if (memcmp(x1, x2, (size_t)n * 8)) fail_msg("%s", "AMG-PCG after a GPU update differs from a fresh GPU setup's");
  free(x1);
  free(x2);
  mh = gpu_setup_make(g, a, &o, 0);
  assert_int_equal(spx_amg_update(mh, a3), SPX_OK);
  assert_int_equal(spx_amg_update(mg, a3), SPX_OK);
  for (l = 0; l < r->levels; l++) {
    spx_amg_level_view vg, vh;
    assert_int_equal(spx_amg_level(mg, (int)l, &vg), SPX_OK);
    assert_int_equal(spx_amg_level(mh, (int)l, &vh), SPX_OK);
    same_pattern_close(vg.A, vh.A, 1e-12, "updated A", (int)l);
  }
  x1 = gpu_pcg(g, mg, a3, b, 1, &it1);
  x2 = gpu_pcg(g, mh, a3, b, 1, &it2);
  print_message("GPU setup update: RAP %.3f ms on the GPU of %.3f; perturbed AMG-PCG %lld iterations (host-updated "
                "%lld)\n", spx_amg_report_of(mg)->rap_gpu_ms, spx_amg_report_of(mg)->rap_ms, (long long)it1,
                (long long)it2);
  assert_int_equal(it1, it2);
  assert_int_equal(spx_amg_report_of(mg)->updates, 2);
  free(x1);
  free(x2);
  free(b);
  spx_amg_destroy(mg);
  spx_amg_destroy(fg);
  spx_amg_destroy(fg2);
  spx_amg_destroy(mh);
  spx_csr_destroy(a);
  spx_csr_destroy(a2);
  spx_csr_destroy(a3);
  spx_context_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_poisson_pcg),    cmocka_unit_test(test_bicgstab),
      cmocka_unit_test(test_smoothers),      cmocka_unit_test(test_per_level),
      cmocka_unit_test(test_prolongation),   cmocka_unit_test(test_galerkin),
      cmocka_unit_test(test_strength_twin),  cmocka_unit_test(test_aggregate_twin),
      cmocka_unit_test(test_prolong_twin),   cmocka_unit_test(test_thread_count),
      cmocka_unit_test(test_coloring),       cmocka_unit_test(test_shared_spd),
      cmocka_unit_test(test_coarse),         cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_report),         cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_standalone),     cmocka_unit_test(test_singular),
      cmocka_unit_test(test_update),         cmocka_unit_test(test_update_refused),
      cmocka_unit_test(test_update_time),    cmocka_unit_test(test_cycles),
      cmocka_unit_test(test_rs_poisson),      cmocka_unit_test(test_rs_split),
      cmocka_unit_test(test_rs_threads),      cmocka_unit_test(test_rs_shared),
      cmocka_unit_test(test_rs_update),       cmocka_unit_test(test_rs_options),
      cmocka_unit_test(test_kernels_compile),
      cmocka_unit_test(test_gpu_amg_pcg),    cmocka_unit_test(test_gpu_cycle),
      cmocka_unit_test(test_gpu_shared_spd), cmocka_unit_test(test_gpu_amg_update),
      cmocka_unit_test(test_gpu_setup),      cmocka_unit_test(test_gpu_setup_update),
  };
  setenv("SPX_QUIET", "1", 0);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
