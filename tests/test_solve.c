/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/solve.h: CG, Jacobi PCG and BiCGSTAB on the host backend (generated Poisson and
 * elasticity, SPD and nonsymmetric shared matrices) with the true residual checked independently,
 * breakdowns, the iteration limit, bad arguments, the preconditioner callback, the history; the
 * krylov kernels compile for sm_80/sm_90 (NVRTC, no GPU); and a GPU part (skipped without a GPU)
 * that runs the same solves on ELL, SELL, CSR and cuSPARSE plans against the host's iteration
 * counts, and twice for bitwise determinism. */
#define _POSIX_C_SOURCE 200809L
#include "spx_test.h"
#include <spx/internal/config.h> /* spx__config_reload */

static spx_plan *host_plan(const spx_csr *a, const char *force) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST;
  o.no_calibrate = 1;
  o.force = force;
  if (spx_plan_create(NULL, a, &o, &p) != SPX_OK) fail_msg("plan: %s", spx_last_error());
  return p;
}

/* ||b - A x|| / ||b|| by the reference CSR SpMV, in double (x and b of a's dtype). */
static double true_rel(const spx_csr *a, const void *b, const void *x) {
  int64_t n = a->nrows, i;
  double *q = malloc((size_t)n * 8), *xd = malloc((size_t)n * 8), num = 0, den = 0;
  spx_csr *ad = NULL;
  assert_true(q && xd);
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &ad), SPX_OK);
  for (i = 0; i < n; i++) xd[i] = a->dtype == SPX_FLOAT ? ((const float *)x)[i] : ((const double *)x)[i];
  assert_int_equal(spx_csr_spmv(ad, 1.0, xd, 0.0, q), SPX_OK);
  for (i = 0; i < n; i++) {
    double bi = a->dtype == SPX_FLOAT ? ((const float *)b)[i] : ((const double *)b)[i], d = bi - q[i];
    if (d != d) { num = 1e300; break; }
    num += d * d;
    den += bi * bi;
  }
  free(q); free(xd); spx_csr_destroy(ad);
  return __builtin_sqrt(num / den);
}

typedef spx_status (*solve_fn)(spx_plan *, const void *, void *, const spx_solve_options *, spx_solve_report *);

/* Solves a x = b (b random, x0 random or 0) with fn on a host plan; checks convergence to rtol
 * with the true residual; returns the iterations. */
static int64_t solve_check_b(const char *what, const spx_csr *a, solve_fn fn, double rtol, int64_t maxit,
                             int zero_x0, const double *given_b) {
  spx_plan *p = host_plan(a, NULL);
  spx_solve_options o;
  spx_solve_report r;
  int64_t n = a->nrows, i;
  size_t vs = a->dtype == SPX_FLOAT ? 4 : 8;
  void *b = malloc((size_t)n * vs), *x = malloc((size_t)n * vs);
  double rel;
  spx_status s;
  assert_true(b && x);
  for (i = 0; i < n; i++) {
    double bi = given_b ? given_b[i] : spx_test_rand(), xi = zero_x0 ? 0 : 0.1 * spx_test_rand();
    if (vs == 4) { ((float *)b)[i] = (float)bi; ((float *)x)[i] = (float)xi; }
    else { ((double *)b)[i] = bi; ((double *)x)[i] = xi; }
  }
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = maxit;
  s = fn(p, b, x, &o, &r);
  if (s != SPX_OK) fail_msg("%s: %s (%s)", what, spx_last_error(), r.message);
  rel = true_rel(a, b, x);
  /* The recurrence passed rtol; the recomputed residual may drift a little above it. */
  if (!(r.rel_resid <= rtol) || !(rel <= 3 * rtol) || !(r.true_rel_resid <= 3 * rtol))
    fail_msg("%s: recurrence %.3g, reported true %.3g, recomputed %.3g > rtol %.3g after %lld iterations", what,
             r.rel_resid, r.true_rel_resid, rel, rtol, (long long)r.iterations);
  if (vs == 8) /* the report's is the same number (a float SpMV rounds it differently) */
    assert_true(__builtin_fabs(rel - r.true_rel_resid) <= 1e-3 * rel + 1e-15);
  assert_int_equal(r.status, SPX_OK);
  assert_true(r.iterations > 0 && r.iterations <= maxit);
  /* r_0, the iterations (BiCGSTAB: one less when it stops at a half step), the true residual. */
  /* r_0 and the true residual per run (restarts), the iterations (BiCGSTAB: one less when the
   * last stops at a half step). */
  assert_true(r.restarts >= 0 && r.restarts <= 3);
  assert_true(r.spmvs == r.spmvs_per_iter * r.iterations + 2 * (r.restarts + 1) ||
              (r.spmvs_per_iter == 2 && r.spmvs == 2 * r.iterations + 2 * (r.restarts + 1) - 1));
  assert_true(r.solve_ms >= 0 && r.setup_ms >= 0 && r.per_iter_us >= 0);
  assert_non_null(strstr(r.message, "converged"));
  free(b); free(x);
  spx_plan_destroy(p);
  return r.iterations;
}

static int64_t solve_check(const char *what, const spx_csr *a, solve_fn fn, double rtol, int64_t maxit,
                           int zero_x0) {
  return solve_check_b(what, a, fn, rtol, maxit, zero_x0, NULL);
}

/* One random right-hand side for comparisons between methods (malloc'd). */
static double *rand_b(int64_t n) {
  double *b = malloc((size_t)n * 8);
  assert_non_null(b);
  spx_test_fill(b, n);
  return b;
}

static void test_poisson_elasticity(void **state) {
  spx_csr *a;
  int64_t it_cg, it_pcg;
  double *b;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(12, 11, 10, 7, SPX_DOUBLE, &a), SPX_OK);
  b = rand_b(a->nrows);
  it_cg = solve_check_b("poisson7 cg", a, spx_solve_cg, 1e-8, 500, 1, b);
  assert_true(it_cg > 10 && it_cg < 80);
  it_pcg = solve_check_b("poisson7 pcg", a, spx_solve_pcg_jacobi, 1e-8, 500, 1, b);
  if (!(it_pcg <= it_cg + 1 && it_pcg >= it_cg - 1)) /* constant diagonal: the same method */
    fail_msg("poisson: pcg %lld, cg %lld iterations", (long long)it_pcg, (long long)it_cg);
  free(b);
  solve_check("poisson7 bicgstab", a, spx_solve_bicgstab, 1e-8, 500, 0);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_poisson3d(8, 8, 8, 27, SPX_FLOAT, &a), SPX_OK);
  solve_check("poisson27 float cg", a, spx_solve_cg, 1e-5, 500, 0);
  solve_check("poisson27 float bicgstab", a, spx_solve_bicgstab, 1e-5, 500, 1);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_elasticity3d(4, 3, 3, SPX_DOUBLE, &a), SPX_OK);
  b = rand_b(a->nrows);
  it_cg = solve_check_b("elasticity cg", a, spx_solve_cg, 1e-8, 2000, 1, b);
  it_pcg = solve_check_b("elasticity pcg", a, spx_solve_pcg_jacobi, 1e-8, 2000, 1, b);
  assert_true(it_pcg < it_cg);
  free(b);
  spx_csr_destroy(a);
}

