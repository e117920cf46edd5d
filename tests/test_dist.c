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
 *   rank, never a hang;
 * - the AMG blocks (spx_dist_amg_*: each rank's hierarchy of its local block as the preconditioner)
 *   on 3-D Poisson 20^3 (chebyshev and gs) and shared SPD matrices (bcsstk16, 1138_bus): CG with
 *   them converges in at most 1/2.5 (Poisson) or 1/2 (shared) of CG's iterations (measured: 9, 26,
 *   31 of 92 on Poisson at 1, 2, 4 ranks; 465 of 2925 on 1138_bus at 4), BiCGSTAB with them in
 *   fewer than BiCGSTAB's; x bit for bit run to run (the same hierarchy twice, a new matrix and
 *   hierarchy once); on one rank spx_solve_cg's and spx_solve_bicgstab's iterations and x with
 *   spx_amg_precond, bit for bit; a matrix without its local block, a float matrix, bad options
 *   or a zero diagonal in one rank's block, a NULL out on one rank give a status on every rank; a
 *   rank without rows sets up nothing and the solve converges; on a GPU (test_gpu_amg) the same
 *   on every rank's CUDA context;
 * - METIS's partition (test_metis_*: skipped where spx was built without METIS): on a shuffled 2-D
 *   grid each rank owns contiguous permuted rows, every original row once, the same SpMV as the
 *   global matrix exactly, and no more halo than the contiguous split; CG, Jacobi PCG and BiCGSTAB
 *   on it within the tolerances above; the vectors in the original order round trip bit for bit
 *   (spx_dist_scatter_vector / spx_dist_gather_vector); the option refused where it must be;
 * - spx_dist_read_mm on shared matrices written out plain (and the gzip file, and a crafted one):
 *   the partition, blocks and SpMV bits of spx_mm_read on rank 0 then spx_dist_scatter; a missing
 *   file, a bad header or line, too many or too few entries fail on every rank with spx_mm_read's
 *   sentence (the same line number).
 * - the stencil over the ranks (spx_dist_stencil_run): each rank's planes after the run equal the
 *   one-process spx_stencil_run's bit for bit, on grids whose nz the ranks do not divide, with
 *   fewer planes than ranks (a rank owns none), steps not a multiple of the interval, interval 1,
 *   the halos waited for first, slabs thinner than two intervals (one grid with the halos), and
 *   every method out of core on the host backend under a small budget; the report's interval,
 *   exchanges and halo bytes; bad inputs on one rank (another grid, dtype, coefficient or steps,
 *   a NULL grid, context or problem, negative steps or interval, a local run that fails in a
 *   round, another communicator) give a status on every rank, never a hang; on a GPU
 *   (test_gpu_stencil) the same bits from every rank's CUDA context, in core and out of core.
 * Every assertion is agreed on first (all ranks pass or all fail), so no rank stops in an assertion
 * while the others wait in a collective. Only rank 0 prints cmocka's report; the other ranks' cmocka
 * output goes to /dev/null, their own diagnostics still reach stderr. */
#define _POSIX_C_SOURCE 200809L
#include "spx_test.h"
#include <spx/dist.h>
#include <unistd.h>
#include <fcntl.h>
#include <zlib.h>

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

