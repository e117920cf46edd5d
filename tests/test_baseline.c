/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/baseline.h. Without a GPU only the name table and the refusals run; the rest skip
 * and run on the GPU machine, where every algorithm (and BEST) is checked against the host
 * reference spx_csr_spmv on generated and shared matrices, in double and float. */
#include "spx_test.h"
#include <spx/internal/cuda_types.h> /* a CUDA stream for test_stream */

static double wall(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static spx_context *gpu_ctx(void) {
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  if (spx_device_count() == 0 || spx_context_create(&o, &ctx) != SPX_OK) return NULL;
  return ctx;
}

/* ---- Without a GPU ---------------------------------------------------------------------------- */
static void test_alg_names(void **state) {
  spx_cusparse_alg a;
  int i;
  (void)state;
  for (i = 0; i < SPX_CUSPARSE_ALG_COUNT; i++) {
    const char *n = spx_cusparse_alg_name((spx_cusparse_alg)i);
    assert_string_not_equal(n, "unknown");
    assert_true(strlen(spx_cusparse_alg_description((spx_cusparse_alg)i)) > 0);
    assert_int_equal(spx_cusparse_alg_parse(n, &a), SPX_OK);
    assert_int_equal(a, i);
  }
  assert_string_equal(spx_cusparse_alg_name(SPX_CUSPARSE_CSR_ALG1), "csr_alg1");
  assert_string_equal(spx_cusparse_alg_name(SPX_CUSPARSE_SELL), "sell");
  assert_string_equal(spx_cusparse_alg_name(SPX_CUSPARSE_BSR), "bsr");
  assert_string_equal(spx_cusparse_alg_name(SPX_CUSPARSE_BEST), "best");
  assert_string_equal(spx_cusparse_alg_name(SPX_CUSPARSE_ALG_COUNT), "unknown");
  assert_string_equal(spx_cusparse_alg_name((spx_cusparse_alg)-7), "unknown");
  assert_string_equal(spx_cusparse_alg_description(SPX_CUSPARSE_ALG_COUNT), "");
  assert_int_equal(spx_cusparse_alg_parse("best", &a), SPX_OK);
  assert_int_equal(a, SPX_CUSPARSE_BEST);
  assert_int_equal(spx_cusparse_alg_parse("csr", &a), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "csr_alg2"));
  assert_int_equal(spx_cusparse_alg_parse(NULL, &a), SPX_INVALID_ARGUMENT);
}

static void test_refusals(void **state) {
  spx_context_options ho = {SPX_BACKEND_HOST, 0};
  spx_context *ctx;
  spx_csr *a;
  spx_cusparse_plan *p = (spx_cusparse_plan *)&p; /* not NULL: the calls must clear it */
  spx_cusparse_options bad;
  spx_cusparse_device_csr d;
  double ms[SPX_CUSPARSE_ALG_COUNT];
  (void)state;
  assert_int_equal(spx_context_create(&ho, &ctx), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(4, 3, 2, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &p), SPX_NOT_AVAILABLE);
  assert_null(p);
  assert_non_null(strstr(spx_last_error(), "host"));
  p = (spx_cusparse_plan *)&p;
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BEST, NULL, &p), SPX_NOT_AVAILABLE);
  assert_null(p);
  assert_int_equal(spx_cusparse_plan_create(NULL, a, SPX_CUSPARSE_CSR_ALG1, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_cusparse_plan_create(ctx, NULL, SPX_CUSPARSE_CSR_ALG1, NULL, &p),
                   SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_ALG_COUNT, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_cusparse_plan_create(ctx, a, (spx_cusparse_alg)-2, NULL, &p), SPX_INVALID_ARGUMENT);
  memset(&bad, 0, sizeof bad);
  bad.reps = -1;
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BEST, &bad, &p), SPX_INVALID_ARGUMENT);
  memset(&bad, 0, sizeof bad);
  bad.bsr_max_fill = -1;
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BSR, &bad, &p), SPX_INVALID_ARGUMENT);
  assert_null(p);
  memset(&d, 0, sizeof d);
  d.nrows = d.ncols = 4;
  d.nnz = 4;
  d.row_ptr = d.col_idx = d.val = 4096; /* never dereferenced: refused first */
  p = (spx_cusparse_plan *)&p;
  assert_int_equal(spx_cusparse_plan_create_device_csr(ctx, &d, SPX_CUSPARSE_CSR_ALG1, NULL, &p),
                   SPX_NOT_AVAILABLE);
  assert_null(p);
  assert_int_equal(spx_cusparse_plan_create_device_csr(ctx, NULL, SPX_CUSPARSE_CSR_ALG1, NULL, &p),
                   SPX_INVALID_ARGUMENT);
  d.row_ptr_64 = 1; /* with 32-bit columns: cuSPARSE takes one width only */
  assert_int_equal(spx_cusparse_plan_create_device_csr(ctx, &d, SPX_CUSPARSE_CSR_ALG1, NULL, &p),
                   SPX_UNSUPPORTED);
  assert_non_null(strstr(spx_last_error(), "one width"));
  d.nnz = -1;
  assert_int_equal(spx_cusparse_plan_create_device_csr(ctx, &d, SPX_CUSPARSE_CSR_ALG1, NULL, &p),
                   SPX_INVALID_ARGUMENT);
  /* NULL plans. */
  assert_int_equal(spx_cusparse_spmv(NULL, 1, 1, 0, 1), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_cusparse_plan_alg(NULL), SPX_CUSPARSE_ALG_COUNT);
  assert_int_equal(spx_cusparse_plan_times(NULL, ms), SPX_INVALID_ARGUMENT);
  assert_string_equal(spx_cusparse_plan_note(NULL, SPX_CUSPARSE_BSR), "");
  assert_int_equal(spx_cusparse_plan_device_bytes(NULL), 0);
  assert_int_equal(spx_cusparse_plan_bsr_block_dim(NULL), 0);
  assert_int_equal(spx_cusparse_plan_preprocessed(NULL), 0);
  spx_cusparse_plan_destroy(NULL);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
}

