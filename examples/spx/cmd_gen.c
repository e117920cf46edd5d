/* SPDX-License-Identifier: BSD-3-Clause */
/* spx gen KIND ... -o FILE: generated test and benchmark matrices, written as Matrix Market. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* `spx help gen` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_gen_help[] = {
    "KIND is poisson3d (a 3-D Poisson grid), elasticity3d (3-D hexahedral elasticity, 3 unknowns per "
    "node), powerlaw (random rows with power-law lengths) or replicate (block-diagonal copies of the "
    "Matrix Market file SRC). The matrix is written to FILE as a general Matrix Market file.",
    "-o FILE\tthe output file, required (a name ending in .gz is written gzip-compressed)",
    "--n N\tpoisson3d, elasticity3d: the grid edge, for nx, ny and nz (default 32); powerlaw: the "
    "number of rows (default 100000)",
    "--nx N\tpoisson3d, elasticity3d: grid points in x (default: --n, else 32)",
    "--ny N\tgrid points in y (default: --n, else --nx)",
    "--nz N\tgrid points in z (default: --n, else --nx)",
    "--points 7|27\tpoisson3d: the stencil's points (default 7)",
    "--alpha A\tpowerlaw: exponent of the row-length distribution, above 1 (default 2.0)",
    "--min N\tpowerlaw: fewest nonzeros in a row (default 1)",
    "--max N\tpowerlaw: most nonzeros in a row (default 1000)",
    "--seed N\tpowerlaw: the random seed (default 1)",
    "--copies K\treplicate: the number of copies of SRC, required with replicate (no default)",
    "$ spx gen poisson3d --n 64 --points 27 -o poisson27_64.mtx.gz",
    NULL};

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
