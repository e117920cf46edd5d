/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/mm.h: every shared matrix loads, SpMV against an independent dense reading, exact
 * round trips, correctly rounded values (against strtod/strtof), the bad-input corpus with its
 * messages, multi-chunk files (errors keep exact line numbers), the writer's checks. */
#define _POSIX_C_SOURCE 200809L /* getpid, mkdtemp, mkfifo, fork, setrlimit */
#include "spx_test.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <spx/internal/common.h> /* spx__now, SPX__MIN */

static char tmpdir[256];

static void tmp_path(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", tmpdir, name);
}

static int setup(void **state) {
  const char *t = getenv("TMPDIR");
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "%s/spx_test_mm_XXXXXX", t && *t ? t : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  char cmd[512];
  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static spx_status read_str(const char *text, spx_dtype dtype, spx_csr **a, spx_mm_info *info) {
  return spx_mm_read_buffer(text, strlen(text), "test.mtx", dtype, a, info);
}

static double val(const spx_csr *a, int64_t k) {
  return a->dtype == SPX_DOUBLE ? a->val.d[k] : a->val.f[k];
}

/* Entry (i, j), NaN when not stored. */
static double at(const spx_csr *a, int64_t i, int64_t j) {
  int64_t k;
  for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
    if (a->col_idx[k] == j) return val(a, k);
  return NAN;
}

/* Same pattern, same dtype, bitwise-equal values. */
static void assert_csr_identical(const spx_csr *a, const spx_csr *b) {
  assert_int_equal(a->nrows, b->nrows);
  assert_int_equal(a->ncols, b->ncols);
  assert_int_equal(a->nnz, b->nnz);
  assert_int_equal(a->dtype, b->dtype);
  assert_memory_equal(a->row_ptr, b->row_ptr, (size_t)(a->nrows + 1) * sizeof(int64_t));
  if (a->nnz) {
    assert_memory_equal(a->col_idx, b->col_idx, (size_t)a->nnz * sizeof(int32_t));
    assert_memory_equal(a->val.p, b->val.p, (size_t)a->nnz * SPX_DTYPE_SIZE(a->dtype));
  }
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(spx_mm_format_name(SPX_MM_COORDINATE), "coordinate");
  assert_string_equal(spx_mm_format_name(SPX_MM_ARRAY), "array");
  assert_string_equal(spx_mm_field_name(SPX_MM_REAL), "real");
  assert_string_equal(spx_mm_field_name(SPX_MM_INTEGER), "integer");
  assert_string_equal(spx_mm_field_name(SPX_MM_PATTERN), "pattern");
  assert_string_equal(spx_mm_symmetry_name(SPX_MM_GENERAL), "general");
  assert_string_equal(spx_mm_symmetry_name(SPX_MM_SYMMETRIC), "symmetric");
  assert_string_equal(spx_mm_symmetry_name(SPX_MM_SKEW_SYMMETRIC), "skew-symmetric");
  assert_string_equal(spx_mm_field_name((spx_mm_field)3), "unknown");
  assert_string_equal(spx_mm_symmetry_name((spx_mm_symmetry)-1), "unknown");
}

/* Every shared matrix: sizes and counts as the manifest says, valid CSR, symmetric ones equal to
 * their transpose. The one complex matrix is refused with SPX_UNSUPPORTED. */
static void test_manifest(void **state) {
  spx_test_entry *e;
  int n = spx_test_manifest(&e), i, loaded = 0;
  (void)state;
  if (n == 0) { print_message("no MANIFEST.tsv under %s\n", spx_test_matrix_dir()); skip(); }
  for (i = 0; i < n; i++) {
    char path[1024];
    spx_csr *a = NULL, *t = NULL;
    spx_mm_info info;
    spx_status s;
    spx_test_matrix_path(e[i].name, path, sizeof path);
    s = spx_mm_read(path, SPX_DOUBLE, &a, &info);
    if (!strcmp(e[i].field, "complex")) {
      assert_int_equal(s, SPX_UNSUPPORTED);
      assert_null(a);
      assert_non_null(strstr(spx_last_error(), ":1: complex"));
      continue;
    }
    if (s) fail_msg("%s: %s", e[i].name, spx_last_error());
    assert_int_equal(spx_csr_validate(a), SPX_OK);
    assert_int_equal(a->nrows, e[i].rows);
    assert_int_equal(a->ncols, e[i].cols);
    assert_int_equal(info.nrows, e[i].rows);
    assert_int_equal(info.entries, e[i].nnz_stored);
    assert_string_equal(spx_mm_field_name(info.field), e[i].field);
    assert_string_equal(spx_mm_symmetry_name(info.symmetry), e[i].symmetry);
    assert_int_equal(info.format, SPX_MM_COORDINATE);
    assert_true(info.lines > info.entries);
    if (!strcmp(e[i].symmetry, "general")) {
      assert_int_equal(a->nnz + info.duplicates, e[i].nnz_stored);
    } else {
      /* The mirrored half is there: A == A^T exactly (skew: A == -A^T). */
      int64_t k, sign = !strcmp(e[i].symmetry, "skew-symmetric") ? -1 : 1;
      assert_true(a->nnz >= e[i].nnz_stored - info.duplicates && a->nnz <= 2 * e[i].nnz_stored);
      assert_int_equal(spx_csr_transpose(a, &t), SPX_OK);
      assert_memory_equal(a->row_ptr, t->row_ptr, (size_t)(a->nrows + 1) * sizeof(int64_t));
      assert_memory_equal(a->col_idx, t->col_idx, (size_t)a->nnz * sizeof(int32_t));
      for (k = 0; k < a->nnz; k++) assert_true(a->val.d[k] == (double)sign * t->val.d[k]);
      spx_csr_destroy(t);
    }
    if (!strcmp(e[i].field, "pattern")) { /* ones, or sums of ones where entries repeat */
      int64_t k;
      for (k = 0; k < a->nnz; k++) assert_true(info.duplicates ? a->val.d[k] >= 1 : a->val.d[k] == 1);
    }
    spx_csr_destroy(a);
    loaded++;
  }
  assert_true(loaded > 0);
  free(e);
}

/* The dense matrix of a (small) gzip'd Matrix Market file, read the simple way: gzgets + sscanf. */
static double *dense_reference(const char *path, int64_t *nr, int64_t *nc) {
  char line[1024], field[32] = "", sym[32] = "";
  gzFile g = gzopen(path, "rb");
  long long m, n, nnz, k;
  double *d;
  assert_non_null(g);
  assert_non_null(gzgets(g, line, sizeof line));
  assert_int_equal(sscanf(line, "%%%%MatrixMarket matrix coordinate %31s %31s", field, sym), 2);
  do assert_non_null(gzgets(g, line, sizeof line)); while (line[0] == '%');
  assert_int_equal(sscanf(line, "%lld %lld %lld", &m, &n, &nnz), 3);
  d = (double *)calloc((size_t)(m * n), sizeof *d);
  assert_non_null(d);
  for (k = 0; k < nnz; k++) {
    long long i, j;
    double v = 1;
    assert_non_null(gzgets(g, line, sizeof line));
    if (!strcmp(field, "pattern")) assert_int_equal(sscanf(line, "%lld %lld", &i, &j), 2);
    else assert_int_equal(sscanf(line, "%lld %lld %lf", &i, &j, &v), 3);
    i--; j--;
    d[i * n + j] += v;
    if (i != j && strcmp(sym, "general")) d[j * n + i] += !strcmp(sym, "skew-symmetric") ? -v : v;
  }
  gzclose(g);
  *nr = m; *nc = n;
  return d;
}

static void test_spmv_reference(void **state) {
  /* real, pattern and integer fields; symmetric, general and rectangular shapes */
  static const char *const names[] = {"494_bus", "arc130", "Erdos971", "GD98_a", "ash219", "jazz", "problem"};
  int t, found = 0;
  (void)state;
  for (t = 0; t < (int)(sizeof names / sizeof *names); t++) {
    char path[1024];
    spx_csr *a;
    int64_t m, n, i, j;
    double *d, *x, *y, *yr;
    spx_test_matrix_path(names[t], path, sizeof path);
    if (access(path, R_OK) != 0) continue;
    found++;
    assert_int_equal(spx_mm_read(path, SPX_DOUBLE, &a, NULL), SPX_OK);
    d = dense_reference(path, &m, &n);
    assert_int_equal(a->nrows, m);
    assert_int_equal(a->ncols, n);
    x = (double *)malloc((size_t)n * sizeof *x);
    y = (double *)malloc((size_t)m * sizeof *y);
    yr = (double *)calloc((size_t)m, sizeof *yr);
    spx_test_fill(x, n);
    for (i = 0; i < m; i++) { y[i] = NAN; for (j = 0; j < n; j++) yr[i] += d[i * n + j] * x[j]; }
    assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_OK);
    if (spx_test_relerr(y, yr, m) > 1e-13) fail_msg("%s: SpMV differs from the dense reference", names[t]);
    free(d); free(x); free(y); free(yr);
    spx_csr_destroy(a);
  }
  if (!found) skip();
}