static spx_dist_matrix *scatter_part(const spx_csr *a, const int64_t *row_start, spx_dist_partition part) {
  spx_dist_options o = dist_options();
  spx_dist_matrix *d = NULL;
  spx_status st;
  o.row_start = row_start;
  o.partition = part;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
  if (st) fprintf(g_diag, "rank %d: scatter: %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_OK && d);
  return d;
}

static spx_dist_matrix *scatter(const spx_csr *a, const int64_t *row_start) {
  return scatter_part(a, row_start, SPX_DIST_PART_CONTIGUOUS);
}

/* The METIS tests skip, on every rank, where spx was built without METIS (tests/run.sh allows that
 * only where libmetis-dev is not installed). */
static void need_metis(void) {
  if (!all_ok(spx_dist_partition_available(SPX_DIST_PART_METIS))) skip();
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

/* Solves a x = b (double, x0 = 0) on one process (every rank, the whole matrix) and distributed
 * (rows split by part; b and x moved by spx_dist_scatter_vector / spx_dist_gather_vector, in the
 * original order whatever the partition); compares iterations and x as the header says. */
static void compare_part(const char *what, const spx_csr *a, solve_fn fn, dsolve_fn dfn, double rtol, int64_t maxit,
                         spx_dist_partition part) {
  const int64_t n = a->nrows;
  spx_plan_options po = host_plan_options();
  spx_plan *p = NULL;
  spx_dist_matrix *d = scatter_part(a, NULL, part);
  spx_dist_info in;
  spx_solve_options o;
  spx_solve_report rs, rd;
  double *b = shared_rand(n), *xs = calloc((size_t)n + 1, 8), *xd = calloc((size_t)n + 1, 8);
  double *xg = calloc((size_t)n + 1, 8), *bl = calloc((size_t)n + 1, 8), err, rel;
  int64_t tol_it;
  spx_status ss, sd;
  assert_true(xs && xd && xg && bl);
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = maxit;
  assert_int_equal(spx_plan_create(NULL, a, &po, &p), SPX_OK);
  ss = fn(p, b, xs, &o, &rs);
  spx_dist_get_info(d, &in);
  ALL_TRUE(spx_dist_scatter_vector(d, 0, b, bl) == SPX_OK);
  sd = dfn(d, bl, xd, &o, &rd);
  ALL_TRUE(spx_dist_gather_vector(d, 0, xd, xg) == SPX_OK);
  MPI_Bcast(xg, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  err = spx_test_relerr(xg, xs, n);
  rel = true_rel(a, b, xg);
  tol_it = dfn == spx_dist_solve_bicgstab ? MAX2(10, rs.iterations / 5) : MAX2(4, rs.iterations / 20);
  if (g_rank == 0)
    printf("%-22s %d ranks%s: %4lld iterations (one process %4lld), x differs by %.2e, true residual %.2e\n", what,
           g_size, part == SPX_DIST_PART_METIS ? " (metis)" : "", (long long)rd.iterations, (long long)rs.iterations,
           err, rel);
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
  free(b); free(xs); free(xd); free(xg); free(bl);
}

static void compare(const char *what, const spx_csr *a, solve_fn fn, dsolve_fn dfn, double rtol, int64_t maxit) {
  compare_part(what, a, fn, dfn, rtol, maxit, SPX_DIST_PART_CONTIGUOUS);
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

/* SPD (CG, Jacobi PCG) and nonsymmetric (BiCGSTAB) matrices of the shared set. */
static void test_shared(void **state) {
  static const char *const spd[] = {"bcsstk05", "662_bus", "bcsstk22"};
  spx_csr *a;
  char what[64];
  int k;
  (void)state;
  for (k = 0; k < 3; k++) {
    a = spx_test_shared(spd[k]);
    snprintf(what, sizeof what, "%s cg", spd[k]);
    compare(what, a, spx_solve_cg, spx_dist_solve_cg, 1e-10, 5000);
    snprintf(what, sizeof what, "%s pcg_jacobi", spd[k]);
    compare(what, a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10, 5000);
    spx_csr_destroy(a);
  }
  a = spx_test_shared("cage8");
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
  a = spx_test_shared("bcsstk05");
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

/* ---- The rank-local AMG preconditioner (spx_dist_amg_*) -------------------------------------------
 * Block Jacobi with AMG blocks: each rank's hierarchy of its local block, one cycle per call. */
static spx_plan_options g_amg_po; /* the hierarchies' plans (amg_options) */

/* AMG options whose plans are the tests' host plans (strategy model: the same format every run, the
 * format the distributed matrix's plans take). */
static spx_amg_options amg_options(spx_amg_smoother sm) {
  spx_amg_options o;
  spx_amg_options_default(&o);
  g_amg_po = host_plan_options();
  g_amg_po.eager = 1;
  o.plan = &g_amg_po;
  o.smoother = sm;
  return o;
}

/* a scattered (rows split by row_start, NULL: balanced) with its local block kept. */
static spx_dist_matrix *scatter_keep(const spx_csr *a, const int64_t *row_start) {
  spx_dist_options o = dist_options();
  spx_dist_matrix *d = NULL;
  spx_status st;
  o.row_start = row_start;
  o.keep_local = 1;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
  if (st) fprintf(g_diag, "rank %d: scatter: %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_OK && d && spx_dist_local_csr(d) != NULL);
  return d;
}

static spx_dist_amg *dist_amg(const spx_dist_matrix *d, const spx_amg_options *o) {
  spx_dist_amg *m = NULL;
  spx_status st = spx_dist_amg_create(d, o, &m);
  if (st) fprintf(g_diag, "rank %d: spx_dist_amg_create: %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_OK && m);
  return m;
}

/* One distributed solve (x0 = 0) with the AMG blocks m (NULL: none); x: this rank's part. */
static spx_status amg_solve(spx_dist_matrix *d, dsolve_fn dfn, spx_dist_amg *m, const double *bl, double *x,
                            double rtol, int64_t maxit, spx_solve_report *r) {
  spx_solve_options o;
  spx_dist_info in;
  spx_dist_get_info(d, &in);
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = maxit;
  if (m) {
    o.precond = spx_dist_amg_precond;
    o.precond_data = m;
  }
  memset(x, 0, (size_t)in.nlocal * 8 + 8);
  return dfn(d, bl, x, &o, r);
}

/* CG (a symmetric cycle) and BiCGSTAB with the AMG blocks of a (smoother sm) converge to rtol, the
 * true residual recomputed here from the gathered x within 3 rtol, CG in at most 1/ratio of
 * unpreconditioned CG's iterations; the same x bit for bit run to run (the same hierarchy twice, a
 * new matrix and hierarchy once); on one rank the iterations and x of spx_solve_cg / _bicgstab
 * with spx_amg_precond of the whole matrix, bit for bit (the same plans' format, the same
 * hierarchy: the local block is the matrix). */
static void amg_case(const char *what, const spx_csr *a, spx_amg_smoother sm, double rtol, double ratio) {
  const int64_t n = a->nrows, maxit = 20000;
  spx_amg_options ao = amg_options(sm);
  spx_dist_matrix *d = scatter_keep(a, NULL), *d2;
  spx_dist_amg *m = dist_amg(d, &ao), *m2;
  spx_dist_amg_info ai;
  spx_dist_info in;
  spx_solve_report r0, r1, r2, r3, rb0, rb1;
  double *b = shared_rand(n), *bl, *x0, *x1, *x2, *x3, *xb, *xg = calloc((size_t)n + 1, 8);
  spx_status s0, s1, s2, s3, sb0, sb1;
  spx_dist_get_info(d, &in);
  bl = b + in.first_row;
  x0 = calloc((size_t)in.nlocal + 1, 8); x1 = calloc((size_t)in.nlocal + 1, 8); x2 = calloc((size_t)in.nlocal + 1, 8);
  x3 = calloc((size_t)in.nlocal + 1, 8); xb = calloc((size_t)in.nlocal + 1, 8);
  assert_true(xg && x0 && x1 && x2 && x3 && xb);
  s0 = amg_solve(d, spx_dist_solve_cg, NULL, bl, x0, rtol, maxit, &r0);
  s1 = amg_solve(d, spx_dist_solve_cg, m, bl, x1, rtol, maxit, &r1);
  s2 = amg_solve(d, spx_dist_solve_cg, m, bl, x2, rtol, maxit, &r2);
  sb0 = amg_solve(d, spx_dist_solve_bicgstab, NULL, bl, xb, rtol, maxit, &rb0);
  sb1 = amg_solve(d, spx_dist_solve_bicgstab, m, bl, xb, rtol, maxit, &rb1);
  d2 = scatter_keep(a, NULL);
  m2 = dist_amg(d2, &ao);
  s3 = amg_solve(d2, spx_dist_solve_cg, m2, bl, x3, rtol, maxit, &r3);
  assert_int_equal(spx_dist_amg_get_info(m, &ai), SPX_OK);
  if (s0 || s1 || s2 || s3 || sb0 || sb1)
    fprintf(g_diag, "rank %d: %s: %s / %s / %s / %s / %s / %s\n", g_rank, what, r0.message, r1.message, r2.message,
            r3.message, rb0.message, rb1.message);
  ALL_TRUE(s0 == SPX_OK && s1 == SPX_OK && s2 == SPX_OK && s3 == SPX_OK && sb0 == SPX_OK && sb1 == SPX_OK);
  gather(d, x1, xg, MPI_DOUBLE);
  if (g_rank == 0)
    printf("%-22s %d ranks: CG+AMG %4lld iterations (CG %4lld), BiCGSTAB+AMG %4lld (BiCGSTAB %4lld); rank 0: %d levels, "
           "operator complexity %.3f, setup %.1f ms (slowest rank %.1f)\n", what, g_size, (long long)r1.iterations,
           (long long)r0.iterations, (long long)rb1.iterations, (long long)rb0.iterations, ai.levels,
           ai.operator_complexity, ai.setup_ms, ai.max_setup_ms);
  ALL_TRUE(r1.true_rel_resid <= 3 * rtol && rb1.true_rel_resid <= 3 * rtol && true_rel(a, b, xg) <= 3 * rtol);
  ALL_TRUE((double)r1.iterations * ratio <= (double)r0.iterations && r1.precond_calls > 0);
  ALL_TRUE(rb1.iterations < rb0.iterations);
  /* run to run: the same hierarchy again, a new matrix and hierarchy */
  ALL_TRUE(r1.iterations == r2.iterations && r1.iterations == r3.iterations && r1.resid == r2.resid &&
           r1.resid == r3.resid);
  ALL_TRUE(memcmp(x1, x2, (size_t)in.nlocal * 8) == 0 && memcmp(x1, x3, (size_t)in.nlocal * 8) == 0);
  ALL_TRUE(ai.symmetric == 1 && ai.nlocal == in.nlocal && ai.nnz_local == in.nnz_local &&
           (in.nlocal == 0 ? ai.levels == 0 : ai.levels >= 1) && ai.cycles >= r1.precond_calls + r2.precond_calls);
  if (g_size == 1) { /* the whole matrix's AMG: spx_solve_* with spx_amg_precond, the same bits */
    spx_plan_options po = host_plan_options();
    spx_plan *p = NULL;
    spx_amg *ms = NULL;
    spx_solve_options o;
    spx_solve_report rs, rsb;
    double *xs = calloc((size_t)n + 1, 8), *xsb = calloc((size_t)n + 1, 8);
    assert_true(xs && xsb);
    assert_int_equal(spx_plan_create(NULL, a, &po, &p), SPX_OK);
    assert_int_equal(spx_amg_create(NULL, a, &ao, &ms), SPX_OK);
    spx_solve_options_default(&o);
    o.rtol = rtol;
    o.maxit = maxit;
    o.precond = spx_amg_precond;
    o.precond_data = ms;
    assert_int_equal(spx_solve_cg(p, b, xs, &o, &rs), SPX_OK);
    assert_int_equal(spx_solve_bicgstab(p, b, xsb, &o, &rsb), SPX_OK);
    assert_int_equal(spx_amg_report_of(ms)->levels, ai.levels);
    assert_int_equal(rs.iterations, r1.iterations);
    assert_int_equal(rsb.iterations, rb1.iterations);
    assert_memory_equal(xs, x1, (size_t)n * 8);
    assert_memory_equal(xsb, xb, (size_t)n * 8);
    spx_amg_destroy(ms);
    spx_plan_destroy(p);
    free(xs); free(xsb);
  }
  spx_dist_amg_destroy(m);
  spx_dist_amg_destroy(m2);
  spx_dist_destroy(d);
  spx_dist_destroy(d2);
  free(b); free(xg); free(x0); free(x1); free(x2); free(x3); free(xb);
}

static void test_amg_poisson(void **state) {
  spx_csr *a;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  amg_case("poisson7 20^3 cheby", a, SPX_AMG_CHEBYSHEV, 1e-10, 2.5);
  amg_case("poisson7 20^3 gs", a, SPX_AMG_GS, 1e-10, 2.5);
  spx_csr_destroy(a);
}

static void test_amg_shared(void **state) {
  static const char *const spd[] = {"bcsstk16", "1138_bus"};
  int k;
  (void)state;
  for (k = 0; k < 2; k++) {
    spx_csr *a = spx_test_shared(spd[k]);
    char what[64];
    snprintf(what, sizeof what, "%s cheby", spd[k]);
    amg_case(what, a, SPX_AMG_CHEBYSHEV, 1e-8, 2);
    spx_csr_destroy(a);
  }
}

/* Bad inputs give a status on every rank, never a hang, and *out NULL everywhere: a matrix that kept
 * no local block, a float matrix, bad options on the last rank, a zero on the diagonal of the last
 * rank's block (its setup fails alone), a NULL out on the last rank. A rank that owns no rows sets
 * up nothing and the solve still converges, in fewer iterations than CG. */
static void test_amg_bad_inputs(void **state) {
  const int last = g_size - 1;
  spx_csr *a, *af = NULL;
  spx_dist_matrix *d;
  spx_dist_options o = dist_options();
  spx_amg_options ao = amg_options(SPX_AMG_CHEBYSHEV), bad;
  spx_dist_amg *m = NULL;
  spx_dist_amg_info ai;
  spx_dist_info in;
  spx_solve_report r0, r1;
  double *b, *x, diag = 0;
  int64_t i, *rs;
  spx_status st;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  /* no local block kept */
  d = scatter(a, NULL);
  st = spx_dist_amg_create(d, &ao, &m);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, -1, "no local block");
  ALL_TRUE(m == NULL);
  spx_dist_destroy(d);
  /* float */
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
  o.keep_local = 1;
  ALL_TRUE(spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? af : NULL, &o, &d) == SPX_OK);
  st = spx_dist_amg_create(d, &ao, &m);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, -1, "float matrix");
  ALL_TRUE(m == NULL);
  spx_dist_destroy(d);
  spx_csr_destroy(af);
  /* bad options, a NULL out: on the last rank only */
  d = scatter_keep(a, NULL);
  bad = ao;
  bad.theta = 2;
  st = spx_dist_amg_create(d, g_rank == last ? &bad : &ao, &m);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "bad options on one rank");
  ALL_TRUE(m == NULL);
  bad = ao;
  bad.cycle = (spx_amg_cycle_type)7;
  st = spx_dist_amg_create(d, g_rank == last ? &bad : &ao, &m);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "a bad cycle on one rank");
  st = spx_dist_amg_create(d, &ao, g_rank == last ? NULL : &m);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "NULL out on one rank");
  ALL_TRUE(m == NULL);
  st = spx_dist_amg_precond(NULL, NULL, NULL);
  ALL_TRUE(st == SPX_INVALID_ARGUMENT);
  spx_clear_error();
  spx_dist_destroy(d);
  /* a zero on the diagonal of the last row (the last rank's block) */
  for (i = a->row_ptr[a->nrows - 1]; i < a->row_ptr[a->nrows]; i++)
    if (a->col_idx[i] == a->nrows - 1) {
      diag = a->val.d[i];
      a->val.d[i] = 0;
    }
  d = scatter_keep(a, NULL);
  st = spx_dist_amg_create(d, &ao, &m);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "zero diagonal in one rank's block");
  ALL_TRUE(m == NULL);
  spx_dist_destroy(d);
  for (i = a->row_ptr[a->nrows - 1]; i < a->row_ptr[a->nrows]; i++)
    if (a->col_idx[i] == a->nrows - 1) a->val.d[i] = diag;
  /* the last rank owns no rows (with more than one rank): the first ranks split them */
  rs = malloc(sizeof(int64_t) * (size_t)(g_size + 1));
  assert_non_null(rs);
  for (i = 0; i <= g_size; i++) rs[i] = g_size == 1 ? i * a->nrows : (i < last ? i : last) * a->nrows / last;
  d = scatter_keep(a, rs);
  m = dist_amg(d, &ao);
  spx_dist_get_info(d, &in);
  assert_int_equal(spx_dist_amg_get_info(m, &ai), SPX_OK);
  ALL_TRUE(g_size == 1 || g_rank != last || (in.nlocal == 0 && ai.levels == 0 && spx_dist_amg_report(m) == NULL));
  ALL_TRUE(in.nlocal == 0 || (ai.levels >= 1 && spx_dist_amg_report(m) != NULL));
  b = shared_rand(a->nrows);
  x = calloc((size_t)in.nlocal + 1, 8);
  assert_non_null(x);
  st = amg_solve(d, spx_dist_solve_cg, NULL, b + in.first_row, x, 1e-10, 5000, &r0);
  ALL_TRUE(st == SPX_OK);
  st = amg_solve(d, spx_dist_solve_cg, m, b + in.first_row, x, 1e-10, 5000, &r1);
  if (st) fprintf(g_diag, "rank %d: a rank without rows: %s\n", g_rank, r1.message);
  ALL_TRUE(st == SPX_OK && r1.iterations < r0.iterations && r1.true_rel_resid <= 3e-10);
  spx_dist_amg_destroy(m);
  spx_dist_destroy(d);
  free(rs); free(b); free(x);
  spx_csr_destroy(a);
}

