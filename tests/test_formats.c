/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/formats.h. Every check iterates the registry, so a new format (in-tree, or
 * registered at run time like the out-of-tree DIA example included below) is tested with no edit
 * here: conversion, invariants, exact bytes, SpMV against CSR (double and float), the exact round
 * trip, on hand-made edge cases and on every shared matrix. */
#include "spx_test.h"

#include <spx/formats.h>
#include "../examples/dia/dia.h"

static spx_format dia_id;

static double now(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Helpers ---------------------------------------------------------------------------------- */

static spx_csr *from_triplets(int64_t nr, int64_t nc, int64_t nnz, const int32_t *r, const int32_t *c,
                              const double *v, spx_dtype t) {
  spx_csr *a = NULL;
  if (spx_csr_from_coo(nr, nc, nnz, r, c, v, t, &a)) fail_msg("from_coo: %s", spx_last_error());
  return a;
}

/* A CSR of the nonzeros of a dense row-major array. */
static spx_csr *from_dense(int64_t nr, int64_t nc, const double *d, spx_dtype t) {
  int32_t *r = (int32_t *)malloc((size_t)(nr * nc + 1) * sizeof *r), *c = (int32_t *)malloc((size_t)(nr * nc + 1) * sizeof *c);
  double *v = (double *)malloc((size_t)(nr * nc + 1) * sizeof *v);
  int64_t i, j, n = 0;
  spx_csr *a;
  for (i = 0; i < nr; i++)
    for (j = 0; j < nc; j++)
      if (d[i * nc + j] != 0) {
        r[n] = (int32_t)i; c[n] = (int32_t)j; v[n] = d[i * nc + j]; n++;
      }
  a = from_triplets(nr, nc, n, r, c, v, t);
  free(r); free(c); free(v);
  return a;
}

static void *vec_alloc(int64_t n, spx_dtype t) { return malloc((size_t)(n > 0 ? n : 1) * SPX_DTYPE_SIZE(t)); }
static void vec_set(void *v, int64_t i, double x, spx_dtype t) {
  if (t == SPX_DOUBLE) ((double *)v)[i] = x;
  else ((float *)v)[i] = (float)x;
}
static double vec_get(const void *v, int64_t i, spx_dtype t) {
  return t == SPX_DOUBLE ? ((const double *)v)[i] : (double)((const float *)v)[i];
}

/* Values equal bit for bit, or both zero (a padded format stores an input -0.0 as +0.0). */
static int val_same(const spx_csr *a, const spx_csr *b, int64_t k) {
  if (a->dtype == SPX_DOUBLE)
    return !memcmp(a->val.d + k, b->val.d + k, sizeof(double)) || (a->val.d[k] == 0 && b->val.d[k] == 0);
  return !memcmp(a->val.f + k, b->val.f + k, sizeof(float)) || (a->val.f[k] == 0 && b->val.f[k] == 0);
}

/* The oracle: CSR SpMV written out serially here (spx_csr_spmv's OpenMP regions cost more than
 * these small matrices, thousands of times over), sums in double. */
static void ref_spmv(const spx_csr *a, double alpha, const void *x, double beta, void *y) {
  int64_t i, k;
  for (i = 0; i < a->nrows; i++) {
    double sum = 0;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      sum += (a->dtype == SPX_DOUBLE ? a->val.d[k] : (double)a->val.f[k]) * vec_get(x, a->col_idx[k], a->dtype);
    vec_set(y, i, beta == 0 ? alpha * sum : alpha * sum + beta * vec_get(y, i, a->dtype), a->dtype);
  }
}

typedef struct tally {
  int64_t checks, failures, declined;
} tally;

#define BAD(...) do { print_error(__VA_ARGS__); t->failures++; goto out; } while (0)

/* y = alpha*A*x + beta*y through the format and through CSR; relative error within tol, NaN
 * never passing. beta == 0 runs on a y full of NaN (it must not be read). */
static int spmv_matches(const spx_csr *a, const spx_fmt *m, double alpha, double beta, double *err) {
  spx_dtype t = a->dtype;
  void *x = vec_alloc(a->ncols, t), *y1 = vec_alloc(a->nrows, t), *y2 = vec_alloc(a->nrows, t);
  double *d1 = (double *)malloc((size_t)(a->nrows + 1) * sizeof *d1), *d2 = (double *)malloc((size_t)(a->nrows + 1) * sizeof *d2);
  int64_t i;
  int ok = 1;
  for (i = 0; i < a->ncols; i++) vec_set(x, i, spx_test_rand(), t);
  for (i = 0; i < a->nrows; i++) {
    double y0 = beta == 0 ? NAN : spx_test_rand();
    vec_set(y1, i, y0, t);
    vec_set(y2, i, y0, t);
  }
  if (spx_fmt_spmv(m, alpha, x, beta, y1)) ok = 0;
  ref_spmv(a, alpha, x, beta, y2);
  for (i = 0; i < a->nrows; i++) { d1[i] = vec_get(y1, i, t); d2[i] = vec_get(y2, i, t); }
  *err = ok ? spx_test_relerr(d1, d2, a->nrows) : 1e300;
  if (!(*err <= (t == SPX_DOUBLE ? 1e-12 : 1e-5))) ok = 0;
  free(x); free(y1); free(y2); free(d1); free(d2);
  return ok;
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* Slots SDIA stores in real rows with slice height c, counted the plain way: each slice's
 * offsets (column - row) sorted, duplicates dropped, times the slice's rows. */
static int64_t sdia_slots(const spx_csr *a, int64_t c) {
  int64_t s, slots = 0, cap = a->nnz + 1, *o = (int64_t *)malloc((size_t)cap * sizeof *o);
  for (s = 0; s * c < a->nrows; s++) {
    int64_t r1 = s * c + c < a->nrows ? s * c + c : a->nrows, n = 0, i, k, u = 0;
    for (i = s * c; i < r1; i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) o[n++] = (int64_t)a->col_idx[k] - i;
    qsort(o, (size_t)n, sizeof *o, cmp_i64);
    for (k = 0; k < n; k++) u += !k || o[k] != o[k - 1];
    slots += u * (r1 - s * c);
  }
  free(o);
  return slots;
}

/* The whole contract of one format on one matrix. */
static void check_format(const spx_csr *a, spx_format f, const spx_format_params *p, const char *what, tally *t) {
  spx_fmt *m = NULL;
  spx_csr *b = NULL;
  spx_format_array arr[SPX_KERNEL_ARGS_MAX];
  spx_kernel_args ka;
  const spx_format_layout *L = spx_format_info(f)->layout;
  int64_t bytes = 0, k;
  int n, i;
  double err;
  spx_status s = spx_fmt_from_csr(a, f, p, &m);
  t->checks++;
  if (s == SPX_UNSUPPORTED && (int)f >= SPX_FORMAT_COUNT) { t->declined++; return; }
  /* SELL16 may decline only a matrix too wide for 16-bit offsets somewhere (more than 65536 columns). */
  if (s == SPX_UNSUPPORTED && f == SPX_FORMAT_SELL16 && a->ncols > 65536) { t->declined++; return; }
  /* SDIA declines exactly the matrices its fill limit excludes. */
  if (f == SPX_FORMAT_SDIA) {
    int64_t c = p && p->sdia_c > 0 ? p->sdia_c : 32, mf = p && p->sdia_max_fill > 0 ? p->sdia_max_fill : 4;
    int over = sdia_slots(a, c) > mf * a->nnz;
    if (over != (s == SPX_UNSUPPORTED))
      BAD("%s: sdia (c %lld, max_fill %lld) %s: %s\n", what, (long long)c, (long long)mf,
          over ? "should decline" : "declined", s ? spx_last_error() : "converted");
    if (over) { t->declined++; return; }
  }
  if (s) BAD("%s: %s %s: from_csr: %s\n", what, spx_format_name(f), spx_dtype_name(a->dtype), spx_last_error());
  if (spx_fmt_validate(m)) BAD("%s: %s: validate: %s\n", what, spx_format_name(f), spx_last_error());
  n = spx_fmt_arrays(m, arr, SPX_KERNEL_ARGS_MAX);
  for (i = 0; i < n; i++) bytes += arr[i].count * (int64_t)arr[i].elem_size;
  if (n != L->narrays || bytes != spx_fmt_bytes(m) || spx_fmt_slots(m) < a->nnz || spx_fmt_padding(m) < 1.0)
    BAD("%s: %s: arrays/bytes/slots disagree\n", what, spx_format_name(f));
  if (spx_fmt_kernel_args(m, NULL, &ka) || ka.count != L->nscalars + L->narrays ||
      *(const void *const *)ka.ptrs[L->nscalars] != arr[0].host)
    BAD("%s: %s: kernel args\n", what, spx_format_name(f));
  if (!spmv_matches(a, m, 1.5, 0.0, &err) || !spmv_matches(a, m, -0.75, 0.5, &err))
    BAD("%s: %s %s: SpMV differs from CSR (relative error %.3g)\n", what, spx_format_name(f),
        spx_dtype_name(a->dtype), err);
  if (spx_fmt_to_csr(m, &b)) BAD("%s: %s: to_csr: %s\n", what, spx_format_name(f), spx_last_error());
  if (spx_csr_validate(b) || b->nrows != a->nrows || b->ncols != a->ncols || b->nnz != a->nnz ||
      memcmp(a->row_ptr, b->row_ptr, (size_t)(a->nrows + 1) * sizeof(int64_t)) ||
      (a->nnz && memcmp(a->col_idx, b->col_idx, (size_t)a->nnz * sizeof(int32_t))))
    BAD("%s: %s %s: round trip changed the pattern\n", what, spx_format_name(f), spx_dtype_name(a->dtype));
  for (k = 0; k < a->nnz; k++)
    if (!val_same(a, b, k)) BAD("%s: %s: round trip changed value %lld\n", what, spx_format_name(f), (long long)k);
out:
  spx_csr_destroy(b);
  spx_fmt_destroy(m);
}

/* Every format, both dtypes, under each parameter set. */
static const char *const variants[] = {
    "",                                 /* defaults */
    "sell_c=4,sell_sigma=1 hyb_k=0 bsr_r=2,bsr_c=3 ss_seg=1 sell16_c=8,sell16_sigma=256 sdia_c=4",
    "sell_c=3,sell_sigma=5 hyb_k=2 ell_k=9 bsr_r=3 ss_seg=4 dia_max_fill=100 sell16_c=3,sell16_sigma=5 sdia_c=3,sdia_max_fill=1000",
    "sell_c=1,sell_sigma=2 hyb_k=1 bsr_r=1,bsr_c=5 ss_seg=8 sell16_c=1,sell16_sigma=1 sdia_c=1,sdia_max_fill=1",
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

static void check_all(const spx_csr *a, const char *what, int nvariants, tally *t) {
  int v, f, d;
  for (d = 0; d < 2; d++) {
    spx_csr *c = NULL;
    if (spx_csr_copy(a, d ? SPX_FLOAT : SPX_DOUBLE, &c)) fail_msg("copy: %s", spx_last_error());
    for (v = 0; v < nvariants; v++) {
      spx_format_params p;
      spx_format_params_default(&p);
      if (spx_format_params_parse(&p, variants[v])) fail_msg("params: %s", spx_last_error());
      for (f = 0; f < spx_format_count(); f++) {
        /* ell_k = 9 is below some test rows' length: that failure is tested elsewhere. */
        if (f == SPX_FORMAT_ELL && p.ell_k != SPX_AUTO) {
          int64_t i, longest = 0;
          for (i = 0; i < c->nrows; i++)
            if (c->row_ptr[i + 1] - c->row_ptr[i] > longest) longest = c->row_ptr[i + 1] - c->row_ptr[i];
          if (longest > p.ell_k || (c->ncols == 0 && p.ell_k > 0)) continue;
        }
        if (f == SPX_FORMAT_HYB && p.hyb_k > 0 && p.hyb_k != SPX_AUTO && c->ncols == 0) continue;
        check_format(c, (spx_format)f, &p, what, t);
      }
    }
    spx_csr_destroy(c);
  }
}

/* ---- Tests ------------------------------------------------------------------------------------ */

static void test_registry(void **state) {
  int f;
  spx_format id;
  (void)state;
  assert_int_equal(spx_format_count(), SPX_FORMAT_COUNT + 1); /* + DIA */
  assert_int_equal((int)dia_id, SPX_FORMAT_COUNT);
  for (f = 0; f < spx_format_count(); f++) {
    const spx_format_vtable *vt = spx_format_info((spx_format)f);
    assert_non_null(vt);
    assert_string_equal(spx_format_name((spx_format)f), vt->name);
    assert_int_equal(spx_format_from_name(vt->name, &id), SPX_OK);
    assert_int_equal((int)id, f);
    assert_true(vt->layout->nscalars >= 3 && vt->layout->narrays >= 1);
    assert_string_equal(vt->layout->scalars[0].name, "nrows");
    assert_string_equal(vt->layout->scalars[2].name, "nnz");
    assert_true(strlen(vt->description) > 5 && strlen(vt->cost) > 3);
  }
  assert_string_equal(spx_format_name(SPX_FORMAT_RBP_ELL_R), "rbp_ell_r");
  assert_int_equal(spx_format_from_name("RBP-CSR", &id), SPX_OK);
  assert_int_equal(id, SPX_FORMAT_RBP_CSR);
  assert_int_equal(spx_format_from_name("nosuch", &id), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "sell"));
  assert_string_equal(spx_format_name((spx_format)999), "unknown");
  assert_null(spx_format_info((spx_format)-1));
  /* Registering twice, or a broken vtable, is refused. */
  assert_int_equal(spx_format_register(spx_format_info(SPX_FORMAT_ELL), &id), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "already"));
  assert_int_equal(spx_format_register(NULL, &id), SPX_INVALID_ARGUMENT);
  assert_int_equal(dia_register(&id), SPX_OK); /* idempotent */
  assert_int_equal((int)id, (int)dia_id);
}

static void test_params(void **state) {
  spx_format_params p;
  spx_csr *a;
  spx_fmt *m = (spx_fmt *)1;
  const double d[] = {1, 2, 3, 0, 4, 0, 0, 0, 5};
  (void)state;
  spx_format_params_default(&p);
  assert_true(p.ell_k == SPX_AUTO && p.sell_c == SPX_AUTO && p.bsr_c == SPX_AUTO && p.ext[0] == SPX_AUTO);
  assert_int_equal(spx_format_params_parse(&p, "sell_c=8, sell_sigma=auto\thyb_k=0"), SPX_OK);
  assert_true(p.sell_c == 8 && p.sell_sigma == SPX_AUTO && p.hyb_k == 0);
  assert_int_equal(spx_format_params_set(&p, "dia_max_fill", 3), SPX_OK);
  assert_int_equal(p.ext[0], 3);
  /* Out-of-range values, unknown names and junk are refused with the name in the message. */
  assert_int_equal(spx_format_params_set(&p, "sell_c", 0), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "sell_c = 0"));
  assert_int_equal(spx_format_params_set(&p, "hyb_k", -1), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "hyb_k = -1"));
  assert_int_equal(spx_format_params_set(&p, "bsr_r", 0), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_format_params_set(&p, "ell_k", -5), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_format_params_set(&p, "nosuch_k", 1), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "sell_sigma"));
  assert_int_equal(spx_format_params_parse(&p, "sell_c=abc"), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_format_params_parse(&p, "sell_c"), SPX_INVALID_ARGUMENT);
  /* Bad values written into the struct directly are caught by the conversion. */
  a = from_dense(3, 3, d, SPX_DOUBLE);
  spx_format_params_default(&p);
  p.sell_c = 0;
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SELL, &p, &m), SPX_INVALID_ARGUMENT);
  assert_null(m);
  assert_non_null(strstr(spx_last_error(), "sell_c = 0"));
  spx_format_params_default(&p);
  p.hyb_k = -3;
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_HYB, &p, &m), SPX_INVALID_ARGUMENT);
  spx_format_params_default(&p);
  p.ell_k = 2; /* row 0 has 3 entries */
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_ELL, &p, &m), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "longest row"));
  spx_format_params_default(&p);
  p.ss_seg = 6;
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SS, &p, &m), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "power of two"));
  spx_format_params_default(&p);
  p.bsr_c = 65;
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_BSR, &p, &m), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_fmt_from_csr(a, (spx_format)77, NULL, &m), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_fmt_from_csr(NULL, SPX_FORMAT_CSR, NULL, &m), SPX_INVALID_ARGUMENT);
  /* DIA refuses what it would store badly, with a sentence. */
  spx_format_params_default(&p);
  assert_int_equal(spx_format_params_set(&p, "dia_max_fill", 1), SPX_OK);
  assert_int_equal(spx_fmt_from_csr(a, dia_id, &p, &m), SPX_UNSUPPORTED);
  assert_non_null(strstr(spx_last_error(), "dia_max_fill"));
  spx_csr_destroy(a);
  { /* BSR merges sorted rows: an unsorted row or a column outside [0, ncols) is a status, not a
     * crash; also -1 and a column past ncols inside the last 2-wide block (3 columns) */
    static const int32_t c0[4] = {3, 1, -1, 1}, c1[4] = {0, 7, 0, 3};
    int bad;
    for (bad = 0; bad < 4; bad++) {
      assert_int_equal(spx_csr_create(4, bad == 3 ? 3 : 4, 4, SPX_DOUBLE, &a), SPX_OK);
      a->row_ptr[1] = 2; a->row_ptr[2] = 3; a->row_ptr[3] = 4; a->row_ptr[4] = 4;
      a->col_idx[0] = c0[bad]; a->col_idx[1] = c1[bad]; a->col_idx[2] = 1; a->col_idx[3] = 2;
      a->val.d[0] = a->val.d[1] = a->val.d[2] = a->val.d[3] = 1;
      spx_format_params_default(&p);
      p.bsr_r = 2;
      assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_BSR, &p, &m), SPX_INVALID_ARGUMENT);
      assert_non_null(strstr(spx_last_error(), "strictly increasing"));
      assert_null(m);
      assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_BSR, NULL, &m), SPX_INVALID_ARGUMENT); /* auto sizes */
      spx_csr_destroy(a);
    }
  }
}

