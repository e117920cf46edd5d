/* SPDX-License-Identifier: BSD-3-Clause */
/* spx bench [MATRIX ...]: every GPU format against the best cuSPARSE algorithm, per matrix.
 *
 * MATRIX is a Matrix Market file or a generator: poisson7:N, poisson27:N (N^3 grid),
 * elasticity:N (N^3 hexahedra, 3 unknowns per node), powerlaw:N, rep:FILE:NNZ (block-diagonal
 * copies of a file until it has at least NNZ nonzeros). --set large | small picks the benchmark
 * sets of issue 4. Times are medians over samples of back-to-back SpMVs timed with events after a
 * warm-up; GB/s use one minimal-bytes model for all formats (spx_cli_spmv_min_bytes: CSR's arrays once,
 * x once, y once); the device's copy bandwidth is measured in the same run. */
#define _POSIX_C_SOURCE 200809L /* strtok_r: declared in every toolchain, not only where -fopenmp implies it */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct bench_row {
  char matrix[96], format[24], kernel[160];
  int64_t nrows, ncols, nnz, format_bytes;
  double B, convert_ms, jit_ms, us, gflops, gbs, pct_copy, speedup, relerr;
  int compiled;
  spx_dtype dtype;
} bench_row;

typedef struct bench_state {
  spx_context *ctx;
  double copy_gbs, launch_us; /* measured in this run */
  int reps, plain_loads, exact_shape;
  spx_dtype dtypes[2];
  int ndtypes;
  int formats[SPX_FORMAT_MAX], nformats;
  bench_row *rows;
  int nrows, cap;
  const char *json, *csv, *svg;
} bench_state;

typedef spx_status (*bench_fn)(void *obj, spx_devptr x, spx_devptr y);
static spx_status bench_dm(void *o, spx_devptr x, spx_devptr y) { return spx_dmatrix_spmv((spx_dmatrix *)o, 1.0, x, 0.0, y); }
static spx_status bench_cs(void *o, spx_devptr x, spx_devptr y) { return spx_cusparse_spmv((spx_cusparse_plan *)o, 1.0, x, 0.0, y); }

/* Median microseconds per call: samples of `inner` back-to-back calls, inner sized to ~1 ms. */
static spx_status bench_time(bench_state *st, bench_fn fn, void *obj, spx_devptr x, spx_devptr y, double *us) {
  spx_timer *t;
  double ms, samples[64];
  int inner = 1, k, i, ns = st->reps < 64 ? st->reps : 64;
  spx_status s;
  if ((s = spx_timer_create(st->ctx, &t))) return s;
  for (k = 0; k < 3; k++) if ((s = fn(obj, x, y))) goto done;      /* warm-up */
  if ((s = spx_timer_start(t)) || (s = fn(obj, x, y)) || (s = spx_timer_stop(t, &ms))) goto done;
  inner = ms > 0 ? (int)(1.0 / ms) : 1000;
  inner = inner < 1 ? 1 : inner > 1000 ? 1000 : inner;
  for (k = 0; k < ns; k++) {
    if ((s = spx_timer_start(t))) goto done;
    for (i = 0; i < inner; i++) if ((s = fn(obj, x, y))) goto done;
    if ((s = spx_timer_stop(t, &ms))) goto done;
    samples[k] = 1e3 * ms / inner;
  }
  spx_cli_sort(samples, ns);
  *us = samples[ns / 2];
done:
  spx_timer_destroy(t);
  return s;
}

/* The launch floor: the time per SpMV of a 1x1 ELL matrix through the same spx path. */
static spx_status bench_launch_floor(bench_state *st) {
  const int32_t z = 0;
  const double one = 1;
  spx_csr *a = NULL;
  spx_fmt *m = NULL;
  spx_dmatrix *d = NULL;
  spx_devptr x = 0, y = 0;
  spx_status s;
  if (!(s = spx_csr_from_coo(1, 1, 1, &z, &z, &one, SPX_DOUBLE, &a)) && !(s = spx_fmt_from_csr(a, SPX_FORMAT_ELL, NULL, &m)) &&
      !(s = spx_dmatrix_create(st->ctx, m, NULL, &d)) && !(s = spx_device_alloc(st->ctx, 8, &x)) &&
      !(s = spx_device_alloc(st->ctx, 8, &y)) && !(s = spx_device_upload(st->ctx, x, &one, 8)))
    s = bench_time(st, bench_dm, d, x, y, &st->launch_us);
  spx_device_free(st->ctx, x); spx_device_free(st->ctx, y);
  spx_dmatrix_destroy(d); spx_fmt_destroy(m); spx_csr_destroy(a);
  return s;
}

