/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/analyze.h: features hand-computed on small matrices, the symmetry walk against a
 * transpose-based oracle, malformed input, and the printers. */
#include "spx_test.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

#define NA(x) ((int64_t)(sizeof(x) / sizeof((x)[0])))

static spx_csr *mk(int64_t m, int64_t n, int64_t nnz, const int32_t *r, const int32_t *c, const double *v) {
  spx_csr *a = NULL;
  assert_int_equal(spx_csr_from_coo(m, n, nnz, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(a->nnz, nnz); /* the tests never give duplicates */
  return a;
}

static void analyze_ok(const spx_csr *a, spx_analysis *an) {
  memset(an, 0x5a, sizeof *an); /* poison: every field must be written */
  assert_int_equal(spx_analyze(a, an), SPX_OK);
  assert_true(an->seconds >= 0 && an->seconds < 10);
}

#define ABSD(x) ((x) < 0 ? -(x) : (x))
#define assert_near(a, b) assert_true(ABSD((a) - (b)) <= 1e-12 * (1 + ABSD(b)))

/* 3 x 8, nnz 8:
 *   row 0: [10 1 2 . -1 1 . -2]   runs 3,2,1; diagonal 10 >= 7, strictly dominant
 *   row 1: empty                  weakly dominant (0 >= 0), no diagonal
 *   row 2: [. 3 . . . . 4 .]      runs 1,1; no diagonal, not dominant */
static void test_row_stats_and_runs(void **state) {
  const int32_t r[] = {0, 0, 0, 0, 0, 0, 2, 2}, c[] = {0, 1, 2, 4, 5, 7, 1, 6};
  const double v[] = {10, 1, 2, -1, 1, -2, 3, 4};
  spx_csr *a = mk(3, 8, NA(r), r, c, v);
  spx_analysis an;
  (void)state;
  analyze_ok(a, &an);
  assert_int_equal(an.nrows, 3);
  assert_int_equal(an.ncols, 8);
  assert_int_equal(an.nnz, 8);
  assert_int_equal(an.row_min, 0);
  assert_int_equal(an.row_max, 6);
  assert_int_equal(an.empty_rows, 1);
  assert_near(an.row_mean, 8.0 / 3);
  /* deviations 10/3, -8/3, -2/3: variance 168/27 = 56/9 */
  assert_near(an.row_stddev, 2.4944382578492941);
  assert_near(an.B, 6 / (8.0 / 3));
  assert_near(an.R, 8.0 / 24);
  assert_int_equal(an.lower_bandwidth, 1); /* (2,1) */
  assert_int_equal(an.upper_bandwidth, 7); /* (0,7) */
  assert_int_equal(an.bandwidth, 7);
  assert_int_equal(an.structurally_symmetric, 0);
  assert_int_equal(an.numerically_symmetric, 0);
  assert_int_equal(an.missing_diagonal, 2);
  assert_int_equal(an.diag_dominant_rows, 2);
  assert_int_equal(an.diagonally_dominant, 0);
  assert_int_equal(an.runs, 5);
  assert_near(an.runs_per_row, 5.0 / 3);
  assert_near(an.run_mean, 8.0 / 5);
  assert_int_equal(an.run_max, 3);
  assert_near(an.run_share2, 5.0 / 8);
  assert_int_equal(an.nan_count, 0);
  assert_int_equal(an.inf_count, 0);
  spx_csr_destroy(a);
}

/* The one row of the brief, alone: [x x x . x x . x] has runs 3,2,1 and share2 5/6. */
static void test_runs_single_row(void **state) {
  const int32_t r[] = {0, 0, 0, 0, 0, 0}, c[] = {0, 1, 2, 4, 5, 7};
  double v[6];
  spx_csr *a;
  spx_analysis an;
  (void)state;
  spx_test_fill(v, 6);
  a = mk(1, 8, 6, r, c, v);
  analyze_ok(a, &an);
  assert_int_equal(an.runs, 3);
  assert_int_equal(an.run_max, 3);
  assert_near(an.run_share2, 5.0 / 6);
  assert_near(an.run_mean, 2.0);
  assert_near(an.B, 1.0);
  assert_near(an.row_stddev, 0.0);
  spx_csr_destroy(a);
}

static void test_empty_matrices(void **state) {
  spx_csr *a;
  spx_analysis an;
  (void)state;
  assert_int_equal(spx_csr_create(0, 0, 0, SPX_DOUBLE, &a), SPX_OK);
  analyze_ok(a, &an);
  assert_int_equal(an.nrows, 0);
  assert_int_equal(an.row_min, 0);
  assert_true(an.B == 0 && an.R == 0 && an.row_mean == 0 && an.row_stddev == 0 && an.run_mean == 0);
  assert_int_equal(an.structurally_symmetric, 1); /* vacuously */
  assert_int_equal(an.diagonally_dominant, 0);   /* no strictly dominant row */
  spx_csr_destroy(a);
  assert_int_equal(spx_csr_create(3, 3, 0, SPX_FLOAT, &a), SPX_OK);
  analyze_ok(a, &an);
  assert_int_equal(an.empty_rows, 3);
  assert_int_equal(an.missing_diagonal, 3);
  assert_int_equal(an.diag_dominant_rows, 3);
  assert_int_equal(an.diagonally_dominant, 0);
  assert_int_equal(an.runs, 0);
  assert_int_equal(an.numerically_symmetric, 1);
  assert_true(an.B == 0 && an.R == 0 && an.run_share2 == 0);
  spx_csr_destroy(a);
}

/* Symmetric 5x5 with random values, an empty row (2) and a row without diagonal (1):
 *   [d . . s t]
 *   [. . . u .]
 *   [. . . . .]
 *   [s u . d .]
 *   [t . . . d] */
static void test_symmetry_cases(void **state) {
  int32_t r[] = {0, 0, 0, 1, 3, 3, 3, 4, 4}, c[] = {0, 3, 4, 3, 0, 1, 3, 0, 4};
  double v[9], w[5];
  spx_csr *a;
  spx_analysis an;
  (void)state;
  spx_test_fill(w, 5);
  v[0] = w[0]; v[1] = v[4] = w[1]; v[2] = v[7] = w[2]; v[3] = v[5] = w[3]; v[6] = v[8] = w[4];
  a = mk(5, 5, 9, r, c, v);
  analyze_ok(a, &an);
  assert_int_equal(an.structurally_symmetric, 1);
  assert_int_equal(an.numerically_symmetric, 1);
  assert_int_equal(an.missing_diagonal, 2);
  assert_int_equal(an.lower_bandwidth, 4);
  assert_int_equal(an.upper_bandwidth, 4);
  spx_csr_destroy(a);

  /* Same pattern, one mirror value changed: structurally but not numerically symmetric. */
  v[5] = w[3] + 0.5;
  a = mk(5, 5, 9, r, c, v);
  analyze_ok(a, &an);
  assert_int_equal(an.structurally_symmetric, 1);
  assert_int_equal(an.numerically_symmetric, 0);
  spx_csr_destroy(a);
  v[5] = w[3];

  /* Lower entry (3,1) without its mirror (1,3): caught when row 3's cursor is short. */
  {
    int32_t r2[] = {0, 0, 0, 3, 3, 3, 4, 4}, c2[] = {0, 3, 4, 0, 1, 3, 0, 4};
    double v2[] = {1, 2, 3, 2, 5, 1, 3, 1};
    a = mk(5, 5, 8, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 0);
    assert_int_equal(an.numerically_symmetric, 0);
    spx_csr_destroy(a);
  }
  /* Upper entry (1,3) without its mirror (3,1): caught at the cursor of row 3 (col 0 != 1)... */
  {
    int32_t r2[] = {0, 0, 0, 1, 3, 3, 4, 4}, c2[] = {0, 3, 4, 3, 0, 3, 0, 4};
    double v2[] = {1, 2, 3, 5, 2, 1, 3, 1};
    a = mk(5, 5, 8, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 0);
    spx_csr_destroy(a);
  }
  /* ... and when the mirror row is empty, (0,2) against empty row 2. */
  {
    int32_t r2[] = {0, 0, 1}, c2[] = {0, 2, 1};
    double v2[] = {1, 2, 3};
    a = mk(3, 3, 3, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 0);
    spx_csr_destroy(a);
  }
  /* (0,3) missing but (1,3) and (3,1) present: row 3's cursor is stuck at (3,0) when (1,3) looks. */
  {
    int32_t r2[] = {1, 3, 3}, c2[] = {3, 0, 1};
    double v2[] = {1, 2, 1};
    a = mk(4, 4, 3, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 0);
    spx_csr_destroy(a);
  }
  /* Last row's mirror: (2,3) present, (3,2) missing while row 3 holds (3,3). */
  {
    int32_t r2[] = {2, 3}, c2[] = {3, 3};
    double v2[] = {1, 1};
    a = mk(4, 4, 2, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 0);
    spx_csr_destroy(a);
  }
  /* A non-square matrix is never symmetric, even when its square part is. */
  {
    int32_t r2[] = {0, 1}, c2[] = {0, 1};
    double v2[] = {1, 1};
    a = mk(2, 3, 2, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 0);
    assert_int_equal(an.numerically_symmetric, 0);
    assert_int_equal(an.missing_diagonal, 0);
    spx_csr_destroy(a);
  }
  /* NaN off the diagonal: pattern symmetric, values not (NaN != NaN); NaN on it is harmless. */
  {
    int32_t r2[] = {0, 0, 1, 1}, c2[] = {0, 1, 0, 1};
    double v2[] = {NAN, NAN, NAN, INFINITY};
    a = mk(2, 2, 4, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.structurally_symmetric, 1);
    assert_int_equal(an.numerically_symmetric, 0);
    assert_int_equal(an.nan_count, 3);
    assert_int_equal(an.inf_count, 1);
    assert_int_equal(an.diag_dominant_rows, 0); /* NaN sums compare false */
    spx_csr_destroy(a);
    v2[1] = v2[2] = 2;
    v2[0] = -INFINITY;
    a = mk(2, 2, 4, r2, c2, v2);
    analyze_ok(a, &an);
    assert_int_equal(an.numerically_symmetric, 1);
    assert_int_equal(an.nan_count, 0);
    assert_int_equal(an.inf_count, 2);
    assert_int_equal(an.diag_dominant_rows, 2);
    spx_csr_destroy(a);
  }
}

/* Oracle: compare with the transpose. */
static void symmetry_by_transpose(const spx_csr *a, int *ss, int *ns) {
  spx_csr *t;
  int64_t k;
  assert_int_equal(spx_csr_transpose(a, &t), SPX_OK);
  *ss = !memcmp(a->row_ptr, t->row_ptr, (size_t)(a->nrows + 1) * sizeof(int64_t)) &&
        !memcmp(a->col_idx, t->col_idx, (size_t)a->nnz * sizeof(int32_t));
  *ns = *ss;
  for (k = 0; *ns && k < a->nnz; k++) *ns = a->val.d[k] == t->val.d[k];
  spx_csr_destroy(t);
}

/* spx_analyze with several thread counts (several chunks of the parallel symmetry walk): all must
 * agree with the first. Without OpenMP, one plain call. */
static void analyze_all_threads(const spx_csr *a, spx_analysis *an) {
#if defined(_OPENMP)
  static const int threads[] = {1, 2, 3, 5, 8};
  int t, saved = omp_get_max_threads();
  analyze_ok(a, an);
  an->seconds = 0;
  for (t = 0; t < (int)NA(threads); t++) {
    spx_analysis b;
    omp_set_num_threads(threads[t]);
    analyze_ok(a, &b);
    b.seconds = 0;
    assert_memory_equal(&b, an, sizeof b);
  }
  omp_set_num_threads(saved);
#else
  analyze_ok(a, an);
#endif
}

/* Random symmetric matrices (large enough for the chunked parallel walk), then one random change:
 * 1 a value (numeric only), 2 a dropped entry, 3 a lone lower entry, 4 a lone upper entry, 5 both
 * (the counts of entries below and above the diagonal still agree). */
static void test_symmetry_random(void **state) {
  enum { N = 12000, HALF = 70000 };
  int32_t *r = (int32_t *)malloc((2 * HALF + 1) * sizeof *r), *c = (int32_t *)malloc((2 * HALF + 1) * sizeof *c);
  double *v = (double *)malloc((2 * HALF + 1) * sizeof *v);
  int trial;
  (void)state;
  assert_non_null(r); assert_non_null(c); assert_non_null(v);
  for (trial = 0; trial < 12; trial++) {
    int64_t m = 0, k;
    spx_csr *a;
    spx_analysis an;
    int ss, ns, change = trial % 6;
    /* Random entries on and above the diagonal (band 40, or full width), mirrored; rows and
     * columns N/2+1 .. N/2+49 left empty. */
    for (k = 0; k < HALF; k++) {
      int32_t i = (int32_t)((spx_test_rand() + 1) * 0.5 * N), j;
      if (i >= N) i = N - 1;
      j = i + (int32_t)((spx_test_rand() + 1) * 0.5 * (trial & 1 ? 40 : N));
      if (j >= N || (i > N / 2 && i < N / 2 + 50) || (j > N / 2 && j < N / 2 + 50)) continue;
      r[m] = i; c[m] = j; v[m] = spx_test_rand(); m++;
      if (i != j) { r[m] = j; c[m] = i; v[m] = v[m - 1]; m++; }
    }
    if (change == 2) { /* drop one off-diagonal entry */
      k = (int64_t)((spx_test_rand() + 1) * 0.5 * (double)(m - 1));
      while (r[k] == c[k]) k = (k + 1) % m;
      m--;
      r[k] = r[m]; c[k] = c[m]; v[k] = v[m];
    }
    if (change == 3 || change == 5) { r[m] = N / 2 + 10; c[m] = 3; v[m] = 1; m++; } /* nothing at (3, N/2+10) */
    if (change == 4) { r[m] = 3; c[m] = N / 2 + 10; v[m] = 1; m++; }
    if (change == 5) { r[m] = 3; c[m] = N - 5; v[m] = 1; m++; } /* outside row N-5's band */
    /* Duplicates are summed alike on both sides (the oracle decides anyway). */
    assert_int_equal(spx_csr_from_coo(N, N, m, r, c, v, SPX_DOUBLE, &a), SPX_OK);
    assert_true(a->nnz >= 65536);
    if (change == 1) { /* perturb one off-diagonal value */
      int64_t i = (int64_t)((spx_test_rand() + 1) * 0.5 * N), done = 0;
      for (; !done; i = (i + 1) % N)
        for (k = a->row_ptr[i]; k < a->row_ptr[i + 1] && !done; k++)
          if (a->col_idx[k] != i) { a->val.d[k] += 1; done = 1; }
    }
    symmetry_by_transpose(a, &ss, &ns);
    analyze_all_threads(a, &an);
    assert_int_equal(an.structurally_symmetric, ss);
    assert_int_equal(an.numerically_symmetric, ns);
    if (change == 0) assert_int_equal(ss, 1);
    if (change == 1) { assert_int_equal(ss, 1); assert_int_equal(ns, 0); }
    if (change >= 3) assert_int_equal(ss, 0);
    spx_csr_destroy(a);
  }
  free(r); free(c); free(v);
}

/*   [4 -2  1]   4 >  3
 *   [1  2 -1]   2 >= 2
 *   [0  1 -1]   1 >= 1     all weakly dominant, one strictly. */
static void test_dominance(void **state) {
  const int32_t r[] = {0, 0, 0, 1, 1, 1, 2, 2}, c[] = {0, 1, 2, 0, 1, 2, 1, 2};
  double v[] = {4, -2, 1, 1, 2, -1, 1, -1};
  spx_csr *a, *af;
  spx_analysis an, af_an;
  (void)state;
  a = mk(3, 3, 8, r, c, v);
  analyze_ok(a, &an);
  assert_int_equal(an.diag_dominant_rows, 3);
  assert_int_equal(an.diagonally_dominant, 1);
  assert_int_equal(an.missing_diagonal, 0);
  assert_int_equal(an.structurally_symmetric, 0); /* (2,0) missing */
  /* float copy: same features */
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
  analyze_ok(af, &af_an);
  assert_int_equal(af_an.diag_dominant_rows, 3);
  assert_int_equal(af_an.diagonally_dominant, 1);
  assert_int_equal(af_an.runs, an.runs);
  assert_near(af_an.row_stddev, an.row_stddev);
  spx_csr_destroy(af);
  spx_csr_destroy(a);
  v[0] = 3; /* now no row is strictly dominant */
  a = mk(3, 3, 8, r, c, v);
  analyze_ok(a, &an);
  assert_int_equal(an.diag_dominant_rows, 3);
  assert_int_equal(an.diagonally_dominant, 0);
  spx_csr_destroy(a);
  v[0] = 2.5; v[4] = 1e9; /* row 0 loses dominance */
  a = mk(3, 3, 8, r, c, v);
  analyze_ok(a, &an);
  assert_int_equal(an.diag_dominant_rows, 2);
  assert_int_equal(an.diagonally_dominant, 0);
  spx_csr_destroy(a);
}

static void test_bad_input(void **state) {
  const int32_t r[] = {0, 0, 1, 2}, c[] = {0, 2, 1, 2};
  const double v[] = {1, 2, 3, 4};
  spx_csr *a = mk(3, 3, 4, r, c, v);
  spx_analysis an;
  (void)state;
  assert_int_equal(spx_analyze(NULL, &an), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_analyze(a, NULL), SPX_INVALID_ARGUMENT);
  /* unsorted row */
  a->col_idx[0] = 2; a->col_idx[1] = 0;
  memset(&an, 0x5a, sizeof an);
  assert_int_equal(spx_analyze(a, &an), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row 0"));
  assert_int_equal(an.nnz, 0); /* zeroed on failure */
  /* column out of range */
  a->col_idx[0] = 0; a->col_idx[1] = 2; a->col_idx[3] = 7;
  assert_int_equal(spx_analyze(a, &an), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row 2"));
  a->col_idx[3] = -1;
  assert_int_equal(spx_analyze(a, &an), SPX_INVALID_ARGUMENT);
  a->col_idx[3] = 2;
  assert_int_equal(spx_analyze(a, &an), SPX_OK);
  /* row pointers */
  a->row_ptr[1] = 3; a->row_ptr[2] = 2;
  assert_int_equal(spx_analyze(a, &an), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "row_ptr"));
  a->row_ptr[1] = 2; a->row_ptr[2] = 3; a->row_ptr[3] = 5;
  assert_int_equal(spx_analyze(a, &an), SPX_INVALID_ARGUMENT);
  a->row_ptr[3] = 4;
  a->dtype = (spx_dtype)9;
  assert_int_equal(spx_analyze(a, &an), SPX_INVALID_ARGUMENT);
  a->dtype = SPX_DOUBLE;
  spx_csr_destroy(a);
}

static char *print_to_string(const spx_analysis *an, const char *name, int json) {
  FILE *f = tmpfile();
  long n;
  char *s;
  assert_non_null(f);
  assert_int_equal(spx_analysis_print(an, name, f, json), SPX_OK);
  n = ftell(f);
  rewind(f);
  s = (char *)malloc((size_t)n + 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

static void test_print(void **state) {
  const int32_t r[] = {0, 0, 0, 0, 0, 0, 2, 2}, c[] = {0, 1, 2, 4, 5, 7, 1, 6};
  const double v[] = {10, 1, 2, -1, 1, -2, 3, 4};
  spx_csr *a = mk(3, 8, NA(r), r, c, v);
  spx_analysis an;
  char *s;
  (void)state;
  analyze_ok(a, &an);
  s = print_to_string(&an, "small", 0);
  assert_non_null(strstr(s, "matrix          small\n"));
  assert_non_null(strstr(s, "rows            3\n"));
  assert_non_null(strstr(s, "nonzeros        8\n"));
  assert_non_null(strstr(s, "B (max/mean)    2.25\n"));
  assert_non_null(strstr(s, "R (density)     0.333333 (33.3333 %)\n"));
  assert_non_null(strstr(s, "sym. pattern    no\n"));
  assert_non_null(strstr(s, "run share >=2   0.625\n"));
  free(s);
  s = print_to_string(&an, "a\"b\\c\n", 1);
  assert_true(s[0] == '{');
  assert_non_null(strstr(s, "{\"name\": \"a\\\"b\\\\c\\u000a\", \"nrows\": 3, \"ncols\": 8, \"nnz\": 8,"));
  assert_non_null(strstr(s, "\"B\": 2.25,"));
  assert_non_null(strstr(s, "\"structurally_symmetric\": 0,"));
  assert_non_null(strstr(s, "\"run_share2\": 0.625,"));
  assert_non_null(strstr(s, "\"seconds\": "));
  assert_non_null(strstr(s, "}\n"));
  assert_null(strstr(s, ": nan"));
  assert_non_null(strstr(s, "\"nan_count\": 0, \"inf_count\": 0,"));
  free(s);
  /* Non-finite doubles become null; no name is null too. */
  an.R = NAN; an.B = INFINITY;
  s = print_to_string(&an, NULL, 1);
  assert_non_null(strstr(s, "{\"name\": null,"));
  assert_non_null(strstr(s, "\"B\": null,"));
  assert_non_null(strstr(s, "\"R\": null,"));
  free(s);
  s = print_to_string(&an, NULL, 0);
  assert_null(strstr(s, "matrix"));
  assert_non_null(strstr(s, "rows            3\n"));
  free(s);
  assert_int_equal(spx_analysis_print(NULL, NULL, stdout, 0), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_analysis_print(&an, NULL, NULL, 0), SPX_INVALID_ARGUMENT);
  spx_csr_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row_stats_and_runs), cmocka_unit_test(test_runs_single_row),
      cmocka_unit_test(test_empty_matrices),     cmocka_unit_test(test_symmetry_cases),
      cmocka_unit_test(test_symmetry_random),    cmocka_unit_test(test_dominance),
      cmocka_unit_test(test_bad_input),          cmocka_unit_test(test_print),
  };
  return cmocka_run_group_tests_name("analyze", tests, NULL, NULL);
}
