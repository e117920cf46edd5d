/* SPDX-License-Identifier: BSD-3-Clause */
/* dia_example [FILE.mtx ...]: registers the out-of-tree DIA format of dia.h and uses it like a
 * built-in one on generated matrices (and any Matrix Market files given): bytes against CSR, the
 * SpMV against CSR's, the round trip. Then, where a CUDA context can be made, the GPU part: the
 * auto-tuner's candidates on a 3-D Poisson matrix and the files, DIA among them with the price its
 * model gives, and the tuner's choice; then a plan forced to DIA, which runs dia.h's kernel, its y
 * against the host's. Exit status 0 when every accepted matrix checks out; DIA refusing a matrix
 * that is not banded (SPX_UNSUPPORTED) is a correct answer, not a failure.
 * Build: cc examples/dia/main.c -Iinclude -ldl -lz */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dia.h"

/* Converts a to DIA and checks it; prints one line. Returns 1 on a wrong answer. */
static int try_dia(const char *name, const spx_csr *a, spx_format dia) {
  spx_fmt *m = NULL, *c = NULL;
  spx_csr *b = NULL;
  double *x, *y1, *y2, num = 0, den = 0;
  int64_t i, k;
  int bad = 0;
  spx_status s = spx_fmt_from_csr(a, dia, NULL, &m);
  if (s == SPX_UNSUPPORTED) {
    printf("%-22s refused: %s\n", name, spx_last_error());
    return 0;
  }
  if (s || spx_fmt_validate(m) || spx_fmt_from_csr(a, SPX_FORMAT_CSR, NULL, &c)) {
    printf("%-22s FAILED: %s\n", name, spx_last_error());
    spx_fmt_destroy(m);
    return 1;
  }
  x = (double *)malloc((size_t)(a->ncols + 1) * sizeof *x);
  y1 = (double *)malloc((size_t)(a->nrows + 1) * sizeof *y1);
  y2 = (double *)malloc((size_t)(a->nrows + 1) * sizeof *y2);
  for (i = 0; i < a->ncols; i++) x[i] = (double)(i % 13) / 13.0 - 0.4;
  spx_fmt_spmv(m, 2.0, x, 0.0, y1);
  spx_csr_spmv(a, 2.0, x, 0.0, y2);
  for (i = 0; i < a->nrows; i++) { num += (y1[i] - y2[i]) * (y1[i] - y2[i]); den += y2[i] * y2[i]; }
  if (!(num <= 1e-24 * den)) bad = 1;
  if (spx_fmt_to_csr(m, &b) || b->nnz != a->nnz ||
      memcmp(a->row_ptr, b->row_ptr, (size_t)(a->nrows + 1) * sizeof *a->row_ptr))
    bad = 1;
  for (k = 0; !bad && k < a->nnz; k++)
    if (a->col_idx[k] != b->col_idx[k] || !(a->val.d[k] == b->val.d[k])) bad = 1;
  printf("%-22s %5lld diagonals, %10lld bytes = %.3f x CSR, padding %.2f, SpMV and round trip %s\n", name,
         (long long)spx_fmt_scalar(m, "ndiag"), (long long)spx_fmt_bytes(m),
         (double)spx_fmt_bytes(m) / (double)spx_fmt_bytes(c), spx_fmt_padding(m), bad ? "WRONG" : "ok");
  free(x); free(y1); free(y2);
  spx_csr_destroy(b);
  spx_fmt_destroy(m);
  spx_fmt_destroy(c);
  return bad;
}

/* A candidate's name as the tuner prints it. */
static const char *cand_name(const spx_plan_candidate *c) {
  return c->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(c->format);
}

/* y = 2 A x on the GPU by plan p (double vectors) against the host CSR's: the largest difference
 * relative to the largest |y|, or -1 when a device call fails. */
static double gpu_error(spx_context *g, spx_plan *p, const spx_csr *a) {
  int64_t i, n = a->nrows, m = a->ncols;
  double *x = (double *)malloc((size_t)(m + 1) * sizeof *x), *y = (double *)malloc((size_t)(n + 1) * sizeof *y);
  double *yr = (double *)malloc((size_t)(n + 1) * sizeof *yr), diff = 0, top = 0;
  spx_devptr dx = 0, dy = 0;
  int ok = x && y && yr;
  for (i = 0; ok && i < m; i++) x[i] = (double)(i % 13) / 13.0 - 0.4;
  ok = ok && !spx_device_alloc(g, (size_t)(m + 1) * sizeof *x, &dx) &&
       !spx_device_alloc(g, (size_t)(n + 1) * sizeof *y, &dy) && !spx_device_upload(g, dx, x, (size_t)m * sizeof *x) &&
       !spx_plan_spmv(p, 2.0, (const void *)(uintptr_t)dx, 0.0, (void *)(uintptr_t)dy) &&
       !spx_device_download(g, y, dy, (size_t)n * sizeof *y) && !spx_csr_spmv(a, 2.0, x, 0.0, yr);
  for (i = 0; ok && i < n; i++) {
    double d = y[i] > yr[i] ? y[i] - yr[i] : yr[i] - y[i], t = yr[i] < 0 ? -yr[i] : yr[i];
    if (!(d <= diff)) diff = d; /* a NaN sticks */
    if (t > top) top = t;
  }
  spx_device_free(g, dx);
  spx_device_free(g, dy);
  free(x); free(y); free(yr);
  return !ok ? -1 : top > 0 ? diff / top : diff;
}