/* Small matrices with every awkward shape the issue lists. */
static void test_edge_cases(void **state) {
  tally t = {0, 0, 0};
  int64_t i, j;
  double *d = (double *)calloc(40 * 40, sizeof *d);
  spx_csr *a;
  (void)state;
  /* empty matrices of every shape */
  a = from_triplets(0, 0, 0, NULL, NULL, NULL, SPX_DOUBLE); check_all(a, "0x0", NVARIANTS, &t); spx_csr_destroy(a);
  a = from_triplets(0, 5, 0, NULL, NULL, NULL, SPX_DOUBLE); check_all(a, "0x5", NVARIANTS, &t); spx_csr_destroy(a);
  a = from_triplets(5, 0, 0, NULL, NULL, NULL, SPX_DOUBLE); check_all(a, "5x0", NVARIANTS, &t); spx_csr_destroy(a);
  a = from_triplets(7, 7, 0, NULL, NULL, NULL, SPX_DOUBLE); check_all(a, "all rows empty", NVARIANTS, &t); spx_csr_destroy(a);
  /* 1x1, full and empty */
  d[0] = 2.5; a = from_dense(1, 1, d, SPX_DOUBLE); check_all(a, "1x1", NVARIANTS, &t); spx_csr_destroy(a);
  a = from_triplets(1, 1, 0, NULL, NULL, NULL, SPX_DOUBLE); check_all(a, "1x1 empty", NVARIANTS, &t); spx_csr_destroy(a);
  /* one dense row among short and empty ones, 11 rows (not a multiple of C = 4 or 3) */
  memset(d, 0, 40 * 40 * sizeof *d);
  for (j = 0; j < 40; j++) d[2 * 40 + j] = 1 + 0.5 * spx_test_rand();
  for (i = 0; i < 11; i++)
    if (i % 3) d[i * 40 + (i * 7) % 40] = spx_test_rand() + 3;
  a = from_dense(11, 40, d, SPX_DOUBLE); check_all(a, "dense row", NVARIANTS, &t); spx_csr_destroy(a);
  /* rectangular, tall and wide, random with runs and isolated entries */
  memset(d, 0, 40 * 40 * sizeof *d);
  for (i = 0; i < 40 * 40; i++) if (spx_test_rand() > 0.6) d[i] = spx_test_rand() + 2;
  a = from_dense(40, 7, d, SPX_DOUBLE); check_all(a, "tall 40x7", NVARIANTS, &t); spx_csr_destroy(a);
  a = from_dense(7, 40, d, SPX_DOUBLE); check_all(a, "wide 7x40", NVARIANTS, &t); spx_csr_destroy(a);
  a = from_dense(40, 40, d, SPX_DOUBLE); check_all(a, "40x40", NVARIANTS, &t); spx_csr_destroy(a);
  /* explicit zeros and -0.0 as entries, including rows whose only entry is one (on the padding
   * column of an empty row), next to empty rows */
  {
    const int32_t r[] = {0, 0, 1, 3, 4, 4, 4, 6, 7};
    const int32_t c[] = {0, 1, 1, 3, 2, 3, 4, 6, 0};
    const double v[] = {0.0, -0.0, 0.0, -0.0, 1.0, 0.0, -0.0, 5.0, 0.0};
    a = from_triplets(9, 8, 9, r, c, v, SPX_DOUBLE);
    check_all(a, "explicit zeros", NVARIANTS, &t);
    spx_csr_destroy(a);
  }
  free(d);
  print_message("edge cases: %lld checks, %lld failures, %lld declined (dia; sell16 on wide matrices; sdia past its fill limit)\n", (long long)t.checks,
                (long long)t.failures, (long long)t.declined);
  assert_int_equal(t.failures, 0);
  assert_true(t.checks > 1000);
}

