/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/dist.h on the host backend, run by tests/run.sh under mpirun on 1, 2 and 4 ranks:
 * - the distributed CG, Jacobi PCG and BiCGSTAB against the single-process solvers of spx/solve.h on
 *   a 3-D Poisson matrix and on shared SPD and nonsymmetric matrices: on one rank the same
 *   iterations and x bit for bit; on 2 and 4 ranks CG and PCG iteration counts within 4 or 5 %
 *   (whichever is larger; measured: up to 9 of 413, 2.2 %), BiCGSTAB's within 10 or 20 % (its
 *   residual is not monotone, so rounding moves where it first passes the tolerance: measured up
 *   to 7 of 51 on the Poisson matrix); x within 1e-6 relative (the solves run to rtol 1e-10;
 *   measured: 1e-11 for CG, 2e-9 for BiCGSTAB); the true residual, recomputed here from the
 *   gathered x, within 3 rtol;
 * - bitwise repeatability of x for the rank count at hand (the same matrix twice, a new one once);
 * - the partition and halo bookkeeping on crafted matrices (empty rows, a rank with no rows, ranks
 *   whose rows read only remote columns, a one-way halo, the nonzero balance), with SpMVs of
 *   integer data that must equal the reference CSR SpMV exactly;
 * - bad inputs on one rank (another n or dtype, NULL rows, a bad root, another maxit, a NULL b,
 *   a zero on the diagonal, a failing preconditioner, another communicator) give a status on every
 *   rank, never a hang.
 * Every assertion is agreed on first (all ranks pass or all fail), so no rank stops in an assertion
 * while the others wait in a collective. Only rank 0 prints cmocka's report; the other ranks' cmocka
 * output goes to /dev/null, their own diagnostics still reach stderr. */
#define _POSIX_C_SOURCE 200809L
#include "spx_test.h"
#include <spx/dist.h>
#include <unistd.h>
#include <fcntl.h>

static int g_rank, g_size;
static FILE *g_diag; /* this rank's diagnostics: stderr, also on the ranks whose cmocka report is muted */

#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define ABS1(a) ((a) < 0 ? -(a) : (a))

