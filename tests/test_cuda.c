/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/cuda.h: every format that has a GPU kernel, on every shared matrix and on generated
 * ones, in double and float, against the host CSR reference. Without a GPU only the refusals run. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "spx_test.h"
#include "spx_test_env.h" /* env_put */

static spx_context *gpu;

static int setup(void **state) {
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  (void)state;
  if (spx_device_count() > 0 && spx_context_create(&o, &gpu) != SPX_OK) gpu = NULL;
  return 0;
}
static int teardown(void **state) {
  (void)state;
  spx_context_destroy(gpu);
  return 0;
}

/* Runs y = alpha*A*x + beta*y on the GPU through format f and compares with the host CSR result.
 * Returns 0 when the format declined the matrix (SPX_UNSUPPORTED), 1 when checked. */
static int check_one(const spx_csr *a64, spx_format f, spx_dtype dt, const spx_dmatrix_options *opt,
                     const char *what) {
  spx_csr *a = NULL, *ad = NULL;
  spx_fmt *m = NULL;
  spx_dmatrix *d = NULL;
  spx_devptr dx = 0, dy = 0;
  size_t vs = SPX_DTYPE_SIZE(dt);
  int64_t i, n = a64->nrows, nc = a64->ncols;
  double *x = malloc((size_t)(nc + 1) * sizeof *x), *y0 = malloc((size_t)(n + 1) * sizeof *y0);
  double *yr = malloc((size_t)(n + 1) * sizeof *yr), *yg = malloc((size_t)(n + 1) * sizeof *yg);
  void *hx = malloc((size_t)(nc + 1) * vs), *hy = malloc((size_t)(n + 1) * vs);
  double alpha = 1.0 + 0.5 * spx_test_rand(), beta = spx_test_rand();
  int pass, ok = 1;
  spx_status s;
  assert_true(x && y0 && yr && yg && hx && hy);
  assert_int_equal(spx_csr_copy(a64, dt, &a), SPX_OK);
  s = spx_fmt_from_csr(a, f, NULL, &m);
  if (s == SPX_UNSUPPORTED) { ok = 0; goto done; }
  if (s) fail_msg("%s %s: convert: %s", what, spx_format_name(f), spx_last_error());
  if ((s = spx_dmatrix_create(gpu, m, opt, &d)))
    fail_msg("%s %s %s: %s", what, spx_format_name(f), spx_dtype_name(dt), spx_last_error());
  spx_test_fill(x, nc);
  spx_test_fill(y0, n);
  for (i = 0; i < nc; i++) {
    if (dt == SPX_FLOAT) { ((float *)hx)[i] = (float)x[i]; x[i] = ((float *)hx)[i]; }
    else ((double *)hx)[i] = x[i];
  }
  for (i = 0; i < n; i++) {
    if (dt == SPX_FLOAT) { ((float *)hy)[i] = (float)y0[i]; y0[i] = ((float *)hy)[i]; }
    else ((double *)hy)[i] = y0[i];
  }
  assert_int_equal(spx_device_alloc(gpu, (size_t)(nc + 1) * vs, &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(gpu, (size_t)(n + 1) * vs, &dy), SPX_OK);
  assert_int_equal(spx_device_upload(gpu, dx, hx, (size_t)nc * vs), SPX_OK);
  /* The reference: CSR in double on the values and x the device sees (one copy for both passes). */
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &ad), SPX_OK);
  for (pass = 0; pass < 2; pass++) {
    double b = pass == 0 ? 0.0 : beta;
    for (i = 0; i < n; i++) yr[i] = y0[i];
    assert_int_equal(spx_csr_spmv(ad, alpha, x, b, yr), SPX_OK);
    if (pass == 0) assert_int_equal(spx_device_memset(gpu, dy, 0xff, (size_t)n * vs), SPX_OK); /* NaN */
    else assert_int_equal(spx_device_upload(gpu, dy, hy, (size_t)n * vs), SPX_OK);
    if ((s = spx_dmatrix_spmv(d, alpha, dx, b, dy)) || (s = spx_context_synchronize(gpu)))
      fail_msg("%s %s: spmv: %s", what, spx_format_name(f), spx_last_error());
    assert_int_equal(spx_device_download(gpu, hy, dy, (size_t)n * vs), SPX_OK);
    for (i = 0; i < n; i++) yg[i] = dt == SPX_FLOAT ? (double)((float *)hy)[i] : ((double *)hy)[i];
    if (spx_test_relerr(yg, yr, n) > (dt == SPX_FLOAT ? 1e-5 : 1e-12))
      fail_msg("%s: %s (%s) %s beta=%g: relative error %.3g", what, spx_format_name(f),
               spx_dmatrix_describe(d), spx_dtype_name(dt), b, spx_test_relerr(yg, yr, n));
    for (i = 0; i < n; i++) /* restore the host y for pass 1 */
      if (dt == SPX_FLOAT) ((float *)hy)[i] = (float)y0[i];
      else ((double *)hy)[i] = y0[i];
  }
done:
  spx_csr_destroy(ad);
  spx_device_free(gpu, dx);
  spx_device_free(gpu, dy);
  spx_dmatrix_destroy(d);
  spx_fmt_destroy(m);
  spx_csr_destroy(a);
  free(x); free(y0); free(yr); free(yg); free(hx); free(hy);
  return ok;
}

static void test_host_refuses(void **state) {
  spx_context_options o = {SPX_BACKEND_HOST, 0};
  spx_context *host;
  spx_csr *a;
  spx_fmt *m;
  spx_dmatrix *d = (spx_dmatrix *)1;
  (void)state;
  assert_int_equal(spx_context_create(&o, &host), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(4, 4, 4, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_ELL, NULL, &m), SPX_OK);
  assert_int_equal(spx_dmatrix_create(host, m, NULL, &d), SPX_NOT_AVAILABLE);
  assert_null(d);
  assert_int_equal(spx_dmatrix_create(NULL, m, NULL, &d), SPX_INVALID_ARGUMENT);
  spx_fmt_destroy(m);
  spx_csr_destroy(a);
  spx_context_destroy(host);
}

/* Every in-tree format has a kernel (formats added out of tree may not). */
static void test_every_format_has_a_kernel(void **state) {
  int f;
  (void)state;
  for (f = 0; f < SPX_FORMAT_COUNT; f++)
    if (!spx_format_has_kernel((spx_format)f)) fail_msg("format %s has no GPU kernel", spx_format_name((spx_format)f));
}