/* The GPU part for one matrix: the auto plan's candidates and choice, then DIA forced and checked.
 * Returns 1 on a failure or a wrong answer. */
static int try_gpu(spx_context *g, const char *name, const spx_csr *a, spx_format dia) {
  spx_plan_options o;
  spx_plan *p = NULL;
  const spx_plan_candidate *c;
  const char *declined = NULL;
  int n, k, have = 0;
  double err;
  spx_plan_options_default(&o);
  o.expected_calls = 1000000; /* a long run of SpMVs: the column profile, which DIA's predictor needs, pays */
  if (spx_plan_create(g, a, &o, &p)) {
    printf("%s: auto plan FAILED: %s\n", name, spx_last_error());
    return 1;
  }
  c = spx_plan_candidates(p, &n);
  printf("%s: %lld rows, %lld nonzeros; the tuner's candidates (auto, %lld SpMVs expected):\n", name,
         (long long)a->nrows, (long long)a->nnz, (long long)o.expected_calls);
  for (k = 0; k < n; k++) {
    int chosen = c[k].format == spx_plan_format(p) && c[k].engine == spx_plan_engine_of(p);
    if (c[k].predicted_us >= 0)
      printf("  %c %-13s %10.2f us/SpMV %10.3f MB %s\n", chosen ? '*' : ' ', cand_name(&c[k]), c[k].predicted_us,
             1e-6 * (double)c[k].bytes, c[k].note);
    else printf("  %c %-13s %s\n", chosen ? '*' : ' ', cand_name(&c[k]), c[k].note);
    if (c[k].format == dia && c[k].engine == SPX_PLAN_ENGINE_SPX) {
      have = 1;
      if (!strncmp(c[k].note, "declined", 8)) declined = c[k].note;
    }
  }
  printf("  chose %s: %s\n", spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr"
                                                                         : spx_format_name(spx_plan_format(p)),
         spx_plan_reason(p));
  if (!have) printf("  (dia was not priced: the tuner took cuSPARSE without a profile, as no format could pay)\n");
  if (declined) { /* DIA refuses this matrix, as the host part said: nothing to force */
    printf("  dia not forced: %s\n", declined);
    spx_plan_destroy(p);
    return 0;
  }
  spx_plan_destroy(p);
  /* DIA forced; the JIT waited for (no stand-in kernel), so its own kernel makes y */
  o.force = "dia";
  o.eager = 1;
  o.no_tiered_jit = 1;
  if (spx_plan_create(g, a, &o, &p)) {
    printf("  forced dia FAILED: %s\n", spx_last_error());
    return 1;
  }
  err = gpu_error(g, p, a);
  printf("  forced dia: %s, %.3f MB on the device; y against the host: largest difference %.2g of max |y| %s\n",
         spx_plan_dmatrix(p) ? spx_dmatrix_describe(spx_plan_dmatrix(p)) : "(no device matrix)",
         1e-6 * (double)spx_plan_bytes(p), err, err >= 0 && err <= 1e-12 ? "ok" : "WRONG");
  spx_plan_destroy(p);
  return !(err >= 0 && err <= 1e-12);
}

int main(int argc, char **argv) {
  spx_format dia;
  spx_csr *a;
  int bad = 0, i;
  if (dia_register(&dia)) {
    fprintf(stderr, "dia_example: %s\n", spx_last_error());
    return 1;
  }
  printf("registered '%s' as format %d of %d: %s\n", spx_format_name(dia), (int)dia, spx_format_count(),
         spx_format_info(dia)->description);
  if (!spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &a)) { bad |= try_dia("poisson3d 20^3, 7-pt", a, dia); spx_csr_destroy(a); }
  if (!spx_gen_poisson3d(12, 12, 12, 27, SPX_DOUBLE, &a)) { bad |= try_dia("poisson3d 12^3, 27-pt", a, dia); spx_csr_destroy(a); }
  if (!spx_gen_elasticity3d(4, 4, 4, SPX_DOUBLE, &a)) { bad |= try_dia("elasticity3d 4^3", a, dia); spx_csr_destroy(a); }
  if (!spx_gen_powerlaw(2000, 2.0, 1, 200, 7, SPX_DOUBLE, &a)) { bad |= try_dia("powerlaw 2000", a, dia); spx_csr_destroy(a); }
  for (i = 1; i < argc; i++) {
    if (spx_mm_read(argv[i], SPX_DOUBLE, &a, NULL)) {
      fprintf(stderr, "dia_example: %s\n", spx_last_error());
      bad = 1;
      continue;
    }
    bad |= try_dia(argv[i], a, dia);
    spx_csr_destroy(a);
  }
  { /* the GPU part, where there is one */
    spx_context_options co = {SPX_BACKEND_CUDA, 0};
    spx_context *g = NULL;
    if (spx_device_count() < 1 || spx_context_create(&co, &g)) {
      printf("no GPU here (%s): the tuner and the kernel part needs a CUDA device; host part only\n",
             spx_device_count() < 1 ? "no CUDA device" : spx_last_error());
      spx_clear_error();
      return bad;
    }
    if (!spx_gen_poisson3d(64, 64, 64, 7, SPX_DOUBLE, &a)) {
      bad |= try_gpu(g, "poisson3d 64^3, 7-pt", a, dia);
      spx_csr_destroy(a);
    }
    for (i = 1; i < argc; i++)
      if (!spx_mm_read(argv[i], SPX_DOUBLE, &a, NULL)) { bad |= try_gpu(g, argv[i], a, dia); spx_csr_destroy(a); }
    spx_context_destroy(g);
  }
  return bad;
}