/* ---- On the GPU: the matrices ----------------------------------------------------------------- */
typedef struct tmat {
  char name[64];
  spx_csr *d;   /* double */
  spx_csr *f;   /* float */
  spx_csr *fd;  /* the float values, exactly, in double: the float reference */
} tmat;

static int tmat_add(tmat *m, const char *name, spx_csr *d) {
  snprintf(m->name, sizeof m->name, "%s", name);
  m->d = d;
  assert_int_equal(spx_csr_copy(d, SPX_FLOAT, &m->f), SPX_OK);
  assert_int_equal(spx_csr_copy(m->f, SPX_DOUBLE, &m->fd), SPX_OK);
  return 1;
}

/* Generated (stencil, FEM with 3 unknowns a node, power-law rows), an empty matrix, and shared
 * SuiteSparse matrices (rectangular both ways, empty rows, long rows, FEM blocks). */
static int tmats_load(tmat *m, int cap) {
  static const char *const shared[] = {"1138_bus", "bcsstk16", "cage10", "Pd", "ash219", "lp_e226",
                                       "problem", "Erdos971", "GD98_a", "bayer10", "EX5", "lpi_itest6"};
  int n = 0;
  size_t i;
  spx_csr *a;
  assert_int_equal(spx_gen_poisson3d(24, 17, 11, 7, SPX_DOUBLE, &a), SPX_OK);
  n += tmat_add(&m[n], "poisson7_24x17x11", a);
  assert_int_equal(spx_gen_elasticity3d(5, 4, 4, SPX_DOUBLE, &a), SPX_OK);
  n += tmat_add(&m[n], "elasticity_5x4x4", a);
  assert_int_equal(spx_gen_powerlaw(3000, 2.0, 1, 300, 7, SPX_DOUBLE, &a), SPX_OK);
  n += tmat_add(&m[n], "powerlaw_3000", a);
  assert_int_equal(spx_csr_create(40, 30, 0, SPX_DOUBLE, &a), SPX_OK);
  n += tmat_add(&m[n], "empty_40x30", a);
  assert_int_equal(spx_csr_create(0, 5, 0, SPX_DOUBLE, &a), SPX_OK);
  n += tmat_add(&m[n], "empty_0x5", a);
  assert_int_equal(spx_csr_create(6, 0, 0, SPX_DOUBLE, &a), SPX_OK);
  n += tmat_add(&m[n], "empty_6x0", a);
  for (i = 0; i < sizeof shared / sizeof *shared && n < cap; i++) {
    char path[1024];
    spx_test_matrix_path(shared[i], path, sizeof path);
    if (spx_mm_read(path, SPX_DOUBLE, &a, NULL) != SPX_OK) {
      print_message("note: %s not read (%s)\n", shared[i], spx_last_error());
      continue;
    }
    n += tmat_add(&m[n], shared[i], a);
  }
  return n;
}

