/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx_plan_create_device (spx/plan.h): plans made from a CSR that already lives on the
 * device. On the host: the argument checks and the host backend's SPX_NOT_AVAILABLE. On a GPU
 * (skipped without one): on generated and shared matrices, auto, every strategy and every forced
 * format with a device converter, csr and cusparse compute A x as the host CSR does (csr on the
 * kernel the host rule picks from the rows); the formats
 * converted on the host only are refused; Jacobi PCG takes as many iterations as on a plan made
 * from the host CSR forced to the same format; the caller's arrays are never written, and may be
 * freed once spx_plan_holds_dcsr says so; a malformed CSR is named. */
#define _POSIX_C_SOURCE 200809L
#include "spx_test.h"

/* The registry's device column (include/spx/internal/dmatrix.h), a test hook as test_cuda.c's. */
int spx__device_converts(int f);

/* A CSR uploaded for a plan: the device arrays and the host copies they were made from. */
typedef struct dev_csr {
  spx_dcsr d;
  int32_t *rp;      /* the 32-bit row pointers uploaded */
  const spx_csr *a; /* the host matrix (columns and values as uploaded) */
} dev_csr;

static void dev_upload(spx_context *g, const spx_csr *a, dev_csr *out) {
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  int64_t i;
  memset(out, 0, sizeof *out);
  out->a = a;
  out->rp = malloc((size_t)(a->nrows + 1) * sizeof *out->rp);
  assert_non_null(out->rp);
  for (i = 0; i <= a->nrows; i++) out->rp[i] = (int32_t)a->row_ptr[i];
  out->d.nrows = a->nrows; out->d.ncols = a->ncols; out->d.nnz = a->nnz; out->d.dtype = a->dtype;
  assert_int_equal(spx_device_alloc(g, (size_t)(a->nrows + 1) * 4, &out->d.row_ptr), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)a->nnz * 4, &out->d.col_idx), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)a->nnz * vb, &out->d.val), SPX_OK);
  assert_int_equal(spx_device_upload(g, out->d.row_ptr, out->rp, (size_t)(a->nrows + 1) * 4), SPX_OK);
  if (!a->nnz) return; /* the allocations are there all the same (1 byte each) */
  assert_int_equal(spx_device_upload(g, out->d.col_idx, a->col_idx, (size_t)a->nnz * 4), SPX_OK);
  assert_int_equal(spx_device_upload(g, out->d.val, a->val.p, (size_t)a->nnz * vb), SPX_OK);
}

static int64_t row_max(const spx_csr *a) {
  int64_t i, m = 0;
  for (i = 0; i < a->nrows; i++)
    if (a->row_ptr[i + 1] - a->row_ptr[i] > m) m = a->row_ptr[i + 1] - a->row_ptr[i];
  return m;
}

static void dev_free(spx_context *g, dev_csr *c) {
  spx_device_free(g, c->d.row_ptr); spx_device_free(g, c->d.col_idx); spx_device_free(g, c->d.val);
  free(c->rp);
  memset(c, 0, sizeof *c);
}

/* The caller's arrays still hold what was uploaded, to the bit. */
static void check_intact(spx_context *g, const dev_csr *c, const char *what) {
  const spx_csr *a = c->a;
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  int32_t *rp = malloc((size_t)(a->nrows + 1) * 4), *ci = malloc((size_t)a->nnz * 4 + 4);
  void *va = malloc((size_t)a->nnz * vb + vb);
  assert_true(rp && ci && va);
  assert_int_equal(spx_device_download(g, rp, c->d.row_ptr, (size_t)(a->nrows + 1) * 4), SPX_OK);
  if (a->nnz) {
    assert_int_equal(spx_device_download(g, ci, c->d.col_idx, (size_t)a->nnz * 4), SPX_OK);
    assert_int_equal(spx_device_download(g, va, c->d.val, (size_t)a->nnz * vb), SPX_OK);
  }
  if (memcmp(rp, c->rp, (size_t)(a->nrows + 1) * 4) || memcmp(ci, a->col_idx, (size_t)a->nnz * 4) ||
      memcmp(va, a->val.p, (size_t)a->nnz * vb))
    fail_msg("%s: the caller's device arrays changed", what);
  free(rp); free(ci); free(va);
}