/* The plan of format f for a: asserts it exists and names templates the JIT table has. */
static spx_kernel_plan plan_of(const spx_csr *a, spx_format f, const spx_dmatrix_options *o) {
  spx_fmt *m;
  spx_kernel_plan p;
  int i;
  assert_int_equal(spx_fmt_from_csr(a, f, NULL, &m), SPX_OK);
  if (spx_dmatrix_plan(m, o, &p)) fail_msg("%s: %s", spx_format_name(f), spx_last_error());
  assert_true(p.nlaunch >= 1 && p.nlaunch <= 3);
  for (i = 0; i < p.nlaunch; i++) {
    const char *src;
    assert_int_equal(spx_jit_template_source(p.launch[i].template_name, &src, NULL, NULL), SPX_OK);
    assert_non_null(strstr(src, p.launch[i].kernel)); /* the kernel is in its template */
    assert_true(p.launch[i].grid[0] >= 1 && p.launch[i].block[0] >= 32 && p.launch[i].block[0] <= 1024);
  }
  spx_fmt_destroy(m);
  return p;
}

static int has_define(const spx_kernel_launch *l, const char *d) {
  int i;
  for (i = 0; i < l->ndefines; i++)
    if (!strcmp(l->defines[i], d)) return 1;
  return 0;
}

/* n rows of exactly w entries each (a band that wraps around): ELL's K and JDS's diagonals are w. */
static spx_csr *rows_of_width(int64_t n, int w) {
  int32_t *r = malloc(sizeof(int32_t) * (size_t)(n * w)), *c = malloc(sizeof(int32_t) * (size_t)(n * w));
  spx_csr *a = NULL;
  int64_t i, k = 0;
  int j;
  assert_true(r && c);
  for (i = 0; i < n; i++)
    for (j = 0; j < w; j++) { r[k] = (int32_t)i; c[k++] = (int32_t)((i + 3 * j) % n); }
  assert_int_equal(spx_csr_from_coo(n, n, k, r, c, NULL, SPX_DOUBLE, &a), SPX_OK);
  free(r); free(c);
  return a;
}

/* The shape constants go to buckets: every value up to 32, then eight per doubling; nearby widths
 * share one kernel (the same define list, so the same JIT key), exact_shape keeps the value. */
static void test_shape_buckets(void **state) {
  static const int width[] = {1, 7, 9, 25, 27, 32, 33, 36, 37, 40, 41, 47, 57, 64};
  static const int want[] = {1, 7, 9, 25, 27, 32, 36, 36, 40, 40, 44, 48, 60, 64};
  static const spx_format fmts[] = {SPX_FORMAT_ELL, SPX_FORMAT_JDS}; /* HYB's K is its own rule's */
  static const char *const cname[] = {"SPX_K", "SPX_NJD"};
  spx_dmatrix_options exact;
  size_t i, f;
  (void)state;
  memset(&exact, 0, sizeof exact);
  exact.exact_shape = 1;
  for (i = 0; i < sizeof width / sizeof *width; i++) {
    spx_csr *a = rows_of_width(600, width[i]);
    for (f = 0; f < sizeof fmts / sizeof *fmts; f++) {
      char d[48];
      spx_kernel_plan p = plan_of(a, fmts[f], NULL), q = plan_of(a, fmts[f], &exact);
      snprintf(d, sizeof d, "%s=%d", cname[f], want[i]);
      if (!has_define(&p.launch[0], d)) fail_msg("%s width %d: %s missing", spx_format_name(fmts[f]), width[i], d);
      snprintf(d, sizeof d, "%s=%d", cname[f], width[i]);
      if (!has_define(&q.launch[0], d)) fail_msg("%s width %d exact: %s missing", spx_format_name(fmts[f]), width[i], d);
    }
    spx_csr_destroy(a);
  }
  { /* 37 and 40 wide: one kernel */
    spx_csr *a = rows_of_width(600, 37), *b = rows_of_width(600, 40);
    for (f = 0; f < sizeof fmts / sizeof *fmts; f++) {
      spx_kernel_plan p = plan_of(a, fmts[f], NULL), q = plan_of(b, fmts[f], NULL);
      int k;
      assert_int_equal(p.launch[0].ndefines, q.launch[0].ndefines);
      for (k = 0; k < p.launch[0].ndefines; k++) assert_string_equal(p.launch[0].defines[k], q.launch[0].defines[k]);
    }
    spx_csr_destroy(a);
    spx_csr_destroy(b);
  }
}

/* The kernel choices, decided on the host, so CI (no GPU) checks them: every format plans kernels
 * its templates define; ELL specializes K; CSR picks threads per row from the row lengths, one
 * wide vector launch for small matrices with a few long rows, merge path for large skewed ones. */