static void tmats_free(tmat *m, int n) {
  int i;
  for (i = 0; i < n; i++) {
    spx_csr_destroy(m[i].d);
    spx_csr_destroy(m[i].f);
    spx_csr_destroy(m[i].fd);
  }
}

/* ---- On the GPU: checking one plan ------------------------------------------------------------ */
typedef struct vecs {
  int64_t nr, nc;
  spx_dtype t;
  double *x, *y0, *ref, *got; /* x and y0 already rounded to t */
  void *hx, *hy;              /* in t, for upload and download */
  spx_devptr dx, dy;
} vecs;

static void vecs_make(spx_context *ctx, vecs *v, const spx_csr *a) {
  size_t vs = SPX_DTYPE_SIZE(a->dtype);
  int64_t i;
  memset(v, 0, sizeof *v);
  v->nr = a->nrows, v->nc = a->ncols, v->t = a->dtype;
  v->x = malloc((size_t)(v->nc + 1) * sizeof(double));
  v->y0 = malloc((size_t)(v->nr + 1) * sizeof(double));
  v->ref = malloc((size_t)(v->nr + 1) * sizeof(double));
  v->got = malloc((size_t)(v->nr + 1) * sizeof(double));
  v->hx = malloc((size_t)(v->nc + 1) * vs);
  v->hy = malloc((size_t)(v->nr + 1) * vs);
  spx_test_fill(v->x, v->nc);
  spx_test_fill(v->y0, v->nr);
  if (v->t == SPX_FLOAT) {
    for (i = 0; i < v->nc; i++) ((float *)v->hx)[i] = (float)v->x[i], v->x[i] = ((float *)v->hx)[i];
    for (i = 0; i < v->nr; i++) v->y0[i] = (float)v->y0[i];
  } else {
    memcpy(v->hx, v->x, (size_t)v->nc * vs);
  }
  assert_int_equal(spx_device_alloc(ctx, (size_t)v->nc * vs, &v->dx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (size_t)v->nr * vs, &v->dy), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, v->dx, v->hx, (size_t)v->nc * vs), SPX_OK);
}

static void vecs_free(spx_context *ctx, vecs *v) {
  spx_device_free(ctx, v->dx);
  spx_device_free(ctx, v->dy);
  free(v->x); free(v->y0); free(v->ref); free(v->got); free(v->hx); free(v->hy);
}

/* Failures found by the checks below; a test prints each and asserts none at its end, so that one
 * GPU run reports every problem rather than the first. */
static int failures;
#define FAILED(...) (print_message("FAIL: " __VA_ARGS__), print_message("\n"), failures++)

/* One y = alpha*A*x + beta*y on the device against the host (ref: the double matrix holding a's
 * values exactly). beta == 0 runs on a poisoned y (NaN bytes), which must not show through. */
static void check_spmv(spx_context *ctx, spx_cusparse_plan *p, const spx_csr *ref, vecs *v, double alpha,
                       double beta, const char *what) {
  const size_t vs = SPX_DTYPE_SIZE(v->t);
  const double tol = v->t == SPX_FLOAT ? 1e-5 : 1e-12;
  double err;
  int64_t i;
  memcpy(v->ref, v->y0, (size_t)v->nr * sizeof(double));
  assert_int_equal(spx_csr_spmv(ref, alpha, v->x, beta, v->ref), SPX_OK);
  if (beta == 0) {
    assert_int_equal(spx_device_memset(ctx, v->dy, 0xff, (size_t)v->nr * vs), SPX_OK);
  } else {
    for (i = 0; i < v->nr; i++) {
      if (v->t == SPX_FLOAT) ((float *)v->hy)[i] = (float)v->y0[i];
      else ((double *)v->hy)[i] = v->y0[i];
    }
    assert_int_equal(spx_device_upload(ctx, v->dy, v->hy, (size_t)v->nr * vs), SPX_OK);
  }
  if (spx_cusparse_spmv(p, alpha, v->dx, beta, v->dy) != SPX_OK) {
    FAILED("%s: %s", what, spx_last_error());
    return;
  }
  assert_int_equal(spx_context_synchronize(ctx), SPX_OK);
  assert_int_equal(spx_device_download(ctx, v->hy, v->dy, (size_t)v->nr * vs), SPX_OK);
  for (i = 0; i < v->nr; i++) v->got[i] = v->t == SPX_FLOAT ? ((float *)v->hy)[i] : ((double *)v->hy)[i];
  err = spx_test_relerr(v->got, v->ref, v->nr);
  if (!(err <= tol))
    FAILED("%s: relative error %.3g > %.1g (alpha %g beta %g, seed %llu)", what, err, tol, alpha, beta,
           (unsigned long long)spx_test_seed());
}

