/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/plan.h: the papers' heuristics branch by branch on crafted matrices, the byte
 * predictors against the converters, the cost model on a hand-filled device description, memory
 * limits, the trial on the host backend, re-selection ordering, and bad arguments. A GPU part runs
 * only with a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>
#include "spx_test.h"
#include <spx/internal/common.h>     /* spx__jobs_busy */
#include <spx/internal/cuda_types.h> /* spx__free_seen, spx__free_mem_count */
#include <spx/internal/tuner.h>      /* spx__pprof_make (the column counts) */
#include "spx_test_env.h" /* env_put */

/* n x n with the given row lengths (row i: columns i, i+1, ... wrapping), random values. */
static spx_csr *rows_matrix(int64_t n, const int64_t *len) {
  int64_t i, k, nnz = 0, q = 0;
  int32_t *r, *c;
  double *v;
  spx_csr *a = NULL;
  for (i = 0; i < n; i++) nnz += len[i];
  r = malloc((size_t)(nnz + 1) * sizeof *r); c = malloc((size_t)(nnz + 1) * sizeof *c);
  v = malloc((size_t)(nnz + 1) * sizeof *v);
  assert_true(r && c && v);
  for (i = 0; i < n; i++)
    for (k = 0; k < len[i]; k++, q++) {
      r[q] = (int32_t)i;
      c[q] = (int32_t)((i + k) % n);
      v[q] = 0.5 + 0.5 * spx_test_rand();
    }
  assert_int_equal(spx_csr_from_coo(n, n, nnz, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  free(r); free(c); free(v);
  return a;
}

/* Lengths: `base` everywhere, `big` on every `every`-th row (every 0: none), `zero_every` rows empty. */
static spx_csr *pattern(int64_t n, int64_t base, int64_t big, int64_t every) {
  int64_t *len = malloc((size_t)n * sizeof *len), i;
  spx_csr *a;
  assert_non_null(len);
  for (i = 0; i < n; i++) len[i] = every && i % every == 0 ? big : base;
  a = rows_matrix(n, len);
  free(len);
  return a;
}

static spx_format plan_with(const spx_csr *a, spx_plan_strategy st, char *reason, size_t len) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_format f;
  spx_plan_options_default(&o);
  o.strategy = st;
  o.backend = SPX_BACKEND_HOST;
  o.no_calibrate = 1;
  if (spx_plan_create(NULL, a, &o, &p) != SPX_OK) fail_msg("plan: %s", spx_last_error());
  f = spx_plan_format(p);
  assert_int_equal(spx_plan_engine_of(p), SPX_PLAN_ENGINE_SPX); /* no cuSPARSE on the host */
  if (reason) snprintf(reason, len, "%s", spx_plan_reason(p));
  spx_plan_destroy(p);
  return f;
}

static void test_strategy_names(void **state) {
  spx_plan_strategy s;
  int i;
  (void)state;
  for (i = 0; i < SPX_PLAN_STRATEGY_COUNT; i++) {
    assert_int_equal(spx_plan_strategy_parse(spx_plan_strategy_name((spx_plan_strategy)i), &s), SPX_OK);
    assert_int_equal((int)s, i);
  }
  assert_int_equal(spx_plan_strategy_parse("KUBOTA", &s), SPX_OK);
  assert_int_equal(s, SPX_PLAN_KUBOTA);
  assert_int_equal(spx_plan_strategy_parse("exam", &s), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "kubota"));
  assert_string_equal(spx_plan_strategy_name((spx_plan_strategy)99), "unknown");
}

/* Kubota (papers/001, formula (2)); R printed in %, 0.048 % = 0.00048. */
static void test_kubota_branches(void **state) {
  char why[800];
  spx_csr *a;
  (void)state;
  /* Tridiagonal-like, 3 per row, n = 10000: B = 1, R = 0.0003 < 0.00048 -> ELL. */
  a = pattern(10000, 3, 0, 0);
  assert_int_equal(plan_with(a, SPX_PLAN_KUBOTA, why, sizeof why), SPX_FORMAT_ELL);
  assert_non_null(strstr(why, "-> ell"));
  spx_csr_destroy(a);
  /* n = 1000: R = 0.003 >= 0.00048 -> cuSPARSE CSR, spx csr on the host. */
  a = pattern(1000, 3, 0, 0);
  assert_int_equal(plan_with(a, SPX_PLAN_KUBOTA, why, sizeof why), SPX_FORMAT_CSR);
  assert_non_null(strstr(why, "R = "));
  assert_non_null(strstr(why, "cuSPARSE is not available"));
  spx_csr_destroy(a);
  /* B > 8: one row of 2000 among rows of 1 (mean ~1.02). */
  a = pattern(100000, 1, 2000, 100000);
  assert_int_equal(plan_with(a, SPX_PLAN_KUBOTA, why, sizeof why), SPX_FORMAT_CSR);
  assert_non_null(strstr(why, "> 8"));
  spx_csr_destroy(a);
  /* 2 <= B <= 8: every 10th row 10 long, the rest 1 (mean 1.9, B 5.3) -> JDS. */
  a = pattern(100000, 1, 10, 10);
  assert_int_equal(plan_with(a, SPX_PLAN_KUBOTA, why, sizeof why), SPX_FORMAT_JDS);
  spx_csr_destroy(a);
  { /* B exactly 8.0 is not "> 8.0": JDS. One row of 8, 7 empty rows, the rest 1: mean 1. */
    int64_t n = 80000, i, *len = malloc((size_t)n * sizeof *len);
    spx_plan_options o;
    spx_plan *p;
    assert_non_null(len);
    for (i = 0; i < n; i++) len[i] = i == 0 ? 8 : i < 8 ? 0 : 1;
    a = rows_matrix(n, len);
    free(len);
    spx_plan_options_default(&o);
    o.strategy = SPX_PLAN_KUBOTA; o.backend = SPX_BACKEND_HOST;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    assert_true(spx_plan_analysis(p)->B == 8.0);
    assert_int_equal(spx_plan_format(p), SPX_FORMAT_JDS);
    spx_plan_destroy(p);
    spx_csr_destroy(a);
  }
}

/* The MPS thesis (5-1), read as its text means: R a fraction, CSR when B > 2.7. */
static void test_mps_branches(void **state) {
  char why[800];
  spx_csr *a;
  (void)state;
  /* n = 1000, 3 a row: R = 0.003 < 0.005455, B = 1 -> ELL (Kubota says CSR here). */
  a = pattern(1000, 3, 0, 0);
  assert_int_equal(plan_with(a, SPX_PLAN_MPS, why, sizeof why), SPX_FORMAT_ELL);
  assert_int_equal(plan_with(a, SPX_PLAN_KUBOTA, NULL, 0), SPX_FORMAT_CSR);
  spx_csr_destroy(a);
  /* n = 300: R = 0.01 >= 0.005455 -> CSR. */
  a = pattern(300, 3, 0, 0);
  assert_int_equal(plan_with(a, SPX_PLAN_MPS, why, sizeof why), SPX_FORMAT_CSR);
  spx_csr_destroy(a);
  /* B > 2.7 (one row of 30 among rows of 1) -> CSR. */
  a = pattern(1000, 1, 30, 1000);
  assert_int_equal(plan_with(a, SPX_PLAN_MPS, why, sizeof why), SPX_FORMAT_CSR);
  assert_non_null(strstr(why, "> 2.7"));
  spx_csr_destroy(a);
  /* 2.3 <= B = 2.5 <= 2.7, R small -> JDS (the literal "B < 2.7 -> CSR" would say CSR). */
  a = pattern(10000, 1, 3, 10);
  {
    spx_analysis an;
    assert_int_equal(spx_analyze(a, &an), SPX_OK);
    assert_true(an.B > 2.3 && an.B < 2.7);
  }
  assert_int_equal(plan_with(a, SPX_PLAN_MPS, why, sizeof why), SPX_FORMAT_JDS);
  spx_csr_destroy(a);
}

/* Every predicted byte count equals what the converter stores. */
static void test_predicted_bytes(void **state) {
  spx_csr *m[4];
  spx_plan_device d;
  int i, j;
  (void)state;
  assert_int_equal(spx_plan_device_default(NULL, &d), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(12, 11, 10, 7, SPX_DOUBLE, &m[0]), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(5000, 2.0, 1, 300, 11, SPX_FLOAT, &m[1]), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(4, 3, 3, SPX_DOUBLE, &m[2]), SPX_OK);
  m[3] = pattern(20000, 2, 40, 7);
  for (i = 0; i < 4; i++) {
    spx_plan_candidate c[SPX_FORMAT_MAX + 1];
    int n, checked = 0;
    assert_int_equal(spx_plan_model(m[i], &d, 100, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
    assert_true(n >= 5);
    for (j = 0; j < n; j++) {
      spx_fmt *f = NULL;
      spx_status s = spx_fmt_from_csr(m[i], c[j].format, NULL, &f);
      if (s == SPX_UNSUPPORTED) { assert_int_equal(c[j].fits, 0); continue; }
      assert_int_equal(s, SPX_OK);
      if (spx_fmt_bytes(f) != c[j].bytes)
        fail_msg("matrix %d, %s: predicted %lld bytes, stored %lld", i, spx_format_name(c[j].format),
                 (long long)c[j].bytes, (long long)spx_fmt_bytes(f));
      checked += !c[j].bytes_exact;
      spx_fmt_destroy(f);
    }
    assert_true(checked >= 8); /* most formats predicted, not converted */
    spx_csr_destroy(m[i]);
  }
}

/* Above 2^20 nonzeros the column counts come from sampled windows: close to the converter's bytes
 * on a regular matrix, and marked as estimates. */
static void test_sampled_bytes(void **state) {
  spx_csr *a;
  spx_plan_device d;
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  int n, j, sampled = 0;
  (void)state;
  assert_int_equal(spx_plan_device_default(NULL, &d), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(36, 36, 36, SPX_DOUBLE, &a), SPX_OK); /* 4.5M nonzeros */
  assert_true(a->nnz > (1 << 20));
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  for (j = 0; j < n; j++) {
    const char *nm = spx_format_name(c[j].format);
    spx_fmt *f = NULL;
    double err;
    if (strcmp(nm, "bsr") && strcmp(nm, "sell") && strcmp(nm, "sell16") && strcmp(nm, "rbp_csr")) continue;
    assert_false(c[j].bytes_exact);
    /* 78 nonzeros a row: the sample's nonzero budget (2^18) leaves the floor of 16 windows */
    assert_non_null(strstr(c[j].note, "from 16 sampled windows"));
    assert_int_equal(spx_fmt_from_csr(a, c[j].format, NULL, &f), SPX_OK);
    err = fabs((double)c[j].bytes / (double)spx_fmt_bytes(f) - 1);
    if (err > 0.03) fail_msg("%s: sampled %lld bytes, stored %lld", nm, (long long)c[j].bytes, (long long)spx_fmt_bytes(f));
    sampled++;
    spx_fmt_destroy(f);
  }
  assert_int_equal(sampled, 4);
  spx_csr_destroy(a);
  /* 7 nonzeros a row: all 64 windows fit the budget */
  assert_int_equal(spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  for (j = 0, sampled = 0; j < n; j++)
    if (!strcmp(spx_format_name(c[j].format), "sell")) {
      assert_non_null(strstr(c[j].note, "from 64 sampled windows"));
      sampled++;
    }
  assert_int_equal(sampled, 1);
  spx_csr_destroy(a);
}

static spx_plan_device fake_gpu(void) {
  spx_plan_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "fake");
  d.bandwidth_gbs = 1000; d.launch_us = 5; d.imbalance_weight = 1; d.x_miss = 0;
  d.cache_bytes = (int64_t)1 << 40; d.warp = 32; d.cusparse_factor = 1.25; d.h2d_gbs = 10;
  d.convert_ns_per_byte = 2; d.convert_ns_per_nnz = 1; d.jit_ms = 3; d.memory_bytes = 0;
  return d;
}

static const spx_plan_candidate *cand(const spx_plan_candidate *c, int n, const char *name, int cusparse) {
  int i;
  for (i = 0; i < n; i++)
    if (!strcmp(spx_format_name(c[i].format), name) && (c[i].engine == SPX_PLAN_ENGINE_CUSPARSE) == cusparse) return &c[i];
  fail_msg("no candidate %s", name);
  return NULL;
}

/* Random x gathers (spx_plan_device.format_gather): a matrix with random columns over a span past
 * the cache pays each format's gather cost per microsecond of its gather bytes, cuSPARSE its own,
 * a format without one gather_default; a banded matrix, whose windows stay in a small part of the
 * cache, pays almost nothing. */
static void test_model_gather(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c0[SPX_FORMAT_MAX + 1], c1[SPX_FORMAT_MAX + 1];
  const int64_t n = 200000, per = 4, ncols = 2000000;
  int32_t *r = malloc((size_t)(n * per) * sizeof *r), *col = malloc((size_t)(n * per) * sizeof *col);
  spx_csr *rnd = NULL, *band = NULL;
  double dcsr, dcs, dhyb, unit;
  int64_t i;
  int n0, n1;
  (void)state;
  assert_non_null(r); assert_non_null(col);
  for (i = 0; i < n * per; i++) { /* distinct random columns in each row (a 64-bit LCG) */
    uint64_t x = (uint64_t)i * 6364136223846793005ull + 1442695040888963407ull;
    r[i] = (int32_t)(i / per);
    col[i] = (int32_t)((i % per) * (ncols / per) + (int64_t)((x >> 33) % (uint64_t)(ncols / per)));
  }
  assert_int_equal(spx_csr_from_coo(n, ncols, n * per, r, col, NULL, SPX_DOUBLE, &rnd), SPX_OK);
  free(r); free(col);
  d.cache_bytes = 1 << 20; /* the 16 MB x and every window's span (about 16 MB) are past it */
  assert_int_equal(spx_plan_model(rnd, &d, 100, 0, 1, c0, SPX_FORMAT_MAX + 1, &n0), SPX_OK);
  d.format_gather[SPX_FORMAT_CSR] = 2; d.gather_default = 1; d.gather_cusparse = 0.5;
  assert_int_equal(spx_plan_model(rnd, &d, 100, 0, 1, c1, SPX_FORMAT_MAX + 1, &n1), SPX_OK);
  assert_int_equal(n0, n1);
  dcsr = cand(c1, n1, "csr", 0)->predicted_us - cand(c0, n0, "csr", 0)->predicted_us;
  dcs = cand(c1, n1, "csr", 1)->predicted_us - cand(c0, n0, "csr", 1)->predicted_us;
  dhyb = cand(c1, n1, "hyb", 0)->predicted_us - cand(c0, n0, "hyb", 0)->predicted_us;
  /* one gather unit: nnz x 32 B x (sectors per nonzero, about 1 here) at 1000 GB/s */
  unit = (double)(n * per) * 32.0 / 1e6;
  assert_true(dcsr > 2 * 0.9 * unit && dcsr <= 2 * unit * (1 + 1e-9));
  assert_true(fabs(dcs - dcsr / 4) < 1e-9 * dcsr);  /* 0.5 against 2 */
  assert_true(fabs(dhyb - dcsr / 2) < 1e-9 * dcsr); /* gather_default 1 */
  spx_csr_destroy(rnd);
  /* A 7-point stencil: windows span 2 planes (2 x 64 x 64 x 8 B = 64 KiB, 1/16 of the cache) and
   * read a sector per ~5 nonzeros: about 1% of one unit (under 3%), where random columns pay 90+%. */
  assert_int_equal(spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &band), SPX_OK);
  memset(d.format_gather, 0, sizeof d.format_gather); d.gather_default = 0; d.gather_cusparse = 0;
  assert_int_equal(spx_plan_model(band, &d, 100, 0, 1, c0, SPX_FORMAT_MAX + 1, &n0), SPX_OK);
  d.format_gather[SPX_FORMAT_CSR] = 2;
  assert_int_equal(spx_plan_model(band, &d, 100, 0, 1, c1, SPX_FORMAT_MAX + 1, &n1), SPX_OK);
  dcsr = cand(c1, n1, "csr", 0)->predicted_us - cand(c0, n0, "csr", 0)->predicted_us;
  assert_true(dcsr > 0 && dcsr < 0.03 * 2 * (double)band->nnz * 32.0 / 1e6);
  spx_csr_destroy(band);
}

/* A CSR staged on the device runs spx's kernel on the staged arrays, with the options
 * spx_csr_kernel_options derives from the row-length histogram: the same kernel, launches and
 * specialization constants as the host rule picks from the rows themselves; a histogram that does
 * not add up is refused. */
static void test_csr_staged_options(void **state) {
  spx_csr *m[9];
  int k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(48, 48, 48, 7, SPX_DOUBLE, &m[0]), SPX_OK);    /* short rows: stream */
  assert_int_equal(spx_gen_elasticity3d(12, 12, 12, SPX_DOUBLE, &m[1]), SPX_OK);    /* ~80 a row: vector, 8 lanes */
  assert_int_equal(spx_gen_powerlaw(200000, 2.2, 2, 2000, 5, SPX_DOUBLE, &m[2]), SPX_OK); /* skewed, <= 2048: stream */
  assert_int_equal(spx_gen_powerlaw(200000, 2.0, 2, 6000, 5, SPX_DOUBLE, &m[3]), SPX_OK); /* rows past 2048: merge path */
  m[4] = pattern(20000, 100, 0, 0);      /* 100 a row, uniform: vector, 16 lanes */
  m[5] = pattern(20000, 40, 3000, 997);  /* mean > 32, skewed: merge path */
  /* under 100000 nonzeros, where the host rule reads the longest row and the squares too */
  m[6] = pattern(3000, 6, 0, 0);         /* uniform: lanes from the mean */
  m[7] = pattern(3000, 6, 150, 499);     /* a few rows of 150: widened */
  m[8] = pattern(3000, 6, 2500, 1499);   /* rows of 2500: widened to a warp, then split */
  for (k = 0; k < 9; k++) {
    spx_fmt *f = NULL;
    spx_kernel_plan want, got;
    spx_dmatrix_options o;
    int64_t *hist, rmax = 0, i, j;
    const spx_csr *a = m[k];
    assert_true(k < 6 ? a->nnz >= 100000 : a->nnz < 100000);
    for (i = 0; i < a->nrows; i++) rmax = a->row_ptr[i + 1] - a->row_ptr[i] > rmax ? a->row_ptr[i + 1] - a->row_ptr[i] : rmax;
    hist = calloc((size_t)rmax + 1, sizeof *hist);
    assert_non_null(hist);
    for (i = 0; i < a->nrows; i++) hist[a->row_ptr[i + 1] - a->row_ptr[i]]++;
    assert_int_equal(spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &f), SPX_OK);
    assert_int_equal(spx_dmatrix_plan(f, NULL, &want), SPX_OK);
    assert_int_equal(spx_csr_kernel_options(a->nrows, a->nnz, hist, rmax, &o), SPX_OK);
    assert_int_equal(spx_dmatrix_plan(f, &o, &got), SPX_OK);
    if (want.nlaunch != got.nlaunch) fail_msg("matrix %d: %s | %s", k, want.summary, got.summary);
    for (i = 0; i < want.nlaunch; i++) {
      assert_string_equal(want.launch[i].kernel, got.launch[i].kernel);
      assert_int_equal(want.launch[i].ndefines, got.launch[i].ndefines);
      for (j = 0; j < want.launch[i].ndefines; j++) assert_string_equal(want.launch[i].defines[j], got.launch[i].defines[j]);
      assert_int_equal(want.launch[i].grid[0], got.launch[i].grid[0]);
      assert_int_equal(want.launch[i].block[0], got.launch[i].block[0]);
    }
    print_message("%d: %s\n", k, want.summary);
    if (k >= 6) { /* one lane a row from the mean; 32 for the long rows, whose 2500 then split */
      assert_int_equal(o.threads_per_row, k == 6 ? 1 : 32);
      assert_int_equal(o.split, k == 8);
    }
    hist[0]++;
    assert_int_equal(spx_csr_kernel_options(a->nrows, a->nnz, hist, rmax, &o), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "histogram"));
    free(hist);
    spx_fmt_destroy(f);
    spx_csr_destroy(m[k]);
  }
}