/* SPD matrices of structural engineering and power networks (Harwell-Boeing). */
static void test_shared_spd(void **state) {
  static const char *const names[] = {"bcsstk05", "bcsstk22", "662_bus", "bcsstk16"};
  int k;
  (void)state;
  for (k = 0; k < 4; k++) {
    spx_csr *a = spx_test_shared(names[k]);
    char what[64];
    int64_t cg, pcg;
    double *b = rand_b(a->nrows);
    snprintf(what, sizeof what, "%s cg", names[k]);
    cg = solve_check_b(what, a, spx_solve_cg, 1e-8, 5000, 1, b);
    snprintf(what, sizeof what, "%s pcg", names[k]);
    pcg = solve_check_b(what, a, spx_solve_pcg_jacobi, 1e-8, 5000, 1, b);
    if (!(pcg < cg)) fail_msg("%s: pcg %lld, cg %lld", names[k], (long long)pcg, (long long)cg); /* Jacobi pays */
    free(b);
    spx_csr_destroy(a);
  }
}

/* A SPD matrix scaled badly on purpose, D A D with D spanning 4 decades: PCG needs far fewer
 * iterations than CG. */
static void test_pcg_badly_scaled(void **state) {
  spx_csr *a = spx_test_shared("bcsstk04"), *g;
  int64_t i, k, cg, pcg;
  double *d;
  (void)state;
  cg = solve_check("bcsstk04 cg", a, spx_solve_cg, 1e-8, 5000, 0);
  pcg = solve_check("bcsstk04 pcg", a, spx_solve_pcg_jacobi, 1e-8, 5000, 0);
  assert_true(4 * pcg < cg);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_poisson3d(10, 10, 10, 7, SPX_DOUBLE, &g), SPX_OK);
  d = malloc((size_t)g->nrows * 8);
  for (i = 0; i < g->nrows; i++) {
    double u = 0.5 + 0.5 * spx_test_rand();
    d[i] = 1 + 30 * u * u * u * u;
  }
  for (i = 0; i < g->nrows; i++)
    for (k = g->row_ptr[i]; k < g->row_ptr[i + 1]; k++) g->val.d[k] *= d[i] * d[g->col_idx[k]];
  cg = solve_check("scaled poisson cg", g, spx_solve_cg, 1e-8, 20000, 0);
  pcg = solve_check("scaled poisson pcg", g, spx_solve_pcg_jacobi, 1e-8, 20000, 0);
  if (!(4 * pcg < cg)) fail_msg("pcg %lld vs cg %lld iterations", (long long)pcg, (long long)cg);
  free(d);
  spx_csr_destroy(g);
}

static void test_bicgstab_nonsymmetric(void **state) {
  static const char *const names[] = {"cage8", "cage10", "bfwa62"};
  spx_csr *a;
  int k;
  (void)state;
  for (k = 0; k < 3; k++) {
    char what[64];
    a = spx_test_shared(names[k]);
    snprintf(what, sizeof what, "%s bicgstab", names[k]);
    solve_check(what, a, spx_solve_bicgstab, 1e-8, 2000, k & 1);
    spx_csr_destroy(a);
  }
  assert_int_equal(spx_gen_powerlaw(3000, 2.2, 2, 50, 7, SPX_FLOAT, &a), SPX_OK);
  solve_check("powerlaw float bicgstab", a, spx_solve_bicgstab, 1e-5, 2000, 0);
  spx_csr_destroy(a);
}

/* Runs fn, expects status want; x stays finite. */
static spx_solve_report expect_status(const spx_csr *a, solve_fn fn, const double *b, spx_status want,
                                      const char *msg_part, int64_t maxit) {
  spx_plan *p = host_plan(a, NULL);
  spx_solve_options o;
  spx_solve_report r;
  int64_t i, n = a->nrows;
  double *x = calloc((size_t)n, 8);
  spx_status s;
  spx_solve_options_default(&o);
  o.maxit = maxit;
  s = fn(p, b, x, &o, &r);
  if (s != want) fail_msg("status %s, wanted %s (%s): %s", spx_status_string(s), spx_status_string(want), msg_part, r.message);
  assert_int_equal(r.status, want);
  assert_int_equal(spx_last_status(), want);
  if (want && msg_part && !strstr(spx_last_error(), msg_part)) fail_msg("'%s' lacks '%s'", spx_last_error(), msg_part);
  if (msg_part && !strstr(r.message, msg_part)) fail_msg("'%s' lacks '%s'", r.message, msg_part);
  int finite_b = 1;
  for (i = 0; i < n; i++) assert_true(x[i] - x[i] == 0);
  for (i = 0; i < n; i++) finite_b &= b[i] - b[i] == 0;
  assert_true(!finite_b || r.true_resid - r.true_resid == 0);
  free(x);
  spx_plan_destroy(p);
  return r;
}

static void test_breakdowns(void **state) {
  spx_csr *a;
  spx_solve_report r;
  double *b;
  int64_t i;
  int32_t ri[] = {0, 1}, ci[] = {1, 0};
  double rv[] = {1, -1}, b2[] = {1, 0};
  (void)state;
  /* Negative definite: p.Ap < 0 in the first iteration. */
  assert_int_equal(spx_gen_poisson3d(6, 6, 6, 7, SPX_DOUBLE, &a), SPX_OK);
  for (i = 0; i < a->nnz; i++) a->val.d[i] = -a->val.d[i];
  b = malloc((size_t)a->nrows * 8);
  spx_test_fill(b, a->nrows);
  r = expect_status(a, spx_solve_cg, b, SPX_BREAKDOWN, "not symmetric positive definite", 100);
  assert_int_equal(r.iterations, 0);
  /* Jacobi on it: the diagonal is negative, r.z < 0 before the first iteration. */
  r = expect_status(a, spx_solve_pcg_jacobi, b, SPX_BREAKDOWN, "r.z", 100);
  /* BiCGSTAB solves it (nonsingular). */
  r = expect_status(a, spx_solve_bicgstab, b, SPX_OK, "converged", 500);
  assert_true(r.true_rel_resid < 1e-7);
  spx_csr_destroy(a);
  free(b);
  /* Indefinite and nonsymmetric (bfwa62): CG finds p.Ap <= 0. */
  a = spx_test_shared("bfwa62");
  b = malloc((size_t)a->nrows * 8);
  for (i = 0; i < a->nrows; i++) b[i] = 1.0 + 0.1 * (double)(i % 7); /* p.Ap < 0 in iteration 3 */
  expect_status(a, spx_solve_cg, b, SPX_BREAKDOWN, "p.Ap", 1000);
  spx_csr_destroy(a);
  free(b);
  /* A rotation: r0^.A r0 = 0 for every r0, BiCGSTAB breaks down at once. */
  assert_int_equal(spx_csr_from_coo(2, 2, 2, ri, ci, rv, SPX_DOUBLE, &a), SPX_OK);
  r = expect_status(a, spx_solve_bicgstab, b2, SPX_BREAKDOWN, "r0^.v", 10);
  assert_int_equal(r.iterations, 0);
  /* NaN in b is never a success. */
  b2[1] = NAN;
  expect_status(a, spx_solve_bicgstab, b2, SPX_BREAKDOWN, "NaN", 10);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_poisson3d(5, 5, 5, 7, SPX_DOUBLE, &a), SPX_OK);
  b = malloc((size_t)a->nrows * 8);
  spx_test_fill(b, a->nrows);
  b[7] = INFINITY;
  expect_status(a, spx_solve_cg, b, SPX_BREAKDOWN, "NaN or Inf", 10);
  free(b);
  spx_csr_destroy(a);
}