/* 1 on every rank when ok holds on every rank. */
static int all_ok(int ok) {
  int r = 0;
  MPI_Allreduce(&ok, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return r;
}
#define ALL_TRUE(c) assert_true(all_ok((c) ? 1 : 0))

static spx_plan_options host_plan_options(void) {
  spx_plan_options o;
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST;
  o.no_calibrate = 1;
  o.strategy = SPX_PLAN_MODEL; /* no timed trial: the same format every run */
  return o;
}

static spx_dist_options dist_options(void) {
  spx_dist_options o;
  spx_dist_options_default(&o);
  o.plan = host_plan_options();
  o.timeout_s = 20;
  return o;
}

static spx_dist_matrix *scatter(const spx_csr *a, const int64_t *row_start) {
  spx_dist_options o = dist_options();
  spx_dist_matrix *d = NULL;
  spx_status st;
  o.row_start = row_start;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
  if (st) fprintf(g_diag, "rank %d: scatter: %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_OK && d);
  return d;
}

/* The same random vector on every rank (drawn on rank 0). */
static double *shared_rand(int64_t n) {
  double *v = malloc((size_t)n * 8 + 8);
  assert_non_null(v);
  if (g_rank == 0) spx_test_fill(v, n);
  MPI_Bcast(v, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return v;
}

/* The global vector from each rank's part (every rank gets it). */
static void gather(const spx_dist_matrix *d, const void *part, void *global, MPI_Datatype t) {
  int *cnt = malloc(sizeof(int) * (size_t)g_size), *dsp = malloc(sizeof(int) * (size_t)g_size), r;
  spx_dist_info in;
  assert_true(cnt && dsp);
  spx_dist_get_info(d, &in);
  for (r = 0; r < g_size; r++) {
    dsp[r] = (int)spx_dist_row_start(d, r);
    cnt[r] = (int)(spx_dist_row_start(d, r + 1) - dsp[r]);
  }
  MPI_Allgatherv(part, (int)in.nlocal, t, global, cnt, dsp, t, MPI_COMM_WORLD);
  free(cnt);
  free(dsp);
}

typedef spx_status (*solve_fn)(spx_plan *, const void *, void *, const spx_solve_options *, spx_solve_report *);
typedef spx_status (*dsolve_fn)(spx_dist_matrix *, const void *, void *, const spx_solve_options *, spx_solve_report *);

/* ||b - A x|| / ||b|| in double, on the global matrix. */
static double true_rel(const spx_csr *a, const double *b, const double *x) {
  double *q = malloc((size_t)a->nrows * 8 + 8), num = 0, den = 0;
  int64_t i;
  assert_non_null(q);
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, q), SPX_OK);
  for (i = 0; i < a->nrows; i++) {
    num += (b[i] - q[i]) * (b[i] - q[i]);
    den += b[i] * b[i];
  }
  free(q);
  return sqrt(num / den);
}

/* Solves a x = b (double, x0 = 0) on one process (every rank, the whole matrix) and distributed;
 * compares iterations and x as the header says. */
static void compare(const char *what, const spx_csr *a, solve_fn fn, dsolve_fn dfn, double rtol, int64_t maxit) {
  const int64_t n = a->nrows;
  spx_plan_options po = host_plan_options();
  spx_plan *p = NULL;
  spx_dist_matrix *d = scatter(a, NULL);
  spx_dist_info in;
  spx_solve_options o;
  spx_solve_report rs, rd;
  double *b = shared_rand(n), *xs = calloc((size_t)n + 1, 8), *xd = calloc((size_t)n + 1, 8);
  double *xg = calloc((size_t)n + 1, 8), err, rel;
  int64_t tol_it;
  spx_status ss, sd;
  assert_true(xs && xd && xg);
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = maxit;
  assert_int_equal(spx_plan_create(NULL, a, &po, &p), SPX_OK);
  ss = fn(p, b, xs, &o, &rs);
  spx_dist_get_info(d, &in);
  sd = dfn(d, b + in.first_row, xd, &o, &rd);
  gather(d, xd, xg, MPI_DOUBLE);
  err = spx_test_relerr(xg, xs, n);
  rel = true_rel(a, b, xg);
  tol_it = dfn == spx_dist_solve_bicgstab ? MAX2(10, rs.iterations / 5) : MAX2(4, rs.iterations / 20);
  if (g_rank == 0)
    printf("%-22s %d ranks: %4lld iterations (one process %4lld), x differs by %.2e, true residual %.2e\n", what,
           g_size, (long long)rd.iterations, (long long)rs.iterations, err, rel);
  if (sd || ss) fprintf(g_diag, "rank %d: %s: %s / %s\n", g_rank, what, rd.message, rs.message);
  ALL_TRUE(ss == SPX_OK && sd == SPX_OK);
  ALL_TRUE(rd.n == n && rd.true_rel_resid <= 3 * rtol && rel <= 3 * rtol);
  if (g_size == 1) { /* one rank is spx_solve_* on the same plan: the same bits */
    ALL_TRUE(rd.iterations == rs.iterations && memcmp(xg, xs, (size_t)n * 8) == 0);
  } else {
    ALL_TRUE(ABS1(rd.iterations - rs.iterations) <= tol_it && err <= 1e-6);
  }
  spx_plan_destroy(p);
  spx_dist_destroy(d);
  free(b); free(xs); free(xd); free(xg);
}

static void test_poisson(void **state) {
  spx_csr *a;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(14, 13, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  compare("poisson7 cg", a, spx_solve_cg, spx_dist_solve_cg, 1e-10, 1000);
  compare("poisson7 pcg_jacobi", a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10, 1000);
  compare("poisson7 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10, 1000);
  spx_csr_destroy(a);
}

static spx_csr *shared(const char *name) {
  char path[1024];
  spx_csr *a = NULL;
  spx_test_matrix_path(name, path, sizeof path);
  if (spx_mm_read(path, SPX_DOUBLE, &a, NULL) != SPX_OK) fail_msg("%s: %s", name, spx_last_error());
  return a;
}

/* SPD (CG, Jacobi PCG) and nonsymmetric (BiCGSTAB) matrices of the shared set. */
static void test_shared(void **state) {
  static const char *const spd[] = {"bcsstk05", "662_bus", "bcsstk22"};
  spx_csr *a;
  char what[64];
  int k;
  (void)state;
  for (k = 0; k < 3; k++) {
    a = shared(spd[k]);
    snprintf(what, sizeof what, "%s cg", spd[k]);
    compare(what, a, spx_solve_cg, spx_dist_solve_cg, 1e-10, 5000);
    snprintf(what, sizeof what, "%s pcg_jacobi", spd[k]);
    compare(what, a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10, 5000);
    spx_csr_destroy(a);
  }
  a = shared("cage8");
  compare("cage8 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10, 2000);
  spx_csr_destroy(a);
}

/* The same x bit for bit, run to run, for this rank count: twice on one matrix, once on a new one. */
static void test_bitwise(void **state) {
  spx_csr *a;
  spx_dist_matrix *d, *d2;
  spx_dist_info in;
  spx_solve_options o;
  spx_solve_report r1, r2, r3;
  double *b, *x1, *x2, *x3;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 27, SPX_DOUBLE, &a), SPX_OK);
  d = scatter(a, NULL);
  spx_dist_get_info(d, &in);
  b = shared_rand(a->nrows);
  x1 = calloc((size_t)in.nlocal + 1, 8);
  x2 = calloc((size_t)in.nlocal + 1, 8);
  x3 = calloc((size_t)in.nlocal + 1, 8);
  spx_solve_options_default(&o);
  o.rtol = 1e-9;
  ALL_TRUE(spx_dist_solve_bicgstab(d, b + in.first_row, x1, &o, &r1) == SPX_OK);
  ALL_TRUE(spx_dist_solve_bicgstab(d, b + in.first_row, x2, &o, &r2) == SPX_OK);
  d2 = scatter(a, NULL);
  ALL_TRUE(spx_dist_solve_bicgstab(d2, b + in.first_row, x3, &o, &r3) == SPX_OK);
  ALL_TRUE(r1.iterations == r2.iterations && r1.iterations == r3.iterations);
  ALL_TRUE(memcmp(x1, x2, (size_t)in.nlocal * 8) == 0 && memcmp(x1, x3, (size_t)in.nlocal * 8) == 0);
  ALL_TRUE(r1.resid == r2.resid && r1.resid == r3.resid); /* global numbers: the same bits */
  spx_dist_destroy(d);
  spx_dist_destroy(d2);
  spx_csr_destroy(a);
  free(b); free(x1); free(x2); free(x3);
}

/* A CSR from coordinates with small integer values (sums of products of small integers are exact,
 * whatever the order: distributed SpMVs must equal the reference exactly). */
static spx_csr *from_coo(int64_t n, int64_t nnz, const int32_t *r, const int32_t *c) {
  double *v = malloc((size_t)nnz * 8 + 8);
  spx_csr *a = NULL;
  int64_t k;
  for (k = 0; k < nnz; k++) v[k] = (double)(1 + (r[k] * 7 + c[k] * 3) % 5);
  assert_int_equal(spx_csr_from_coo(n, n, nnz, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  free(v);
  return a;
}

/* y = 2 A x + 0.5 y and y = A x (y poisoned: beta 0 reads nothing) equal the reference exactly. */
static void check_spmv(const spx_csr *a, spx_dist_matrix *d) {
  const int64_t n = a->nrows;
  spx_dist_info in;
  double *x = malloc((size_t)n * 8 + 8), *y = malloc((size_t)n * 8 + 8), *ref = malloc((size_t)n * 8 + 8);
  double *yl, *yg = malloc((size_t)n * 8 + 8);
  int64_t i;
  spx_dist_get_info(d, &in);
  yl = malloc((size_t)in.nlocal * 8 + 8);
  for (i = 0; i < n; i++) {
    x[i] = (double)((i * 13) % 7 - 3);
    y[i] = (double)(i % 3);
  }
  for (i = 0; i < in.nlocal; i++) yl[i] = y[in.first_row + i];
  memcpy(ref, y, (size_t)n * 8);
  assert_int_equal(spx_csr_spmv(a, 2.0, x, 0.5, ref), SPX_OK);
  ALL_TRUE(spx_dist_spmv(d, 2.0, x + in.first_row, 0.5, yl) == SPX_OK);
  gather(d, yl, yg, MPI_DOUBLE);
  ALL_TRUE(memcmp(yg, ref, (size_t)n * 8) == 0);
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, ref), SPX_OK);
  for (i = 0; i < in.nlocal; i++) yl[i] = NAN;
  ALL_TRUE(spx_dist_spmv(d, 1.0, x + in.first_row, 0.0, yl) == SPX_OK);
  gather(d, yl, yg, MPI_DOUBLE);
  ALL_TRUE(memcmp(yg, ref, (size_t)n * 8) == 0);
  free(x); free(y); free(ref); free(yl); free(yg);
}

/* Invariants of any partition: rows and nonzeros add up, ghosts ascending and remote, what the
 * ranks send is what they receive, a plan exactly where its block is not empty. */
static void check_bookkeeping(const spx_csr *a, const spx_dist_matrix *d) {
  spx_dist_info in;
  int64_t mine[4], sum[4], k;
  int ok = 1;
  spx_dist_get_info(d, &in);
  mine[0] = in.nlocal; mine[1] = in.nnz_local + in.nnz_ghost; mine[2] = in.send_entries; mine[3] = in.nghost;
  MPI_Allreduce(mine, sum, 4, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  ALL_TRUE(sum[0] == a->nrows && sum[1] == a->nnz && sum[2] == sum[3]);
  for (k = 0; k < in.nghost; k++) {
    int64_t c = spx_dist_ghost_col(d, k);
    if ((k > 0 && c <= spx_dist_ghost_col(d, k - 1)) || (c >= in.first_row && c < in.first_row + in.nlocal)) ok = 0;
  }
  ALL_TRUE(ok && in.halo_bytes == 8 * in.send_entries);
  ALL_TRUE((in.nnz_ghost > 0) == (spx_dist_ghost_plan(d) != NULL) && (in.nlocal > 0) == (spx_dist_local_plan(d) != NULL));
}

/* Tridiagonal with every 5th row empty, cut into equal shares right after empty rows (49, 99, 149):
 * no rank reads its upper neighbour's columns (its last row is empty), each rank but the first
 * reads one column of its lower neighbour: the halo runs one way, one entry per cut. */
static void test_tridiagonal_empty_rows(void **state) {
  const int64_t n = 200;
  int32_t r[600], c[600];
  int64_t k = 0, i, rs[5];
  spx_csr *a;
  spx_dist_matrix *d;
  spx_dist_info in;
  int q;
  (void)state;
  for (i = 0; i < n; i++) {
    if (i % 5 == 4) continue;
    if (i > 0) { r[k] = (int32_t)i; c[k++] = (int32_t)i - 1; }
    r[k] = (int32_t)i; c[k++] = (int32_t)i;
    if (i < n - 1) { r[k] = (int32_t)i; c[k++] = (int32_t)i + 1; }
  }
  a = from_coo(n, k, r, c);
  for (q = 0; q <= g_size; q++) rs[q] = n * q / g_size;
  d = scatter(a, rs);
  spx_dist_get_info(d, &in);
  check_bookkeeping(a, d);
  check_spmv(a, d);
  ALL_TRUE(in.recv_neighbors == (g_rank > 0) && in.nghost == (g_rank > 0));
  ALL_TRUE(in.send_neighbors == (g_rank < g_size - 1) && in.send_entries == (g_rank < g_size - 1));
  spx_dist_destroy(d);
  spx_csr_destroy(a);
}

/* Rows reading only remote columns (the anti-diagonal, plus column 0 in the lower half): with 2 or
 * 4 ranks every rank is ghost-only. Then a rank with no rows (rank 1). */
static void test_empty_and_ghost_only_ranks(void **state) {
  const int64_t n = 64;
  int32_t r[200], c[200];
  int64_t k = 0, i, rs[5];
  spx_csr *a;
  spx_dist_matrix *d;
  spx_dist_info in;
  int q;
  (void)state;
  for (i = 0; i < n; i++) {
    r[k] = (int32_t)i; c[k++] = (int32_t)(n - 1 - i);
    if (i >= n / 2 && n - 1 - i != 0) { r[k] = (int32_t)i; c[k++] = 0; }
  }
  a = from_coo(n, k, r, c);
  for (q = 0; q <= g_size; q++) rs[q] = n * q / g_size; /* rows [lo, hi) read columns n-hi..n-lo-1 */
  d = scatter(a, rs);
  spx_dist_get_info(d, &in);
  check_bookkeeping(a, d);
  check_spmv(a, d);
  if (g_size > 1) ALL_TRUE(in.nnz_local == 0 && in.nghost > 0 && in.nlocal > 0 && spx_dist_local_plan(d));
  spx_dist_destroy(d);
  /* rank 1 owns no rows: rank 0 and ranks 2.. share them (one rank: it owns all) */
  rs[0] = 0;
  rs[g_size] = n;
  if (g_size > 1) {
    rs[1] = n / (g_size - 1);
    for (q = 2; q < g_size; q++) rs[q] = n * (q - 1) / (g_size - 1);
  }
  d = scatter(a, rs);
  spx_dist_get_info(d, &in);
  check_bookkeeping(a, d);
  check_spmv(a, d);
  ALL_TRUE(g_size == 1 || g_rank != 1 || (in.nlocal == 0 && in.nghost == 0 && !spx_dist_local_plan(d)));
  spx_dist_destroy(d);
  spx_csr_destroy(a);
}

/* Uneven rows (a dense head): the default partition balances nonzeros + rows. And spx_dist_create
 * from each rank's rows with that partition gives the same SpMV bits. */
static void test_balance_and_create(void **state) {
  const int64_t n = 400;
  int32_t *r = malloc(20000 * 4), *c = malloc(20000 * 4);
  int64_t k = 0, i, j, w, wmax = 0, total, mine, lo;
  spx_csr *a, *rows;
  spx_dist_matrix *d, *d2 = NULL;
  spx_dist_info in;
  spx_dist_options o = dist_options();
  (void)state;
  for (i = 0; i < n; i++) {
    int64_t len = i < 20 ? 200 : 3;
    for (j = 0; j < len; j++) { r[k] = (int32_t)i; c[k++] = (int32_t)((i + j * 7) % n); }
  }
  a = from_coo(n, k, r, c);
  d = scatter(a, NULL);
  spx_dist_get_info(d, &in);
  total = a->nnz + n;
  for (i = 0; i < n; i++) wmax = MAX2(wmax, a->row_ptr[i + 1] - a->row_ptr[i] + 1);
  w = a->row_ptr[in.first_row + in.nlocal] - a->row_ptr[in.first_row] + in.nlocal;
  ALL_TRUE(w <= total / g_size + wmax);
  check_bookkeeping(a, d);
  check_spmv(a, d);
  /* this rank's rows, with global columns */
  lo = a->row_ptr[in.first_row];
  mine = a->row_ptr[in.first_row + in.nlocal] - lo;
  assert_int_equal(spx_csr_create(in.nlocal, n, mine, SPX_DOUBLE, &rows), SPX_OK);
  for (i = 0; i <= in.nlocal; i++) rows->row_ptr[i] = a->row_ptr[in.first_row + i] - lo;
  memcpy(rows->col_idx, a->col_idx + lo, (size_t)mine * 4);
  memcpy(rows->val.d, a->val.d + lo, (size_t)mine * 8);
  ALL_TRUE(spx_dist_create(MPI_COMM_WORLD, n, rows, &o, &d2) == SPX_OK);
  check_bookkeeping(a, d2);
  check_spmv(a, d2);
  for (i = 0; i <= g_size; i++) ALL_TRUE(spx_dist_row_start(d, (int)i) == spx_dist_row_start(d2, (int)i));
  spx_dist_destroy(d);
  spx_dist_destroy(d2);
  spx_csr_destroy(rows);
  spx_csr_destroy(a);
  free(r); free(c);
}

/* want on every rank; the ranks that were fine name the rank that was not (bad_rank >= 0). */
static void expect_everywhere(spx_status st, spx_status want, int bad_rank, const char *what) {
  int ok = st == want;
  if (!ok) fprintf(g_diag, "rank %d: %s: %s (%s)\n", g_rank, what, spx_status_string(st), spx_last_error());
  if (ok && st && g_rank != bad_rank && bad_rank >= 0) {
    char pre[32];
    snprintf(pre, sizeof pre, "rank %d: ", bad_rank);
    ok = strncmp(spx_last_error(), pre, strlen(pre)) == 0;
    if (!ok) fprintf(g_diag, "rank %d: %s: \"%s\" does not name rank %d\n", g_rank, what, spx_last_error(), bad_rank);
  }
  ALL_TRUE(ok);
  spx_clear_error();
}

static void test_bad_inputs(void **state) {
  const int last = g_size - 1;
  spx_csr *a, *rows = NULL;
  spx_dist_matrix *d = NULL;
  spx_dist_options o = dist_options();
  spx_solve_options so;
  spx_dist_info in;
  spx_status st;
  double *b, *x;
  int64_t n, i;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(6, 6, 6, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  /* spx_dist_create: one rank spoils something */
  assert_int_equal(spx_csr_create(0, n, 0, SPX_DOUBLE, &rows), SPX_OK);
  st = spx_dist_create(MPI_COMM_WORLD, g_rank == last ? n + 1 : n, rows, &o, &d);
  expect_everywhere(st, SPX_DIMENSION_MISMATCH, -1, "another n");
  ALL_TRUE(d == NULL);
  st = spx_dist_create(MPI_COMM_WORLD, n, g_rank == last ? NULL : rows, &o, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "NULL rows");
  st = spx_dist_create(MPI_COMM_WORLD, n, rows, &o, &d); /* the rows add up to 0, not n */
  expect_everywhere(st, SPX_DIMENSION_MISMATCH, -1, "rows that do not add up");
  spx_csr_destroy(rows);
  assert_int_equal(spx_csr_create(0, n, 0, g_rank == last ? SPX_FLOAT : SPX_DOUBLE, &rows), SPX_OK);
  st = spx_dist_create(MPI_COMM_WORLD, n, rows, &o, &d);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_DIMENSION_MISMATCH, -1, "another dtype");
  spx_csr_destroy(rows);
  /* spx_dist_scatter: the root without a matrix, different roots */
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, NULL, &o, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, 0, "NULL on the root");
  st = spx_dist_scatter(MPI_COMM_WORLD, g_rank == last ? last : 0, a, &o, &d);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "different roots");
  spx_dist_destroy(d);
  /* the solvers and the SpMV: one rank's b NULL, one rank's maxit different, one rank's x NULL */
  d = scatter(a, NULL);
  spx_dist_get_info(d, &in);
  b = shared_rand(n);
  x = calloc((size_t)in.nlocal + 1, 8);
  spx_solve_options_default(&so);
  st = spx_dist_solve_cg(d, g_rank == last ? NULL : b + in.first_row, x, &so, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "NULL b");
  so.maxit = g_rank == last ? 999 : 1000;
  st = spx_dist_solve_cg(d, b + in.first_row, x, &so, NULL);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "another maxit");
  so.maxit = 1000;
  st = spx_dist_spmv(d, 1.0, g_rank == last ? NULL : b + in.first_row, 0.0, x);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "NULL x in the SpMV");
  memset(x, 0, (size_t)in.nlocal * 8);
  ALL_TRUE(spx_dist_solve_cg(d, b + in.first_row, x, &so, NULL) == SPX_OK); /* the matrix still works */
  spx_dist_destroy(d);
  /* Jacobi with a zero on the diagonal of the last row (the last rank's) */
  for (i = a->row_ptr[n - 1]; i < a->row_ptr[n]; i++)
    if (a->col_idx[i] == n - 1) a->val.d[i] = 0;
  d = scatter(a, NULL);
  memset(x, 0, (size_t)in.nlocal * 8);
  st = spx_dist_solve_pcg_jacobi(d, b + in.first_row, x, &so, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "zero diagonal");
  spx_dist_destroy(d);
  free(b);
  free(x);
  spx_csr_destroy(a);
}