static void bench_push(bench_state *st, const bench_row *r) {
  if (st->nrows == st->cap) {
    st->cap = st->cap ? 2 * st->cap : 64;
    st->rows = (bench_row *)realloc(st->rows, (size_t)st->cap * sizeof *st->rows);
  }
  st->rows[st->nrows++] = *r;
  printf("%-24s %-7s %-10s %9.2f %8.1f %7.1f %6.1f%% %7.2fx %9.1f %9.1f%s  %s\n", r->matrix,
         spx_dtype_name(r->dtype), r->format, r->us, r->gflops, r->gbs, r->pct_copy, r->speedup,
         r->convert_ms, r->jit_ms, r->compiled ? "c" : " ", r->kernel);
  fflush(stdout);
}

/* One matrix in one dtype: cuSPARSE best first, then every spx format. */
static spx_status bench_matrix(bench_state *st, const spx_csr *a64, const char *name, spx_dtype dt) {
  spx_csr *a = NULL;
  spx_cusparse_plan *cs = NULL;
  spx_devptr x = 0, y = 0;
  size_t vs = SPX_DTYPE_SIZE(dt);
  double cs_us = 0, *hx = NULL, *yref = NULL, *yg = NULL, B;
  void *buf = NULL;
  spx_analysis an;
  spx_status s;
  int64_t i;
  int f;
  bench_row r;
  if ((s = spx_csr_copy(a64, dt, &a)) || (s = spx_analyze(a, &an))) goto done;
  B = an.B;
  hx = (double *)malloc((size_t)(a->ncols + 1) * sizeof *hx);
  yref = (double *)malloc((size_t)(a->nrows + 1) * sizeof *yref);
  yg = (double *)malloc((size_t)(a->nrows + 1) * sizeof *yg);
  buf = malloc((size_t)((a->ncols > a->nrows ? a->ncols : a->nrows) + 1) * vs);
  if (!hx || !yref || !yg || !buf) { s = SPX_OUT_OF_MEMORY; goto done; }
  for (i = 0; i < a->ncols; i++) {
    hx[i] = 0.5 + (double)((i * 7919) % 1000) / 1000.0;
    if (dt == SPX_FLOAT) ((float *)buf)[i] = (float)hx[i];
    else ((double *)buf)[i] = hx[i];
  }
  {
    spx_csr *ad;
    double *xd = (double *)malloc((size_t)(a->ncols + 1) * sizeof *xd);
    if ((s = spx_csr_copy(a, SPX_DOUBLE, &ad))) { free(xd); goto done; }
    for (i = 0; i < a->ncols; i++) xd[i] = dt == SPX_FLOAT ? (double)((float *)buf)[i] : hx[i];
    s = spx_csr_spmv(ad, 1.0, xd, 0.0, yref);
    spx_csr_destroy(ad); free(xd);
    if (s) goto done;
  }
  if ((s = spx_device_alloc(st->ctx, (size_t)(a->ncols + 1) * vs, &x)) ||
      (s = spx_device_alloc(st->ctx, (size_t)(a->nrows + 1) * vs, &y)) ||
      (s = spx_device_upload(st->ctx, x, buf, (size_t)a->ncols * vs)))
    goto done;
  memset(&r, 0, sizeof r);
  snprintf(r.matrix, sizeof r.matrix, "%s", name);
  r.nrows = a->nrows; r.ncols = a->ncols; r.nnz = a->nnz; r.B = B; r.dtype = dt;
  /* Best cuSPARSE: its own trial picks the algorithm; timed again here the same way as spx. */
  if ((s = spx_cusparse_plan_create(st->ctx, a, SPX_CUSPARSE_BEST, NULL, &cs))) goto done;
  if ((s = bench_time(st, bench_cs, cs, x, y, &cs_us))) goto done;
  snprintf(r.format, sizeof r.format, "cusparse");
  snprintf(r.kernel, sizeof r.kernel, "best: %s", spx_cusparse_alg_name(spx_cusparse_plan_alg(cs)));
  r.us = cs_us;
  r.gflops = 2.0 * (double)a->nnz / (cs_us * 1e3);
  r.gbs = spx_cli_spmv_min_bytes(a, vs) / (cs_us * 1e3);
  r.pct_copy = 100.0 * r.gbs / st->copy_gbs;
  r.speedup = 1.0;
  r.format_bytes = spx_cusparse_plan_device_bytes(cs);
  bench_push(st, &r);
  for (f = 0; f < st->nformats; f++) {
    spx_fmt *m = NULL;
    int variant, nvariants = st->formats[f] == SPX_FORMAT_CSR ? 8 : 1;
    s = spx_fmt_from_csr(a, (spx_format)st->formats[f], NULL, &m);
    if (s == SPX_UNSUPPORTED) { s = SPX_OK; continue; }
    if (s) goto done;
    /* CSR also runs with 2..32 threads per row forced and with the merge-path kernel forced:
     * variants of one format, the choice the tuner makes per matrix. */
    for (variant = 0; variant < nvariants && !s; variant++) {
      spx_dmatrix_options o;
      spx_dmatrix *d = NULL;
      double us;
      memset(&o, 0, sizeof o);
      o.threads_per_row = variant && variant != 4 && variant != 7 ? 1 << (variant < 4 ? variant : variant - 1) : 0;
      o.load_balance = variant == 4;
      o.stream = variant == 7;
      o.plain_loads = st->plain_loads;
      o.exact_shape = st->exact_shape;
      s = spx_dmatrix_create(st->ctx, m, &o, &d);
      if (s == SPX_DEVICE_OUT_OF_MEMORY) { s = SPX_OK; break; }
      if (s) break;
      memset(r.format, 0, sizeof r.format);
      if (variant == 4) snprintf(r.format, sizeof r.format, "%s/lb", spx_format_name(m->format));
      else if (variant == 7) snprintf(r.format, sizeof r.format, "%s/stream", spx_format_name(m->format));
      else if (variant) snprintf(r.format, sizeof r.format, "%s/%d", spx_format_name(m->format), o.threads_per_row);
      else snprintf(r.format, sizeof r.format, "%s", spx_format_name(m->format));
      snprintf(r.kernel, sizeof r.kernel, "%s", spx_dmatrix_describe(d));
      r.convert_ms = 1e3 * m->seconds;
      r.jit_ms = spx_dmatrix_jit_ms(d, &r.compiled);
      s = bench_time(st, bench_dm, d, x, y, &us);
      if (!s) s = spx_device_download(st->ctx, buf, y, (size_t)a->nrows * vs);
      if (!s) {
        for (i = 0; i < a->nrows; i++) yg[i] = dt == SPX_FLOAT ? (double)((float *)buf)[i] : ((double *)buf)[i];
        r.relerr = spx_cli_relerr(yg, yref, a->nrows, SPX_DOUBLE); /* NaN-aware: a NaN or Inf in A agrees */
        r.us = us;
        r.gflops = 2.0 * (double)a->nnz / (us * 1e3);
        r.gbs = spx_cli_spmv_min_bytes(a, vs) / (us * 1e3);
        r.format_bytes = spx_dmatrix_bytes(d);
        r.pct_copy = 100.0 * r.gbs / st->copy_gbs;
        r.speedup = cs_us / us;
        bench_push(st, &r);
      }
      spx_dmatrix_destroy(d);
    }
    spx_fmt_destroy(m);
    if (s) goto done;
  }
done:
  spx_cusparse_plan_destroy(cs);
  spx_device_free(st->ctx, x);
  spx_device_free(st->ctx, y);
  spx_csr_destroy(a);
  free(hx); free(yref); free(yg); free(buf);
  return s;
}