/* The paper's worked example, Figure 3 of papers/000. The figure itself is an image the text copy
 * lacks; this 8 x 8 matrix is rebuilt from every fact the text states about it: row 0 holds
 * "a, b, c, d" at columns 0-3 and "e, f" at 6-7 (Comp_Columns 0, 3, 6, 7), so row 1 starts at
 * Comp_Values[6] and Comp_Columns[4]; there are 8 blocks; "g, l, s" are the isolated nonzeros,
 * g in row 1 (RowPtr starts 0, 0, 1); row 5 has no run. Letters run in row order a .. x. */
static spx_csr *figure3(spx_dtype t) {
  static const int32_t r[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 6, 6, 7, 7, 7};
  static const int32_t c[] = {0, 1, 2, 3, 6, 7, 0, 2, 3, 1, 2, 5, 2, 3, 4, 3, 4, 5, 7, 5, 6, 5, 6, 7};
  double v[24];
  int k;
  for (k = 0; k < 24; k++) v[k] = 1 + k; /* a = 1, b = 2, ... */
  return from_triplets(8, 8, 24, r, c, v, t);
}

static void test_rbp_figure3(void **state) {
  int d;
  (void)state;
  for (d = 0; d < 2; d++) {
    spx_dtype t = d ? SPX_FLOAT : SPX_DOUBLE;
    spx_csr *a = figure3(t);
    spx_rbp_paper q;
    spx_fmt *m;
    const spx_fmt_rbp_csr *s;
    const spx_fmt_rbp_ell *e;
    int64_t vb = (int64_t)SPX_DTYPE_SIZE(t);
    const int32_t rowptr[] = {0, 0, 1, 2, 2, 2, 3, 3, 3}, comp_col[] = {0, 3, 6, 7, 2, 3};
    assert_int_equal(spx_rbp_paper_bytes(a, &q), SPX_OK);
    assert_int_equal(q.n, 8); assert_int_equal(q.nz, 24); assert_int_equal(q.k, 6);
    assert_int_equal(q.nnon, 3); assert_int_equal(q.nval, 21); assert_int_equal(q.ncol, 16);
    assert_int_equal(q.nblocks, 8); assert_int_equal(q.kv, 6); assert_int_equal(q.kc, 4);
    /* (1)-(4) by hand, with 8-byte values for double as the paper */
    assert_int_equal(q.csr, vb * 24 + 4 * 24 + 4 * 9);                       /* 324 */
    assert_int_equal(q.ell, (vb + 4) * 8 * 6);                              /* 576 */
    assert_int_equal(q.rbp_csr, 12 * 9 + 4 * 16 + vb * 21 + 4 * 3 + vb * 3); /* 376 */
    assert_int_equal(q.rbp_ell, vb * 8 * 6 + 4 * 8 * 4 + (vb + 4) * 3 + 4 * 9); /* 584 */
    if (t == SPX_DOUBLE) {
      assert_int_equal(q.csr, 324); assert_int_equal(q.ell, 576);
      assert_int_equal(q.rbp_csr, 376); assert_int_equal(q.rbp_ell, 584);
    }
    /* The arrays are the paper's. */
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_RBP_CSR, NULL, &m), SPX_OK);
    s = (const spx_fmt_rbp_csr *)m->impl;
    assert_int_equal(spx_fmt_bytes(m), q.rbp_csr);
    assert_memory_equal(s->row_ptr, rowptr, sizeof rowptr);
    assert_memory_equal(s->comp_col, comp_col, sizeof comp_col);
    assert_int_equal(s->val_ptr[1], 6);
    assert_int_equal(s->col_ptr[1], 4);
    assert_true(vec_get(s->comp_val.p, 5, t) == 6.0);   /* f */
    assert_true(vec_get(s->csr_val.p, 0, t) == 7.0);    /* g */
    assert_true(vec_get(s->csr_val.p, 1, t) == 12.0);   /* l */
    assert_true(vec_get(s->csr_val.p, 2, t) == 19.0);   /* s */
    assert_int_equal(s->val_ptr[5], s->val_ptr[6]);     /* row 5: no block */
    spx_fmt_destroy(m);
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_RBP_ELL, NULL, &m), SPX_OK);
    e = (const spx_fmt_rbp_ell *)m->impl;
    assert_int_equal(spx_fmt_bytes(m), q.rbp_ell);
    assert_int_equal(e->kv, 6); assert_int_equal(e->kc, 4);
    assert_int_equal(e->comp_col[0], 0); assert_int_equal(e->comp_col[8], 3);     /* row 0 block 0 */
    assert_int_equal(e->comp_col[16], 6); assert_int_equal(e->comp_col[24], 7);   /* row 0 block 1 */
    assert_int_equal(e->comp_col[1 + 16], 1); assert_int_equal(e->comp_col[1 + 24], 0); /* row 1: padding pair */
    spx_fmt_destroy(m);
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_RBP_ELL_R, NULL, &m), SPX_OK);
    assert_int_equal(spx_fmt_bytes(m), q.rbp_ell + 4 * 8);
    spx_fmt_destroy(m);
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &m), SPX_OK);
    assert_int_equal(spx_fmt_bytes(m), q.csr);
    spx_fmt_destroy(m);
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_ELL, NULL, &m), SPX_OK);
    assert_int_equal(spx_fmt_bytes(m), q.ell);
    spx_fmt_destroy(m);
    spx_csr_destroy(a);
  }
}