static void test_kernel_plans(void **state) {
  spx_csr *poisson, *elast, *small_skew, *big_skew, *wide, *huge_row;
  spx_dmatrix_options o;
  spx_kernel_plan p;
  int f;
  int32_t r[1300], c[1300];
  (void)state;
  memset(&o, 0, sizeof o);
  assert_int_equal(spx_gen_poisson3d(10, 10, 10, 7, SPX_DOUBLE, &poisson), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(4, 4, 4, SPX_DOUBLE, &elast), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(200000, 2.2, 2, 2000, 3, SPX_DOUBLE, &big_skew), SPX_OK);
  assert_true(big_skew->nnz >= 100000);
  {
    int32_t *hr = malloc(sizeof(int32_t) * 205000), *hc = malloc(sizeof(int32_t) * 205000);
    int64_t k = 0;
    assert_true(hr && hc);
    for (f = 0; f < 200000; f++) { hr[k] = f; hc[k++] = f; }         /* a diagonal ... */
    for (f = 0; f < 5000; f++) { hr[k] = 9; hc[k++] = 20 * f + 1; }   /* ... and one 5000-long row */
    assert_int_equal(spx_csr_from_coo(200000, 200000, k, hr, hc, NULL, SPX_DOUBLE, &huge_row), SPX_OK);
    free(hr); free(hc);
  }
  for (f = 0; f < 1000; f++) { r[f] = f; c[f] = f; }                      /* a diagonal ... */
  for (f = 0; f < 300; f++) { r[1000 + f] = 7; c[1000 + f] = 3 * f + 1; } /* ... and one 300-long row */
  assert_int_equal(spx_csr_from_coo(1000, 1000, 1300, r, c, NULL, SPX_DOUBLE, &small_skew), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(2000, 1.2, 100, 120, 5, SPX_DOUBLE, &wide), SPX_OK); /* rows ~100 long */
  for (f = 0; f < SPX_FORMAT_COUNT; f++) {
    plan_of(poisson, (spx_format)f, NULL);
    if (f != SPX_FORMAT_SDIA) plan_of(small_skew, (spx_format)f, NULL); /* SDIA declines its 300 offsets */
  }
  p = plan_of(poisson, SPX_FORMAT_ELL, NULL);
  assert_string_equal(p.launch[0].kernel, "spx_ell_spmv");
  assert_true(has_define(&p.launch[0], "SPX_K=7"));
  p = plan_of(wide, SPX_FORMAT_ELL, NULL); /* K > 64: the run-time loop, no K constant */
  for (f = 0; f < p.launch[0].ndefines; f++) assert_null(strstr(p.launch[0].defines[f], "SPX_K="));
  p = plan_of(poisson, SPX_FORMAT_CSR, NULL);
  assert_string_equal(p.launch[0].kernel, "spx_csr_spmv");
  assert_true(has_define(&p.launch[0], "SPX_TPR=1"));
  for (f = 0; f < p.launch[0].ndefines; f++) assert_null(strstr(p.launch[0].defines[f], "SPX_SPLIT"));
  p = plan_of(elast, SPX_FORMAT_CSR, NULL); /* 4^3 elements: 50.7 per row; 50.7 / 5 -> 8 lanes */
  assert_true(has_define(&p.launch[0], "SPX_TPR=8"));
  p = plan_of(small_skew, SPX_FORMAT_CSR, NULL);
  assert_int_equal(p.nlaunch, 1);
  assert_string_equal(p.launch[0].kernel, "spx_csr_spmv");
  assert_true(has_define(&p.launch[0], "SPX_TPR=32"));
  assert_true(has_define(&p.launch[0], "SPX_SPLIT=8")); /* 300 > 8 steps of 32: the block sums it */
  { /* the split kernel compiles through NVRTC for sm_90, at 256 and 1024 threads */
    spx_fmt *m;
    int compiled = 0, cached = 0;
    spx_status s;
    assert_int_equal(spx_fmt_from_csr(small_skew, SPX_FORMAT_CSR, NULL, &m), SPX_OK);
    for (f = 256; f <= 1024; f *= 4) {
      o.block = f;
      s = spx_dmatrix_warm(m, &o, "sm_90", &compiled, &cached);
      if ((s != SPX_NOT_AVAILABLE || spx_test_have_nvrtc()) && s) fail_msg("warm csr split %d: %s", f, spx_last_error());
    }
    o.block = 0;
    spx_fmt_destroy(m);
  }
  p = plan_of(big_skew, SPX_FORMAT_CSR, NULL); /* short rows on average, none over 2048: CSR-stream */
  assert_string_equal(p.launch[0].kernel, "spx_csr_stream_spmv");
  o.stream = -1; /* without it, skewed rows go to merge path */
  p = plan_of(big_skew, SPX_FORMAT_CSR, &o);
  assert_string_equal(p.launch[p.nlaunch - 1].kernel, "spx_csr_lb_spmv");
  o.stream = 0;
  p = plan_of(huge_row, SPX_FORMAT_CSR, NULL); /* a 5000-long row would serialize a stream thread */
  assert_string_equal(p.launch[p.nlaunch - 1].kernel, "spx_csr_lb_spmv");
  p = plan_of(elast, SPX_FORMAT_CSR, NULL); /* 50 per row: the vector kernel, not stream */
  assert_string_equal(p.launch[0].kernel, "spx_csr_spmv");
  o.load_balance = 1;
  p = plan_of(small_skew, SPX_FORMAT_CSR, &o);
  assert_string_equal(p.launch[p.nlaunch - 1].kernel, "spx_csr_lb_spmv");
  o.load_balance = 0;
  o.stream = 1; /* forced: one thread block per SPX_BLOCK rows, 2048 products per chunk */
  p = plan_of(big_skew, SPX_FORMAT_CSR, &o);
  assert_string_equal(p.launch[0].kernel, "spx_csr_stream_spmv");
  assert_true(has_define(&p.launch[0], "SPX_NPT=8") && p.launch[0].grid[0] == (unsigned)((big_skew->nrows + 255) / 256));
  o.stream = 0;
  o.threads_per_row = 4;
  p = plan_of(big_skew, SPX_FORMAT_CSR, &o);
  assert_true(has_define(&p.launch[0], "SPX_TPR=4"));
  /* SELL and SELL16 unroll to the widest slice (7 on Poisson 7-point); each (and SDIA) compiles through NVRTC
   * for sm_90 with its plan's constants (no GPU needed; skipped where NVRTC is missing). */
  p = plan_of(poisson, SPX_FORMAT_SELL16, NULL);
  assert_string_equal(p.launch[0].kernel, "spx_sell16_spmv");
  assert_true(has_define(&p.launch[0], "SPX_WMAX=7") && has_define(&p.launch[0], "SPX_C=32"));
  p = plan_of(big_skew, SPX_FORMAT_SELL, NULL); /* slices up to 2000 wide: the run-time loop */
  for (f = 0; f < p.launch[0].ndefines; f++) assert_null(strstr(p.launch[0].defines[f], "SPX_WMAX="));
  /* SDIA: its widest slice (7 diagonals) unrolled, C fixed. */
  p = plan_of(poisson, SPX_FORMAT_SDIA, NULL);
  assert_string_equal(p.launch[0].kernel, "spx_sdia_spmv");
  assert_true(has_define(&p.launch[0], "SPX_WMAX=7") && has_define(&p.launch[0], "SPX_C=32"));
  for (f = 0; f < 3; f++) {
    static const spx_format warm[3] = {SPX_FORMAT_SELL, SPX_FORMAT_SELL16, SPX_FORMAT_SDIA};
    spx_fmt *m;
    int compiled = 0, cached = 0;
    spx_status s;
    assert_int_equal(spx_fmt_from_csr(poisson, warm[f], NULL, &m), SPX_OK);
    s = spx_dmatrix_warm(m, NULL, "sm_90", &compiled, &cached);
    /* without NVRTC the compile is SPX_NOT_AVAILABLE; with it (CI has it) anything else fails */
    if (s != SPX_NOT_AVAILABLE || spx_test_have_nvrtc()) {
      if (s) fail_msg("warm %s: %s", spx_format_name(warm[f]), spx_last_error());
      assert_int_equal(compiled + cached, 1);
    }
    spx_fmt_destroy(m);
  }
  spx_csr_destroy(poisson); spx_csr_destroy(elast); spx_csr_destroy(small_skew);
  spx_csr_destroy(big_skew); spx_csr_destroy(wide); spx_csr_destroy(huge_row);
}

static void test_generated(void **state) {
  spx_csr *g[4];
  const char *names[4] = {"poisson3d 7pt 20^3", "poisson3d 27pt 12^3", "elasticity3d 6^3", "powerlaw 5000"};
  int f, k, t;
  (void)state;
  if (!gpu) skip();
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &g[0]), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 27, SPX_DOUBLE, &g[1]), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(6, 6, 6, SPX_DOUBLE, &g[2]), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(5000, 2.0, 1, 500, 11, SPX_DOUBLE, &g[3]), SPX_OK);
  for (k = 0; k < 4; k++)
    for (f = 0; f < spx_format_count(); f++)
      for (t = 0; t < 2; t++)
        if (spx_format_has_kernel((spx_format)f))
          check_one(g[k], (spx_format)f, t ? SPX_FLOAT : SPX_DOUBLE, NULL, names[k]);
  for (k = 0; k < 4; k++) spx_csr_destroy(g[k]);
}

