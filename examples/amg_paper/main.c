/* SPDX-License-Identifier: BSD-3-Clause */
/* amg_paper: the experiment of papers/003 (GPU AMG smoothers) on spx's AMG, printed as a table laid
 * out like the paper's Tables 4-5, 4-6 and 4-7 with the paper's iteration counts beside ours.
 *
 *   amg_paper [--host] [--iso N,N,..] [--ani N,N,..] [--mode amg|bicgstab|both] [--tol T]
 *             [--maxit N] [--coarse-size N] [--csv]          (--iso '' or --ani '': none of those)
 *
 * Problems: 3-D diffusion on N^3 grids (spx_gen_poisson3d_aniso), isotropic (iso) and anisotropic
 * (ani: z couplings 1e-4 of x and y), b = 1, x0 = 0, to ||b - A x|| / ||b|| <= tol [1e-8]; the
 * paper's sizes by default (iso 10..70, ani 10..60, step 10). Configurations (the paper's section
 * 4.2, its sweeps and damping per level from Table 4-3 for AMG alone and Table 4-4 for
 * AMG-BiCGSTAB, pre = post = the table's sweeps; levels past the table take its last column; the
 * coarsest level by dense LU as in the paper; the greedy aggregation on every level, as the paper's
 * sequential setup):
 *   JC-based          damped Jacobi on every level
 *   GS-JC-mixed       multicolor Gauss-Seidel on level 0, Jacobi below
 *   Chaotic-GS-based  Gauss-Seidel with the relaxed coloring (weak couplings ignored) on every
 *                     level; spx's relaxed sweep is deterministic (a color's rows update together),
 *                     where the paper's chaotic one races
 *   CPU-GS-based      the paper's CPU reference: symmetric Gauss-Seidel on every level (strict
 *                     coloring here), AMG alone only
 *   spx-default       spx's defaults (Chebyshev, degree 2, one sweep), for reference
 * Each row: the hierarchy's levels, our iterations, the paper's (Table 4-6 for AMG alone, 4-7 for
 * AMG-BiCGSTAB at iso 70 and ani 60; "-" where the paper has none), setup time by phase and the
 * iterations' time (ms). The paper's times (Table 4-5, a Tesla C2050 of 2011) are printed once at
 * the end for reference. --host runs on the host backend (all cores), else the GPU when there is
 * one: run both to compare the device with its host. The program uses the public headers only. */
#include <spx/spx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MODE_AMG = 0, MODE_BICGSTAB = 1, MAX_SIZES = 32, TABLE_LEVELS = 4 };

/* One configuration's smoothers and its sweeps and damping per level (Lv.0..3; the paper's Lv.4 is
 * the coarsest, by LU), [mode][problem: 0 iso, 1 ani]. sweeps -1: the paper ran no such case. */
typedef struct paper_config {
  const char *name;
  int fine_smoother, smoother; /* level 0's, the others' (an spx_amg_smoother) */
  int relaxed;
  int sweeps[2][2][TABLE_LEVELS];
  double damping[2][2][TABLE_LEVELS];
  int paper_iters[2][7];       /* Table 4-6: [iso, ani][N = 10..70] (AMG alone), 0 none */
  int paper_bicgstab[2];       /* Table 4-7: iso 70^3, ani 60^3 (0: none; -1: did not converge) */
} paper_config;

