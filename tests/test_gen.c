/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/gen.h: sizes and patterns counted by hand, stencils against a direct grid loop,
 * elasticity against rigid-body modes, the patch test and exact strain energies, power-law
 * bounds, determinism and distribution, and replication against per-block SpMV. */
#include "spx_test.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

#define ABSD(x) ((x) < 0 ? -(x) : (x))

static double *rvec(int64_t n) {
  double *v = (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  assert_non_null(v);
  spx_test_fill(v, n);
  return v;
}

static void analyze_ok(const spx_csr *a, spx_analysis *an) {
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  assert_int_equal(spx_analyze(a, an), SPX_OK);
}

/* ---- Poisson ---- */

/* y = A x by looping over the grid directly. */
static void stencil_apply(int64_t nx, int64_t ny, int64_t nz, int points, const double *x, double *y) {
  int64_t i, j, k, di, dj, dk;
  for (k = 0; k < nz; k++)
    for (j = 0; j < ny; j++)
      for (i = 0; i < nx; i++) {
        int64_t r = i + nx * (j + ny * k);
        double s = (points == 7 ? 6 : 26) * x[r];
        for (dk = -1; dk <= 1; dk++)
          for (dj = -1; dj <= 1; dj++)
            for (di = -1; di <= 1; di++) {
              int nb = (di != 0) + (dj != 0) + (dk != 0);
              if (nb == 0 || (points == 7 && nb != 1)) continue;
              if (i + di < 0 || i + di >= nx || j + dj < 0 || j + dj >= ny || k + dk < 0 || k + dk >= nz) continue;
              s -= x[r + di + nx * (dj + ny * dk)];
            }
        y[r] = s;
      }
}

static void check_poisson(int64_t nx, int64_t ny, int64_t nz, int points, int64_t nnz, int64_t row_min,
                          int64_t row_max) {
  spx_csr *a, *af;
  spx_analysis an;
  int64_t n = nx * ny * nz, i;
  double *x = rvec(n), *y = rvec(n), *yref = rvec(n);
  float *xf = (float *)malloc((size_t)n * sizeof *xf), *yf = (float *)malloc((size_t)n * sizeof *yf);
  assert_int_equal(spx_gen_poisson3d(nx, ny, nz, points, SPX_DOUBLE, &a), SPX_OK);
  analyze_ok(a, &an);
  assert_int_equal(an.nrows, n);
  assert_int_equal(an.nnz, nnz);
  assert_int_equal(an.row_min, row_min);
  assert_int_equal(an.row_max, row_max);
  assert_int_equal(an.structurally_symmetric, 1);
  assert_int_equal(an.numerically_symmetric, 1);
  assert_int_equal(an.diagonally_dominant, 1);
  assert_int_equal(an.diag_dominant_rows, n);
  assert_int_equal(an.missing_diagonal, 0);
  /* farthest neighbour: +z if there is a z direction, else +y, else +x (27-point: all at once) */
  if (points == 7) assert_int_equal(an.bandwidth, nz > 1 ? nx * ny : ny > 1 ? nx : nx > 1);
  else assert_int_equal(an.bandwidth, (nx > 1) + (ny > 1) * nx + (nz > 1) * nx * ny);
  stencil_apply(nx, ny, nz, points, x, yref);
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_OK);
  assert_true(spx_test_relerr(y, yref, n) < 1e-14);
  /* float: same pattern, same (exactly representable) values */
  assert_int_equal(spx_gen_poisson3d(nx, ny, nz, points, SPX_FLOAT, &af), SPX_OK);
  assert_int_equal(af->dtype, SPX_FLOAT);
  assert_int_equal(af->nnz, nnz);
  assert_memory_equal(af->row_ptr, a->row_ptr, (size_t)(n + 1) * sizeof(int64_t));
  assert_memory_equal(af->col_idx, a->col_idx, (size_t)nnz * sizeof(int32_t));
  for (i = 0; i < nnz; i++) assert_true((double)af->val.f[i] == a->val.d[i]);
  for (i = 0; i < n; i++) { xf[i] = (float)x[i]; yf[i] = NAN; }
  assert_int_equal(spx_csr_spmv(af, 1.0, xf, 0.0, yf), SPX_OK);
  for (i = 0; i < n; i++) y[i] = yf[i];
  assert_true(spx_test_relerr(y, yref, n) < 1e-5);
  spx_csr_destroy(a); spx_csr_destroy(af);
  free(x); free(y); free(yref); free(xf); free(yf);
}