/* The model's formula on a hand-filled device, checked against arithmetic done here. */
static void test_model_fake_device(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  const spx_plan_candidate *csr, *ell, *cs, *er;
  spx_csr *a = pattern(64000, 4, 0, 0);
  double moved, want;
  int n;
  (void)state;
  d.chain_ns = 1e-6; /* no latency floor: these are the streaming formulas (test_model_latency has it) */
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 1, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  csr = cand(c, n, "csr", 0); ell = cand(c, n, "ell", 0); cs = cand(c, n, "csr", 1);
  /* Uniform rows: CSR has no idle lanes; bytes (n+1)*4 + nnz*12, plus x and y. */
  assert_int_equal(csr->bytes, 4 * (64000 + 1) + 64000 * 4 * 12);
  moved = (double)csr->bytes + 8.0 * 2 * 64000;
  want = 5 + moved / 1e6;
  assert_true(fabs(csr->predicted_us - want) < 1e-9 * want);
  assert_true(fabs(cs->predicted_us - 1.25 * want) < 1e-9 * want);
  /* Conversion: 1 ns/nnz + 2 ns/byte + upload at 10 GB/s + one compile. */
  want = 1e-6 * (1.0 * 256000 + 2.0 * (double)csr->bytes) + (double)csr->bytes / 1e7 + 3;
  assert_true(fabs(csr->convert_ms - want) < 1e-9 * want);
  assert_true(fabs(csr->score_us - (csr->predicted_us + 1e3 * csr->convert_ms / 100)) < 1e-9 * csr->score_us);
  assert_true(ell->padding == 1.0 && ell->bytes == 64000 * 4 * 12);
  /* cuSPARSE's call floor: its prediction is at least cusparse_call_us, its streaming part stays;
   * spx's kernels keep theirs */
  d.cusparse_call_us = 4 * cs->predicted_us;
  want = cs->predicted_us;
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 1, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  cs = cand(c, n, "csr", 1);
  assert_true(cs->predicted_us == d.cusparse_call_us && fabs(cs->stream_us - want) < 1e-9 * want);
  assert_true(fabs(cand(c, n, "csr", 0)->predicted_us - want / 1.25) < 1e-9 * want);
  d.cusparse_call_us = 0.5 * want;
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 1, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  assert_true(fabs(cand(c, n, "csr", 1)->predicted_us - want) < 1e-9 * want);
  spx_csr_destroy(a);

  /* Skewed rows: one thread per row (ELL-R) idles lanes; the imbalance term makes it slower than
   * its balanced cost, and a weight of 0 removes exactly that term. */
  a = pattern(64000, 2, 64, 33);
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  er = cand(c, n, "ell_r", 0);
  assert_true(er->idle > 1.0);
  {
    double with = er->predicted_us, idle = er->idle * (double)a->nnz;
    d.imbalance_weight = 0;
    assert_int_equal(spx_plan_model(a, &d, 100, 0, 0, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
    er = cand(c, n, "ell_r", 0);
    assert_true(fabs(with - er->predicted_us - idle * 12 / 1e6) < 1e-6 * with);
    d.imbalance_weight = 1;
  }
  spx_csr_destroy(a);

  /* expected_calls moves the decision: conversion dominates at 1 call, the SpMV at 1e9. */
  {
    spx_plan_options o;
    spx_plan *p;
    const spx_plan_candidate *pc;
    int i, best_conv = -1, best_t = -1;
    a = pattern(50000, 3, 12, 5);
    spx_plan_options_default(&o);
    d.convert_ns_per_byte = 200; /* slow conversion */
    o.device = &d; o.strategy = SPX_PLAN_MODEL; o.backend = SPX_BACKEND_HOST;
    o.convert_margin = 0; /* the score alone (test_convert_margin has the margin) */
    o.expected_calls = 1;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    pc = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) {
      if (!pc[i].fits) continue;
      if (best_conv < 0 || pc[i].score_us < pc[best_conv].score_us) best_conv = i;
    }
    assert_int_equal(spx_plan_format(p), pc[best_conv].format);
    spx_plan_destroy(p);
    o.expected_calls = 1000000000;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    pc = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++)
      if (pc[i].fits && (best_t < 0 || pc[i].predicted_us < pc[best_t].predicted_us)) best_t = i;
    assert_int_equal(spx_plan_format(p), pc[best_t].format);
    assert_non_null(strstr(spx_plan_reason(p), "model: "));
    spx_plan_destroy(p);
    spx_csr_destroy(a);
  }
}

/* Formats that would not fit are excluded; a heuristic's ELL that does not fit falls back. */
/* The latency terms (issue 29): a format that gives a row to one thread walks it in chain_ns
 * steps. One dense row: ELL-R, JDS and SELL walk its length x chain_ns x their factors (RBP-ELL(-R)
 * its one block, four values a step), and
 * predict at least the launch and that walk after it (no floor measured); CSR (lanes per row, at
 * most ~8 steps on a small matrix) and COO do not, and the model's choice is neither of the row
 * formats; the long rows' blocks take the device's block slots in rounds (more copies of the long
 * row, fewer SMs: longer); a tiny matrix has no floor above its own short rows. A measured floor
 * holds the floor probe's walk (rows of 7): only the steps beyond it add to the floor. */