/* ---- The graph partition, the vectors in the original order, a file read in parallel --------- */

/* The 2-D 5-point Laplacian of an m x m grid (4 on the diagonal, -1 off it), its rows and columns
 * shuffled by a fixed permutation: the contiguous split then cuts nearly every edge, a graph
 * partition cuts it as the grid. Integer values: SpMVs of integer vectors are exact. */
static spx_csr *shuffled_laplacian(int m) {
  const int64_t n = (int64_t)m * m;
  int32_t *r = malloc(sizeof(int32_t) * 5 * (size_t)n), *c = malloc(sizeof(int32_t) * 5 * (size_t)n);
  int32_t *p = malloc(sizeof(int32_t) * (size_t)n);
  double *v = malloc(sizeof(double) * 5 * (size_t)n);
  uint64_t x = 20261126;
  int64_t i, k = 0;
  spx_csr *a = NULL;
  int gx, gy, t;
  assert_true(r && c && p && v);
  for (i = 0; i < n; i++) p[i] = (int32_t)i;
  for (i = n - 1; i > 0; i--) { /* Fisher-Yates on a fixed LCG: the same matrix on every rank */
    int64_t j;
    int32_t s;
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    j = (int64_t)((x >> 33) % (uint64_t)(i + 1));
    s = p[i]; p[i] = p[j]; p[j] = s;
  }
  for (gx = 0; gx < m; gx++)
    for (gy = 0; gy < m; gy++) {
      static const int dx[4] = {-1, 1, 0, 0}, dy[4] = {0, 0, -1, 1};
      const int32_t me = p[gx * m + gy];
      r[k] = me; c[k] = me; v[k++] = 4;
      for (t = 0; t < 4; t++)
        if (gx + dx[t] >= 0 && gx + dx[t] < m && gy + dy[t] >= 0 && gy + dy[t] < m) {
          r[k] = me; c[k] = p[(gx + dx[t]) * m + gy + dy[t]]; v[k++] = -1;
        }
    }
  assert_int_equal(spx_csr_from_coo(n, n, k, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  free(r); free(c); free(p); free(v);
  return a;
}

/* The halo bytes per SpMV summed over the ranks (every rank gets the sum). */
static int64_t total_halo(const spx_dist_matrix *d) {
  spx_dist_info in;
  int64_t h, sum = 0;
  spx_dist_get_info(d, &in);
  h = in.halo_bytes;
  MPI_Allreduce(&h, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

/* y = 2 A x + 0.5 y with x and y in the original order, moved by the vector helpers (root: the last
 * rank), equals a's SpMV exactly (integer data): the permuted rows and their original indices
 * agree with a. */
static void check_spmv_orig(const spx_csr *a, spx_dist_matrix *d) {
  const int64_t n = a->nrows;
  const int root = g_size - 1;
  spx_dist_info in;
  double *x = malloc((size_t)n * 8 + 8), *y = malloc((size_t)n * 8 + 8), *ref = malloc((size_t)n * 8 + 8);
  double *yg = malloc((size_t)n * 8 + 8), *xl, *yl;
  int64_t i;
  spx_dist_get_info(d, &in);
  xl = malloc((size_t)in.nlocal * 8 + 8);
  yl = malloc((size_t)in.nlocal * 8 + 8);
  assert_true(x && y && ref && yg && xl && yl);
  for (i = 0; i < n; i++) {
    x[i] = (double)((i * 13) % 7 - 3);
    y[i] = (double)(i % 3);
    yg[i] = NAN;
  }
  memcpy(ref, y, (size_t)n * 8);
  assert_int_equal(spx_csr_spmv(a, 2.0, x, 0.5, ref), SPX_OK);
  ALL_TRUE(spx_dist_scatter_vector(d, root, x, xl) == SPX_OK && spx_dist_scatter_vector(d, root, y, yl) == SPX_OK);
  ALL_TRUE(spx_dist_spmv(d, 2.0, xl, 0.5, yl) == SPX_OK);
  ALL_TRUE(spx_dist_gather_vector(d, root, yl, yg) == SPX_OK);
  ALL_TRUE(g_rank != root || memcmp(yg, ref, (size_t)n * 8) == 0);
  free(x); free(y); free(ref); free(yg); free(xl); free(yl);
}

/* Every row of a exactly once over the ranks' original rows; -1 outside a rank's rows. */
static void check_orig_rows(const spx_dist_matrix *d, int64_t n) {
  spx_dist_info in;
  int64_t *mine, *all = malloc(sizeof(int64_t) * (size_t)n + 8), i;
  char *seen = calloc((size_t)n + 1, 1);
  int *cnt = malloc(sizeof(int) * (size_t)g_size), *dsp = malloc(sizeof(int) * (size_t)g_size), q, ok = 1;
  spx_dist_get_info(d, &in);
  mine = malloc(sizeof(int64_t) * (size_t)in.nlocal + 8);
  assert_true(all && seen && cnt && dsp && mine);
  for (i = 0; i < in.nlocal; i++) mine[i] = spx_dist_orig_row(d, i);
  for (q = 0; q < g_size; q++) {
    dsp[q] = (int)spx_dist_row_start(d, q);
    cnt[q] = (int)(spx_dist_row_start(d, q + 1) - dsp[q]);
  }
  MPI_Allgatherv(mine, (int)in.nlocal, MPI_INT64_T, all, cnt, dsp, MPI_INT64_T, MPI_COMM_WORLD);
  for (i = 0; i < n; i++) {
    if (all[i] < 0 || all[i] >= n || seen[all[i]]) ok = 0;
    else seen[all[i]] = 1;
  }
  ALL_TRUE(ok && spx_dist_orig_row(d, -1) == -1 && spx_dist_orig_row(d, in.nlocal) == -1);
  free(all); free(seen); free(cnt); free(dsp); free(mine);
}

/* The METIS partition on the shuffled grid: each rank's rows contiguous in the permuted numbering,
 * every original row once, the same SpMV as a's, and no more halo than the contiguous split (the
 * numbers are printed). */
static void test_metis_partition(void **state) {
  spx_csr *a;
  spx_dist_matrix *dc, *dm;
  spx_dist_info ic, im;
  int64_t hc, hm, i;
  int ok = 1;
  (void)state;
  need_metis();
  a = shuffled_laplacian(40);
  dc = scatter(a, NULL);
  dm = scatter_part(a, NULL, SPX_DIST_PART_METIS);
  spx_dist_get_info(dc, &ic);
  spx_dist_get_info(dm, &im);
  ALL_TRUE(ic.partition == SPX_DIST_PART_CONTIGUOUS && im.partition == SPX_DIST_PART_METIS);
  ALL_TRUE(im.first_row == spx_dist_row_start(dm, g_rank) &&
           im.first_row + im.nlocal == spx_dist_row_start(dm, g_rank + 1) && im.nlocal > 0);
  for (i = 0; i < ic.nlocal; i++) ok &= spx_dist_orig_row(dc, i) == ic.first_row + i;
  ALL_TRUE(ok);
  check_bookkeeping(a, dm);
  check_orig_rows(dm, a->nrows);
  check_spmv_orig(a, dm);
  check_spmv_orig(a, dc);
  hc = total_halo(dc);
  hm = total_halo(dm);
  if (g_rank == 0)
    printf("shuffled 40x40 grid, %d ranks: halo %lld bytes/SpMV contiguous, %lld metis\n", g_size, (long long)hc,
           (long long)hm);
  ALL_TRUE(hm <= hc);
  spx_dist_destroy(dc);
  spx_dist_destroy(dm);
  spx_csr_destroy(a);
}

/* CG and Jacobi PCG on METIS's partition against the one-process solvers, as test_shared compares
 * the contiguous split (one rank: the same bits; the tolerances of the file's header). */
static void test_metis_solve(void **state) {
  spx_csr *a;
  (void)state;
  need_metis();
  a = shuffled_laplacian(30);
  compare_part("shuffled grid cg", a, spx_solve_cg, spx_dist_solve_cg, 1e-10, 5000, SPX_DIST_PART_METIS);
  spx_csr_destroy(a);
  a = spx_test_shared("662_bus");
  compare_part("662_bus cg", a, spx_solve_cg, spx_dist_solve_cg, 1e-10, 5000, SPX_DIST_PART_METIS);
  compare_part("662_bus pcg_jacobi", a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10, 5000,
               SPX_DIST_PART_METIS);
  spx_csr_destroy(a);
  a = spx_test_shared("cage8");
  compare_part("cage8 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10, 2000, SPX_DIST_PART_METIS);
  spx_csr_destroy(a);
}

/* One round trip: scatter from root, each part holding its original rows' entries, gather back the
 * same bits (vs: the value size, 8 or 4). */
static void round_trip(const spx_dist_matrix *d, int root, size_t vs) {
  spx_dist_info in;
  char *v, *back, *part;
  int64_t i, n;
  int ok = 1;
  spx_dist_get_info(d, &in);
  n = in.n;
  v = malloc((size_t)n * vs + 8);
  back = malloc((size_t)n * vs + 8);
  part = malloc((size_t)in.nlocal * vs + 8);
  assert_true(v && back && part);
  for (i = 0; i < n; i++) {
    double x = spx_test_rand();
    float f = (float)x;
    if (vs == 8) memcpy(v + i * 8, &x, 8);
    else memcpy(v + i * 4, &f, 4);
  }
  MPI_Bcast(v, (int)(n * (int64_t)vs), MPI_BYTE, 0, MPI_COMM_WORLD);
  memset(back, 0xff, (size_t)n * vs); /* poisoned: NaN */
  ALL_TRUE(spx_dist_scatter_vector(d, root, v, part) == SPX_OK);
  for (i = 0; i < in.nlocal; i++) ok &= !memcmp(part + i * (int64_t)vs, v + spx_dist_orig_row(d, i) * (int64_t)vs, vs);
  ALL_TRUE(ok);
  ALL_TRUE(spx_dist_gather_vector(d, root, part, back) == SPX_OK);
  ALL_TRUE(g_rank != root || !memcmp(back, v, (size_t)n * vs));
  free(v); free(back); free(part);
}

/* spx_dist_scatter_vector and spx_dist_gather_vector: round trips in double and float, from rank 0
 * and from the last rank, on the contiguous split, a given one and METIS's (where built); bad
 * arguments on one rank fail on every rank. */
static void test_vectors(void **state) {
  const int last = g_size - 1;
  spx_csr *a, *af;
  spx_dist_matrix *d;
  spx_dist_info in;
  int64_t rs[5];
  double *v, *part;
  int q, k;
  spx_status st;
  (void)state;
  a = shuffled_laplacian(13);
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
  for (q = 0; q <= g_size; q++) rs[q] = a->nrows * q * q / (g_size * g_size); /* uneven */
  for (k = 0; k < 3; k++) {
    if (k == 2 && !all_ok(spx_dist_partition_available(SPX_DIST_PART_METIS))) break;
    d = scatter_part(a, k == 1 ? rs : NULL, k == 2 ? SPX_DIST_PART_METIS : SPX_DIST_PART_CONTIGUOUS);
    round_trip(d, 0, 8);
    round_trip(d, last, 8);
    spx_dist_destroy(d);
    d = scatter_part(af, k == 1 ? rs : NULL, k == 2 ? SPX_DIST_PART_METIS : SPX_DIST_PART_CONTIGUOUS);
    round_trip(d, last, 4);
    spx_dist_destroy(d);
  }
  d = scatter(a, NULL);
  spx_dist_get_info(d, &in);
  v = shared_rand(a->nrows);
  part = malloc((size_t)in.nlocal * 8 + 8);
  st = spx_dist_scatter_vector(d, g_rank == last ? 0 : last, v, part);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "different roots");
  st = spx_dist_scatter_vector(d, 0, v, g_rank == last ? NULL : part);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "NULL part");
  st = spx_dist_gather_vector(d, 0, part, g_rank == 0 ? NULL : v);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, 0, "NULL vector on the root");
  st = spx_dist_gather_vector(d, g_size, part, v);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, -1, "root out of range");
  ALL_TRUE(spx_dist_scatter_vector(NULL, 0, v, part) == SPX_INVALID_ARGUMENT);
  spx_clear_error();
  spx_dist_destroy(d);
  free(v); free(part);
  spx_csr_destroy(a);
  spx_csr_destroy(af);
}

/* The partition option: its names; METIS with row_start, an unknown value and METIS in
 * spx_dist_create refused on every rank; METIS where spx was built without it SPX_UNSUPPORTED on
 * every rank, with a sentence naming METIS. */
static void test_partition_options(void **state) {
  spx_dist_options o = dist_options();
  spx_dist_partition p = SPX_DIST_PART_CONTIGUOUS;
  spx_csr *a, *rows;
  spx_dist_matrix *d = NULL;
  int64_t rs[5];
  int q;
  spx_status st;
  (void)state;
  assert_int_equal(spx_dist_partition_parse("metis", &p), SPX_OK);
  assert_int_equal(p, SPX_DIST_PART_METIS);
  assert_int_equal(spx_dist_partition_parse("contiguous", &p), SPX_OK);
  assert_int_equal(p, SPX_DIST_PART_CONTIGUOUS);
  assert_int_equal(spx_dist_partition_parse("scotch", &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "contiguous, metis"));
  assert_string_equal(spx_dist_partition_name(SPX_DIST_PART_METIS), "metis");
  assert_string_equal(spx_dist_partition_name((spx_dist_partition)9), "unknown");
  assert_true(spx_dist_partition_available(SPX_DIST_PART_CONTIGUOUS));
  spx_clear_error();
  assert_int_equal(spx_gen_poisson3d(6, 6, 6, 7, SPX_DOUBLE, &a), SPX_OK);
  for (q = 0; q <= g_size; q++) rs[q] = a->nrows * q / g_size;
  o.partition = SPX_DIST_PART_METIS;
  o.row_start = rs;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, 0, "metis and row_start");
  o.row_start = NULL;
  o.partition = (spx_dist_partition)7;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, 0, "an unknown partition");
  o.partition = SPX_DIST_PART_METIS;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &o, &d);
  if (spx_dist_partition_available(SPX_DIST_PART_METIS)) {
    ALL_TRUE(st == SPX_OK);
    spx_dist_destroy(d);
  } else {
    int named = strstr(spx_last_error(), "METIS") != NULL;
    expect_everywhere(st, SPX_UNSUPPORTED, 0, "metis not built in");
    ALL_TRUE(named);
  }
  assert_int_equal(spx_csr_create(g_rank == 0 ? a->nrows : 0, a->nrows, 0, SPX_DOUBLE, &rows), SPX_OK);
  st = spx_dist_create(MPI_COMM_WORLD, a->nrows, rows, &o, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, -1, "metis in spx_dist_create");
  ALL_TRUE(d == NULL);
  spx_csr_destroy(rows);
  spx_csr_destroy(a);
}