/* yr = A*x accumulated straight from the file's triplets (gzgets + sscanf): the dense product
 * entry by entry, without storing the dense matrix, so it scales to every shared matrix. */
static void triplet_reference(const char *path, int64_t m, int64_t n, const double *x, double *yr) {
  char line[1024], field[32] = "", sym[32] = "";
  gzFile g = gzopen(path, "rb");
  long long mm, nn, nnz, k, i;
  assert_non_null(g);
  assert_non_null(gzgets(g, line, sizeof line));
  assert_int_equal(sscanf(line, "%%%%MatrixMarket matrix coordinate %31s %31s", field, sym), 2);
  do assert_non_null(gzgets(g, line, sizeof line)); while (line[0] == '%');
  assert_int_equal(sscanf(line, "%lld %lld %lld", &mm, &nn, &nnz), 3);
  assert_int_equal(mm, m);
  assert_int_equal(nn, n);
  for (i = 0; i < m; i++) yr[i] = 0;
  for (k = 0; k < nnz; k++) {
    long long r, c;
    double v = 1;
    assert_non_null(gzgets(g, line, sizeof line));
    if (!strcmp(field, "pattern")) assert_true(sscanf(line, "%lld %lld", &r, &c) == 2);
    else assert_int_equal(sscanf(line, "%lld %lld %lf", &r, &c, &v), 3);
    r--; c--;
    yr[r] += v * x[c];
    if (r != c && strcmp(sym, "general")) yr[c] += (!strcmp(sym, "skew-symmetric") ? -v : v) * x[r];
  }
  gzclose(g);
}

/* Host SpMV on every shared matrix, double and float, against the triplet reference. */
static void test_spmv_every_shared_matrix(void **state) {
  spx_test_entry *e;
  int ne = spx_test_manifest(&e), t, done = 0;
  (void)state;
  if (ne == 0) skip();
  for (t = 0; t < ne; t++) {
    char path[1024];
    spx_csr *a, *af;
    int64_t i;
    double *x, *y, *yr, *yf64;
    float *xf, *yf;
    if (!strcmp(e[t].field, "complex")) continue; /* unsupported by design (a test checks that) */
    spx_test_matrix_path(e[t].name, path, sizeof path);
    if (spx_mm_read(path, SPX_DOUBLE, &a, NULL)) fail_msg("%s: %s", e[t].name, spx_last_error());
    assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
    x = malloc((size_t)(a->ncols + 1) * sizeof *x);
    xf = malloc((size_t)(a->ncols + 1) * sizeof *xf);
    y = malloc((size_t)(a->nrows + 1) * sizeof *y);
    yr = malloc((size_t)(a->nrows + 1) * sizeof *yr);
    yf = malloc((size_t)(a->nrows + 1) * sizeof *yf);
    yf64 = malloc((size_t)(a->nrows + 1) * sizeof *yf64);
    spx_test_fill(x, a->ncols);
    for (i = 0; i < a->ncols; i++) xf[i] = (float)x[i], x[i] = xf[i]; /* same x for both dtypes */
    for (i = 0; i < a->nrows; i++) y[i] = NAN, yf[i] = NAN;
    triplet_reference(path, a->nrows, a->ncols, x, yr);
    assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, y), SPX_OK);
    assert_int_equal(spx_csr_spmv(af, 1.0, xf, 0.0, yf), SPX_OK);
    for (i = 0; i < a->nrows; i++) yf64[i] = yf[i];
    if (spx_test_relerr(y, yr, a->nrows) > 1e-12)
      fail_msg("%s: double SpMV differs from the triplet reference", e[t].name);
    if (spx_test_relerr(yf64, yr, a->nrows) > 1e-5)
      fail_msg("%s: float SpMV differs from the triplet reference", e[t].name);
    free(x); free(xf); free(y); free(yr); free(yf); free(yf64);
    spx_csr_destroy(a); spx_csr_destroy(af);
    done++;
  }
  free(e);
  assert_true(done > 100);
}

/* read -> write -> read is bitwise exact, for every kind of input; gzip too. */
static void roundtrip(const char *text, spx_mm_symmetry sym, const char *file, spx_dtype dtype) {
  char path[512];
  spx_csr *a, *b;
  spx_mm_info info;
  tmp_path(path, sizeof path, file);
  if (read_str(text, dtype, &a, NULL)) fail_msg("%s", spx_last_error());
  if (spx_mm_write(path, a, sym)) fail_msg("%s", spx_last_error());
  if (spx_mm_read(path, dtype, &b, &info)) fail_msg("%s", spx_last_error());
  assert_int_equal(info.symmetry, sym);
  assert_int_equal(info.field, SPX_MM_REAL);
  assert_csr_identical(a, b);
  spx_csr_destroy(a);
  spx_csr_destroy(b);
}