static void test_not_converged(void **state) {
  spx_csr *a;
  double *b, hist[64];
  spx_solve_report r;
  spx_plan *p;
  spx_solve_options o;
  double *x;
  int k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(10, 10, 10, 7, SPX_DOUBLE, &a), SPX_OK);
  b = malloc((size_t)a->nrows * 8);
  spx_test_fill(b, a->nrows);
  r = expect_status(a, spx_solve_cg, b, SPX_NOT_CONVERGED, "not converged in 3 iterations", 3);
  assert_int_equal(r.iterations, 3);
  assert_true(r.rel_resid > 1e-8 && r.rel_resid < 1);
  r = expect_status(a, spx_solve_bicgstab, b, SPX_NOT_CONVERGED, "not converged", 2);
  assert_int_equal(r.iterations, 2);
  /* History: iterations + 1 entries, ||r_0|| first, the final residual last; a short buffer is
   * filled and not overrun. */
  p = host_plan(a, NULL);
  x = calloc((size_t)a->nrows, 8);
  spx_solve_options_default(&o);
  o.maxit = 5;
  o.history = hist;
  o.history_len = 7;
  hist[6] = hist[7] = -1;
  assert_int_equal(spx_solve_cg(p, b, x, &o, &r), SPX_NOT_CONVERGED);
  assert_int_equal(r.history_count, 6);
  assert_true(__builtin_fabs(hist[0] - r.bnorm) <= 1e-12 * r.bnorm); /* x0 = 0: r0 = b */
  assert_true(hist[5] == r.resid);
  for (k = 0; k < 6; k++) assert_true(hist[k] > 0);
  assert_true(hist[6] == -1);
  o.history_len = 3;
  memset(x, 0, (size_t)a->nrows * 8);
  assert_int_equal(spx_solve_cg(p, b, x, &o, &r), SPX_NOT_CONVERGED);
  assert_int_equal(r.history_count, 3);
  assert_true(hist[3] > 0 && hist[6] == -1);
  /* Converged: iterations + 1 entries, decreasing overall. */
  o.maxit = 100;
  o.history_len = 64;
  memset(x, 0, (size_t)a->nrows * 8);
  o.rtol = 1e-2;
  assert_int_equal(spx_solve_cg(p, b, x, &o, &r), SPX_OK);
  assert_true(r.iterations + 1 <= 64);
  assert_int_equal(r.history_count, r.iterations + 1);
  assert_true(hist[r.iterations] <= 1e-2 * r.bnorm && hist[r.iterations] < hist[0]);
  /* The exact answer as x0: zero iterations. And b = 0, x0 = 0: zero iterations, x stays 0. */
  o.rtol = 1e-8;
  assert_int_equal(spx_solve_cg(p, b, x, &o, &r), SPX_OK);
  o.rtol = 1e-2;
  assert_int_equal(spx_solve_cg(p, b, x, &o, &r), SPX_OK);
  assert_int_equal(r.iterations, 0);
  memset(b, 0, (size_t)a->nrows * 8);
  memset(x, 0, (size_t)a->nrows * 8);
  assert_int_equal(spx_solve_bicgstab(p, b, x, &o, &r), SPX_OK);
  assert_int_equal(r.iterations, 0);
  assert_true(x[0] == 0 && r.true_resid == 0);
  free(x);
  spx_plan_destroy(p);
  free(b);
  spx_csr_destroy(a);
}