static void test_model_latency(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  const int64_t n = 4096, dense = 4000;
  int64_t *len = malloc((size_t)(64 * n) * sizeof *len), i;
  spx_csr *a, *b, *t;
  int nc, k;
  double lo, best;
  const char *row_formats[] = {"ell_r", "jds", "sell", "ell"};
  (void)state;
  assert_non_null(len);
  d.chain_ns = 100; d.sms = 4;
  for (i = 0; i < n; i++) len[i] = i == 0 ? dense : 2;
  a = rows_matrix(n, len);
  assert_int_equal(spx_plan_model(a, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  for (k = 0; k < 4; k++) {
    const spx_plan_candidate *r = cand(c, nc, row_formats[k], 0);
    const double walk = 0.1 * (double)dense * spx_test_walk_factor(r->format);
    if (fabs(r->chain_us - walk) > 1e-9 * walk || r->predicted_us < d.launch_us + r->chain_us - 1e-9)
      fail_msg("%s: chain %.2f us, predicted %.2f us, want %.2f and at least %.2f more", row_formats[k], r->chain_us,
               r->predicted_us, walk, d.launch_us);
  }
  for (k = 0; k < 2; k++) {
    /* RBP-ELL(-R) walk a row's block pairs and isolated nonzeros a step each and a block's values
     * four to a step, the most of each a row holds: the dense row is one block of 4000 (1 + 1000
     * steps), the last row wraps to columns n - 1 and 0 (two isolated nonzeros) */
    const spx_plan_candidate *r = cand(c, nc, k ? "rbp_ell_r" : "rbp_ell", 0);
    const double walk = 0.1 * (1.0 + 2.0 + (double)dense / 4.0) * spx_test_walk_factor(r->format);
    if (fabs(r->chain_us - walk) > 1e-9 * walk)
      fail_msg("%s: chain %.2f us, want %.2f", spx_format_name(r->format), r->chain_us, walk);
  }
  {
    /* a measured floor: the walk beyond the probe's rows of 7 adds to it */
    const spx_plan_candidate *r;
    d.format_floor_us[SPX_FORMAT_ELL_R] = 3;
    assert_int_equal(spx_plan_model(a, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
    r = cand(c, nc, "ell_r", 0);
    assert_true(fabs(r->predicted_us - fmax(r->stream_us, 3 + 0.1 * (double)(dense - 7) * spx_test_walk_factor(SPX_FORMAT_ELL_R))) <
                1e-9 * r->predicted_us);
    d.format_floor_us[SPX_FORMAT_ELL_R] = 0;
    assert_int_equal(spx_plan_model(a, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  }
  assert_true(cand(c, nc, "csr", 0)->chain_us <= 8 * 0.1 + 1e-9);
  assert_true(cand(c, nc, "coo", 0)->chain_us == 0 && cand(c, nc, "csr", 1)->chain_us == 0);
  for (k = 0, best = 1e30, lo = -1; k < nc; k++)
    if (c[k].fits && c[k].predicted_us > 0 && c[k].predicted_us < best) { best = c[k].predicted_us; lo = k; }
  assert_true(lo >= 0);
  for (k = 0; k < 4; k++) assert_string_not_equal(spx_format_name(c[(int)lo].format), row_formats[k]);
  {
    double one = cand(c, nc, "ell_r", 0)->chain_us;
    /* 64 copies of the long row, each in its own block of 256 rows: 64 blocks over 4 x 8 slots */
    for (i = 0; i < 64 * n; i++) len[i] = i % n == 0 ? dense : 2;
    b = rows_matrix(64 * n, len);
    assert_int_equal(spx_plan_model(b, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
    assert_true(fabs(cand(c, nc, "ell_r", 0)->chain_us - 2 * one) < 1e-9 * one);
    d.sms = 64; /* 512 slots: one round */
    assert_int_equal(spx_plan_model(b, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
    assert_true(fabs(cand(c, nc, "ell_r", 0)->chain_us - one) < 1e-9 * one);
    d.warp = 1; /* the host: no lanes in lock step, no floor */
    assert_int_equal(spx_plan_model(b, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
    assert_true(cand(c, nc, "ell_r", 0)->chain_us == 0);
    d.warp = 32;
    spx_csr_destroy(b);
  }
  len[0] = 3; len[1] = 1;
  t = rows_matrix(2, len);
  assert_int_equal(spx_plan_model(t, &d, 10, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  assert_true(cand(c, nc, "ell_r", 0)->chain_us <= 3 * 0.1 + 1e-9);
  spx_csr_destroy(t);
  spx_csr_destroy(a);
  free(len);
}

/* A ROW-lane kernel (ELL-R, RBP-ELL-R) walks each row to its end in lock step with its warp: it
 * moves its warps' slots, not the padding it stores up to the matrix's longest row. Rows of 2 and
 * one of 2000: ELL-R stores n x 2000 slots (its bytes, which the memory limit reads) but is
 * predicted near CSR, far below ELL, which reads every padded slot; RBP-ELL-R likewise. */
static void test_model_row_read(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  const int64_t n = 64000;
  int64_t *len = malloc((size_t)n * sizeof *len), i;
  spx_csr *a;
  int nc;
  double ell, ellr, csr;
  (void)state;
  assert_non_null(len);
  d.imbalance_weight = 0;
  for (i = 0; i < n; i++) len[i] = i == 100 ? 2000 : 2;
  a = rows_matrix(n, len);
  assert_int_equal(spx_plan_model(a, &d, 1000000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  ell = cand(c, nc, "ell", 0)->stream_us;
  ellr = cand(c, nc, "ell_r", 0)->stream_us;
  csr = cand(c, nc, "csr", 0)->stream_us;
  assert_true(cand(c, nc, "ell_r", 0)->bytes >= n * 2000 * 12); /* stored: the padding is allocated */
  if (!(ellr < 0.05 * ell) || !(ellr < 3 * csr))
    fail_msg("ell_r streams %.2f us against ell's %.2f and csr's %.2f", ellr, ell, csr);
  if (!(cand(c, nc, "rbp_ell_r", 0)->stream_us < 0.05 * cand(c, nc, "rbp_ell_r", 0)->bytes / (d.bandwidth_gbs * 1e3)))
    fail_msg("rbp_ell_r streams %.2f us for %lld stored bytes", cand(c, nc, "rbp_ell_r", 0)->stream_us,
             (long long)cand(c, nc, "rbp_ell_r", 0)->bytes);
  spx_csr_destroy(a);
  free(len);
}

/* Rows of k nonzeros at columns i, i + stride, ... (stride 1: one block of k; 2: k isolated). */
static spx_csr *strided_rows(int64_t n, int64_t k, int64_t stride) {
  int64_t i, j, q = 0;
  int32_t *r = malloc((size_t)(n * k) * sizeof *r), *c = malloc((size_t)(n * k) * sizeof *c);
  double *v = malloc((size_t)(n * k) * sizeof *v);
  spx_csr *a = NULL;
  assert_true(r && c && v);
  for (i = 0; i < n; i++)
    for (j = 0; j < k; j++, q++) {
      r[q] = (int32_t)i;
      c[q] = (int32_t)(i + stride * j);
      v[q] = 1.0 + (double)j;
    }
  assert_int_equal(spx_csr_from_coo(n, n + stride * k, n * k, r, c, v, SPX_DOUBLE, &a), SPX_OK);
  free(r); free(c); free(v);
  return a;
}

/* A format's streaming prediction on the fake device for `moved` bytes (no factor, no idle term). */
static double fake_stream_us(const spx_plan_device *d, const spx_csr *a, double moved) {
  return d->launch_us + (moved + 8.0 * (double)(a->nrows + a->ncols)) / (d->bandwidth_gbs * 1e3);
}

/* The column counts the model reads (spx__pprof_columns), counted the plain way: each row's runs
 * of consecutive columns, BSR's distinct blocks per block size, SELL's slots unsorted and with each
 * 256-row window sorted by length, each 32-row slice's distinct diagonals and x sectors, each
 * window's column span. */
typedef struct cols_ref {
  int64_t nblocks, nval, nnon, max_blocks, max_bval, max_iso, bsr[9], sell[2], sdia_diags, sdia_slots;
  int64_t x_sectors, x_nnz, x_span, x_windows;
} cols_ref;

static int cmp_i64_asc(const void *x, const void *y) {
  const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* Distinct values among t[0..m), sorted in place. */
static int64_t distinct(int64_t *t, int64_t m) {
  int64_t k, u = 0;
  qsort(t, (size_t)m, sizeof *t, cmp_i64_asc);
  for (k = 0; k < m; k++) u += k == 0 || t[k] != t[k - 1];
  return u;
}

static void cols_reference(const spx_csr *a, cols_ref *r) {
  const int64_t n = a->nrows, sh = SPX_DTYPE_SIZE(a->dtype) == 8 ? 2 : 3;
  int64_t *t = malloc((size_t)(a->nnz + 1) * sizeof *t), i, k, b, w0;
  assert_non_null(t);
  memset(r, 0, sizeof *r);
  for (i = 0; i < n; i++) { /* runs: a nonzero whose column follows its neighbour's continues one */
    int64_t e = a->row_ptr[i + 1], blocks = 0, bval = 0;
    for (k = a->row_ptr[i]; k < e;) {
      int64_t j = k + 1;
      while (j < e && a->col_idx[j] == a->col_idx[j - 1] + 1) j++;
      if (j - k >= 2) { blocks++; bval += j - k; }
      else r->nnon++;
      k = j;
    }
    r->nblocks += blocks; r->nval += bval;
    if (blocks > r->max_blocks) r->max_blocks = blocks;
    if (bval > r->max_bval) r->max_bval = bval;
    if (e - a->row_ptr[i] - bval > r->max_iso) r->max_iso = e - a->row_ptr[i] - bval;
  }
  for (b = 1; b <= 8; b++) /* block rows of b rows: distinct block columns */
    for (i = 0; i < n; i += b) {
      int64_t m = 0;
      for (k = a->row_ptr[i]; k < a->row_ptr[i + b < n ? i + b : n]; k++) t[m++] = a->col_idx[k] / b;
      r->bsr[b] += distinct(t, m);
    }
  for (w0 = 0; w0 < n; w0 += 256) {
    const int64_t w1 = w0 + 256 < n ? w0 + 256 : n;
    int64_t len[256], s0, lo = INT64_MAX, hi = -1;
    for (i = w0; i < w1; i++) {
      const int64_t rb = a->row_ptr[i], e = a->row_ptr[i + 1];
      const int64_t l = e > rb ? a->col_idx[rb] : (i < a->ncols ? i : a->ncols - 1), h = e > rb ? a->col_idx[e - 1] : l;
      len[i - w0] = e - rb;
      if (l < lo) lo = l;
      if (h > hi) hi = h;
    }
    if (hi >= lo) { r->x_span += hi - lo + 1; r->x_windows++; }
    for (s0 = w0; s0 < w1; s0 += 32) { /* slices: unsorted slots, diagonals, x sectors */
      const int64_t s1 = s0 + 32 < w1 ? s0 + 32 : w1;
      int64_t most = 0, m = 0, u;
      for (i = s0; i < s1; i++) if (len[i - w0] > most) most = len[i - w0];
      r->sell[0] += 32 * most;
      for (i = s0; i < s1; i++)
        for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) t[m++] = (int64_t)a->col_idx[k] - i;
      u = distinct(t, m);
      r->sdia_diags += u;
      r->sdia_slots += u * (s1 - s0);
      for (m = 0, k = a->row_ptr[s0]; k < a->row_ptr[s1]; k++) t[m++] = (int64_t)a->col_idx[k] >> sh;
      r->x_sectors += distinct(t, m);
      r->x_nnz += m;
    }
    for (i = 0; i < w1 - w0; i++) t[i] = -len[i]; /* sorted by length, longest first */
    qsort(t, (size_t)(w1 - w0), sizeof *t, cmp_i64_asc);
    for (i = 0; i < w1 - w0; i += 32) r->sell[1] += 32 * -t[i];
  }
  free(t);
}

/* spx__pprof_columns against the plain count, field by field, on matrices with scattered columns,
 * blocks, runs, empty rows and a dense row, and on shared matrices where ../shared is present (the
 * profile counts without branches and reads SELL's sorted slots off a count of the lengths: this
 * holds it to what it counts). */
static void test_profile_columns(void **state) {
  static const char *const shared[] = {"bp_400", "Erdos971", "494_bus", "bcsstk13", "cs4", "whitaker3"};
  spx_csr *m[5 + sizeof shared / sizeof *shared];
  const char *names[5 + sizeof shared / sizeof *shared] = {"power-law 3000", "poisson7 12x11x10", "elasticity 5^3",
                                                           "empty and dense rows", "power-law 5000 long rows"};
  int64_t len[700];
  int nm = 5, k, b;
  (void)state;
  assert_int_equal(spx_gen_powerlaw(3000, 2.0, 1, 300, 5, SPX_DOUBLE, &m[0]), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(12, 11, 10, 7, SPX_DOUBLE, &m[1]), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(5, 5, 5, SPX_DOUBLE, &m[2]), SPX_OK);
  for (k = 0; k < 700; k++) len[k] = k == 350 ? 700 : k % 7 == 0 ? 0 : k % 13 + 1;
  m[3] = rows_matrix(700, len);
  assert_int_equal(spx_gen_powerlaw(5000, 1.5, 2, 2000, 9, SPX_DOUBLE, &m[4]), SPX_OK); /* past the count's 1024 */
  for (k = 0; k < (int)(sizeof shared / sizeof *shared); k++) {
    char path[1024];
    spx_test_matrix_path(shared[k], path, sizeof path);
    if (access(path, R_OK)) continue;
    m[nm] = spx_test_shared(shared[k]);
    names[nm++] = shared[k];
  }
  print_message("column counts checked on %d matrices, %d of them shared\n", nm, nm - 5);
  for (k = 0; k < nm; k++) {
    spx__pprof p;
    cols_ref r;
    assert_int_equal(spx__pprof_make(m[k], 32, 1, NULL, &p), SPX_OK);
    if (p.sampled || !p.cols_done) fail_msg("%s: sampled %d, columns done %d", names[k], p.sampled, p.cols_done);
    cols_reference(m[k], &r);
#define SAME(field, ref)                                                                                     \
  if (p.field != ref) fail_msg("%s: %s %lld, counted %lld", names[k], #field, (long long)p.field, (long long)ref)
    SAME(nblocks, r.nblocks); SAME(nval, r.nval); SAME(nnon, r.nnon);
    SAME(max_blocks, r.max_blocks); SAME(max_bval, r.max_bval); SAME(max_iso, r.max_iso);
    for (b = 1; b <= 8; b++) SAME(bsr_blocks[b], r.bsr[b]);
    SAME(sell_slots[0], r.sell[0]); SAME(sell_slots[1], r.sell[1]);
    SAME(sdia_diags, r.sdia_diags); SAME(sdia_slots, r.sdia_slots);
    SAME(x_sectors, r.x_sectors); SAME(x_nnz, r.x_nnz); SAME(x_span, r.x_span); SAME(x_windows, r.x_windows);
#undef SAME
    spx__pprof_free(&p);
    spx_csr_destroy(m[k]);
  }
}

/* Walks of their own (issue 29): a thread that walks its own stretch of memory alone reads a whole
 * 32-byte sector per value and per index once its walk is long (28 entries and more), the share
 * (run / 28)^2 of that below. RBP-CSR on rows of one block of 64 runs one lane per row: each value
 * moves a sector (24 bytes more in double); RBP-ELL(-R)'s isolated nonzeros (every other column),
 * 40 a row, move a sector of value and one of index each (52 more). Rows of 4 add 1/49 of that. */
static void test_model_own_walks(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  const int64_t n = 20000;
  spx_csr *a;
  const spx_plan_candidate *r;
  int nc;
  double want;
  (void)state;
  d.chain_ns = 1e-6; d.imbalance_weight = 0;
  a = strided_rows(n, 64, 1);
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  r = cand(c, nc, "rbp_csr", 0);
  want = fake_stream_us(&d, a, (double)r->bytes + 24.0 * (double)a->nnz);
  if (fabs(r->stream_us - want) > 1e-9 * want) fail_msg("rbp_csr, blocks of 64: %.4f us, want %.4f", r->stream_us, want);
  spx_csr_destroy(a);
  a = strided_rows(n, 4, 1);
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  r = cand(c, nc, "rbp_csr", 0);
  want = fake_stream_us(&d, a, (double)r->bytes + 24.0 * (double)a->nnz / 49.0);
  if (fabs(r->stream_us - want) > 1e-6 * want) fail_msg("rbp_csr, blocks of 4: %.4f us, want %.4f", r->stream_us, want);
  spx_csr_destroy(a);
  a = strided_rows(n, 40, 2);
  assert_int_equal(spx_plan_model(a, &d, 100, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  /* no blocks: RBP-ELL walks one padding pair (8 bytes) a row, RBP-ELL-R its row length (4) */
  want = fake_stream_us(&d, a, 8.0 * (double)n + 4.0 * (double)(n + 1) + (12.0 + 52.0) * (double)a->nnz);
  r = cand(c, nc, "rbp_ell", 0);
  if (fabs(r->stream_us - want) > 1e-9 * want) fail_msg("rbp_ell, 40 isolated: %.4f us, want %.4f", r->stream_us, want);
  want -= 4.0 * (double)n / (d.bandwidth_gbs * 1e3);
  r = cand(c, nc, "rbp_ell_r", 0);
  if (fabs(r->stream_us - want) > 1e-9 * want) fail_msg("rbp_ell_r, 40 isolated: %.4f us, want %.4f", r->stream_us, want);
  spx_csr_destroy(a);
}

/* The calibration's per-format floors are measured for every format with a kernel: each probe
 * converts with the parameters a plan converts with (zeroed ones are out of range for ELL, SELL,
 * SELL16, SDIA, BSR and SS, whose floors then went unmeasured), in rounds, each floor the least of
 * its rounds. On the host backend, whose timings stand in for the GPU's: the probes are the same
 * code. */
spx_status spx__plan_cal_floors(spx_context *ctx, spx_plan_device *d); /* test hook (plan_calibrate_impl.h) */
extern double (*spx__cal_test_noise)(int f, int round); /* test hook (plan_calibrate_impl.h) */
static double cal_transient(int f, int round) { return round == 0 || f == SPX_FORMAT_ELL ? 1e5 : 0; }
static void test_calibration_floors(void **state) {
  spx_context_options co = {SPX_BACKEND_HOST, 0};
  spx_context *h = NULL;
  spx_plan_device d;
  int f, n = 0;
  (void)state;
  assert_int_equal(spx_context_create(&co, &h), SPX_OK);
  memset(&d, 0, sizeof d);
  assert_int_equal(spx__plan_cal_floors(h, &d), SPX_OK);
  for (f = 0; f < spx_format_count() && f < SPX_FORMAT_MAX; f++) {
    if (!spx_format_has_kernel((spx_format)f)) continue;
    if (!(d.format_floor_us[f] > 0)) fail_msg("%s: no floor measured", spx_format_name((spx_format)f));
    n++;
  }
  assert_true(n >= 10);
  /* Rounds: a transient in the first round (every format probed first, 10^5 us) leaves no floor;
   * a format slow in every round keeps it (the least of its rounds, not a skipped one). */
  memset(&d, 0, sizeof d);
  spx__cal_test_noise = cal_transient;
  assert_int_equal(spx__plan_cal_floors(h, &d), SPX_OK);
  spx__cal_test_noise = NULL;
  for (f = 0; f < spx_format_count() && f < SPX_FORMAT_MAX; f++) {
    if (!spx_format_has_kernel((spx_format)f)) continue;
    if (f == SPX_FORMAT_ELL) assert_true(d.format_floor_us[f] >= 1e5);
    else if (!(d.format_floor_us[f] > 0 && d.format_floor_us[f] < 1e5))
      fail_msg("%s: floor %g us after a first-round transient", spx_format_name((spx_format)f), d.format_floor_us[f]);
  }
  spx_context_destroy(h);
}

/* HYB's COO part adds each warp's run of a row into y with one atomic: atomic_row_ns per such add
 * beyond the bytes. Rows of 4, 3 in 10 of them 5: K = 4, the fifth entries in the COO part, one
 * atomic per long row plus one per 32 COO entries where runs may cross a warp. Formats without
 * atomics keep their predictions; a matrix whose rows all fit K has no term; the device file keeps
 * the rate. */
static void test_model_atomics(void **state) {
  spx_plan_device d = fake_gpu(), back;
  spx_plan_candidate c[SPX_FORMAT_MAX + 1], c0[SPX_FORMAT_MAX + 1];
  const int64_t n = 100000;
  int64_t *len = malloc((size_t)n * sizeof *len), i, longrows = 0;
  char path[] = "/tmp/spx_test_atomicsXXXXXX";
  spx_csr *a, *even;
  int nc, nc0, fd;
  (void)state;
  assert_non_null(len);
  for (i = 0; i < n; i++) {
    len[i] = 4 + (i % 10 < 3);
    longrows += i % 10 < 3;
  }
  a = rows_matrix(n, len);
  d.atomic_row_ns = 0;
  assert_int_equal(spx_plan_model(a, &d, 1000, 0, 1, c0, SPX_FORMAT_MAX + 1, &nc0), SPX_OK);
  d.atomic_row_ns = 2.0;
  assert_int_equal(spx_plan_model(a, &d, 1000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  {
    double want = 1e-3 * 2.0 * ((double)longrows + (double)longrows / 32.0);
    double got = cand(c, nc, "hyb", 0)->predicted_us - cand(c0, nc0, "hyb", 0)->predicted_us;
    if (fabs(got - want) > 1e-9 * want) fail_msg("hyb: %.6f us more with atomics, want %.6f", got, want);
  }
  assert_true(cand(c, nc, "ell", 0)->predicted_us == cand(c0, nc0, "ell", 0)->predicted_us);
  assert_true(cand(c, nc, "coo", 0)->predicted_us == cand(c0, nc0, "coo", 0)->predicted_us);
  for (i = 0; i < n; i++) len[i] = 4;
  even = rows_matrix(n, len);
  assert_int_equal(spx_plan_model(even, &d, 1000, 0, 1, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  d.atomic_row_ns = 0;
  assert_int_equal(spx_plan_model(even, &d, 1000, 0, 1, c0, SPX_FORMAT_MAX + 1, &nc0), SPX_OK);
  assert_true(cand(c, nc, "hyb", 0)->predicted_us == cand(c0, nc0, "hyb", 0)->predicted_us);
  d.atomic_row_ns = 0.25;
  fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(spx_plan_device_save(path, &d), SPX_OK);
  assert_int_equal(spx_plan_device_load(path, &back), SPX_OK);
  assert_true(back.atomic_row_ns == 0.25);
  unlink(path);
  spx_csr_destroy(even);
  spx_csr_destroy(a);
  free(len);
}

/* spx_plan_rule_choice is the strategies' rule: each (B, R) of a grid around both papers'
 * thresholds gives the choice a kubota or mps plan makes on a matrix of that B and R (rows of two
 * lengths; cuSPARSE on the host is spx's csr), and NULL outside the two rules. */
static void test_rule_choice(void **state) {
  static const double bs[] = {1.0, 2.2, 2.5, 3.0, 9.0};
  static const int64_t ncols[] = {1000000, 1000};
  spx_plan_strategy st[2] = {SPX_PLAN_KUBOTA, SPX_PLAN_MPS};
  int i, j, k;
  (void)state;
  assert_null(spx_plan_rule_choice(SPX_PLAN_AUTO, 1, 0));
  assert_string_equal(spx_plan_rule_choice(SPX_PLAN_MPS, 1.0, 0.001), "ell");
  assert_string_equal(spx_plan_rule_choice(SPX_PLAN_MPS, 2.5, 0.001), "jds");
  assert_string_equal(spx_plan_rule_choice(SPX_PLAN_MPS, 1.0, 0.01), "cusparse");
  assert_string_equal(spx_plan_rule_choice(SPX_PLAN_KUBOTA, 5.0, 0.0001), "jds");
  for (i = 0; i < 5; i++)
    for (j = 0; j < 2; j++) {
      /* 1000 rows: 999 of length 8, one of length 8 B (about) */
      const int64_t n = 1000, longest = (int64_t)(8 * bs[i] + 0.5);
      int64_t *len = malloc((size_t)n * sizeof *len), r;
      spx_csr *a;
      for (r = 0; r < n; r++) len[r] = r == 0 ? longest : 8;
      a = rows_matrix(n, len);
      a->ncols = ncols[j];
      for (k = 0; k < 2; k++) {
        spx_plan_options o;
        spx_plan *p = NULL;
        const char *want;
        char got[32];
        spx_plan_options_default(&o);
        o.strategy = st[k]; o.backend = SPX_BACKEND_HOST;
        assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
        want = spx_plan_rule_choice(st[k], spx_plan_analysis(p)->B, spx_plan_analysis(p)->R);
        snprintf(got, sizeof got, "%s", spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse" : spx_format_name(spx_plan_format(p)));
        if (strcmp(want, "cusparse") ? strcmp(got, want) : strcmp(got, "csr"))
          fail_msg("%s, B %.3g, R %.3g: the plan chose %s, the rule says %s", spx_plan_strategy_name(st[k]),
                   spx_plan_analysis(p)->B, spx_plan_analysis(p)->R, got, want);
        spx_plan_destroy(p);
      }
      spx_csr_destroy(a);
      free(len);
    }
}

/* The safety rule: a conversion is chosen over the CSR baseline only when it scores
 * convert_margin below it. ELL made (by its factor) 3% faster than CSR loses at the default
 * margin and wins at 0; made 10% faster, it wins at the default too. */
static void test_convert_margin(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  spx_csr *a = pattern(64000, 4, 0, 0);
  double ell, csr;
  int nc, k;
  (void)state;
  d.convert_ns_per_byte = 0; d.convert_ns_per_nnz = 0; d.jit_ms = 0; d.h2d_gbs = 0; /* no conversion cost */
  assert_int_equal(spx_plan_model(a, &d, 1000000, 0, 0, c, SPX_FORMAT_MAX + 1, &nc), SPX_OK);
  ell = cand(c, nc, "ell", 0)->predicted_us;
  csr = cand(c, nc, "csr", 0)->predicted_us;
  for (k = 0; k < SPX_FORMAT_MAX; k++) d.format_factor[k] = 10; /* every other format far behind */
  d.format_factor[SPX_FORMAT_CSR] = 1;
  for (k = 0; k < 3; k++) {
    static const double share[] = {0.97, 0.97, 0.90}, margin[] = {0.05, 0, 0.05};
    spx_plan_options o;
    spx_plan *p;
    d.format_factor[SPX_FORMAT_ELL] = share[k] * csr / ell;
    spx_plan_options_default(&o);
    o.device = &d; o.strategy = SPX_PLAN_MODEL; o.backend = SPX_BACKEND_HOST; o.expected_calls = 1000000;
    o.convert_margin = margin[k];
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    if (spx_plan_format(p) != (k == 0 ? SPX_FORMAT_CSR : SPX_FORMAT_ELL))
      fail_msg("ell at %.2f of csr, margin %.2f: chose %s (%s)", share[k], margin[k], spx_format_name(spx_plan_format(p)), spx_plan_reason(p));
    if (k == 0) assert_non_null(strstr(spx_plan_reason(p), "must score 5% below the CSR baseline"));
    spx_plan_destroy(p);
  }
  {
    spx_plan_options o;
    spx_plan *p = NULL;
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_HOST; o.convert_margin = 1;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "convert_margin"));
    assert_null(p);
  }
  spx_csr_destroy(a);
}

/* The column profile is read only when its priced cost is a small share (trial_share) of the work
 * the expected SpMVs do: for a few calls the formats that need it are not modelled (and say so),
 * for many they are; a forced column format always reads it, a forced ELL and the mps rule (row
 * lengths alone) only where it pays. */
static void test_columns_priced(void **state) {
  /* per case: expected calls, forced name, strategy, whether the column formats are modelled */
  static const struct {
    int64_t calls;
    const char *force;
    spx_plan_strategy st;
    int modelled;
    spx_format want;
  } cases[] = {
      {10, NULL, SPX_PLAN_MODEL, 0, SPX_FORMAT_COUNT},
      {100000000, NULL, SPX_PLAN_MODEL, 1, SPX_FORMAT_COUNT},
      {10, "sell", SPX_PLAN_MODEL, 1, SPX_FORMAT_SELL}, /* a forced format that needs them reads them */
      {10, "ell", SPX_PLAN_MODEL, 0, SPX_FORMAT_ELL},   /* one that needs none does not */
      {10, NULL, SPX_PLAN_MPS, 0, SPX_FORMAT_COUNT},    /* nor the papers' rules (row lengths alone) */
  };
  spx_csr *a;
  size_t k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  for (k = 0; k < sizeof cases / sizeof *cases; k++) {
    spx_plan_options o;
    spx_plan *p;
    const spx_plan_candidate *c;
    int n, i, seen = 0;
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_HOST; o.strategy = cases[k].st; o.no_calibrate = 1;
    o.expected_calls = cases[k].calls;
    o.force = cases[k].force;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) {
      const char *nm = spx_format_name(c[i].format);
      if (strcmp(nm, "sell") && strcmp(nm, "bsr") && strcmp(nm, "rbp_csr")) continue;
      seen++;
      if (!cases[k].modelled) {
        assert_true(c[i].predicted_us < 0 && !c[i].fits);
        assert_non_null(strstr(c[i].note, "not modelled"));
      } else if (!(c[i].predicted_us > 0)) {
        fail_msg("%s at %lld calls: %s", nm, (long long)o.expected_calls, c[i].note);
      }
    }
    assert_int_equal(seen, 3);
    if (k == 0) assert_true(spx_plan_format(p) == SPX_FORMAT_CSR || spx_plan_format(p) == SPX_FORMAT_ELL ||
                            spx_plan_format(p) == SPX_FORMAT_ELL_R || spx_plan_format(p) == SPX_FORMAT_JDS ||
                            spx_plan_format(p) == SPX_FORMAT_HYB || spx_plan_format(p) == SPX_FORMAT_COO ||
                            spx_plan_format(p) == SPX_FORMAT_SS);
    if (cases[k].want != SPX_FORMAT_COUNT) assert_int_equal(spx_plan_format(p), cases[k].want);
    spx_plan_destroy(p);
  }
  spx_csr_destroy(a);
}

/* The column counts are read only where they can save their price (spx__plan_candidates): where
 * a format that needs them could not pay back its compile (jit_ms) over the calls, those formats
 * are not modelled and say why, though the counts fit the share of the work; the same calls without
 * a compile price, many more calls, the host (no compile), or a gather that could cost much read
 * them. */
static void test_columns_value(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  spx_csr *a;
  int64_t calls = 1;
  double cs_us;
  int n, k;
  static const char *const need[] = {"sell", "bsr", "rbp_csr"};
  (void)state;
  assert_int_equal(spx_gen_poisson3d(8, 8, 8, 7, SPX_DOUBLE, &a), SPX_OK);
  /* the fewest calls whose share of the work pays the counts' price: the budget lets them run */
  while (spx__plan_columns_budget_ms(a, &d, calls, 0.02) < spx__plan_columns_ms(a, 1)) calls *= 2;
  assert_int_equal(spx_plan_model(a, &d, calls, 0, 1, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
  cs_us = cand(c, n, "csr", 1)->predicted_us;
  /* a compile worth twice the calls' work on cuSPARSE: no format can pay it back */
  d.jit_ms = 2e-3 * (double)calls * cs_us;
  for (k = 0; k < 5; k++) {
    const int64_t at = k == 2 ? calls * 100000 : calls;
    const int cuda = k != 3, read = k != 0;
    int i;
    d.jit_ms = k == 1 ? 0 : 2e-3 * (double)calls * cs_us;
    if (k == 4) { /* case 0 where the x gather could cost much (x past a tiny cache, a heavy weight) */
      d.cache_bytes = 1024;
      d.gather_default = 100;
    }
    assert_int_equal(spx__plan_candidates(a, NULL, &d, at, 0, 1, cuda, c, SPX_FORMAT_MAX + 1, &n, NULL, 0.02), SPX_OK);
    for (i = 0; i < 3; i++) {
      const spx_plan_candidate *q = cand(c, n, need[i], 0);
      if (read && !(q->predicted_us > 0)) fail_msg("case %d: %s not modelled: %s", k, need[i], q->note);
      if (!read && (q->predicted_us >= 0 || !strstr(q->note, "cannot save their price")))
        fail_msg("case %d: %s modelled (%.3g us) or the wrong note: %s", k, need[i], q->predicted_us, q->note);
    }
    /* the row-only candidates are priced either way */
    assert_true(cand(c, n, "ell", 0)->predicted_us > 0 && cand(c, n, "csr", 1)->predicted_us > 0);
  }
  spx_csr_destroy(a);
}

static void test_memory_limit(void **state) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_plan_device d = fake_gpu();
  const spx_plan_candidate *c;
  spx_csr *a = pattern(20000, 3, 0, 0); /* B = 1, R tiny: Kubota says ELL */
  int64_t csr_bytes = 4 * (20000 + 1) + 60000 * 12, vec = 8 * 40000;
  int n, i, excluded = 0;
  (void)state;
  spx_plan_options_default(&o);
  o.device = &d; o.backend = SPX_BACKEND_HOST; o.strategy = SPX_PLAN_MODEL;
  o.memory_limit = csr_bytes + vec; /* CSR fits exactly; ELL (12 B a slot, no row pointers) too */
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  c = spx_plan_candidates(p, &n);
  for (i = 0; i < n; i++) {
    if (c[i].fits) assert_true(c[i].bytes + vec <= o.memory_limit);
    else { excluded++; assert_true(c[i].bytes < 0 || c[i].bytes + vec > o.memory_limit); }
    if (c[i].format == spx_plan_format(p) && c[i].engine == spx_plan_engine_of(p)) assert_true(c[i].fits);
  }
  assert_true(excluded >= 3); /* COO, ELL-R, SS, ... store more than CSR */
  spx_plan_destroy(p);
  /* Kubota's ELL is over the limit: falls back to JDS, and says so. */
  { /* rows of 3 and 4 alternating: B = 1.14, ELL (48 B a row) is larger than JDS (46 B a row) */
    spx_csr *b = pattern(20000, 3, 4, 2);
    o.strategy = SPX_PLAN_KUBOTA;
    o.memory_limit = 0;
    assert_int_equal(spx_plan_create(NULL, b, &o, &p), SPX_OK);
    assert_int_equal(spx_plan_format(p), SPX_FORMAT_ELL);
    spx_plan_destroy(p);
    o.memory_limit = 20000 * 4 * 12 + vec - 1;
    assert_int_equal(spx_plan_create(NULL, b, &o, &p), SPX_OK);
    spx_csr_destroy(b);
  }
  assert_int_equal(spx_plan_format(p), SPX_FORMAT_JDS);
  assert_non_null(strstr(spx_plan_reason(p), "does not fit"));
  spx_plan_destroy(p);
  /* Nothing fits. */
  o.strategy = SPX_PLAN_MODEL;
  o.memory_limit = 1000;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_DEVICE_OUT_OF_MEMORY);
  assert_null(p);
  assert_non_null(strstr(spx_last_error(), "memory limit"));
  o.strategy = SPX_PLAN_KUBOTA;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_DEVICE_OUT_OF_MEMORY);
  spx_csr_destroy(a);
}

/* y from a plan equals the CSR reference, for every strategy on the host backend (trial included),
 * eager and lazy, double and float. */
static void test_plans_compute(void **state) {
  spx_csr *a, *ad;
  int st, eager, dt;
  (void)state;
  assert_int_equal(spx_gen_powerlaw(3000, 1.8, 1, 200, 5, SPX_DOUBLE, &a), SPX_OK);
  for (dt = 0; dt < 2; dt++)
    for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++)
      for (eager = 0; eager < 2; eager++) {
        spx_plan_options o;
        spx_plan *p;
        int64_t i, nr = a->nrows;
        double *x = malloc((size_t)nr * 8), *y0 = malloc((size_t)nr * 8), *yr = malloc((size_t)nr * 8);
        double *yp = malloc((size_t)nr * 8), alpha = 1 + spx_test_rand(), beta = spx_test_rand(), tol;
        void *hx = malloc((size_t)nr * 8), *hy = malloc((size_t)nr * 8);
        assert_true(x && y0 && yr && yp && hx && hy);
        spx_plan_options_default(&o);
        o.strategy = (spx_plan_strategy)st; o.eager = eager; o.backend = SPX_BACKEND_HOST; o.trial_reps = 3;
        o.dtype = dt ? SPX_FLOAT : SPX_DOUBLE;
        if (spx_plan_create(NULL, a, &o, &p)) fail_msg("%s: %s", spx_plan_strategy_name(o.strategy), spx_last_error());
        assert_int_equal(spx_plan_dtype(p), o.dtype);
        spx_test_fill(x, nr); spx_test_fill(y0, nr);
        for (i = 0; i < nr; i++) {
          if (dt) { ((float *)hx)[i] = (float)x[i]; x[i] = ((float *)hx)[i]; ((float *)hy)[i] = (float)y0[i]; y0[i] = ((float *)hy)[i]; }
          else { ((double *)hx)[i] = x[i]; ((double *)hy)[i] = y0[i]; }
          yr[i] = y0[i];
        }
        assert_int_equal(spx_csr_copy(a, dt ? SPX_FLOAT : SPX_DOUBLE, &ad), SPX_OK);
        { /* the reference in double on the values the plan sees */
          spx_csr *r;
          assert_int_equal(spx_csr_copy(ad, SPX_DOUBLE, &r), SPX_OK);
          assert_int_equal(spx_csr_spmv(r, alpha, x, beta, yr), SPX_OK);
          spx_csr_destroy(r);
        }
        assert_int_equal(spx_plan_spmv(p, alpha, hx, beta, hy), SPX_OK);
        for (i = 0; i < nr; i++) yp[i] = dt ? (double)((float *)hy)[i] : ((double *)hy)[i];
        tol = dt ? 1e-5 : 1e-12;
        if (spx_test_relerr(yp, yr, nr) > tol)
          fail_msg("%s %s: relerr %g", spx_plan_strategy_name(o.strategy), spx_format_name(spx_plan_format(p)),
                   spx_test_relerr(yp, yr, nr));
        if (st == SPX_PLAN_TRIAL) { /* every fitting candidate was timed; the choice is the fastest */
          int n, k;
          const spx_plan_candidate *c = spx_plan_candidates(p, &n), *ch = NULL;
          for (k = 0; k < n; k++) if (c[k].format == spx_plan_format(p)) ch = &c[k];
          assert_non_null(ch);
          for (k = 0; k < n; k++)
            if (c[k].fits) { assert_true(c[k].measured_us >= 0); assert_true(ch->measured_us <= c[k].measured_us); }
        }
        assert_true(strlen(spx_plan_reason(p)) > 10);
        spx_csr_destroy(ad);
        spx_plan_destroy(p);
        free(x); free(y0); free(yr); free(yp); free(hx); free(hy);
      }
  spx_csr_destroy(a);
}

/* A BSR plan converts with the block size its profile found (3x3 on elasticity, one conversion
 * instead of counting 8 sizes first) and computes what the CSR does. */
/* auto times the best two only when the model cannot tell them apart: the runner-up's prediction
 * within trial_gap of the best's (and the trial cheap against the work); past the gap the reason
 * says how much slower the runner-up is predicted; trial_gap <= 1 never times. The timing is a
 * race over the first SpMVs (test_auto_race) or, with no_race, a trial in spx_plan_create. */
static void test_auto_trial_gap(void **state) {
  spx_csr *m[3];
  int k, seen_trial = 0, seen_gap = 0;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(24, 24, 24, 7, SPX_DOUBLE, &m[0]), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(20000, 2.0, 2, 300, 3, SPX_DOUBLE, &m[1]), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(8, 8, 8, SPX_DOUBLE, &m[2]), SPX_OK);
  for (k = 0; k < 3; k++) {
    double gaps[] = {1.1, 100, 0.5};
    int g;
    for (g = 0; g < 3; g++) {
      spx_plan_options o;
      spx_plan *p;
      const spx_plan_candidate *c;
      int n, i;
      double b0 = 0, b1 = 0, gap;
      spx_plan_options_default(&o);
      o.backend = SPX_BACKEND_HOST; o.trial_reps = 2; o.expected_calls = 100000000; o.trial_gap = gaps[g];
      o.no_race = g == 1;
      assert_int_equal(spx_plan_create(NULL, m[k], &o, &p), SPX_OK);
      c = spx_plan_candidates(p, &n);
      for (i = 0; i < n; i++) { /* the two best predictions among those that fit */
        double u = c[i].predicted_us;
        if (!c[i].fits || u <= 0) continue;
        if (b0 == 0 || u < b0) { b1 = b0; b0 = u; }
        else if (b1 == 0 || u < b1) b1 = u;
      }
      gap = b1 / b0;
      if (gap > gaps[g]) {
        if (!strstr(spx_plan_reason(p), "no trial (the runner-up predicted"))
          fail_msg("gap %.3f > %.2f: %s", gap, gaps[g], spx_plan_reason(p));
        seen_gap += g == 0;
      } else {
        if (!strstr(spx_plan_reason(p), o.no_race ? "trial of the best two" : "race of the best two"))
          fail_msg("gap %.3f <= %.2f: %s", gap, gaps[g], spx_plan_reason(p));
        assert_int_equal(spx_plan_racing(p, NULL), !o.no_race);
        seen_trial += g == 0;
      }
      spx_plan_destroy(p);
    }
    spx_csr_destroy(m[k]);
  }
  print_message("default gap: %d trials, %d skipped by the gap\n", seen_trial, seen_gap);
}

/* Latency-bound kernels (predicted within a few launch latencies): auto times the model's ranked
 * candidates as far as the trial's priced cost fits trial_share of the work, keeps the fastest it
 * measured, and computes what the CSR does; with too little work it times nothing. A host plan with
 * a launch latency of a millisecond puts every candidate in that regime. Here the synchronous
 * trial (no_race); test_auto_race races the same candidates. */
static void test_auto_latency_trial(void **state) {
  spx_csr *a;
  spx_plan_device d;
  spx_plan_options o;
  spx_plan *p;
  const spx_plan_candidate *c;
  int n, i, timed = 0, best = -1;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_plan_device_default(NULL, &d), SPX_OK);
  d.launch_us = 1000;
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST; o.device = &d; o.trial_reps = 2; o.expected_calls = 100000000; o.no_race = 1;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  if (!strstr(spx_plan_reason(p), "latency-bound: trial of the best")) fail_msg("%s", spx_plan_reason(p));
  assert_int_equal(spx_plan_racing(p, NULL), 0);
  c = spx_plan_candidates(p, &n);
  for (i = 0; i < n; i++)
    if (c[i].measured_us > 0) {
      timed++;
      if (best < 0 || c[i].measured_us < c[best].measured_us) best = i;
    }
  assert_true(timed >= 2);
  assert_true(best >= 0 && spx_plan_format(p) == c[best].format && spx_plan_engine_of(p) == c[best].engine);
  {
    double *x = (double *)malloc(sizeof *x * (size_t)a->ncols), *y = (double *)malloc(sizeof *y * (size_t)a->nrows),
           *r = (double *)malloc(sizeof *r * (size_t)a->nrows);
    assert_true(x && y && r);
    spx_test_fill(x, a->ncols);
    assert_int_equal(spx_plan_spmv(p, 1.0, x, 0.0, y), SPX_OK);
    assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, r), SPX_OK);
    for (i = 0; i < a->nrows; i++) assert_true(fabs(y[i] - r[i]) <= 1e-12 * (1 + fabs(r[i])));
    free(x); free(y); free(r);
  }
  spx_plan_destroy(p);
  o.expected_calls = 1; /* the work pays for no timing, raced or not */
  o.no_race = 0;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  if (!strstr(spx_plan_reason(p), "latency-bound, no trial")) fail_msg("%s", spx_plan_reason(p));
  assert_int_equal(spx_plan_racing(p, NULL), 0);
  c = spx_plan_candidates(p, &n);
  for (i = 0; i < n; i++) assert_true(c[i].measured_us <= 0);
  spx_plan_destroy(p);
  spx_csr_destroy(a);
}

/* One call of p (host backend, dtype of flt) against the CSR reference ref (double, the values p
 * sees): fresh x, y, alpha and beta, y poisoned where beta is 0. */
static void check_host_call(spx_plan *p, const spx_csr *ref, int flt, const char *what) {
  const int64_t n = ref->nrows, m = ref->ncols;
  const double alpha = 0.5 + spx_test_rand(), beta = spx_test_rand() < 0.3 ? 0.0 : spx_test_rand();
  double *x = malloc((size_t)m * 8), *y0 = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8), *yp = malloc((size_t)n * 8);
  void *hx = malloc((size_t)m * 8), *hy = malloc((size_t)n * 8);
  int64_t i;
  assert_true(x && y0 && yr && yp && hx && hy);
  spx_test_fill(x, m);
  spx_test_fill(y0, n);
  for (i = 0; i < m; i++) {
    if (flt) { ((float *)hx)[i] = (float)x[i]; x[i] = ((float *)hx)[i]; }
    else ((double *)hx)[i] = x[i];
  }
  for (i = 0; i < n; i++) {
    const double v = beta == 0.0 ? NAN : y0[i]; /* beta 0 must not read y */
    if (flt) { ((float *)hy)[i] = (float)v; y0[i] = ((float *)hy)[i]; }
    else ((double *)hy)[i] = v;
    yr[i] = beta == 0.0 ? 0.0 : y0[i];
  }
  assert_int_equal(spx_csr_spmv(ref, alpha, x, beta, yr), SPX_OK);
  if (spx_plan_spmv(p, alpha, hx, beta, hy)) fail_msg("%s: %s", what, spx_last_error());
  for (i = 0; i < n; i++) yp[i] = flt ? (double)((float *)hy)[i] : ((double *)hy)[i];
  if (!(spx_test_relerr(yp, yr, n) <= (flt ? 1e-5 : 1e-12)))
    fail_msg("%s: %s gives relative error %g (%s)", what, spx_format_name(spx_plan_format(p)), spx_test_relerr(yp, yr, n),
             spx_plan_reason(p));
  free(x); free(y0); free(yr); free(yp); free(hx); free(hy);
}

/* The options of a host plan whose auto races: every candidate latency-bound (a launch latency of a
 * millisecond) and plenty of work, so the race takes the whole ranking. */
static void race_options(spx_plan_options *o, spx_plan_device *d) {
  assert_int_equal(spx_plan_device_default(NULL, d), SPX_OK);
  d->launch_us = 1000;
  spx_plan_options_default(o);
  o->backend = SPX_BACKEND_HOST; o->device = d; o->trial_reps = 3; o->expected_calls = 100000000;
}

/* Its model's choice (the model strategy's, the same candidates). */
static void model_choice(const spx_csr *a, const spx_plan_options *race, spx_format *f, spx_plan_engine *e) {
  spx_plan_options o = *race;
  spx_plan *p = NULL;
  o.strategy = SPX_PLAN_MODEL;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  *f = spx_plan_format(p);
  *e = spx_plan_engine_of(p);
  spx_plan_destroy(p);
}

/* auto's race on the host: spx_plan_create returns with nothing built but the start (the race's
 * copy of the matrix, run as it is) and nothing timed, every call during the race gives A x, and
 * after enough calls the race ends with the fastest candidate by median chosen (the model's choice
 * built at its turn like the others), its time measured and a "race" reason; selection time grows
 * by the race's builds. Eager and lazy plans, double and float. */
static void test_auto_race(void **state) {
  spx_csr *a;
  spx_plan_device d;
  int v;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  for (v = 0; v < 4; v++) {
    const int eager = v & 1, flt = v >> 1;
    spx_plan_options o;
    spx_plan *p = NULL;
    spx_plan_race_info ri, r0;
    spx_format mf;
    spx_plan_engine me;
    spx_csr *ref = NULL, *tmp = NULL;
    const spx_plan_candidate *c;
    int n, i, calls, timed = 0, best = -1, chosen = -1;
    double sel0;
    race_options(&o, &d);
    o.eager = eager;
    o.dtype = flt ? SPX_FLOAT : SPX_DOUBLE;
    model_choice(a, &o, &mf, &me);
    assert_int_equal(spx_csr_copy(a, o.dtype, &tmp), SPX_OK);
    assert_int_equal(spx_csr_copy(tmp, SPX_DOUBLE, &ref), SPX_OK);
    spx_csr_destroy(tmp);
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    /* (a) no candidate built (an eager plan runs its start; a lazy one starts at its first call),
     * nothing timed, the getters the model's choice's */
    assert_int_equal(spx_plan_racing(p, &r0), 1);
    if (!strstr(spx_plan_reason(p), "latency-bound: race of the best") || !strstr(spx_plan_reason(p), "running"))
      fail_msg("%s", spx_plan_reason(p));
    assert_true(r0.candidates >= 2);
    assert_int_equal(r0.built, 0);
    assert_int_equal(r0.started, eager);
    if (eager && !strstr(spx_plan_reason(p), "on the CSR as it is meanwhile")) fail_msg("%s", spx_plan_reason(p));
    assert_int_equal(r0.measured, 0);
    assert_int_equal(r0.calls, 0);
    assert_int_equal(spx_plan_format(p), mf);
    assert_int_equal(spx_plan_engine_of(p), me);
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) assert_true(c[i].measured_us < 0);
    sel0 = spx_plan_select_ms(p);
    /* (b) every call computes A x; (c) until the race ends */
    for (calls = 0; spx_plan_racing(p, &ri) && calls < 100000; calls++) {
      assert_true(ri.built <= ri.candidates && ri.measured + ri.dropped <= ri.candidates);
      assert_int_equal(ri.calls, calls);
      assert_int_equal(ri.started, eager || calls > 0);
      check_host_call(p, ref, flt, "during the race");
    }
    assert_int_equal(spx_plan_racing(p, &ri), 0);
    assert_int_equal(ri.candidates, 0); /* zeroed once over */
    /* a warm-up and trial_reps timed calls per candidate, then one call that ends it */
    assert_true(calls >= r0.candidates * (o.trial_reps + 1));
    print_message("race (%s, %s): %d calls, %s\n", eager ? "eager" : "lazy", flt ? "float" : "double", calls, spx_plan_reason(p));
    if (!strstr(spx_plan_reason(p), "race of the best") || strstr(spx_plan_reason(p), "running") ||
        strstr(spx_plan_reason(p), "spx_plan_wait"))
      fail_msg("%s", spx_plan_reason(p));
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) {
      if (c[i].measured_us > 0) {
        timed++;
        if (best < 0 || c[i].measured_us < c[best].measured_us) best = i;
      }
      if (c[i].format == spx_plan_format(p) && c[i].engine == spx_plan_engine_of(p)) chosen = i;
    }
    assert_int_equal(timed, r0.candidates); /* nothing compiles on the host: every one measured */
    assert_true(chosen >= 0 && c[chosen].measured_us > 0);
    assert_true(c[chosen].measured_us == c[best].measured_us); /* the fastest (a tie: the model's) */
    assert_true(spx_plan_select_ms(p) > sel0);
    assert_true(spx_plan_build_ms(p) > 0);
    for (i = 0; i < 3; i++) check_host_call(p, ref, flt, "after the race");
    assert_int_equal(spx_plan_wait(p), SPX_OK); /* nothing left to end */
    spx_plan_destroy(p);
    spx_csr_destroy(ref);
  }
  spx_csr_destroy(a);
}

/* plan_race_impl.h's test hook: microseconds added to a slot's block median (look 0: its first). */
extern double (*spx__race_test_noise)(int slot, int look);
static int noise_looks; /* bit k: the model's choice's block in look k reads 10^5 us slow */
static double slow_model_choice(int slot, int look) { return slot == 0 && (noise_looks >> look & 1) ? 1e5 : 0; }

/* The second look: where the race's leader is not the model's choice, both time another block and
 * each keeps the lesser median, so one inflated block of the model's choice (noise) cannot switch
 * the plan, while a model's choice slow in both looks still loses. In the SpMV-driven race and in
 * spx_plan_wait's; every call gives A x meanwhile. */
static void test_auto_race_second_look(void **state) {
  spx_csr *a;
  spx_plan_device d;
  int k;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(12, 12, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  for (k = 0; k < 3; k++) { /* noise in the first look; in both; the first, ended by spx_plan_wait */
    spx_plan_options o;
    spx_plan *p = NULL;
    spx_plan_race_info r0, ri;
    spx_format mf;
    spx_plan_engine me;
    const spx_plan_candidate *c;
    int n, i, calls = 0, best = -1, chosen = -1, model = -1;
    race_options(&o, &d);
    o.eager = 1;
    model_choice(a, &o, &mf, &me);
    noise_looks = k == 1 ? 3 : 1;
    spx__race_test_noise = slow_model_choice;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    assert_int_equal(spx_plan_racing(p, &r0), 1);
    if (k == 2) {
      assert_int_equal(spx_plan_wait(p), SPX_OK);
    } else {
      for (; spx_plan_racing(p, &ri) && calls < 100000; calls++) check_host_call(p, a, 0, "during the race");
      /* every candidate's block, then the second look's two */
      assert_true(calls >= (r0.candidates + 2) * (o.trial_reps + 1));
    }
    spx__race_test_noise = NULL;
    assert_int_equal(spx_plan_racing(p, NULL), 0);
    print_message("second look (%d): %d calls, %s\n", k, calls, spx_plan_reason(p));
    if (!strstr(spx_plan_reason(p), "a second look at the model's choice and the leader") ||
        (k == 2 && !strstr(spx_plan_reason(p), "ended by spx_plan_wait")))
      fail_msg("%s", spx_plan_reason(p));
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) {
      if (c[i].measured_us > 0 && (best < 0 || c[i].measured_us < c[best].measured_us)) best = i;
      if (c[i].format == spx_plan_format(p) && c[i].engine == spx_plan_engine_of(p)) chosen = i;
      if (c[i].format == mf && c[i].engine == me) model = i;
    }
    assert_true(chosen >= 0 && model >= 0 && best >= 0);
    assert_true(c[chosen].measured_us == c[best].measured_us); /* the fastest, after the second look */
    if (k == 1) { /* slow in both looks: it loses */
      assert_true(c[model].measured_us >= 1e5);
      assert_true(chosen != model);
    } else { /* its first block's noise did not stand */
      assert_true(c[model].measured_us > 0 && c[model].measured_us < 1e5);
    }
    check_host_call(p, a, 0, "after the race");
    spx_plan_destroy(p);
  }
  spx_csr_destroy(a);
}

/* spx_plan_wait ends a race at once (the rest timed as the trial times; a lazy plan built first),
 * and says so; destroy in the middle of one frees every candidate (the sanitizer build checks for
 * leaks); print tells a running race; no_race keeps the trial in spx_plan_create. */
static void test_auto_race_end(void **state) {
  spx_csr *a;
  spx_plan_device d;
  spx_plan_options o;
  spx_plan *p;
  spx_plan_race_info ri;
  const spx_plan_candidate *c;
  char *buf = NULL;
  size_t len = 0;
  FILE *f;
  int n, i, k, timed;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(10, 11, 12, 7, SPX_DOUBLE, &a), SPX_OK);
  for (k = 0; k < 3; k++) { /* calls before the wait: none (lazy, unbuilt), one, a dozen */
    static const int before[3] = {0, 1, 12};
    race_options(&o, &d);
    o.eager = k > 0;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    for (i = 0; i < before[k]; i++) check_host_call(p, a, 0, "before the wait");
    assert_int_equal(spx_plan_racing(p, &ri), 1);
    assert_int_equal(spx_plan_wait(p), SPX_OK);
    assert_int_equal(spx_plan_racing(p, NULL), 0);
    if (!strstr(spx_plan_reason(p), "race of the best") || !strstr(spx_plan_reason(p), "ended by spx_plan_wait"))
      fail_msg("%s", spx_plan_reason(p));
    c = spx_plan_candidates(p, &n);
    for (i = 0, timed = 0; i < n; i++) timed += c[i].measured_us > 0;
    assert_int_equal(timed, ri.candidates);
    check_host_call(p, a, 0, "after the wait");
    spx_plan_destroy(p);
  }
  /* destroyed mid-race: right after create, with a candidate built and a block under way */
  for (k = 0; k < 3; k++) {
    race_options(&o, &d);
    o.eager = k != 1;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    for (i = 0; i < (k == 2 ? 2 * (o.trial_reps + 1) + 2 : 0); i++) check_host_call(p, a, 0, "before destroy");
    assert_int_equal(spx_plan_racing(p, &ri), 1);
    if (k == 2) assert_true(ri.built >= 2 && ri.measured >= 1);
    if (k == 2) { /* print says it runs */
      assert_non_null(f = open_memstream(&buf, &len));
      assert_int_equal(spx_plan_print(p, f, 0), SPX_OK);
      assert_int_equal(spx_plan_print(p, f, 1), SPX_OK);
      fclose(f);
      assert_non_null(strstr(buf, "race        running on the SpMVs"));
      assert_non_null(strstr(buf, "\"racing\": 1"));
      free(buf);
      buf = NULL;
    }
    spx_plan_destroy(p);
  }
  /* a solver on a racing plan (eager: started on the race's copy; lazy: built by the solver): it
   * ends the race (spx_plan_wait) and solves with the diagonal the plan kept */
  for (k = 0; k < 2; k++) {
    const int64_t nr = a->nrows;
    double *b = malloc((size_t)nr * sizeof *b), *x = calloc((size_t)nr, sizeof *x), *r = malloc((size_t)nr * sizeof *r);
    spx_solve_options so;
    spx_solve_report rep;
    assert_true(b && x && r);
    spx_test_fill(b, nr);
    race_options(&o, &d);
    o.eager = k;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    for (i = 0; i < 3 * k; i++) check_host_call(p, a, 0, "before the solve");
    assert_int_equal(spx_plan_racing(p, &ri), 1);
    spx_solve_options_default(&so);
    so.rtol = 1e-10;
    so.maxit = 1000;
    if (spx_solve_pcg_jacobi(p, b, x, &so, &rep)) fail_msg("pcg_jacobi on a racing plan: %s", spx_last_error());
    assert_int_equal(spx_plan_racing(p, NULL), 0);
    assert_non_null(strstr(spx_plan_reason(p), "ended by spx_plan_wait"));
    { /* ||b - A x|| against ||b||, from the host CSR */
      double rr = 0, bb = 0;
      assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, r), SPX_OK);
      for (i = 0; i < nr; i++) { rr += (b[i] - r[i]) * (b[i] - r[i]); bb += b[i] * b[i]; }
      if (!(rr <= 1e-18 * bb)) fail_msg("pcg_jacobi on a racing plan: residual %g", sqrt(rr / bb));
    }
    spx_plan_destroy(p);
    free(b); free(x); free(r);
  }
  /* no_race: the trial, done in spx_plan_create */
  race_options(&o, &d);
  o.no_race = 1;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  assert_int_equal(spx_plan_racing(p, &ri), 0);
  assert_non_null(strstr(spx_plan_reason(p), "latency-bound: trial of the best"));
  spx_plan_destroy(p);
  spx_csr_destroy(a);
}

static void test_bsr_plan_block(void **state) {
  spx_csr *a;
  spx_plan_options o;
  spx_plan *p;
  int64_t i, n;
  double *x, *yr, *yp;
  (void)state;
  assert_int_equal(spx_gen_elasticity3d(6, 5, 4, SPX_DOUBLE, &a), SPX_OK);
  n = a->nrows;
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST; o.force = "bsr"; o.eager = 1;
  if (spx_plan_create(NULL, a, &o, &p)) fail_msg("bsr plan: %s", spx_last_error());
  assert_int_equal(spx_plan_format(p), SPX_FORMAT_BSR);
  assert_int_equal(spx_plan_params(p)->bsr_r, 3);
  assert_int_equal(spx_plan_params(p)->bsr_c, 3);
  x = malloc((size_t)n * 8); yr = malloc((size_t)n * 8); yp = malloc((size_t)n * 8);
  assert_true(x && yr && yp);
  spx_test_fill(x, n);
  for (i = 0; i < n; i++) yr[i] = yp[i] = 0.5;
  assert_int_equal(spx_csr_spmv(a, 1.5, x, 0.25, yr), SPX_OK);
  assert_int_equal(spx_plan_spmv(p, 1.5, x, 0.25, yp), SPX_OK);
  assert_true(spx_test_relerr(yp, yr, n) < 1e-13);
  spx_plan_destroy(p);
  free(x); free(yr); free(yp);
  spx_csr_destroy(a);
}

static void test_bad_arguments(void **state) {
  spx_plan_options o;
  spx_plan *p = (spx_plan *)1;
  spx_csr *a = pattern(100, 3, 0, 0);
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[4];
  int n;
  (void)state;
  assert_int_equal(spx_plan_create(NULL, NULL, NULL, &p), SPX_INVALID_ARGUMENT);
  assert_null(p);
  assert_int_equal(spx_plan_create(NULL, a, NULL, NULL), SPX_INVALID_ARGUMENT);
  spx_plan_options_default(&o);
  o.expected_calls = 0;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "expected_calls"));
  spx_plan_options_default(&o);
  o.strategy = (spx_plan_strategy)42;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
  spx_plan_options_default(&o);
  o.memory_limit = -1;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
  spx_plan_options_default(&o);
  o.dtype = 7;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
  spx_plan_options_default(&o);
  d.bandwidth_gbs = 0;
  o.device = &d;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_plan_model(a, &d, 10, 0, 0, c, 4, &n), SPX_INVALID_ARGUMENT);
  { /* a malformed CSR */
    int64_t keep = a->row_ptr[5];
    a->row_ptr[5] = a->row_ptr[6] + 1;
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_HOST;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
    a->row_ptr[5] = keep;
  }
  { /* a host context with options asking for CUDA */
    spx_context *h;
    spx_context_options co = {SPX_BACKEND_HOST, 0};
    assert_int_equal(spx_context_create(&co, &h), SPX_OK);
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_CUDA;
    assert_int_equal(spx_plan_create(h, a, &o, &p), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "cuda"));
    spx_context_destroy(h);
  }
  { /* the trial's knobs */
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_HOST;
    o.trial_reps = 0;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "trial_reps"));
    o.trial_reps = 3; o.trial_share = -1;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
    o.trial_share = 0.02; o.trial_gap = NAN;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "trial_gap"));
  }
  { /* no_diagonal: the plan computes, but spx_plan_diagonal says why it has none */
    double dg[100];
    spx_plan_options_default(&o);
    o.backend = SPX_BACKEND_HOST;
    o.no_diagonal = 1;
    assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
    assert_int_equal(spx_plan_diagonal(p, dg), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "no_diagonal"));
    spx_plan_destroy(p);
  }
  assert_int_equal(spx_plan_spmv(NULL, 1, c, 0, c), SPX_INVALID_ARGUMENT);
  spx_plan_destroy(NULL);
  assert_int_equal(spx_plan_format(NULL), SPX_FORMAT_COUNT);
  spx_csr_destroy(a);
}