static void test_roundtrip(void **state) {
  static const char general[] =
      "%%MatrixMarket matrix coordinate real general\n4 5 9\n"
      "1 1 0.1\n1 5 -0\n2 2 1e-300\n2 3 4.9406564584124654e-324\n3 1 1.7976931348623157e308\n"
      "3 4 0.30000000000000004\n4 5 -123456789.123456789\n4 1 3\n1 2 2.2250738585072014e-308\n";
  static const char symmetric[] =
      "%%MatrixMarket matrix coordinate real symmetric\n4 4 5\n1 1 4\n2 1 -1.5\n3 2 0.7\n4 4 2\n4 1 1e-5\n";
  static const char skew[] =
      "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 3\n2 1 1.25\n3 1 -2\n3 2 1e10\n";
  static const char pattern[] = "%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 1\n3 4\n2 2\n1 4\n";
  static const char integer[] =
      "%%MatrixMarket matrix coordinate integer symmetric\n3 3 4\n1 1 -7\n2 1 9007199254740993\n3 3 0\n3 2 42\n";
  static const char array[] = "%%MatrixMarket matrix array real general\n2 3\n1\n0\n-2.5\n3\n0\n6\n";
  (void)state;
  roundtrip(general, SPX_MM_GENERAL, "general.mtx", SPX_DOUBLE);
  roundtrip(general, SPX_MM_GENERAL, "general.mtx.gz", SPX_DOUBLE);
  roundtrip(general, SPX_MM_GENERAL, "general_f.mtx", SPX_FLOAT);
  roundtrip(symmetric, SPX_MM_SYMMETRIC, "symmetric.mtx", SPX_DOUBLE);
  roundtrip(symmetric, SPX_MM_GENERAL, "symmetric_as_general.mtx", SPX_DOUBLE);
  roundtrip(skew, SPX_MM_SKEW_SYMMETRIC, "skew.mtx", SPX_DOUBLE);
  roundtrip(skew, SPX_MM_SKEW_SYMMETRIC, "skew_f.mtx.gz", SPX_FLOAT);
  roundtrip(pattern, SPX_MM_GENERAL, "pattern.mtx", SPX_DOUBLE);
  roundtrip(integer, SPX_MM_SYMMETRIC, "integer.mtx", SPX_DOUBLE);
  roundtrip(array, SPX_MM_GENERAL, "array.mtx", SPX_DOUBLE);
  {
    /* The symmetric file stores the lower triangle only, with the right count. */
    char path[512], line[256];
    FILE *f;
    spx_csr *a;
    tmp_path(path, sizeof path, "symmetric.mtx");
    assert_non_null(f = fopen(path, "r"));
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "%%MatrixMarket matrix coordinate real symmetric\n");
    do assert_non_null(fgets(line, sizeof line, f)); while (line[0] == '%');
    assert_string_equal(line, "4 4 5\n");
    fclose(f);
    /* The array keeps its zeros as stored entries. */
    assert_int_equal(read_str(array, SPX_DOUBLE, &a, NULL), SPX_OK);
    assert_int_equal(a->nnz, 6);
    assert_true(at(a, 0, 0) == 1 && at(a, 1, 0) == 0 && at(a, 0, 1) == -2.5 && at(a, 1, 2) == 6);
    spx_csr_destroy(a);
  }
}

/* A random CSR with random full-precision values survives write + read exactly, both dtypes. */
static void test_roundtrip_random(void **state) {
  enum { N = 300, M = 200, NNZ = 6000 };
  int32_t *r = (int32_t *)malloc(NNZ * sizeof *r), *c = (int32_t *)malloc(NNZ * sizeof *c);
  double *v = (double *)malloc(NNZ * sizeof *v);
  int k, t;
  (void)state;
  for (k = 0; k < NNZ; k++) {
    r[k] = (int32_t)((spx_test_rand() + 1) * 0.5 * N);
    c[k] = (int32_t)((spx_test_rand() + 1) * 0.5 * M);
    v[k] = spx_test_rand() * (k % 3 == 0 ? 1e-200 : k % 3 == 1 ? 1e200 : 1);
  }
  for (t = 0; t < 2; t++) {
    spx_dtype dt = t ? SPX_FLOAT : SPX_DOUBLE;
    spx_csr *a, *b;
    char path[512];
    tmp_path(path, sizeof path, t ? "random_f.mtx" : "random.mtx.gz");
    assert_int_equal(spx_csr_from_coo(N, M, NNZ, r, c, v, dt, &a), SPX_OK);
    if (spx_mm_write(path, a, SPX_MM_GENERAL)) fail_msg("%s", spx_last_error());
    if (spx_mm_read(path, dt, &b, NULL)) fail_msg("%s", spx_last_error());
    assert_csr_identical(a, b);
    spx_csr_destroy(a);
    spx_csr_destroy(b);
  }
  free(r); free(c); free(v);
}

/* Values are correctly rounded: every decimal gives the same bits as strtod (double) and strtof
 * (float), including the cases that need the slow paths. */
static void check_values(const char *const *tok, int n) {
  size_t cap = 64 + (size_t)n * 128, len;
  char *text = (char *)malloc(cap);
  int i, t;
  len = (size_t)snprintf(text, cap, "%%%%MatrixMarket matrix coordinate real general\n%d 1 %d\n", n, n);
  for (i = 0; i < n; i++) len += (size_t)snprintf(text + len, cap - len, "%d 1 %s\n", i + 1, tok[i]);
  for (t = 0; t < 2; t++) {
    spx_csr *a;
    spx_dtype dt = t ? SPX_FLOAT : SPX_DOUBLE;
    if (spx_mm_read_buffer(text, len, "values.mtx", dt, &a, NULL)) fail_msg("%s", spx_last_error());
    for (i = 0; i < n; i++) {
      if (dt == SPX_DOUBLE) {
        double want = strtod(tok[i], NULL), got = a->val.d[a->row_ptr[i]];
        if (memcmp(&want, &got, sizeof want)) fail_msg("'%s' read as %.17g, strtod says %.17g", tok[i], got, want);
      } else {
        float want = strtof(tok[i], NULL), got = a->val.f[a->row_ptr[i]];
        if (memcmp(&want, &got, sizeof want)) fail_msg("'%s' read as float %.9g, strtof says %.9g", tok[i], got, want);
      }
    }
    spx_csr_destroy(a);
  }
  free(text);
}

static void test_values(void **state) {
  static const char *const tricky[] = {
      "0", "-0", "+0.0", "1", "-1", ".5", "5.", "1e0", "1E+2", "1e-2", "0.1", "0.30000000000000004",
      "9007199254740992", "9007199254740993",         /* 2^53 + 1: a tie, to even */
      "9007199254740993.0000000001",                  /* just above the tie */
      "9007199254740995",                             /* tie, rounds up */
      "123456789012345678", "1234567890123456789012345", "0.000000000000000000000000000001234",
      "1.7976931348623157e308", "1.7976931348623159e308", "1e309", "-1e400", "4.9406564584124654e-324",
      "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-400", "2.2250738585072011e-308",
      "1.00000005960464477539062500000000001", /* just above a float tie: double rounding fails */
      "1.000000059604644775390625",            /* exactly a float tie, to even */
      "3.4028235677973366e38", "3.4028236e38", "1.4012984643e-45", "7.006492321624085e-46",
      "0.1000000000000000055511151231257827021181583404541015625", "00000000000000000000000000001.5",
      "1.5000000000000000000000000000000000000000000000000000001", "123456789e-30", "98765e22",
      "4.35679e-10", "-0.62781527936839592", "17976931348623157e292", "1e23", "8.98846567431158e307"};
  enum { R = 3000 };
  char buf[R][40];
  const char *tok[R];
  int i;
  (void)state;
  check_values(tricky, (int)(sizeof tricky / sizeof *tricky));
  /* Random decimals: 1 to 25 digits, a decimal point anywhere, exponents over the whole range. */
  for (i = 0; i < R; i++) {
    int nd = 1 + (int)((spx_test_rand() + 1) * 12.5), dot = (int)((spx_test_rand() + 1) * 0.5 * nd), d, o = 0;
    int ex = (int)(spx_test_rand() * (i % 4 == 0 ? 330 : 30));
    if (spx_test_rand() < 0) buf[i][o++] = '-';
    for (d = 0; d < nd; d++) {
      if (d == dot) buf[i][o++] = '.';
      buf[i][o++] = (char)('0' + (int)((spx_test_rand() + 1) * 5) % 10);
    }
    snprintf(buf[i] + o, sizeof buf[i] - (size_t)o, "e%d", ex);
    tok[i] = buf[i];
  }
  check_values(tok, R);
  /* Doubles printed with 17 digits (the writer's longest form) and floats with 9. */
  for (i = 0; i < R; i++) {
    double x = spx_test_rand() * (i % 2 ? 1e-5 : 1e5);
    snprintf(buf[i], sizeof buf[i], i % 3 ? "%.17g" : "%.9g", i % 3 ? x : (double)(float)x);
    tok[i] = buf[i];
  }
  check_values(tok, R);
}