/* Accumulates RBP's bytes relative to CSR and ELL, and checks our exact bytes are the formulas. */
typedef struct rbp_sum {
  int n;
  double csr, ell; /* sums of rbp_csr / csr and rbp_ell / ell */
} rbp_sum;

static void rbp_bytes_match(const spx_csr *a, const char *what, rbp_sum *sum) {
  spx_rbp_paper q;
  const spx_format f[4] = {SPX_FORMAT_CSR, SPX_FORMAT_ELL, SPX_FORMAT_RBP_CSR, SPX_FORMAT_RBP_ELL};
  int64_t want[4];
  int i;
  assert_int_equal(spx_rbp_paper_bytes(a, &q), SPX_OK);
  want[0] = q.csr; want[1] = q.ell; want[2] = q.rbp_csr; want[3] = q.rbp_ell;
  for (i = 0; i < 4; i++) {
    spx_fmt *m;
    if (spx_fmt_from_csr(a, f[i], NULL, &m)) fail_msg("%s: %s", what, spx_last_error());
    if (spx_fmt_bytes(m) != want[i])
      fail_msg("%s: %s holds %lld bytes, the paper's formula says %lld", what, spx_format_name(f[i]),
               (long long)spx_fmt_bytes(m), (long long)want[i]);
    spx_fmt_destroy(m);
  }
  if (sum && q.csr > 0 && q.ell > 0) {
    sum->n++;
    sum->csr += (double)q.rbp_csr / (double)q.csr;
    sum->ell += (double)q.rbp_ell / (double)q.ell;
  }
}

/* Every format x every shared matrix x {double, float}. */
static void test_shared_matrices(void **state) {
  spx_test_entry *e;
  int n = spx_test_manifest(&e), i, used = 0;
  tally t = {0, 0, 0};
  rbp_sum sum = {0, 0, 0};
  double t0 = now();
  (void)state;
  if (n == 0) { print_message("no MANIFEST.tsv under %s\n", spx_test_matrix_dir()); skip(); }
  for (i = 0; i < n; i++) {
    char path[1024];
    spx_csr *a = NULL;
    if (!strcmp(e[i].field, "complex")) continue; /* the reader refuses complex values */
    spx_test_matrix_path(e[i].name, path, sizeof path);
    if (spx_mm_read(path, SPX_DOUBLE, &a, NULL)) fail_msg("%s: %s", e[i].name, spx_last_error());
    /* Defaults everywhere, the parameter variants on every fourth matrix (time). */
    check_all(a, e[i].name, i % 4 == 0 ? NVARIANTS : 1, &t);
    rbp_bytes_match(a, e[i].name, &sum);
    spx_csr_destroy(a);
    used++;
  }
  free(e);
  print_message("shared matrices: %d matrices, %lld checks, %lld failures, %lld declined (dia; sell16 on wide matrices; sdia past its fill limit), %.1f s\n", used,
                (long long)t.checks, (long long)t.failures, (long long)t.declined, now() - t0);
  print_message("RBP bytes (double), mean over %d matrices: rbp_csr/csr = %.3f, rbp_ell/ell = %.3f\n", sum.n,
                sum.csr / sum.n, sum.ell / sum.n);
  assert_int_equal(t.failures, 0);
  assert_true(used >= n - 1);
}