/* A rank-local preconditioner (Jacobi on this rank's rows) through options.precond: the iterations
 * of Jacobi PCG; a callback failing on one rank stops every rank with its status. */
typedef struct jac {
  const double *d;
  int64_t n;
  int fail;
} jac;
static spx_status jac_apply(void *data, const void *r, void *z) {
  const jac *j = (const jac *)data;
  int64_t i;
  if (j->fail) return SPX_INTERNAL; /* on purpose */
  for (i = 0; i < j->n; i++) ((double *)z)[i] = ((const double *)r)[i] / j->d[i];
  return SPX_OK;
}

static void test_precond_callback(void **state) {
  spx_csr *a = NULL;
  spx_dist_matrix *d;
  spx_dist_info in;
  spx_solve_options o;
  spx_solve_report r1, r2;
  double *b, *x, *dg;
  jac j;
  spx_status st;
  (void)state;
  a = shared("bcsstk05");
  d = scatter(a, NULL);
  spx_dist_get_info(d, &in);
  b = shared_rand(a->nrows);
  x = calloc((size_t)in.nlocal + 1, 8);
  dg = calloc((size_t)in.nlocal + 1, 8);
  if (in.nlocal) assert_int_equal(spx_plan_diagonal(spx_dist_local_plan(d), dg), SPX_OK);
  j.d = dg;
  j.n = in.nlocal;
  j.fail = 0;
  spx_solve_options_default(&o);
  o.rtol = 1e-10;
  o.maxit = 5000;
  ALL_TRUE(spx_dist_solve_pcg_jacobi(d, b + in.first_row, x, &o, &r1) == SPX_OK);
  memset(x, 0, (size_t)in.nlocal * 8);
  o.precond = jac_apply;
  o.precond_data = &j;
  ALL_TRUE(spx_dist_solve_cg(d, b + in.first_row, x, &o, &r2) == SPX_OK);
  ALL_TRUE(ABS1(r1.iterations - r2.iterations) <= 2 && r2.precond_calls > 0);
  j.fail = g_rank == g_size - 1;
  memset(x, 0, (size_t)in.nlocal * 8);
  st = spx_dist_solve_bicgstab(d, b + in.first_row, x, &o, &r2);
  expect_everywhere(st, SPX_INTERNAL, g_size - 1, "failing preconditioner");
  spx_dist_destroy(d);
  spx_csr_destroy(a);
  free(b); free(x); free(dg);
}