/* Two calls (beta = 0 on a poisoned y, then random alpha and beta) on fresh random vectors. */
static void check_plan(spx_context *ctx, spx_cusparse_plan *p, const spx_csr *a, const spx_csr *ref,
                       const char *what) {
  vecs v;
  vecs_make(ctx, &v, a);
  check_spmv(ctx, p, ref, &v, 1.0 + 0.5 * spx_test_rand(), 0.0, what);
  check_spmv(ctx, p, ref, &v, spx_test_rand(), spx_test_rand(), what);
  vecs_free(ctx, &v);
}

/* ---- On the GPU: the tests -------------------------------------------------------------------- */
static void test_every_alg(void **state) {
  enum { CAP = 24 };
  spx_context *ctx = gpu_ctx();
  tmat m[CAP];
  int n, i, t, alg, ran[SPX_CUSPARSE_ALG_COUNT] = {0}, refused[SPX_CUSPARSE_ALG_COUNT] = {0};
  double t0 = wall();
  (void)state;
  if (!ctx) skip();
  failures = 0;
  n = tmats_load(m, CAP);
  assert_true(n >= 12);
  if (getenv("SPX_TEST_QUICK")) { /* under compute-sanitizer: a few matrices only */
    tmats_free(m + 8, n - 8);
    n = 8;
  }
  for (i = 0; i < n; i++)
    for (t = 0; t < 2; t++) {
      const spx_csr *a = t ? m[i].f : m[i].d, *ref = t ? m[i].fd : m[i].d;
      for (alg = SPX_CUSPARSE_BEST; alg < SPX_CUSPARSE_ALG_COUNT; alg++) {
        spx_cusparse_plan *p = NULL;
        char what[160];
        spx_status s = spx_cusparse_plan_create(ctx, a, (spx_cusparse_alg)alg, NULL, &p);
        snprintf(what, sizeof what, "%.63s %.8s %.10s", m[i].name, spx_dtype_name(a->dtype),
                 spx_cusparse_alg_name((spx_cusparse_alg)alg));
        if (s == SPX_UNSUPPORTED && alg == SPX_CUSPARSE_BSR) {
          /* Not a whole number of blocks, or too many explicit zeros: the refusal says which, and
           * leaves nothing behind. */
          assert_null(p);
          assert_true(strlen(spx_last_error()) > 10);
          if (i < 6 && t == 0) print_message("  %s: %s\n", what, spx_last_error());
          refused[alg]++;
          continue;
        }
        if (s != SPX_OK) {
          FAILED("%s: %s", what, spx_last_error());
          continue;
        }
        if (alg >= 0) {
          assert_int_equal(spx_cusparse_plan_alg(p), alg);
          if (alg == SPX_CUSPARSE_BSR && !ran[alg])
            print_message("  %s: block dim %d, note '%s'\n", what, spx_cusparse_plan_bsr_block_dim(p),
                          spx_cusparse_plan_note(p, SPX_CUSPARSE_BSR));
          ran[alg]++;
        } else {
          double ms[SPX_CUSPARSE_ALG_COUNT], lo = 1e300;
          int k, timed = 0;
          spx_cusparse_alg won = spx_cusparse_plan_alg(p);
          assert_int_equal(spx_cusparse_plan_times(p, ms), SPX_OK);
          for (k = 0; k < SPX_CUSPARSE_ALG_COUNT; k++)
            if (ms[k] >= 0) {
              timed++;
              if (ms[k] < lo) lo = ms[k];
            }
          /* Empty matrices (no rows) time nothing; everything else times at least the CSR pair. */
          if (a->nrows > 0 && (timed < 2 || !(ms[won] >= 0) || ms[won] != lo))
            FAILED("%s: chose %s (%g ms) but timed %d with the least %g ms", what, spx_cusparse_alg_name(won),
                   ms[won], timed, lo);
        }
        assert_true(spx_cusparse_plan_device_bytes(p) > 0 || a->nrows == 0);
        check_plan(ctx, p, a, ref, what);
        spx_cusparse_plan_destroy(p);
      }
    }
  for (alg = 0; alg < SPX_CUSPARSE_ALG_COUNT; alg++)
    print_message("  %-9s ran on %d of %d matrix/dtype pairs, refused %d\n",
                  spx_cusparse_alg_name((spx_cusparse_alg)alg), ran[alg], 2 * n, refused[alg]);
  for (alg = 0; alg < SPX_CUSPARSE_ALG_COUNT; alg++)
    if (alg != SPX_CUSPARSE_BSR && ran[alg] != 2 * n)
      FAILED("%s ran on only %d", spx_cusparse_alg_name(alg), ran[alg]);
  print_message("  (%.1f s)\n", wall() - t0);
  tmats_free(m, n);
  spx_context_destroy(ctx);
  assert_int_equal(failures, 0);
}