/* y = A x on the plan (device vectors, y poisoned first) against the host CSR's; x random. */
static void check_spmv(spx_context *g, spx_plan *p, const spx_csr *a, const char *what) {
  const int64_t n = a->nrows, m = a->ncols;
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  const double tol = a->dtype == SPX_FLOAT ? 1e-5 : 1e-12;
  double *x = malloc((size_t)m * 8 + 8), *y = malloc((size_t)n * 8 + 8), *yr = malloc((size_t)n * 8 + 8);
  float *xf = malloc((size_t)m * 4 + 4), *yf = malloc((size_t)n * 4 + 4);
  spx_devptr dx = 0, dy = 0;
  int64_t i;
  assert_true(x && y && yr && xf && yf);
  spx_test_fill(x, m);
  for (i = 0; i < m; i++) xf[i] = (float)x[i];
  if (a->dtype == SPX_FLOAT)
    for (i = 0; i < m; i++) x[i] = (double)xf[i];
  assert_int_equal(spx_device_alloc(g, (size_t)m * vb + vb, &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)n * vb + vb, &dy), SPX_OK);
  assert_int_equal(spx_device_upload(g, dx, a->dtype == SPX_FLOAT ? (void *)xf : (void *)x, (size_t)m * vb), SPX_OK);
  assert_int_equal(spx_device_memset(g, dy, 0xff, (size_t)n * vb), SPX_OK);
  if (spx_plan_spmv(p, 1.0, (const void *)(uintptr_t)dx, 0.0, (void *)(uintptr_t)dy))
    fail_msg("%s: spmv: %s", what, spx_last_error());
  assert_int_equal(spx_device_download(g, a->dtype == SPX_FLOAT ? (void *)yf : (void *)y, dy, (size_t)n * vb), SPX_OK);
  if (a->dtype == SPX_FLOAT) {
    spx_csr *ad = NULL;
    for (i = 0; i < n; i++) y[i] = (double)yf[i];
    assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &ad), SPX_OK);
    assert_int_equal(spx_csr_spmv(ad, 1.0, x, 0.0, yr), SPX_OK);
    spx_csr_destroy(ad);
  } else {
    assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, yr), SPX_OK);
  }
  if (spx_test_relerr(y, yr, n) > tol)
    fail_msg("%s: %s gives relative error %g", what, spx_plan_reason(p), spx_test_relerr(y, yr, n));
  spx_device_free(g, dx); spx_device_free(g, dy);
  free(x); free(y); free(yr); free(xf); free(yf);
}

/* The plan's diagonal is the host pass's, to the bit. */
static void check_diag(const spx_plan *p, const spx_csr *a, const char *what) {
  const int64_t n = a->nrows < a->ncols ? a->nrows : a->ncols;
  double *d = malloc((size_t)n * 8 + 8), *want = calloc((size_t)n + 1, 8);
  int64_t i, k;
  assert_true(d && want);
  for (i = 0; i < n; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      if (a->col_idx[k] == i) want[i] = a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k];
  if (spx_plan_diagonal(p, d)) fail_msg("%s: diagonal: %s", what, spx_last_error());
  if (memcmp(d, want, (size_t)n * 8)) fail_msg("%s: the diagonal differs from the host's", what);
  free(d); free(want);
}

/* spx's CSR kernel on the caller's arrays is the one the host rule picks from the rows (lanes per
 * row widened, and long rows split, on a small matrix with a few long rows: lp_e226). */
static void check_csr_kernel(const spx_plan *p, const spx_csr *a, const char *what) {
  spx_fmt *m = NULL;
  spx_kernel_plan want;
  const char *got = spx_dmatrix_describe(spx_plan_dmatrix(p));
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &m), SPX_OK);
  assert_int_equal(spx_dmatrix_plan(m, NULL, &want), SPX_OK);
  if (strncmp(got, want.summary, strlen(want.summary)))
    fail_msg("%s: runs \"%s\", the host rule picks \"%s\"", what, got, want.summary);
  spx_fmt_destroy(m);
}

/* A plan of c (options o, force name or NULL), built and its compile waited for. */
static spx_plan *dev_plan(spx_context *g, const dev_csr *c, const spx_plan_options *o0, const char *force,
                          const char *what) {
  spx_plan_options o;
  spx_plan *p = NULL;
  if (o0) o = *o0;
  else spx_plan_options_default(&o);
  o.force = force;
  if (spx_plan_create_device(g, &c->d, &o, &p)) fail_msg("%s %s: %s", what, force ? force : "auto", spx_last_error());
  assert_non_null(p);
  return p;
}