/* A FEM matrix with 3 unknowns per node: RBP pays, BSR picks 3 x 3 blocks. */
static void test_elasticity(void **state) {
  spx_csr *a;
  spx_rbp_paper q;
  spx_fmt *m;
  tally t = {0, 0, 0};
  (void)state;
  assert_int_equal(spx_gen_elasticity3d(6, 5, 4, SPX_DOUBLE, &a), SPX_OK);
  rbp_bytes_match(a, "elasticity3d", NULL);
  assert_int_equal(spx_rbp_paper_bytes(a, &q), SPX_OK);
  print_message("elasticity3d 6x5x4 (%lld rows, %lld nnz): rbp_csr/csr = %.3f, rbp_ell/ell = %.3f "
                "(Nnon %lld, Kv %lld, Kc %lld, K %lld)\n", (long long)q.n, (long long)q.nz,
                (double)q.rbp_csr / (double)q.csr, (double)q.rbp_ell / (double)q.ell, (long long)q.nnon,
                (long long)q.kv, (long long)q.kc, (long long)q.k);
  assert_true(q.rbp_csr < q.csr && q.rbp_ell < q.ell);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_BSR, NULL, &m), SPX_OK);
  assert_int_equal(spx_fmt_scalar(m, "r"), 3);
  assert_int_equal(spx_fmt_scalar(m, "c"), 3);
  spx_fmt_destroy(m);
  check_all(a, "elasticity3d", 1, &t);
  assert_int_equal(t.failures, 0);
  spx_csr_destroy(a);
}

/* Dump, arrays, kernel arguments with device pointers, and validation catching corruption. */
static void test_generic_ops(void **state) {
  spx_csr *a = figure3(SPX_DOUBLE);
  spx_fmt *m;
  spx_kernel_args ka;
  const void *dev[SPX_KERNEL_ARGS_MAX];
  char buf[8192];
  FILE *f = tmpfile();
  size_t got;
  int i;
  (void)state;
  assert_non_null(f);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_ELL, NULL, &m), SPX_OK);
  assert_int_equal(spx_fmt_dump(m, f, 4), SPX_OK);
  rewind(f);
  got = fread(buf, 1, sizeof buf - 1, f);
  buf[got] = 0;
  fclose(f);
  assert_non_null(strstr(buf, "ell (ELLPACK"));
  assert_non_null(strstr(buf, "param  ell_k = auto"));
  assert_non_null(strstr(buf, "scalar k = 6"));
  assert_non_null(strstr(buf, "array  col[nrows * k = 48] int32: 0 0 1 2 ..."));
  for (i = 0; i < SPX_KERNEL_ARGS_MAX; i++) dev[i] = (const void *)(uintptr_t)(0x1000 * (i + 1));
  assert_int_equal(spx_fmt_kernel_args(m, dev, &ka), SPX_OK);
  assert_int_equal(ka.count, 6);                       /* nrows ncols nnz k col val */
  assert_int_equal(ka.size[3], 4);                     /* k is int32 */
  assert_int_equal(*(const int32_t *)ka.ptrs[3], 6);
  assert_int_equal(*(const int64_t *)ka.ptrs[0], 8);
  assert_true(*(const void *const *)ka.ptrs[5] == dev[1]);
  /* Corruptions: an entry after padding, padding without the mark, a column out of range. */
  {
    spx_fmt_ell *s = (spx_fmt_ell *)m->impl;
    int32_t keep = s->col[1];
    s->col[1] = 99;
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    s->col[1] = keep;
    assert_int_equal(spx_fmt_validate(m), SPX_OK);
    s->val.d[8 * 5 + 1] = 0.0; /* row 1's last slot: +0.0 is not padding */
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
  }
  spx_fmt_destroy(m);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_RBP_CSR, NULL, &m), SPX_OK);
  {
    spx_fmt_rbp_csr *s = (spx_fmt_rbp_csr *)m->impl;
    s->comp_col[1] = 4; /* block [0, 4] now touches... and overlaps nothing but spans 5 values */
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    s->comp_col[1] = 3;
    s->csr_col[0] = 1; /* g next to h's block [2, 3]: not maximal */
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "maximal"));
  }
  spx_fmt_destroy(m);
  spx_fmt_destroy(NULL);
  assert_int_equal(spx_fmt_validate(NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_fmt_spmv(NULL, 1, NULL, 0, NULL), SPX_INVALID_ARGUMENT);
  spx_csr_destroy(a);
}

/* SELL16: offsets rebuild SELL's columns exactly, 2 bytes per slot, sigma chosen by bytes, a slice
 * wider than 65536 columns declined with a sentence, corrupt offsets caught by validate. */
/* SDIA on a 7-point Poisson whose x-lines are exactly one slice: 3 diagonals on every line, one
 * more for each neighbouring line in y and z that exists; no column array, so fewer bytes than
 * SELL16. A row-permutation matrix (each row its own offset) is refused with the limit named. */
static void test_sdia(void **state) {
  spx_csr *a, *perm;
  spx_fmt *m, *m16;
  int32_t r[64], c[64];
  double v[64];
  int k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(32, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SDIA, NULL, &m), SPX_OK);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SELL16, NULL, &m16), SPX_OK);
  {
    spx_fmt_sdia *e = (spx_fmt_sdia *)m->impl;
    int32_t keep;
    assert_int_equal(e->c, 32);
    assert_int_equal(e->nslices, 400);
    assert_int_equal(e->ndiags, 3 * 400 + 4 * 19 * 20);
    assert_int_equal(e->slice_ptr[1] - e->slice_ptr[0], 5); /* line y = z = 0: 0, +-1, +nx, +nx*ny */
    assert_int_equal(e->off[0], -1);
    assert_int_equal(e->off[4], 32 * 20);
    assert_int_equal(spx_fmt_bytes(m), 4 * 401 + 4 * e->ndiags + 8 * 32 * e->ndiags);
    assert_true(spx_fmt_bytes(m) < spx_fmt_bytes(m16));
    /* Corruptions validate must catch: offsets out of order, an entry outside the matrix. */
    keep = e->off[1];
    e->off[1] = e->off[0];
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "not increasing"));
    e->off[1] = keep;
    e->val.d[0] = 1.0; /* row 0 on diagonal -1: column -1 */
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "outside"));
  }
  spx_fmt_destroy(m);
  spx_fmt_destroy(m16);
  spx_csr_destroy(a);
  for (k = 0; k < 64; k++) { r[k] = k; c[k] = (k * 37) % 64; v[k] = k + 1; }
  perm = from_triplets(64, 64, 64, r, c, v, SPX_DOUBLE);
  assert_int_equal(spx_fmt_from_csr(perm, SPX_FORMAT_SDIA, NULL, &m), SPX_UNSUPPORTED);
  assert_non_null(strstr(spx_last_error(), "sdia_max_fill = 4"));
  spx_csr_destroy(perm);
}