static void test_device_file(void **state) {
  spx_plan_device d = fake_gpu(), e;
  char path[256];
  FILE *f;
  (void)state;
  snprintf(path, sizeof path, "/tmp/spx_test_plan_%d.json", (int)getpid());
  d.calibrated = 1;
  d.format_factor[SPX_FORMAT_ELL] = 1.5;
  d.format_convert_ns[SPX_FORMAT_BSR] = 7.25;
  d.format_convert_ns[SPX_FORMAT_HYB] = 5.5;
  d.format_staged_convert_ns[SPX_FORMAT_BSR] = 0.125; /* its own key: not read as convert_bsr */
  d.format_gather[SPX_FORMAT_HYB] = 0.75; d.gather_cusparse = 0.5; d.gather_default = 1.25;
  d.format_floor_us[SPX_FORMAT_JDS] = 7.5; d.cusparse_call_us = 6.25; d.jit_hit_ms = 0.375;
  assert_int_equal(spx_plan_device_save(path, &d), SPX_OK);
  assert_int_equal(spx_plan_device_load(path, &e), SPX_OK);
  assert_string_equal(e.name, "fake");
  assert_true(e.bandwidth_gbs == 1000 && e.warp == 32 && e.cusparse_factor == 1.25 && e.calibrated == 1);
  /* per-format constants survive by name; unmeasured ones stay 0 */
  assert_true(e.format_factor[SPX_FORMAT_ELL] == 1.5 && e.format_convert_ns[SPX_FORMAT_BSR] == 7.25);
  assert_true(e.format_factor[SPX_FORMAT_CSR] == 0 && e.format_convert_ns[SPX_FORMAT_ELL] == 0);
  assert_true(e.format_staged_convert_ns[SPX_FORMAT_BSR] == 0.125 && e.format_staged_convert_ns[SPX_FORMAT_SELL] == 0);
  assert_true(e.format_gather[SPX_FORMAT_HYB] == 0.75 && e.format_gather[SPX_FORMAT_CSR] == 0 &&
              e.gather_cusparse == 0.5 && e.gather_default == 1.25);
  assert_true(e.format_floor_us[SPX_FORMAT_JDS] == 7.5 && e.format_floor_us[SPX_FORMAT_ELL] == 0 &&
              e.cusparse_call_us == 6.25 && e.jit_hit_ms == 0.375);
  { /* the floor bounds JDS's prediction from below, and no other format's */
    spx_plan_candidate cf[SPX_FORMAT_MAX + 1], cb[SPX_FORMAT_MAX + 1];
    spx_plan_device fd = fake_gpu(), bd = fake_gpu();
    spx_csr *a = pattern(2000, 4, 0, 0);
    int nf, nb, j;
    fd.format_floor_us[SPX_FORMAT_JDS] = 1000;
    assert_int_equal(spx_plan_model(a, &bd, 100, 0, 0, cb, SPX_FORMAT_MAX + 1, &nb), SPX_OK);
    assert_int_equal(spx_plan_model(a, &fd, 100, 0, 0, cf, SPX_FORMAT_MAX + 1, &nf), SPX_OK);
    assert_int_equal(nf, nb);
    for (j = 0; j < nf; j++)
      if (cf[j].format == SPX_FORMAT_JDS) assert_true(cf[j].predicted_us == 1000 && cb[j].predicted_us < 1000);
      else assert_true(cf[j].predicted_us == cb[j].predicted_us);
    spx_csr_destroy(a);
  }
  e.format_floor_us[SPX_FORMAT_JDS] = 0;
  memset(e.format_gather, 0, sizeof e.format_gather); /* (test_model_gather has them) */
  e.gather_cusparse = e.gather_default = 0;
  { /* and the model applies them: ELL 1.5x slower, BSR and HYB conversion at their own rates (BSR
     * converts on the device: its rate covers the upload; HYB, converted on the host, pays the upload
     * besides) */
    spx_plan_candidate c0[SPX_FORMAT_MAX + 1], c1[SPX_FORMAT_MAX + 1];
    spx_csr *a = pattern(64000, 4, 0, 0);
    int n0, n1;
    spx_plan_device base = fake_gpu();
    assert_int_equal(spx_plan_model(a, &base, 100, 0, 0, c0, SPX_FORMAT_MAX + 1, &n0), SPX_OK);
    assert_int_equal(spx_plan_model(a, &e, 100, 0, 0, c1, SPX_FORMAT_MAX + 1, &n1), SPX_OK);
    assert_true(fabs(cand(c1, n1, "ell", 0)->predicted_us - 1.5 * cand(c0, n0, "ell", 0)->predicted_us) < 1e-9);
    assert_true(cand(c1, n1, "csr", 0)->predicted_us == cand(c0, n0, "csr", 0)->predicted_us);
    {
      const spx_plan_candidate *b = cand(c1, n1, "bsr", 0), *j = cand(c1, n1, "hyb", 0);
      double want = 1e-6 * 7.25 * (double)b->bytes + 3;
      assert_true(fabs(b->convert_ms - want) < 1e-9 * want);
      want = 1e-6 * 5.5 * (double)j->bytes + (double)j->bytes / 1e7 + 3;
      assert_true(fabs(j->convert_ms - want) < 1e-9 * want);
    }
    spx_csr_destroy(a);
  }
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"name\": \"x\", \"bandwidth_gbs\": 5}", f);
  fclose(f);
  assert_int_equal(spx_plan_device_load(path, &e), SPX_PARSE);
  { /* a number past its integer field's range is refused, not cast (undefined behaviour) */
    char text[4096];
    assert_int_equal(spx_plan_device_save(path, &d), SPX_OK);
    f = fopen(path, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    assert_int_equal(spx_plan_device_parse(text, "saved", &e), SPX_OK);
    {
      char *w = strstr(text, "\"warp\": 32");
      assert_non_null(w);
      memcpy(w, "\"warp\": 9e99", 11);
    }
    assert_int_equal(spx_plan_device_parse(text, "edited", &e), SPX_PARSE);
    assert_non_null(strstr(spx_last_error(), "edited: \"warp\""));
    assert_non_null(strstr(spx_last_error(), "out of range"));
  }
  remove(path);
  assert_int_equal(spx_plan_device_load(path, &e), SPX_IO);
  { /* the calibration file lives in the JIT cache directory */
    const char *p = spx_plan_device_path("NVIDIA H100 80GB");
    if (spx_jit_cache_dir()) {
      assert_non_null(p);
      assert_non_null(strstr(p, "/tuner/v18/NVIDIA_H100_80GB.json"));
    }
  }
}