static void test_bad_arguments(void **state) {
  spx_csr *a, *rect, *zd;
  spx_plan *p, *pr, *pz;
  spx_solve_options o;
  spx_solve_report r;
  double *b, *x, h[2];
  int32_t ri[] = {0, 1, 1}, ci[] = {1, 0, 1};
  double v[] = {1, 1, 2};
  (void)state;
  assert_int_equal(spx_gen_poisson3d(4, 4, 4, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_from_coo(2, 3, 3, ri, ci, v, SPX_DOUBLE, &rect), SPX_OK);
  assert_int_equal(spx_csr_from_coo(2, 2, 3, ri, ci, v, SPX_DOUBLE, &zd), SPX_OK); /* a_00 = 0 */
  p = host_plan(a, NULL);
  pr = host_plan(rect, NULL);
  pz = host_plan(zd, NULL);
  b = calloc(64, 8); x = calloc(64, 8);
  b[3] = 1;
#define BAD(call, part)                                                                         \
  do {                                                                                          \
    memset(&r, 0x5a, sizeof r);                                                                 \
    assert_int_equal((call), SPX_INVALID_ARGUMENT);                                             \
    if (!strstr(spx_last_error(), part)) fail_msg("'%s' lacks '%s'", spx_last_error(), part);   \
    assert_int_equal(r.status, SPX_INVALID_ARGUMENT);                                           \
  } while (0)
  spx_solve_options_default(&o);
  BAD(spx_solve_cg(NULL, b, x, &o, &r), "NULL plan");
  BAD(spx_solve_cg(p, NULL, x, &o, &r), "b is NULL");
  BAD(spx_solve_bicgstab(p, b, NULL, &o, &r), "x is NULL");
  BAD(spx_solve_cg(pr, b, x, &o, &r), "2 x 3");
  BAD(spx_solve_bicgstab(pr, b, x, &o, &r), "square");
  o.rtol = 0;
  BAD(spx_solve_cg(p, b, x, &o, &r), "both 0");
  o.rtol = -1;
  BAD(spx_solve_pcg_jacobi(p, b, x, &o, &r), "rtol");
  o.rtol = 1e-8; o.atol = NAN;
  BAD(spx_solve_cg(p, b, x, &o, &r), "atol");
  o.atol = 0; o.maxit = 0;
  BAD(spx_solve_bicgstab(p, b, x, &o, &r), "maxit");
  o.maxit = 10; o.history_len = 2;
  BAD(spx_solve_cg(p, b, x, &o, &r), "history");
  o.history = h; o.history_len = -1;
  BAD(spx_solve_cg(p, b, x, &o, &r), "history");
  spx_solve_options_default(&o);
  o.precond = (spx_precond_fn)1;
  BAD(spx_solve_pcg_jacobi(p, b, x, &o, &r), "Jacobi");
  spx_solve_options_default(&o);
  BAD(spx_solve_pcg_jacobi(pz, b, x, &o, &r), "a[0][0] = 0");
  /* Only rtol or only atol is fine; a NULL report too; NULL options are the defaults. */
  o.rtol = 0; o.atol = 1e-6;
  assert_int_equal(spx_solve_cg(p, b, x, &o, NULL), SPX_OK);
  assert_int_equal(spx_solve_cg(p, b, x, NULL, NULL), SPX_OK);
  assert_int_equal(spx_solve_report_print(NULL, stdout, 0), SPX_INVALID_ARGUMENT);
#undef BAD
  free(b); free(x);
  spx_plan_destroy(p); spx_plan_destroy(pr); spx_plan_destroy(pz);
  spx_csr_destroy(a); spx_csr_destroy(rect); spx_csr_destroy(zd);
}

/* Preconditioner callbacks on the host: z = r (identity) or z = r / diag. */
typedef struct pc_data {
  int calls, fail_at;
  int64_t n;
  const double *dinv;
} pc_data;

static spx_status pc_apply(void *data, const void *r, void *z) {
  pc_data *d = (pc_data *)data;
  int64_t i;
  if (++d->calls == d->fail_at) return SPX_UNSUPPORTED;
  for (i = 0; i < d->n; i++) ((double *)z)[i] = d->dinv ? d->dinv[i] * ((const double *)r)[i] : ((const double *)r)[i];
  return SPX_OK;
}

static void test_preconditioner_callback(void **state) {
  spx_csr *a;
  spx_plan *p;
  spx_solve_options o;
  spx_solve_report r0, r1;
  pc_data d;
  int64_t n, i;
  double *b, *x0, *x1, *dinv;
  (void)state;
  assert_int_equal(spx_gen_elasticity3d(3, 3, 3, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  p = host_plan(a, NULL);
  b = malloc((size_t)n * 8); x0 = calloc((size_t)n, 8); x1 = calloc((size_t)n, 8); dinv = malloc((size_t)n * 8);
  spx_test_fill(b, n);
  spx_solve_options_default(&o);
  /* Identity: exactly CG (the same sums in the same order). */
  assert_int_equal(spx_solve_cg(p, b, x0, &o, &r0), SPX_OK);
  memset(&d, 0, sizeof d);
  d.n = n;
  o.precond = pc_apply;
  o.precond_data = &d;
  assert_int_equal(spx_solve_cg(p, b, x1, &o, &r1), SPX_OK);
  assert_int_equal(r1.iterations, r0.iterations);
  assert_int_equal(d.calls, r1.iterations); /* r_0 and every iteration that did not stop */
  assert_int_equal(r1.precond_calls, d.calls);
  assert_memory_equal(x0, x1, (size_t)n * 8);
  /* Jacobi by callback: the iterations of spx_solve_pcg_jacobi. */
  assert_int_equal(spx_plan_diagonal(p, dinv), SPX_OK);
  for (i = 0; i < n; i++) dinv[i] = 1.0 / dinv[i];
  memset(x0, 0, (size_t)n * 8); memset(x1, 0, (size_t)n * 8);
  o.precond = NULL;
  assert_int_equal(spx_solve_pcg_jacobi(p, b, x0, &o, &r0), SPX_OK);
  memset(&d, 0, sizeof d);
  d.n = n; d.dinv = dinv;
  o.precond = pc_apply;
  assert_int_equal(spx_solve_cg(p, b, x1, &o, &r1), SPX_OK);
  assert_true(r1.iterations >= r0.iterations - 1 && r1.iterations <= r0.iterations + 1);
  assert_true(r1.iterations < 100);
  /* BiCGSTAB with the callback: two calls per iteration (right preconditioning). */
  memset(&d, 0, sizeof d);
  d.n = n; d.dinv = dinv;
  memset(x1, 0, (size_t)n * 8);
  assert_int_equal(spx_solve_bicgstab(p, b, x1, &o, &r1), SPX_OK);
  assert_true(d.calls >= 2 * r1.iterations - 1 && d.calls <= 2 * r1.iterations);
  assert_true(r1.true_rel_resid < 1e-7);
  /* A failing callback stops the solve with its status and says so. */
  memset(&d, 0, sizeof d);
  d.n = n; d.fail_at = 3;
  memset(x1, 0, (size_t)n * 8);
  assert_int_equal(spx_solve_cg(p, b, x1, &o, &r1), SPX_UNSUPPORTED);
  assert_non_null(strstr(spx_last_error(), "preconditioner callback failed"));
  assert_int_equal(r1.status, SPX_UNSUPPORTED);
  for (i = 0; i < n; i++) assert_true(x1[i] - x1[i] == 0);
  free(b); free(x0); free(x1); free(dinv);
  spx_plan_destroy(p);
  spx_csr_destroy(a);
}

/* Every solver on every host format gives the same iterations (the SpMV is the only difference). */
static void test_any_plan(void **state) {
  static const char *const fmts[] = {"csr", "ell", "sell", "jds", "coo"};
  spx_csr *a;
  int64_t n, it0 = -1;
  double *b, *x;
  int k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(9, 8, 7, 27, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  b = malloc((size_t)n * 8); x = malloc((size_t)n * 8);
  spx_test_fill(b, n);
  for (k = 0; k < 5; k++) {
    spx_plan *p = host_plan(a, fmts[k]);
    spx_solve_report r;
    spx_format f;
    assert_int_equal(spx_format_from_name(fmts[k], &f), SPX_OK);
    assert_int_equal(spx_plan_format(p), f);
    memset(x, 0, (size_t)n * 8);
    assert_int_equal(spx_solve_cg(p, b, x, NULL, &r), SPX_OK);
    if (it0 < 0) it0 = r.iterations;
    assert_true(r.iterations >= it0 - 1 && r.iterations <= it0 + 1);
    assert_true(true_rel(a, b, x) < 3e-8);
    spx_plan_destroy(p);
  }
  {
    spx_plan_options o;
    spx_plan *p;
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_HOST; o.no_calibrate = 1; o.force = "cusparse";
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "candidates"));
    o.force = "nosuch";
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
  }
  free(b); free(x);
  spx_csr_destroy(a);
}

/* A deferred plan (spx_plan_options.defer) starts on the CSR and keeps its choice pending; the
 * solvers upgrade it where upgrade_at says (or never with 0, or not in a solve too short for the
 * rate check), the solve converging as on the chosen plan; spx_plan_upgrade on its own; a plan that
 * changed the value type keeps its own copy to convert later. */
static void test_deferred_plan(void **state) {
  spx_plan_options o;
  spx_plan *p, *ref;
  spx_plan_pending_info pi;
  spx_solve_options so;
  spx_solve_report r, rr;
  spx_csr *a, *tmp, *c;
  int64_t n, i;
  double *b, *x, *y, *yr;
  spx_format ell;
  (void)state;
  assert_int_equal(spx_format_from_name("ell", &ell), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(12, 11, 10, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  b = malloc((size_t)n * 8); x = calloc((size_t)n, 8); y = malloc((size_t)n * 8); yr = malloc((size_t)n * 8);
  spx_test_fill(b, n);
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST; o.no_calibrate = 1; o.force = "ell"; o.defer = 1;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  assert_int_equal(spx_plan_format(p), SPX_FORMAT_CSR);
  assert_int_equal(spx_plan_pending(p, &pi), 1);
  assert_int_equal(pi.format, ell);
  assert_true(pi.convert_ms >= 0 && pi.pending_us > 0 && pi.current_us > 0);
  assert_non_null(strstr(spx_plan_reason(p), "deferred"));
  /* the same products before and after spx_plan_upgrade */
  spx_csr_spmv(a, 1.0, b, 0.0, yr);
  assert_int_equal(spx_plan_spmv(p, 1.0, b, 0.0, y), SPX_OK);
  assert_true(spx_test_relerr(y, yr, n) < 1e-14);
  assert_int_equal(spx_plan_upgrade(p), SPX_OK);
  assert_int_equal(spx_plan_format(p), ell);
  assert_int_equal(spx_plan_pending(p, NULL), 0);
  assert_int_equal(spx_plan_upgrade(p), SPX_OK); /* nothing pending: nothing done */
  assert_int_equal(spx_plan_spmv(p, 1.0, b, 0.0, y), SPX_OK);
  assert_true(spx_test_relerr(y, yr, n) < 1e-14);
  spx_plan_destroy(p);
  assert_int_equal(spx_plan_upgrade(NULL), SPX_INVALID_ARGUMENT);
  /* CG: upgraded at iteration 5, as many iterations (+-1) as on ELL from the start */
  ref = host_plan(a, "ell");
  spx_solve_options_default(&so);
  assert_int_equal(spx_solve_cg(ref, b, x, &so, &rr), SPX_OK);
  assert_int_equal(rr.upgraded_at, -1);
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  so.upgrade_at = 5;
  memset(x, 0, (size_t)n * 8);
  assert_int_equal(spx_solve_cg(p, b, x, &so, &r), SPX_OK);
  assert_int_equal(r.upgraded_at, 5);
  assert_true(r.upgrade_ms >= 0);
  assert_int_equal(spx_plan_format(p), ell);
  assert_true(r.iterations >= rr.iterations - 1 && r.iterations <= rr.iterations + 1);
  assert_true(true_rel(a, b, x) < 3e-8);
  spx_plan_destroy(p);
  /* upgrade_at 0: never; the plan stays on the CSR, its choice still pending */
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  so.upgrade_at = 0;
  memset(x, 0, (size_t)n * 8);
  assert_int_equal(spx_solve_cg(p, b, x, &so, &r), SPX_OK);
  assert_int_equal(r.upgraded_at, -1);
  assert_int_equal(spx_plan_format(p), SPX_FORMAT_CSR);
  assert_int_equal(spx_plan_pending(p, NULL), 1);
  assert_true(true_rel(a, b, x) < 3e-8);
  spx_plan_destroy(p);
  spx_plan_destroy(ref);
  /* BiCGSTAB on a nonsymmetric shared matrix, upgraded at iteration 3 */
  c = spx_test_shared("cage10");
  {
    double *bc = malloc((size_t)c->nrows * 8), *xc = calloc((size_t)c->nrows, 8);
    spx_test_fill(bc, c->nrows);
    assert_int_equal(spx_plan_create(NULL, c, &o, &p), SPX_OK);
    so.upgrade_at = 3;
    assert_int_equal(spx_solve_bicgstab(p, bc, xc, &so, &r), SPX_OK);
    assert_int_equal(r.upgraded_at, 3);
    assert_int_equal(spx_plan_format(p), ell);
    assert_true(true_rel(c, bc, xc) < 3e-8);
    spx_plan_destroy(p);
    free(bc); free(xc);
  }
  spx_csr_destroy(c);
  /* the default (-1) in a solve that ends before the first look at the rate (4 iterations): 3 I
   * converges in one */
  {
    int32_t *ri = malloc((size_t)n * 4);
    double *v = malloc((size_t)n * 8);
    for (i = 0; i < n; i++) { ri[i] = (int32_t)i; v[i] = 3.0; } /* one eigenvalue: one iteration */
    assert_int_equal(spx_csr_from_coo(n, n, n, ri, ri, v, SPX_DOUBLE, &c), SPX_OK);
    free(ri); free(v);
    assert_int_equal(spx_plan_create(NULL, c, &o, &p), SPX_OK);
    spx_solve_options_default(&so);
    memset(x, 0, (size_t)n * 8);
    assert_int_equal(spx_solve_cg(p, b, x, &so, &r), SPX_OK);
    assert_true(r.iterations <= 2);
    assert_int_equal(r.upgraded_at, -1);
    spx_plan_destroy(p);
    spx_csr_destroy(c);
  }
  /* a float plan of a double matrix converts its own copy: the caller's matrix may go */
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &tmp), SPX_OK);
  o.dtype = SPX_FLOAT;
  assert_int_equal(spx_plan_create(NULL, tmp, &o, &p), SPX_OK);
  spx_csr_destroy(tmp);
  assert_int_equal(spx_plan_pending(p, NULL), 1);
  assert_int_equal(spx_plan_upgrade(p), SPX_OK);
  assert_int_equal(spx_plan_format(p), ell);
  {
    float *bf = malloc((size_t)n * 4), *yf = malloc((size_t)n * 4);
    for (i = 0; i < n; i++) bf[i] = (float)b[i];
    assert_int_equal(spx_plan_spmv(p, 1.0, bf, 0.0, yf), SPX_OK);
    for (i = 0; i < n; i++) y[i] = yf[i];
    assert_true(spx_test_relerr(y, yr, n) < 1e-5);
    free(bf); free(yf);
  }
  spx_plan_destroy(p);
  /* a choice that converts nothing is not deferred */
  o.dtype = -1; o.force = "csr";
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  assert_int_equal(spx_plan_pending(p, NULL), 0);
  spx_plan_destroy(p);
  free(b); free(x); free(y); free(yr);
  spx_csr_destroy(a);
}

static void test_report_print(void **state) {
  spx_csr *a;
  spx_plan *p;
  spx_solve_report r;
  double *b, *x;
  char buf[4096];
  FILE *f;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(5, 5, 5, 7, SPX_DOUBLE, &a), SPX_OK);
  p = host_plan(a, NULL);
  b = malloc((size_t)a->nrows * 8); x = calloc((size_t)a->nrows, 8);
  spx_test_fill(b, a->nrows);
  assert_int_equal(spx_solve_cg(p, b, x, NULL, &r), SPX_OK);
  assert_true(r.vector_bytes_per_iter == 10 * a->nrows * 8);
  f = tmpfile();
  assert_non_null(f);
  assert_int_equal(spx_solve_report_print(&r, f, 1), SPX_OK);
  rewind(f);
  buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
  fclose(f);
  assert_non_null(strstr(buf, "\"method\": \"cg\""));
  assert_non_null(strstr(buf, "\"status\": \"ok\""));
  assert_non_null(strstr(buf, "\"true_rel_resid\""));
  free(b); free(x);
  spx_plan_destroy(p);
  spx_csr_destroy(a);
}

/* The krylov kernels compile for sm_80 and sm_90, double and float (NVRTC only, no GPU). */
static void test_kernels_compile(void **state) {
  static const char *const archs[] = {"sm_80", "sm_90"};
  static const char *const types[] = {"SPX_VALUE_T=double", "SPX_VALUE_T=float"};
  int a, t, origin;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  for (a = 0; a < 2; a++)
    for (t = 0; t < 2; t++) {
      const char *defs[2] = {types[t], "SPX_BLOCK=256"};
      if (spx_jit_compile_only("krylov", 2, defs, archs[a], &origin) != SPX_OK)
        fail_msg("krylov %s %s: %s", archs[a], types[t], spx_last_error());
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

/* One solve on the GPU with a forced plan and options o: b and x device vectors, or host arrays with
 * o->host_vectors; *st its status; x (malloc'd). */
static double *gpu_run(spx_context *g, const spx_csr *a, const char *force, solve_fn fn, const double *b,
                       const spx_solve_options *o, spx_solve_report *r, spx_status *st) {
  spx_plan_options po;
  spx_plan *p = NULL;
  int64_t n = a->nrows;
  double *x = calloc((size_t)n, 8);
  spx_devptr db = 0, dx = 0;
  spx_plan_options_default(&po);
  po.force = force;
  if (spx_plan_create(g, a, &po, &p) != SPX_OK) fail_msg("%s: %s", force, spx_last_error());
  if (o->host_vectors) {
    *st = fn(p, b, x, o, r);
  } else {
    assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &db), SPX_OK);
    assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &dx), SPX_OK);
    assert_int_equal(spx_device_upload(g, db, b, (size_t)n * 8), SPX_OK);
    assert_int_equal(spx_device_memset(g, dx, 0, (size_t)n * 8), SPX_OK);
    *st = fn(p, (const void *)(uintptr_t)db, (void *)(uintptr_t)dx, o, r);
    assert_int_equal(spx_device_download(g, x, dx, (size_t)n * 8), SPX_OK);
    spx_device_free(g, db);
    spx_device_free(g, dx);
  }
  spx_plan_destroy(p);
  return x;
}