static void test_shared_matrices(void **state) {
  spx_test_entry *e;
  int ne = spx_test_manifest(&e), t, f, checked = 0;
  (void)state;
  if (!gpu) { free(e); skip(); }
  if (ne == 0) skip();
  for (t = 0; t < ne; t++) {
    char path[1024];
    spx_csr *a;
    if (!strcmp(e[t].field, "complex")) continue;
    spx_test_matrix_path(e[t].name, path, sizeof path);
    if (spx_mm_read(path, SPX_DOUBLE, &a, NULL)) fail_msg("%s: %s", e[t].name, spx_last_error());
    for (f = 0; f < spx_format_count(); f++)
      if (spx_format_has_kernel((spx_format)f)) {
        checked += check_one(a, (spx_format)f, SPX_DOUBLE, NULL, e[t].name);
        checked += check_one(a, (spx_format)f, SPX_FLOAT, NULL, e[t].name);
      }
    spx_csr_destroy(a);
  }
  free(e);
  print_message("checked %d (matrix, format, dtype) combinations on the GPU\n", checked);
  assert_true(checked > 100);
}

/* Row i's length in test_variants' CSR-stream matrix: per 256 rows, one of 1500, two of 900 in one
 * warp, twenty of 150 in another, the rest 6 (30 on average: CSR-stream). */
static int stream_row_len(int i) {
  const int b = i % 256;
  return b == 7 ? 1500 : (b == 40 || b == 45) ? 900 : (b >= 64 && b < 84) ? 150 : 6;
}

/* The generic (unspecialized) kernels and every CSR threads-per-row choice give the same result. */
static void test_variants(void **state) {
  spx_csr *a;
  spx_dmatrix_options o;
  int f, tpr;
  (void)state;
  if (!gpu) skip();
  assert_int_equal(spx_gen_powerlaw(3000, 1.8, 1, 300, 5, SPX_DOUBLE, &a), SPX_OK);
  memset(&o, 0, sizeof o);
  o.generic = 1;
  for (f = 0; f < spx_format_count(); f++)
    if (spx_format_has_kernel((spx_format)f)) check_one(a, (spx_format)f, SPX_DOUBLE, &o, "generic");
  o.generic = 0;
  o.load_balance = 1; /* the merge-path CSR kernel on a matrix the auto rule may not send to it */
  check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr lb");
  check_one(a, SPX_FORMAT_CSR, SPX_FLOAT, &o, "csr lb");
  o.load_balance = 0;
  /* CSR-stream forced, with 64, 256 and 1024 threads (32, 8 and 2 products per thread per chunk):
   * blocks of 256 rows here hold several chunks, and rows cross chunk boundaries. */
  o.stream = 1;
  for (tpr = 64; tpr <= 1024; tpr *= 4) {
    o.block = tpr;
    check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr stream");
    check_one(a, SPX_FORMAT_CSR, SPX_FLOAT, &o, "csr stream");
  }
  o.block = 0;
  o.stream = 0;
  for (tpr = 1; tpr <= 32; tpr *= 2) {
    o.threads_per_row = tpr;
    check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr tpr");
    check_one(a, SPX_FORMAT_CSR, SPX_FLOAT, &o, "csr tpr");
  }
  o.threads_per_row = 0;
  spx_csr_destroy(a);
  { /* small, with long rows the whole block sums (SPX_SPLIT): several in one block, one in the last
     * (partial) block, at 64, 256 and 1024 threads, and the generic kernel that goes without */
    static const int longrow[5] = {5, 6, 40, 2990, 2999}, len[5] = {300, 2000, 257, 1500, 2500};
    int32_t *r = malloc(sizeof(int32_t) * 12000), *c = malloc(sizeof(int32_t) * 12000);
    spx_kernel_plan p;
    spx_fmt *m;
    int64_t k = 0;
    int i, j;
    assert_true(r && c);
    for (i = 0; i < 3000; i++) { r[k] = i; c[k++] = i; }
    for (i = 0; i < 5; i++)
      for (j = 0; j < len[i]; j++) { r[k] = longrow[i]; c[k++] = (j * 7 + i) % 3000 == longrow[i] ? 2999 - j : (j * 7 + i) % 3000; }
    assert_int_equal(spx_csr_from_coo(3000, 3000, k, r, c, NULL, SPX_DOUBLE, &a), SPX_OK);
    free(r); free(c);
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &m), SPX_OK);
    assert_int_equal(spx_dmatrix_plan(m, NULL, &p), SPX_OK);
    assert_true(has_define(&p.launch[0], "SPX_SPLIT=8"));
    spx_fmt_destroy(m);
    if (gpu) {
      for (tpr = 64; tpr <= 1024; tpr *= 4) {
        o.block = tpr;
        check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr split");
        check_one(a, SPX_FORMAT_CSR, SPX_FLOAT, &o, "csr split");
      }
      o.block = 0;
      o.generic = 1;
      check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr split generic");
    }
    spx_csr_destroy(a);
  }
  { /* CSR-stream's warp-joint sums of long row pieces: rows of 6 with, per 256 rows, one of 1500
     * (a warp sums it), two of 900 in one warp (summed jointly), and twenty of 150 in another (too
     * many to share: serial); rows cross the chunks of 2048 products. At 64, 256 and 1024 threads
     * and a block of 48 (no warp sums), in both value types, and the auto rule picks CSR-stream. */
    const int n = 20000;
    int64_t k = 0, cap = 0;
    int32_t *r, *c;
    int i, j, len;
    spx_kernel_plan p;
    spx_fmt *m;
    for (i = 0; i < n; i++) cap += stream_row_len(i);
    r = malloc(sizeof(int32_t) * (size_t)cap);
    c = malloc(sizeof(int32_t) * (size_t)cap);
    assert_true(r && c);
    for (i = 0; i < n; i++) {
      len = stream_row_len(i);
      for (j = 0; j < len; j++) { r[k] = i; c[k++] = (int32_t)(((int64_t)i * 131 + (int64_t)j * 17) % n); }
    }
    assert_int_equal(spx_csr_from_coo(n, n, k, r, c, NULL, SPX_DOUBLE, &a), SPX_OK);
    free(r); free(c);
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &m), SPX_OK);
    assert_int_equal(spx_dmatrix_plan(m, NULL, &p), SPX_OK);
    assert_string_equal(p.launch[0].kernel, "spx_csr_stream_spmv");
    spx_fmt_destroy(m);
    if (gpu) {
      memset(&o, 0, sizeof o);
      check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr stream long");
      check_one(a, SPX_FORMAT_CSR, SPX_FLOAT, &o, "csr stream long");
      o.stream = 1;
      for (tpr = 48; tpr <= 1024; tpr = tpr == 48 ? 64 : tpr * 4) {
        o.block = tpr;
        check_one(a, SPX_FORMAT_CSR, SPX_DOUBLE, &o, "csr stream long");
        check_one(a, SPX_FORMAT_CSR, SPX_FLOAT, &o, "csr stream long");
      }
    }
    spx_csr_destroy(a);
  }
}