/* BSR: automatic block dim 3 on a 3-unknowns-a-node FEM matrix, a forced block dim, refusals. */
static void test_bsr_blocks(void **state) {
  spx_context *ctx = gpu_ctx();
  spx_csr *a, *pl;
  spx_cusparse_plan *p = NULL;
  spx_cusparse_options o;
  spx_status s;
  (void)state;
  if (!ctx) skip();
  failures = 0;
  assert_int_equal(spx_gen_elasticity3d(5, 4, 4, SPX_DOUBLE, &a), SPX_OK); /* 375 rows: not even */
  s = spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BSR, NULL, &p);
  if (s == SPX_UNSUPPORTED && strstr(spx_last_error(), "does not run SpMV")) {
    print_message("  cuSPARSE here has no BSR SpMV: %s\n", spx_last_error());
  } else {
    if (s != SPX_OK) fail_msg("%s", spx_last_error());
    assert_int_equal(spx_cusparse_plan_bsr_block_dim(p), 3);
    check_plan(ctx, p, a, a, "elasticity bsr auto");
    spx_cusparse_plan_destroy(p);
    memset(&o, 0, sizeof o);
    o.bsr_block_dim = 5; /* divides 375; many explicit zeros, still right */
    if (spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BSR, &o, &p) != SPX_OK)
      fail_msg("%s", spx_last_error());
    assert_int_equal(spx_cusparse_plan_bsr_block_dim(p), 5);
    check_plan(ctx, p, a, a, "elasticity bsr 5");
    spx_cusparse_plan_destroy(p);
  }
  assert_int_equal(failures, 0);
  memset(&o, 0, sizeof o);
  o.bsr_block_dim = 2;
  p = (spx_cusparse_plan *)&p;
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BSR, &o, &p), SPX_UNSUPPORTED);
  assert_null(p);
  assert_non_null(strstr(spx_last_error(), "2 x 2 blocks"));
  /* A random sparse matrix: every block dim stores far too many zeros. */
  assert_int_equal(spx_gen_powerlaw(2400, 2.0, 2, 50, 3, SPX_DOUBLE, &pl), SPX_OK);
  assert_int_equal(spx_cusparse_plan_create(ctx, pl, SPX_CUSPARSE_BSR, NULL, &p), SPX_UNSUPPORTED);
  assert_non_null(strstr(spx_last_error(), "times the nonzeros"));
  spx_csr_destroy(pl);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
}

/* SELL with other slice sizes (the last slice partly filled), with and without preprocess. */
static void test_sell_options(void **state) {
  static const int sizes[] = {1, 7, 32, 128};
  spx_context *ctx = gpu_ctx();
  spx_csr *a;
  spx_cusparse_plan *p;
  spx_cusparse_options o;
  size_t i;
  (void)state;
  if (!ctx) skip();
  failures = 0;
  assert_int_equal(spx_gen_powerlaw(1001, 1.5, 1, 90, 11, SPX_DOUBLE, &a), SPX_OK);
  for (i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    char what[64];
    memset(&o, 0, sizeof o);
    o.sell_slice_size = sizes[i];
    o.no_preprocess = (int)(i % 2);
    snprintf(what, sizeof what, "sell slice %d", sizes[i]);
    if (spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_SELL, &o, &p) != SPX_OK) {
      FAILED("%s: %s", what, spx_last_error());
      continue;
    }
    print_message("  %s: preprocessed %d\n", what, spx_cusparse_plan_preprocessed(p));
    if (o.no_preprocess && spx_cusparse_plan_preprocessed(p)) FAILED("%s: preprocessed", what);
    check_plan(ctx, p, a, a, what);
    spx_cusparse_plan_destroy(p);
  }
  spx_csr_destroy(a);
  assert_int_equal(failures, 0);
  spx_context_destroy(ctx);
}