/* Solves on the GPU with a forced plan (device vectors), checks the true residual and the host's
 * iteration counts [host_lo, host_hi] (+-3); returns x (malloc'd) for the determinism check. */
static double *gpu_solve(spx_context *g, const spx_csr *a, const char *force, solve_fn fn, const double *b,
                         int64_t host_lo, int64_t host_hi, double rtol, int host_vectors, int poll) {
  spx_solve_options o;
  spx_solve_report r;
  double *x, rel, hist[4096];
  spx_status s;
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = 3000;
  o.history = hist;
  o.history_len = 4096;
  o.poll = poll;
  o.host_vectors = host_vectors;
  x = gpu_run(g, a, force, fn, b, &o, &r, &s);
  if (s != SPX_OK) fail_msg("%s %s: %s", force, r.method, spx_last_error());
  rel = true_rel(a, b, x);
  if (!(rel <= 3 * rtol) || !(r.true_rel_resid <= 3 * rtol) || r.iterations < host_lo - 3 || r.iterations > host_hi + 3)
    fail_msg("%s %s: %lld iterations (host %lld..%lld), true residual %.3g (reported %.3g)", force, r.method,
             (long long)r.iterations, (long long)host_lo, (long long)host_hi, rel, r.true_rel_resid);
  assert_int_equal(r.history_count, r.iterations + 1);
  assert_true(__builtin_fabs(hist[r.iterations] - r.resid) <= 1e-12 * r.resid);
  return x;
}