/* The worker selects step k+1 while the caller works on step k; its time is hidden when the caller
 * works longer than it, and the plan it gives computes step k+1's matrix. */
static void test_reselect_ordering(void **state) {
  spx_plan_options o;
  spx_reselect *r = NULL;
  spx_csr *m[4];
  spx_plan *cur = NULL;
  spx_reselect_step info;
  int k;
  (void)state;
  m[0] = pattern(1000, 3, 0, 0);      /* mps: ELL */
  m[1] = pattern(1000, 1, 30, 1000);  /* mps: CSR (B > 2.7) */
  m[2] = pattern(1001, 3, 0, 0);      /* ELL again */
  m[3] = pattern(1002, 3, 0, 0);      /* ELL, no switch */
  spx_plan_options_default(&o);
  o.strategy = SPX_PLAN_MPS; o.backend = SPX_BACKEND_HOST;
  assert_int_equal(spx_reselect_create(NULL, &o, &r), SPX_OK);
  assert_int_equal(spx_reselect_next(r, &cur, &info), SPX_INVALID_ARGUMENT); /* nothing submitted */
  assert_null(cur);
  assert_int_equal(spx_reselect_submit(r, m[0]), SPX_OK);
  assert_int_equal(spx_reselect_submit(r, m[1]), SPX_INVALID_ARGUMENT);   /* one pending at a time */
  assert_int_equal(spx_reselect_next(r, &cur, &info), SPX_OK);
  assert_int_equal(info.step, 0);
  assert_int_equal(info.format, SPX_FORMAT_ELL);
  assert_int_equal(info.switched, 0);
  for (k = 1; k < 4; k++) {
    spx_plan *nxt = NULL;
    int64_t i, n = m[k]->nrows;
    double *x = malloc((size_t)n * 8), *y = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8), t0;
    assert_int_equal(spx_reselect_submit(r, m[k]), SPX_OK);
    /* The caller's step k-1: SpMVs with the current plan for at least 30 ms. */
    spx_test_fill(x, m[k - 1]->ncols);
    t0 = (double)clock() / CLOCKS_PER_SEC;
    {
      struct timespec ts = {0, 30 * 1000 * 1000};
      double *yy = malloc((size_t)m[k - 1]->nrows * 8);
      assert_int_equal(spx_plan_spmv(cur, 1.0, x, 0.0, yy), SPX_OK);
      nanosleep(&ts, NULL);
      free(yy);
    }
    (void)t0;
    assert_int_equal(spx_reselect_next(r, &nxt, &info), SPX_OK);
    assert_int_equal(info.step, k);
    assert_int_equal(info.format, k == 1 ? SPX_FORMAT_CSR : SPX_FORMAT_ELL);
    assert_int_equal(info.switched, k <= 2);
    assert_true(info.select_ms > 0);
    /* Selection on matrices this small takes far under 30 ms: all of it hidden. */
    assert_true(info.hidden_ms == info.select_ms);
    assert_true(info.exposed_ms >= 0 && info.exposed_ms < 30);
    spx_test_fill(x, n);
    assert_int_equal(spx_plan_spmv(nxt, 1.0, x, 0.0, y), SPX_OK);
    assert_int_equal(spx_csr_spmv(m[k], 1.0, x, 0.0, yr), SPX_OK);
    assert_true(spx_test_relerr(y, yr, n) < 1e-13);
    for (i = 0; i < n; i++) (void)i;
    spx_plan_destroy(cur);
    cur = nxt;
    free(x); free(y); free(yr);
  }
  /* Pending work at destroy is joined, not leaked. */
  assert_int_equal(spx_reselect_submit(r, m[0]), SPX_OK);
  spx_reselect_destroy(r);
  spx_plan_destroy(cur);
  /* Trial is refused: it would time on the device the caller uses. */
  o.strategy = SPX_PLAN_TRIAL;
  assert_int_equal(spx_reselect_create(NULL, &o, &r), SPX_INVALID_ARGUMENT);
  /* A worker failure comes back from next with its message. */
  o.strategy = SPX_PLAN_MODEL;
  o.memory_limit = 10;
  assert_int_equal(spx_reselect_create(NULL, &o, &r), SPX_OK);
  assert_int_equal(spx_reselect_submit(r, m[0]), SPX_OK);
  assert_int_equal(spx_reselect_next(r, &cur, &info), SPX_DEVICE_OUT_OF_MEMORY);
  assert_non_null(strstr(spx_last_error(), "step 0"));
  spx_reselect_destroy(r);
  spx_reselect_destroy(NULL);
  for (k = 0; k < 4; k++) spx_csr_destroy(m[k]);
}

/* y = A x on the GPU, by a plan or (p NULL) a dmatrix, against the host CSR's. */
static void check_device_spmv(spx_context *g, spx_plan *p, spx_dmatrix *d, const spx_csr *a, const char *what) {
  int64_t n = a->nrows, m = a->ncols;
  double *x = malloc((size_t)m * 8), *y = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8);
  spx_devptr dx, dy;
  assert_true(x && y && yr);
  spx_test_fill(x, m);
  assert_int_equal(spx_device_alloc(g, (size_t)m * 8, &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &dy), SPX_OK);
  assert_int_equal(spx_device_upload(g, dx, x, (size_t)m * 8), SPX_OK);
  assert_int_equal(spx_device_memset(g, dy, 0xff, (size_t)n * 8), SPX_OK);
  if (p) assert_int_equal(spx_plan_spmv(p, 1.0, (const void *)(uintptr_t)dx, 0.0, (void *)(uintptr_t)dy), SPX_OK);
  else assert_int_equal(spx_dmatrix_spmv(d, 1.0, dx, 0.0, dy), SPX_OK);
  assert_int_equal(spx_device_download(g, y, dy, (size_t)n * 8), SPX_OK);
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, yr), SPX_OK);
  if (spx_test_relerr(y, yr, n) > 1e-12)
    fail_msg("%s: %s gives relative error %g", what, p ? spx_plan_reason(p) : spx_dmatrix_describe(d),
             spx_test_relerr(y, yr, n));
  spx_device_free(g, dx); spx_device_free(g, dy);
  free(x); free(y); free(yr);
}

