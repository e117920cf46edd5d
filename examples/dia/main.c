/* SPDX-License-Identifier: BSD-3-Clause */
/* dia_example [FILE.mtx ...]: registers the out-of-tree DIA format of dia.h and uses it like a
 * built-in one on generated matrices (and any Matrix Market files given): bytes against CSR, the
 * SpMV against CSR's, the round trip. Exit status 0 when every accepted matrix checks out; DIA
 * refusing a matrix that is not banded (SPX_UNSUPPORTED) is a correct answer, not a failure.
 * Build: cc examples/dia/main.c -Iinclude -ldl -lz */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>

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
  return bad;
}