/* A CSR the caller keeps on the device: wrapped without a copy, left intact by destroy. */
static void test_device_csr(void **state) {
  spx_context *ctx = gpu_ctx();
  spx_csr *a;
  int32_t *rp32, *back;
  int64_t *ci64, i;
  spx_devptr p32, p64, c32, c64, val;
  int combo;
  (void)state;
  if (!ctx) skip();
  failures = 0;
  assert_int_equal(spx_gen_poisson3d(30, 20, 10, 7, SPX_DOUBLE, &a), SPX_OK);
  rp32 = malloc((size_t)(a->nrows + 1) * sizeof *rp32);
  ci64 = malloc((size_t)a->nnz * sizeof *ci64);
  back = malloc((size_t)a->nnz * sizeof *back);
  for (i = 0; i <= a->nrows; i++) rp32[i] = (int32_t)a->row_ptr[i];
  for (i = 0; i < a->nnz; i++) ci64[i] = a->col_idx[i];
  assert_int_equal(spx_device_alloc(ctx, (size_t)(a->nrows + 1) * 4, &p32), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (size_t)(a->nrows + 1) * 8, &p64), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (size_t)a->nnz * 4, &c32), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (size_t)a->nnz * 8, &c64), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (size_t)a->nnz * 8, &val), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, p32, rp32, (size_t)(a->nrows + 1) * 4), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, p64, a->row_ptr, (size_t)(a->nrows + 1) * 8), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, c32, a->col_idx, (size_t)a->nnz * 4), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, c64, ci64, (size_t)a->nnz * 8), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, val, a->val.d, (size_t)a->nnz * 8), SPX_OK);
  for (combo = 0; combo < 3; combo++) {
    spx_cusparse_device_csr d;
    spx_cusparse_plan *p;
    spx_cusparse_alg alg;
    spx_status s;
    char what[64];
    memset(&d, 0, sizeof d);
    d.nrows = a->nrows, d.ncols = a->ncols, d.nnz = a->nnz, d.dtype = SPX_DOUBLE, d.val = val;
    d.row_ptr_64 = combo >= 1;
    d.col_idx_64 = combo == 2;
    d.row_ptr = d.row_ptr_64 ? p64 : p32;
    d.col_idx = d.col_idx_64 ? c64 : c32;
    for (alg = SPX_CUSPARSE_BEST; alg <= SPX_CUSPARSE_CSR_ALG2; alg = (spx_cusparse_alg)(alg + 1)) {
      snprintf(what, sizeof what, "device csr (%d/%d-bit) %s", d.row_ptr_64 ? 64 : 32, d.col_idx_64 ? 64 : 32,
               spx_cusparse_alg_name(alg));
      s = spx_cusparse_plan_create_device_csr(ctx, &d, alg, NULL, &p);
      if (combo == 1) {
        /* 64-bit offsets with 32-bit columns: cuSPARSE refuses the mix, so spx does, first. */
        if (s != SPX_UNSUPPORTED || !strstr(spx_last_error(), "one width"))
          FAILED("%s: %s", what, spx_last_error());
        if (s == SPX_OK) spx_cusparse_plan_destroy(p);
        continue;
      }
      if (s != SPX_OK) {
        FAILED("%s: %s", what, spx_last_error());
        continue;
      }
      if (alg == SPX_CUSPARSE_BEST)
        print_message("  %s: chose %s\n", what, spx_cusparse_alg_name(spx_cusparse_plan_alg(p)));
      /* The matrix is not copied: the plan holds no more than vectors and a work buffer. */
      assert_true(spx_cusparse_plan_device_bytes(p) < (int64_t)a->nnz * 8);
      check_plan(ctx, p, a, a, what);
      spx_cusparse_plan_destroy(p);
    }
    /* Other layouts need the host CSR. */
    p = (spx_cusparse_plan *)&p;
    assert_int_equal(spx_cusparse_plan_create_device_csr(ctx, &d, SPX_CUSPARSE_COO_ALG1, NULL, &p),
                     SPX_UNSUPPORTED);
    assert_null(p);
  }
  /* The caller's arrays are intact after the plans went. */
  assert_int_equal(spx_device_download(ctx, back, c32, (size_t)a->nnz * 4), SPX_OK);
  assert_memory_equal(back, a->col_idx, (size_t)a->nnz * 4);
  spx_device_free(ctx, p32);
  spx_device_free(ctx, p64);
  spx_device_free(ctx, c32);
  spx_device_free(ctx, c64);
  spx_device_free(ctx, val);
  free(rp32); free(ci64); free(back);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
  assert_int_equal(failures, 0);
}

