/* SPDX-License-Identifier: BSD-3-Clause */
/* spx run (and `spx` alone): the main job on an embedded default problem. Today it generates a 3-D
 * Poisson matrix of about 1M rows, analyses it, and times the host reference SpMV against the
 * analytic answer, runs the GPU kernels when there is a GPU, and ends with a CG solve on the tuned
 * plan (GPU or host). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A*1 for the 7-point Poisson matrix is, per row, the number of grid faces on the boundary. */
static double spx_cli_poisson_rowsum(int64_t i, int64_t n) {
  int64_t x = i % n, y = (i / n) % n, z = i / (n * n);
  return (double)((x == 0) + (x == n - 1) + (y == 0) + (y == n - 1) + (z == 0) + (z == n - 1));
}

/* On a GPU: upload the matrix in a few formats, check each SpMV against the host result yh, and
 * time it (median of 20 after a warm-up) against the measured copy bandwidth. */
static int spx_cli_run_gpu(spx_context *ctx, const spx_csr *a, const double *x, const double *yh, int json) {
  static const spx_format fmts[] = {SPX_FORMAT_ELL, SPX_FORMAT_SELL, SPX_FORMAT_CSR};
  spx_devptr dx = 0, dy = 0;
  spx_timer *t = NULL;
  double gbs = 0, *y = (double *)malloc((size_t)a->nrows * sizeof *y);
  int f, k, bad = 0;
  if (!y || spx_copy_bandwidth(ctx, (size_t)1 << 29, 5, &gbs) || spx_timer_create(ctx, &t) ||
      spx_device_alloc(ctx, (size_t)a->ncols * 8, &dx) || spx_device_alloc(ctx, (size_t)a->nrows * 8, &dy) ||
      spx_device_upload(ctx, dx, x, (size_t)a->ncols * 8)) {
    spx_cli_fail("run (GPU)");
    bad = 1;
    goto done;
  }
  if (!json) printf("\nGPU SpMV          device copy bandwidth %.0f GB/s (read + write), measured now\n", gbs);
  for (f = 0; f < (int)(sizeof fmts / sizeof *fmts); f++) {
    spx_fmt *m = NULL;
    spx_dmatrix *d = NULL;
    double ms[20], best, err = 0, bytes;
    int64_t i;
    if (spx_fmt_from_csr(a, fmts[f], NULL, &m) || spx_dmatrix_create(ctx, m, NULL, &d) ||
        spx_dmatrix_spmv(d, 1.0, dx, 0.0, dy) || spx_device_download(ctx, y, dy, (size_t)a->nrows * 8)) {
      spx_cli_fail("run (GPU)");
      bad = 1;
    } else {
      for (i = 0; i < a->nrows; i++) {
        double e = y[i] - yh[i];
        err = e * e > err ? e * e : err;
      }
      for (k = 0; k < 20; k++) {
        spx_timer_start(t);
        spx_dmatrix_spmv(d, 1.0, dx, 0.0, dy);
        spx_timer_stop(t, &ms[k]);
      }
      best = ms[0];
      for (k = 1; k < 20; k++) best = ms[k] < best ? ms[k] : best;
      bytes = spx_cli_spmv_min_bytes(a, sizeof(double)); /* the model `spx bench` and docs/performance.md use */
      bad |= !(sqrt(err) < 1e-12);
      if (json)
        spx_cli_json_printf(stdout, "%s\"%s\": {\"ms\": %.4f, \"gbs\": %.1f, \"pct_copy\": %.1f, \"max_abs_err\": %.3g}",
                            f ? ", " : ", \"gpu\": {", spx_format_name(fmts[f]), best, bytes / best * 1e-6,
                            100.0 * bytes / best * 1e-6 / gbs, sqrt(err));
      else
        printf("  %-6s %8.4f ms  %7.1f GB/s  %5.1f%% of copy  max |y - y_host| = %.2g  [%s]\n",
               spx_format_name(fmts[f]), best, bytes / best * 1e-6, 100.0 * bytes / best * 1e-6 / gbs, sqrt(err),
               spx_dmatrix_describe(d));
    }
    spx_dmatrix_destroy(d);
    spx_fmt_destroy(m);
  }
  if (json) printf("}");
done:
  spx_timer_destroy(t);
  spx_device_free(ctx, dx);
  spx_device_free(ctx, dy);
  free(y);
  return bad;
}