static void test_sell16(void **state) {
  spx_csr *a, *w;
  spx_fmt *m, *ms;
  spx_format_params p;
  const int32_t r[] = {0, 1, 2}, c[] = {0, 70000, 5};
  const double v[] = {1, 2, 3};
  int64_t q;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SELL16, NULL, &m), SPX_OK);
  {
    const spx_fmt_sell16 *e = (const spx_fmt_sell16 *)m->impl;
    const spx_fmt_sell *se;
    assert_int_equal(e->sigma, 1); /* every row 4..7 long in x-runs: sorting would not pay for perm */
    spx_format_params_default(&p);
    p.sell_sigma = 1;
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SELL, &p, &ms), SPX_OK);
    se = (const spx_fmt_sell *)ms->impl;
    assert_int_equal(e->nslots, se->nslots);
    for (q = 0; q < e->nslices; q++) {
      int64_t k;
      for (k = e->slice_ptr[q]; k < e->slice_ptr[q + 1]; k++)
        assert_int_equal(e->cbase[q] + (int32_t)e->col[k], se->col[k]);
    }
    /* 2 bytes saved per slot over SELL's int32 columns, 4 spent per slice on its base. */
    assert_int_equal(spx_fmt_bytes(ms) - spx_fmt_bytes(m), 2 * e->nslots - 4 * e->nslices);
    spx_fmt_destroy(ms);
  }
  {
    spx_fmt_sell16 *e = (spx_fmt_sell16 *)m->impl;
    int32_t keep = e->cbase[3];
    uint16_t k0 = e->col[0];
    /* Corruptions that validate must catch: a base past the last column, an offset past it. */
    assert_int_equal(spx_fmt_validate(m), SPX_OK);
    e->cbase[3] = (int32_t)a->ncols;
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "base column"));
    e->cbase[3] = keep;
    e->col[0] = 65535;
    assert_int_equal(spx_fmt_validate(m), SPX_INVALID_ARGUMENT);
    e->col[0] = k0;
    assert_int_equal(spx_fmt_validate(m), SPX_OK);
  }
  spx_fmt_destroy(m);
  spx_csr_destroy(a);
  /* Rows 0 and 1 are narrow alone but 70000 columns apart: c = 1 fits, c = 2 does not. */
  w = from_triplets(3, 70001, 3, r, c, v, SPX_DOUBLE);
  spx_format_params_default(&p);
  p.sell16_c = 1;
  assert_int_equal(spx_fmt_from_csr(w, SPX_FORMAT_SELL16, &p, &m), SPX_OK);
  spx_fmt_destroy(m);
  p.sell16_c = 2;
  assert_int_equal(spx_fmt_from_csr(w, SPX_FORMAT_SELL16, &p, &m), SPX_UNSUPPORTED);
  assert_null(m);
  assert_non_null(strstr(spx_last_error(), "slice 0 uses columns 0..70000"));
  spx_csr_destroy(w);
  /* Power-law rows: sorting in windows saves far more padding than perm costs. */
  assert_int_equal(spx_gen_powerlaw(4000, 2.0, 1, 300, 7, SPX_FLOAT, &a), SPX_OK);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_SELL16, NULL, &m), SPX_OK);
  assert_int_equal(((const spx_fmt_sell16 *)m->impl)->sigma, 256);
  spx_fmt_destroy(m);
  spx_csr_destroy(a);
}

/* NaN and Inf values survive the round trip bit for bit and reach y as they do in CSR. */
static void test_nonfinite(void **state) {
  const int32_t r[] = {0, 0, 1, 2}, c[] = {0, 2, 1, 2};
  const double v[] = {NAN, 1.0, INFINITY, -2.0};
  const double x[] = {1, 1, 1};
  spx_csr *a = from_triplets(3, 3, 4, r, c, v, SPX_DOUBLE), *b;
  int f;
  (void)state;
  for (f = 0; f < spx_format_count(); f++) {
    spx_fmt *m;
    double y[3];
    if (spx_fmt_from_csr(a, (spx_format)f, NULL, &m)) fail_msg("%s: %s", spx_format_name((spx_format)f), spx_last_error());
    assert_int_equal(spx_fmt_spmv(m, 1.0, x, 0.0, y), SPX_OK);
    assert_true(y[0] != y[0] && y[1] == INFINITY && y[2] == -2.0);
    assert_int_equal(spx_fmt_to_csr(m, &b), SPX_OK);
    assert_memory_equal(a->val.d, b->val.d, 4 * sizeof(double));
    spx_csr_destroy(b);
    spx_fmt_destroy(m);
  }
  spx_csr_destroy(a);
}

/* Every converter gets its CSR checked first: row pointers out of order or past nnz, columns
 * outside the matrix are a status naming spx_fmt_from_csr, never an out-of-bounds read (the
 * clang_san build watches). BSR names a bad column in its own words, as its device converter
 * does. spx_rbp_paper_bytes checks the same. */
static void test_invalid_csr(void **state) {
  static const int32_t r[] = {0, 0, 1, 1, 1, 2, 3, 4, 5, 5}, c[] = {0, 1, 1, 2, 3, 2, 3, 4, 4, 5};
  static const double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  spx_rbp_paper o;
  int f, k;
  (void)state;
  for (f = 0; f < spx_format_count(); f++) {
    spx_csr *a = from_triplets(6, 6, 10, r, c, v, SPX_DOUBLE);
    for (k = 0; k < 4; k++) {
      spx_fmt *m = (spx_fmt *)&m;
      const char *want = "spx_fmt_from_csr: CSR: row_ptr[2]";
      spx_status s;
      if (k == 0) a->col_idx[3] = INT32_MAX; /* row 1 */
      if (k == 1) a->col_idx[3] = -2;
      if (k == 2) a->row_ptr[2] = a->nnz + 3;
      if (k == 3) a->row_ptr[2] = a->row_ptr[1] - 1;
      if (k < 2) want = f == SPX_FORMAT_BSR ? "bsr: a row's columns" : "spx_fmt_from_csr: CSR: row 1 has column";
      s = spx_fmt_from_csr(a, (spx_format)f, NULL, &m);
      if (s != SPX_INVALID_ARGUMENT || m || !strstr(spx_last_error(), want))
        fail_msg("%s, case %d: %s \"%s\", want \"%s\"", spx_format_name((spx_format)f), k, spx_status_string(s),
                 s ? spx_last_error() : "", want);
      if (f == 0) {
        assert_int_equal(spx_rbp_paper_bytes(a, &o), SPX_INVALID_ARGUMENT);
        assert_non_null(strstr(spx_last_error(), "spx_rbp_paper_bytes: CSR: row"));
      }
      a->col_idx[3] = 2;
      a->row_ptr[2] = 5;
    }
    spx_csr_destroy(a);
  }
}

/* ---- DIA through the tuner and on the GPU (the out-of-tree format's kernel and model) ---------- */

/* A GPU as the model sees it, by hand: round numbers, no calibration, no gathers, one SM (one round
 * of blocks), so that each price below is a formula of the bytes and the walk. */
static void gpu_like_device(spx_plan_device *d) {
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "test gpu");
  d->bandwidth_gbs = 1000; /* 1e6 bytes per microsecond */
  d->launch_us = 4;
  d->imbalance_weight = 0.5;
  d->x_miss = 0.25;
  d->cache_bytes = 4 << 20;
  d->warp = 32;
  d->cusparse_factor = 1.1;
  d->convert_ns_per_byte = 1;
  d->convert_ns_per_nnz = 1;
  d->chain_ns = 100;
  d->sms = 1;
}

/* The candidate of format f among c[0 .. n), or NULL. */
static const spx_plan_candidate *cand_of(const spx_plan_candidate *c, int n, spx_format f) {
  int k;
  for (k = 0; k < n; k++)
    if (c[k].format == f && c[k].engine == SPX_PLAN_ENGINE_SPX) return &c[k];
  return NULL;
}

/* The tuner prices the registered DIA by its model (dia.h: the predictor's bytes, padded lanes, a
 * walk of ndiag steps), not by converting; declines where the converter would; and takes the safe
 * guess back when the model is taken away. */