/* ---- spx_dist_read_mm ---- */
static char g_tmp[512]; /* rank 0's temporary directory, the same path on every rank */
static char g_made[32][600];
static int g_nmade;

/* A path in the temporary directory (made on first use), remembered for the cleanup. */
static const char *tmp_path(const char *name) {
  if (!g_tmp[0]) {
    if (g_rank == 0) {
      const char *t = getenv("TMPDIR");
      snprintf(g_tmp, sizeof g_tmp, "%s/spx_dist_mm_XXXXXX", t && *t ? t : "/tmp");
      if (!mkdtemp(g_tmp)) g_tmp[0] = 0;
    }
    MPI_Bcast(g_tmp, (int)sizeof g_tmp, MPI_CHAR, 0, MPI_COMM_WORLD);
    assert_true(g_tmp[0] != 0);
  }
  assert_true(g_nmade < 32);
  snprintf(g_made[g_nmade], sizeof g_made[0], "%s/%s", g_tmp, name);
  return g_made[g_nmade++];
}

/* Rank 0 writes text to path; every rank returns once it is there. */
static void write_text(const char *path, const char *text, size_t n) {
  int ok = 1;
  if (g_rank == 0) {
    FILE *f = fopen(path, "wb");
    ok = f && fwrite(text, 1, n, f) == n;
    if (f && fclose(f)) ok = 0;
  }
  ALL_TRUE(ok);
}