/* y from d on x (beta 0) downloaded as raw bytes into h (n * vs). */
static void spmv_bytes(spx_dmatrix *d, spx_devptr dx, spx_devptr dy, int64_t n, size_t vs, void *h) {
  assert_int_equal(spx_device_memset(gpu, dy, 0xff, (size_t)n * vs), SPX_OK);
  assert_int_equal(spx_dmatrix_spmv(d, 1.0, dx, 0.0, dy), SPX_OK);
  assert_int_equal(spx_device_download(gpu, h, dy, (size_t)n * vs), SPX_OK);
}

/* cuda_impl.h's test hook: device array i of d, in descriptor order (0 when empty). */
spx_devptr spx__dmatrix_array(const spx_dmatrix *d, int i);

/* The device arrays of d are, bit for bit, those spx_fmt_from_csr(a, f, fp) makes on the host. */
static void same_arrays(const spx_dmatrix *d, const spx_csr *a, spx_format f, const spx_format_params *fp,
                        const char *what, const char *params) {
  spx_fmt *m = NULL;
  spx_format_array arr[16];
  int i, n;
  assert_int_equal(spx_fmt_from_csr(a, f, fp, &m), SPX_OK);
  n = spx_fmt_arrays(m, arr, 16);
  assert_true(n <= 16);
  for (i = 0; i < n; i++) {
    size_t bytes = (size_t)arr[i].count * arr[i].elem_size, k;
    unsigned char *h;
    if (!bytes) continue;
    assert_non_null(h = malloc(bytes));
    assert_int_equal(spx_device_download(gpu, h, spx__dmatrix_array(d, i), bytes), SPX_OK);
    for (k = 0; k < bytes && h[k] == ((const unsigned char *)arr[i].host)[k]; k++) {}
    if (k < bytes)
      fail_msg("%s %s %s %s: array %s differs from the host's at element %lld of %lld", what, spx_format_name(f), params,
               spx_dtype_name(a->dtype), arr[i].name, (long long)(k / arr[i].elem_size), (long long)arr[i].count);
    free(h);
  }
  spx_fmt_destroy(m);
}

/* spx_dmatrix_convert on the device against the host converter + upload (SPX_DEVICE_CONVERT=0):
 * the same kernel plan (C, sigma, widest slice), the same bytes, the same arrays (downloaded) and
 * bit-identical y. Returns the combinations compared (0 when both declined, with the same status). */
static int convert_same(const spx_csr *a64, spx_format f, const char *params, spx_dtype dt, const char *what) {
  spx_csr *a = NULL;
  spx_format_params fp;
  spx_dmatrix *dd = NULL, *dh = NULL;
  spx_devptr dx = 0, dy = 0;
  size_t vs = SPX_DTYPE_SIZE(dt);
  int64_t i, n = a64->nrows, nc = a64->ncols;
  void *hx = malloc((size_t)(nc + 1) * vs), *y1 = malloc((size_t)(n + 1) * vs), *y2 = malloc((size_t)(n + 1) * vs);
  spx_status s1, s2;
  int ok = 1;
  assert_true(hx && y1 && y2);
  assert_int_equal(spx_csr_copy(a64, dt, &a), SPX_OK);
  spx_format_params_default(&fp);
  assert_int_equal(spx_format_params_parse(&fp, params), SPX_OK);
  s1 = spx_dmatrix_convert(gpu, a, f, &fp, NULL, &dd);
  env_put("SPX_DEVICE_CONVERT", "0");
  s2 = spx_dmatrix_convert(gpu, a, f, &fp, NULL, &dh);
  env_put("SPX_DEVICE_CONVERT", NULL);
  if (s1 != s2) fail_msg("%s %s %s %s: device %s, host %s", what, spx_format_name(f), params, spx_dtype_name(dt),
                         spx_status_string(s1), spx_status_string(s2));
  if (s1 == SPX_UNSUPPORTED) { ok = 0; goto done; }
  if (s1) fail_msg("%s %s: %s", what, spx_format_name(f), spx_last_error());
  if (strcmp(spx_dmatrix_describe(dd), spx_dmatrix_describe(dh)) || spx_dmatrix_bytes(dd) != spx_dmatrix_bytes(dh))
    fail_msg("%s %s %s: device '%s' %lld bytes, host '%s' %lld bytes", what, spx_format_name(f), params,
             spx_dmatrix_describe(dd), (long long)spx_dmatrix_bytes(dd), spx_dmatrix_describe(dh),
             (long long)spx_dmatrix_bytes(dh));
  same_arrays(dd, a, f, &fp, what, params);
  for (i = 0; i < nc; i++)
    if (dt == SPX_FLOAT) ((float *)hx)[i] = (float)(1.0 + 0.001 * (double)(i % 977));
    else ((double *)hx)[i] = 1.0 + 0.001 * (double)(i % 977);
  assert_int_equal(spx_device_alloc(gpu, (size_t)(nc + 1) * vs, &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(gpu, (size_t)(n + 1) * vs, &dy), SPX_OK);
  assert_int_equal(spx_device_upload(gpu, dx, hx, (size_t)nc * vs), SPX_OK);
  spmv_bytes(dd, dx, dy, n, vs, y1);
  spmv_bytes(dh, dx, dy, n, vs, y2);
  if (memcmp(y1, y2, (size_t)n * vs)) fail_msg("%s %s %s %s: y differs", what, spx_format_name(f), params, spx_dtype_name(dt));
  if (spx_csr_validate(a) == SPX_OK) {
    /* and both against the CSR reference, not only each other (a valid CSR: the odd-rows cases
     * keep duplicates, which SDIA overwrites where CSR adds them) */
    double *yd = malloc((size_t)(n + 1) * 8), *yr = malloc((size_t)(n + 1) * 8), *xd = malloc((size_t)(nc + 1) * 8);
    spx_csr *ad = NULL;
    assert_true(yd && yr && xd);
    assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &ad), SPX_OK);
    for (i = 0; i < nc; i++) xd[i] = dt == SPX_FLOAT ? (double)((float *)hx)[i] : ((double *)hx)[i];
    for (i = 0; i < n; i++) yd[i] = dt == SPX_FLOAT ? (double)((float *)y1)[i] : ((double *)y1)[i];
    assert_int_equal(spx_csr_spmv(ad, 1.0, xd, 0.0, yr), SPX_OK);
    /* Row by row within the rounding bound of a sum in any order, (k + 2) u |A||x| for a row of k
     * entries: a norm-wise tolerance fails on rows that cancel (integer LP rows of +-1) though
     * every operation rounds correctly. */
    for (i = 0; i < n; i++) {
      const double u = dt == SPX_FLOAT ? 0x1p-24 : 0x1p-53;
      double ax = 0;
      int64_t k;
      for (k = ad->row_ptr[i]; k < ad->row_ptr[i + 1]; k++) ax += fabs(ad->val.d[k] * xd[ad->col_idx[k]]);
      if (fabs(yd[i] - yr[i]) > 1.01 * (double)(ad->row_ptr[i + 1] - ad->row_ptr[i] + 2) * u * ax)
        fail_msg("%s %s %s %s: row %lld: %.17g, the CSR reference %.17g, beyond the rounding bound (|A||x| = %g)",
                 what, spx_format_name(f), params, spx_dtype_name(dt), (long long)i, yd[i], yr[i], ax);
    }
    spx_csr_destroy(ad);
    free(yd); free(yr); free(xd);
  } else spx_clear_error();