/* Last: a rank that passes another communicator. The others give up after timeout_s with a status;
 * the communicator they passed is unusable afterwards (a duplicate made here, left alone). */
static void test_mismatched_communicator(void **state) {
  spx_csr *a;
  spx_dist_matrix *d = NULL;
  spx_dist_options o = dist_options();
  MPI_Comm c;
  spx_status st;
  (void)state;
  if (g_size < 2) {
    ALL_TRUE(1);
    return;
  }
  assert_int_equal(spx_gen_poisson3d(5, 5, 5, 7, SPX_DOUBLE, &a), SPX_OK);
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  o.timeout_s = 1;
  /* the last rank scatters on its own (MPI_COMM_SELF, whose root has no matrix); the others wait
   * for it on c */
  st = spx_dist_scatter(g_rank == g_size - 1 ? MPI_COMM_SELF : c, 0, g_rank == 0 ? a : NULL, &o, &d);
  if (g_rank == 0 || g_rank == g_size - 1) fprintf(g_diag, "rank %d (expected): %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_INVALID_ARGUMENT && d == NULL);
  spx_clear_error();
  spx_csr_destroy(a);
}

/* The CUDA backend's SpMV (device x and y, the halo through pinned host buffers), every rank on
 * the node's device 0, against the global host SpMV: a Poisson matrix and the anti-diagonal one
 * whose rows read only other ranks' columns, y = 2 A x + 0.5 y. */
static void test_gpu_spmv(void **state) {
  spx_context *ctx = NULL;
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  int k, ok = spx_device_count() > 0 && spx_context_create(&co, &ctx) == SPX_OK;
  (void)state;
  if (!all_ok(ok)) { /* every rank skips, or none */
    spx_context_destroy(ctx);
    spx_clear_error();
    skip();
  }
  for (k = 0; k < 2; k++) {
    spx_csr *a = NULL;
    spx_dist_options o = dist_options();
    spx_dist_matrix *d = NULL;
    spx_dist_info in;
    spx_devptr dx = 0, dy = 0;
    double *x, *y0, *ref, *y;
    int64_t n, i;
    spx_status st;
    if (k == 0) assert_int_equal(spx_gen_poisson3d(14, 13, 12, 7, SPX_DOUBLE, &a), SPX_OK);
    else {
      const int64_t m = 97;
      int32_t *r = malloc(sizeof(int32_t) * m), *c = malloc(sizeof(int32_t) * m);
      double *v = malloc(sizeof(double) * m);
      assert_true(r && c && v);
      for (i = 0; i < m; i++) { r[i] = (int32_t)i; c[i] = (int32_t)(m - 1 - i); v[i] = 1.0 + (double)i; }
      assert_int_equal(spx_csr_from_coo(m, m, m, r, c, v, SPX_DOUBLE, &a), SPX_OK);
      free(r); free(c); free(v);
    }
    n = a->nrows;
    o.plan.backend = SPX_BACKEND_CUDA;
    o.ctx = ctx;
    st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
    if (st) fprintf(g_diag, "rank %d: scatter on CUDA: %s\n", g_rank, spx_last_error());
    ALL_TRUE(st == SPX_OK && d);
    spx_dist_get_info(d, &in);
    x = shared_rand(n); y0 = shared_rand(n);
    ref = malloc(sizeof(double) * (size_t)(n + 1)); y = malloc(sizeof(double) * (size_t)(in.nlocal + 1));
    assert_true(ref && y);
    memcpy(ref, y0, sizeof(double) * (size_t)n);
    assert_int_equal(spx_csr_spmv(a, 2.0, x, 0.5, ref), SPX_OK);
    ok = !spx_device_alloc(ctx, (size_t)(in.nlocal + 1) * 8, &dx) && !spx_device_alloc(ctx, (size_t)(in.nlocal + 1) * 8, &dy) &&
         (!in.nlocal || (!spx_device_upload(ctx, dx, x + in.first_row, (size_t)in.nlocal * 8) &&
                         !spx_device_upload(ctx, dy, y0 + in.first_row, (size_t)in.nlocal * 8)));
    ALL_TRUE(ok);
    st = spx_dist_spmv(d, 2.0, (const void *)(uintptr_t)dx, 0.5, (void *)(uintptr_t)dy);
    if (st) fprintf(g_diag, "rank %d: spmv on CUDA: %s\n", g_rank, spx_last_error());
    ALL_TRUE(st == SPX_OK);
    ok = !in.nlocal || !spx_device_download(ctx, y, dy, (size_t)in.nlocal * 8);
    for (i = 0; ok && i < in.nlocal; i++) {
      const double want = ref[in.first_row + i];
      if (fabs(y[i] - want) > 1e-12 * (1 + fabs(want))) {
        fprintf(g_diag, "rank %d: case %d row %lld: %.17g on the GPU, %.17g on the host\n", g_rank, k,
                (long long)(in.first_row + i), y[i], want);
        ok = 0;
      }
    }
    ALL_TRUE(ok);
    spx_device_free(ctx, dx); spx_device_free(ctx, dy);
    spx_dist_destroy(d);
    free(x); free(y0); free(ref); free(y);
    spx_csr_destroy(a);
  }
  spx_context_destroy(ctx);
}

/* The distributed solvers on CUDA (solve.h's GPU path with the global sums over the ranks), every
 * rank on the node's device 0, against spx_solve_* on one GPU with the same format (CSR, forced):
 * one rank gives the same x and iterations bit for bit; more ranks the same iterations within the
 * host comparison's margin and x within 1e-6; run twice, the same bits. b and x are host arrays
 * (host_vectors). */
static void gpu_compare(spx_context *ctx, const char *what, const spx_csr *a, solve_fn fn, dsolve_fn dfn, double rtol) {
  const int64_t n = a->nrows;
  spx_plan_options po;
  spx_plan *p = NULL;
  spx_dist_options dop = dist_options();
  spx_dist_matrix *d = NULL;
  spx_dist_info in;
  spx_solve_options o;
  spx_solve_report rs, rd, r2;
  double *b = shared_rand(n), *xs = calloc((size_t)n + 1, 8), *xd = calloc((size_t)n + 1, 8);
  double *x2 = calloc((size_t)n + 1, 8), *xg = calloc((size_t)n + 1, 8), err;
  int64_t tol_it;
  spx_status ss, sd, s2;
  assert_true(xs && xd && x2 && xg);
  spx_plan_options_default(&po);
  po.backend = SPX_BACKEND_CUDA;
  po.no_calibrate = 1;
  po.force = "csr";
  dop.plan = po;
  dop.ctx = ctx;
  ss = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &dop, &d);
  if (ss) fprintf(g_diag, "rank %d: %s: scatter on CUDA: %s\n", g_rank, what, spx_last_error());
  ALL_TRUE(ss == SPX_OK && d);
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = 2000;
  o.host_vectors = 1;
  assert_int_equal(spx_plan_create(ctx, a, &po, &p), SPX_OK);
  ss = fn(p, b, xs, &o, &rs);
  spx_dist_get_info(d, &in);
  sd = dfn(d, b + in.first_row, xd, &o, &rd);
  s2 = dfn(d, b + in.first_row, x2, &o, &r2);
  if (ss || sd || s2) fprintf(g_diag, "rank %d: %s: %s / %s / %s\n", g_rank, what, rs.message, rd.message, r2.message);
  ALL_TRUE(ss == SPX_OK && sd == SPX_OK && s2 == SPX_OK);
  ALL_TRUE(rd.iterations == r2.iterations && memcmp(xd, x2, (size_t)in.nlocal * 8) == 0 && rd.resid == r2.resid);
  gather(d, xd, xg, MPI_DOUBLE);
  err = spx_test_relerr(xg, xs, n);
  tol_it = dfn == spx_dist_solve_bicgstab ? MAX2(10, rs.iterations / 5) : MAX2(4, rs.iterations / 20);
  if (g_rank == 0)
    printf("%-26s %d ranks on CUDA: %4lld iterations (one GPU %4lld), x differs by %.2e, true residual %.2e\n", what,
           g_size, (long long)rd.iterations, (long long)rs.iterations, err, rd.true_rel_resid);
  ALL_TRUE(rd.n == n && rd.true_rel_resid <= 3 * rtol && true_rel(a, b, xg) <= 3 * rtol);
  if (g_size == 1) ALL_TRUE(rd.iterations == rs.iterations && memcmp(xg, xs, (size_t)n * 8) == 0);
  else ALL_TRUE(ABS1(rd.iterations - rs.iterations) <= tol_it && err <= 1e-6);
  spx_plan_destroy(p);
  spx_dist_destroy(d);
  free(b); free(xs); free(xd); free(x2); free(xg);
}