/* The plan follows the context's stream, also when it changes after the plan was made. */
static void test_stream(void **state) {
  spx_context *ctx = gpu_ctx();
  const spx__cuda_api *cu;
  spx__CUstream st = NULL;
  spx_csr *a;
  spx_cusparse_plan *p;
  int round;
  (void)state;
  if (!ctx) skip();
  failures = 0;
  cu = spx__cuda();
  assert_int_equal(spx__ctx_push(ctx), SPX_OK);
  assert_int_equal(cu->cuStreamCreate(&st, SPX__CU_STREAM_NON_BLOCKING), 0);
  spx__ctx_pop(ctx);
  assert_int_equal(spx_gen_poisson3d(20, 30, 40, 7, SPX_DOUBLE, &a), SPX_OK);
  for (round = 0; round < 2; round++) {
    /* Round 0: made on the default stream, run on st; round 1: made on st, run on the default. */
    assert_int_equal(spx_context_set_stream(ctx, round ? (void *)st : NULL), SPX_OK);
    if (spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BEST, NULL, &p) != SPX_OK)
      fail_msg("%s", spx_last_error());
    assert_int_equal(spx_context_set_stream(ctx, round ? NULL : (void *)st), SPX_OK);
    check_plan(ctx, p, a, a, round ? "on the default stream" : "on a stream");
    assert_int_equal(spx_context_set_stream(ctx, round ? (void *)st : NULL), SPX_OK);
    check_plan(ctx, p, a, a, round ? "back on a stream" : "back on the default stream");
    spx_cusparse_plan_destroy(p);
  }
  assert_int_equal(spx_context_set_stream(ctx, NULL), SPX_OK);
  assert_int_equal(spx__ctx_push(ctx), SPX_OK);
  assert_int_equal(cu->cuStreamDestroy(st), 0);
  spx__ctx_pop(ctx);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
  assert_int_equal(failures, 0);
}

/* Plans made and destroyed many times leave no device memory behind. */
static void test_no_device_leak(void **state) {
  spx_context *ctx = gpu_ctx();
  spx_csr *a;
  spx_cusparse_plan *p;
  spx_device_info before, after;
  int i;
  (void)state;
  if (!ctx) skip();
  failures = 0;
  assert_int_equal(spx_gen_elasticity3d(12, 12, 12, SPX_DOUBLE, &a), SPX_OK); /* 5.6k rows, 450k nnz */
  /* The first handle makes cuSPARSE's own lasting state; count from after it. */
  assert_int_equal(spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BEST, NULL, &p), SPX_OK);
  spx_cusparse_plan_destroy(p);
  assert_int_equal(spx_context_device_info(ctx, &before), SPX_OK);
  for (i = 0; i < 12; i++) {
    spx_cusparse_alg alg = i % 2 ? SPX_CUSPARSE_BEST : (spx_cusparse_alg)(i / 2);
    spx_status s = spx_cusparse_plan_create(ctx, a, alg, NULL, &p);
    if (s == SPX_UNSUPPORTED && alg == SPX_CUSPARSE_BSR) continue; /* no BSR SpMV in this cuSPARSE */
    if (s != SPX_OK) fail_msg("%s: %s", spx_cusparse_alg_name(alg), spx_last_error());
    spx_cusparse_plan_destroy(p);
  }
  assert_int_equal(spx_context_device_info(ctx, &after), SPX_OK);
  print_message("  free device memory before %lld, after %lld bytes\n", (long long)before.free_mem,
                (long long)after.free_mem);
  assert_true(after.free_mem >= before.free_mem - (4 << 20));
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
}