/* Per (matrix, dtype): the best spx format against best cuSPARSE; then the geometric mean, the
 * worst case, and for small matrices the time against the launch floor. Printed and kept for JSON. */
typedef struct bench_summary {
  int n, below95, within_floor, small;
  double geomean, worst;
  char worst_name[128];
} bench_summary;

static void bench_summarize(const bench_state *st, bench_summary *sum, FILE *out) {
  int i, j;
  double lg = 0;
  memset(sum, 0, sizeof *sum);
  sum->worst = 1e30;
  if (out) fprintf(out, "\nbest spx format per matrix (vs best cuSPARSE):\n");
  for (i = 0; i < st->nrows; i++) {
    const bench_row *c = &st->rows[i], *best = NULL;
    if (strcmp(c->format, "cusparse")) continue;
    for (j = i + 1; j < st->nrows && strcmp(st->rows[j].format, "cusparse"); j++)
      if (st->rows[j].relerr < (st->rows[j].dtype == SPX_FLOAT ? 1e-4 : 1e-10) && (!best || st->rows[j].us < best->us))
        best = &st->rows[j];
    if (!best) continue;
    sum->n++;
    lg += log(best->speedup);
    if (best->speedup < 0.95) sum->below95++;
    if (best->speedup < sum->worst) {
      sum->worst = best->speedup;
      snprintf(sum->worst_name, sizeof sum->worst_name, "%s (%s)", c->matrix, spx_dtype_name(c->dtype));
    }
    if (c->nnz < 100000 && st->launch_us > 0) {
      sum->small++;
      sum->within_floor += best->us <= 1.5 * st->launch_us;
    }
    if (out)
      fprintf(out, "  %-24s %-6s %-10s %8.2f us  %5.2fx%s\n", c->matrix, spx_dtype_name(c->dtype), best->format,
              best->us, best->speedup, c->nnz < 100000 && st->launch_us > 0 ? (best->us <= 1.5 * st->launch_us ? "  (<= 1.5x launch floor)" : "  (> 1.5x launch floor)") : "");
  }
  sum->geomean = sum->n ? exp(lg / sum->n) : 0;
  if (out && sum->n) {
    fprintf(out, "geometric-mean speedup %.3fx over %d matrix/dtype pairs; worst %.3fx (%s); %d below 0.95x\n",
            sum->geomean, sum->n, sum->worst, sum->worst_name, sum->below95);
    if (sum->small)
      fprintf(out, "small matrices (< 100k nonzeros): %d of %d within 1.5x of the launch floor (%.2f us)\n",
              sum->within_floor, sum->small, st->launch_us);
  }
}