#define J SPX_AMG_JACOBI
#define G SPX_AMG_GS
#define C SPX_AMG_CHEBYSHEV
static const paper_config configs[] = {
    {"GS-JC-mixed", G, J, 0,
     {{{1, 1, 2, 6}, {5, 1, 2, 4}}, {{1, 1, 2, 6}, {8, 1, 1, 1}}},
     {{{0.65, 0.45, 1.00, 1.00}, {1.50, 0.50, 0.50, 0.50}}, {{1, 1, 1, 1}, {1, 1, 1, 1}}},
     {{12, 36, 36, 36, 40, 57, 70}, {33, 47, 73, 79, 98, 89, 0}}, {17, 26}},
    {"JC-based", J, J, 0,
     {{{1, 1, 2, 6}, {1, 1, 1, 1}}, {{1, 1, 1, 1}, {-1, -1, -1, -1}}},
     {{{0.90, 0.45, 1.00, 1.00}, {0.50, 0.50, 0.50, 0.50}}, {{1, 1, 1, 1}, {1, 1, 1, 1}}},
     {{32, 10, 41, 47, 43, 59, 66}, {250, 968, 1339, 1644, 1252, 1159, 0}}, {21, -1}},
    {"Chaotic-GS-based", G, G, 1,
     {{{1, 1, 2, 6}, {5, 4, 2, 1}}, {{1, 1, 2, 6}, {8, 4, 0, 0}}},
     {{{0.85, 0.45, 1.00, 1.00}, {1.30, 1.00, 1.00, 1.00}}, {{1, 1, 1, 1}, {1, 1, 1, 1}}},
     {{12, 35, 36, 45, 38, 52, 56}, {27, 25, 40, 41, 40, 39, 0}}, {18, 18}},
    {"CPU-GS-based", G, G, 0,
     {{{1, 1, 1, 1}, {2, 2, 2, 2}}, {{-1, -1, -1, -1}, {-1, -1, -1, -1}}},
     {{{1, 1, 1, 1}, {0.75, 0.75, 0.75, 0.75}}, {{1, 1, 1, 1}, {1, 1, 1, 1}}},
     {{13, 26, 36, 40, 38, 38, 42}, {46, 70, 85, 91, 97, 98, 0}}, {0, 0}},
    {"spx-default", C, C, 0,
     {{{1, 1, 1, 1}, {1, 1, 1, 1}}, {{1, 1, 1, 1}, {1, 1, 1, 1}}},
     {{{0, 0, 0, 0}, {0, 0, 0, 0}}, {{0, 0, 0, 0}, {0, 0, 0, 0}}},
     {{0}, {0}}, {0, 0}},
};
#undef J
#undef G
#undef C
#define NCONFIGS ((int)(sizeof configs / sizeof *configs))

typedef struct run_options {
  int host, csv, modes[2];
  int64_t coarse_size, maxit;
  double tol;
} run_options;