/* The shared matrix name inflated to a plain file, as stored (a symmetric file keeps its triangle). */
static const char *plain_copy(const char *name) {
  char src[1024], file[64];
  const char *dst;
  int ok = 1;
  spx_test_matrix_path(name, src, sizeof src);
  snprintf(file, sizeof file, "%s.mtx", name);
  dst = tmp_path(file);
  if (g_rank == 0) {
    gzFile g = gzopen(src, "rb");
    FILE *f = fopen(dst, "wb");
    char buf[1 << 16];
    int got;
    ok = g && f;
    while (ok && (got = gzread(g, buf, sizeof buf)) > 0) ok = fwrite(buf, 1, (size_t)got, f) == (size_t)got;
    if (g) gzclose(g);
    if (f && fclose(f)) ok = 0;
  }
  ALL_TRUE(ok);
  return dst;
}

/* spx_dist_read_mm(path) against spx_mm_read(path) on rank 0 then spx_dist_scatter, both with
 * row_start rs (NULL: the balance) and partition part: the same split, blocks and halo, and the
 * same SpMV bits. */
static void same_as_serial_part(const char *path, spx_dtype dt, const int64_t *rs, spx_dist_partition part) {
  spx_dist_options o = dist_options();
  spx_dist_matrix *dp = NULL, *ds = NULL;
  spx_dist_info ip, is;
  spx_csr *a = NULL;
  spx_status st;
  char *x, *y1, *y2;
  const size_t vs = dt == SPX_DOUBLE ? 8 : 4;
  int64_t i;
  int q, ok = 1;
  o.row_start = rs;
  o.partition = part;
  st = spx_dist_read_mm(MPI_COMM_WORLD, path, dt, &o, &dp);
  if (st) fprintf(g_diag, "rank %d: spx_dist_read_mm(%s): %s\n", g_rank, path, spx_last_error());
  ALL_TRUE(st == SPX_OK);
  if (g_rank == 0) assert_int_equal(spx_mm_read(path, dt, &a, NULL), SPX_OK);
  ALL_TRUE(spx_dist_scatter(MPI_COMM_WORLD, 0, a, &o, &ds) == SPX_OK);
  spx_dist_get_info(dp, &ip);
  spx_dist_get_info(ds, &is);
  for (q = 0; q <= g_size; q++) ok &= spx_dist_row_start(dp, q) == spx_dist_row_start(ds, q);
  for (i = 0; i < ip.nlocal; i++) ok &= spx_dist_orig_row(dp, i) == spx_dist_orig_row(ds, i);
  ALL_TRUE(ok && ip.n == is.n && ip.dtype == dt && ip.nnz_local == is.nnz_local && ip.nnz_ghost == is.nnz_ghost &&
           ip.nghost == is.nghost && ip.send_entries == is.send_entries && ip.partition == part);
  x = malloc((size_t)ip.nlocal * vs + 8);
  y1 = malloc((size_t)ip.nlocal * vs + 8);
  y2 = malloc((size_t)ip.nlocal * vs + 8);
  assert_true(x && y1 && y2);
  for (i = 0; i < ip.nlocal; i++) {
    double v = spx_test_rand();
    float f = (float)v;
    if (vs == 8) memcpy(x + i * 8, &v, 8);
    else memcpy(x + i * 4, &f, 4);
  }
  ALL_TRUE(spx_dist_spmv(dp, 1.0, x, 0.0, y1) == SPX_OK && spx_dist_spmv(ds, 1.0, x, 0.0, y2) == SPX_OK);
  ALL_TRUE(!memcmp(y1, y2, (size_t)ip.nlocal * vs));
  spx_dist_destroy(dp);
  spx_dist_destroy(ds);
  spx_csr_destroy(a);
  free(x); free(y1); free(y2);
}

static void same_as_serial(const char *path, spx_dtype dt, const int64_t *rs) {
  same_as_serial_part(path, dt, rs, SPX_DIST_PART_CONTIGUOUS);
}

/* A crafted file: comments and blank lines among the entries, CRLF ends, a duplicate (summed),
 * more ranks than some ranks' shares have lines, and no '\n' after the last entry. */
static const char crafted[] =
    "%%MatrixMarket matrix coordinate real symmetric\n"
    "% a comment before the size line\n"
    "6 6 8\n"
    "1 1 4.5\n"
    "% a comment among the entries\n"
    "\n"
    "2 1 -1.25\r\n"
    "2 2 4\n"
    "   3 3 4\n"
    "4 2 -0.5\n"
    "6 1 3e-3\n"
    "6 6 2\n"
    "5 5 1";

/* Shared matrices written out plain: symmetric real (mirrored), general real, symmetric pattern,
 * general pattern, tiny; the default split, a given uneven one, float, and METIS's (rank 0 reads
 * then; where built); the gzip original (rank 0 reads it); the crafted file. */
static void test_read_mm(void **state) {
  static const char *const names[] = {"bcsstk05", "cage8", "Erdos971", "GD98_a", "LFAT5"};
  char gz[1024];
  int64_t rs[5];
  spx_csr *a = NULL;
  int k, q;
  (void)state;
  for (k = 0; k < 5; k++) {
    const char *p = plain_copy(names[k]);
    same_as_serial(p, SPX_DOUBLE, NULL);
    if (k == 0) {
      a = spx_test_shared(names[k]);
      for (q = 0; q <= g_size; q++) rs[q] = a->nrows * q * q / (g_size * g_size);
      same_as_serial(p, SPX_DOUBLE, rs);
      same_as_serial(p, SPX_FLOAT, NULL);
      if (all_ok(spx_dist_partition_available(SPX_DIST_PART_METIS))) /* rank 0 reads, METIS partitions */
        same_as_serial_part(p, SPX_DOUBLE, NULL, SPX_DIST_PART_METIS);
      spx_csr_destroy(a);
    }
  }
  spx_test_matrix_path("bcsstk05", gz, sizeof gz);
  same_as_serial(gz, SPX_DOUBLE, NULL);
  {
    const char *p = tmp_path("crafted.mtx");
    write_text(p, crafted, sizeof crafted - 1);
    same_as_serial(p, SPX_DOUBLE, NULL);
  }
}

/* A failing read: the status on every rank, each rank's sentence ending in spx_mm_read's (rank 0,
 * serially) for the same file: the same line numbers. */
static void expect_read_fails(const char *path, spx_status want, const char *what) {
  char serial[512] = "";
  spx_dist_matrix *d = NULL;
  spx_csr *a = NULL;
  spx_status st;
  const char *got;
  int ok;
  if (g_rank == 0) {
    ALL_TRUE(spx_mm_read(path, SPX_DOUBLE, &a, NULL) == want);
    snprintf(serial, sizeof serial, "%s", spx_last_error());
  } else {
    ALL_TRUE(1);
  }
  MPI_Bcast(serial, (int)sizeof serial, MPI_CHAR, 0, MPI_COMM_WORLD);
  st = spx_dist_read_mm(MPI_COMM_WORLD, path, SPX_DOUBLE, NULL, &d);
  got = spx_last_error();
  ok = st == want && d == NULL && strlen(got) >= strlen(serial) && !strcmp(got + strlen(got) - strlen(serial), serial);
  if (!ok) fprintf(g_diag, "rank %d: %s: %s \"%s\", serially \"%s\"\n", g_rank, what, spx_status_string(st), got, serial);
  ALL_TRUE(ok);
  spx_clear_error();
}

/* A general 300 x 300 file of 300 entries (the anti-diagonal), its size line announcing nnz, and
 * line bad (0: none) holding "x1" for a value; returns the length. */
static size_t anti_diagonal(char *text, size_t cap, int64_t nnz, int64_t bad) {
  size_t n = (size_t)snprintf(text, cap, "%%%%MatrixMarket matrix coordinate real general\n300 300 %lld\n", (long long)nnz);
  int64_t k;
  for (k = 1; k <= 300; k++)
    n += (size_t)snprintf(text + n, cap - n, "%lld %lld %s\n", (long long)k, (long long)(301 - k),
                          k + 2 == bad ? "x1" : "1.5");
  return n;
}