/* The writers of --json, --csv and --svg (bench_write makes and commits each file). */
static void bench_json(FILE *f, const bench_state *st, const char *command) {
  int i;
  spx_device_info di;
  bench_summary sum;
  memset(&di, 0, sizeof di);
  spx_context_device_info(st->ctx, &di);
  bench_summarize(st, &sum, NULL);
  fprintf(f, "{\"command\": ");
  spx_cli_json_str(f, command);
  fprintf(f, ", \"device\": ");
  spx_cli_json_str(f, di.name);
  spx_cli_json_printf(f, ", \"copy_gbs\": %.1f, \"launch_floor_us\": %.3f,\n"
                         " \"bytes_model\": \"nnz*(sizeof(T)+4) + 4*(nrows+1) + sizeof(T)*(ncols+nrows)\",\n"
                         " \"summary\": {\"pairs\": %d, \"geomean_speedup\": %.4f, \"worst_speedup\": %.4f, \"worst\": ",
                      st->copy_gbs, st->launch_us, sum.n, sum.geomean, sum.worst);
  spx_cli_json_str(f, sum.worst_name);
  fprintf(f, ", \"below_0_95\": %d, \"small\": %d, \"small_within_1_5x_floor\": %d},\n \"rows\": [\n", sum.below95,
          sum.small, sum.within_floor);
  for (i = 0; i < st->nrows; i++) {
    const bench_row *r = &st->rows[i];
    fprintf(f, "  {\"matrix\": ");
    spx_cli_json_str(f, r->matrix);
    spx_cli_json_printf(f, ", \"rows\": %lld, \"nnz\": %lld, \"B\": %.3f, \"dtype\": \"%s\", \"format\": ",
                        (long long)r->nrows, (long long)r->nnz, r->B, spx_dtype_name(r->dtype));
    spx_cli_json_str(f, r->format);
    fprintf(f, ", \"format_bytes\": %lld, \"kernel\": ", (long long)r->format_bytes);
    spx_cli_json_str(f, r->kernel);
    spx_cli_json_printf(f, ", \"us\": %.3f, \"gflops\": %.2f, \"gbs\": %.1f, \"pct_copy\": %.1f, "
                           "\"speedup_vs_best_cusparse\": %.3f, \"convert_ms\": %.2f, \"jit_ms\": %.2f, \"compiled\": %d, "
                           "\"relerr\": %.3g}%s\n",
                        r->us, r->gflops, r->gbs, r->pct_copy, r->speedup, r->convert_ms, r->jit_ms, r->compiled,
                        r->relerr, i + 1 < st->nrows ? "," : "");
  }
  fprintf(f, "]}\n");
}