static void test_nan_inf(void **state) {
  static const char text[] =
      "%%MatrixMarket matrix coordinate real general\n3 3 8\n1 1 nan\n1 2 -Inf\n1 3 Infinity\n"
      "2 1 NaN\n2 2 +inf\n2 3 0\n3 1 -0.0\n3 3 1e999\n";
  spx_csr *a;
  spx_mm_info info;
  (void)state;
  assert_int_equal(read_str(text, SPX_DOUBLE, &a, &info), SPX_OK);
  assert_int_equal(info.nan_count, 2);
  assert_int_equal(info.inf_count, 4);
  assert_int_equal(info.explicit_zeros, 2);
  assert_int_equal(a->nnz, 8);
  assert_true(isnan(at(a, 0, 0)) && isnan(at(a, 1, 0)));
  assert_true(at(a, 0, 1) < 0 && isinf(at(a, 0, 1)));
  assert_true(at(a, 0, 2) > 0 && isinf(at(a, 0, 2)) && isinf(at(a, 1, 1)) && isinf(at(a, 2, 2)));
  assert_true(at(a, 1, 2) == 0 && at(a, 2, 0) == 0 && signbit(at(a, 2, 0)));
  spx_csr_destroy(a);
  /* In float, 1e39 is Inf too and 1e-50 is a zero. */
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 1e39\n1 2 1e-50\n",
                            SPX_FLOAT, &a, &info), SPX_OK);
  assert_int_equal(info.inf_count, 1);
  assert_int_equal(info.explicit_zeros, 1);
  spx_csr_destroy(a);
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 infinit\n", SPX_DOUBLE,
                            &a, NULL), SPX_PARSE);
  assert_non_null(strstr(spx_last_error(), "test.mtx:3: bad number 'infinit'"));
}

/* What the spec allows: any case in the header, comments and blank lines, tabs, CRLF, no final
 * newline; duplicates are summed and counted; symmetric mirroring; pattern values ignored. */
static void test_syntax(void **state) {
  spx_csr *a;
  spx_mm_info info;
  (void)state;
  assert_int_equal(read_str("%%matrixmarket MATRIX Coordinate REAL General\r\n% comment\r\n\r\n  \t\r\n"
                            "%another\r\n 3\t3  4 \r\n\r\n1 1 1.5\r\n% mid-data comment\r\n\t2 3\t-2\r\n\r\n"
                            "1 1 0.25\r\n3 2 7",
                            SPX_DOUBLE, &a, &info), SPX_OK);
  assert_int_equal(info.entries, 4);
  assert_int_equal(info.duplicates, 1);
  assert_int_equal(info.lines, 13);
  assert_int_equal(a->nnz, 3);
  assert_true(at(a, 0, 0) == 1.75 && at(a, 1, 2) == -2 && at(a, 2, 1) == 7);
  spx_csr_destroy(a);
  /* Symmetric: entries above the diagonal are mirrored as well, so (3,1) and (1,3) sum twice. */
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2\n3 1 5\n1 3 1\n",
                            SPX_DOUBLE, &a, &info), SPX_OK);
  assert_int_equal(a->nnz, 3);
  assert_int_equal(info.duplicates, 2);
  assert_true(at(a, 2, 0) == 6 && at(a, 0, 2) == 6 && at(a, 0, 0) == 2);
  spx_csr_destroy(a);
  /* Skew-symmetric: the mirror is negated. Columns come out sorted. */
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n3 1 5\n2 1 -1\n",
                            SPX_FLOAT, &a, &info), SPX_OK);
  assert_int_equal(spx_csr_validate(a), SPX_OK);
  assert_true(at(a, 2, 0) == 5 && at(a, 0, 2) == -5 && at(a, 1, 0) == -1 && at(a, 0, 1) == 1);
  spx_csr_destroy(a);
  /* Symmetric and skew arrays: column-major lower triangle. */
  assert_int_equal(read_str("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n", SPX_DOUBLE,
                            &a, &info), SPX_OK);
  assert_int_equal(a->nnz, 9);
  assert_true(at(a, 1, 0) == 2 && at(a, 0, 1) == 2 && at(a, 2, 0) == 3 && at(a, 1, 1) == 4 && at(a, 2, 1) == 5 &&
              at(a, 1, 2) == 5 && at(a, 2, 2) == 6);
  spx_csr_destroy(a);
  assert_int_equal(read_str("%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n", SPX_DOUBLE,
                            &a, &info), SPX_OK);
  assert_int_equal(a->nnz, 6);
  assert_int_equal(info.field, SPX_MM_INTEGER);
  assert_true(at(a, 1, 0) == 1 && at(a, 0, 1) == -1 && at(a, 2, 0) == 2 && at(a, 2, 1) == 3 && at(a, 1, 2) == -3);
  assert_true(isnan(at(a, 0, 0)));
  spx_csr_destroy(a);
  /* Pattern files that list values (SuiteSparse weighted graphs): values ignored, ones kept. */
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n2 1 7\n2 2\n",
                            SPX_DOUBLE, &a, &info), SPX_OK);
  assert_true(at(a, 1, 0) == 1 && at(a, 0, 1) == 1 && at(a, 1, 1) == 1);
  spx_csr_destroy(a);
  /* Empty matrices. */
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate real general\n0 0 0\n", SPX_DOUBLE, &a, &info),
                   SPX_OK);
  assert_int_equal(a->nrows, 0);
  assert_int_equal(a->nnz, 0);
  spx_csr_destroy(a);
  assert_int_equal(read_str("%%MatrixMarket matrix array real general\n0 4\n", SPX_DOUBLE, &a, &info), SPX_OK);
  assert_int_equal(a->ncols, 4);
  spx_csr_destroy(a);
}

