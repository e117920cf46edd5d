/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/status.h and spx/csr.h. */
#define _POSIX_C_SOURCE 200809L /* setenv, fork, setrlimit */
#include "spx_test.h"
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <spx/internal/common.h> /* spx__env_count */

#if defined(__SANITIZE_ADDRESS__)
#define CORE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORE_ASAN 1
#endif
#endif
#ifndef CORE_ASAN
#define CORE_ASAN 0
#endif

static void test_status_names(void **state) {
  int s;
  (void)state;
  for (s = 0; s < SPX_STATUS_COUNT; s++) {
    assert_non_null(spx_status_string((spx_status)s));
    assert_string_not_equal(spx_status_string((spx_status)s), "unknown");
  }
  assert_int_equal(SPX_OK, 0);
  assert_string_equal(spx_status_string(SPX_PARSE), "parse");
  assert_string_equal(spx_status_string((spx_status)999), "unknown");
}

static void test_last_error(void **state) {
  spx_csr *a = (spx_csr *)1;
  (void)state;
  spx_clear_error();
  assert_string_equal(spx_last_error(), "");
  assert_int_equal(spx_csr_create(-1, 3, 0, SPX_DOUBLE, &a), SPX_INVALID_ARGUMENT);
  assert_null(a);
  assert_int_equal(spx_last_status(), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "negative"));
  assert_int_equal(spx_csr_create(3, 3, 0, (spx_dtype)7, &a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "dtype"));
}

/* A 3x4 matrix given unsorted, with a duplicate and an empty row:
 *   [ 1 0 2 0 ]
 *   [ 0 0 0 0 ]
 *   [ 0 5 0 7 ]   (5 = 2 + 3 summed) */