static void test_gpu_solve(void **state) {
  spx_context *ctx = NULL;
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  spx_csr *a = NULL;
  int ok = spx_device_count() > 0 && spx_context_create(&co, &ctx) == SPX_OK;
  (void)state;
  if (!all_ok(ok)) { /* every rank skips, or none */
    spx_context_destroy(ctx);
    spx_clear_error();
    skip();
  }
  assert_int_equal(spx_gen_poisson3d(14, 13, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  gpu_compare(ctx, "poisson7 cg", a, spx_solve_cg, spx_dist_solve_cg, 1e-10);
  gpu_compare(ctx, "poisson7 pcg_jacobi", a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10);
  gpu_compare(ctx, "poisson7 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10);
  spx_csr_destroy(a);
  a = shared("cage8");
  gpu_compare(ctx, "cage8 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10);
  spx_csr_destroy(a);
  /* 3 rows over up to 4 ranks: a rank without rows takes part in every sum */
  assert_int_equal(spx_gen_poisson3d(3, 1, 1, 7, SPX_DOUBLE, &a), SPX_OK);
  gpu_compare(ctx, "3 rows pcg_jacobi", a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_poisson),
      cmocka_unit_test(test_shared),
      cmocka_unit_test(test_bitwise),
      cmocka_unit_test(test_tridiagonal_empty_rows),
      cmocka_unit_test(test_empty_and_ghost_only_ranks),
      cmocka_unit_test(test_balance_and_create),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_precond_callback),
      cmocka_unit_test(test_mismatched_communicator),
      cmocka_unit_test(test_gpu_spmv),
      cmocka_unit_test(test_gpu_solve),
  };
  int rc;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size > 4) {
    if (g_rank == 0) fprintf(stderr, "mpi_test_dist: run it on 1 to 4 ranks (the crafted partitions assume it)\n");
    MPI_Finalize();
    return 2;
  }
  g_diag = stderr;
  if (g_rank != 0) { /* one cmocka report (rank 0's: every assertion is agreed on by all ranks) */
    int keep = dup(2), fd = open("/dev/null", O_WRONLY);
    if (keep >= 0 && (g_diag = fdopen(keep, "w")) != NULL) setvbuf(g_diag, NULL, _IONBF, 0);
    else g_diag = stderr;
    if (fd >= 0 && g_diag != stderr) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (fd >= 0) close(fd);
  }
  setenv("SPX_QUIET", "1", 0);
  /* One right-hand side every run (SPX_TEST_SEED overrides): the iteration tolerances are about
   * rounding across rank counts, and a new b each run would make the margin a lottery. */
  setenv("SPX_TEST_SEED", "20261126", 0);
  rc = cmocka_run_group_tests_name("dist", tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