/* The bad-input corpus: one file per way to be wrong, each with its status and message. */
static void test_bad_corpus(void **state) {
  static const struct { const char *file; spx_status status; const char *msg; } cases[] = {
      {"empty.mtx",             SPX_PARSE,       "empty.mtx: empty file"},
      {"bad_header.mtx",        SPX_PARSE,       "bad_header.mtx:1: header: expected '%%MatrixMarket matrix coordinate real general'"},
      {"header_words.mtx",      SPX_PARSE,       "header_words.mtx:1: header: expected 5 words"},
      {"header_extra.mtx",      SPX_PARSE,       "header_extra.mtx:1: header: expected 5 words"},
      {"bad_object.mtx",        SPX_UNSUPPORTED, "bad_object.mtx:1: header: object 'vector'"},
      {"bad_format.mtx",        SPX_PARSE,       "bad_format.mtx:1: header: unknown format 'coordinat'"},
      {"bad_field.mtx",         SPX_PARSE,       "bad_field.mtx:1: header: unknown field 'reel'"},
      {"bad_symmetry.mtx",      SPX_PARSE,       "bad_symmetry.mtx:1: header: unknown symmetry 'symetric'"},
      {"complex.mtx",           SPX_UNSUPPORTED, "complex.mtx:1: complex matrices are not supported"},
      {"hermitian.mtx",         SPX_UNSUPPORTED, "hermitian.mtx:1: hermitian matrices are not supported"},
      {"array_pattern.mtx",     SPX_PARSE,       "array_pattern.mtx:1: header: an array cannot have the field 'pattern'"},
      {"pattern_skew.mtx",      SPX_PARSE,       "pattern_skew.mtx:1: header: a pattern matrix cannot be skew-symmetric"},
      {"binary.mtx",            SPX_PARSE,       "binary.mtx:1: header: expected"},
      {"no_size.mtx",           SPX_PARSE,       "no_size.mtx:4: file ends before the size line"},
      {"size_fields.mtx",       SPX_PARSE,       "size_fields.mtx:3: size line: expected 3 numbers (rows cols entries), got 2"},
      {"size_negative.mtx",     SPX_PARSE,       "size_negative.mtx:2: size line: bad number '-5'"},
      {"size_bad.mtx",          SPX_PARSE,       "size_bad.mtx:2: size line: bad number '1e3'"},
      {"huge_rows.mtx",         SPX_RANGE,       "huge_rows.mtx:2: size line: 3000000000 x 3 exceeds the 32-bit index limit"},
      {"huge_nnz.mtx",          SPX_RANGE,       "huge_nnz.mtx:2: size line: 99999999999 entries cannot fit in the 6 bytes"},
      {"huge_digits.mtx",       SPX_RANGE,       "huge_digits.mtx:2: size line: 123456789012345678901234567890 is too large"},
      {"sym_nonsquare.mtx",     SPX_PARSE,       "sym_nonsquare.mtx:2: size line: a symmetric matrix must be square, got 3 x 4"},
      {"truncated.mtx",         SPX_PARSE,       "truncated.mtx:6: file ends after 3 of 4 entries"},
      {"truncated_line.mtx",    SPX_PARSE,       "truncated_line.mtx:5: expected 3 fields (row col value), got 2"},
      {"too_many.mtx",          SPX_PARSE,       "too_many.mtx:5: too many entries: the size line announces 2"},
      {"trailing_field.mtx",    SPX_PARSE,       "trailing_field.mtx:4: expected 3 fields (row col value), got 4"},
      {"row_zero.mtx",          SPX_RANGE,       "row_zero.mtx:4: row index 0 out of range 1..5"},
      {"row_big.mtx",           SPX_RANGE,       "row_big.mtx:4: row index 6 out of range 1..5"},
      {"col_big.mtx",           SPX_RANGE,       "col_big.mtx:4: column index 9 out of range 1..5"},
      {"index_huge.mtx",        SPX_RANGE,       "index_huge.mtx:3: row index 99999999999999999999999 out of range 1..5"},
      {"bad_index.mtx",         SPX_PARSE,       "bad_index.mtx:4: bad row index '1.5'"},
      {"bad_number.mtx",        SPX_PARSE,       "bad_number.mtx:4: bad number 'abc'"},
      {"bad_exponent.mtx",      SPX_PARSE,       "bad_exponent.mtx:3: bad number '1.5e'"},
      {"bad_number_suffix.mtx", SPX_PARSE,       "bad_number_suffix.mtx:4: bad number '2.5x'"},
      {"nul_byte.mtx",          SPX_PARSE,       "nul_byte.mtx:4: bad number '2.5?'"},
      {"bad_integer.mtx",       SPX_PARSE,       "bad_integer.mtx:4: bad integer '1.5'"},
      {"integer_overflow.mtx",  SPX_RANGE,       "integer_overflow.mtx:3: integer 99999999999999999999 does not fit in 64 bits"},
      {"pattern_fields.mtx",    SPX_PARSE,       "pattern_fields.mtx:4: expected 2 fields (row col), got 4"},
      {"skew_diagonal.mtx",     SPX_PARSE,       "skew_diagonal.mtx:4: diagonal entry (2, 2) in a skew-symmetric matrix"},
      {"array_short.mtx",       SPX_PARSE,       "array_short.mtx:9: file ends after 7 of 9 entries"},
      {"array_fields.mtx",      SPX_PARSE,       "array_fields.mtx:4: expected 1 field (value), got 2"},
      {"array_long.mtx",        SPX_PARSE,       "array_long.mtx:6: too many entries: the size line announces 3"},
      {"truncated.mtx.gz",      SPX_PARSE,       "truncated.mtx.gz: truncated gzip data"},
      {"corrupt.mtx.gz",        SPX_PARSE,       "corrupt.mtx.gz: corrupt gzip data"},
      {"gzip_junk.mtx.gz",      SPX_PARSE,       "gzip_junk.mtx.gz: 4 bytes of trailing junk after the gzip data"},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[512];
    spx_csr *a = (spx_csr *)&a;
    spx_mm_info info;
    spx_status s;
    int t;
    snprintf(path, sizeof path, "tests/data/mm_bad/%s", cases[i].file);
    assert_int_equal(access(path, R_OK), 0);
    for (t = 0; t < 2; t++) { /* both dtypes: the float path must fail the same way */
      s = spx_mm_read(path, t ? SPX_FLOAT : SPX_DOUBLE, &a, &info);
      if (s != cases[i].status || !strstr(spx_last_error(), cases[i].msg))
        fail_msg("%s: got %s \"%s\", want %s containing \"%s\"", cases[i].file, spx_status_string(s),
                 spx_last_error(), spx_status_string(cases[i].status), cases[i].msg);
      assert_null(a);
      assert_int_equal(spx_last_status(), cases[i].status);
    }
  }
}

/* Inputs past 1 MiB split into chunks (parsed in parallel under OpenMP): the result matches the
 * triplets the text was made from, and errors deep inside still name their exact line. */
static void test_chunks(void **state) {
  enum { N = 200000, NR = 5000 };
  size_t cap = (size_t)N * 40 + 256, len = 0, blen, bad_at = 0;
  char *body = (char *)malloc(cap), *text = (char *)malloc(cap + 128), want[96];
  int32_t *ri = (int32_t *)malloc(2 * N * sizeof *ri), *ci = (int32_t *)malloc(2 * N * sizeof *ci);
  double *v = (double *)malloc(2 * N * sizeof *v);
  int64_t k, line = 2, bad_line = 0, nt = N;
  spx_csr *a, *b;
  spx_mm_info info;
  (void)state;
  for (k = 0; k < N; k++) {
    int i = (int)((spx_test_rand() + 1) * 0.5 * NR), j = (int)((spx_test_rand() + 1) * 0.5 * (i + 1));
    if (i >= NR) i = NR - 1;
    if (j > i) j = i;
    if (k % 997 == 0) { len += (size_t)snprintf(body + len, cap - len, "%% comment %lld\n\n", (long long)k); line += 2; }
    if (k == N - 1234) { bad_at = len; bad_line = line + 1; }
    ri[k] = i; ci[k] = j; v[k] = spx_test_rand();
    len += (size_t)snprintf(body + len, cap - len, "%d %d %.17g\n", i + 1, j + 1, v[k]);
    line++;
    if (i != j) { ri[nt] = j; ci[nt] = i; v[nt] = v[k]; nt++; }
  }
  blen = len;
  assert_true(blen > (2 << 20));
  len = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real symmetric\n%d %d %d\n", NR, NR, N);
  memcpy(text + len, body, blen);
  len += blen;
  assert_int_equal(spx_mm_read_buffer(text, len, "big.mtx", SPX_DOUBLE, &a, &info), SPX_OK);
  assert_int_equal(info.entries, N);
  assert_int_equal(info.lines, line);
  assert_int_equal(spx_csr_from_coo(NR, NR, nt, ri, ci, v, SPX_DOUBLE, &b), SPX_OK);
  assert_csr_identical(a, b);
  spx_csr_destroy(a);
  spx_csr_destroy(b);
  /* One entry short: cut after the second-last line. */
  k = (int64_t)len - 1;
  while (text[k - 1] != '\n') k--;
  assert_int_equal(spx_mm_read_buffer(text, (size_t)k, "big.mtx", SPX_DOUBLE, &b, NULL), SPX_PARSE);
  snprintf(want, sizeof want, "big.mtx:%lld: file ends after %d of %d entries", (long long)line - 1, N - 1, N);
  if (!strstr(spx_last_error(), want)) fail_msg("got \"%s\", want \"%s\"", spx_last_error(), want);
  /* One entry too many: the size line says N - 1. */
  len = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real symmetric\n%d %d %d\n", NR, NR, N - 1);
  memcpy(text + len, body, blen);
  len += blen;
  assert_int_equal(spx_mm_read_buffer(text, len, "big.mtx", SPX_DOUBLE, &b, NULL), SPX_PARSE);
  snprintf(want, sizeof want, "big.mtx:%lld: too many entries: the size line announces %d", (long long)line, N - 1);
  if (!strstr(spx_last_error(), want)) fail_msg("got \"%s\", want \"%s\"", spx_last_error(), want);
  /* A bad index near the end. */
  text[len - blen + bad_at] = 'x';
  assert_int_equal(spx_mm_read_buffer(text, len, "big.mtx", SPX_FLOAT, &b, NULL), SPX_PARSE);
  snprintf(want, sizeof want, "big.mtx:%lld: bad row index 'x", (long long)bad_line);
  if (!strstr(spx_last_error(), want)) fail_msg("got \"%s\", want \"%s\"", spx_last_error(), want);
  free(body); free(text); free(ri); free(ci); free(v);
}