/* BEST's trial on large matrices, every time printed for the record: a 7-point Poisson matrix of a
 * million rows (double, float, and double without cusparseSpMV_preprocess) and a 3-D elasticity
 * matrix (3 unknowns a node: BSR's case). Bandwidth counts the bytes a CSR SpMV must move. */
static void test_trial_times(void **state) {
  static const struct {
    const char *name;
    int fem;
    spx_dtype dt;
    int no_preprocess;
  } cases[] = {
      {"poisson7 100^3", 0, SPX_DOUBLE, 0},
      {"poisson7 100^3", 0, SPX_FLOAT, 0},
      {"poisson7 100^3 (no preprocess)", 0, SPX_DOUBLE, 1},
      {"elasticity 40^3", 1, SPX_DOUBLE, 0},
  };
  spx_context *ctx = gpu_ctx();
  spx_csr *a;
  spx_cusparse_plan *p;
  spx_cusparse_options o;
  double ms[SPX_CUSPARSE_ALG_COUNT];
  size_t c;
  int k;
  (void)state;
  if (!ctx) skip();
  failures = 0;
  if (getenv("SPX_TEST_QUICK")) {
    spx_context_destroy(ctx);
    skip();
  }
  for (c = 0; c < sizeof cases / sizeof *cases; c++) {
    spx_dtype dt = cases[c].dt;
    const size_t vs = SPX_DTYPE_SIZE(dt);
    spx_csr *ref = NULL;
    double t0 = wall(), bytes;
    if (cases[c].fem) assert_int_equal(spx_gen_elasticity3d(40, 40, 40, dt, &a), SPX_OK);
    else assert_int_equal(spx_gen_poisson3d(100, 100, 100, 7, dt, &a), SPX_OK);
    memset(&o, 0, sizeof o);
    o.no_preprocess = cases[c].no_preprocess;
    if (spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_BEST, &o, &p) != SPX_OK) {
      FAILED("%s %s: %s", cases[c].name, spx_dtype_name(dt), spx_last_error());
      spx_csr_destroy(a);
      continue;
    }
    assert_int_equal(spx_cusparse_plan_times(p, ms), SPX_OK);
    bytes = (double)a->nnz * (4.0 + (double)vs) + (double)a->nrows * 4 +
            (double)(a->nrows + a->ncols) * (double)vs;
    print_message("  %s (%lld rows, %lld nnz) %s: best %s, plan made in %.2f s, %.1f MiB on the device\n",
                  cases[c].name, (long long)a->nrows, (long long)a->nnz, spx_dtype_name(dt),
                  spx_cusparse_alg_name(spx_cusparse_plan_alg(p)), wall() - t0,
                  (double)spx_cusparse_plan_device_bytes(p) / 1048576.0);
    for (k = 0; k < SPX_CUSPARSE_ALG_COUNT; k++) {
      const char *note = spx_cusparse_plan_note(p, (spx_cusparse_alg)k);
      if (ms[k] >= 0)
        print_message("    %-9s %8.4f ms  %6.1f GB/s%s%s%s\n", spx_cusparse_alg_name((spx_cusparse_alg)k),
                      ms[k], bytes / (ms[k] * 1e6), k == (int)spx_cusparse_plan_alg(p) ? "  <- chosen" : "",
                      *note ? "  " : "", note);
      else
        print_message("    %-9s     --      %s\n", spx_cusparse_alg_name((spx_cusparse_alg)k), note);
    }
    print_message("    preprocessed: %s; bsr block dim: %d\n",
                  spx_cusparse_plan_preprocessed(p) ? "yes" : "no", spx_cusparse_plan_bsr_block_dim(p));
    if (dt == SPX_FLOAT) assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &ref), SPX_OK);
    check_plan(ctx, p, a, ref ? ref : a, cases[c].name);
    spx_cusparse_plan_destroy(p);
    spx_csr_destroy(ref);
    spx_csr_destroy(a);
  }
  spx_context_destroy(ctx);
  assert_int_equal(failures, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alg_names),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_every_alg),
      cmocka_unit_test(test_bsr_blocks),
      cmocka_unit_test(test_sell_options),
      cmocka_unit_test(test_device_csr),
      cmocka_unit_test(test_stream),
      cmocka_unit_test(test_no_device_leak),
      cmocka_unit_test(test_trial_times),
  };
  return cmocka_run_group_tests_name("baseline", tests, NULL, NULL);
}
