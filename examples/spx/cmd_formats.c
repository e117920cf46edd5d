/* SPDX-License-Identifier: BSD-3-Clause */
/* spx formats [FILE]: every registered format on one matrix: exact bytes, bytes relative to CSR,
 * padding, conversion time, host SpMV time and its check against CSR; then the RBP paper's memory
 * formulas (1)-(4) next to our exact bytes. Without FILE: the embedded default, a generated 3-D
 * elasticity matrix (3 unknowns per node, the FEM case RBP is built for). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#include <spx/formats.h>

typedef struct spx_cli_fmt_row {
  const char *name, *error;
  int64_t bytes, slots;
  double padding, convert_s, spmv_s, relerr;
  char params[160];
} spx_cli_fmt_row;

/* Converts, checks and times one format; fills row (row->error on failure). */
static void spx_cli_fmt_measure(const spx_csr *a, spx_format f, const spx_format_params *p, const void *x,
                                const void *yref, void *y, spx_cli_fmt_row *row) {
  spx_fmt *m = NULL;
  const spx_format_vtable *vt = spx_format_info(f);
  int j, k;
  size_t n = 0;
  row->name = vt->name;
  row->error = NULL;
  row->params[0] = 0;
  if (spx_fmt_from_csr(a, f, p, &m) || spx_fmt_validate(m)) {
    row->error = spx_last_error();
    spx_fmt_destroy(m);
    return;
  }
  for (j = 0; j < vt->layout->nparams; j++) { /* the parameters as resolved into scalars */
    int64_t v = spx_fmt_scalar(m, vt->layout->params[j].name);
    n += (size_t)snprintf(row->params + n, sizeof row->params - n, "%s%s=%lld", j ? "," : "",
                          vt->layout->params[j].name, (long long)(v >= 0 ? v : m->params[j]));
    if (n >= sizeof row->params) break;
  }
  row->bytes = spx_fmt_bytes(m);
  row->slots = spx_fmt_slots(m);
  row->padding = spx_fmt_padding(m);
  row->convert_s = m->seconds;
  row->spmv_s = 1e30;
  for (k = 0; k < 3; k++) {
    double t0 = spx_cli_now();
    if (spx_fmt_spmv(m, 1.0, x, 0.0, y)) { row->error = spx_last_error(); break; }
    t0 = spx_cli_now() - t0;
    row->spmv_s = t0 < row->spmv_s ? t0 : row->spmv_s;
  }
  row->relerr = spx_cli_relerr(y, yref, a->nrows, a->dtype);
  spx_fmt_destroy(m);
}

