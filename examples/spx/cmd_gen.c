/* SPDX-License-Identifier: BSD-3-Clause */
/* spx gen KIND ... -o FILE: generated test and benchmark matrices, written as Matrix Market. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int spx_cli_gen(int argc, char **argv) {
  const char *kind, *out = NULL, *src = NULL, *v;
  int64_t n = 0, nx = 0, ny = 0, nz = 0, points = 7, copies = 0, rmin = 1, rmax = 0, seed = 1;
  double alpha = 2.0;
  int i;
  spx_status s;
  spx_csr *a = NULL, *b = NULL;
  double t0;
  if (argc < 2) return spx_cli_usage("gen", "KIND is missing");
  kind = argv[1];
  for (i = 2; i < argc; i++) {
    if ((v = spx_cli_opt(argc, argv, &i, "-o"))) out = v;
    else if ((v = spx_cli_opt(argc, argv, &i, "--n"))) { if (!spx_cli_int("gen", "--n", v, &n)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--nx"))) { if (!spx_cli_int("gen", "--nx", v, &nx)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--ny"))) { if (!spx_cli_int("gen", "--ny", v, &ny)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--nz"))) { if (!spx_cli_int("gen", "--nz", v, &nz)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--points"))) {
      double p;
      if (!spx_cli_number("gen", "--points", v, "7 or 27", SPX_CLI_INTEGER, 0, 27, &p)) return 2;
      points = (int64_t)p;
    }
    else if ((v = spx_cli_opt(argc, argv, &i, "--copies"))) { if (!spx_cli_int("gen", "--copies", v, &copies)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--min"))) { if (!spx_cli_int("gen", "--min", v, &rmin)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--max"))) { if (!spx_cli_int("gen", "--max", v, &rmax)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--seed"))) { if (!spx_cli_int("gen", "--seed", v, &seed)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--alpha"))) {
      if (!spx_cli_number("gen", "--alpha", v, "a number > 1", 0, 1.0, 1e6, &alpha)) return 2;
    } else if (argv[i][0] != '-' && !src) src = argv[i];
    else return spx_cli_usage("gen", "unknown argument '%s'", argv[i]);
  }
  if (!out) return spx_cli_usage("gen", "-o FILE is missing");
  if (!nx) nx = n ? n : 32;
  if (!ny) ny = n ? n : nx;
  if (!nz) nz = n ? n : nx;
  t0 = spx_cli_now();
  spx_cli_progress("generating %s", kind);
  if (!strcmp(kind, "poisson3d")) s = spx_gen_poisson3d(nx, ny, nz, (int)points, SPX_DOUBLE, &a);
  else if (!strcmp(kind, "elasticity3d")) s = spx_gen_elasticity3d(nx, ny, nz, SPX_DOUBLE, &a);
  else if (!strcmp(kind, "powerlaw"))
    s = spx_gen_powerlaw(n ? n : 100000, alpha, rmin, rmax ? rmax : 1000, (uint64_t)seed, SPX_DOUBLE, &a);
  else if (!strcmp(kind, "replicate")) {
    if (!src || !copies) return spx_cli_usage("gen", "replicate wants FILE and --copies K");
    s = spx_mm_read(src, SPX_DOUBLE, &b, NULL);
    if (!s) s = spx_gen_replicate(b, copies, &a);
    spx_csr_destroy(b);
  } else return spx_cli_usage("gen", "unknown KIND '%s' (poisson3d, elasticity3d, powerlaw, replicate)", kind);
  if (s) { spx_cli_progress_done(); return spx_cli_fail("gen"); }
  spx_cli_progress("writing %s", out);
  s = spx_mm_write(out, a, SPX_MM_GENERAL);
  spx_cli_progress_done();
  if (s) { spx_csr_destroy(a); return spx_cli_fail("gen"); }
  printf("%s: %lld x %lld, %lld nonzeros (%.2f s)\n", out, (long long)a->nrows, (long long)a->ncols,
         (long long)a->nnz, spx_cli_now() - t0);
  spx_csr_destroy(a);
  return 0;
}