static void test_poisson(void **state) {
  (void)state;
  /* 7-point on 3x4x5: 7*60 minus 2 per missing neighbour, 2*(12+15+20) of them. Corners have 3
   * neighbours; (1,1..2,1..3) are interior. */
  check_poisson(3, 4, 5, 7, 7 * 60 - 2 * (12 + 15 + 20), 4, 7);
  /* 27-point: per direction 3n-2 neighbour pairs: 7*10*13. */
  check_poisson(3, 4, 5, 27, 7 * 10 * 13, 8, 27);
  check_poisson(1, 1, 1, 7, 1, 1, 1);
  check_poisson(6, 1, 1, 27, 16, 2, 3);
  check_poisson(9, 7, 8, 7, 9 * 7 * 8 + 2 * (8 * 7 * 8 + 9 * 6 * 8 + 9 * 7 * 7), 4, 7);
}

static void test_poisson_bad(void **state) {
  spx_csr *a = (spx_csr *)1;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(3, 3, 3, 5, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_null(a);
  assert_non_null(strstr(spx_last_error(), "points"));
  assert_int_equal(spx_gen_poisson3d(3, 0, 3, 7, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_poisson3d(-3, 3, 3, 7, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_poisson3d(3, 3, 3, 7, (spx_dtype)4, &a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "dtype"));
  assert_int_equal(spx_gen_poisson3d(2000, 2000, 1000, 7, SPX_DOUBLE, &a), SPX_RANGE);
  assert_null(a);
  assert_int_equal(spx_gen_poisson3d(3, 3, 3, 7, SPX_DOUBLE, NULL), SPX_INVALID_ARGUMENT);
}

/* Anisotropic 7-point: y = A x against a direct grid loop with the coefficients per direction
 * (grids with extent 1 included, where a column alone does not tell the direction), the pattern of
 * spx_gen_poisson3d's, SPD (symmetric, dominant), all ones giving spx_gen_poisson3d's values, float,
 * and bad coefficients refused. */
static void check_aniso(int64_t nx, int64_t ny, int64_t nz, double cx, double cy, double cz) {
  spx_csr *a, *p, *af;
  spx_analysis an;
  int64_t n = nx * ny * nz, i, j, k;
  double *x = rvec(n), *y = rvec(n), *yref = rvec(n);
  assert_int_equal(spx_gen_poisson3d_aniso(nx, ny, nz, cx, cy, cz, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(nx, ny, nz, 7, SPX_DOUBLE, &p), SPX_OK);
  analyze_ok(a, &an);
  assert_int_equal(a->nnz, p->nnz);
  assert_memory_equal(a->row_ptr, p->row_ptr, (size_t)(n + 1) * sizeof(int64_t));
  assert_memory_equal(a->col_idx, p->col_idx, (size_t)a->nnz * sizeof(int32_t));
  assert_int_equal(an.numerically_symmetric, 1);
  assert_int_equal(an.diag_dominant_rows, n);
  for (k = 0; k < nz; k++)
    for (j = 0; j < ny; j++)
      for (i = 0; i < nx; i++) {
        int64_t r = i + nx * (j + ny * k);
        double s = 2 * (cx + cy + cz) * x[r];
        if (i > 0) s -= cx * x[r - 1];
        if (i < nx - 1) s -= cx * x[r + 1];
        if (j > 0) s -= cy * x[r - nx];
        if (j < ny - 1) s -= cy * x[r + nx];
        if (k > 0) s -= cz * x[r - nx * ny];
        if (k < nz - 1) s -= cz * x[r + nx * ny];
        yref[r] = s;
      }
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_OK);
  assert_true(spx_test_relerr(y, yref, n) < 1e-14);
  if (cx == 1 && cy == 1 && cz == 1) assert_memory_equal(a->val.d, p->val.d, (size_t)a->nnz * sizeof(double));
  assert_int_equal(spx_gen_poisson3d_aniso(nx, ny, nz, cx, cy, cz, SPX_FLOAT, &af), SPX_OK);
  for (i = 0; i < a->nnz; i++) assert_true(af->val.f[i] == (float)a->val.d[i]);
  spx_csr_destroy(a); spx_csr_destroy(p); spx_csr_destroy(af);
  free(x); free(y); free(yref);
}

static void test_poisson_aniso(void **state) {
  spx_csr *a = (spx_csr *)1;
  (void)state;
  check_aniso(6, 5, 4, 1, 1, 1e-4);
  check_aniso(7, 3, 5, 2.5, 0.5, 3);
  check_aniso(1, 6, 5, 1, 2, 3); /* nx = 1: column r + 1 is a y neighbour */
  check_aniso(1, 1, 7, 1, 2, 3);
  check_aniso(4, 4, 4, 1, 1, 1);
  assert_int_equal(spx_gen_poisson3d_aniso(3, 3, 3, 1, 0, 1, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_null(a);
  assert_non_null(strstr(spx_last_error(), "positive"));
  assert_int_equal(spx_gen_poisson3d_aniso(3, 3, 3, 1, 1, NAN, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_poisson3d_aniso(3, 3, 3, -1, 1, 1, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_poisson3d_aniso(3, 0, 3, 1, 1, 1, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_poisson3d_aniso(3, 3, 3, 1, 1, 1, SPX_DOUBLE, NULL), SPX_INVALID_ARGUMENT);
}

/* ---- Elasticity ---- */

static const double E_LAM = 0.3 / (1.3 * 0.4), E_MU = 1 / 2.6; /* E = 1, nu = 0.3 */

/* Displacement vector of a field given per node position (free nodes only). */
typedef void (*field_fn)(const double p[3], const double *par, double u[3]);
static double *node_field(int64_t nx, int64_t ny, int64_t nz, field_fn fn, const double *par) {
  int64_t nf = nx * (ny + 1) * (nz + 1), f;
  double *u = (double *)malloc((size_t)(3 * nf) * sizeof *u);
  assert_non_null(u);
  for (f = 0; f < nf; f++) {
    double p[3];
    p[0] = (double)(f % nx + 1); p[1] = (double)(f / nx % (ny + 1)); p[2] = (double)(f / nx / (ny + 1));
    fn(p, par, u + 3 * f);
  }
  return u;
}
/* u = c + W p, par = {c[3], W[9]} (translations, rotations and uniform strains). */
static void affine(const double p[3], const double *par, double u[3]) {
  int c;
  for (c = 0; c < 3; c++) u[c] = par[c] + par[3 + 3 * c] * p[0] + par[4 + 3 * c] * p[1] + par[5 + 3 * c] * p[2];
}

/* max |(K u)_r| over rows of nodes whose neighbourhood passes the test, relative to max |K|. */
static double max_residual(const spx_csr *k, int64_t nx, int64_t ny, int64_t nz, const double *u, int interior) {
  int64_t n = k->nrows, r;
  double *y = rvec(n), kmax = 0, res = 0;
  assert_int_equal(spx_csr_spmv(k, 1.0, u, 0.0, y), SPX_OK);
  for (r = 0; r < k->nnz; r++) kmax = ABSD(k->val.d[r]) > kmax ? ABSD(k->val.d[r]) : kmax;
  for (r = 0; r < n; r++) {
    int64_t f = r / 3, ix = f % nx + 1, iy = f / nx % (ny + 1), iz = f / nx / (ny + 1);
    if (ix < 2) continue; /* couples to the clamped face */
    if (interior && (ix == nx || iy == 0 || iy == ny || iz == 0 || iz == nz)) continue;
    res = ABSD(y[r]) > res ? ABSD(y[r]) : res;
  }
  free(y);
  return res / kmax;
}

/* a_ij; fails the test when not stored. */
static double entry(const spx_csr *a, int64_t i, int64_t j) {
  int64_t p;
  for (p = a->row_ptr[i]; p < a->row_ptr[i + 1]; p++)
    if (a->col_idx[p] == j) return a->val.d[p];
  fail_msg("entry (%lld, %lld) not stored", (long long)i, (long long)j);
  return 0;
}

static double quad(const spx_csr *k, const double *u) {
  double *y = rvec(k->nrows), s = 0;
  int64_t i;
  assert_int_equal(spx_csr_spmv(k, 1.0, u, 0.0, y), SPX_OK);
  for (i = 0; i < k->nrows; i++) s += u[i] * y[i];
  free(y);
  return s;
}

static void test_elasticity(void **state) {
  const int64_t nx = 4, ny = 3, nz = 3, nf = nx * (ny + 1) * (nz + 1), n = 3 * nf;
  spx_csr *k, *kf;
  spx_analysis an;
  int64_t i, f;
  double par[12], *u, e, a, b, c;
  (void)state;
  assert_int_equal(spx_gen_elasticity3d(nx, ny, nz, SPX_DOUBLE, &k), SPX_OK);
  analyze_ok(k, &an);
  assert_int_equal(an.nrows, n);
  assert_int_equal(an.nnz, 9 * (3 * nx - 2) * (3 * ny + 1) * (3 * nz + 1));
  assert_int_equal(an.numerically_symmetric, 1); /* bitwise, by construction */
  assert_int_equal(an.missing_diagonal, 0);
  assert_int_equal(an.row_max, 81);
  assert_int_equal(an.row_min, 3 * 2 * 2 * 2); /* corner node at ix = 1 or nx */
  /* Each row: one run per (y,z) neighbour line, 3 columns per x-neighbour. */
  assert_int_equal(an.runs, 3 * nx * (3 * ny + 1) * (3 * nz + 1));
  assert_int_equal(an.run_max, 9);
  assert_true(an.run_share2 == 1.0);
  for (f = 0; f < nf; f++) {
    int64_t ix = f % nx + 1, iy = f / nx % (ny + 1), iz = f / nx / (ny + 1);
    if (ix > 1 && ix < nx && iy > 0 && iy < ny && iz > 0 && iz < nz) {
      int64_t r = 3 * f + (f % 3), p, runs = 1;
      assert_int_equal(k->row_ptr[r + 1] - k->row_ptr[r], 81);
      for (p = k->row_ptr[r] + 1; p < k->row_ptr[r + 1]; p++) runs += k->col_idx[p] != k->col_idx[p - 1] + 1;
      assert_int_equal(runs, 9);
    }
  }
  { /* Entries integrated by hand for an interior node and its +x neighbour (exact for Q1 on unit
     * cubes, and wrong with any other quadrature): per element, the diagonal is (l+m)/9 + m/3; the
     * x-edge couplings are -(l+m)/9 (xx) and (l+m)/18 (yy); 8 and 4 elements share them. */
    int64_t node = 1 + nx * (1 + (ny + 1) * 1); /* (ix, iy, iz) = (2, 1, 1) */
    assert_true(ABSD(entry(k, 3 * node, 3 * node) - 8 * ((E_LAM + E_MU) / 9 + E_MU / 3)) < 1e-14);
    assert_true(ABSD(entry(k, 3 * node + 2, 3 * node + 2) - 8 * ((E_LAM + E_MU) / 9 + E_MU / 3)) < 1e-14);
    assert_true(ABSD(entry(k, 3 * node, 3 * node + 3) + 4 * (E_LAM + E_MU) / 9) < 1e-14);
    assert_true(ABSD(entry(k, 3 * node + 1, 3 * node + 4) - 2 * (E_LAM + E_MU) / 9) < 1e-14);
  }
  for (i = 0; i < n; i++) { /* SPD: positive diagonal */
    for (f = k->row_ptr[i]; k->col_idx[f] != i; f++) {}
    assert_true(k->val.d[f] > 0);
  }
  /* Rigid-body modes: random translation plus random infinitesimal rotation W = -W^T. */
  memset(par, 0, sizeof par);
  spx_test_fill(par, 3);
  spx_test_fill(&a, 1); spx_test_fill(&b, 1); spx_test_fill(&c, 1);
  par[4] = -a; par[6] = a; par[5] = b; par[9] = -b; par[8] = -c; par[10] = c;
  u = node_field(nx, ny, nz, affine, par);
  assert_true(max_residual(k, nx, ny, nz, u, 0) < 1e-13);
  free(u);
  /* Patch test: any affine field is in equilibrium at fully interior nodes. */
  spx_test_fill(par, 12);
  u = node_field(nx, ny, nz, affine, par);
  assert_true(max_residual(k, nx, ny, nz, u, 1) < 1e-13);
  assert_true(max_residual(k, nx, ny, nz, u, 0) > 1e-3); /* and not elsewhere: the test can fail */
  free(u);
  /* Strain energy of u = x * (a, b, c), zero on the clamped face: u^T K u = integral of sigma:eps
   * = ((lambda + 2 mu) a^2 + mu (b^2 + c^2)) * volume. */
  memset(par, 0, sizeof par);
  par[3] = a; par[6] = b; par[9] = c;
  u = node_field(nx, ny, nz, affine, par);
  e = ((E_LAM + 2 * E_MU) * a * a + E_MU * (b * b + c * c)) * (double)(nx * ny * nz);
  assert_true(ABSD(quad(k, u) - e) < 1e-12 * e);
  free(u);
  /* Positive definite on random vectors. */
  for (i = 0; i < 5; i++) {
    u = rvec(n);
    assert_true(quad(k, u) > 0);
    free(u);
  }
  /* float: same pattern, values rounded, still exactly symmetric */
  assert_int_equal(spx_gen_elasticity3d(nx, ny, nz, SPX_FLOAT, &kf), SPX_OK);
  analyze_ok(kf, &an);
  assert_int_equal(an.numerically_symmetric, 1);
  assert_memory_equal(kf->col_idx, k->col_idx, (size_t)k->nnz * sizeof(int32_t));
  for (i = 0; i < k->nnz; i++) assert_true(kf->val.f[i] == (float)k->val.d[i]);
  spx_csr_destroy(kf);
  spx_csr_destroy(k);
}

/* One element: 4 free nodes (x = 1), every row couples all of them, and since consecutive free
 * nodes are consecutive in the numbering, each row is one run of 12. */
static void test_elasticity_small(void **state) {
  spx_csr *k;
  spx_analysis an;
  (void)state;
  assert_int_equal(spx_gen_elasticity3d(1, 1, 1, SPX_DOUBLE, &k), SPX_OK);
  analyze_ok(k, &an);
  assert_int_equal(an.nrows, 12);
  assert_int_equal(an.nnz, 144);
  assert_int_equal(an.run_max, 12);
  assert_int_equal(an.runs, 12);
  assert_int_equal(an.numerically_symmetric, 1);
  spx_csr_destroy(k);
  assert_int_equal(spx_gen_elasticity3d(0, 1, 1, SPX_DOUBLE, &k), SPX_INVALID_ARGUMENT);
  assert_null(k);
  assert_int_equal(spx_gen_elasticity3d(1000, 1000, 1000, SPX_DOUBLE, &k), SPX_RANGE); /* 1e9 elements, 3e9 unknowns */
  assert_non_null(strstr(spx_last_error(), "unknowns"));
  assert_int_equal(spx_gen_elasticity3d(2, 2, 2, (spx_dtype)-1, &k), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_elasticity3d(2, 2, 2, SPX_DOUBLE, NULL), SPX_INVALID_ARGUMENT);
}

/* ---- Power law ---- */

static void check_powerlaw_rows(const spx_csr *a, int64_t min_row, int64_t max_row) {
  int64_t i, k;
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  for (i = 0; i < a->nrows; i++) {
    int64_t len = a->row_ptr[i + 1] - a->row_ptr[i], has = 0;
    double off = 0, d = 0;
    assert_true(len >= min_row && len <= max_row);
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) {
      double v = a->dtype == SPX_DOUBLE ? a->val.d[k] : a->val.f[k];
      if (a->col_idx[k] == i) { has = 1; d = v; }
      else { assert_true(v != 0 && v >= -1 && v <= 1); off += ABSD(v); }
    }
    assert_true(has);
    if (a->dtype == SPX_DOUBLE) assert_true(d == 1 + off);
    else assert_true(ABSD(d - (1 + off)) <= 1e-6 * (1 + off));
  }
}

static int same_matrix(const spx_csr *a, const spx_csr *b) {
  return a->nnz == b->nnz && !memcmp(a->row_ptr, b->row_ptr, (size_t)(a->nrows + 1) * sizeof(int64_t)) &&
         !memcmp(a->col_idx, b->col_idx, (size_t)a->nnz * sizeof(int32_t)) &&
         !memcmp(a->val.p, b->val.p, (size_t)a->nnz * SPX_DTYPE_SIZE(a->dtype));
}

static void test_powerlaw(void **state) {
  const int64_t n = 20000;
  uint64_t seed = (uint64_t)((spx_test_rand() + 1) * 1e15);
  spx_csr *a, *b;
  spx_analysis an;
  int64_t i, ones = 0;
  double h = 0;
  (void)state;
  assert_int_equal(spx_gen_powerlaw(n, 2.0, 1, 50, seed, SPX_DOUBLE, &a), SPX_OK);
  check_powerlaw_rows(a, 1, 50);
  analyze_ok(a, &an);
  assert_int_equal(an.missing_diagonal, 0);
  assert_int_equal(an.diagonally_dominant, 1);
  assert_int_equal(an.structurally_symmetric, 0);
  /* P(k = 1) = 1 / sum_{k<=50} k^-2 = 0.6153...; binomial sd 0.0034, tolerance 0.02 */
  for (i = 1; i <= 50; i++) h += 1.0 / (double)(i * i);
  for (i = 0; i < n; i++) ones += a->row_ptr[i + 1] - a->row_ptr[i] == 1;
  assert_true(ABSD((double)ones / (double)n - 1 / h) < 0.02);
  assert_true(an.row_max > 20); /* the tail is there */
  /* Same seed, same matrix; another seed, another one. */
  assert_int_equal(spx_gen_powerlaw(n, 2.0, 1, 50, seed, SPX_DOUBLE, &b), SPX_OK);
  assert_true(same_matrix(a, b));
  spx_csr_destroy(b);
  assert_int_equal(spx_gen_powerlaw(n, 2.0, 1, 50, seed + 1, SPX_DOUBLE, &b), SPX_OK);
  assert_false(same_matrix(a, b));
  spx_csr_destroy(b);
#if defined(_OPENMP)
  { /* independent of the thread count */
    int t = omp_get_max_threads();
    omp_set_num_threads(1);
    assert_int_equal(spx_gen_powerlaw(n, 2.0, 1, 50, seed, SPX_DOUBLE, &b), SPX_OK);
    omp_set_num_threads(t);
    assert_true(same_matrix(a, b));
    spx_csr_destroy(b);
  }
#endif
  spx_csr_destroy(a);
  /* alpha = 1 on [1, 10]: P(1) = 1/H_10 = 0.3414; alpha = 0: uniform, mean 5.5; alpha = -3 on
   * [1,10]: P(10) = 1000 / sum k^3 = 1000/3025. */
  assert_int_equal(spx_gen_powerlaw(n, 1.0, 1, 10, seed, SPX_FLOAT, &a), SPX_OK);
  check_powerlaw_rows(a, 1, 10);
  for (ones = 0, i = 0; i < n; i++) ones += a->row_ptr[i + 1] - a->row_ptr[i] == 1;
  assert_true(ABSD((double)ones / (double)n - 0.34141715214740553) < 0.02);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_powerlaw(n, 0.0, 1, 10, seed, SPX_DOUBLE, &a), SPX_OK);
  assert_true(ABSD((double)a->nnz / (double)n - 5.5) < 0.1);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_powerlaw(n, -3.0, 1, 10, seed, SPX_DOUBLE, &a), SPX_OK);
  for (ones = 0, i = 0; i < n; i++) ones += a->row_ptr[i + 1] - a->row_ptr[i] == 10;
  assert_true(ABSD((double)ones / (double)n - 1000.0 / 3025) < 0.02);
  spx_csr_destroy(a);
}

static void test_powerlaw_shapes(void **state) {
  uint64_t seed = (uint64_t)((spx_test_rand() + 1) * 1e15);
  spx_csr *a;
  spx_analysis an;
  (void)state;
  /* Dense: every row full (selection sampling path). */
  assert_int_equal(spx_gen_powerlaw(40, 2.0, 40, 40, seed, SPX_DOUBLE, &a), SPX_OK);
  check_powerlaw_rows(a, 40, 40);
  assert_int_equal(a->nnz, 1600);
  spx_csr_destroy(a);
  /* Fixed length in both sampling regimes (30 of 49 others is dense, 20 is sparse). */
  assert_int_equal(spx_gen_powerlaw(50, 1.5, 31, 31, seed, SPX_DOUBLE, &a), SPX_OK);
  check_powerlaw_rows(a, 31, 31);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_powerlaw(500, 1.5, 21, 21, seed, SPX_FLOAT, &a), SPX_OK);
  check_powerlaw_rows(a, 21, 21);
  analyze_ok(a, &an);
  assert_true(an.row_stddev == 0 && an.B == 1);
  spx_csr_destroy(a);
  /* Long rows among short ones (heap of columns sorted with qsort). */
  assert_int_equal(spx_gen_powerlaw(3000, 1.5, 1, 3000, seed, SPX_DOUBLE, &a), SPX_OK);
  check_powerlaw_rows(a, 1, 3000);
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_powerlaw(1, 2.0, 1, 1, seed, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(a->nnz, 1);
  assert_true(a->val.d[0] == 1);
  spx_csr_destroy(a);
  /* Bad arguments. */
  assert_int_equal(spx_gen_powerlaw(0, 2.0, 1, 1, seed, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_null(a);
  assert_int_equal(spx_gen_powerlaw(10, 2.0, 0, 5, seed, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "min_row"));
  assert_int_equal(spx_gen_powerlaw(10, 2.0, 6, 5, seed, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_powerlaw(10, 2.0, 1, 11, seed, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_powerlaw(10, NAN, 1, 5, seed, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_powerlaw(10, INFINITY, 1, 5, seed, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "alpha"));
  assert_int_equal(spx_gen_powerlaw(10, 2.0, 1, 5, seed, (spx_dtype)2, &a), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_powerlaw((int64_t)INT32_MAX + 1, 2.0, 1, 5, seed, SPX_DOUBLE, &a), SPX_RANGE);
  assert_int_equal(spx_gen_powerlaw(10, 2.0, 1, 5, seed, SPX_DOUBLE, NULL), SPX_INVALID_ARGUMENT);
}

/* ---- Replication ---- */

static void test_replicate(void **state) {
  const int64_t copies = 5;
  uint64_t seed = (uint64_t)((spx_test_rand() + 1) * 1e15);
  spx_csr *a, *b, *af, *bf;
  spx_analysis an, bn;
  int64_t r, i;
  double *x, *y, *yb;
  (void)state;
  /* Rectangular, with empty rows: a 7 x 11 from random triplets. */
  {
    int32_t rr[20], cc[20];
    double vv[20];
    for (i = 0; i < 20; i++) {
      rr[i] = (int32_t)((spx_test_rand() + 1) * 2.5); /* rows 0..4 of 7 */
      cc[i] = (int32_t)((spx_test_rand() + 1) * 5.5);
      vv[i] = spx_test_rand();
    }
    assert_int_equal(spx_csr_from_coo(7, 11, 20, rr, cc, vv, SPX_DOUBLE, &a), SPX_OK);
  }
  assert_int_equal(spx_gen_replicate(a, copies, &b), SPX_OK);
  assert_int_equal(spx_csr_validate(b), SPX_OK);
  assert_int_equal(b->nrows, copies * 7);
  assert_int_equal(b->ncols, copies * 11);
  assert_int_equal(b->nnz, copies * a->nnz);
  x = rvec(b->ncols); y = rvec(b->nrows); yb = rvec(b->nrows);
  assert_int_equal(spx_csr_spmv(b, 1.0, x, 0.0, yb), SPX_OK);
  for (r = 0; r < copies; r++) {
    assert_int_equal(spx_csr_spmv(a, 1.0, x + r * 11, 0.0, y + r * 7), SPX_OK);
    for (i = 0; i < 7; i++) assert_true(y[r * 7 + i] == yb[r * 7 + i]);
  }
  spx_csr_destroy(a); spx_csr_destroy(b);
  /* A power-law matrix, float: features scale as they should. */
  assert_int_equal(spx_gen_powerlaw(300, 2.0, 1, 30, seed, SPX_FLOAT, &af), SPX_OK);
  assert_int_equal(spx_gen_replicate(af, 3, &bf), SPX_OK);
  assert_int_equal(bf->dtype, SPX_FLOAT);
  analyze_ok(af, &an); analyze_ok(bf, &bn);
  assert_int_equal(bn.nnz, 3 * an.nnz);
  assert_int_equal(bn.runs, 3 * an.runs);
  assert_int_equal(bn.row_max, an.row_max);
  assert_true(bn.B == an.B && bn.row_stddev == an.row_stddev && bn.run_share2 == an.run_share2);
  assert_int_equal(bn.lower_bandwidth, an.lower_bandwidth);
  assert_int_equal(bn.diagonally_dominant, 1);
  assert_int_equal(spx_gen_replicate(af, 1, &b), SPX_OK);
  assert_true(same_matrix(af, b));
  spx_csr_destroy(b);
  /* Bigger than one work block (2^18 entries): every copy exactly a shifted a. */
  assert_int_equal(spx_gen_poisson3d(40, 40, 40, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_true(a->nnz > (1 << 18));
  assert_int_equal(spx_gen_replicate(a, 3, &b), SPX_OK);
  assert_int_equal(spx_csr_validate(b), SPX_OK);
  for (r = 0; r < 3; r++) {
    for (i = 0; i < a->nnz; i++) assert_int_equal(b->col_idx[r * a->nnz + i], a->col_idx[i] + r * a->ncols);
    for (i = 0; i <= a->nrows; i++) assert_int_equal(b->row_ptr[r * a->nrows + i], r * a->nnz + a->row_ptr[i]);
    assert_memory_equal(b->val.d + r * a->nnz, a->val.d, (size_t)a->nnz * sizeof(double));
  }
  spx_csr_destroy(a); spx_csr_destroy(b);
  /* Bad arguments. */
  b = (spx_csr *)1;
  assert_int_equal(spx_gen_replicate(af, 0, &b), SPX_INVALID_ARGUMENT);
  assert_null(b);
  assert_int_equal(spx_gen_replicate(NULL, 2, &b), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_replicate(af, 2, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_gen_replicate(af, 10000000, &b), SPX_RANGE);
  assert_non_null(strstr(spx_last_error(), "2^31"));
  af->col_idx[0] = 1000; /* malformed input is refused, not copied */
  assert_int_equal(spx_gen_replicate(af, 2, &b), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_gen_replicate: input"));
  spx_csr_destroy(af); spx_csr_destroy(bf);
  free(x); free(y); free(yb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_poisson),          cmocka_unit_test(test_poisson_bad),
      cmocka_unit_test(test_poisson_aniso),
      cmocka_unit_test(test_elasticity),       cmocka_unit_test(test_elasticity_small),
      cmocka_unit_test(test_powerlaw),         cmocka_unit_test(test_powerlaw_shapes),
      cmocka_unit_test(test_replicate),
  };
  return cmocka_run_group_tests_name("gen", tests, NULL, NULL);
}