/* The end of the main job: CG on the same Poisson matrix (b = A*1, so x = 1 solves it) on the
 * tuned plan, on the GPU when there is one. Returns 1 when it does not converge. */
static int spx_cli_run_solve(spx_context *ctx, const spx_csr *a, int json) {
  spx_plan_options po;
  spx_plan *p = NULL;
  spx_solve_options o;
  spx_solve_report r;
  double *b = malloc((size_t)a->nrows * sizeof *b), *x = calloc((size_t)a->nrows, sizeof *x), err = 0;
  int64_t i;
  spx_status s;
  if (!b || !x) { free(b); free(x); fprintf(stderr, "spx run: out of memory\n"); return 1; }
  for (i = 0; i < a->nrows; i++) x[i] = 1.0;
  spx_csr_spmv(a, 1.0, x, 0.0, b);
  memset(x, 0, (size_t)a->nrows * sizeof *x);
  spx_plan_options_default(&po);
  po.expected_calls = 1000;
  spx_solve_options_default(&o);
  o.host_vectors = 1;
  spx_cli_progress("CG solve");
  if ((s = spx_plan_create(ctx, a, &po, &p)) == SPX_OK) s = spx_solve_cg(p, b, x, &o, &r);
  spx_cli_progress_done();
  if (s != SPX_OK && s != SPX_NOT_CONVERGED && s != SPX_BREAKDOWN) {
    spx_plan_destroy(p); free(b); free(x);
    return spx_cli_fail("run (solve)");
  }
  for (i = 0; i < a->nrows; i++) err = fabs(x[i] - 1.0) > err ? fabs(x[i] - 1.0) : err;
  if (json)
    spx_cli_json_printf(stdout, ", \"solve\": {\"plan\": \"%s\", \"max_abs_err\": %.3g, \"report\": ",
                        spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(spx_plan_format(p)), err);
  else
    printf("\nCG solve          A x = A*1 on %s (%s): %lld iterations, ||b - Ax||/||b|| = %.3g recomputed, "
           "max |x - 1| = %.3g\n                  setup %.1f ms (analysis + choice %.1f, build %.1f), iterations %.1f ms "
           "= %.1f us each\n",
           spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(spx_plan_format(p)),
           spx_backend_name(ctx), (long long)r.iterations, r.true_rel_resid, err,
           r.analysis_ms + r.build_ms + r.setup_ms, r.analysis_ms, r.build_ms, r.solve_ms, r.per_iter_us);
  if (json) { spx_cli_json_solve_report(stdout, &r); printf("}"); }
  spx_plan_destroy(p);
  free(b); free(x);
  return s != SPX_OK;
}