/* ---- Host: arguments and the host backend -------------------------------------------------------- */
static void test_bad_arguments(void **state) {
  spx_context_options co = {SPX_BACKEND_HOST, 0};
  spx_context *h = NULL;
  spx_plan_options o;
  spx_dcsr d, b;
  spx_plan *p = (spx_plan *)(uintptr_t)1;
  (void)state;
  assert_int_equal(spx_context_create(&co, &h), SPX_OK);
  memset(&d, 0, sizeof d);
  d.nrows = d.ncols = 100; d.nnz = 460; d.dtype = SPX_DOUBLE;
  d.row_ptr = 0x10000; d.col_idx = 0x20000; d.val = 0x30000; /* never touched: refused before */
  assert_int_equal(spx_plan_create_device(h, &d, NULL, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_plan_create_device(h, NULL, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_null(p);
  assert_non_null(strstr(spx_last_error(), "NULL matrix"));
  assert_int_equal(spx_plan_create_device(NULL, &d, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "NULL context"));
  b = d; b.nrows = -1;
  assert_int_equal(spx_plan_create_device(h, &b, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "negative size"));
  b = d; b.nnz = (int64_t)INT32_MAX + 1;
  assert_int_equal(spx_plan_create_device(h, &b, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "below 2^31"));
  b = d; b.ncols = (int64_t)1 << 31;
  assert_int_equal(spx_plan_create_device(h, &b, NULL, &p), SPX_INVALID_ARGUMENT);
  b = d; b.dtype = (spx_dtype)7;
  assert_int_equal(spx_plan_create_device(h, &b, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "dtype 7"));
  b = d; b.col_idx = 0;
  assert_int_equal(spx_plan_create_device(h, &b, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "col_idx is a zero device pointer"));
  b = d; b.nnz = 0; b.val = 0; /* no nonzeros: still an allocation */
  assert_int_equal(spx_plan_create_device(h, &b, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "val is a zero device pointer"));
  spx_plan_options_default(&o);
  o.dtype = SPX_FLOAT;
  assert_int_equal(spx_plan_create_device(h, &d, &o, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "options.dtype float differs from the arrays' double"));
  spx_plan_options_default(&o);
  o.expected_calls = 0;
  assert_int_equal(spx_plan_create_device(h, &d, &o, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_plan_create_device: expected_calls = 0"));
  assert_null(p);
  /* everything right, but the host backend has no device memory */
  assert_int_equal(spx_plan_create_device(h, &d, NULL, &p), SPX_NOT_AVAILABLE);
  assert_null(p);
  assert_non_null(strstr(spx_last_error(), "host backend"));
  spx_plan_options_default(&o);
  o.dtype = SPX_DOUBLE; o.force = "ell";
  assert_int_equal(spx_plan_create_device(h, &d, &o, &p), SPX_NOT_AVAILABLE);
  assert_int_equal(spx_plan_holds_dcsr(NULL), 0);
  { /* a plan of a host CSR holds no device arrays */
    spx_csr *a = NULL;
    spx_plan *q = NULL;
    assert_int_equal(spx_gen_poisson3d(6, 6, 6, 7, SPX_DOUBLE, &a), SPX_OK);
    spx_plan_options_default(&o);
    o.no_calibrate = 1;
    assert_int_equal(spx_plan_create(h, a, &o, &q), SPX_OK);
    assert_int_equal(spx_plan_holds_dcsr(q), 0);
    spx_plan_destroy(q);
    spx_csr_destroy(a);
  }
  spx_context_destroy(h);
}

/* ---- GPU ------------------------------------------------------------------------------------------ */
#define NMAT 6
static const char *const mat_names[NMAT] = {"poisson7 32^3", "power-law 20000", "bcsstk16", "cage10", "lp_e226",
                                            "poisson7 16^3 float"};
static spx_csr *mat_make(int k) {
  spx_csr *a = NULL;
  switch (k) {
  case 0: assert_int_equal(spx_gen_poisson3d(32, 32, 32, 7, SPX_DOUBLE, &a), SPX_OK); break;
  case 1: assert_int_equal(spx_gen_powerlaw(20000, 2.0, 2, 300, 3, SPX_DOUBLE, &a), SPX_OK); break;
  case 5: assert_int_equal(spx_gen_poisson3d(16, 16, 16, 7, SPX_FLOAT, &a), SPX_OK); break;
  default: a = spx_test_shared(mat_names[k]);
  }
  return a;
}

/* Every forced format: those with a device converter (and csr, cusparse) compute A x from the
 * arrays, the others are refused; auto and every strategy compute it; the arrays are intact after
 * every plan; the diagonal is the host's. */
static void test_gpu_forced_and_strategies(void **state) {
  spx_context *g = spx_test_gpu_context();
  int k, f, st;
  (void)state;
  if (!g) skip();
  for (k = 0; k < NMAT; k++) {
    spx_csr *a = mat_make(k);
    dev_csr c;
    spx_plan *p;
    char what[96];
    dev_upload(g, a, &c);
    for (f = 0; f < SPX_FORMAT_COUNT; f++) {
      spx_plan_options o;
      spx_status s;
      const char *name = spx_format_name((spx_format)f);
      snprintf(what, sizeof what, "%s forced %s", mat_names[k], name);
      spx_plan_options_default(&o);
      o.force = name;
      o.eager = f % 2; /* lazy and eager builds both */
      p = NULL;
      s = spx_plan_create_device(g, &c.d, &o, &p);
      if (f != SPX_FORMAT_CSR && !spx__device_converts(f)) {
        if (s != SPX_UNSUPPORTED) fail_msg("%s: status %d, not SPX_UNSUPPORTED: %s", what, (int)s, spx_last_error());
        assert_null(p);
        assert_non_null(strstr(spx_last_error(), "converts on the host only"));
        continue;
      }
      if (s == SPX_UNSUPPORTED && (f == SPX_FORMAT_SELL16 || f == SPX_FORMAT_SDIA || f == SPX_FORMAT_BSR)) {
        /* the device converter declines this matrix (wide slices, too many diagonals) as the host's would */
        print_message("%s: declined: %s\n", what, spx_last_error());
        assert_null(p);
        continue;
      }
      if (s) fail_msg("%s: %s", what, spx_last_error());
      assert_int_equal((int)spx_plan_format(p), f);
      assert_int_equal(spx_plan_engine_of(p), SPX_PLAN_ENGINE_SPX);
      if (!o.eager) assert_int_equal(spx_plan_holds_dcsr(p), 1); /* not built yet: the build reads them */
      check_spmv(g, p, a, what);
      assert_int_equal(spx_plan_wait(p), SPX_OK);
      check_spmv(g, p, a, what);
      /* csr runs the arrays as they are; a conversion is done with them once built and waited for */
      assert_int_equal(spx_plan_holds_dcsr(p), f == SPX_FORMAT_CSR);
      if (f == SPX_FORMAT_CSR) {
        assert_int_equal(spx_plan_bytes(p), 4 * (a->nrows + 1) + (4 + (int64_t)SPX_DTYPE_SIZE(a->dtype)) * a->nnz);
        check_csr_kernel(p, a, what);
      }
      check_diag(p, a, what);
      spx_plan_destroy(p);
      check_intact(g, &c, what);
    }
    snprintf(what, sizeof what, "%s forced cusparse", mat_names[k]);
    p = dev_plan(g, &c, NULL, "cusparse", what);
    assert_int_equal(spx_plan_engine_of(p), SPX_PLAN_ENGINE_CUSPARSE);
    check_spmv(g, p, a, what);
    assert_int_equal(spx_plan_holds_dcsr(p), 1);
    check_diag(p, a, what);
    spx_plan_destroy(p);
    check_intact(g, &c, what);
    for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
      spx_plan_options o;
      const spx_plan_candidate *cand;
      int n, i;
      spx_plan_options_default(&o);
      o.strategy = (spx_plan_strategy)st;
      o.trial_reps = 5;
      snprintf(what, sizeof what, "%s %s", mat_names[k], spx_plan_strategy_name(o.strategy));
      p = dev_plan(g, &c, &o, NULL, what);
      print_message("%s: %s\n", what, spx_plan_reason(p));
      check_spmv(g, p, a, what);
      check_spmv(g, p, a, what);
      assert_int_equal(spx_plan_wait(p), SPX_OK);
      check_spmv(g, p, a, what);
      /* what the plan chose runs from the arrays: csr, cusparse or a device conversion */
      f = (int)spx_plan_format(p);
      assert_true(f == SPX_FORMAT_CSR || spx__device_converts(f));
      cand = spx_plan_candidates(p, &n);
      for (i = 0; i < n; i++) /* nothing priced that reads the host's column counts or converts on the host */
        if (cand[i].predicted_us >= 0 && cand[i].engine == SPX_PLAN_ENGINE_SPX && cand[i].format != SPX_FORMAT_CSR &&
            !spx__device_converts((int)cand[i].format))
          fail_msg("%s: %s is priced: %s", what, spx_format_name(cand[i].format), cand[i].note);
      assert_int_equal(spx_plan_analysis(p)->nnz, a->nnz);
      assert_int_equal(spx_plan_analysis(p)->row_max, row_max(a));
      spx_plan_destroy(p);
      check_intact(g, &c, what);
    }
    dev_free(g, &c);
    spx_csr_destroy(a);
  }
  spx_context_destroy(g);
}

/* The row statistics are the host's; a race, a trial and a deferred plan run from the arrays; the
 * caller frees its arrays once the converted plan is done with them, and it still computes A x. */
static void test_gpu_lifetimes(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a = NULL;
  spx_analysis an;
  spx_plan_options o;
  spx_plan *p, *ph;
  dev_csr c;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_powerlaw(300000, 2.0, 2, 5000, 5, SPX_DOUBLE, &a), SPX_OK); /* rows past the shared bins */
  dev_upload(g, a, &c);
  /* the analysis as the host's staged plan has it */
  spx_plan_options_default(&o);
  o.force = "csr";
  assert_int_equal(spx_plan_create(g, a, &o, &ph), SPX_OK);
  p = dev_plan(g, &c, &o, "csr", "analysis");
  an = *spx_plan_analysis(ph);
  assert_int_equal(spx_plan_analysis(p)->row_min, an.row_min);
  assert_int_equal(spx_plan_analysis(p)->row_max, an.row_max);
  assert_int_equal(spx_plan_analysis(p)->empty_rows, an.empty_rows);
  assert_true(spx_plan_analysis(p)->B == an.B && spx_plan_analysis(p)->R == an.R);
  spx_plan_destroy(p); spx_plan_destroy(ph);
  /* auto racing its best candidates over the first SpMVs, from the arrays */
  spx_plan_options_default(&o);
  o.expected_calls = 10000000; o.trial_gap = 100; o.eager = 1;
  p = dev_plan(g, &c, &o, NULL, "race");
  print_message("race: %s\n", spx_plan_reason(p));
  check_spmv(g, p, a, "race");
  check_spmv(g, p, a, "race");
  assert_int_equal(spx_plan_wait(p), SPX_OK);
  assert_int_equal(spx_plan_racing(p, NULL), 0);
  check_spmv(g, p, a, "race ended");
  spx_plan_destroy(p);
  /* the same as a trial in spx_plan_create */
  o.no_race = 1;
  p = dev_plan(g, &c, &o, NULL, "trial");
  check_spmv(g, p, a, "trial");
  check_diag(p, a, "trial");
  spx_plan_destroy(p);
  /* deferred: starts on the arrays as they are, converts them at the upgrade, then lets them go */
  spx_plan_options_default(&o);
  o.defer = 1; o.eager = 1;
  p = dev_plan(g, &c, &o, "jds", "defer"); /* ELL-R would pad every row to 5000 here */
  assert_int_equal(spx_plan_pending(p, NULL), 1);
  check_spmv(g, p, a, "deferred start");
  assert_int_equal(spx_plan_holds_dcsr(p), 1);
  assert_int_equal(spx_plan_upgrade(p), SPX_OK);
  assert_int_equal(spx_plan_pending(p, NULL), 0);
  assert_int_equal((int)spx_plan_format(p), SPX_FORMAT_JDS);
  assert_int_equal(spx_plan_wait(p), SPX_OK);
  assert_int_equal(spx_plan_holds_dcsr(p), 0);
  check_spmv(g, p, a, "upgraded");
  check_diag(p, a, "upgraded");
  spx_plan_destroy(p);
  check_intact(g, &c, "lifetimes");
  /* a converted plan, built and waited for, holds nothing: the caller frees (and the allocator
   * hands the memory out again, overwritten) and the plan still computes A x */
  {
    dev_csr c2;
    spx_devptr junk[3];
    int i;
    dev_upload(g, a, &c2);
    spx_plan_options_default(&o);
    o.eager = 1;
    p = dev_plan(g, &c2, &o, "sell", "freed");
    assert_int_equal(spx_plan_wait(p), SPX_OK);
    assert_int_equal(spx_plan_holds_dcsr(p), 0);
    dev_free(g, &c2);
    for (i = 0; i < 3; i++) {
      size_t bytes = i == 0 ? (size_t)(a->nrows + 1) * 4 : i == 1 ? (size_t)a->nnz * 4 : (size_t)a->nnz * 8;
      assert_int_equal(spx_device_alloc(g, bytes, &junk[i]), SPX_OK);
      assert_int_equal(spx_device_memset(g, junk[i], 0x7f, bytes), SPX_OK);
    }
    check_spmv(g, p, a, "arrays freed");
    check_diag(p, a, "arrays freed");
    spx_plan_destroy(p);
    for (i = 0; i < 3; i++) spx_device_free(g, junk[i]);
  }
  dev_free(g, &c);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* Jacobi PCG on device vectors: a plan made from the device arrays takes as many iterations as one
 * made from the host CSR forced to the same format (the same arrays and kernels), and converges. */
static void test_gpu_pcg_jacobi(void **state) {
  static const char *const forms[] = {"csr", "cusparse", "ell", "ell_r", "jds", "sell", "bsr"};
  spx_context *g = spx_test_gpu_context();
  spx_csr *a = NULL;
  dev_csr c;
  double *b;
  spx_devptr db = 0, dx = 0;
  size_t k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(40, 40, 40, 7, SPX_DOUBLE, &a), SPX_OK); /* staged by spx_plan_create too */
  dev_upload(g, a, &c);
  b = malloc((size_t)a->nrows * 8);
  assert_non_null(b);
  spx_test_fill(b, a->nrows);
  assert_int_equal(spx_device_alloc(g, (size_t)a->nrows * 8, &db), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)a->nrows * 8, &dx), SPX_OK);
  assert_int_equal(spx_device_upload(g, db, b, (size_t)a->nrows * 8), SPX_OK);
  for (k = 0; k < sizeof forms / sizeof *forms; k++) {
    spx_plan_options o;
    spx_solve_options so;
    spx_solve_report rh, rd;
    spx_plan *ph = NULL, *pd;
    spx_plan_options_default(&o);
    o.force = forms[k];
    if (spx_plan_create(g, a, &o, &ph)) fail_msg("host plan %s: %s", forms[k], spx_last_error());
    pd = dev_plan(g, &c, &o, forms[k], "pcg");
    spx_solve_options_default(&so);
    so.rtol = 1e-8; so.maxit = 2000;
    assert_int_equal(spx_device_memset(g, dx, 0, (size_t)a->nrows * 8), SPX_OK);
    if (spx_solve_pcg_jacobi(ph, (const void *)(uintptr_t)db, (void *)(uintptr_t)dx, &so, &rh))
      fail_msg("pcg on the host-made %s plan: %s", forms[k], spx_last_error());
    assert_int_equal(spx_device_memset(g, dx, 0, (size_t)a->nrows * 8), SPX_OK);
    if (spx_solve_pcg_jacobi(pd, (const void *)(uintptr_t)db, (void *)(uintptr_t)dx, &so, &rd))
      fail_msg("pcg on the device-made %s plan: %s", forms[k], spx_last_error());
    print_message("pcg %s: %lld iterations (host-made plan %lld), true residual %.3g\n", forms[k],
                  (long long)rd.iterations, (long long)rh.iterations, rd.true_rel_resid);
    if (rd.iterations != rh.iterations)
      fail_msg("pcg %s: %lld iterations on the device-made plan, %lld on the host-made one", forms[k],
               (long long)rd.iterations, (long long)rh.iterations);
    assert_true(rd.true_rel_resid < 1e-7);
    spx_plan_destroy(ph);
    spx_plan_destroy(pd);
    check_intact(g, &c, forms[k]);
  }
  spx_device_free(g, db); spx_device_free(g, dx);
  free(b);
  dev_free(g, &c);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* A malformed CSR is named (no plan, nothing leaked); a matrix without nonzeros runs csr; a
 * registered format (converted on the host) is no candidate and is refused when forced. */
static void test_gpu_malformed_and_edges(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a = NULL, *e = NULL;
  dev_csr c;
  spx_plan *p = NULL;
  spx_format id;
  spx_format_vtable vt;
  int k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  /* bad columns named by their row: a swap, a negative column, a repeated one (the last two past
   * a row's first column, which falls below the row before's last as every row's first does here:
   * a row start is no error) */
  for (k = 0; k < 6; k++) {
    static const char *const want[6] = {"row_ptr[0] is 1", "not nnz", "row 5: its columns", "row 7: row_ptr[7]",
                                        "row 9: its columns", "row 1200: its columns"};
    spx_csr *b = NULL;
    assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &b), SPX_OK);
    dev_upload(g, b, &c);
    if (k == 0) c.rp[0] = 1;
    if (k == 1) c.rp[b->nrows] = (int32_t)b->nnz - 1;
    if (k == 2) { int32_t t = b->col_idx[b->row_ptr[5]]; b->col_idx[b->row_ptr[5]] = b->col_idx[b->row_ptr[5] + 1]; b->col_idx[b->row_ptr[5] + 1] = t; }
    if (k == 3) c.rp[8] = c.rp[7] - 1; /* row 7 ends before it starts */
    if (k == 4) b->col_idx[b->row_ptr[9] + 1] = -1;
    if (k == 5) b->col_idx[b->row_ptr[1200] + 2] = b->col_idx[b->row_ptr[1200] + 1];
    assert_int_equal(spx_device_upload(g, c.d.row_ptr, c.rp, (size_t)(b->nrows + 1) * 4), SPX_OK);
    assert_int_equal(spx_device_upload(g, c.d.col_idx, b->col_idx, (size_t)b->nnz * 4), SPX_OK);
    p = (spx_plan *)(uintptr_t)1;
    assert_int_equal(spx_plan_create_device(g, &c.d, NULL, &p), SPX_INVALID_ARGUMENT);
    assert_null(p);
    if (!strstr(spx_last_error(), want[k])) fail_msg("malformed %d: \"%s\" does not say \"%s\"", k, spx_last_error(), want[k]);
    dev_free(g, &c);
    spx_csr_destroy(b);
  }
  /* no nonzeros: csr or cusparse, a conversion refused */
  assert_int_equal(spx_csr_create(1000, 1000, 0, SPX_DOUBLE, &e), SPX_OK);
  dev_upload(g, e, &c);
  p = dev_plan(g, &c, NULL, NULL, "empty");
  assert_int_equal(spx_plan_format(p), SPX_FORMAT_CSR);
  check_spmv(g, p, e, "empty");
  spx_plan_destroy(p);
  {
    spx_plan_options o;
    spx_plan_options_default(&o);
    o.force = "ell";
    assert_int_equal(spx_plan_create_device(g, &c.d, &o, &p), SPX_UNSUPPORTED);
    assert_non_null(strstr(spx_last_error(), "no nonzeros"));
  }
  dev_free(g, &c);
  spx_csr_destroy(e);
  /* a registered format with a kernel: not a candidate, refused when forced */
  vt = *spx_format_info(SPX_FORMAT_ELL);
  vt.name = "ell_copy_for_a_device_test";
  assert_int_equal(spx_format_register(&vt, &id), SPX_OK);
  assert_int_equal(spx_format_set_kernel(id, spx_test_ell_copy_spec), SPX_OK);
  dev_upload(g, a, &c);
  {
    spx_plan_options o;
    const spx_plan_candidate *cand;
    int n, i;
    spx_plan_options_default(&o);
    o.strategy = SPX_PLAN_MODEL;
    p = dev_plan(g, &c, &o, NULL, "registered");
    cand = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) assert_true((int)cand[i].format < SPX_FORMAT_COUNT);
    check_spmv(g, p, a, "registered");
    spx_plan_destroy(p);
    o.force = vt.name;
    assert_int_equal(spx_plan_create_device(g, &c.d, &o, &p), SPX_UNSUPPORTED);
    assert_non_null(strstr(spx_last_error(), "converts on the host only"));
  }
  check_intact(g, &c, "edges");
  dev_free(g, &c);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments),          cmocka_unit_test(test_gpu_forced_and_strategies),
      cmocka_unit_test(test_gpu_lifetimes),          cmocka_unit_test(test_gpu_pcg_jacobi),
      cmocka_unit_test(test_gpu_malformed_and_edges),
  };
  setenv("SPX_QUIET", "1", 0);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