static void test_from_coo(void **state) {
  const int32_t r[] = {2, 0, 2, 0, 2}, c[] = {3, 2, 1, 0, 1};
  const double v[] = {7, 2, 2, 1, 3};
  spx_csr *a;
  (void)state;
  assert_int_equal(spx_csr_from_coo(3, 4, 5, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(a->nnz, 4);
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  assert_int_equal(a->row_ptr[1], 2);
  assert_int_equal(a->row_ptr[2], 2);
  assert_int_equal(a->col_idx[0], 0);
  assert_int_equal(a->col_idx[1], 2);
  assert_int_equal(a->col_idx[2], 1);
  assert_true(a->val.d[2] == 5.0);
  assert_true(a->val.d[3] == 7.0);
  spx_csr_destroy(a);
  {
    const int32_t bad[] = {3};
    const int32_t zero[] = {0};
    assert_int_equal(spx_csr_from_coo(3, 4, 1, bad, zero, v, SPX_DOUBLE, &a), SPX_RANGE);
    assert_null(a);
  }
}

/* Long unsorted rows go through the heap sort path; check against a dense reference. */
static void test_from_coo_long_rows(void **state) {
  enum { N = 7, M = 300, NNZ = 2000 };
  int32_t r[NNZ], c[NNZ];
  double v[NNZ], dense[N][M], x[M], y[N], yref[N];
  spx_csr *a;
  int k, i, j;
  (void)state;
  memset(dense, 0, sizeof dense);
  for (k = 0; k < NNZ; k++) {
    r[k] = (int32_t)((spx_test_rand() + 1) * 0.5 * N);
    c[k] = (int32_t)((spx_test_rand() + 1) * 0.5 * M);
    if (r[k] >= N) r[k] = N - 1;
    if (c[k] >= M) c[k] = M - 1;
    v[k] = spx_test_rand();
    dense[r[k]][c[k]] += v[k];
  }
  assert_int_equal(spx_csr_from_coo(N, M, NNZ, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  spx_test_fill(x, M);
  spx_test_fill(y, N);
  for (i = 0; i < N; i++) {
    yref[i] = 0.5 * y[i];
    for (j = 0; j < M; j++) yref[i] += 2.0 * dense[i][j] * x[j];
  }
  assert_int_equal(spx_csr_spmv(a, 2.0, x, 0.5, y), SPX_OK);
  assert_true(spx_test_relerr(y, yref, N) < 1e-13);
  spx_csr_destroy(a);
}

/* Enough triplets for the threaded bucketing path, with many duplicates, against a dense sum. */
static void test_from_coo_parallel_duplicates(void **state) {
  enum { N = 300, M = 400, NNZ = 200000 };
  int32_t *r = malloc(NNZ * sizeof *r), *c = malloc(NNZ * sizeof *c);
  double *v = malloc(NNZ * sizeof *v), *dense = calloc((size_t)N * M, sizeof *dense);
  spx_csr *a;
  int64_t k, i, nz = 0;
  (void)state;
  assert_true(r && c && v && dense);
  for (k = 0; k < NNZ; k++) {
    r[k] = (int32_t)((spx_test_rand() + 1) * 0.5 * N) % N;
    c[k] = (int32_t)((spx_test_rand() + 1) * 0.5 * M) % M;
    v[k] = spx_test_rand();
    dense[(int64_t)r[k] * M + c[k]] += v[k];
  }
  for (k = 0; k < (int64_t)N * M; k++) nz += dense[k] != 0;
  assert_int_equal(spx_csr_from_coo(N, M, NNZ, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  assert_int_equal(a->nnz, nz);
  for (i = 0; i < N; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      assert_true(fabs(a->val.d[k] - dense[i * M + a->col_idx[k]]) < 1e-12);
  spx_csr_destroy(a);
  free(r); free(c); free(v); free(dense);
}

static void test_transpose_and_float(void **state) {
  const int32_t r[] = {0, 0, 1, 2}, c[] = {0, 3, 1, 2};
  const double v[] = {1, 2, 3, 4};
  spx_csr *a, *t, *tt, *f;
  float xf[4] = {1, 2, 3, 4}, yf[3] = {NAN, NAN, NAN};
  (void)state;
  assert_int_equal(spx_csr_from_coo(3, 4, 4, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_transpose(a, &t), SPX_OK);
  assert_int_equal(t->nrows, 4);
  assert_int_equal(t->ncols, 3);
  assert_int_equal(spx_csr_validate(t), SPX_OK);
  assert_int_equal(spx_csr_transpose(t, &tt), SPX_OK);
  assert_memory_equal(tt->row_ptr, a->row_ptr, 4 * sizeof(int64_t));
  assert_memory_equal(tt->col_idx, a->col_idx, 4 * sizeof(int32_t));
  assert_memory_equal(tt->val.d, a->val.d, 4 * sizeof(double));
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &f), SPX_OK);
  /* beta = 0 must not read y (it holds NaN). */
  assert_int_equal(spx_csr_spmv(f, 1.0, xf, 0.0, yf), SPX_OK);
  assert_true(yf[0] == 9.0f && yf[1] == 6.0f && yf[2] == 12.0f);
  spx_csr_destroy(a); spx_csr_destroy(t); spx_csr_destroy(tt); spx_csr_destroy(f);
}

static void test_validate_catches(void **state) {
  const int32_t r[] = {0, 0}, c[] = {0, 1};
  spx_csr *a;
  (void)state;
  assert_int_equal(spx_csr_from_coo(2, 2, 2, r, c, NULL, SPX_DOUBLE, &a), SPX_OK);
  assert_true(a->val.d[0] == 1.0); /* pattern: ones */
  a->col_idx[1] = 0;
  assert_int_equal(spx_csr_validate(a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "strictly increasing"));
  a->col_idx[1] = 2;
  assert_int_equal(spx_csr_validate(a), SPX_INVALID_ARGUMENT);
  a->col_idx[1] = 1;
  a->row_ptr[1] = 3;
  assert_int_equal(spx_csr_validate(a), SPX_INVALID_ARGUMENT);
  spx_csr_destroy(a);
  spx_csr_destroy(NULL);
  assert_int_equal(spx_csr_spmv(NULL, 1, NULL, 0, NULL), SPX_INVALID_ARGUMENT);
}

/* Past the parallel thresholds (65536 rows, 262144 nonzeros): two bad rows, the first one named. */
static void test_validate_parallel(void **state) {
  spx_csr *a;
  int32_t keep;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(64, 64, 32, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  keep = a->col_idx[a->row_ptr[70001] + 1];
  a->col_idx[a->row_ptr[70001] + 1] = (int32_t)a->ncols;      /* out of range, row 70001 */
  a->col_idx[a->row_ptr[120000] + 2] = a->col_idx[a->row_ptr[120000] + 1]; /* repeated, row 120000 */
  assert_int_equal(spx_csr_validate(a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row 70001 has column"));
  a->col_idx[a->row_ptr[70001] + 1] = keep;
  assert_int_equal(spx_csr_validate(a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row 120000 columns not strictly increasing"));
  a->row_ptr[90000] = a->row_ptr[90001] + 1;
  assert_int_equal(spx_csr_validate(a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row_ptr[90001]"));
  spx_csr_destroy(a);
}

/* A small LCG: the same cases on every run. */
static unsigned vr_next(unsigned *s) { return (*s = *s * 1103515245u + 12345u) >> 8; }

/* The chunked check (descents counted over a chunk against those at its row starts) agrees with the
 * row-by-row rule on random CSRs with one corruption each: a negative or too large column, a repeat,
 * a random column, or none; rows empty or short, and chunks of several rows and several chunks. */
static void test_validate_random(void **state) {
  unsigned seed = 12345;
  int t, disagree = 0;
  (void)state;
  for (t = 0; t < 3000; t++) {
    const int64_t n = 1 + (int64_t)(vr_next(&seed) % 9000), nc = 1 + (int64_t)(vr_next(&seed) % 40);
    int64_t *rp = (int64_t *)malloc(sizeof *rp * (size_t)(n + 1)), nnz = 0, i;
    int32_t *ci = (int32_t *)malloc(sizeof *ci * (size_t)(6 * n + 1));
    double *v = (double *)calloc((size_t)(6 * n + 1), sizeof *v);
    spx_csr a;
    assert_true(rp && ci && v);
    rp[0] = 0;
    for (i = 0; i < n; i++) {
      int len = (int)(vr_next(&seed) % 6), k, c = (int)(vr_next(&seed) % 3) - 1;
      for (k = 0; k < len && (c += 1 + (int)(vr_next(&seed) % 3)) < nc; k++) ci[nnz++] = c;
      rp[i + 1] = nnz;
    }
    if (nnz) {
      const int64_t k = (int64_t)(vr_next(&seed) % (unsigned)nnz);
      switch (vr_next(&seed) % 5) {
      case 0: ci[k] = -1 - (int32_t)(vr_next(&seed) % 5); break;
      case 1: ci[k] = (int32_t)nc + (int32_t)(vr_next(&seed) % 3); break;
      case 2: if (k) ci[k] = ci[k - 1]; break;
      case 3: ci[k] = (int32_t)(vr_next(&seed) % (unsigned)nc); break;
      default: break;
      }
    }
    memset(&a, 0, sizeof a);
    a.nrows = n; a.ncols = nc; a.nnz = nnz; a.row_ptr = rp; a.col_idx = ci; a.val.d = v; a.dtype = SPX_DOUBLE;
    {
      int rowwise = 1;
      for (i = 0; i < n && rowwise; i++) {
        int64_t k;
        for (k = rp[i]; k < rp[i + 1]; k++)
          if (ci[k] < 0 || ci[k] >= nc || (k > rp[i] && ci[k] <= ci[k - 1])) rowwise = 0;
      }
      disagree += rowwise != (spx_csr_validate(&a) == SPX_OK);
      spx_clear_error();
    }
    free(rp); free(ci); free(v);
  }
  assert_int_equal(disagree, 0);
}

static void test_empty(void **state) {
  spx_csr *a;
  (void)state;
  assert_int_equal(spx_csr_from_coo(0, 0, 0, NULL, NULL, NULL, SPX_FLOAT, &a), SPX_OK);
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  assert_int_equal(spx_csr_spmv(a, 1, NULL, 0, NULL), SPX_OK);
  spx_csr_destroy(a);
}

/* The environment's count knobs: set, unset or empty, and malformed are told apart. */
static void test_env_count(void **state) {
  long long v = 77;
  (void)state;
  unsetenv("SPX_TEST_COUNT");
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), 0);
  setenv("SPX_TEST_COUNT", "", 1);
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), 0);
  assert_int_equal(v, 77);
  setenv("SPX_TEST_COUNT", "12", 1);
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), 1);
  assert_int_equal(v, 12);
  setenv("SPX_TEST_COUNT", "0", 1);
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), 1);
  assert_int_equal(v, 0);
  v = 77;
  setenv("SPX_TEST_COUNT", "-1", 1);
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), -1);
  setenv("SPX_TEST_COUNT", "8x", 1);
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), -1);
  setenv("SPX_TEST_COUNT", "99999999999999999999999", 1);
  assert_int_equal(spx__env_count("SPX_TEST_COUNT", &v), -1);
  assert_int_equal(v, 77);
  unsetenv("SPX_TEST_COUNT");
}

/* A CSR's readers check it first: a corrupt one is a status that names the function and the
 * violation, never an out-of-bounds read (the clang_san build watches). Rows out of order are a
 * transpose's error only: a product reads them as they are. A copy checks what it relies on (the
 * sizes, arrays, dtype, row_ptr's ends) and copies rows as they are. */
static void test_invalid_csr(void **state) {
  const int32_t r[] = {0, 0, 2, 2}, c[] = {0, 2, 1, 3};
  const double v[] = {1, 2, 3, 4}, x[4] = {1, 10, 100, 1000};
  double y[3];
  spx_csr *a, *b = (spx_csr *)&b;
  int k;
  (void)state;
  assert_int_equal(spx_csr_from_coo(3, 4, 4, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  for (k = 0; k < 2; k++) { /* a column past ncols, then a negative one */
    char want[96];
    a->col_idx[1] = k ? -7 : 1000000;
    snprintf(want, sizeof want, "CSR: row 0 has column %d outside [0, 4)", a->col_idx[1]);
    assert_int_equal(spx_csr_transpose(a, &b), SPX_INVALID_ARGUMENT);
    assert_null(b);
    assert_non_null(strstr(spx_last_error(), "spx_csr_transpose: "));
    assert_non_null(strstr(spx_last_error(), want));
    assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &b), SPX_OK);
    assert_int_equal(b->col_idx[1], a->col_idx[1]);
    spx_csr_destroy(b);
    assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "spx_csr_spmv: CSR: row 0 has column"));
  }
  a->col_idx[1] = 2;
  a->row_ptr[1] = 9; /* past nnz */
  assert_int_equal(spx_csr_transpose(a, &b), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_csr_transpose: CSR: row_ptr[1] = 9 is out of order or past nnz"));
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_csr_spmv: CSR: row_ptr[1] = 9"));
  a->row_ptr[1] = 3; /* then row 1 runs backwards, 3 to 2 */
  assert_int_equal(spx_csr_transpose(a, &b), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row_ptr[2] = 2 is out of order"));
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_INVALID_ARGUMENT);
  a->row_ptr[1] = 2;
  a->col_idx[0] = 2; a->col_idx[1] = 0; /* row 0 unsorted, inside the matrix */
  assert_int_equal(spx_csr_transpose(a, &b), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_csr_transpose: CSR: row 0 columns not strictly increasing"));
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_OK);
  assert_true(y[0] == 102 && y[1] == 0 && y[2] == 4030);
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &b), SPX_OK);
  assert_int_equal(b->col_idx[0], 2);
  spx_csr_destroy(b);
  a->col_idx[0] = 0; a->col_idx[1] = 2;
  a->dtype = (spx_dtype)9;
  assert_int_equal(spx_csr_transpose(a, &b), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "unknown dtype 9"));
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &b), SPX_INVALID_ARGUMENT);
  assert_null(b);
  assert_non_null(strstr(spx_last_error(), "spx_csr_copy: CSR: unknown dtype 9"));
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_INVALID_ARGUMENT);
  a->dtype = SPX_DOUBLE;
  a->row_ptr[3] = 5; /* past nnz at the end */
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &b), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_csr_copy: CSR: row_ptr[0] = 0 and row_ptr[n] = 5"));
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_INVALID_ARGUMENT);
  a->row_ptr[3] = 4;
  assert_int_equal(spx_csr_transpose(a, &b), SPX_OK);
  spx_csr_destroy(b);
  spx_csr_destroy(a);
  { /* past the parallel thresholds: the first bad row is named */
    double *xv, *yv;
    int64_t i;
    assert_int_equal(spx_gen_poisson3d(64, 64, 32, 7, SPX_DOUBLE, &a), SPX_OK);
    xv = (double *)malloc((size_t)a->ncols * sizeof *xv);
    yv = (double *)malloc((size_t)a->nrows * sizeof *yv);
    for (i = 0; i < a->ncols; i++) xv[i] = 1;
    a->col_idx[a->row_ptr[120000] + 1] = (int32_t)a->ncols + 5;
    a->col_idx[a->row_ptr[70001] + 2] = -1;
    assert_int_equal(spx_csr_spmv(a, 1.0, xv, 0.0, yv), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "spx_csr_spmv: CSR: row 70001 has column -1"));
    assert_int_equal(spx_csr_transpose(a, &b), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "row 70001 has column -1"));
    free(xv);
    free(yv);
    spx_csr_destroy(a);
  }
}