done:
  spx_device_free(gpu, dx);
  spx_device_free(gpu, dy);
  spx_dmatrix_destroy(dd);
  spx_dmatrix_destroy(dh);
  spx_csr_destroy(a);
  free(hx); free(y1); free(y2);
  return ok;
}

/* SDIA: C = 8 and 40 take 4 slices a warp and 2 rows a lane; max_fill = 1 declines nearly always.
 * BSR: auto (8 sizes counted), the plan's 3x3, a wide block, a whole warp of rows. */
static const char *const convert_params[][2] = {
    {"sell", ""}, {"sell", "sell_sigma=1"}, {"sell", "sell_c=8,sell_sigma=64"}, {"sell", "sell_c=64,sell_sigma=1000"},
    {"sell16", ""}, {"sell16", "sell16_sigma=1"}, {"sell16", "sell16_sigma=256"}, {"sell16", "sell16_c=16,sell16_sigma=32"},
    {"sdia", ""}, {"sdia", "sdia_max_fill=1000"}, {"sdia", "sdia_max_fill=1"}, {"sdia", "sdia_c=8"},
    {"sdia", "sdia_c=40,sdia_max_fill=1000"},
    {"bsr", ""}, {"bsr", "bsr_r=3,bsr_c=3"}, {"bsr", "bsr_r=2,bsr_c=5"}, {"bsr", "bsr_r=32,bsr_c=1"},
    {"ell", ""}, {"ell_r", ""}, {"jds", ""},
};

/* The longest row of a. */
static int64_t longest_row(const spx_csr *a) {
  int64_t i, m = 0;
  for (i = 0; i < a->nrows; i++) m = a->row_ptr[i + 1] - a->row_ptr[i] > m ? a->row_ptr[i + 1] - a->row_ptr[i] : m;
  return m;
}

static int convert_all(const spx_csr *a, const char *what) {
  char wide[64];
  int k, t, got = 0;
  /* ELL wider than the longest row: the padding past it too */
  snprintf(wide, sizeof wide, "ell_k=%lld", (long long)longest_row(a) + 3);
  for (k = 0; k < (int)(sizeof convert_params / sizeof convert_params[0]); k++)
    for (t = 0; t < 2; t++) {
      spx_format f;
      assert_int_equal(spx_format_from_name(convert_params[k][0], &f), SPX_OK);
      got += convert_same(a, f, convert_params[k][1], t ? SPX_FLOAT : SPX_DOUBLE, what);
    }
  got += convert_same(a, SPX_FORMAT_ELL, wide, SPX_DOUBLE, what);
  return got;
}

/* Device and host conversion of a (possibly malformed) CSR fail alike: the same status and the
 * same message. */
static void convert_fails_alike(const spx_csr *a, spx_format f, const char *params, spx_status want, const char *what) {
  spx_format_params fp;
  spx_dmatrix *d = NULL;
  char dev_msg[1024];
  spx_status s;
  spx_format_params_default(&fp);
  assert_int_equal(spx_format_params_parse(&fp, params), SPX_OK);
  s = spx_dmatrix_convert(gpu, a, f, &fp, NULL, &d);
  if (s != want) fail_msg("%s %s %s: device %s (%s)", what, spx_format_name(f), params, spx_status_string(s), spx_last_error());
  snprintf(dev_msg, sizeof dev_msg, "%s", spx_last_error());
  assert_null(d);
  env_put("SPX_DEVICE_CONVERT", "0");
  s = spx_dmatrix_convert(gpu, a, f, &fp, NULL, &d);
  env_put("SPX_DEVICE_CONVERT", NULL);
  assert_int_equal(s, want);
  assert_null(d);
  if (strcmp(dev_msg, spx_last_error())) fail_msg("%s: device '%s', host '%s'", what, dev_msg, spx_last_error());
}

/* ELL (auto, and wider than the longest row), ELL-R and JDS of a in both dtypes, each compared. */
static void convert_ell_jds(const spx_csr *a, const char *what) {
  char wide[64];
  int t;
  snprintf(wide, sizeof wide, "ell_k=%lld", (long long)longest_row(a) + 3);
  for (t = 0; t < 2; t++) {
    const spx_dtype dt = t ? SPX_FLOAT : SPX_DOUBLE;
    assert_int_equal(convert_same(a, SPX_FORMAT_ELL, "", dt, what), 1);
    assert_int_equal(convert_same(a, SPX_FORMAT_ELL, wide, dt, what), 1);
    assert_int_equal(convert_same(a, SPX_FORMAT_ELL_R, "", dt, what), 1);
    assert_int_equal(convert_same(a, SPX_FORMAT_JDS, "", dt, what), 1);
  }
}

/* nrows x ncols: row nrows / 2 holds `longest` entries (columns 0..longest-1), every 7th other row
 * 1 to 3, the rest none (longest <= ncols, ncols >= 8). */