/* `spx help run` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_run_help[] = {
    "Generates an N^3 7-point Poisson matrix, analyses it, times the host SpMV and checks it against "
    "the analytic row sums; on a GPU also the SpMV of ELL, SELL and CSR against the copy bandwidth; "
    "then a CG solve on the tuned plan.",
    "--n N\tthe grid edge (default 100)",
    "--json\tprint JSON instead of text (default: text)",
    "$ spx run --n 64 --json",
    NULL};

int spx_cli_run(int argc, char **argv) {
  int64_t n = 100, i;
  int json = 0, k, reps = 10;
  const char *v;
  spx_context *ctx = NULL;
  spx_csr *a = NULL;
  spx_analysis an;
  double *x = NULL, *y = NULL, *gpu_y = NULL, t0, tgen, best = 1e30, err = 0, bytes;
  int gpu_bad = 0;
  for (k = 1; k < argc; k++) {
    if ((v = spx_cli_opt(argc, argv, &k, "--n"))) { if (!spx_cli_int("run", "--n", v, &n)) return 2; }
    else if (!strcmp(argv[k], "--json")) json = 1;
    else return spx_cli_usage("run", "unknown argument '%s'", argv[k]);
  }
  if (spx_context_create(NULL, &ctx)) return spx_cli_fail("run");
  spx_cli_progress("generating a %lld^3 7-point Poisson matrix", (long long)n);
  t0 = spx_cli_now();
  if (spx_gen_poisson3d(n, n, n, 7, SPX_DOUBLE, &a)) goto fail;
  tgen = spx_cli_now() - t0;
  spx_cli_progress("analysing");
  if (spx_analyze(a, &an)) goto fail;
  x = (double *)malloc((size_t)a->ncols * sizeof *x);
  y = (double *)malloc((size_t)a->nrows * sizeof *y);
  if (!x || !y) { fprintf(stderr, "spx run: out of memory\n"); goto fail_quiet; }
  /* Correctness against the analytic row sums, then timing on a non-trivial vector. */
  for (i = 0; i < a->ncols; i++) x[i] = 1.0;
  if (spx_csr_spmv(a, 1.0, x, 0.0, y)) goto fail;
  for (i = 0; i < a->nrows; i++) {
    double d = y[i] - spx_cli_poisson_rowsum(i, n);
    err = d * d > err ? d * d : err;
  }
  for (i = 0; i < a->ncols; i++) x[i] = (double)(i % 17) / 17.0 - 0.5;
  for (k = 0; k < reps; k++) {
    spx_cli_progress("host SpMV %d/%d", k + 1, reps);
    t0 = spx_cli_now();
    if (spx_csr_spmv(a, 1.0, x, 0.0, y)) goto fail;
    t0 = spx_cli_now() - t0;
    best = t0 < best ? t0 : best;
  }
  spx_cli_progress_done();
  {
    /* yh: the host result on the timing vector, the oracle for the GPU kernels. */
    gpu_y = (double *)malloc((size_t)a->nrows * sizeof *gpu_y);
    if (gpu_y) memcpy(gpu_y, y, (size_t)a->nrows * sizeof *gpu_y);
  }
  /* Bytes a CSR SpMV must move at least: values, column indices, row pointers, x once, y once. */
  bytes = (double)a->nnz * (8 + 4) + (double)(a->nrows + 1) * 8 + (double)(a->ncols + a->nrows) * 8;
  if (json) {
    spx_cli_json_printf(stdout, "{\"problem\": \"poisson3d-7pt\", \"n\": %lld, \"backend\": \"%s\", \"generate_s\": %.4f, "
                        "\"host_spmv_s\": %.6f, \"host_spmv_gflops\": %.3f, \"host_spmv_gbs\": %.3f, "
                        "\"check_max_abs_err\": %.3g, \"analysis\": ",
                        (long long)n, spx_backend_name(ctx), tgen, best, 2.0 * (double)a->nnz / best * 1e-9,
                        bytes / best * 1e-9, err > 0 ? sqrt(err) : 0.0);
    spx_analysis_print(&an, NULL, stdout, 1);
    if (gpu_y && !strcmp(spx_backend_name(ctx), "cuda")) gpu_bad = spx_cli_run_gpu(ctx, a, x, gpu_y, 1);
    gpu_bad |= spx_cli_run_solve(ctx, a, 1);
    printf("}\n");
  } else {
    printf("spx %s main job: 3-D Poisson, 7-point, %lld^3 grid\n\n", SPX_VERSION_STRING, (long long)n);
    spx_context_print(ctx, stdout, 0);
    printf("\ngenerated         %lld rows, %lld nonzeros in %.3f s\n", (long long)a->nrows,
           (long long)a->nnz, tgen);
    spx_analysis_print(&an, "poisson3d", stdout, 0);
    printf("\nhost SpMV (CSR)   %.3f ms best of %d: %.2f GFLOP/s, %.2f GB/s effective\n", best * 1e3, reps,
           2.0 * (double)a->nnz / best * 1e-9, bytes / best * 1e-9);
    printf("check A*1         max |error| vs analytic row sums = %.3g (%s)\n", err > 0 ? sqrt(err) : 0.0,
           err == 0 ? "exact" : "MISMATCH");
    if (gpu_y && !strcmp(spx_backend_name(ctx), "cuda")) gpu_bad = spx_cli_run_gpu(ctx, a, x, gpu_y, 0);
    else printf("\nGPU SpMV          skipped: %s backend\n", spx_backend_name(ctx));
    gpu_bad |= spx_cli_run_solve(ctx, a, 0);
    /* the verdict, last: what was checked and whether it held */
    printf("\n%s: host SpMV against the analytic row sums, %sa CG solve against x = 1\n",
           err == 0 && !gpu_bad ? "PASSED" : "FAILED",
           gpu_y && !strcmp(spx_backend_name(ctx), "cuda") ? "GPU kernels against the host, " : "");
  }
  free(x); free(y); free(gpu_y); spx_csr_destroy(a); spx_context_destroy(ctx);
  return err == 0 && !gpu_bad ? 0 : 1;
fail:
  spx_cli_progress_done();
  spx_cli_fail("run");
fail_quiet:
  free(x); free(y); free(gpu_y); spx_csr_destroy(a); spx_context_destroy(ctx);
  return 1;
}
