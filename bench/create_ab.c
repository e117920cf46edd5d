/* SPDX-License-Identifier: BSD-3-Clause */
/* create_ab: what a knob does to plan creation, in turns in one process (GPU machine only).
 *
 *   create_ab VAR A B MATRIX...      (bench/device.sh DEST beside builds and runs it)
 *
 * For each Matrix Market file: R rounds, each with VAR=A then VAR=B (spx reads its environment
 * again between them), each timing a cuSPARSE CSR plan's creation and auto's eager creation at 200
 * and 1000 expected calls (the eval's two counts, no diagonal), each followed by 20 SpMVs and a
 * synchronize outside the timed window, after a 1 ms pause (a caller's work between plans: the
 * host's threads idle, as in the eval). Prints the medians (us) and the exposed cost's change,
 * (auto - cuSPARSE) under A less the same under B: positive where B exposes less. */
#define SPX_IMPLEMENTATION
#include <spx/spx.h>
#include <spx/internal/config.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ROUNDS = 9, SPMVS = 20 };

static int cmpd(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *t) {
  qsort(t, ROUNDS, sizeof *t, cmpd);
  return t[ROUNDS / 2];
}

/* One creation (k 0: cuSPARSE, 1: auto at 200 calls, 2: at 1000), us; then its SpMVs. */
static spx_status one(spx_context *ctx, const spx_csr *a, int k, spx_devptr x, spx_devptr y, double *us) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_cusparse_plan *cp = NULL;
  struct timespec nap = {0, 1000000L};
  spx_status s;
  double t0;
  int c;
  spx_plan_options_default(&o);
  o.eager = 1;
  o.no_diagonal = 1;
  o.expected_calls = k == 1 ? 200 : 1000;
  nanosleep(&nap, NULL);
  t0 = spx__now();
  s = k == 0 ? spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &cp) : spx_plan_create(ctx, a, &o, &p);
  *us = 1e6 * (spx__now() - t0);
  for (c = 0; c < SPMVS && !s; c++)
    s = p ? spx_plan_spmv(p, 1.0, (const void *)(uintptr_t)x, 0.0, (void *)(uintptr_t)y) : spx_cusparse_spmv(cp, 1.0, x, 0.0, y);
  if (!s) s = spx_context_synchronize(ctx);
  if (!s && p) s = spx_plan_wait(p);
  spx_plan_destroy(p);
  spx_cusparse_plan_destroy(cp);
  return s;
}

static spx_status matrix(spx_context *ctx, const char *path, const char *var, const char *const val[2]) {
  double t[2][3][ROUNDS], m[2][3];
  spx_devptr x = 0, y = 0;
  spx_csr *a = NULL;
  const char *name = strrchr(path, '/');
  spx_status s;
  int r, v, k;
  if ((s = spx_mm_read(path, SPX_DOUBLE, &a, NULL))) return s;
  if ((s = spx_device_alloc(ctx, (size_t)a->ncols * 8 + 8, &x)) || (s = spx_device_alloc(ctx, (size_t)a->nrows * 8 + 8, &y)) ||
      (s = spx_device_memset(ctx, x, 0x3f, (size_t)a->ncols * 8)))
    goto done;
  for (r = -1; r < ROUNDS && !s; r++) /* round -1: a warm-up, not kept */
    for (v = 0; v < 2 && !s; v++) {
      setenv(var, val[v], 1);
      spx__config_reload();
      for (k = 0; k < 3 && !s; k++) {
        double us;
        if (!(s = one(ctx, a, k, x, y, &us)) && r >= 0) t[v][k][r] = us;
      }
    }
  if (s) goto done;
  for (v = 0; v < 2; v++)
    for (k = 0; k < 3; k++) m[v][k] = median(t[v][k]);
  printf("%-24.24s %8lld | %7.1f %7.1f %7.1f | %7.1f %7.1f %7.1f | %7.1f %7.1f\n", name ? name + 1 : path, (long long)a->nnz,
         m[0][0], m[0][1], m[0][2], m[1][0], m[1][1], m[1][2], (m[0][1] - m[0][0]) - (m[1][1] - m[1][0]),
         (m[0][2] - m[0][0]) - (m[1][2] - m[1][0]));
  fflush(stdout);
done:
  spx_device_free(ctx, x);
  spx_device_free(ctx, y);
  spx_csr_destroy(a);
  return s;
}

int main(int argc, char **argv) {
  spx_context *ctx = NULL;
  int i;
  if (argc < 5) {
    fprintf(stderr, "usage: create_ab VAR A B MATRIX...\n");
    return 2;
  }
  if (spx_context_create(NULL, &ctx) || spx_context_backend(ctx) != SPX_BACKEND_CUDA) {
    fprintf(stderr, "create_ab: no CUDA context (%s)\n", spx_last_error());
    spx_context_destroy(ctx);
    return 1;
  }
  printf("# create_ab %s: A=%s, B=%s; medians of %d rounds in turns, us; exposed = auto's create - cuSPARSE's\n", argv[1],
         argv[2], argv[3], ROUNDS);
  printf("%-24s %8s | %7s %7s %7s | %7s %7s %7s | %7s %7s\n", "matrix", "nnz", "cs A", "a200 A", "a1000 A", "cs B", "a200 B",
         "a1000 B", "less@200", "less@1000");
  for (i = 4; i < argc; i++) {
    const char *val[2] = {argv[2], argv[3]};
    if (matrix(ctx, argv[i], argv[1], val)) { /* a file spx cannot read (a complex matrix) is named and skipped */
      printf("# %s: %s\n", argv[i], spx_last_error());
      spx_clear_error();
    }
  }
  spx_context_destroy(ctx);
  return 0;
}