/* gzip is found by its magic bytes, whatever the name; a buffer may hold gzip too. */
static void test_gzip(void **state) {
  static const char text[] = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 1 -3\n";
  char path[512], plain[512];
  spx_csr *a, *b;
  gzFile g;
  FILE *f;
  char *data;
  long n;
  (void)state;
  tmp_path(path, sizeof path, "no_suffix.mtx");
  assert_non_null(g = gzopen(path, "wb"));
  assert_int_equal(gzwrite(g, text, (unsigned)strlen(text)), (int)strlen(text));
  assert_int_equal(gzclose(g), Z_OK);
  assert_int_equal(spx_mm_read(path, SPX_DOUBLE, &a, NULL), SPX_OK);
  assert_true(at(a, 1, 0) == -3);
  assert_non_null(f = fopen(path, "rb"));
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = (char *)malloc((size_t)n);
  assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  assert_int_equal(spx_mm_read_buffer(data, (size_t)n, NULL, SPX_DOUBLE, &b, NULL), SPX_OK);
  assert_csr_identical(a, b);
  spx_csr_destroy(b);
  /* Cut short: truncated, named by the buffer name. */
  assert_int_equal(spx_mm_read_buffer(data, (size_t)n - 9, "cut.gz", SPX_DOUBLE, &b, NULL), SPX_PARSE);
  assert_non_null(strstr(spx_last_error(), "cut.gz: truncated gzip data"));
  free(data);
  /* A ".gz" name holding plain text reads as plain text. */
  tmp_path(plain, sizeof plain, "plain.mtx.gz");
  assert_non_null(f = fopen(plain, "wb"));
  fputs(text, f);
  fclose(f);
  assert_int_equal(spx_mm_read(plain, SPX_DOUBLE, &b, NULL), SPX_OK);
  assert_csr_identical(a, b);
  spx_csr_destroy(a);
  spx_csr_destroy(b);
}