/* "10,20,30" into sizes; the count, or -1 on a bad list. */
static int parse_sizes(const char *s, int64_t *sizes) {
  int n = 0;
  while (*s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 2 || v > 2000 || n == MAX_SIZES) return -1;
    sizes[n++] = v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

/* The AMG options of configuration c for mode and problem (ani 0/1). */
static void config_options(const paper_config *c, int mode, int ani, const run_options *ro, spx_amg_options *o) {
  int l;
  spx_amg_options_default(o);
  /* the greedy rule on every level, on either backend: one hierarchy per problem whatever runs it,
   * and on the anisotropic problems its aggregates line up plane by plane (MIS(2)'s do not) */
  o->aggregation = SPX_AMG_AGG_GREEDY;
  o->coarse_size = ro->coarse_size;
  o->relaxed_coloring = c->relaxed;
  o->smoother = (spx_amg_smoother)c->smoother;
  for (l = 0; l < SPX_AMG_MAX_LEVELS; l++) {
    const int t = l < TABLE_LEVELS ? l : TABLE_LEVELS - 1;
    o->level[l].smoother = l == 0 ? c->fine_smoother : c->smoother;
    o->level[l].pre_sweeps = o->level[l].post_sweeps = c->sweeps[mode][ani][t];
    o->level[l].damping = c->damping[mode][ani][t];
  }
}

/* One solve: the table's row. Returns 0, or 1 after printing why it could not run. */
static int run_one(spx_context *ctx, const spx_csr *a, const char *problem, int64_t n, int ani, const paper_config *c,
                   int mode, const run_options *ro) {
  spx_amg_options o;
  spx_solve_options so;
  spx_solve_report r;
  spx_amg *m = NULL;
  const spx_amg_report *ar;
  double *b = malloc((size_t)a->nrows * sizeof *b + 8), *x = calloc((size_t)a->nrows + 1, sizeof *x);
  int64_t i;
  int paper = 0;
  spx_status st;
  char ours[32], theirs[16];
  if (!b || !x) {
    free(b);
    free(x);
    fprintf(stderr, "amg_paper: out of memory\n");
    return 1;
  }
  for (i = 0; i < a->nrows; i++) b[i] = 1.0;
  config_options(c, mode, ani, ro, &o);
  if (spx_amg_create(ctx, a, &o, &m)) {
    fprintf(stderr, "amg_paper: %s %lld^3 %s: %s\n", problem, (long long)n, c->name, spx_last_error());
    free(b);
    free(x);
    return 1;
  }
  spx_solve_options_default(&so);
  so.rtol = ro->tol;
  so.maxit = ro->maxit;
  so.host_vectors = 1;
  if (mode == MODE_AMG) st = spx_amg_solve(m, b, x, &so, &r);
  else {
    so.precond = spx_amg_precond;
    so.precond_data = m;
    st = spx_solve_bicgstab(spx_amg_plan(m), b, x, &so, &r);
  }
  ar = spx_amg_report_of(m);
  if (mode == MODE_AMG && n % 10 == 0 && n / 10 >= 1 && n / 10 <= 7) paper = c->paper_iters[ani][n / 10 - 1];
  if (mode == MODE_BICGSTAB && n == (ani ? 60 : 70)) paper = c->paper_bicgstab[ani];
  if (st == SPX_OK) snprintf(ours, sizeof ours, "%lld", (long long)r.iterations);
  else snprintf(ours, sizeof ours, "%s(%lld)", st == SPX_NOT_CONVERGED ? "no" : "fail", (long long)r.iterations);
  if (paper > 0) snprintf(theirs, sizeof theirs, "%d", paper);
  else snprintf(theirs, sizeof theirs, "%s", paper < 0 ? "diverged" : "-");
  if (ro->csv)
    printf("%s,%lld,%s,%s,%s,%d,%s,%s,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%.3e\n", problem, (long long)n,
           c->name, mode ? "bicgstab" : "amg", spx_backend_name(ctx), ar->levels, ours, theirs, ar->setup_ms,
           ar->strength_ms + ar->aggregate_ms + ar->prolong_ms, ar->rap_ms, ar->smoother_ms, ar->coarse_ms, ar->plan_ms,
           ar->device_ms, r.solve_ms, r.iterations ? r.solve_ms / (double)r.iterations : 0.0, r.rel_resid);
  else
    printf("%-4s %4lld^3  %-17s %-9s %6d %9s %8s %9.1f %7.1f %7.1f %7.1f %7.1f %7.1f %9.2f %8.3f\n", problem,
           (long long)n, c->name, mode ? "BiCGSTAB" : "AMG", ar->levels, ours, theirs, ar->setup_ms,
           ar->strength_ms + ar->aggregate_ms + ar->prolong_ms, ar->rap_ms, ar->smoother_ms, ar->plan_ms,
           ar->device_ms, r.solve_ms, r.iterations ? r.solve_ms / (double)r.iterations : 0.0);
  spx_clear_error();
  spx_amg_destroy(m);
  free(b);
  free(x);
  return 0;
}

static int usage(const char *why) {
  fprintf(stderr, "amg_paper: %s\nusage: amg_paper [--host] [--iso N,N,..] [--ani N,N,..] [--mode amg|bicgstab|both] "
                  "[--tol T] [--maxit N] [--coarse-size N] [--csv]\n", why);
  return 2;
}

int main(int argc, char **argv) {
  int64_t iso[MAX_SIZES] = {10, 20, 30, 40, 50, 60, 70}, ani[MAX_SIZES] = {10, 20, 30, 40, 50, 60};
  int niso = 7, nani = 6, k, p, bad = 0;
  run_options ro = {0, 0, {1, 1}, 500, 5000, 1e-8};
  spx_context_options co = {SPX_BACKEND_AUTO, 0};
  spx_context *ctx = NULL;
  for (k = 1; k < argc; k++) {
    const char *v = k + 1 < argc ? argv[k + 1] : NULL;
    if (!strcmp(argv[k], "--host")) ro.host = 1;
    else if (!strcmp(argv[k], "--csv")) ro.csv = 1;
    else if (!strcmp(argv[k], "--iso") && v) { if ((niso = parse_sizes(v, iso)) < 0) return usage("bad --iso list"); k++; }
    else if (!strcmp(argv[k], "--ani") && v) { if ((nani = parse_sizes(v, ani)) < 0) return usage("bad --ani list"); k++; }
    else if (!strcmp(argv[k], "--mode") && v) {
      ro.modes[MODE_AMG] = strcmp(v, "bicgstab") != 0;
      ro.modes[MODE_BICGSTAB] = strcmp(v, "amg") != 0;
      if (strcmp(v, "amg") && strcmp(v, "bicgstab") && strcmp(v, "both")) return usage("--mode is amg, bicgstab or both");
      k++;
    } else if (!strcmp(argv[k], "--tol") && v) {
      ro.tol = strtod(v, NULL);
      if (!(ro.tol > 0 && ro.tol < 1)) return usage("--tol is between 0 and 1");
      k++;
    } else if (!strcmp(argv[k], "--maxit") && v) {
      ro.maxit = strtoll(v, NULL, 10);
      if (ro.maxit < 1) return usage("--maxit is a positive integer");
      k++;
    } else if (!strcmp(argv[k], "--coarse-size") && v) {
      ro.coarse_size = strtoll(v, NULL, 10);
      if (ro.coarse_size < 1) return usage("--coarse-size is a positive integer");
      k++;
    } else return usage("unknown option or missing value");
  }
  if (ro.host) co.backend = SPX_BACKEND_HOST;
  if (spx_context_create(&co, &ctx)) {
    fprintf(stderr, "amg_paper: %s\n", spx_last_error());
    return 1;
  }
  if (ro.csv)
    printf("problem,n,config,mode,backend,levels,iterations,paper_iterations,setup_ms,coarsen_ms,rap_ms,smoother_ms,"
           "coarse_ms,plan_ms,device_ms,solve_ms,ms_per_iter,rel_resid\n");
  else {
    printf("papers/003 experiment on spx AMG (%s backend), b = 1, rtol %g; paper: Table 4-6 (AMG), 4-7 (BiCGSTAB)\n",
           spx_backend_name(ctx), ro.tol);
    printf("prob     size  config            mode      levels     iters    paper  setup_ms coarsen     RAP  smooth"
           "   plans  device  solve_ms  ms/iter\n");
  }
  for (p = 0; p < 2; p++) {
    const int n_sizes = p ? nani : niso;
    int s;
    for (s = 0; s < n_sizes; s++) {
      const int64_t n = p ? ani[s] : iso[s];
      spx_csr *a = NULL;
      int c, mode;
      if (spx_gen_poisson3d_aniso(n, n, n, 1, 1, p ? 1e-4 : 1, SPX_DOUBLE, &a)) {
        fprintf(stderr, "amg_paper: %s\n", spx_last_error());
        bad = 1;
        continue;
      }
      for (mode = 0; mode < 2; mode++)
        for (c = 0; c < NCONFIGS && ro.modes[mode]; c++)
          if (configs[c].sweeps[mode][p][0] >= 0) bad |= run_one(ctx, a, p ? "ani" : "iso", n, p, &configs[c], mode, &ro);
      spx_csr_destroy(a);
    }
  }
  if (!ro.csv)
    printf("paper's Table 4-5 (iterations' time, Tesla C2050): iso 70^3 AMG-BiCGSTAB 0.46/0.43/0.62 s, AMG 0.63/0.57/"
           "0.78 s; ani 60^3 AMG-BiCGSTAB 1.26/diverged/1.17 s, AMG 1.28/5.72/0.83 s (GS-JC-mixed/JC-based/"
           "Chaotic-GS-based)\n");
  spx_context_destroy(ctx);
  return bad;
}