static int64_t host_iterations(const spx_csr *a, solve_fn fn, const double *b, double rtol) {
  spx_plan *p = host_plan(a, "csr");
  spx_solve_options o;
  spx_solve_report r;
  double *x = calloc((size_t)a->nrows, 8);
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = 3000;
  assert_int_equal(fn(p, b, x, &o, &r), SPX_OK);
  free(x);
  spx_plan_destroy(p);
  return r.iterations;
}

/* The host's iteration counts over perturbations the size of rounding: for BiCGSTAB, b with
 * one-ulp changes in random entries (16 draws) and the system numbered backwards (P A P^T, P b with
 * P the reversal: the same iterates in exact arithmetic, but every row's SpMV sums in the opposite
 * order, as another kernel may). The host's sums do not depend on its thread count (fixed chunks).
 * CG's count is stable under rounding; BiCGSTAB's irregular convergence is not: on elasticity
 * 6x5x5 (b is random each run) these perturbations moved it over 75..83 for one b and 79..85 for
 * another, and the H100's cuSPARSE plan once took 81 where the host took 73. */
static void host_spread(const spx_csr *a, solve_fn fn, const double *b, double rtol, int64_t *lo, int64_t *hi) {
  spx_csr *rev = NULL;
  double *rb, *pb;
  int32_t *ri, *ci;
  int64_t n = a->nrows, i, k;
  uint64_t seed = 12345;
  int draw, pass;
  *lo = *hi = host_iterations(a, fn, b, rtol);
  if (fn != spx_solve_bicgstab) return;
  ri = malloc((size_t)a->nnz * 4); ci = malloc((size_t)a->nnz * 4);
  rb = malloc((size_t)n * 8); pb = malloc((size_t)n * 8);
  for (i = 0; i < n; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      ri[k] = (int32_t)(n - 1 - i);
      ci[k] = (int32_t)(a->ncols - 1 - a->col_idx[k]);
    }
  assert_int_equal(spx_csr_from_coo(n, a->ncols, a->nnz, ri, ci, a->val.d, SPX_DOUBLE, &rev), SPX_OK);
  free(ri); free(ci);
  for (draw = 0; draw < 17; draw++) {
    for (i = 0; i < n; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      pb[i] = draw && (seed >> 62) == 0 ? nextafter(b[i], (seed >> 61) & 1 ? 2 * b[i] : 0) : b[i];
      rb[n - 1 - i] = pb[i];
    }
    for (pass = 0; pass < 2; pass++) {
      if (!draw && !pass) continue;
      k = host_iterations(pass ? rev : a, fn, pass ? rb : pb, rtol);
      if (k < *lo) *lo = k;
      if (k > *hi) *hi = k;
    }
  }
  free(rb); free(pb);
  spx_csr_destroy(rev);
}

/* a with every value times 2^e (exact: a power of two). */
static spx_csr *scaled_copy(const spx_csr *a, int e) {
  spx_csr *c = NULL;
  double f = 1;
  int64_t k;
  for (k = 0; k < (e < 0 ? -e : e); k++) f = e < 0 ? f * 0.5 : f * 2;
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &c), SPX_OK);
  for (k = 0; k < c->nnz; k++) ((double *)c->val.p)[k] *= f;
  return c;
}

/* One solve of a x = b (x0 = 0) on ctx (NULL: host), x returned (host memory). */
static double *solve_on(spx_context *g, const spx_csr *a, solve_fn fn, const double *b, spx_solve_report *rep,
                        spx_status *st) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_solve_options so;
  double *x = calloc((size_t)a->nrows + 1, 8);
  spx_devptr db = 0, dx = 0;
  assert_non_null(x);
  spx_plan_options_default(&o);
  o.no_calibrate = 1;
  o.force = "csr";
  if (!g) o.backend = SPX_BACKEND_HOST;
  if (spx_plan_create(g, a, &o, &p)) fail_msg("plan: %s", spx_last_error());
  spx_solve_options_default(&so);
  so.maxit = 200;
  if (g) {
    assert_int_equal(spx_device_alloc(g, (size_t)a->nrows * 8, &db), SPX_OK);
    assert_int_equal(spx_device_alloc(g, (size_t)a->nrows * 8, &dx), SPX_OK);
    assert_int_equal(spx_device_upload(g, db, b, (size_t)a->nrows * 8), SPX_OK);
    assert_int_equal(spx_device_memset(g, dx, 0, (size_t)a->nrows * 8), SPX_OK);
    *st = fn(p, (const void *)(uintptr_t)db, (void *)(uintptr_t)dx, &so, rep);
    assert_int_equal(spx_device_download(g, x, dx, (size_t)a->nrows * 8), SPX_OK);
    spx_device_free(g, db);
    spx_device_free(g, dx);
  } else {
    *st = fn(p, b, x, &so, rep);
  }
  spx_plan_destroy(p);
  return x;
}

/* Systems whose b is far from 1: the recurrences' squares would underflow or overflow (CG stopped
 * at x = 0 on diag(1e-200, 2e-200, 3e-200); diagonals of 1e-160 were "not SPD", of 1e200 "the
 * residual became inf"). Solved as A (s x) = s b with s a power of two, they give every iterate of
 * the unscaled system exactly: the same x to the bit, the same iteration count, the report in the
 * caller's units. On the host, and on the GPU when there is one. (BiCGSTAB also squares A's scale:
 * its range is narrower, as solve.h says.) */