/* Errors: a missing file, a bad header, a bad line late in the file (the last rank's share), an
 * entry past the size line's count, a file that ends early; a non-square file; ranks passing
 * other dtypes or a NULL path. */
static void test_read_mm_errors(void **state) {
  static const char bad_header[] = "%%MatrixMarket matrix coordinate real sideways\n2 2 1\n1 1 1\n";
  static const char wide[] = "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 4 1\n";
  const int last = g_size - 1;
  const size_t cap = 1 << 16;
  char *text = malloc(cap);
  spx_dist_matrix *d = NULL;
  spx_status st;
  const char *p;
  (void)state;
  assert_non_null(text);
  expect_read_fails(tmp_path("no_such.mtx"), SPX_IO, "a missing file");
  p = tmp_path("bad_header.mtx");
  write_text(p, bad_header, sizeof bad_header - 1);
  expect_read_fails(p, SPX_PARSE, "a bad header");
  p = tmp_path("bad_line.mtx");
  write_text(p, text, anti_diagonal(text, cap, 300, 280));
  expect_read_fails(p, SPX_PARSE, "a bad line");
  p = tmp_path("too_many.mtx");
  write_text(p, text, anti_diagonal(text, cap, 200, 0));
  expect_read_fails(p, SPX_PARSE, "too many entries");
  p = tmp_path("too_few.mtx");
  write_text(p, text, anti_diagonal(text, cap, 310, 0));
  expect_read_fails(p, SPX_PARSE, "a file that ends early");
  p = tmp_path("wide.mtx");
  write_text(p, wide, sizeof wide - 1);
  st = spx_dist_read_mm(MPI_COMM_WORLD, p, SPX_DOUBLE, NULL, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, 0, "a non-square file");
  p = plain_copy("bcsstk05");
  st = spx_dist_read_mm(MPI_COMM_WORLD, p, g_rank == last ? SPX_FLOAT : SPX_DOUBLE, NULL, &d);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "other dtypes");
  spx_dist_destroy(d);
  d = NULL;
  st = spx_dist_read_mm(MPI_COMM_WORLD, g_rank == last ? NULL : p, SPX_DOUBLE, NULL, &d);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "a NULL path");
  ALL_TRUE(d == NULL);
  free(text);
}

/* The temporary files and their directory (rank 0, after every rank is done with them). */
static void test_read_mm_cleanup(void **state) {
  int k;
  (void)state;
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    for (k = 0; k < g_nmade; k++) unlink(g_made[k]);
    if (g_tmp[0]) rmdir(g_tmp);
  }
  ALL_TRUE(1);
}

/* ---- The stencil over the ranks ------------------------------------------------------------------ */
/* The whole initial grid of p, the same on every rank (drawn on rank 0), in p's dtype. */
static void *stencil_grid(const spx_stencil *p) {
  const int64_t n = p->nx * p->ny * p->nz;
  double *v = shared_rand(n);
  int64_t i;
  if (p->dtype == SPX_FLOAT) {
    float *f = malloc(sizeof(float) * (size_t)n);
    assert_non_null(f);
    for (i = 0; i < n; i++) f[i] = (float)v[i];
    free(v);
    return f;
  }
  return v;
}

static spx_context *host_ctx(void) {
  spx_context_options co = {SPX_BACKEND_HOST, 0};
  spx_context *ctx = NULL;
  assert_int_equal(spx_context_create(&co, &ctx), SPX_OK);
  return ctx;
}

/* spx_dist_stencil_run of p on ctx (this rank's planes of the grid above) against spx_stencil_run
 * of the whole grid on the host with the same local options: every rank's planes bit for bit. The
 * report's interval (want_R, 0: not checked), layout (want_split, -1: not checked), exchanges and
 * halo bytes. */
static void stencil_case(spx_context *ctx, const char *what, const spx_stencil *p, int64_t steps,
                         const spx_dist_stencil_options *o, int64_t want_R, int want_split) {
  const size_t vs = SPX_DTYPE_SIZE(p->dtype), pb = (size_t)(p->nx * p->ny) * vs;
  spx_context *hctx = host_ctx();
  spx_dist_stencil_report rep;
  void *ref = stencil_grid(p), *u = NULL;
  int64_t z0, z1, R;
  spx_status st;
  int ok;
  assert_int_equal(spx_dist_stencil_planes(p->nz, g_size, g_rank, &z0, &z1), SPX_OK);
  st = spx_dist_stencil_grid_alloc(MPI_COMM_WORLD, ctx, p, NULL, &u);
  ALL_TRUE(st == SPX_OK && (z1 == z0 || u));
  if (z1 > z0) memcpy(u, (char *)ref + (size_t)z0 * pb, (size_t)(z1 - z0) * pb);
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, p, u, steps, o, &rep);
  if (st) fprintf(g_diag, "rank %d: %s: %s\n", g_rank, what, spx_last_error());
  ALL_TRUE(st == SPX_OK);
  st = spx_stencil_run(hctx, p, ref, steps, &o->local, NULL);
  if (st) fprintf(g_diag, "rank %d: %s: the one-process run: %s\n", g_rank, what, spx_last_error());
  ALL_TRUE(st == SPX_OK);
  ok = z1 == z0 || memcmp(u, (char *)ref + (size_t)z0 * pb, (size_t)(z1 - z0) * pb) == 0;
  if (!ok) {
    int64_t i, n = (z1 - z0) * p->nx * p->ny;
    for (i = 0; i < n; i++)
      if (memcmp((char *)u + (size_t)i * vs, (char *)ref + (size_t)z0 * pb + (size_t)i * vs, vs)) break;
    fprintf(g_diag, "rank %d: %s: planes %lld..%lld differ from one process first at cell %lld (plane %lld)\n", g_rank,
            what, (long long)z0, (long long)z1 - 1, (long long)i, (long long)(z0 + i / (p->nx * p->ny)));
  }
  ALL_TRUE(ok);
  R = rep.interval;
  if (g_rank == 0)
    printf("%-34s %d ranks: interval %lld, %lld exchanges, %s, %lld halo bytes sent by rank 0\n", what, g_size,
           (long long)R, (long long)rep.exchanges, rep.split ? "split" : "one grid", (long long)rep.halo_bytes_sent);
  ok = rep.rank == g_rank && rep.z0 == z0 && rep.z1 == z1 && (steps == 0 ? R == 0 && rep.exchanges == 0 : R >= 1) &&
       (!want_R || R == want_R) && (steps == 0 || rep.exchanges == (steps + R - 1) / R) && (want_split < 0 || z1 == z0 || rep.split == want_split) &&
       rep.halo_bytes == ((rep.lo_rank >= 0) + (rep.hi_rank >= 0)) * R * (int64_t)pb &&
       rep.halo_bytes_sent == ((rep.lo_rank >= 0) + (rep.hi_rank >= 0)) * steps * (int64_t)pb &&
       (g_size > 1 || (rep.lo_rank < 0 && rep.hi_rank < 0));
  if (!ok)
    fprintf(g_diag, "rank %d: %s: report: rank %d planes %lld..%lld interval %lld exchanges %lld split %d halo %lld/%lld\n",
            g_rank, what, rep.rank, (long long)rep.z0, (long long)rep.z1, (long long)R, (long long)rep.exchanges,
            rep.split, (long long)rep.halo_bytes, (long long)rep.halo_bytes_sent);
  ALL_TRUE(ok);
  spx_stencil_grid_free(ctx, u);
  free(ref);
  spx_context_destroy(hctx);
}

static spx_dist_stencil_options stencil_options(int64_t interval) {
  spx_dist_stencil_options o;
  spx_dist_stencil_options_default(&o);
  o.interval = interval;
  o.timeout_s = 20;
  return o;
}

static void test_stencil_planes(void **state) {
  static const int64_t nzs[] = {3, 4, 5, 7, 23, 64};
  int64_t z0, z1, prev;
  int k, r, size;
  (void)state;
  for (k = 0; k < (int)(sizeof nzs / sizeof *nzs); k++)
    for (size = 1; size <= 6; size++)
      for (r = 0, prev = 0; r < size; r++) {
        assert_int_equal(spx_dist_stencil_planes(nzs[k], size, r, &z0, &z1), SPX_OK);
        assert_true(z0 == prev && z1 - z0 >= nzs[k] / size && z1 - z0 <= nzs[k] / size + 1);
        assert_true(z1 > z0 || nzs[k] < size); /* empty only when nz < size: the last ranks */
        prev = z1;
        if (r == size - 1) assert_int_equal(z1, nzs[k]);
      }
  assert_int_equal(spx_dist_stencil_planes(10, 2, 2, &z0, &z1), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_dist_stencil_planes(10, 0, 0, &z0, &z1), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_dist_stencil_planes(10, 2, 0, NULL, &z1), SPX_INVALID_ARGUMENT);
  spx_clear_error();
}