static void bench_csv(FILE *f, const bench_state *st, const char *command) {
  int i;
  (void)command;
  fprintf(f, "matrix,rows,nnz,B,dtype,format,us,gflops,gbs,pct_copy,speedup_vs_best_cusparse,convert_ms,jit_ms,compiled,relerr,kernel\n");
  for (i = 0; i < st->nrows; i++) {
    const bench_row *r = &st->rows[i];
    fprintf(f, "%s,%lld,%lld,%.3f,%s,%s,%.3f,%.2f,%.1f,%.1f,%.3f,%.2f,%.2f,%d,%.3g,\"%s\"\n", r->matrix,
            (long long)r->nrows, (long long)r->nnz, r->B, spx_dtype_name(r->dtype), r->format, r->us,
            r->gflops, r->gbs, r->pct_copy, r->speedup, r->convert_ms, r->jit_ms, r->compiled, r->relerr, r->kernel);
  }
}

static void bench_svg(FILE *f, const bench_state *st, const char *command) {
  /* Speedup over best cuSPARSE per matrix (groups) and format (bars), log2 axis. */
  const double W = 1100, H = 420, L = 60, T = 30, PH = 300;
  int i, nm = 0, g;
  char seen[64][96];
  static const char *const colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                       "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"};
  (void)command;
  for (i = 0; i < st->nrows && nm < 64; i++) {
    int k, dup = 0;
    for (k = 0; k < nm; k++) dup |= !strcmp(seen[k], st->rows[i].matrix);
    if (!dup) snprintf(seen[nm++], sizeof seen[0], "%s", st->rows[i].matrix);
  }
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' font-family='sans-serif' font-size='11'>\n", W, H);
  fprintf(f, "<text x='%.0f' y='18' font-size='14'>spx SpMV speedup over best cuSPARSE (log2 scale; %s)</text>\n", L,
          st->ndtypes > 1 ? "both dtypes" : spx_dtype_name(st->dtypes[0]));
  for (g = -2; g <= 2; g++) {
    double yy = T + PH / 2 - g * PH / 4;
    fprintf(f, "<line x1='%.0f' x2='%.0f' y1='%.1f' y2='%.1f' stroke='%s'/><text x='5' y='%.1f'>%gx</text>\n", L,
            W - 10, yy, yy, g == 0 ? "#000" : "#ddd", yy + 4, pow(2.0, g));
  }
  for (g = 0; g < nm; g++) {
    double gx = L + g * (W - L - 10) / nm, bw = (W - L - 10) / nm / (st->nformats + 1);
    int b = 0;
    for (i = 0; i < st->nrows; i++) {
      const bench_row *r = &st->rows[i];
      double v, yy;
      if (strcmp(r->matrix, seen[g]) || !strcmp(r->format, "cusparse") || r->dtype != st->dtypes[0]) continue;
      v = log2(r->speedup > 1e-3 ? r->speedup : 1e-3);
      v = v > 2 ? 2 : v < -2 ? -2 : v;
      yy = T + PH / 2 - v * PH / 4;
      fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'><title>%s %s %.2fx</title></rect>\n",
              gx + b * bw, v >= 0 ? yy : T + PH / 2, bw * 0.9, fabs(v) * PH / 4, colors[b % 12], r->matrix,
              r->format, r->speedup);
      b++;
    }
    fprintf(f, "<text transform='translate(%.1f,%.0f) rotate(30)'>%s</text>\n", gx, T + PH + 12, seen[g]);
  }
  for (i = 0; i < st->nformats; i++)
    fprintf(f, "<rect x='%.0f' y='%.0f' width='10' height='10' fill='%s'/><text x='%.0f' y='%.0f'>%s</text>\n",
            L + i * 85.0, H - 14, colors[i % 12], L + i * 85.0 + 13, H - 5, spx_format_name((spx_format)st->formats[i]));
  fprintf(f, "</svg>\n");
}

