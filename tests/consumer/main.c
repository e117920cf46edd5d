/* SPDX-License-Identifier: BSD-3-Clause */
/* The consumer check (tests/run.sh): a program built against an INSTALLED spx, through CMake
 * (cmake/: find_package(spx), spx::spx, spx_add_implementation) and through pkg-config (make/).
 * It plans a small Poisson matrix on the host backend, runs one SpMV through the plan and checks
 * it against the reference spx_csr_spmv. Prints "consumer ok" and exits 0 when all agree. */
#include <spx/spx.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, spx_status st) {
  fprintf(stderr, "consumer: %s: %s (%s)\n", what, spx_status_string(st), spx_last_error());
  return 1;
}

int main(void) {
  spx_csr *a = NULL;
  spx_plan *p = NULL;
  spx_plan_options o;
  spx_status st;
  double *x, *y, *ref;
  int64_t i, n;
  int rc = 1;

  if ((st = spx_gen_poisson3d(4, 4, 4, 7, SPX_DOUBLE, &a)) != SPX_OK) return fail("spx_gen_poisson3d", st);
  n = a->nrows;
  x = (double *)malloc((size_t)n * sizeof *x);
  y = (double *)malloc((size_t)n * sizeof *y);
  ref = (double *)malloc((size_t)n * sizeof *ref);
  if (!x || !y || !ref) {
    fprintf(stderr, "consumer: out of memory\n");
    goto done;
  }
  for (i = 0; i < n; i++) x[i] = 1.0 + (double)(i % 7) / 8.0;

  spx_plan_options_default(&o);
  o.backend = SPX_BACKEND_HOST; /* no GPU needed: the same plan API, host kernels */
  o.no_calibrate = 1;
  if ((st = spx_plan_create(NULL, a, &o, &p)) != SPX_OK) {
    fail("spx_plan_create", st);
    goto done;
  }
  if ((st = spx_plan_spmv(p, 1.0, x, 0.0, y)) != SPX_OK) {
    fail("spx_plan_spmv", st);
    goto done;
  }
  if ((st = spx_csr_spmv(a, 1.0, x, 0.0, ref)) != SPX_OK) {
    fail("spx_csr_spmv", st);
    goto done;
  }
  for (i = 0; i < n; i++)
    if (fabs(y[i] - ref[i]) > 1e-12 * (1.0 + fabs(ref[i]))) {
      fprintf(stderr, "consumer: y[%lld] = %.17g, the reference says %.17g\n", (long long)i, y[i], ref[i]);
      goto done;
    }
  printf("consumer ok: spx %s, %lld x %lld, %lld nonzeros, plan %s on the host\n", SPX_VERSION_STRING,
         (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, spx_format_name(spx_plan_format(p)));
  rc = 0;
done:
  spx_plan_destroy(p);
  spx_csr_destroy(a);
  free(x);
  free(y);
  free(ref);
  return rc;
}