static void check_scaled_solves(spx_context *g) {
  static const solve_fn fns[] = {spx_solve_cg, spx_solve_pcg_jacobi, spx_solve_bicgstab};
  /* BiCGSTAB's omega divides by (A s).(A s): A's scale squared must stay in range too */
  static const int exps[3][4] = {{-664, -532, 664, 0}, {-664, -532, 664, 0}, {-300, 300, -150, 0}};
  spx_csr *base, *d3;
  double *b, *x0;
  int m, k;
  int32_t r[3] = {0, 1, 2}, c[3] = {0, 1, 2};
  double v[3] = {1e-200, 2e-200, 3e-200}, bd[3] = {1e-200, 2e-200, 3e-200};
  spx_solve_report rep;
  spx_status st;
  /* the reproducer: diag(1e-200, 2e-200, 3e-200), b = A 1 */
  assert_int_equal(spx_csr_from_coo(3, 3, 3, r, c, v, SPX_DOUBLE, &d3), SPX_OK);
  for (m = 0; m < 2; m++) {
    double *x = solve_on(g, d3, fns[m], bd, &rep, &st);
    if (st != SPX_OK) fail_msg("diag(1e-200..): %s", rep.message);
    assert_true(rep.iterations >= 1);
    for (k = 0; k < 3; k++) assert_true(fabs(x[k] - 1) < 1e-12);
    assert_true(rep.bnorm > 3e-200 && rep.bnorm < 4e-200); /* sqrt(14) 1e-200, in the caller's units */
    assert_non_null(strstr(rep.message, "solved as A (s x) = s b"));
    free(x);
  }
  spx_csr_destroy(d3);
  /* Poisson 2-D scaled by 2^e, b = A 1 scaled alike: the same bits as the unscaled solve */
  assert_int_equal(spx_gen_poisson3d(12, 12, 1, 7, SPX_DOUBLE, &base), SPX_OK);
  b = malloc((size_t)base->nrows * 8);
  x0 = malloc((size_t)base->nrows * 8);
  for (k = 0; k < base->nrows; k++) x0[k] = 1;
  for (m = 0; m < 3; m++) {
    spx_solve_report r0;
    double *ref;
    assert_int_equal(spx_csr_spmv(base, 1.0, x0, 0.0, b), SPX_OK);
    ref = solve_on(g, base, fns[m], b, &r0, &st);
    assert_int_equal(st, SPX_OK);
    for (k = 0; k < 4; k++) {
      spx_csr *a = scaled_copy(base, exps[m][k]);
      double *bs = malloc((size_t)base->nrows * 8), *x;
      assert_int_equal(spx_csr_spmv(a, 1.0, x0, 0.0, bs), SPX_OK);
      x = solve_on(g, a, fns[m], bs, &rep, &st);
      if (st != SPX_OK) fail_msg("2^%d: %s", exps[m][k], rep.message);
      assert_int_equal(rep.iterations, r0.iterations);
      if (memcmp(x, ref, (size_t)base->nrows * 8)) fail_msg("2^%d (method %d): x differs from the unscaled solve's", exps[m][k], m);
      assert_true(fabs(rep.rel_resid - r0.rel_resid) <= 1e-12 * (r0.rel_resid + 1e-300));
      free(x); free(bs);
      spx_csr_destroy(a);
    }
    free(ref);
  }
  free(b); free(x0);
  spx_csr_destroy(base);
}

static void test_badly_scaled_b(void **state) {
  (void)state;
  check_scaled_solves(NULL);
}

static void test_gpu_badly_scaled_b(void **state) {
  spx_context *g = gpu_ctx();
  (void)state;
  if (!g) skip();
  check_scaled_solves(g);
  spx_context_destroy(g);
}

static void test_gpu_solvers(void **state) {
  static const char *const plans[] = {"ell", "sell", "csr", "cusparse"};
  static const solve_fn fns[] = {spx_solve_cg, spx_solve_pcg_jacobi, spx_solve_bicgstab};
  spx_context *g = gpu_ctx();
  spx_csr *a, *c;
  double *b, *bc;
  int k, m;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_elasticity3d(6, 5, 5, SPX_DOUBLE, &a), SPX_OK);
  c = spx_test_shared("cage10");
  b = malloc((size_t)a->nrows * 8);
  bc = malloc((size_t)c->nrows * 8);
  spx_test_fill(b, a->nrows);
  spx_test_fill(bc, c->nrows);
  for (m = 0; m < 3; m++) {
    int64_t lo, hi, clo = 0, chi = 0;
    host_spread(a, fns[m], b, 1e-8, &lo, &hi);
    if (m == 2) host_spread(c, spx_solve_bicgstab, bc, 1e-8, &clo, &chi);
    for (k = 0; k < 4; k++) {
      double *x1 = gpu_solve(g, a, plans[k], fns[m], b, lo, hi, 1e-8, 0, 0);
      double *x2 = gpu_solve(g, a, plans[k], fns[m], b, lo, hi, 1e-8, k == 0, k == 1 ? 1 : 0);
      /* The same device, grid and order: the same bits (poll and host_vectors change nothing). */
      if (memcmp(x1, x2, (size_t)a->nrows * 8)) fail_msg("%s: two runs differ", plans[k]);
      free(x1); free(x2);
      if (m == 2) free(gpu_solve(g, c, plans[k], spx_solve_bicgstab, bc, clo, chi, 1e-8, 0, 0));
    }
  }
  free(b); free(bc);
  spx_csr_destroy(a); spx_csr_destroy(c);
  spx_context_destroy(g);
}

/* CG, Jacobi PCG and BiCGSTAB run each iteration as one CUDA graph: the same kernels in the same
 * order as launching them, so the same iterations, residual history and x to the bit, for spx's
 * kernels and cuSPARSE's product; every iteration a graph (none with no_graph), also past a stop
 * within the iterations between state reads and at a maxit off their multiple (13 with poll 8). */