/* `spx help formats` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_formats_help[] = {
    "Converts one matrix to every registered format and prints, per format: exact bytes, bytes "
    "relative to CSR, padding, conversion time, host SpMV time and its check against CSR; then the "
    "RBP paper's memory formulas next to the exact bytes. FILE is a Matrix Market file (default: a "
    "generated elasticity3d 16^3 matrix). Exits 1 when a format fails or its SpMV disagrees with CSR.",
    "--json\tprint JSON instead of the table (default: the table)",
    "--float\tvalues in float (default: double)",
    "--param k=v,...\tformat parameters, such as sell_c=8,sell_sigma=64 (',' or spaces between; "
    "'auto' allowed); default: every parameter auto",
    "$ spx formats --param sell_c=8,sell_sigma=64",
    NULL};

int spx_cli_formats(int argc, char **argv) {
  const char *path = NULL, *plist = NULL, *v;
  int json = 0, i, nf, bad = 0;
  spx_dtype dt = SPX_DOUBLE;
  spx_csr *a = NULL;
  spx_format_params p;
  spx_rbp_paper q;
  spx_cli_fmt_row *rows = NULL;
  void *x = NULL, *y = NULL, *yref = NULL;
  int64_t csr_bytes = 0, k;
  double tol;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--float")) dt = SPX_FLOAT;
    else if ((v = spx_cli_opt(argc, argv, &i, "--param"))) plist = v;
    else if (argv[i][0] == '-') return spx_cli_usage("formats", "unknown option '%s'", argv[i]);
    else if (!path) path = argv[i];
    else return spx_cli_usage("formats", "one FILE only");
  }
  spx_format_params_default(&p);
  if (plist && spx_format_params_parse(&p, plist)) return spx_cli_usage("formats", "%s", spx_last_error());
  if (path) {
    spx_cli_progress("reading %s", path);
    if (spx_mm_read(path, dt, &a, NULL)) { spx_cli_progress_done(); return spx_cli_fail("formats"); }
  } else {
    spx_cli_progress("generating the default matrix (elasticity3d 16^3)");
    if (spx_gen_elasticity3d(16, 16, 16, dt, &a)) { spx_cli_progress_done(); return spx_cli_fail("formats"); }
  }
  nf = spx_format_count();
  rows = (spx_cli_fmt_row *)calloc((size_t)nf, sizeof *rows);
  x = malloc((size_t)(a->ncols + 1) * SPX_DTYPE_SIZE(dt));
  y = malloc((size_t)(a->nrows + 1) * SPX_DTYPE_SIZE(dt));
  yref = malloc((size_t)(a->nrows + 1) * SPX_DTYPE_SIZE(dt));
  if (!rows || !x || !y || !yref) { fprintf(stderr, "spx formats: out of memory\n"); bad = 1; goto done; }
  for (k = 0; k < a->ncols; k++) { /* a fixed, non-trivial vector */
    double xv = (double)(k % 17) / 17.0 - 0.5;
    if (dt == SPX_DOUBLE) ((double *)x)[k] = xv;
    else ((float *)x)[k] = (float)xv;
  }
  if (spx_csr_spmv(a, 1.0, x, 0.0, yref)) { spx_cli_progress_done(); spx_cli_fail("formats"); bad = 1; goto done; }
  for (i = 0; i < nf; i++) {
    spx_cli_progress("%s", spx_format_name((spx_format)i));
    spx_cli_fmt_measure(a, (spx_format)i, &p, x, yref, y, &rows[i]);
    if (i == SPX_FORMAT_CSR && !rows[i].error) csr_bytes = rows[i].bytes;
  }
  spx_cli_progress_done();
  spx_rbp_paper_bytes(a, &q);
  tol = dt == SPX_DOUBLE ? 1e-12 : 1e-5;
  if (json) {
    printf("{\"file\": ");
    spx_cli_json_str(stdout, path ? path : "elasticity3d:16x16x16");
    printf(", \"nrows\": %lld, \"ncols\": %lld, \"nnz\": %lld, \"dtype\": \"%s\", \"formats\": [",
           (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, spx_dtype_name(dt));
    for (i = 0; i < nf; i++) {
      const spx_cli_fmt_row *r = &rows[i];
      printf("%s\n  {\"name\": ", i ? "," : "");
      spx_cli_json_str(stdout, r->name);
      if (r->error) {
        printf(", \"error\": ");
        spx_cli_json_str(stdout, r->error);
        printf("}");
        bad = 1;
        continue;
      }
      printf(", \"params\": ");
      spx_cli_json_str(stdout, r->params);
      spx_cli_json_printf(stdout, ", \"bytes\": %lld, \"vs_csr\": %.4f, \"slots\": %lld, \"padding\": %.4f, "
                          "\"convert_s\": %.6f, \"spmv_s\": %.6f, \"spmv_relerr\": %.3g, \"spmv_ok\": %s}",
                          (long long)r->bytes, csr_bytes ? (double)r->bytes / (double)csr_bytes : 0.0,
                          (long long)r->slots, r->padding, r->convert_s, r->spmv_s, r->relerr,
                          r->relerr <= tol ? "true" : "false");
      if (!(r->relerr <= tol)) bad = 1;
    }
    spx_cli_json_printf(stdout, "],\n \"rbp_paper\": {\"N\": %lld, \"Nz\": %lld, \"K\": %lld, \"Nnon\": %lld, \"Nval\": %lld, "
                        "\"Ncol\": %lld, \"Kv\": %lld, \"Kc\": %lld, \"csr\": %lld, \"ell\": %lld, \"rbp_csr\": %lld, "
                        "\"rbp_ell\": %lld, \"rbp_csr_vs_csr\": %.4f, \"rbp_ell_vs_ell\": %.4f}}\n",
                        (long long)q.n, (long long)q.nz, (long long)q.k, (long long)q.nnon, (long long)q.nval,
                        (long long)q.ncol, (long long)q.kv, (long long)q.kc, (long long)q.csr, (long long)q.ell,
                        (long long)q.rbp_csr, (long long)q.rbp_ell, q.csr ? (double)q.rbp_csr / (double)q.csr : 0.0,
                        q.ell ? (double)q.rbp_ell / (double)q.ell : 0.0);
  } else {
    printf("matrix   %s: %lld x %lld, %lld nonzeros, %s\n\n", path ? path : "elasticity3d 16x16x16 (default)",
           (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, spx_dtype_name(dt));
    printf("%-10s %14s %7s %8s %11s %10s %10s  %s\n", "format", "bytes", "vs_csr", "padding", "convert_ms",
           "spmv_ms", "spmv_err", "parameters");
    for (i = 0; i < nf; i++) {
      const spx_cli_fmt_row *r = &rows[i];
      if (r->error) { printf("%-10s failed: %s\n", r->name, r->error); bad = 1; continue; }
      printf("%-10s %14lld %7.3f %8.3f %11.3f %10.3f %10.2g%s %s\n", r->name, (long long)r->bytes,
             csr_bytes ? (double)r->bytes / (double)csr_bytes : 0.0, r->padding, r->convert_s * 1e3,
             r->spmv_s * 1e3, r->relerr, r->relerr <= tol ? "  " : " !", r->params);
      if (!(r->relerr <= tol)) bad = 1;
    }
    printf("\nRBP paper (papers/000), formulas (1)-(4) with %lld-byte values: N %lld, Nz %lld, K %lld, "
           "Nnon %lld, Nval %lld, Ncol %lld, Kv %lld, Kc %lld\n", (long long)q.vb, (long long)q.n,
           (long long)q.nz, (long long)q.k, (long long)q.nnon, (long long)q.nval, (long long)q.ncol,
           (long long)q.kv, (long long)q.kc);
    printf("  (1) CSR      %14lld    (3) RBP-CSR %14lld  = %.3f x CSR\n", (long long)q.csr,
           (long long)q.rbp_csr, q.csr ? (double)q.rbp_csr / (double)q.csr : 0.0);
    printf("  (2) ELL      %14lld    (4) RBP-ELL %14lld  = %.3f x ELL\n", (long long)q.ell,
           (long long)q.rbp_ell, q.ell ? (double)q.rbp_ell / (double)q.ell : 0.0);
    printf("  (the csr, ell, rbp_csr and rbp_ell rows above are these numbers exactly)\n");
    if (bad) printf("\nspmv_err marked '!' exceeds %.0e: the format's SpMV disagrees with CSR\n", tol);
  }
done:
  free(rows); free(x); free(y); free(yref);
  spx_csr_destroy(a);
  return bad;
}