/* GPU: every strategy computes the right y with device vectors; skipped without a GPU. */
static void check_plan_spmv(spx_context *g, spx_plan *p, const spx_csr *a, const char *what) {
  check_device_spmv(g, p, NULL, a, what);
}

static void test_gpu_plans(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a;
  int st;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_powerlaw(20000, 2.0, 2, 300, 3, SPX_DOUBLE, &a), SPX_OK);
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    spx_plan_options o;
    spx_plan *p;
    spx_plan_options_default(&o);
    o.strategy = (spx_plan_strategy)st; o.trial_reps = 5;
    if (spx_plan_create(g, a, &o, &p)) fail_msg("%s: %s", spx_plan_strategy_name(o.strategy), spx_last_error());
    check_plan_spmv(g, p, a, spx_plan_strategy_name(o.strategy));
    spx_plan_destroy(p);
  }
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* A lazy plan reads nothing of the caller's matrix after spx_plan_create: scrambled right after,
 * A x is still the matrix's. On a staged matrix whose choice builds from the staged arrays (a wrap:
 * csr, cusparse; a device conversion) the plan keeps no host copy: the values went up in
 * spx_plan_create instead; a choice converted on the host keeps one. Every forced candidate and
 * auto, lazy; then the staging size moved by SPX_PLAN_DEVICE_PROFILE. */
int spx__plan_keeps_copy(const spx_plan *p); /* test hook (plan_object_impl.h) */
int spx__device_converts(int f);             /* test hook (dmatrix.h) */
static void test_gpu_lazy_staged(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a, *keep;
  int f, tested = 0;
  (void)state;
  if (!g) skip();
  /* 32^3 Poisson: 2.2e5 nonzeros, above the staging size (2^17) */
  assert_int_equal(spx_gen_poisson3d(32, 32, 32, 7, SPX_DOUBLE, &a), SPX_OK);
  assert_int_equal(spx_csr_copy(a, SPX_DOUBLE, &keep), SPX_OK);
  for (f = -2; f < spx_format_count(); f++) { /* -2 auto, -1 cuSPARSE */
    const char *name = f == -2 ? NULL : f == -1 ? "cusparse" : spx_format_name((spx_format)f);
    spx_plan_options o;
    spx_plan *p = NULL;
    int64_t k;
    char what[64];
    if (f >= 0 && !spx_format_has_kernel((spx_format)f)) continue;
    spx_plan_options_default(&o);
    o.force = name;
    o.trial_reps = 5;
    snprintf(what, sizeof what, "lazy %s", name ? name : "auto");
    if (spx_plan_create(g, a, &o, &p)) {
      if (name && spx_last_status() == SPX_DEVICE_OUT_OF_MEMORY) { spx_clear_error(); continue; }
      fail_msg("%s: %s", what, spx_last_error());
    }
    if (f == -1 || f == SPX_FORMAT_CSR || (f >= 0 && spx__device_converts(f))) {
      if (spx__plan_keeps_copy(p)) fail_msg("%s: a copy of the staged matrix kept", what);
    } else if (f >= 0 && !spx__plan_keeps_copy(p)) {
      fail_msg("%s: converted on the host, but no copy kept", what);
    }
    for (k = 0; k < a->nnz; k++) { a->col_idx[k] = 0; ((double *)a->val.p)[k] = -7.0; }
    check_plan_spmv(g, p, keep, what);
    memcpy(a->col_idx, keep->col_idx, (size_t)a->nnz * sizeof *a->col_idx);
    memcpy(a->val.p, keep->val.p, (size_t)a->nnz * sizeof(double));
    spx_plan_destroy(p);
    tested++;
  }
  assert_true(tested >= 4);
  spx_csr_destroy(a);
  spx_csr_destroy(keep);
  { /* SPX_PLAN_DEVICE_PROFILE=N stages from N nonzeros (a 12^3 Poisson, 1e4, stays on the host by
     * default: a lazy auto plan keeps a copy), 0 never (the 32^3 one then keeps a copy too); the
     * plans compute A x either way */
    static const struct { int side; const char *env, *beside; int staged; } cases[7] = {
        {12, NULL, NULL, 0}, {12, "4096", NULL, 1}, {32, "0", "0", 0}, {32, "not a number", NULL, 1},
        /* 20^3, 5e4: below the staging size, staged beside the host's passes unless told not to;
         * with no device profile every size from SPX_PLAN_UPLOAD_BESIDE is */
        {20, NULL, NULL, 1}, {20, NULL, "0", 0}, {32, "0", NULL, 1}};
    int k;
    for (k = 0; k < 7; k++) {
      spx_plan_options o;
      spx_plan *p = NULL;
      char what[128];
      assert_int_equal(spx_gen_poisson3d(cases[k].side, cases[k].side, cases[k].side, 7, SPX_DOUBLE, &a), SPX_OK);
      spx_plan_options_default(&o);
      o.force = "cusparse"; /* wraps the staged arrays: no copy where staged */
      env_put("SPX_PLAN_DEVICE_PROFILE", cases[k].env);
      env_put("SPX_PLAN_UPLOAD_BESIDE", cases[k].beside);
      snprintf(what, sizeof what, "%d^3, SPX_PLAN_DEVICE_PROFILE=%s, SPX_PLAN_UPLOAD_BESIDE=%s", cases[k].side,
               cases[k].env ? cases[k].env : "(unset)", cases[k].beside ? cases[k].beside : "(unset)");
      if (spx_plan_create(g, a, &o, &p)) fail_msg("%s: %s", what, spx_last_error());
      env_put("SPX_PLAN_DEVICE_PROFILE", NULL);
      env_put("SPX_PLAN_UPLOAD_BESIDE", NULL);
      if (spx__plan_keeps_copy(p) == cases[k].staged) fail_msg("%s: staged %d expected", what, cases[k].staged);
      check_plan_spmv(g, p, a, what);
      spx_plan_destroy(p);
      spx_csr_destroy(a);
    }
  }
  spx_context_destroy(g);
}

/* A CUDA plan of a matrix with >= 2^20 nonzeros profiles its rows and validates on the device
 * (analyze.cu): the same analysis and the same candidates, to the bit, as the host profile
 * (SPX_PLAN_DEVICE_PROFILE=0), and the same choice unless the cheaper staged conversion moves it
 * to a faster device-converted format; plans built from the staged arrays (cuSPARSE and spx's CSR kernel
 * wrap them, SELL, SELL16, SDIA and BSR convert from them) compute A*x; a malformed CSR gets the host validation's message. */
static spx_plan *dev_plan(spx_context *g, const spx_csr *a, int host_profile, const char *force) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_plan_options_default(&o);
  o.strategy = SPX_PLAN_MODEL;
  o.eager = 1;
  o.force = force;
  /* enough calls that both profiles read the columns: the two are compared whole */
  o.expected_calls = 1000000000;
  if (host_profile) { /* on the host, the upload after it: nothing staged */
    env_put("SPX_PLAN_DEVICE_PROFILE", "0");
    env_put("SPX_PLAN_UPLOAD_BESIDE", "0");
  }
  if (spx_plan_create(g, a, &o, &p)) fail_msg("%s plan (%s profile): %s", force ? force : "model",
                                              host_profile ? "host" : "device", spx_last_error());
  env_put("SPX_PLAN_DEVICE_PROFILE", NULL);
  env_put("SPX_PLAN_UPLOAD_BESIDE", NULL);
  return p;
}

/* Plan q's analysis and candidates as plan h's (the host profile's, nothing staged): the row
 * statistics, each candidate's format, engine, bytes and predicted time, the last two within a
 * relative tol (0: to the bit). how says where q's profile came from. */
static void check_same_profile(const spx_plan *h, const spx_plan *q, const char *name, const char *how, double tol) {
  const spx_analysis *ah = spx_plan_analysis(h), *aq = spx_plan_analysis(q);
  const spx_plan_candidate *ch, *cq;
  int nh, nq, i;
  assert_int_equal(aq->row_min, ah->row_min);
  assert_int_equal(aq->row_max, ah->row_max);
  assert_int_equal(aq->empty_rows, ah->empty_rows);
  assert_true(fabs(aq->row_stddev - ah->row_stddev) <= tol * (1 + ah->row_stddev));
  assert_true(aq->B == ah->B && aq->R == ah->R);
  ch = spx_plan_candidates(h, &nh); cq = spx_plan_candidates(q, &nq);
  assert_int_equal(nq, nh);
  for (i = 0; i < nh; i++) {
    assert_int_equal(cq[i].format, ch[i].format);
    assert_int_equal(cq[i].engine, ch[i].engine);
    assert_int_equal(cq[i].bytes, ch[i].bytes);
    if (fabs(cq[i].predicted_us - ch[i].predicted_us) > tol * fabs(ch[i].predicted_us))
      fail_msg("%s candidate %d: predicted %.17g us %s, %.17g from the host's", name, i, cq[i].predicted_us, how,
               ch[i].predicted_us);
  }
}

/* A malformed CSR b is refused by spx_plan_create (strategy st, eager or lazy, each of the
 * expected-call counts) with the host validation's message, and no plan; b is destroyed. */
static void check_refused(spx_context *g, spx_csr *b, spx_plan_strategy st, int eager, const int64_t *calls, int ncalls) {
  spx_plan_options o;
  spx_plan *p = NULL;
  char host_msg[512];
  int c;
  assert_int_equal(spx_csr_validate(b), SPX_INVALID_ARGUMENT);
  snprintf(host_msg, sizeof host_msg, "%s", spx_last_error());
  for (c = 0; c < ncalls; c++) {
    spx_plan_options_default(&o);
    o.strategy = st;
    o.expected_calls = calls[c];
    o.eager = eager;
    assert_int_equal(spx_plan_create(g, b, &o, &p), SPX_INVALID_ARGUMENT);
    assert_null(p);
    assert_string_equal(spx_last_error(), host_msg);
  }
  spx_csr_destroy(b);
}

/* Below the staging size a CUDA plan validates and profiles on the host while a thread uploads the
 * matrix (SPX_PLAN_UPLOAD_BESIDE): the same analysis and the same candidates' SpMV predictions, to
 * the bit, as the plain host profile (upload after, nothing staged), the same choice unless the
 * staged conversion's lower price moves it to a device-converted format; plans from the staged
 * arrays compute A x (auto eager and lazy, at 100 calls (the shortcut's) and 10^9, cuSPARSE, csr,
 * sell); a malformed CSR gets the host validation's message and no plan. */
static void test_gpu_beside(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *m[3];
  const char *names[3] = {"poisson7 20^3", "power-law 20k", "elasticity 7^3"};
  int k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &m[0]), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(20000, 2.0, 1, 900, 11, SPX_DOUBLE, &m[1]), SPX_OK);
  assert_int_equal(spx_gen_elasticity3d(7, 7, 7, SPX_DOUBLE, &m[2]), SPX_OK);
  for (k = 0; k < 3; k++) {
    static const char *const force[4] = {NULL, "cusparse", "csr", "sell"};
    spx_plan *ph, *pb;
    int f, c;
    if (m[k]->nnz < (1 << 14) || m[k]->nnz >= (1 << 17)) fail_msg("%s: %lld nonzeros, not between 2^14 and 2^17", names[k], (long long)m[k]->nnz);
    ph = dev_plan(g, m[k], 1, NULL);
    pb = dev_plan(g, m[k], 0, NULL);
    check_same_profile(ph, pb, names[k], "beside the upload", 0);
    if (spx_plan_format(pb) != spx_plan_format(ph) || spx_plan_engine_of(pb) != spx_plan_engine_of(ph)) {
      const spx_format fb = spx_plan_format(pb);
      print_message("%s: beside %s, after %s\n", names[k], spx_format_name(fb), spx_format_name(spx_plan_format(ph)));
      assert_true(spx__device_converts((int)fb) || fb == SPX_FORMAT_CSR);
    }
    check_plan_spmv(g, ph, m[k], names[k]);
    check_plan_spmv(g, pb, m[k], names[k]);
    spx_plan_destroy(ph);
    spx_plan_destroy(pb);
    for (f = 0; f < 4; f++)
      for (c = 0; c < 3; c++) { /* eager at 100 and 10^9 calls, lazy at 1000 */
        spx_plan_options o;
        spx_plan *p = NULL;
        char what[96];
        spx_plan_options_default(&o);
        o.force = force[f];
        o.eager = c < 2;
        o.expected_calls = c == 0 ? 100 : c == 1 ? 1000000000 : 1000;
        snprintf(what, sizeof what, "%s %s %s %lld calls", names[k], force[f] ? force[f] : "auto", c < 2 ? "eager" : "lazy",
                 (long long)o.expected_calls);
        if (spx_plan_create(g, m[k], &o, &p)) fail_msg("%s: %s", what, spx_last_error());
        if (c == 2 && (f == 1 || f == 2) && spx__plan_keeps_copy(p)) fail_msg("%s: a copy of the staged matrix kept", what);
        check_plan_spmv(g, p, m[k], what);
        spx_plan_destroy(p);
      }
  }
  /* malformed: two columns swapped in row 5, a column past the last in row 3000, a row pointer
   * going back at row 7000 */
  for (k = 0; k < 3; k++) {
    static const int64_t calls[2] = {100, 1000000};
    spx_csr *b = NULL;
    assert_int_equal(spx_csr_copy(m[0], SPX_DOUBLE, &b), SPX_OK);
    if (k == 0) { int64_t q = b->row_ptr[5]; int32_t t = b->col_idx[q]; b->col_idx[q] = b->col_idx[q + 1]; b->col_idx[q + 1] = t; }
    else if (k == 1) b->col_idx[b->row_ptr[3001] - 1] = (int32_t)b->ncols;
    else b->row_ptr[7000] = b->row_ptr[6999] - 1;
    check_refused(g, b, SPX_PLAN_AUTO, 1, calls, 2);
  }
  for (k = 0; k < 3; k++) spx_csr_destroy(m[k]);
  spx_context_destroy(g);
}


/* A plan prices memory against the device's free memory as last read, without a driver call, while
 * its candidates stay within a quarter of it; nearer, it asks the driver again, so a reading made
 * stale by allocations since does not refuse a matrix that fits. A given memory limit reads nothing. */
static void test_gpu_free_seen(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a = NULL;
  spx_plan *p = NULL;
  spx_plan_options o;
  spx_device_info info;
  long long n0;
  int k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a), SPX_OK);
  /* a stale reading, as if other allocations had taken all but a byte (the fresh context's cache
   * holds no blocks yet): every candidate is near it */
  spx__free_seen_set(g, 1);
  assert_int_equal(spx__free_seen(g), 1);
  spx_plan_options_default(&o);
  o.eager = 1;
  n0 = spx__free_mem_count();
  if (spx_plan_create(g, a, &o, &p)) fail_msg("stale reading: %s", spx_last_error());
  assert_true(spx__free_mem_count() >= n0 + 1);
  assert_true(spx__free_seen(g) > 1);
  check_plan_spmv(g, p, a, "stale reading");
  spx_plan_destroy(p);
  /* the reading stands while the candidates are far from it (the calibration made above) */
  for (k = 0; k < 6; k++) {
    static const int64_t calls[3] = {200, 1000, 1000000};
    char what[64];
    spx_plan_options_default(&o);
    o.expected_calls = calls[k % 3];
    o.eager = k < 3;
    snprintf(what, sizeof what, "%s at %lld calls", o.eager ? "eager" : "lazy", (long long)o.expected_calls);
    n0 = spx__free_mem_count();
    if (spx_plan_create(g, a, &o, &p)) fail_msg("%s: %s", what, spx_last_error());
    check_plan_spmv(g, p, a, what);
    if (spx__free_mem_count() != n0) fail_msg("%s: the driver asked %lld times", what, spx__free_mem_count() - n0);
    spx_plan_destroy(p);
  }
  /* a given limit reads nothing, however near the last reading */
  spx__free_seen_set(g, 1);
  spx_plan_options_default(&o);
  o.memory_limit = (int64_t)1 << 40;
  n0 = spx__free_mem_count();
  if (spx_plan_create(g, a, &o, &p)) fail_msg("given limit: %s", spx_last_error());
  assert_int_equal(spx__free_mem_count(), n0);
  check_plan_spmv(g, p, a, "given limit");
  spx_plan_destroy(p);
  /* the context's query is a reading too */
  assert_int_equal(spx_context_device_info(g, &info), SPX_OK);
  assert_int_equal(spx__free_seen(g), info.free_mem);
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

/* The diagonal a plan keeps (for Jacobi) is the host pass's, to the bit, where a staged build takes
 * it from the device. */
static void check_diag(const spx_plan *p, const double *want, int64_t n, const char *name, const char *what) {
  double *d = malloc((size_t)n * sizeof *d);
  assert_int_equal(spx_plan_diagonal(p, d), SPX_OK);
  if (memcmp(d, want, (size_t)n * sizeof *d)) fail_msg("%s %s: the diagonal differs from the host's", name, what);
  free(d);
}

/* The public getters and printers no other test reaches: each returns what its header says. */
static void test_public_getters(void **state) {
  static spx_format_vtable vt;
  spx_csr *a;
  spx_plan *p;
  spx_plan_options o;
  spx_format id;
  spx_fmt *m = NULL;
  spx_kernel_plan kp;
  char *buf = NULL;
  size_t len = 0;
  FILE *f;
  int k, compiled = 7;
  (void)state;
  for (k = 0; k < SPX_STATUS_COUNT; k++) {
    const char *d = spx_status_description((spx_status)k);
    assert_true(d && *d && strcmp(d, "unknown status"));
  }
  assert_string_equal(spx_status_description((spx_status)-1), "unknown status");
  for (k = 0; k < SPX_PLAN_STRATEGY_COUNT; k++) {
    const char *d = spx_plan_strategy_description((spx_plan_strategy)k);
    assert_true(d && *d);
    if (k) assert_string_not_equal(d, spx_plan_strategy_description((spx_plan_strategy)(k - 1)));
  }
  assert_string_equal(spx_plan_strategy_description((spx_plan_strategy)99), "");
  assert_int_equal(spx_gen_poisson3d(10, 10, 10, 7, SPX_DOUBLE, &a), SPX_OK);
  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST;
  o.no_calibrate = 1;
  o.strategy = SPX_PLAN_MODEL;
  assert_int_equal(spx_plan_create(NULL, a, &o, &p), SPX_OK);
  assert_int_equal(spx_plan_strategy_of(p), SPX_PLAN_MODEL);
  assert_true(spx_plan_predicted_us(p) > 0);
  assert_true(spx_plan_convert_ms(p) >= 0);
  for (k = 0; k < 2; k++) {
    assert_non_null(f = open_memstream(&buf, &len));
    assert_int_equal(spx_plan_print(p, f, k), SPX_OK);
    fclose(f);
    assert_non_null(strstr(buf, spx_format_name(spx_plan_format(p))));
    if (k) assert_true(buf[0] == '{' && strstr(buf, "\"strategy\""));
    else assert_non_null(strstr(buf, "strategy"));
    free(buf);
    buf = NULL;
  }
  spx_plan_destroy(p);
  /* the dmatrix getters on NULL (their GPU values: test_gpu_tiered_jit) */
  assert_int_equal((int)spx_dmatrix_format(NULL), -1);
  assert_int_equal(spx_dmatrix_dtype(NULL), SPX_DOUBLE);
  assert_true(spx_dmatrix_jit_ms(NULL, &compiled) == 0 && compiled == 0);
  /* spx_format_set_kernel: a registered copy of ELL has no kernel until given one, then plans it */
  vt = *spx_format_info(SPX_FORMAT_ELL);
  vt.name = "ell_copy_for_a_test";
  assert_int_equal(spx_format_register(&vt, &id), SPX_OK);
  assert_int_equal(spx_format_has_kernel(id), 0);
  assert_int_equal(spx_format_set_kernel((spx_format)SPX_FORMAT_MAX + 3, spx_test_ell_copy_spec), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_format_set_kernel(id, spx_test_ell_copy_spec), SPX_OK);
  assert_int_equal(spx_format_has_kernel(id), 1);
  assert_int_equal(spx_fmt_from_csr(a, id, NULL, &m), SPX_OK);
  assert_int_equal(spx_dmatrix_plan(m, NULL, &kp), SPX_OK);
  assert_string_equal(kp.summary, "the test's own spec");
  spx_fmt_destroy(m);
  spx_csr_destroy(a);
}