/* Every file asked for, each written whole or not at all; 1 if any could not be written. */
static int bench_write(const bench_state *st, const char *command) {
  const char *const paths[3] = {st->json, st->csv, st->svg};
  void (*const writers[3])(FILE *, const bench_state *, const char *) = {bench_json, bench_csv, bench_svg};
  int k, rc = 0;
  for (k = 0; k < 3; k++) {
    spx_file *f;
    if (!paths[k]) continue;
    if (spx_file_create(paths[k], 0, &f)) { rc = spx_cli_fail("bench"); continue; }
    writers[k](spx_file_stream(f), st, command);
    rc |= spx_cli_out_commit("bench", f);
  }
  return rc;
}

/* `spx help bench` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_bench_help[] = {
    "Per matrix and value type: every format with a GPU kernel against the best cuSPARSE algorithm. "
    "Times are medians of back-to-back SpMVs after a warm-up; GB/s use one minimal-bytes model for "
    "all formats (CSR's arrays, x and y once each), next to the copy bandwidth measured in the same "
    "run. MATRIX is a Matrix Market file or a generator: poisson7:N, poisson27:N (N^3 grid; or NXxNYxNZ), "
    "elasticity:N, powerlaw:N (rows), rep:FILE:NNZ (copies of FILE up to NNZ nonzeros). Needs a GPU.",
    "--set large|small\tadd a benchmark set: large (generators and replicated shared matrices) or "
    "small (the shared matrices as they are, with the launch floor); default: only the MATRIX "
    "arguments",
    "--dtype double|float|both\tvalue type (default double)",
    "--formats a,b\tthe formats to run, by name (default: every format with a GPU kernel)",
    "--reps N\ttimed samples per measurement, held to 3..64 (default 15)",
    "--plain-loads\tA/B check: the kernels read the matrix with plain loads instead of "
    "cache-streaming ones (default off)",
    "--exact-shape\tA/B check: kernels specialized for the exact shape constants (ELL's K, SELL's "
    "widest slice ...) instead of their buckets (default off)",
    "--json F\twrite the rows as JSON to file F (default: none)",
    "--csv F\twrite the rows as CSV to file F (default: none)",
    "--svg F\twrite a plot to file F (default: none)",
    "$ spx bench poisson7:128 elasticity:48 --dtype both --csv bench.csv",
    NULL};

int spx_cli_bench(int argc, char **argv) {
  bench_state st;
  const char *v, *specs[256];
  int nspecs = 0, i, k, small = 0;
  char command[1024] = "spx bench";
  spx_status s = SPX_OK;
  memset(&st, 0, sizeof st);
  st.reps = 15;
  st.dtypes[0] = SPX_DOUBLE; st.ndtypes = 1;
  for (i = 1; i < argc; i++) {
    if (strlen(command) + strlen(argv[i]) + 2 < sizeof command) { strcat(command, " "); strcat(command, argv[i]); }
  }
  for (i = 1; i < argc; i++) {
    if ((v = spx_cli_opt(argc, argv, &i, "--json"))) st.json = v;
    else if ((v = spx_cli_opt(argc, argv, &i, "--csv"))) st.csv = v;
    else if ((v = spx_cli_opt(argc, argv, &i, "--svg"))) st.svg = v;
    else if (!strcmp(argv[i], "--plain-loads")) st.plain_loads = 1; /* A/B of the cache-streaming loads */
    else if (!strcmp(argv[i], "--exact-shape")) st.exact_shape = 1; /* A/B of the shape buckets */
    else if ((v = spx_cli_opt(argc, argv, &i, "--reps"))) {
      int64_t r;
      if (!spx_cli_int("bench", "--reps", v, &r)) return 2;
      st.reps = r < 3 ? 3 : r > 64 ? 64 : (int)r; /* bench_time keeps up to 64 samples */
    }
    else if ((v = spx_cli_opt(argc, argv, &i, "--dtype"))) {
      if (!strcmp(v, "float")) st.dtypes[0] = SPX_FLOAT;
      else if (!strcmp(v, "both")) { st.dtypes[1] = SPX_FLOAT; st.ndtypes = 2; }
      else if (strcmp(v, "double")) return spx_cli_usage("bench", "--dtype double|float|both");
    } else if ((v = spx_cli_opt(argc, argv, &i, "--formats"))) {
      char buf[512], *tok, *save = NULL;
      snprintf(buf, sizeof buf, "%s", v);
      for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        spx_format f;
        if (spx_format_from_name(tok, &f)) return spx_cli_fail("bench");
        st.formats[st.nformats++] = (int)f;
      }
    } else if ((v = spx_cli_opt(argc, argv, &i, "--set"))) {
      if (!strcmp(v, "large")) for (k = 0; spx_cli_large_set[k]; k++) specs[nspecs++] = spx_cli_large_set[k];
      else if (!strcmp(v, "small")) small = 1;
      else return spx_cli_usage("bench", "--set large|small");
    } else if (argv[i][0] == '-') return spx_cli_usage("bench", "unknown option '%s'", argv[i]);
    else if (nspecs < 255) specs[nspecs++] = argv[i];
  }
  if (!st.nformats)
    for (k = 0; k < spx_format_count(); k++)
      if (spx_format_has_kernel((spx_format)k)) st.formats[st.nformats++] = k;
  /* a file that cannot be written fails now, not after the measurements */
  if ((st.json && spx_cli_out_check("bench", st.json)) || (st.csv && spx_cli_out_check("bench", st.csv)) ||
      (st.svg && spx_cli_out_check("bench", st.svg)))
    return 1;
  {
    spx_context_options o = {SPX_BACKEND_CUDA, 0};
    if (spx_context_create(&o, &st.ctx)) return spx_cli_fail("bench (needs a GPU)");
  }
  if ((s = spx_copy_bandwidth(st.ctx, (size_t)1 << 30, 10, &st.copy_gbs))) goto fail;
  {
    spx_device_info di;
    spx_context_device_info(st.ctx, &di);
    printf("device %s, %d SMs; measured copy bandwidth %.0f GB/s (read + write)\n\n", di.name, di.sm_count, st.copy_gbs);
  }
  printf("%-24s %-7s %-10s %9s %8s %7s %7s %8s %9s %9s  %s\n", "matrix", "dtype", "format", "us", "GFLOP/s",
         "GB/s", "%copy", "vs_cusp", "conv_ms", "jit_ms", "kernel");
  if (small) { /* the shared matrices as they are: latency-bound sizes */
    const char *dir = spx_cli_shared_dir();
    char path[1024], line[2048], nm[256], field[64];
    FILE *mf;
    static char small_specs[200][1100];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    if (!(mf = fopen(path, "r"))) { fprintf(stderr, "spx bench: cannot read %s\n", path); goto fail_quiet; }
    while (fgets(line, sizeof line, mf) && nspecs < 250)
      if (sscanf(line, "%255[^\t]\t%*s\t%*s\t%*s\t%63[^\t]", nm, field) == 2 && strcmp(nm, "name") &&
          strcmp(field, "complex")) {
        snprintf(small_specs[nspecs % 200], sizeof small_specs[0], "%s/%s.mtx.gz", dir, nm);
        specs[nspecs] = small_specs[nspecs % 200];
        nspecs++;
      }
    fclose(mf);
    if ((s = bench_launch_floor(&st))) goto fail;
    printf("launch floor (1x1 matrix, spx path): %.2f us per SpMV at the start (measured again at the end;\n"
           "the lower is used)\n\n", st.launch_us);
  }
  for (k = 0; k < nspecs; k++) {
    spx_csr *a;
    char name[96];
    int t;
    spx_cli_progress("loading %s", specs[k]);
    s = spx_cli_load_matrix(specs[k], &a, name, sizeof name);
    spx_cli_progress_done();
    if (s) { spx_cli_fail(specs[k]); continue; }
    for (t = 0; t < st.ndtypes && !s; t++) s = bench_matrix(&st, a, name, st.dtypes[t]);
    spx_csr_destroy(a);
    if (s) goto fail;
  }
  if (small) {
    /* Again after the matrices, with the clocks up: the floor is the least of the two. */
    double first = st.launch_us;
    if ((s = bench_launch_floor(&st))) goto fail;
    printf("\nlaunch floor again at the end: %.2f us (start: %.2f us)\n", st.launch_us, first);
    if (first < st.launch_us) st.launch_us = first;
  }
  {
    bench_summary sum;
    bench_summarize(&st, &sum, stdout);
  }
  k = bench_write(&st, command);
  free(st.rows);
  spx_context_destroy(st.ctx);
  return k;
fail:
  spx_cli_fail("bench");
fail_quiet:
  free(st.rows);
  spx_context_destroy(st.ctx);
  return 1;
}