static void test_stencil_bitwise(void **state) {
  spx_context *ctx = host_ctx();
  spx_dist_stencil_options o;
  spx_stencil p;
  (void)state;
  /* nz 23 over 2 and 4 ranks, the plan's interval (one rank: every step at once) */
  assert_int_equal(spx_stencil_init(&p, 12, 10, 23, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  o = stencil_options(0);
  stencil_case(ctx, "23 planes, default interval", &p, 7, &o, g_size == 1 ? 7 : 0, -1);
  /* steps not a multiple of the interval; the same halos waited for first */
  o = stencil_options(3);
  stencil_case(ctx, "23 planes, interval 3 of 11", &p, 11, &o, g_size == 1 ? 11 : 3, -1);
  o.no_overlap = 1;
  stencil_case(ctx, "23 planes, interval 3, no overlap", &p, 11, &o, g_size == 1 ? 11 : 3, -1);
  /* interval 1, float, nonsymmetric coefficients */
  assert_int_equal(spx_stencil_init(&p, 11, 9, 17, SPX_FLOAT, 0.3, 0.1, 0.1, 0.1), SPX_OK);
  p.c[1] = 0.05; p.c[4] = 0.15; p.c[6] = 0.12;
  o = stencil_options(1);
  stencil_case(ctx, "17 planes float, interval 1", &p, 5, &o, g_size == 1 ? 5 : 1, 1);
  /* 3 planes: on 4 ranks the last owns none, the others one (all boundary but the middle) */
  assert_int_equal(spx_stencil_init(&p, 9, 8, 3, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  o = stencil_options(0);
  stencil_case(ctx, "3 planes", &p, 4, &o, g_size == 1 ? 4 : 1, -1);
  /* slabs thinner than two intervals: one grid with the halos (12 planes: 6 or 3 a rank, the
   * interval clamped to them) */
  assert_int_equal(spx_stencil_init(&p, 10, 9, 12, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  o = stencil_options(100);
  stencil_case(ctx, "12 planes, interval the slab", &p, 9, &o, g_size == 1 ? 9 : 12 / g_size, g_size == 1 ? 1 : 0);
  /* no steps: nothing moves */
  o = stencil_options(0);
  stencil_case(ctx, "no steps", &p, 0, &o, 0, -1);
  spx_context_destroy(ctx);
}

/* Every method out of core on the host backend (which runs the GPU's schedule copy for copy) under a
 * budget of a few planes, for the local runs and the one-process run alike. */
static void test_stencil_out_of_core(void **state) {
  static const spx_stencil_method m[] = {SPX_STENCIL_OVERLAP, SPX_STENCIL_MMTB, SPX_STENCIL_MMT, SPX_STENCIL_MM,
                                         SPX_STENCIL_NORMAL, SPX_STENCIL_INCORE};
  spx_context *ctx = host_ctx();
  spx_stencil p;
  int k;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 16, 12, 50, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  for (k = 0; k < (int)(sizeof m / sizeof *m); k++) {
    spx_dist_stencil_options o = stencil_options(m[k] == SPX_STENCIL_NORMAL ? 2 : 4);
    spx_stencil_plan pl;
    char what[64];
    o.local.method = m[k];
    if (m[k] != SPX_STENCIL_INCORE) o.local.budget = 44 * 16 * 12 * 4; /* 44 planes: slabs of a few */
    if (m[k] == SPX_STENCIL_MMTB || m[k] == SPX_STENCIL_OVERLAP || m[k] == SPX_STENCIL_MMT) o.local.tts = 2;
    /* out of core indeed: the one-process plan takes several slabs */
    assert_int_equal(spx_stencil_choose(&p, 9, &o.local, NULL, &pl), SPX_OK);
    if (m[k] != SPX_STENCIL_INCORE) assert_true(pl.nslabs > 1);
    snprintf(what, sizeof what, "50 planes, %s (%lld slabs alone)", spx_stencil_method_name(m[k]), (long long)pl.nslabs);
    stencil_case(ctx, what, &p, 9, &o, g_size == 1 ? 9 : m[k] == SPX_STENCIL_NORMAL ? 2 : 4, -1);
  }
  spx_context_destroy(ctx);
}

static void test_stencil_bad_inputs(void **state) {
  const int last = g_size - 1;
  spx_context *ctx = host_ctx();
  spx_dist_stencil_options o = stencil_options(0), ob;
  spx_stencil p, q;
  void *u = NULL;
  int64_t z0, z1, i;
  spx_status st;
  (void)state;
  assert_int_equal(spx_stencil_init(&p, 8, 7, 20, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  assert_int_equal(spx_dist_stencil_grid_alloc(MPI_COMM_WORLD, ctx, &p, NULL, &u), SPX_OK);
  assert_int_equal(spx_dist_stencil_planes(p.nz, g_size, g_rank, &z0, &z1), SPX_OK);
  for (i = 0; i < MAX2(3, z1 - z0) * 8 * 7; i++) ((double *)u)[i] = 0.5 + 0.25 * (double)(i % 3);
  /* another grid, dtype, coefficient, steps or interval on the last rank (one rank: its own grid, u's) */
  q = p; if (g_rank == last && g_size > 1) q.ny = 8;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &q, u, 3, &o, NULL);
  expect_everywhere(st, g_size > 1 ? SPX_DIMENSION_MISMATCH : SPX_OK, -1, "stencil: another grid");
  q = p; if (g_rank == last && g_size > 1) q.dtype = SPX_FLOAT;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &q, u, 3, &o, NULL);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "stencil: another dtype");
  q = p; if (g_rank == last) q.c[5] = 0.1000001;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &q, u, 3, &o, NULL);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "stencil: another coefficient");
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, g_rank == last ? 4 : 3, &o, NULL);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "stencil: other steps");
  ob = o; if (g_rank == last) ob.interval = 2;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, 3, &ob, NULL);
  expect_everywhere(st, g_size > 1 ? SPX_INVALID_ARGUMENT : SPX_OK, -1, "stencil: another interval");
  /* one rank's NULL, negative steps or interval, a bad problem */
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, g_rank == last ? NULL : u, 3, &o, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "stencil: NULL grid");
  st = spx_dist_stencil_run(MPI_COMM_WORLD, g_rank == 0 ? NULL : ctx, &p, u, 3, &o, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, 0, "stencil: NULL context");
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, g_rank == last ? NULL : &p, u, 3, &o, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "stencil: NULL problem");
  q = p; if (g_rank == last) q.nx = 2;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &q, u, 3, &o, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "stencil: a grid 2 cells wide");
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, g_rank == last ? -1 : 3, &o, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "stencil: negative steps");
  ob = o; if (g_rank == last) ob.interval = -1;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, 3, &ob, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "stencil: negative interval");
  /* bad local options: the plan fails on the last rank before the rounds (the plan's interval)... */
  ob = o; if (g_rank == last) ob.local.depth = 3;
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, 3, &ob, NULL);
  expect_everywhere(st, SPX_INVALID_ARGUMENT, last, "stencil: depth 3 on one rank");
  /* ... or in the first round (interval given: no plan before): every rank completes it */
  ob = stencil_options(2);
  if (g_rank == last) { ob.local.method = SPX_STENCIL_MMTB; ob.local.budget = 100; }
  st = spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, 5, &ob, NULL);
  expect_everywhere(st, SPX_DEVICE_OUT_OF_MEMORY, last, "stencil: a local run out of device memory");
  /* still fine afterwards */
  ALL_TRUE(spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, 3, &o, NULL) == SPX_OK);
  spx_stencil_grid_free(ctx, u);
  spx_context_destroy(ctx);
}

/* Near the end (before test_mismatched_communicator): a rank that runs on another communicator (MPI_COMM_SELF, where its grid would be
 * the whole one: it passes NULL and fails at once); the others give up after timeout_s. The
 * communicator they passed is unusable afterwards (a duplicate made here, left alone). */