/* A dmatrix's y = A x against the host CSR's (the dmatrix of a's conversion). */
static void check_dmatrix_spmv(spx_context *g, spx_dmatrix *d, const spx_csr *a, const char *what) {
  check_device_spmv(g, NULL, d, a, what);
}

/* a converted to f, uploaded (tiered 0, 1 or 2). */
static spx_dmatrix *dmatrix_of(spx_context *g, const spx_csr *a, spx_format f, int tiered) {
  spx_fmt *m = NULL;
  spx_dmatrix *d = NULL;
  spx_dmatrix_options o;
  memset(&o, 0, sizeof o);
  o.tiered = tiered;
  assert_int_equal(spx_fmt_from_csr(a, f, NULL, &m), SPX_OK);
  if (spx_dmatrix_create(g, m, &o, &d)) fail_msg("%s: %s", spx_format_name(f), spx_last_error());
  spx_fmt_destroy(m);
  return d;
}

/* The tiered JIT on the GPU: a shape the caches lack starts without waiting for NVRTC (on the
 * generic kernel, on cuSPARSE, or, for a bare dmatrix with neither, waiting at its first SpMV),
 * gives A x all along, and switches to the specialized kernel. Cold starts are made by removing
 * the kernels from the caches (spx_dmatrix_forget_kernels), so the test holds with a warm cache. */
static void test_gpu_tiered_jit(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a7, *a27, *big, *small;
  spx_dmatrix *d;
  const char *forced[2] = {"sell", "csr"};
  int k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(24, 24, 24, 7, SPX_DOUBLE, &a7), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(24, 24, 24, 27, SPX_DOUBLE, &a27), SPX_OK);
  /* ELL of K = 7, made cold: nothing runs until the compile ends, and the first SpMV waits */
  d = dmatrix_of(g, a7, SPX_FORMAT_ELL, 0);
  assert_int_equal(spx_dmatrix_forget_kernels(d, SPX_KERNELS_SPECIALIZED | SPX_KERNELS_GENERIC), SPX_OK);
  spx_dmatrix_destroy(d);
  d = dmatrix_of(g, a7, SPX_FORMAT_ELL, 1);
  assert_int_equal(spx_dmatrix_compiling(d), 1);
  assert_non_null(strstr(spx_dmatrix_describe(d), "(compiling)"));
  check_dmatrix_spmv(g, d, a7, "ell K=7, cold");
  assert_int_equal(spx_dmatrix_compiling(d), 0);
  assert_null(strstr(spx_dmatrix_describe(d), "generic"));
  spx_dmatrix_destroy(d);
  /* after the switch that job goes on to compile the generic ELL kernel, for shapes to come: two
   * compiles in all, the second within seconds */
  {
    spx_jit_stats before, now;
    int i;
    d = dmatrix_of(g, a7, SPX_FORMAT_ELL, 0);
    assert_int_equal(spx_dmatrix_forget_kernels(d, SPX_KERNELS_SPECIALIZED | SPX_KERNELS_GENERIC), SPX_OK);
    spx_dmatrix_destroy(d);
    spx_jit_stats_get(&before);
    d = dmatrix_of(g, a7, SPX_FORMAT_ELL, 1);
    check_dmatrix_spmv(g, d, a7, "ell K=7, cold again");
    spx_dmatrix_destroy(d);
    for (i = 0; i < 400; i++) {
      struct timespec ts = {0, 50000000L};
      spx_jit_stats_get(&now);
      if (now.compiles >= before.compiles + 2) break;
      nanosleep(&ts, NULL);
    }
    assert_true(now.compiles >= before.compiles + 2);
  }
  /* a new width of a format whose generic kernel is cached (made sure of here: the counter above
   * moves before the job stores the image): K = 27, cold, starts on it at once */
  {
    spx_fmt *m = NULL;
    spx_dmatrix_options go;
    memset(&go, 0, sizeof go);
    go.generic = 1;
    assert_int_equal(spx_fmt_from_csr(a27, SPX_FORMAT_ELL, NULL, &m), SPX_OK);
    assert_int_equal(spx_dmatrix_create(g, m, &go, &d), SPX_OK);
    spx_dmatrix_destroy(d);
    spx_fmt_destroy(m);
  }
  d = dmatrix_of(g, a27, SPX_FORMAT_ELL, 0);
  assert_int_equal(spx_dmatrix_forget_kernels(d, SPX_KERNELS_SPECIALIZED), SPX_OK);
  spx_dmatrix_destroy(d);
  d = dmatrix_of(g, a27, SPX_FORMAT_ELL, 1);
  assert_int_equal(spx_dmatrix_compiling(d), 1);
  assert_non_null(strstr(spx_dmatrix_describe(d), "generic while"));
  check_dmatrix_spmv(g, d, a27, "ell K=27 on the generic kernel");
  assert_int_equal(spx_dmatrix_wait(d), SPX_OK);
  assert_int_equal(spx_dmatrix_compiling(d), 0);
  assert_null(strstr(spx_dmatrix_describe(d), "generic"));
  check_dmatrix_spmv(g, d, a27, "ell K=27 specialized");
  {
    int compiled = -1;
    assert_int_equal(spx_dmatrix_format(d), SPX_FORMAT_ELL);
    assert_int_equal(spx_dmatrix_dtype(d), SPX_DOUBLE);
    assert_true(spx_dmatrix_jit_ms(d, &compiled) >= 0 && compiled == 1); /* its kernel was compiled */
  }
  spx_dmatrix_destroy(d);
  /* tiered 2 never takes the generic kernel */
  d = dmatrix_of(g, a27, SPX_FORMAT_ELL, 0);
  assert_int_equal(spx_dmatrix_forget_kernels(d, SPX_KERNELS_SPECIALIZED), SPX_OK);
  spx_dmatrix_destroy(d);
  d = dmatrix_of(g, a27, SPX_FORMAT_ELL, 2);
  assert_non_null(strstr(spx_dmatrix_describe(d), "(compiling)"));
  spx_dmatrix_destroy(d); /* mid-compile: the job finishes on its own */

  /* plans: a staged matrix (>= 1M nonzeros) whose chosen kernel is cold runs on cuSPARSE over the
   * staged CSR, then on the chosen kernel; a converted format (SELL) and spx's CSR kernel (which
   * runs on the staged arrays themselves). A matrix below the staging size (k >= 2) starts on a
   * cuSPARSE CSR of its own. */
  assert_int_equal(spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &big), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(13, 12, 11, 7, SPX_DOUBLE, &small), SPX_OK); /* 11k nonzeros: not staged */
  assert_true(small->nnz < (1 << 17));
  for (k = 0; k < 4; k++) {
    spx_plan_options o;
    spx_plan *p = NULL;
    const spx_csr *m = k < 2 ? big : small;
    spx_plan_options_default(&o);
    o.eager = 1;
    o.force = forced[k % 2];
    o.no_tiered_jit = 1;
    if (spx_plan_create(g, m, &o, &p)) fail_msg("%s: %s", forced[k % 2], spx_last_error());
    assert_int_equal(spx_plan_compiling(p), 0);
    assert_non_null(spx_plan_dmatrix(p));
    assert_int_equal(spx_dmatrix_forget_kernels(spx_plan_dmatrix(p), SPX_KERNELS_SPECIALIZED | SPX_KERNELS_GENERIC),
                     SPX_OK);
    spx_plan_destroy(p);
    o.no_tiered_jit = 0;
    if (spx_plan_create(g, m, &o, &p)) fail_msg("%s: %s", forced[k % 2], spx_last_error());
    assert_int_equal(spx_plan_compiling(p), 1);
    if (!strstr(spx_plan_reason(p), "cuSPARSE runs until then")) fail_msg("%s: %s", forced[k % 2], spx_plan_reason(p));
    check_plan_spmv(g, p, m, forced[k % 2]); /* on cuSPARSE, or the chosen kernel if it is done */
    assert_int_equal(spx_plan_wait(p), SPX_OK);
    assert_int_equal(spx_plan_compiling(p), 0);
    assert_null(strstr(spx_dmatrix_describe(spx_plan_dmatrix(p)), "generic"));
    check_plan_spmv(g, p, m, forced[k % 2]);
    spx_plan_destroy(p);
  }
  spx_csr_destroy(a7); spx_csr_destroy(a27); spx_csr_destroy(big); spx_csr_destroy(small);
  spx_context_destroy(g);
}

/* Wall seconds (a monotonic clock). */
static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* y = alpha A x + beta y on the GPU by plan p against the host CSR's, fresh x, y, alpha and beta
 * (y poisoned where beta is 0). */
static void check_device_call(spx_context *g, spx_plan *p, const spx_csr *a, const char *what) {
  const int64_t n = a->nrows, m = a->ncols;
  const double alpha = 0.5 + spx_test_rand(), beta = spx_test_rand() < 0.3 ? 0.0 : spx_test_rand();
  double *x = malloc((size_t)m * 8), *y = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8);
  spx_devptr dx, dy;
  assert_true(x && y && yr);
  spx_test_fill(x, m);
  spx_test_fill(yr, n);
  assert_int_equal(spx_device_alloc(g, (size_t)m * 8, &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &dy), SPX_OK);
  assert_int_equal(spx_device_upload(g, dx, x, (size_t)m * 8), SPX_OK);
  if (beta == 0.0) assert_int_equal(spx_device_memset(g, dy, 0xff, (size_t)n * 8), SPX_OK);
  else assert_int_equal(spx_device_upload(g, dy, yr, (size_t)n * 8), SPX_OK);
  if (spx_plan_spmv(p, alpha, (const void *)(uintptr_t)dx, beta, (void *)(uintptr_t)dy)) fail_msg("%s: %s", what, spx_last_error());
  assert_int_equal(spx_device_download(g, y, dy, (size_t)n * 8), SPX_OK);
  assert_int_equal(spx_csr_spmv(a, alpha, x, beta, yr), SPX_OK);
  if (!(spx_test_relerr(y, yr, n) <= 1e-12))
    fail_msg("%s: %s gives relative error %g", what, spx_plan_reason(p), spx_test_relerr(y, yr, n));
  spx_device_free(g, dx); spx_device_free(g, dy);
  free(x); free(y); free(yr);
}

/* calls SpMVs of p with beta 1 and nothing waited for between them, on the device: y0 + calls x
 * alpha A x, however a race switches candidates in between (the context stream's order holds). */
static void check_device_chain(spx_context *g, spx_plan *p, const spx_csr *a, int calls, const char *what) {
  const int64_t n = a->nrows, m = a->ncols;
  const double alpha = 0.5 + spx_test_rand();
  double *x = malloc((size_t)m * 8), *y = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8), *ax = malloc((size_t)n * 8);
  spx_devptr dx, dy;
  int64_t i;
  int k;
  assert_true(x && y && yr && ax);
  spx_test_fill(x, m);
  spx_test_fill(yr, n);
  assert_int_equal(spx_device_alloc(g, (size_t)m * 8, &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(g, (size_t)n * 8, &dy), SPX_OK);
  assert_int_equal(spx_device_upload(g, dx, x, (size_t)m * 8), SPX_OK);
  assert_int_equal(spx_device_upload(g, dy, yr, (size_t)n * 8), SPX_OK);
  for (k = 0; k < calls; k++)
    if (spx_plan_spmv(p, alpha, (const void *)(uintptr_t)dx, 1.0, (void *)(uintptr_t)dy)) fail_msg("%s: %s", what, spx_last_error());
  assert_int_equal(spx_device_download(g, y, dy, (size_t)n * 8), SPX_OK);
  assert_int_equal(spx_csr_spmv(a, 1.0, x, 0.0, ax), SPX_OK);
  for (i = 0; i < n; i++) yr[i] += (double)calls * alpha * ax[i];
  if (!(spx_test_relerr(y, yr, n) <= 1e-10))
    fail_msg("%s: %d chained calls give relative error %g (%s)", what, calls, spx_test_relerr(y, yr, n), spx_plan_reason(p));
  spx_device_free(g, dx); spx_device_free(g, dy);
  free(x); free(y); free(yr); free(ax);
}

/* The best of three wall times of spx_plan_create with o, and of a cuSPARSE plan's create on the same
 * matrix (its upload and analysis: what a cuSPARSE user waits for), the stream synchronized inside
 * each timing and the plans destroyed outside it. */
static void create_times(spx_context *g, const spx_csr *a, const spx_plan_options *o, const char *what, double *plan_ms,
                         double *cs_ms) {
  int r;
  *plan_ms = *cs_ms = 1e30;
  for (r = 0; r < 3; r++) {
    spx_plan *p = NULL;
    spx_cusparse_plan *cs = NULL;
    double t0 = wall_s(), t;
    /* the compiles earlier plans left running (a cold JIT cache: a race's candidates) finish first:
     * they take the host's threads, and the bound is on this create's own work (at most a minute) */
    while (spx__jobs_busy() > 0 && wall_s() - t0 < 60) {
      struct timespec nap = {0, 1000000L};
      nanosleep(&nap, NULL);
    }
    t0 = wall_s();
    if (spx_cusparse_plan_create(g, a, SPX_CUSPARSE_CSR_ALG1, NULL, &cs) || spx_context_synchronize(g))
      fail_msg("%s: cuSPARSE: %s", what, spx_last_error());
    t = 1e3 * (wall_s() - t0);
    if (t < *cs_ms) *cs_ms = t;
    spx_cusparse_plan_destroy(cs);
    t0 = wall_s();
    if (spx_plan_create(g, a, o, &p) || spx_context_synchronize(g)) fail_msg("%s: %s", what, spx_last_error());
    t = 1e3 * (wall_s() - t0);
    if (t < *plan_ms) *plan_ms = t;
    if (r == 2)
      print_message("%s: select_ms %.3f, build_ms %.3f (staging upload included), racing %d\n", what, spx_plan_select_ms(p),
                    spx_plan_build_ms(p), spx_plan_racing(p, NULL));
    spx_plan_destroy(p);
  }
}

/* The diagonal a_ii of a (0 where row i has none), as the host pass gives it. */
static void host_diag(const spx_csr *a, double *d) {
  int64_t i, k;
  for (i = 0; i < a->nrows && i < a->ncols; i++) {
    d[i] = 0;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      if (a->col_idx[k] == i) d[i] = a->val.d[k];
  }
}

/* auto's race on the GPU, as test_auto_race on the host: spx_plan_create returns with what the plan
 * runs first alone built (its start on the staged CSR where it has one, else the model's choice) and
 * nothing timed, within a bound of a cuSPARSE plan's create on a staged matrix; every call gives
 * A x, chained calls keep the stream's order; the race ends after enough calls with the fastest
 * measured candidate and a "race" reason (candidates still compiling may be dropped: their notes
 * say so), or at spx_plan_wait; the diagonal is the host pass's during and after it; a solver on a
 * racing plan ends it and converges; destroyed mid-race it leaves no device memory behind. A
 * staged matrix (the best two, or the ranked ones if latency-bound) and a small latency-bound one. */
static void test_gpu_race(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *m[2];
  const char *names[2] = {"poisson7 64^3", "poisson7 13x12x11"};
  int k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &m[0]), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(13, 12, 11, 7, SPX_DOUBLE, &m[1]), SPX_OK);
  for (k = 0; k < 2; k++) {
    spx_plan_options o, mo;
    spx_plan *p = NULL, *q = NULL;
    spx_plan_race_info r0, ri;
    spx_device_info before, after;
    const spx_plan_candidate *c;
    int n, i, calls, best = -1, chosen = -1, round;
    double t0;
    spx_plan_options_default(&o);
    o.expected_calls = 10000000; /* the timing is cheap against this much work */
    o.trial_gap = 100;            /* and considered whatever the predictions' gap */
    o.eager = 1;
    mo = o;
    mo.strategy = SPX_PLAN_MODEL;
    assert_int_equal(spx_plan_create(g, m[k], &mo, &q), SPX_OK);
    /* (a) create's time against cuSPARSE's (the caches warm: the model's plan above ran first). A
     * create that still timed or converted candidates (the synchronous trial: 144 ms on an H100
     * where cuSPARSE takes about 2) breaks the bound on the staged matrix. */
    {
      double plan_ms, cs_ms;
      create_times(g, m[k], &o, names[k], &plan_ms, &cs_ms);
      print_message("%s: spx_plan_create (auto, eager) %.3f ms, a cuSPARSE plan's create %.3f ms (best of 3)\n", names[k],
                    plan_ms, cs_ms);
      if (k == 0 && !(plan_ms <= 3 * cs_ms + 2))
        fail_msg("%s: spx_plan_create took %.3f ms, over 3 x %.3f ms (cuSPARSE's) + 2 ms", names[k], plan_ms, cs_ms);
    }
    t0 = wall_s();
    if (spx_plan_create(g, m[k], &o, &p)) fail_msg("%s: %s", names[k], spx_last_error());
    print_message("%s: spx_plan_create %.3f ms: %s\n", names[k], 1e3 * (wall_s() - t0), spx_plan_reason(p));
    if (!spx_plan_racing(p, &r0)) fail_msg("%s: no race: %s", names[k], spx_plan_reason(p));
    /* what runs first, alone: the start on the staged CSR (no candidate built), else the model's choice */
    print_message("%s: started on the staged CSR: %d\n", names[k], r0.started);
    assert_int_equal(r0.built, !r0.started);
    if (k == 1) assert_int_equal(r0.started, 0); /* not staged: nothing to start on */
    assert_int_equal(r0.measured, 0);
    assert_int_equal(spx_plan_format(p), spx_plan_format(q));
    assert_int_equal(spx_plan_engine_of(p), spx_plan_engine_of(q));
    spx_plan_destroy(q);
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) assert_true(c[i].measured_us < 0);
    { /* the diagonal, owed while the race runs: the host pass's to the bit */
      double *hd = malloc((size_t)m[k]->nrows * sizeof *hd);
      assert_non_null(hd);
      host_diag(m[k], hd);
      check_diag(p, hd, m[k]->nrows, names[k], "racing");
      free(hd);
    }
    /* (b) chained, then (c) checked one by one until the race ends */
    check_device_chain(g, p, m[k], 200, names[k]);
    t0 = wall_s();
    for (calls = 0; spx_plan_racing(p, &ri) && wall_s() - t0 < 60; calls++) check_device_call(g, p, m[k], names[k]);
    if (spx_plan_racing(p, &ri)) fail_msg("%s: still racing after %d calls: %d of %d measured", names[k], calls, ri.measured, ri.candidates);
    print_message("%s: the race ended after %d more calls: %s\n", names[k], calls, spx_plan_reason(p));
    if (!strstr(spx_plan_reason(p), "race of the best") || strstr(spx_plan_reason(p), "running") ||
        strstr(spx_plan_reason(p), "spx_plan_wait"))
      fail_msg("%s: %s", names[k], spx_plan_reason(p));
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++) {
      if (c[i].measured_us > 0 && (best < 0 || c[i].measured_us < c[best].measured_us)) best = i;
      if (c[i].format == spx_plan_format(p) && c[i].engine == spx_plan_engine_of(p)) chosen = i;
      if (!strncmp(c[i].note, "race", 4)) print_message("  %s: %s\n", spx_format_name(c[i].format), c[i].note);
    }
    assert_true(best >= 0 && chosen >= 0 && c[chosen].measured_us == c[best].measured_us);
    check_device_chain(g, p, m[k], 50, names[k]);
    { /* the diagonal after the race (taken as the staged arrays went, or still owed by a wrap) */
      double *hd = malloc((size_t)m[k]->nrows * sizeof *hd);
      assert_non_null(hd);
      host_diag(m[k], hd);
      check_diag(p, hd, m[k]->nrows, names[k], "after the race");
      free(hd);
    }
    spx_plan_destroy(p);
    { /* (f) a solver on a racing plan: it ends the race (spx_plan_wait) and converges */
      const int64_t nr = m[k]->nrows;
      double *b = malloc((size_t)nr * sizeof *b), *x = calloc((size_t)nr, sizeof *x);
      spx_solve_options so;
      spx_solve_report rep;
      assert_true(b && x);
      spx_test_fill(b, nr);
      assert_int_equal(spx_plan_create(g, m[k], &o, &p), SPX_OK);
      check_device_chain(g, p, m[k], 5, names[k]);
      spx_solve_options_default(&so);
      so.rtol = 1e-9;
      so.maxit = 2000;
      so.host_vectors = 1;
      if (spx_solve_pcg_jacobi(p, b, x, &so, &rep)) fail_msg("%s: pcg_jacobi on a racing plan: %s", names[k], spx_last_error());
      assert_int_equal(spx_plan_racing(p, NULL), 0);
      print_message("%s: pcg_jacobi on a racing plan: %lld iterations, true residual %.3g: %s\n", names[k],
                    (long long)rep.iterations, rep.true_rel_resid, spx_plan_reason(p));
      assert_true(rep.true_rel_resid <= 1e-8);
      spx_plan_destroy(p);
      free(b); free(x);
    }
    /* (d) spx_plan_wait ends it */
    assert_int_equal(spx_plan_create(g, m[k], &o, &p), SPX_OK);
    check_device_chain(g, p, m[k], 30, names[k]);
    assert_int_equal(spx_plan_wait(p), SPX_OK);
    assert_int_equal(spx_plan_racing(p, NULL), 0);
    if (!strstr(spx_plan_reason(p), "ended by spx_plan_wait")) fail_msg("%s: %s", names[k], spx_plan_reason(p));
    c = spx_plan_candidates(p, &n);
    for (i = 0, chosen = -1; i < n; i++)
      if (c[i].format == spx_plan_format(p) && c[i].engine == spx_plan_engine_of(p)) chosen = i;
    assert_true(chosen >= 0 && c[chosen].measured_us > 0);
    check_device_call(g, p, m[k], names[k]);
    spx_plan_destroy(p);
    /* (e) destroyed mid-race (round 0 warms the caches and cuSPARSE's lasting state up) */
    for (round = 0; round < 4; round++) {
      if (round == 1) {
        assert_int_equal(spx_device_trim(g), SPX_OK);
        assert_int_equal(spx_context_synchronize(g), SPX_OK);
        assert_int_equal(spx_context_device_info(g, &before), SPX_OK);
      }
      assert_int_equal(spx_plan_create(g, m[k], &o, &p), SPX_OK);
      check_device_chain(g, p, m[k], round * 11, names[k]);
      spx_plan_destroy(p);
    }
    assert_int_equal(spx_context_synchronize(g), SPX_OK);
    assert_int_equal(spx_device_trim(g), SPX_OK);
    assert_int_equal(spx_context_device_info(g, &after), SPX_OK);
    print_message("%s: free device memory before %lld, after %lld bytes\n", names[k], (long long)before.free_mem,
                  (long long)after.free_mem);
    assert_true(after.free_mem >= before.free_mem - (4 << 20));
  }
  spx_csr_destroy(m[0]); spx_csr_destroy(m[1]);
  spx_context_destroy(g);
}