static spx_csr *long_row(int64_t nrows, int64_t ncols, int64_t longest) {
  int64_t i, j, nz = 0, cap = longest + 3 * (nrows / 7 + 1);
  int32_t *r = malloc((size_t)cap * sizeof *r), *c = malloc((size_t)cap * sizeof *c);
  double *v = malloc((size_t)cap * sizeof *v);
  spx_csr *a = NULL;
  assert_true(r && c && v);
  for (i = 0; i < nrows; i++) {
    int64_t m = i == nrows / 2 ? longest : i % 7 == 0 ? 1 + i % 3 : 0, c0 = i == nrows / 2 ? 0 : (i * 13) % (ncols - 4);
    for (j = 0; j < m; j++, nz++) {
      r[nz] = (int32_t)i;
      c[nz] = (int32_t)(c0 + j);
      v[nz] = 0.5 + spx_test_rand();
    }
  }
  assert_int_equal(spx_csr_from_coo(nrows, ncols, nz, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  free(r); free(c); free(v);
  return a;
}

/* Rows the converters accept though spx_csr_validate would not (SDIA takes unsorted rows and
 * duplicates, the last one winning; BSR refuses them; ELL and JDS copy them), and -0.0 entries
 * (stored as +0.0, but kept by JDS, which has no padding). */
static void test_device_convert_odd_rows(void) {
  static const char *const bsr_params[] = {"", "bsr_r=3,bsr_c=3", "bsr_r=32,bsr_c=1"};
  static const spx_format ej[3] = {SPX_FORMAT_ELL, SPX_FORMAT_ELL_R, SPX_FORMAT_JDS};
  spx_csr *a;
  int k, bad;
  assert_int_equal(spx_csr_create(45, 100, 9, SPX_DOUBLE, &a), SPX_OK);
  { /* row 0: 7 2 7 (unsorted, a duplicate), row 1: 1 0, row 3: 3 99, row 40: -0.0 on column 0,
     * row 41: 50 */
    static const int32_t ci[9] = {7, 2, 7, 1, 0, 3, 99, 0, 50};
    static const double va[9] = {1, 2, 3, 4, 5, 6, 7, -0.0, 9};
    for (k = 0; k <= 45; k++) a->row_ptr[k] = k < 1 ? 0 : k < 2 ? 3 : k < 4 ? 5 : k < 41 ? 7 : k < 42 ? 8 : 9;
    memcpy(a->col_idx, ci, sizeof ci);
    memcpy(a->val.d, va, sizeof va);
  }
  assert_int_equal(convert_same(a, SPX_FORMAT_SDIA, "sdia_max_fill=1000", SPX_DOUBLE, "unsorted rows"), 1);
  assert_int_equal(convert_same(a, SPX_FORMAT_SDIA, "sdia_c=5,sdia_max_fill=1000", SPX_FLOAT, "unsorted rows"), 1);
  convert_fails_alike(a, SPX_FORMAT_SDIA, "sdia_max_fill=1", SPX_UNSUPPORTED, "unsorted rows, declined");
  for (k = 0; k < 3; k++) convert_fails_alike(a, SPX_FORMAT_BSR, bsr_params[k], SPX_INVALID_ARGUMENT, "unsorted rows");
  convert_ell_jds(a, "unsorted rows");
  convert_fails_alike(a, SPX_FORMAT_ELL, "ell_k=2", SPX_INVALID_ARGUMENT, "ell_k below the longest row");
  spx_csr_destroy(a);
  /* sorted rows with a column outside [0, ncols): -1, then ncols inside the last partial block */
  for (bad = 0; bad < 2; bad++) {
    assert_int_equal(spx_csr_create(5, 5, 3, SPX_DOUBLE, &a), SPX_OK);
    a->row_ptr[1] = 2; a->row_ptr[2] = 2; a->row_ptr[3] = 3; a->row_ptr[4] = 3; a->row_ptr[5] = 3;
    a->col_idx[0] = bad ? 1 : -1; a->col_idx[1] = bad ? 5 : 0; a->col_idx[2] = 2;
    a->val.d[0] = a->val.d[1] = a->val.d[2] = 1;
    for (k = 0; k < 3; k++) convert_fails_alike(a, SPX_FORMAT_BSR, bsr_params[k], SPX_INVALID_ARGUMENT, "bad column");
    convert_fails_alike(a, SPX_FORMAT_BSR, "bsr_r=2,bsr_c=2", SPX_INVALID_ARGUMENT, "bad column");
    for (k = 0; k < 3; k++) convert_fails_alike(a, ej[k], "", SPX_INVALID_ARGUMENT, "bad column");
    /* and row pointers out of order (row 1 ends before it starts) */
    a->col_idx[0] = 1; a->col_idx[1] = 2;
    a->row_ptr[1] = 3; a->row_ptr[2] = 2;
    for (k = 0; k < 3; k++) convert_fails_alike(a, ej[k], "", SPX_INVALID_ARGUMENT, "bad row pointers");
    spx_csr_destroy(a);
  }
  /* no entries at all: ELL of width 0 (or 3, padding only), JDS without diagonals */
  assert_int_equal(spx_csr_create(1000, 1000, 0, SPX_DOUBLE, &a), SPX_OK);
  convert_ell_jds(a, "no entries");
  spx_csr_destroy(a);
  /* no columns either: ELL's padding needs one, so only width 0 */
  assert_int_equal(spx_csr_create(10, 0, 0, SPX_DOUBLE, &a), SPX_OK);
  for (k = 0; k < 3; k++) assert_int_equal(convert_same(a, ej[k], "", SPX_DOUBLE, "no columns"), 1);
  convert_fails_alike(a, SPX_FORMAT_ELL, "ell_k=3", SPX_INVALID_ARGUMENT, "no columns");
  spx_csr_destroy(a);
  /* one long row: JDS's sort takes 2 passes (a digit per 8 bits of the length), then 3; 4096 rows
   * are 2 whole tiles of its sort, 3001 not */
  a = long_row(3001, 4000, 2500);
  convert_ell_jds(a, "long row");
  spx_csr_destroy(a);
  a = long_row(4096, 5000, 300);
  convert_ell_jds(a, "long row, whole tiles");
  spx_csr_destroy(a);
  a = long_row(3001, 70001, 70000);
  assert_int_equal(convert_same(a, SPX_FORMAT_JDS, "", SPX_DOUBLE, "longer row"), 1);
  assert_int_equal(convert_same(a, SPX_FORMAT_JDS, "", SPX_FLOAT, "longer row"), 1);
  spx_csr_destroy(a);
}

/* Device conversion (SELL, SELL16, SDIA, BSR, ELL, ELL-R, JDS) equals the host's on generated
 * matrices, a SELL16 decline (one row spanning 100000 columns), empty rows, odd rows, and every
 * shared matrix. */
static void test_device_convert(void **state) {
  spx_test_entry *e;
  spx_csr *a;
  int ne, t, got = 0;
  int32_t r[6] = {0, 0, 5, 40, 41, 41}, c[6] = {0, 99999, 3, 7, 2, 99000};
  (void)state;
  if (!gpu) skip();
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  got += convert_all(a, "poisson7");
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_powerlaw(5000, 1.8, 1, 300, 5, SPX_DOUBLE, &a), SPX_OK);
  got += convert_all(a, "powerlaw");
  spx_csr_destroy(a);
  assert_int_equal(spx_csr_from_coo(100000, 100000, 6, r, c, NULL, SPX_DOUBLE, &a), SPX_OK); /* mostly empty rows */
  got += convert_all(a, "wide");
  assert_int_equal(convert_same(a, SPX_FORMAT_SELL16, "sell16_sigma=1", SPX_DOUBLE, "wide"), 0); /* both decline */
  convert_fails_alike(a, SPX_FORMAT_SDIA, "", SPX_UNSUPPORTED, "wide"); /* 2 diagonals x 32 rows for 6 entries */
  spx_csr_destroy(a);
  assert_int_equal(spx_gen_elasticity3d(7, 6, 5, SPX_DOUBLE, &a), SPX_OK);
  got += convert_all(a, "elasticity");
  spx_csr_destroy(a);
  test_device_convert_odd_rows();
  ne = spx_test_manifest(&e);
  for (t = 0; t < ne; t++) {
    char path[1024];
    if (!strcmp(e[t].field, "complex")) continue;
    spx_test_matrix_path(e[t].name, path, sizeof path);
    if (spx_mm_read(path, SPX_DOUBLE, &a, NULL)) fail_msg("%s: %s", e[t].name, spx_last_error());
    got += convert_all(a, e[t].name);
    spx_csr_destroy(a);
  }
  free(e);
  print_message("device conversion matched the host's in %d (matrix, format, parameters, dtype) cases\n", got);
  assert_true(got > 40);
}

/* spx_dmatrix_convert to CSR uploads the caller's columns and values without a host copy: the same
 * kernel plan, bytes, device arrays and y, bit for bit, as spx_fmt_from_csr + spx_dmatrix_create;
 * the caller's arrays untouched; a CSR that would be read out of bounds refused in the host
 * converter's words. */
static void test_csr_direct(void **state) {
  spx_csr *m[3], *a, *keep;
  int k, t;
  (void)state;
  if (!gpu) skip();
  assert_int_equal(spx_gen_poisson3d(12, 11, 10, 7, SPX_DOUBLE, &m[0]), SPX_OK);
  m[1] = long_row(4096, 5000, 300); /* a small matrix with one long row: the split vector kernel */
  assert_int_equal(spx_gen_powerlaw(20000, 2.0, 2, 3000, 5, SPX_DOUBLE, &m[2]), SPX_OK); /* skewed: merge path */
  for (k = 0; k < 3; k++)
    for (t = 0; t < 2; t++) {
      const spx_dtype dt = t ? SPX_FLOAT : SPX_DOUBLE;
      const size_t vs = SPX_DTYPE_SIZE(dt);
      spx_format_params fp;
      spx_fmt *f = NULL;
      spx_dmatrix *dd = NULL, *dh = NULL;
      spx_devptr dx = 0, dy = 0;
      void *hx, *y1, *y2;
      int64_t i;
      assert_int_equal(spx_csr_copy(m[k], dt, &a), SPX_OK);
      assert_int_equal(spx_csr_copy(a, dt, &keep), SPX_OK);
      spx_format_params_default(&fp);
      assert_int_equal(spx_dmatrix_convert(gpu, a, SPX_FORMAT_CSR, NULL, NULL, &dd), SPX_OK);
      assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &f), SPX_OK);
      assert_int_equal(spx_dmatrix_create(gpu, f, NULL, &dh), SPX_OK);
      assert_string_equal(spx_dmatrix_describe(dd), spx_dmatrix_describe(dh));
      assert_int_equal(spx_dmatrix_bytes(dd), spx_dmatrix_bytes(dh));
      same_arrays(dd, a, SPX_FORMAT_CSR, &fp, "csr direct", "");
      assert_true(!memcmp(a->row_ptr, keep->row_ptr, (size_t)(a->nrows + 1) * sizeof *a->row_ptr) &&
                  !memcmp(a->col_idx, keep->col_idx, (size_t)a->nnz * sizeof *a->col_idx) &&
                  !memcmp(a->val.p, keep->val.p, (size_t)a->nnz * vs));
      hx = malloc((size_t)(a->ncols + 1) * vs); y1 = malloc((size_t)(a->nrows + 1) * vs); y2 = malloc((size_t)(a->nrows + 1) * vs);
      assert_true(hx && y1 && y2);
      for (i = 0; i < a->ncols; i++)
        if (t) ((float *)hx)[i] = (float)(1.0 + 0.001 * (double)(i % 977));
        else ((double *)hx)[i] = 1.0 + 0.001 * (double)(i % 977);
      assert_int_equal(spx_device_alloc(gpu, (size_t)(a->ncols + 1) * vs, &dx), SPX_OK);
      assert_int_equal(spx_device_alloc(gpu, (size_t)(a->nrows + 1) * vs, &dy), SPX_OK);
      assert_int_equal(spx_device_upload(gpu, dx, hx, (size_t)a->ncols * vs), SPX_OK);
      spmv_bytes(dd, dx, dy, a->nrows, vs, y1);
      spmv_bytes(dh, dx, dy, a->nrows, vs, y2);
      assert_true(!memcmp(y1, y2, (size_t)a->nrows * vs));
      spx_device_free(gpu, dx); spx_device_free(gpu, dy);
      free(hx); free(y1); free(y2);
      spx_dmatrix_destroy(dd); spx_dmatrix_destroy(dh); spx_fmt_destroy(f);
      spx_csr_destroy(keep);
      if (k == 0 && t == 0) { /* a column past ncols: refused as the host converter refuses it */
        char msg[1024];
        spx_dmatrix *d = NULL;
        a->col_idx[a->nnz / 2] = (int32_t)a->ncols;
        assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &f), SPX_INVALID_ARGUMENT);
        snprintf(msg, sizeof msg, "%s", spx_last_error());
        assert_int_equal(spx_dmatrix_convert(gpu, a, SPX_FORMAT_CSR, NULL, NULL, &d), SPX_INVALID_ARGUMENT);
        assert_null(d);
        assert_string_equal(msg, spx_last_error());
      }
      spx_csr_destroy(a);
    }
  for (k = 0; k < 3; k++) spx_csr_destroy(m[k]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_refuses),
      cmocka_unit_test(test_every_format_has_a_kernel),
      cmocka_unit_test(test_kernel_plans), cmocka_unit_test(test_shape_buckets),
      cmocka_unit_test(test_generated),
      cmocka_unit_test(test_variants),
      cmocka_unit_test(test_shared_matrices),
      cmocka_unit_test(test_device_convert),
      cmocka_unit_test(test_csr_direct),
  };
  return cmocka_run_group_tests_name("cuda", tests, setup, teardown);
}