static int from_coo_huge_rows(void) {
  const int32_t z = 0;
  const double one = 1;
  spx_csr *a = (spx_csr *)&a;
  spx_status s = spx_csr_from_coo(INT32_MAX, 1, 1, &z, &z, &one, SPX_DOUBLE, &a);
  if (s != SPX_OUT_OF_MEMORY || a || !strstr(spx_last_error(), "spx_csr_from_coo: 2147483647 rows need 32.0 GiB")) {
    fprintf(stderr, "got %s \"%s\"\n", spx_status_string(s), spx_last_error());
    return 1;
  }
  return 0;
}

/* 2^31-1 rows need 32 GiB while the CSR is built: refused before anything is allocated when that
 * is more than the process can get. In a child with 1 GiB of address space to spare (not under
 * ASan, whose shadow memory takes terabytes of it), and here where the machine is short of it. */
static void test_from_coo_huge_rows(void **state) {
  FILE *f;
  char line[128];
  double kb, av = 0;
  (void)state;
  if (!CORE_ASAN) {
    pid_t pid;
    int st;
    fflush(stdout);
    assert_true((pid = fork()) >= 0);
    if (pid == 0) {
      unsigned long long pages = 0;
      struct rlimit rl;
      alarm(30);
      if (!(f = fopen("/proc/self/statm", "r")) || fscanf(f, "%llu", &pages) != 1) _exit(90);
      fclose(f);
      rl.rlim_cur = rl.rlim_max = (rlim_t)(pages * (unsigned long long)sysconf(_SC_PAGESIZE) + (1ull << 30));
      _exit(setrlimit(RLIMIT_AS, &rl) ? 91 : from_coo_huge_rows());
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  f = fopen("/proc/meminfo", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf", &kb) == 1 || sscanf(line, "SwapFree: %lf", &kb) == 1) av += kb * 1024;
  if (f) fclose(f);
  if (av > 0 && av < 34e9) assert_int_equal(from_coo_huge_rows(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),     cmocka_unit_test(test_last_error),
      cmocka_unit_test(test_from_coo),         cmocka_unit_test(test_from_coo_long_rows),
      cmocka_unit_test(test_from_coo_parallel_duplicates),
      cmocka_unit_test(test_transpose_and_float), cmocka_unit_test(test_validate_catches),
      cmocka_unit_test(test_validate_parallel), cmocka_unit_test(test_validate_random), cmocka_unit_test(test_empty), cmocka_unit_test(test_env_count),
      cmocka_unit_test(test_invalid_csr),      cmocka_unit_test(test_from_coo_huge_rows),
  };
  return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