/* spx's CSR kernel on the staged arrays, built, waited for and loaded in this process (forget:
 * then removed from the JIT caches, memory and disk). */
static void nothing_pays_csr_kernel(spx_context *g, const spx_csr *a, int forget) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_plan_options_default(&o);
  o.force = "csr";
  o.no_diagonal = 1;
  o.eager = 1;
  if (spx_plan_create(g, a, &o, &p) || spx_plan_wait(p)) fail_msg("forced csr: %s", spx_last_error());
  assert_non_null(spx_plan_dmatrix(p));
  if (forget)
    assert_int_equal(spx_dmatrix_forget_kernels(spx_plan_dmatrix(p), SPX_KERNELS_SPECIALIZED | SPX_KERNELS_GENERIC), SPX_OK);
  spx_plan_destroy(p);
}

/* The shortcut for matrices where no conversion can pay back: auto takes cuSPARSE without the
 * profile only where the full model, with the same constants, would have chosen it too (every
 * converted candidate scores above cuSPARSE's less the margin), and not at 10^6 calls; with spx's
 * CSR kernel out of the JIT caches it fires somewhere. With that kernel loaded it costs nothing
 * to run on the staged arrays: where cuSPARSE's call floor makes it predicted 1.25x slower than
 * spx's CSR, auto does not take cuSPARSE. */
static void test_gpu_nothing_pays_shortcut(void **state) {
  static const char *const names[] = {"bcsstk08", "ct2010", "luxembourg", "cage10", "bcsstk16", "EX5", "rajat11"};
  spx_context *g = spx_test_gpu_context();
  spx_plan_device dev;
  size_t i;
  int fired = 0, checked = 0, k, warm;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_plan_calibrate(g, 0, &dev), SPX_OK);
  for (i = 0; i < sizeof names / sizeof *names; i++) {
    static const int64_t calls[] = {100, 200, 1000, 1000000};
    char path[1024];
    spx_csr *a = NULL;
    spx_test_matrix_path(names[i], path, sizeof path);
    if (spx_mm_read(path, SPX_DOUBLE, &a, NULL) != SPX_OK) { spx_clear_error(); continue; }
    for (warm = 0; warm < 2; warm++) {
      nothing_pays_csr_kernel(g, a, !warm);
      for (k = 0; k < 4; k++) {
        spx_plan_options o;
        spx_plan *p = NULL;
        spx_plan_candidate c[SPX_FORMAT_MAX + 1];
        int n = 0, j, cs = -1, csr = -1;
        spx_plan_options_default(&o);
        o.expected_calls = calls[k];
        o.no_diagonal = 1;
        if (spx_plan_create(g, a, &o, &p)) fail_msg("%s: %s", names[i], spx_last_error());
        assert_int_equal(spx_plan_model(a, &dev, calls[k], 0, 1, c, SPX_FORMAT_MAX + 1, &n), SPX_OK);
        for (j = 0; j < n; j++) {
          if (c[j].engine == SPX_PLAN_ENGINE_CUSPARSE) cs = j;
          if (c[j].engine == SPX_PLAN_ENGINE_SPX && c[j].format == SPX_FORMAT_CSR) csr = j;
        }
        assert_true(cs >= 0 && csr >= 0);
        if (strstr(spx_plan_reason(p), "no profile")) {
          fired++;
          assert_true(calls[k] < 1000000);
          assert_int_equal(spx_plan_engine_of(p), SPX_PLAN_ENGINE_CUSPARSE);
          for (j = 0; j < n; j++)
            if (c[j].fits && c[j].engine == SPX_PLAN_ENGINE_SPX && c[j].format != SPX_FORMAT_CSR &&
                c[j].score_us < c[cs].score_us * (1 - o.convert_margin))
              fail_msg("%s at %lld calls: the shortcut took cuSPARSE (%.3g us) where the model would take %s (%.3g us)",
                       names[i], (long long)calls[k], c[cs].score_us, spx_format_name(c[j].format), c[j].score_us);
        }
        if (warm && a->nnz < 100000 && c[cs].predicted_us > 1.25 * c[csr].predicted_us) {
          checked++;
          if (spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE)
            fail_msg("%s at %lld calls: cuSPARSE (%.3g us predicted) taken over spx's CSR (%.3g us), its kernel loaded: %s",
                     names[i], (long long)calls[k], c[cs].predicted_us, c[csr].predicted_us, spx_plan_reason(p));
        }
        spx_plan_destroy(p);
      }
    }
    spx_csr_destroy(a);
  }
  print_message("the shortcut fired on %d (matrix, calls) pairs; %d with the CSR kernel loaded checked\n", fired, checked);
  assert_true(fired > 0);
  spx_context_destroy(g);
}

/* The staged plan's column profile beside its upload may outlast the upload by what it may cost (a
 * share of the work): at a thousand SpMVs of an 860k-nonzero matrix (milliseconds of profile
 * against a few ms of work) it is stopped, and the formats that need it are not modelled, and say
 * so; at 10^9 SpMVs it completes and they are. */
static void test_gpu_columns_priced(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *a = NULL;
  static const int64_t calls[] = {1000, 1000000000};
  int k;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_powerlaw(100000, 2.0, 2, 400, 11, SPX_DOUBLE, &a), SPX_OK);
  assert_true(a->nnz >= (1 << 17)); /* staged */
  for (k = 0; k < 2; k++) {
    spx_plan_options o;
    spx_plan *p = NULL;
    const spx_plan_candidate *c;
    int n, i, sell = -1;
    spx_plan_options_default(&o);
    o.strategy = SPX_PLAN_MODEL;
    o.expected_calls = calls[k];
    o.no_diagonal = 1;
    if (spx_plan_create(g, a, &o, &p)) fail_msg("%s", spx_last_error());
    c = spx_plan_candidates(p, &n);
    for (i = 0; i < n; i++)
      if (c[i].engine == SPX_PLAN_ENGINE_SPX && c[i].format == SPX_FORMAT_SELL) sell = i;
    assert_true(sell >= 0);
    print_message("%lld calls: sell %s%s\n", (long long)calls[k], c[sell].predicted_us > 0 ? "modelled" : "",
                  c[sell].note);
    if (k == 0) {
      assert_non_null(strstr(c[sell].note, "not modelled"));
      assert_true(c[sell].predicted_us < 0);
    } else {
      assert_null(strstr(c[sell].note, "not modelled"));
      assert_true(c[sell].predicted_us > 0);
    }
    spx_plan_destroy(p);
  }
  spx_csr_destroy(a);
  spx_context_destroy(g);
}

static void test_gpu_device_profile(void **state) {
  spx_context *g = spx_test_gpu_context();
  spx_csr *m[4];
  const char *names[4] = {"poisson7 64^3", "power-law 300k", "elasticity 20^3", "mostly empty rows"};
  int k, i;
  (void)state;
  if (!g) skip();
  assert_int_equal(spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &m[0]), SPX_OK);
  assert_int_equal(spx_gen_powerlaw(300000, 2.0, 2, 5000, 5, SPX_DOUBLE, &m[1]), SPX_OK); /* rows past the 2048 shared bins */
  assert_int_equal(spx_gen_elasticity3d(20, 20, 20, SPX_DOUBLE, &m[2]), SPX_OK);
  m[3] = pattern(400000, 0, 400, 97);
  for (k = 0; k < 4; k++) {
    spx_plan *ph, *pd;
    double *hd;
    const spx_plan_candidate *cd;
    int nd;
    assert_true(m[k]->nnz >= (1 << 20));
    ph = dev_plan(g, m[k], 1, NULL);
    pd = dev_plan(g, m[k], 0, NULL);
    check_same_profile(ph, pd, names[k], "from the device profile", 1e-9);
    cd = spx_plan_candidates(pd, &nd);
    if (spx_plan_format(pd) != spx_plan_format(ph)) {
      /* The staged plan prices the device converters (SELL, SELL16, SDIA, BSR) from the staged
       * arrays, the host profile's plan their whole conversion with its own upload: cheaper
       * conversions can only move the choice to a device-converted format with a faster kernel
       * (H100: elasticity 20^3 took BSR, 10.4 us, where the host profile kept CSR, 17.7 us). */
      double uh = -1, ud = -1;
      spx_format fd = spx_plan_format(pd);
      for (i = 0; i < nd; i++) {
        if (cd[i].format == spx_plan_format(ph) && cd[i].engine == spx_plan_engine_of(ph)) uh = cd[i].predicted_us;
        if (cd[i].format == fd && cd[i].engine == spx_plan_engine_of(pd)) ud = cd[i].predicted_us;
      }
      print_message("%s: device-profile plan %s, host-profile plan %s (%.2f vs %.2f us)\n", names[k],
                    spx_format_name(fd), spx_format_name(spx_plan_format(ph)), ud, uh);
      assert_true(fd == SPX_FORMAT_SELL || fd == SPX_FORMAT_SELL16 || fd == SPX_FORMAT_SDIA || fd == SPX_FORMAT_BSR);
      assert_true(uh > 0 && ud > 0 && ud < uh);
    }
    check_plan_spmv(g, pd, m[k], names[k]);
    hd = malloc((size_t)m[k]->nrows * sizeof *hd);
    assert_int_equal(spx_plan_diagonal(ph, hd), SPX_OK); /* the host pass's (host profile: nothing staged) */
    check_diag(pd, hd, m[k]->nrows, names[k], "model");
    spx_plan_destroy(ph); spx_plan_destroy(pd);
    { /* auto's trial builds its candidates from the staged arrays, as the chosen plan
         would (a device conversion or a wrap); the winner keeps them when it wraps them */
      spx_plan_options o;
      spx_plan_options_default(&o);
      o.expected_calls = 10000000; /* the trial is cheap against this much work */
      o.trial_gap = 100;            /* and considered whatever the predictions' gap */
      o.eager = 1;
      pd = NULL;
      if (spx_plan_create(g, m[k], &o, &pd)) fail_msg("%s auto: %s", names[k], spx_last_error());
      print_message("%s auto: %s\n", names[k], spx_plan_reason(pd));
      /* the best two, or (a kernel within a few launch latencies) the ranked candidates the work
       * pays for: a race over the first SpMVs, ended by spx_plan_wait below */
      if (!strstr(spx_plan_reason(pd), "race of the best two") && !strstr(spx_plan_reason(pd), "latency-bound: race of the best"))
        fail_msg("%s auto: no race: %s", names[k], spx_plan_reason(pd));
      check_plan_spmv(g, pd, m[k], names[k]);
      check_plan_spmv(g, pd, m[k], names[k]);
      assert_int_equal(spx_plan_wait(pd), SPX_OK);
      assert_int_equal(spx_plan_racing(pd, NULL), 0);
      print_message("%s auto, the race ended: %s\n", names[k], spx_plan_reason(pd));
      check_plan_spmv(g, pd, m[k], names[k]);
      spx_plan_destroy(pd);
    }
    /* builds from the staged arrays */
    pd = dev_plan(g, m[k], 0, "cusparse_csr");
    check_plan_spmv(g, pd, m[k], names[k]);
    assert_non_null(strstr(spx_plan_reason(pd), "from the row lengths alone")); /* it read no columns */
    check_diag(pd, hd, m[k]->nrows, names[k], "cusparse_csr");
    /* the wrapped arrays count in its bytes (a solver's bandwidth bound reads them) */
    assert_true(spx_plan_bytes(pd) >= 4 * (m[k]->nrows + 1) + 12 * m[k]->nnz);
    spx_plan_destroy(pd);
    /* spx's CSR kernel on the staged arrays: the kernel the host rule picks from these rows */
    pd = dev_plan(g, m[k], 0, "csr");
    check_plan_spmv(g, pd, m[k], names[k]);
    check_diag(pd, hd, m[k]->nrows, names[k], "csr");
    assert_int_equal(spx_plan_bytes(pd), 4 * (m[k]->nrows + 1) + 12 * m[k]->nnz);
    spx_plan_destroy(pd);
    { /* SELL16 where no slice spans more than its 16-bit offsets reach, else SELL */
      pd = dev_plan(g, m[k], 0, k == 0 || k == 2 ? "sell16" : "sell");
      check_plan_spmv(g, pd, m[k], names[k]);
      check_diag(pd, hd, m[k]->nrows, names[k], "sell");
      spx_plan_destroy(pd);
    }
    if (k == 0 || k == 2) { /* SDIA where it stays under its fill limit */
      pd = dev_plan(g, m[k], 0, "sdia");
      check_plan_spmv(g, pd, m[k], names[k]);
      spx_plan_destroy(pd);
    }
    /* BSR with the profile's block (3x3 on elasticity) */
    pd = dev_plan(g, m[k], 0, "bsr");
    if (k == 2) assert_int_equal(spx_plan_params(pd)->bsr_r, 3);
    check_plan_spmv(g, pd, m[k], names[k]);
    check_diag(pd, hd, m[k]->nrows, names[k], "bsr");
    spx_plan_destroy(pd);
    free(hd);
  }
  /* malformed: two columns swapped in one row, a column past the last (rows the host's column
   * sample does not read), then a swap in row 5 (one it reads, before the device has checked) */
  for (k = 0; k < 3; k++) {
    static const int64_t calls[1] = {1000};
    spx_csr *b = NULL;
    int64_t r = k == 2 ? 5 : 123457, q;
    assert_int_equal(spx_csr_copy(m[0], SPX_DOUBLE, &b), SPX_OK);
    q = b->row_ptr[r];
    if (k != 1) { int32_t t = b->col_idx[q]; b->col_idx[q] = b->col_idx[q + 1]; b->col_idx[q + 1] = t; }
    else b->col_idx[b->row_ptr[r + 1] - 1] = (int32_t)b->ncols;
    check_refused(g, b, SPX_PLAN_MODEL, 0, calls, 1);
  }
  for (k = 0; k < 4; k++) spx_csr_destroy(m[k]);
  spx_context_destroy(g);
}

/* A registered format without a model is converted once per model to learn its bytes, also where
 * the model prices the candidates twice (without the column counts, then with them). Registered
 * for good, so it runs after the tests whose models it would slow. */
static int converts = 0;
static spx_status count_from_csr(const spx_csr *a, const int64_t *params, void *impl) {
  converts++;
  return spx_format_info(SPX_FORMAT_ELL)->from_csr(a, params, impl);
}

static void test_model_converts_once(void **state) {
  spx_plan_device d = fake_gpu();
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  spx_format_vtable vt = *spx_format_info(SPX_FORMAT_ELL);
  spx_format id;
  spx_csr *a;
  int n, i, seen = 0;
  (void)state;
  vt.name = "ell_counted_for_a_test";
  vt.from_csr = count_from_csr;
  assert_int_equal(spx_format_register(&vt, &id), SPX_OK);
  assert_int_equal(spx_format_set_kernel(id, spx_test_ell_copy_spec), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(8, 8, 8, 7, SPX_DOUBLE, &a), SPX_OK);
  converts = 0;
  /* many calls: the column counts pay, so the model prices twice */
  assert_int_equal(spx__plan_candidates(a, NULL, &d, 100000000, 0, 1, 1, c, SPX_FORMAT_MAX + 1, &n, NULL, 0.02), SPX_OK);
  assert_true(cand(c, n, "sell", 0)->predicted_us > 0);
  for (i = 0; i < n; i++)
    if (c[i].format == id) {
      seen++;
      assert_true(c[i].bytes_exact && c[i].predicted_us > 0);
    }
  assert_int_equal(seen, 1);
  assert_int_equal(converts, 1);
  spx_csr_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strategy_names),   cmocka_unit_test(test_kubota_branches),
      cmocka_unit_test(test_mps_branches),     cmocka_unit_test(test_predicted_bytes), cmocka_unit_test(test_sampled_bytes),
      cmocka_unit_test(test_model_fake_device), cmocka_unit_test(test_model_gather), cmocka_unit_test(test_csr_staged_options), cmocka_unit_test(test_memory_limit),
      cmocka_unit_test(test_model_latency),
    cmocka_unit_test(test_model_atomics), cmocka_unit_test(test_calibration_floors),
    cmocka_unit_test(test_model_row_read),
    cmocka_unit_test(test_model_own_walks),
    cmocka_unit_test(test_profile_columns),
    cmocka_unit_test(test_rule_choice),    cmocka_unit_test(test_convert_margin), cmocka_unit_test(test_columns_priced), cmocka_unit_test(test_columns_value),
      cmocka_unit_test(test_plans_compute),    cmocka_unit_test(test_auto_trial_gap),
      cmocka_unit_test(test_auto_latency_trial), cmocka_unit_test(test_auto_race), cmocka_unit_test(test_auto_race_end),
      cmocka_unit_test(test_auto_race_second_look),
      cmocka_unit_test(test_bsr_plan_block), cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_device_file),      cmocka_unit_test(test_reselect_ordering),
      cmocka_unit_test(test_gpu_plans),        cmocka_unit_test(test_gpu_lazy_staged),        cmocka_unit_test(test_gpu_device_profile), cmocka_unit_test(test_gpu_beside), cmocka_unit_test(test_gpu_free_seen), cmocka_unit_test(test_gpu_columns_priced), cmocka_unit_test(test_gpu_tiered_jit), cmocka_unit_test(test_gpu_race),
      /* after test_gpu_race, whose bound is on auto's create: this one registers a format without a
       * model, which every later model prices by converting the matrix on the host */
      cmocka_unit_test(test_public_getters), cmocka_unit_test(test_gpu_nothing_pays_shortcut),
      cmocka_unit_test(test_model_converts_once),
  };
  setenv("SPX_QUIET", "1", 0);
  spx__config_reload();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