static void test_stencil_mismatched_communicator(void **state) {
  spx_context *ctx;
  spx_dist_stencil_options o = stencil_options(0);
  spx_stencil p;
  void *u = NULL;
  MPI_Comm c;
  spx_status st;
  (void)state;
  if (g_size < 2) {
    ALL_TRUE(1);
    return;
  }
  ctx = host_ctx();
  assert_int_equal(spx_stencil_init(&p, 6, 6, 12, SPX_DOUBLE, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  assert_int_equal(spx_dist_stencil_grid_alloc(MPI_COMM_WORLD, ctx, &p, NULL, &u), SPX_OK);
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  o.timeout_s = 1;
  if (g_rank == g_size - 1) st = spx_dist_stencil_run(MPI_COMM_SELF, ctx, &p, NULL, 3, &o, NULL);
  else st = spx_dist_stencil_run(c, ctx, &p, u, 3, &o, NULL);
  if (g_rank == 0 || g_rank == g_size - 1) fprintf(g_diag, "rank %d (expected): %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_INVALID_ARGUMENT);
  spx_clear_error();
  spx_stencil_grid_free(ctx, u);
  spx_context_destroy(ctx);
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

/* A CUDA context on the node's device 0 where every rank can make one, else NULL on every rank (a
 * test skips everywhere or nowhere). */
static spx_context *gpu_ctx(void) {
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  int ok = spx_device_count() > 0 && spx_context_create(&co, &ctx) == SPX_OK;
  if (all_ok(ok)) return ctx;
  spx_context_destroy(ctx);
  spx_clear_error();
  return NULL;
}

/* The CUDA backend's SpMV (device x and y, the halo through pinned host buffers), every rank on
 * the node's device 0, against the global host SpMV: a Poisson matrix and the anti-diagonal one
 * whose rows read only other ranks' columns, y = 2 A x + 0.5 y. */
static void test_gpu_spmv(void **state) {
  spx_context *ctx = gpu_ctx();
  int k, ok;
  (void)state;
  if (!ctx) skip(); /* every rank skips, or none */
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
  spx_context *ctx = gpu_ctx();
  spx_csr *a = NULL;
  (void)state;
  if (!ctx) skip(); /* every rank skips, or none */
  assert_int_equal(spx_gen_poisson3d(14, 13, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  gpu_compare(ctx, "poisson7 cg", a, spx_solve_cg, spx_dist_solve_cg, 1e-10);
  gpu_compare(ctx, "poisson7 pcg_jacobi", a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10);
  gpu_compare(ctx, "poisson7 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10);
  spx_csr_destroy(a);
  a = spx_test_shared("cage8");
  gpu_compare(ctx, "cage8 bicgstab", a, spx_solve_bicgstab, spx_dist_solve_bicgstab, 1e-10);
  spx_csr_destroy(a);
  /* 3 rows over up to 4 ranks: a rank without rows takes part in every sum */
  assert_int_equal(spx_gen_poisson3d(3, 1, 1, 7, SPX_DOUBLE, &a), SPX_OK);
  gpu_compare(ctx, "3 rows pcg_jacobi", a, spx_solve_pcg_jacobi, spx_dist_solve_pcg_jacobi, 1e-10);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
}

/* The AMG blocks on CUDA, every rank on the node's device 0, the matrix's and the hierarchies' plans
 * forced to CSR (deterministic kernels), b and x host arrays (host_vectors; the solver hands the
 * preconditioner device vectors): CG with them converges to the tolerance in at most 1/2.5 of CG's
 * iterations, BiCGSTAB with them converges; run twice, the same bits; on one rank the iterations
 * and x of spx_solve_cg with spx_amg_precond on one GPU (the whole matrix's hierarchy on the same
 * context with the same options), bit for bit. 20^3 rows are below gpu_setup_rows: the setups run
 * on the host, the cycles on the GPU. */
static void test_gpu_amg(void **state) {
  const double rtol = 1e-10;
  spx_context *ctx = gpu_ctx();
  spx_csr *a = NULL;
  spx_plan_options po;
  spx_dist_options dop = dist_options();
  spx_dist_matrix *d = NULL;
  spx_dist_amg *m = NULL;
  spx_dist_info in;
  spx_amg_options ao;
  spx_solve_options o;
  spx_solve_report r0, r1, r2, rb;
  double *b, *x0, *x1, *x2, *xb, *xg;
  int64_t n;
  spx_status st, s0, s1, s2, sb;
  (void)state;
  if (!ctx) skip(); /* every rank skips, or none */
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  spx_plan_options_default(&po);
  po.backend = SPX_BACKEND_CUDA;
  po.no_calibrate = 1;
  po.force = "csr";
  po.eager = 1;
  dop.plan = po;
  dop.ctx = ctx;
  dop.keep_local = 1;
  st = spx_dist_scatter(MPI_COMM_WORLD, 0, g_rank == 0 ? a : NULL, &dop, &d);
  if (st) fprintf(g_diag, "rank %d: scatter on CUDA: %s\n", g_rank, spx_last_error());
  ALL_TRUE(st == SPX_OK && d);
  spx_amg_options_default(&ao);
  ao.plan = &po;
  m = dist_amg(d, &ao);
  spx_dist_get_info(d, &in);
  b = shared_rand(n);
  x0 = calloc((size_t)in.nlocal + 1, 8); x1 = calloc((size_t)in.nlocal + 1, 8); x2 = calloc((size_t)in.nlocal + 1, 8);
  xb = calloc((size_t)in.nlocal + 1, 8); xg = calloc((size_t)n + 1, 8);
  assert_true(x0 && x1 && x2 && xb && xg);
  spx_solve_options_default(&o);
  o.rtol = rtol;
  o.maxit = 2000;
  o.host_vectors = 1;
  s0 = spx_dist_solve_cg(d, b + in.first_row, x0, &o, &r0);
  o.precond = spx_dist_amg_precond;
  o.precond_data = m;
  s1 = spx_dist_solve_cg(d, b + in.first_row, x1, &o, &r1);
  s2 = spx_dist_solve_cg(d, b + in.first_row, x2, &o, &r2);
  sb = spx_dist_solve_bicgstab(d, b + in.first_row, xb, &o, &rb);
  if (s0 || s1 || s2 || sb)
    fprintf(g_diag, "rank %d: AMG blocks on CUDA: %s / %s / %s / %s\n", g_rank, r0.message, r1.message, r2.message,
            rb.message);
  ALL_TRUE(s0 == SPX_OK && s1 == SPX_OK && s2 == SPX_OK && sb == SPX_OK);
  gather(d, x1, xg, MPI_DOUBLE);
  if (g_rank == 0)
    printf("poisson7 20^3 AMG blocks %d ranks on CUDA: CG+AMG %lld iterations (CG %lld), BiCGSTAB+AMG %lld\n", g_size,
           (long long)r1.iterations, (long long)r0.iterations, (long long)rb.iterations);
  ALL_TRUE(r1.true_rel_resid <= 3 * rtol && rb.true_rel_resid <= 3 * rtol && true_rel(a, b, xg) <= 3 * rtol);
  ALL_TRUE((double)r1.iterations * 2.5 <= (double)r0.iterations);
  ALL_TRUE(r1.iterations == r2.iterations && r1.resid == r2.resid && memcmp(x1, x2, (size_t)in.nlocal * 8) == 0);
  if (g_size == 1) {
    spx_plan *p = NULL;
    spx_amg *ms = NULL;
    spx_solve_report rs;
    double *xs = calloc((size_t)n + 1, 8);
    assert_non_null(xs);
    assert_int_equal(spx_plan_create(ctx, a, &po, &p), SPX_OK);
    assert_int_equal(spx_amg_create(ctx, a, &ao, &ms), SPX_OK);
    o.precond = spx_amg_precond;
    o.precond_data = ms;
    assert_int_equal(spx_solve_cg(p, b, xs, &o, &rs), SPX_OK);
    assert_int_equal(rs.iterations, r1.iterations);
    assert_memory_equal(xs, x1, (size_t)n * 8);
    spx_amg_destroy(ms);
    spx_plan_destroy(p);
    free(xs);
  }
  spx_dist_amg_destroy(m);
  spx_dist_destroy(d);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
  free(b); free(x0); free(x1); free(x2); free(xb); free(xg);
}

/* The stencil over the ranks on every rank's CUDA context (the node's device 0): in core, and out
 * of core under a budget of a few planes (overlap and mm), against the host's one-process run, bit
 * for bit. */
static void test_gpu_stencil(void **state) {
  static const spx_stencil_method m[] = {SPX_STENCIL_INCORE, SPX_STENCIL_OVERLAP, SPX_STENCIL_MM};
  spx_context *ctx = gpu_ctx();
  spx_stencil p;
  int k;
  (void)state;
  if (!ctx) skip(); /* every rank skips, or none */
  assert_int_equal(spx_stencil_init(&p, 64, 40, 77, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1), SPX_OK);
  for (k = 0; k < (int)(sizeof m / sizeof *m); k++) {
    spx_dist_stencil_options o = stencil_options(k == 0 ? 0 : 4);
    char what[64];
    o.local.method = m[k];
    if (m[k] != SPX_STENCIL_INCORE) o.local.budget = 40 * 64 * 40 * 4;
    snprintf(what, sizeof what, "GPU 77 planes, %s", spx_stencil_method_name(m[k]));
    stencil_case(ctx, what, &p, 10, &o, 0, -1);
  }
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
      cmocka_unit_test(test_amg_poisson),
      cmocka_unit_test(test_amg_shared),
      cmocka_unit_test(test_amg_bad_inputs),
      cmocka_unit_test(test_partition_options),
      cmocka_unit_test(test_vectors),
      cmocka_unit_test(test_metis_partition),
      cmocka_unit_test(test_metis_solve),
      cmocka_unit_test(test_read_mm),
      cmocka_unit_test(test_read_mm_errors),
      cmocka_unit_test(test_read_mm_cleanup),
      cmocka_unit_test(test_stencil_planes),
      cmocka_unit_test(test_stencil_bitwise),
      cmocka_unit_test(test_stencil_out_of_core),
      cmocka_unit_test(test_stencil_bad_inputs),
      cmocka_unit_test(test_stencil_mismatched_communicator),
      cmocka_unit_test(test_mismatched_communicator),
      cmocka_unit_test(test_gpu_spmv),
      cmocka_unit_test(test_gpu_solve),
      cmocka_unit_test(test_gpu_amg),
      cmocka_unit_test(test_gpu_stencil),
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