static void test_gpu_solve_graph(void **state) {
  static const char *const plans[] = {"csr", "sell", "cusparse"};
  static const solve_fn fns[] = {spx_solve_cg, spx_solve_pcg_jacobi, spx_solve_bicgstab};
  spx_context *g = gpu_ctx();
  spx_csr *a;
  double *b, h1[4096], h2[4096];
  int k, m, t;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_elasticity3d(6, 5, 5, SPX_DOUBLE, &a), SPX_OK);
  b = malloc((size_t)a->nrows * 8);
  spx_test_fill(b, a->nrows);
  for (m = 0; m < 3; m++)
    for (k = 0; k < 3; k++)
      for (t = 0; t < 2; t++) {
        const int64_t maxit = t ? 13 : 3000;
        spx_solve_report r1, r2;
        spx_solve_options o1, o2;
        spx_status s1, s2;
        double *x1, *x2;
        spx_solve_options_default(&o1);
        o1.maxit = maxit;
        o1.history_len = 4096;
        o2 = o1;
        o1.history = h1;
        o2.history = h2;
        o2.no_graph = 1;
        x1 = gpu_run(g, a, plans[k], fns[m], b, &o1, &r1, &s1);
        x2 = gpu_run(g, a, plans[k], fns[m], b, &o2, &r2, &s2);
        if ((s1 != SPX_OK && s1 != SPX_NOT_CONVERGED) || s2 != s1)
          fail_msg("%s %s: %s", plans[k], r1.method, spx_last_error());
        if (r1.iterations != r2.iterations || r1.spmvs != r2.spmvs || r1.status != r2.status ||
            memcmp(x1, x2, (size_t)a->nrows * 8) || memcmp(h1, h2, (size_t)(r1.iterations + 1) * 8))
          fail_msg("%s %s maxit %lld: graph %lld iterations, %lld SpMVs; launched %lld, %lld; x or the history differ",
                   plans[k], r1.method, (long long)maxit, (long long)r1.iterations, (long long)r1.spmvs,
                   (long long)r2.iterations, (long long)r2.spmvs);
        if (r1.graph_launches < r1.iterations || r2.graph_launches != 0 || (t && r1.graph_launches != 13))
          fail_msg("%s %s maxit %lld: %lld graphs (launched: %lld)", plans[k], r1.method, (long long)maxit,
                   (long long)r1.graph_launches, (long long)r2.graph_launches);
        if (t) assert_int_equal(r1.status, SPX_NOT_CONVERGED);
        free(x1); free(x2);
      }
  free(b);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* On the GPU, a deferred plan starts on the staged CSR (spx's kernel or cuSPARSE, nothing converted)
 * and the solvers upgrade it on the device from the staged arrays (upgrade_at 8: the first state
 * read at or after it), converging like the plan chosen from the start (+-3 iterations); and a
 * solve left to the rate check (-1) follows its rule: it upgrades early (by iteration 64) where the
 * predicted saving over the host's iteration count is over twice the pending conversion, and never
 * where it is under half. */
static void test_gpu_deferred(void **state) {
  static const char *const fmts[] = {"sell", "ell", "sdia"};
  spx_context *g = gpu_ctx();
  spx_csr *a;
  double *b;
  int k;
  (void)state;
  if (!g) skip();
  /* past 2^20 nonzeros: the plan stages the CSR on the device */
  assert_int_equal(spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &a), SPX_OK);
  b = malloc((size_t)a->nrows * 8);
  spx_test_fill(b, a->nrows);
  for (k = 0; k < 3; k++) {
    spx_plan_options po;
    spx_plan *p = NULL;
    spx_solve_options o;
    spx_solve_report r;
    spx_plan_pending_info pi;
    spx_format f;
    double *x = calloc((size_t)a->nrows, 8), saving;
    int64_t hit = host_iterations(a, spx_solve_cg, b, 1e-8);
    assert_int_equal(spx_format_from_name(fmts[k], &f), SPX_OK);
    spx_plan_options_default(&po);
    po.force = fmts[k]; po.defer = 1; po.eager = 1;
    if (spx_plan_create(g, a, &po, &p) != SPX_OK) fail_msg("%s: %s", fmts[k], spx_last_error());
    assert_int_equal(spx_plan_pending(p, &pi), 1);
    assert_true(spx_plan_format(p) == SPX_FORMAT_CSR);
    assert_true(pi.format == f);
    saving = (double)hit * (pi.current_us - pi.pending_us) * 1e-3;
    spx_solve_options_default(&o);
    o.host_vectors = 1; o.maxit = 3000;
    o.upgrade_at = k < 2 ? 8 : -1;
    if (spx_solve_cg(p, b, x, &o, &r) != SPX_OK) fail_msg("%s: %s", fmts[k], r.message);
    print_message("deferred %s: CSR %.2f us, pending %.2f us, conversion %.3f ms: saving over %lld iterations %.3f ms; "
                  "upgraded at %lld in %.2f ms, %lld iterations\n", fmts[k], pi.current_us, pi.pending_us, pi.convert_ms,
                  (long long)hit, saving, (long long)r.upgraded_at, r.upgrade_ms, (long long)r.iterations);
    if (k < 2) assert_int_equal(r.upgraded_at, 8);
    else if (saving > 2 * pi.convert_ms) assert_true(r.upgraded_at >= 4 && r.upgraded_at <= 64);
    else if (saving < 0.5 * pi.convert_ms) assert_int_equal(r.upgraded_at, -1);
    assert_int_equal(spx_plan_format(p), r.upgraded_at >= 0 ? f : SPX_FORMAT_CSR);
    assert_true(r.iterations >= hit - 3 && r.iterations <= hit + 3);
    assert_true(true_rel(a, b, x) < 3e-8);
    spx_plan_destroy(p);
    free(x);
  }
  free(b);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* GPU breakdowns and the iteration limit report as the host does. */
static void test_gpu_endings(void **state) {
  spx_context *g = gpu_ctx();
  spx_csr *a, *rot;
  spx_plan *p, *pr;
  spx_solve_options o;
  spx_solve_report r;
  double *b, *x, b2[2] = {1, 0}, x2[2] = {0, 0};
  int32_t ri[] = {0, 1}, ci[] = {1, 0};
  double rv[] = {1, -1};
  int64_t i, n;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(8, 8, 8, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  for (i = 0; i < a->nnz; i++) a->val.d[i] = -a->val.d[i];
  assert_int_equal(spx_plan_create(g, a, NULL, &p), SPX_OK);
  b = malloc((size_t)n * 8); x = calloc((size_t)n, 8);
  spx_test_fill(b, n);
  spx_solve_options_default(&o);
  o.host_vectors = 1;
  assert_int_equal(spx_solve_cg(p, b, x, &o, &r), SPX_BREAKDOWN);
  assert_non_null(strstr(r.message, "not symmetric positive definite"));
  assert_int_equal(r.iterations, 0);
  o.maxit = 4;
  assert_int_equal(spx_solve_bicgstab(p, b, x, &o, &r), SPX_NOT_CONVERGED);
  assert_int_equal(r.iterations, 4);
  for (i = 0; i < n; i++) assert_true(x[i] - x[i] == 0);
  assert_int_equal(spx_csr_from_coo(2, 2, 2, ri, ci, rv, SPX_DOUBLE, &rot), SPX_OK);
  assert_int_equal(spx_plan_create(g, rot, NULL, &pr), SPX_OK);
  assert_int_equal(spx_solve_bicgstab(pr, b2, x2, &o, &r), SPX_BREAKDOWN);
  assert_non_null(strstr(r.message, "r0^.v"));
  {
    /* Jacobi's diagonal is inverted on the device: the least bad row is named (a zero at 37, a NaN
     * at 100), as the host names it; and float vectors converge as double ones do */
    spx_csr *z, *af;
    spx_plan *pz, *pf, *pd;
    float *bf = malloc((size_t)n * 4), *xf = calloc((size_t)n, 4);
    int64_t k, it_d;
    for (i = 0; i < a->nnz; i++) a->val.d[i] = -a->val.d[i]; /* SPD again */
    assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &z), SPX_OK);
    for (i = 0; i < n; i++)
      for (k = z->row_ptr[i]; k < z->row_ptr[i + 1]; k++)
        if (z->col_idx[k] == i && (i == 37 || i == 100)) z->val.d[k] = i == 37 ? 0.0 : NAN;
    assert_int_equal(spx_plan_create(g, z, NULL, &pz), SPX_OK);
    spx_solve_options_default(&o);
    o.host_vectors = 1;
    memset(x, 0, (size_t)n * 8);
    assert_int_equal(spx_solve_pcg_jacobi(pz, b, x, &o, &r), SPX_INVALID_ARGUMENT);
    if (!strstr(r.message, "a[37][37] = 0")) fail_msg("'%s' lacks a[37][37] = 0", r.message);
    assert_int_equal(spx_plan_create(g, a, NULL, &pd), SPX_OK);
    assert_int_equal(spx_solve_pcg_jacobi(pd, b, x, &o, &r), SPX_OK);
    it_d = r.iterations;
    assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
    assert_int_equal(spx_plan_create(g, af, NULL, &pf), SPX_OK);
    for (i = 0; i < n; i++) bf[i] = (float)b[i];
    o.rtol = 1e-5;
    assert_int_equal(spx_solve_pcg_jacobi(pf, bf, xf, &o, &r), SPX_OK);
    assert_true(r.true_rel_resid <= 3e-5);
    assert_true(r.iterations > 0 && r.iterations <= it_d);
    free(bf); free(xf);
    spx_plan_destroy(pz); spx_plan_destroy(pf); spx_plan_destroy(pd);
    spx_csr_destroy(z); spx_csr_destroy(af);
  }
  free(b); free(x);
  spx_plan_destroy(p); spx_plan_destroy(pr);
  spx_csr_destroy(a); spx_csr_destroy(rot);
  spx_context_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_poisson_elasticity),  cmocka_unit_test(test_shared_spd),
      cmocka_unit_test(test_pcg_badly_scaled),    cmocka_unit_test(test_bicgstab_nonsymmetric),
      cmocka_unit_test(test_breakdowns),          cmocka_unit_test(test_not_converged),
      cmocka_unit_test(test_bad_arguments),       cmocka_unit_test(test_preconditioner_callback),
      cmocka_unit_test(test_any_plan),            cmocka_unit_test(test_deferred_plan), cmocka_unit_test(test_report_print),
      cmocka_unit_test(test_kernels_compile),     cmocka_unit_test(test_gpu_solvers),
      cmocka_unit_test(test_gpu_deferred), cmocka_unit_test(test_gpu_endings), cmocka_unit_test(test_gpu_solve_graph),
      cmocka_unit_test(test_badly_scaled_b), cmocka_unit_test(test_gpu_badly_scaled_b),
  };
  setenv("SPX_QUIET", "1", 0);
  spx__config_reload();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