static void test_write_errors(void **state) {
  const int32_t r[] = {0, 1, 1}, c[] = {1, 0, 1};
  const double v[] = {1, 2, 0.5}, vs[] = {-2, 2, 0};
  char path[512];
  spx_csr *a, *b;
  (void)state;
  tmp_path(path, sizeof path, "unsym.mtx");
  assert_int_equal(spx_csr_from_coo(2, 2, 3, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_mm_write(path, a, SPX_MM_SYMMETRIC), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "not symmetric: A[0][1] = 1 but A[1][0] = 2"));
  assert_int_equal(access(path, F_OK), -1); /* nothing written */
  assert_int_equal(spx_mm_write(path, a, SPX_MM_SKEW_SYMMETRIC), SPX_INVALID_ARGUMENT);
  spx_csr_destroy(a);
  /* Skew with a nonzero diagonal is refused; with the diagonal zero it is written without it. */
  assert_int_equal(spx_csr_from_coo(2, 2, 3, r, c, vs, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_mm_write(path, a, SPX_MM_SKEW_SYMMETRIC), SPX_OK);
  assert_int_equal(spx_mm_read(path, SPX_DOUBLE, &b, NULL), SPX_OK);
  assert_int_equal(b->nnz, 2);
  assert_true(at(b, 0, 1) == -2 && at(b, 1, 0) == 2);
  spx_csr_destroy(b);
  a->val.d[2] = 1;
  assert_int_equal(spx_mm_write(path, a, SPX_MM_SKEW_SYMMETRIC), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "not skew-symmetric: A[1][1] = 1"));
  spx_csr_destroy(a);
  /* Structurally unsymmetric. */
  assert_int_equal(spx_csr_from_coo(2, 2, 1, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_mm_write(path, a, SPX_MM_SYMMETRIC), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "A[0][1] is stored but A[1][0] is not"));
  /* I/O and argument errors. */
  assert_int_equal(spx_mm_write("/nonexistent-dir/x.mtx", a, SPX_MM_GENERAL), SPX_IO);
  assert_non_null(strstr(spx_last_error(), "cannot write /nonexistent-dir/x.mtx"));
  if (access("/dev/full", W_OK) == 0) {
    assert_int_equal(spx_mm_write("/dev/full", a, SPX_MM_GENERAL), SPX_IO);
    assert_non_null(strstr(spx_last_error(), "cannot write /dev/full"));
    assert_int_equal(access("/dev/full", W_OK), 0); /* a device is written in place, never replaced */
  }
  assert_int_equal(spx_mm_write(NULL, a, SPX_MM_GENERAL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_mm_write(path, NULL, SPX_MM_GENERAL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_mm_write(path, a, (spx_mm_symmetry)7), SPX_INVALID_ARGUMENT);
  spx_csr_destroy(a);
}

static void test_read_errors(void **state) {
  spx_csr *a = (spx_csr *)&a;
  spx_mm_info info;
  (void)state;
  assert_int_equal(spx_mm_read("/nonexistent-dir/m.mtx", SPX_DOUBLE, &a, &info), SPX_IO);
  assert_null(a);
  assert_non_null(strstr(spx_last_error(), "/nonexistent-dir/m.mtx: cannot open"));
  assert_int_equal(spx_mm_read("tests", SPX_DOUBLE, &a, NULL), SPX_IO); /* a directory */
  assert_int_equal(spx_mm_read(NULL, SPX_DOUBLE, &a, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_mm_read("x", SPX_DOUBLE, NULL, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_mm_read("x", (spx_dtype)5, &a, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_mm_read_buffer(NULL, 3, "x", SPX_DOUBLE, &a, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_mm_read_buffer(NULL, 0, NULL, SPX_DOUBLE, &a, NULL), SPX_PARSE);
  assert_non_null(strstr(spx_last_error(), "<buffer>: empty file"));
  /* On failure info keeps what the header said. */
  assert_int_equal(read_str("%%MatrixMarket matrix coordinate integer symmetric\n4 4 2\n1 1 1\n2 1 x\n", SPX_DOUBLE,
                            &a, &info), SPX_PARSE);
  assert_non_null(strstr(spx_last_error(), "test.mtx:4: bad integer 'x'"));
  assert_int_equal(info.field, SPX_MM_INTEGER);
  assert_int_equal(info.symmetry, SPX_MM_SYMMETRIC);
  assert_int_equal(info.nrows, 4);
  assert_int_equal(info.entries, 2);
}

/* ---- Inputs that must not hang, crash or fill memory. What could hang or die runs in a child
 * process (no cmocka asserts there: it answers with its exit code), under alarm() so that a hang
 * fails the test instead of blocking the suite. */

#if defined(__SANITIZE_ADDRESS__)
#define MM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MM_ASAN 1
#endif
#endif
#ifndef MM_ASAN
#define MM_ASAN 0
#endif

static const char small_text[] = "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n3 2 -2\n";

/* fn(arg) in a child process under alarm(seconds) and, where headroom > 0, under an RLIMIT_AS of
 * the address space in use plus headroom bytes, so that a larger allocation fails there (not
 * under ASan, whose shadow memory alone takes terabytes of address space). Returns fn's exit
 * code; a child that dies of a signal fails the test. */
static int in_child(int (*fn)(void *), void *arg, unsigned seconds, size_t headroom) {
  pid_t pid;
  int st;
  fflush(stdout);
  fflush(stderr);
  assert_true((pid = fork()) >= 0);
  if (pid == 0) {
    alarm(seconds);
    if (headroom && !MM_ASAN) {
      FILE *f = fopen("/proc/self/statm", "r");
      unsigned long long pages = 0;
      struct rlimit rl;
      if (!f || fscanf(f, "%llu", &pages) != 1) _exit(90);
      fclose(f);
      rl.rlim_cur = rl.rlim_max = (rlim_t)(pages * (unsigned long long)sysconf(_SC_PAGESIZE) + headroom);
      if (setrlimit(RLIMIT_AS, &rl)) _exit(91);
    }
    _exit(fn(arg));
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st))
    fail_msg("the child died of signal %d%s", WTERMSIG(st), WTERMSIG(st) == SIGALRM ? " (it hung)" : "");
  return WEXITSTATUS(st);
}

/* A child that opens path for writing and writes text, then, when endless, fill bytes until the
 * reader goes away. */
static pid_t pipe_writer(const char *path, const char *text, int endless, char fill) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    static char buf[1 << 16];
    size_t n = strlen(text);
    int fd;
    signal(SIGPIPE, SIG_IGN);
    alarm(60);
    if ((fd = open(path, O_WRONLY)) < 0 || write(fd, text, n) != (ssize_t)n) _exit(1);
    memset(buf, fill, sizeof buf);
    while (endless && write(fd, buf, sizeof buf) > 0) {}
    close(fd);
    _exit(0);
  }
  return pid;
}

static void reap(pid_t pid) {
  int st;
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
}

static int read_small_fifo(void *path) {
  spx_csr *a;
  int ok;
  if (spx_mm_read((const char *)path, SPX_DOUBLE, &a, NULL)) {
    fprintf(stderr, "%s\n", spx_last_error());
    return 2;
  }
  ok = a->nnz == 2 && at(a, 2, 1) == -2 && at(a, 0, 0) == 1.5;
  spx_csr_destroy(a);
  return ok ? 0 : 3;
}

typedef struct bounded_case {
  const char *path, *want;
  spx_status status;
} bounded_case;

/* A read that must stop with the given status and message. */
static int read_bounded(void *arg) {
  const bounded_case *c = (const bounded_case *)arg;
  spx_csr *a = (spx_csr *)&a;
  spx_status s = spx_mm_read(c->path, SPX_DOUBLE, &a, NULL);
  if (s != c->status || a || !strstr(spx_last_error(), c->want)) {
    fprintf(stderr, "got %s \"%s\", want %s \"%s\"\n", spx_status_string(s), spx_last_error(),
            spx_status_string(c->status), c->want);
    return 1;
  }
  return 0;
}

/* A FIFO is opened once: its writer meets that open (a second one would wait forever). A stream
 * without end stops where the header says it must: after the size line, at what its entries can
 * need; before it, at 64 MiB of header. */
static void test_fifo(void **state) {
  char path[512];
  bounded_case c;
  pid_t w;
  int rc;
  (void)state;
  tmp_path(path, sizeof path, "pipe.mtx");
  assert_int_equal(mkfifo(path, 0600), 0);
  w = pipe_writer(path, small_text, 0, 0);
  rc = in_child(read_small_fifo, path, 20, 0);
  reap(w);
  assert_int_equal(rc, 0);
  c.path = path;
  c.status = SPX_PARSE;
  c.want = ":2: the text runs past 16777524 bytes, more than 1 entry can need";
  w = pipe_writer(path, "%%MatrixMarket matrix coordinate real general\n2 2 1\n", 1, '\n');
  rc = in_child(read_bounded, &c, 30, (size_t)512 << 20);
  reap(w);
  assert_int_equal(rc, 0);
  c.want = "no size line in the first 64 MiB";
  w = pipe_writer(path, "%%MatrixMarket matrix coordinate real general\n% a comment without end", 1, 'x');
  rc = in_child(read_bounded, &c, 30, (size_t)512 << 20);
  reap(w);
  assert_int_equal(rc, 0);
  assert_int_equal(unlink(path), 0);
  { /* the same rule in a buffer: a size line that ends past 64 MiB */
    static const char banner[] = "%%MatrixMarket matrix coordinate real general\n";
    size_t n = strlen(banner) + ((size_t)64 << 20) + 6;
    char *text = (char *)malloc(n);
    spx_csr *a = (spx_csr *)&a;
    memcpy(text, banner, strlen(banner));
    memset(text + strlen(banner), '\n', (size_t)64 << 20);
    memcpy(text + n - 6, "2 2 0\n", 6);
    assert_int_equal(spx_mm_read_buffer(text, n, "long.mtx", SPX_DOUBLE, &a, NULL), SPX_PARSE);
    assert_null(a);
    assert_non_null(strstr(spx_last_error(), "long.mtx: no size line in the first 64 MiB"));
    free(text);
  }
}

/* A device that never ends and is no Matrix Market file: refused from its first bytes. */
static void test_endless_device(void **state) {
  bounded_case c = {"/dev/zero", "/dev/zero:1: header: expected '%%MatrixMarket", SPX_PARSE};
  (void)state;
  if (access("/dev/zero", R_OK)) skip();
  assert_int_equal(in_child(read_bounded, &c, 20, (size_t)256 << 20), 0);
}

/* gzip of head followed by n newlines, deflated 1 MiB at a time into a malloc'd buffer. */
static unsigned char *gzip_newlines(const char *head, size_t n, size_t *len) {
  static char nl[1 << 20];
  z_stream z;
  size_t cap = 1 << 20, fed = 0;
  unsigned char *out = (unsigned char *)malloc(cap);
  int r, first = 1;
  memset(nl, '\n', sizeof nl);
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_out = out;
  z.avail_out = (uInt)cap;
  do {
    size_t m = first ? strlen(head) : SPX__MIN(n - fed, sizeof nl);
    z.next_in = (Bytef *)(uintptr_t)(first ? head : nl);
    z.avail_in = (uInt)m;
    if (!first) fed += m;
    first = 0;
    do {
      if (!z.avail_out) {
        size_t used = cap - z.avail_out;
        out = (unsigned char *)realloc(out, cap *= 2);
        z.next_out = out + used;
        z.avail_out = (uInt)(cap - used);
      }
      r = deflate(&z, fed == n ? Z_FINISH : Z_NO_FLUSH);
    } while (z.avail_in || !z.avail_out || (fed == n && r != Z_STREAM_END));
  } while (fed < n);
  *len = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static int read_bomb_buffer(void *arg) {
  const unsigned char *b = *(const unsigned char *const *)arg;
  size_t n = *(const size_t *)((const unsigned char *const *)arg + 1);
  spx_csr *a = (spx_csr *)&a;
  spx_status s = spx_mm_read_buffer((const char *)b, n, "bomb.mtx.gz", SPX_DOUBLE, &a, NULL);
  if (s != SPX_PARSE || a || !strstr(spx_last_error(), "bomb.mtx.gz:2: the gzip data inflates past")) {
    fprintf(stderr, "got %s \"%s\"\n", spx_status_string(s), spx_last_error());
    return 1;
  }
  return 0;
}

/* A gzip bomb: a size line of one entry, then 64 MiB of newlines (65 KiB compressed). Inflation
 * stops at what one entry can need, fast and without the 64 MiB; a 2 GiB one (concatenated
 * members, as `cat` makes) stops the same way inside 256 MiB of address space. */
static void test_gzip_bomb(void **state) {
  static const char head[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n";
  char path[512];
  size_t n, ln, i;
  unsigned char *bomb = gzip_newlines(head, (size_t)64 << 20, &n), *nl, *big;
  struct { unsigned char *b; size_t n; } arg;
  spx_csr *a = (spx_csr *)&a;
  double t0;
  FILE *f;
  (void)state;
  assert_true(n < (1 << 20));
  t0 = spx__now();
  assert_int_equal(spx_mm_read_buffer((const char *)bomb, n, "bomb.mtx.gz", SPX_DOUBLE, &a, NULL), SPX_PARSE);
  assert_null(a);
  if (!strstr(spx_last_error(), "bomb.mtx.gz:2: the gzip data inflates past 16777524 bytes, more than 1 entry can need"))
    fail_msg("got \"%s\"", spx_last_error());
  assert_true(spx__now() - t0 < 5);
  /* The same from a file. */
  tmp_path(path, sizeof path, "bomb.mtx.gz");
  assert_non_null(f = fopen(path, "wb"));
  assert_int_equal(fwrite(bomb, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  t0 = spx__now();
  assert_int_equal(spx_mm_read(path, SPX_FLOAT, &a, NULL), SPX_PARSE);
  assert_non_null(strstr(spx_last_error(), ":2: the gzip data inflates past"));
  assert_true(spx__now() - t0 < 5);
  free(bomb);
  /* 2 GiB: the header member, then 2048 members of 1 MiB of newlines. */
  bomb = gzip_newlines(head, 0, &n);
  nl = gzip_newlines("", (size_t)1 << 20, &ln);
  big = (unsigned char *)malloc(n + 2048 * ln);
  memcpy(big, bomb, n);
  for (i = 0; i < 2048; i++) memcpy(big + n + i * ln, nl, ln);
  arg.b = big;
  arg.n = n + 2048 * ln;
  assert_int_equal(in_child(read_bomb_buffer, &arg, 30, (size_t)256 << 20), 0);
  free(bomb);
  free(nl);
  free(big);
}

/* MemAvailable plus SwapFree in bytes (0 if unknown). */
static double mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[128];
  double av = 0, kb;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf", &kb) == 1 || sscanf(line, "SwapFree: %lf", &kb) == 1) av += kb * 1024;
  if (f) fclose(f);
  return av;
}

static const char huge_rows_text[] = "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1\n1 1 1\n";

static int read_huge_rows(void *arg) {
  spx_csr *a = (spx_csr *)&a;
  spx_status s = read_str(huge_rows_text, SPX_DOUBLE, &a, NULL);
  (void)arg;
  if (s != SPX_OUT_OF_MEMORY || a || !strstr(spx_last_error(), "test.mtx:2: 2147483647 rows need 32.0 GiB of row pointers")) {
    fprintf(stderr, "got %s \"%s\"\n", spx_status_string(s), spx_last_error());
    return 1;
  }
  return 0;
}

/* 70 bytes announce 2^31-1 rows: their row pointers (32 GiB while the CSR is built) are checked
 * against the memory there is before anything is allocated (and not zeroed page by page until the
 * kernel kills the process). In a child with 1 GiB of address space to spare, and here where this
 * machine cannot hold them. */
static void test_huge_rows(void **state) {
  spx_csr *a = (spx_csr *)&a;
  double t0;
  (void)state;
  if (!MM_ASAN) assert_int_equal(in_child(read_huge_rows, NULL, 30, (size_t)1 << 30), 0);
  if (mem_available() > 34e9) {
    print_message("this machine has room for 2^31 row pointers: the in-process read is left out\n");
    return;
  }
  t0 = spx__now();
  assert_int_equal(read_huge_rows(NULL), 0);
  assert_true(spx__now() - t0 < 2);
  (void)a;
}

/* The writer of test_file_changes: rewrites path over and over (truncated to nothing, refilled in
 * pieces, left whole for a moment), or appends comment lines until it has grown by 8 MiB. */
static void mutate(const char *path, const char *text, size_t n, int append_only) {
  const struct timespec pause = {0, append_only ? 250000 : 2000000};
  size_t grown = 0;
  for (;;) {
    int fd = open(path, O_WRONLY | (append_only ? O_APPEND : 0));
    size_t o;
    if (fd < 0) _exit(1);
    if (append_only) {
      for (o = 0; o < 64 && grown < ((size_t)8 << 20); o++, grown += 19)
        if (write(fd, "% grown while read\n", 19) != 19) _exit(2);
    } else {
      if (ftruncate(fd, 0)) _exit(3);
      for (o = 0; o < n; o += 1 << 16)
        if (write(fd, text + o, SPX__MIN(n - o, (size_t)1 << 16)) < 0) _exit(4);
    }
    close(fd);
    nanosleep(&pause, NULL);
  }
}

/* A file another process changes while it is read. Truncated and rewritten under the reader: a
 * status (the file as it was then cannot be parsed, or it shrank) or the matrix, never a crash
 * (a mapping of the file raised SIGBUS). Growing by comment lines: the matrix every time. */
static void test_file_changes(void **state) {
  enum { N = 2000, NNZ = 120000 };
  char path[512], *text = (char *)malloc((size_t)NNZ * 32 + 128);
  size_t n;
  int k, mode;
  FILE *f;
  (void)state;
  n = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n", N, N, NNZ);
  for (k = 0; k < NNZ; k++) n += (size_t)sprintf(text + n, "%d %d %.6f\n", k % N + 1, k / N + 1, 1.0 + k);
  tmp_path(path, sizeof path, "changing.mtx");
  for (mode = 0; mode < 2; mode++) {
    int ok = 0, failed = 0;
    pid_t w;
    double t0;
    assert_non_null(f = fopen(path, "wb"));
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    fflush(stdout);
    assert_true((w = fork()) >= 0);
    if (w == 0) mutate(path, text, n, mode);
    for (t0 = spx__now(), k = 0; k < 400 && (k < 20 || spx__now() - t0 < 2); k++) {
      spx_csr *a = NULL;
      spx_status s = spx_mm_read(path, SPX_DOUBLE, &a, NULL);
      if (s == SPX_OK) {
        ok++;
        if (a->nnz != NNZ || at(a, 1, 0) != 2.0) { reap(w); fail_msg("read %d: a wrong matrix", k); }
        spx_csr_destroy(a);
        continue;
      }
      failed++;
      if (mode == 1 || a || !spx_last_error()[0] || (s != SPX_PARSE && s != SPX_RANGE && s != SPX_IO)) {
        reap(w);
        fail_msg("read %d (%s): %s \"%s\"", k, mode ? "growing" : "rewritten", spx_status_string(s), spx_last_error());
      }
    }
    reap(w);
    print_message("%s file: %d reads gave the matrix, %d a status\n", mode ? "growing" : "rewritten", ok, failed);
  }
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),           cmocka_unit_test(test_manifest),
      cmocka_unit_test(test_spmv_reference),
      cmocka_unit_test(test_spmv_every_shared_matrix),  cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_roundtrip_random), cmocka_unit_test(test_values),
      cmocka_unit_test(test_nan_inf),         cmocka_unit_test(test_syntax),
      cmocka_unit_test(test_bad_corpus),      cmocka_unit_test(test_chunks),
      cmocka_unit_test(test_gzip),            cmocka_unit_test(test_write_errors),
      cmocka_unit_test(test_read_errors),
      cmocka_unit_test(test_fifo),            cmocka_unit_test(test_endless_device),
      cmocka_unit_test(test_gzip_bomb),       cmocka_unit_test(test_huge_rows),
      cmocka_unit_test(test_file_changes),
  };
  return cmocka_run_group_tests_name("mm", tests, setup, teardown);
}