static void test_dia_tuner(void **state) {
  /* tridiagonal 8 x 8 plus a(0,5): diagonals -1, 0, 1, 5; 23 nonzeros; longest row 3 */
  double dense[64];
  spx_csr *a, *af, *anti;
  spx_plan_device dev;
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  const spx_plan_candidate *cd, *ce;
  spx_format_model bad;
  spx_fmt *m;
  int n, i;
  int32_t r[50], col[50];
  double v[50];
  (void)state;
  memset(dense, 0, sizeof dense);
  for (i = 0; i < 8; i++) {
    dense[i * 8 + i] = 4;
    if (i > 0) dense[i * 8 + i - 1] = -1;
    if (i < 7) dense[i * 8 + i + 1] = -1;
  }
  dense[5] = 0.5;
  a = from_dense(8, 8, dense, SPX_DOUBLE);
  assert_int_equal(a->nnz, 23);
  gpu_like_device(&dev);
  assert_int_equal(spx_plan_model(a, &dev, 1000, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_non_null(cd = cand_of(c, n, dia_id));
  assert_non_null(ce = cand_of(c, n, SPX_FORMAT_ELL));
  /* 4 offsets of 4 bytes, 4 x 8 slots of 8: predicted (bytes_exact 0), equal to the conversion's */
  assert_int_equal(cd->bytes, 4 * 4 + 8 * 4 * 8);
  assert_int_equal(cd->bytes_exact, 0);
  assert_int_equal(cd->fits, 1);
  assert_true(fabs(cd->padding - 32.0 / 23.0) < 1e-12);
  assert_int_equal(spx_fmt_from_csr(a, dia_id, NULL, &m), SPX_OK);
  assert_int_equal(spx_fmt_bytes(m), cd->bytes);
  spx_fmt_destroy(m);
  /* the streaming price: one launch + (bytes + x and y) at 1e6 bytes/us, no idle lanes (PADDED) */
  assert_true(fabs(cd->stream_us - (4 + (272.0 + 8 * (8 + 8)) / 1e6)) < 1e-9);
  /* the walk: ndiag = 4 steps of 100 ns (ELL walks its longest row, 3, at its registry line's
   * factor); no floor measured, so the prediction is the launch and the walk after it */
  assert_true(fabs(cd->chain_us - 0.4) < 1e-12);
  assert_true(fabs(ce->chain_us - 0.3 * spx_test_walk_factor(SPX_FORMAT_ELL)) < 1e-12);
  assert_true(fabs(cd->predicted_us - (dev.launch_us + cd->chain_us)) < 1e-12 && cd->predicted_us > cd->stream_us);
  assert_true(cd->score_us > cd->predicted_us);
  /* float: 4-byte slots */
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
  assert_int_equal(spx_plan_model(af, &dev, 1000, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_non_null(cd = cand_of(c, n, dia_id));
  assert_int_equal(cd->bytes, 4 * 4 + 4 * 4 * 8);
  spx_csr_destroy(af);
  /* the anti-diagonal: 50 diagonals of one entry, 2500 slots for 50 nonzeros (over 20 per nonzero):
   * declined by the model, as by the converter, with the model's note */
  for (i = 0; i < 50; i++) { r[i] = i; col[i] = 49 - i; v[i] = 1 + i; }
  anti = from_triplets(50, 50, 50, r, col, v, SPX_DOUBLE);
  assert_int_equal(spx_plan_model(anti, &dev, 1000, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_non_null(cd = cand_of(c, n, dia_id));
  assert_int_equal(cd->fits, 0);
  assert_true(cd->predicted_us < 0);
  assert_non_null(strstr(cd->note, "declined: the diagonals exceed dia_max_fill"));
  m = (spx_fmt *)1;
  assert_int_equal(spx_fmt_from_csr(anti, dia_id, NULL, &m), SPX_UNSUPPORTED);
  spx_clear_error();
  spx_csr_destroy(anti);
  /* without its model DIA is the safe guess: converted to learn its bytes, a walk of the longest row */
  assert_int_equal(spx_format_set_model(dia_id, NULL), SPX_OK);
  assert_int_equal(spx_plan_model(a, &dev, 1000, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_non_null(cd = cand_of(c, n, dia_id));
  assert_int_equal(cd->bytes, 272);
  assert_int_equal(cd->bytes_exact, 1);
  assert_true(fabs(cd->chain_us - 0.3) < 1e-12);
  assert_int_equal(spx_format_set_model(dia_id, &dia_model), SPX_OK);
  assert_int_equal(spx_plan_model(a, &dev, 1000, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_int_equal(cand_of(c, n, dia_id)->bytes_exact, 0);
  /* refused: an in-tree format (its model is its registry line), an unknown id, fields out of range */
  assert_int_equal(spx_format_set_model(SPX_FORMAT_ELL, &dia_model), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "SPX_FORMATS"));
  assert_int_equal(spx_format_set_model((spx_format)(SPX_FORMAT_MAX + 1), &dia_model), SPX_INVALID_ARGUMENT);
  bad = dia_model; bad.lanes = (spx_format_lanes)9;
  assert_int_equal(spx_format_set_model(dia_id, &bad), SPX_INVALID_ARGUMENT);
  bad = dia_model; bad.launches = 0;
  assert_int_equal(spx_format_set_model(dia_id, &bad), SPX_INVALID_ARGUMENT);
  bad = dia_model; bad.predict = NULL; /* SPX_WALK_STEPS needs the predictor's steps */
  assert_int_equal(spx_format_set_model(dia_id, &bad), SPX_INVALID_ARGUMENT);
  spx_clear_error();
  assert_int_equal(spx_plan_model(a, &dev, 1000, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_int_equal(cand_of(c, n, dia_id)->bytes_exact, 0); /* the refusals changed nothing */
  spx_csr_destroy(a);
}

/* DIA's kernel: its template is in the JIT (added by dia_register, once), its spec names it, and
 * NVRTC compiles it where NVRTC loads (no GPU needed). */
static void test_dia_kernel(void **state) {
  const char *src = NULL;
  size_t size = 0;
  uint64_t hash = 0;
  spx_csr *a, *af;
  spx_fmt *m;
  spx_kernel_plan kp;
  int compiled, cached, t;
  (void)state;
  assert_int_equal(spx_format_has_kernel(dia_id), 1);
  assert_int_equal(spx_jit_template_source("dia", &src, &size, &hash), SPX_OK);
  assert_string_equal(src, dia_kernel_source);
  assert_int_equal(size, strlen(dia_kernel_source));
  assert_true(hash != 0);
  assert_int_equal(spx_jit_template_add("dia", dia_kernel_source), SPX_OK); /* the same again: no change */
  assert_int_equal(spx_jit_template_add("dia", "// another source"), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "another source"));
  assert_int_equal(spx_jit_template_add("ell", "// x"), SPX_INVALID_ARGUMENT); /* embedded */
  assert_int_equal(spx_jit_template_add("Dia-2", "// x"), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_jit_template_add(NULL, "// x"), SPX_INVALID_ARGUMENT);
  spx_clear_error();
  assert_int_equal(spx_gen_poisson3d(10, 10, 10, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_copy(a, SPX_FLOAT, &af), SPX_OK);
  for (t = 0; t < 2; t++) {
    assert_int_equal(spx_fmt_from_csr(t ? af : a, dia_id, NULL, &m), SPX_OK);
    assert_int_equal(spx_dmatrix_plan(m, NULL, &kp), SPX_OK);
    assert_int_equal(kp.nlaunch, 1);
    assert_string_equal(kp.launch[0].template_name, "dia");
    assert_string_equal(kp.launch[0].kernel, "dia_spmv");
    assert_int_equal(kp.launch[0].grid[0], (1000 + 255) / 256);
    assert_int_equal(kp.launch[0].block[0], 256);
    assert_non_null(strstr(kp.summary, "7 diagonals"));
    if (spx_test_have_nvrtc()) {
      if (spx_dmatrix_warm(m, NULL, "sm_90", &compiled, &cached)) fail_msg("dia kernel: %s", spx_last_error());
      assert_int_equal(compiled + cached, 1);
    }
    spx_fmt_destroy(m);
  }
  spx_csr_destroy(a);
  spx_csr_destroy(af);
}

/* y = alpha A x + beta y of plan p on the GPU (x and y of the plan's dtype) against the host CSR's,
 * as relative error; y starts at y0 (beta != 0 reads it). */
static double gpu_plan_error(spx_context *g, spx_plan *p, const spx_csr *a, double alpha, double beta) {
  int64_t n = a->nrows, mc = a->ncols, i, vb = spx_plan_dtype(p) == SPX_DOUBLE ? 8 : 4;
  double *x = malloc((size_t)mc * 8), *y = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8), err;
  void *buf = malloc((size_t)(mc > n ? mc : n) * 8);
  spx_devptr dx, dy;
  assert_true(x && y && yr && buf);
  spx_test_fill(x, mc);
  spx_test_fill(yr, n);
  for (i = 0; i < mc; i++) { /* in the plan's dtype; the reference takes x as the device has it */
    if (vb == 4) ((float *)buf)[i] = (float)x[i], x[i] = ((float *)buf)[i];
    else ((double *)buf)[i] = x[i];
  }
  assert_int_equal(spx_device_alloc(g, (size_t)(mc * vb), &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)(n * vb), &dy), SPX_OK);
  assert_int_equal(spx_device_upload(g, dx, buf, (size_t)(mc * vb)), SPX_OK);
  for (i = 0; i < n; i++) {
    if (vb == 4) ((float *)buf)[i] = (float)yr[i], yr[i] = ((float *)buf)[i];
    else ((double *)buf)[i] = yr[i];
  }
  assert_int_equal(spx_device_upload(g, dy, buf, (size_t)(n * vb)), SPX_OK);
  assert_int_equal(spx_plan_spmv(p, alpha, (const void *)(uintptr_t)dx, beta, (void *)(uintptr_t)dy), SPX_OK);
  assert_int_equal(spx_device_download(g, buf, dy, (size_t)(n * vb)), SPX_OK);
  for (i = 0; i < n; i++) y[i] = vb == 4 ? (double)((float *)buf)[i] : ((double *)buf)[i];
  assert_int_equal(spx_csr_spmv(a, alpha, x, beta, yr), SPX_OK); /* a in double, x and y0 as the device had them */
  err = spx_test_relerr(y, yr, n);
  spx_device_free(g, dx); spx_device_free(g, dy);
  free(x); free(y); free(yr); free(buf);
  return err;
}

/* On the GPU: a plan forced to DIA runs dia.h's own kernel (compiled from its added template) and
 * gives the host's y, in double and float, beta 0 and not; and the model strategy prices DIA from
 * its predictor among the candidates. Skipped without a GPU. */
static void test_gpu_dia(void **state) {
  spx_context *g = NULL;
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  spx_csr *mats[2];
  double dense[64];
  int k, t, i, n;
  (void)state;
  if (spx_device_count() < 1 || spx_context_create(&co, &g) != SPX_OK) {
    spx_clear_error();
    skip();
  }
  memset(dense, 0, sizeof dense);
  for (i = 0; i < 8; i++) {
    dense[i * 8 + i] = 4;
    if (i > 0) dense[i * 8 + i - 1] = -1;
    if (i < 7) dense[i * 8 + i + 1] = -1;
  }
  dense[5] = 0.5;
  mats[0] = from_dense(8, 8, dense, SPX_DOUBLE);
  assert_int_equal(spx_gen_poisson3d(24, 24, 24, 7, SPX_DOUBLE, &mats[1]), SPX_OK);
  for (k = 0; k < 2; k++)
    for (t = 0; t < 2; t++) {
      spx_plan_options o;
      spx_plan *p = NULL;
      spx_fmt *m = NULL;
      spx_csr *use = mats[k];
      const spx_dmatrix *dm;
      double tol = t ? 1e-5 : 1e-12, e0, e1;
      spx_plan_options_default(&o);
      o.force = "dia";
      o.no_tiered_jit = 1; /* the DIA kernel from the first SpMV, not a stand-in while it compiles */
      o.eager = 1;
      o.dtype = t ? SPX_FLOAT : SPX_DOUBLE;
      if (spx_plan_create(g, mats[k], &o, &p)) fail_msg("forced dia: %s", spx_last_error());
      assert_int_equal((int)spx_plan_format(p), (int)dia_id);
      assert_int_equal(spx_plan_engine_of(p), SPX_PLAN_ENGINE_SPX);
      assert_non_null(dm = spx_plan_dmatrix(p));
      /* dia.h's kernel, specialized: no "(generic ...)" or "(compiling)" after the spec's summary */
      if (!strstr(spx_dmatrix_describe(dm), "dia: dia_spmv") || strstr(spx_dmatrix_describe(dm), " ("))
        fail_msg("the dia plan runs %s", spx_dmatrix_describe(dm));
      if (t) assert_int_equal(spx_csr_copy(mats[k], SPX_FLOAT, &use), SPX_OK);
      assert_int_equal(spx_fmt_from_csr(use, dia_id, NULL, &m), SPX_OK);
      assert_int_equal(spx_dmatrix_bytes(dm), spx_fmt_bytes(m)); /* the arrays of the host conversion */
      spx_fmt_destroy(m);
      if (t) spx_csr_destroy(use);
      e0 = gpu_plan_error(g, p, mats[k], 2.0, 0.0);
      e1 = gpu_plan_error(g, p, mats[k], -1.5, 0.5);
      if (e0 > tol || e1 > tol) fail_msg("dia on the GPU (%s, %s): relative error %g, %g", k ? "poisson" : "8 x 8",
                                         t ? "float" : "double", e0, e1);
      spx_plan_destroy(p);
    }
  { /* the model strategy: DIA among the candidates, priced from its predictor */
    spx_plan_options o;
    spx_plan *p = NULL;
    spx_fmt *m = NULL;
    const spx_plan_candidate *c, *cd;
    spx_plan_options_default(&o);
    o.strategy = SPX_PLAN_MODEL;
    o.expected_calls = 1000000; /* the column profile pays: DIA's predictor reads columns */
    if (spx_plan_create(g, mats[1], &o, &p)) fail_msg("model plan: %s", spx_last_error());
    c = spx_plan_candidates(p, &n);
    assert_non_null(cd = cand_of(c, n, dia_id));
    assert_int_equal(spx_fmt_from_csr(mats[1], dia_id, NULL, &m), SPX_OK);
    assert_int_equal(cd->bytes, spx_fmt_bytes(m));
    assert_int_equal(cd->bytes_exact, 0);
    assert_true(cd->fits && cd->predicted_us > 0);
    spx_fmt_destroy(m);
    spx_plan_destroy(p);
  }
  spx_csr_destroy(mats[0]);
  spx_csr_destroy(mats[1]);
  spx_context_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry),    cmocka_unit_test(test_params),
      cmocka_unit_test(test_edge_cases),  cmocka_unit_test(test_rbp_figure3),
      cmocka_unit_test(test_generic_ops), cmocka_unit_test(test_nonfinite),
      cmocka_unit_test(test_elasticity),  cmocka_unit_test(test_sell16), cmocka_unit_test(test_sdia),
      cmocka_unit_test(test_shared_matrices), cmocka_unit_test(test_invalid_csr),
      cmocka_unit_test(test_dia_tuner),   cmocka_unit_test(test_dia_kernel), cmocka_unit_test(test_gpu_dia),
  };
  if (dia_register(&dia_id)) {
    fprintf(stderr, "registering dia: %s\n", spx_last_error());
    return 1;
  }
  print_message("seed %llu (SPX_TEST_SEED reproduces)\n", (unsigned long long)spx_test_seed());
  return cmocka_run_group_tests(tests, NULL, NULL);
}
