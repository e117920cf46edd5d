/* SPDX-License-Identifier: BSD-3-Clause */
/* spx solve MATRIX: a Krylov solve on the auto-tuner's plan. MATRIX is a Matrix Market file or a
 * generator (gen:poisson7:N, gen:poisson27:N, gen:elasticity:N, gen:powerlaw:N, or any spec bench takes: rep:FILE:NNZ ...). Prints the
 * iterations, the residual recomputed from scratch, the time split into setup (analysis + choice,
 * conversion + upload + SpMV compile, solver kernels) and iterations, and the time per iteration
 * against its bandwidth bound: (bytes of the SpMV(s) from the plan + the vector passes) over the
 * copy bandwidth measured now. On a GPU (or with --compare-cusparse) the same solve runs again with
 * a cuSPARSE plan, side by side, after a 2-iteration warm-up solve of the same matrix on each
 * (one-time process costs excluded from both); "end to end" is the wall time from spx_plan_create to the solve's return.
 * Side by side, each solve runs --reps times (default 3), alternating spx and cuSPARSE, and each side
 * reports its median-wall run: one upload of a few hundred MB from pageable memory varies by +-5%
 * between runs, as much as the end-to-end differences measured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "gen:" names a generator (gen:poisson7:N ...); the rest is what bench and select take (files,
 * poisson7:N, rep:FILE:NNZ ...). */
spx_status spx_cli_solve_load(const char *spec, spx_csr **a) {
  char name[128];
  return spx_cli_load_matrix(!strncmp(spec, "gen:", 4) ? spec + 4 : spec, a, name, sizeof name);
}

/* The AMG options spx solve takes, one process or under mpirun: 1 when argv[*k] was one (taken into
 * o, *k advanced past its value), 0 when it is not, 2 after the usage message. */
int spx_cli_solve_amg_option(int argc, char **argv, int *k, spx_amg_options *o) {
  const char *v;
  double w;
  if ((v = spx_cli_opt(argc, argv, k, "--smoother"))) {
    if (spx_amg_smoother_parse(v, &o->smoother)) return spx_cli_usage("solve", "--smoother: %s", spx_last_error());
  } else if ((v = spx_cli_opt(argc, argv, k, "--sweeps"))) {
    if (!spx_cli_number("solve", "--sweeps", v, "an integer 0 to 100", SPX_CLI_INTEGER, -1, 100, &w)) return 2;
    o->pre_sweeps = o->post_sweeps = (int)w;
  } else if ((v = spx_cli_opt(argc, argv, k, "--theta"))) {
    if (!spx_cli_number("solve", "--theta", v, "a number 0 to 1", 0, -1e-300, 1, &o->theta)) return 2;
  } else if ((v = spx_cli_opt(argc, argv, k, "--cycle"))) {
    if (spx_amg_cycle_type_parse(v, &o->cycle)) return spx_cli_usage("solve", "--cycle: %s", spx_last_error());
  } else if (!strcmp(argv[*k], "--relaxed")) o->relaxed_coloring = 1;
  else if ((v = spx_cli_opt(argc, argv, k, "--gpu-setup-rows"))) {
    if (!spx_cli_number("solve", "--gpu-setup-rows", v, "an integer >= 0", SPX_CLI_INTEGER, -1, 2147483647.0, &w))
      return 2;
    o->gpu_setup_rows = (int64_t)w;
  } else if ((v = spx_cli_opt(argc, argv, k, "--aggregation"))) {
    if (spx_amg_aggregation_parse(v, &o->aggregation)) return spx_cli_usage("solve", "--aggregation: %s", spx_last_error());
  } else if ((v = spx_cli_opt(argc, argv, k, "--coarsening"))) {
    if (spx_amg_coarsening_parse(v, &o->coarsening)) return spx_cli_usage("solve", "--coarsening: %s", spx_last_error());
  } else if ((v = spx_cli_opt(argc, argv, k, "--rs-interp"))) {
    if (spx_amg_rs_interp_parse(v, &o->rs_interp)) return spx_cli_usage("solve", "--rs-interp: %s", spx_last_error());
  } else if ((v = spx_cli_opt(argc, argv, k, "--rs-theta"))) {
    if (!spx_cli_number("solve", "--rs-theta", v, "a number above 0 and below 1", 0, 0, 1, &o->rs_theta)) return 2;
  } else if ((v = spx_cli_opt(argc, argv, k, "--rs-trunc"))) {
    if (!spx_cli_number("solve", "--rs-trunc", v, "a number 0 to below 1", 0, -1e-300, 1, &o->rs_trunc)) return 2;
  } else if ((v = spx_cli_opt(argc, argv, k, "--rs-pmax"))) {
    if (!spx_cli_number("solve", "--rs-pmax", v, "an integer 0 to 32", SPX_CLI_INTEGER, -1, SPX_AMG_RS_PMAX_MAX, &w))
      return 2;
    o->rs_pmax = (int)w;
  } else if (!strcmp(argv[*k], "--plan-trials")) o->plan_trials = 1;
  else return 0;
  return 1;
}

/* b = ones, or b = A 1 (the exact solution is all ones); 1 when out of memory. */
int spx_cli_solve_rhs(const spx_csr *a, int ones, double *b) {
  double *one;
  int64_t i;
  if (ones) {
    for (i = 0; i < a->nrows; i++) b[i] = 1.0;
    return 0;
  }
  if (!(one = malloc((size_t)a->ncols * sizeof *one + 8))) return 1;
  for (i = 0; i < a->ncols; i++) one[i] = 1.0;
  spx_csr_spmv(a, 1.0, one, 0.0, b);
  free(one);
  return 0;
}

typedef struct solve_run {
  spx_solve_report rep;
  spx_status st;
  char plan[48];
  int64_t plan_bytes;
  double bound_us; /* bandwidth bound of one iteration (0: no bandwidth) */
  double wall_ms;  /* spx_plan_create through the solve's return: what the caller waits for */
  char reason[800];
  int has_amg;     /* the solve ran with AMG: amg holds its hierarchy's report */
  int on_host;     /* the host backend: no upload, compile or device kernels to name */
  spx_amg_report amg;
} solve_run;

/* --defer: spx's plan starts on the CSR as it is and converts once the residual says it pays (plan
 * option defer, solver option upgrade_at -1). Off by default until measured on a GPU. */
static int solve_defer = 0;

/* --precond amg (or --method amg): the hierarchy's options; NULL without AMG. */
static const spx_amg_options *solve_amg = NULL;

static int solve_one(spx_context *ctx, const spx_csr *a, const char *method, const char *force,
                     spx_plan_strategy strategy, const double *b, const spx_solve_options *o, int64_t calls,
                     double gbs, solve_run *out) {
  spx_plan_options po;
  spx_plan *p = NULL;
  spx_amg *amg = NULL;
  double *x = calloc((size_t)a->nrows + 1, sizeof *x), t0;
  memset(out, 0, sizeof *out);
  out->on_host = spx_context_backend(ctx) == SPX_BACKEND_HOST;
  spx_plan_options_default(&po);
  po.strategy = strategy;
  po.force = force;
  po.expected_calls = calls;
  po.no_diagonal = strcmp(method, "pcg") != 0; /* only Jacobi reads it */
  po.eager = 1; /* built now: a lazy plan would copy the matrix to build it at the first SpMV */
  po.defer = force == NULL && solve_defer;
  t0 = spx_cli_now();
  if (solve_amg && force == NULL) { /* every level's plan tuned (the cuSPARSE side runs without AMG) */
    spx_amg_options ao = *solve_amg;
    ao.plan = &po;
    po.defer = 0;
    if (!x || spx_amg_create(ctx, a, &ao, &amg)) {
      free(x);
      return spx_cli_fail("solve");
    }
    p = spx_amg_plan(amg);
  } else if (!x || spx_plan_create(ctx, a, &po, &p)) {
    free(x);
    return spx_cli_fail("solve");
  }
  snprintf(out->reason, sizeof out->reason, "%s", spx_plan_reason(p));
  snprintf(out->plan, sizeof out->plan, "%s", spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE
                                                  ? "cusparse_csr" : spx_format_name(spx_plan_format(p)));
  spx_cli_progress("%s on %s", method, out->plan);
  if (amg && !strcmp(method, "amg")) out->st = spx_amg_solve(amg, b, x, o, &out->rep);
  else if (amg) {
    spx_solve_options ao = *o;
    ao.precond = spx_amg_precond;
    ao.precond_data = amg;
    out->st = !strcmp(method, "bicgstab") ? spx_solve_bicgstab(p, b, x, &ao, &out->rep) : spx_solve_cg(p, b, x, &ao, &out->rep);
  } else if (!strcmp(method, "pcg")) out->st = spx_solve_pcg_jacobi(p, b, x, o, &out->rep);
  else if (!strcmp(method, "bicgstab")) out->st = spx_solve_bicgstab(p, b, x, o, &out->rep);
  else out->st = spx_solve_cg(p, b, x, o, &out->rep);
  out->wall_ms = 1e3 * (spx_cli_now() - t0);
  spx_cli_progress_done();
  if (out->rep.upgraded_at >= 0) { /* the deferred plan converted during the solve */
    char start[48];
    snprintf(start, sizeof start, "%s", out->plan);
    snprintf(out->plan, sizeof out->plan, "%.14s->%.14s@%lld", start, spx_format_name(spx_plan_format(p)),
             (long long)out->rep.upgraded_at);
  }
  out->plan_bytes = spx_plan_bytes(p);
  if (gbs > 0) {
    double vs = 8, n = (double)a->nrows;
    double bytes = out->rep.spmvs_per_iter * ((double)out->plan_bytes + 2 * n * vs) + (double)out->rep.vector_bytes_per_iter;
    out->bound_us = bytes / (gbs * 1e3);
  }
  if (amg) {
    out->has_amg = 1;
    out->amg = *spx_amg_report_of(amg);
    spx_amg_destroy(amg); /* and its plans, p among them */
  } else spx_plan_destroy(p);
  free(x);
  if (out->st && out->st != SPX_NOT_CONVERGED && out->st != SPX_BREAKDOWN) return spx_cli_fail("solve");
  return 0;
}

/* The run with the median wall time of n (n odd: the middle one; even: the lower middle). */
static const solve_run *solve_median(const solve_run *r, int n) {
  int i, j, best = 0;
  for (i = 0; i < n; i++) {
    int below = 0;
    for (j = 0; j < n; j++) below += r[j].wall_ms < r[i].wall_ms || (r[j].wall_ms == r[i].wall_ms && j < i);
    if (below == (n - 1) / 2) best = i;
  }
  return &r[best];
}

static void solve_spread(const solve_run *r, int n, double *lo, double *hi) {
  int i;
  *lo = *hi = r[0].wall_ms;
  for (i = 1; i < n; i++) {
    if (r[i].wall_ms < *lo) *lo = r[i].wall_ms;
    if (r[i].wall_ms > *hi) *hi = r[i].wall_ms;
  }
}

static void solve_print(const solve_run *r, int json) {
  const spx_solve_report *p = &r->rep;
  if (json) {
    printf("{\"plan\": ");
    spx_cli_json_str(stdout, r->plan);
    spx_cli_json_printf(stdout, ", \"plan_bytes\": %lld, \"bound_us\": %.6g, \"wall_ms\": %.6g, \"report\": ",
                        (long long)r->plan_bytes, r->bound_us, r->wall_ms);
    spx_cli_json_solve_report(stdout, p);
    if (r->has_amg) {
      printf(", \"amg\": ");
      spx_amg_report_print(&r->amg, stdout, 1);
    }
    printf("}");
    return;
  }
  printf("plan %-14s %s\n", r->plan, p->message);
  printf("  why           %s\n", r->reason);
  if (r->has_amg) spx_amg_report_print(&r->amg, stdout, 0);
  printf("  iterations      %lld\n", (long long)p->iterations);
  printf("  residual        ||b - Ax||/||b|| = %.3e recomputed (recurrence %.3e)\n", p->true_rel_resid, p->rel_resid);
  if (r->has_amg && r->on_host)
    printf("  setup           %.2f ms = AMG hierarchy %.2f (every level's plan included) + workspace and r0 %.2f\n",
           r->amg.setup_ms + p->setup_ms, r->amg.setup_ms, p->setup_ms);
  else if (r->has_amg)
    printf("  setup           %.2f ms = AMG hierarchy %.2f (every level's plan included) + solver kernels %.2f + "
           "workspace and r0 %.2f\n", r->amg.setup_ms + p->setup_ms, r->amg.setup_ms, p->jit_ms, p->setup_ms - p->jit_ms);
  else if (r->on_host)
    printf("  setup           %.2f ms = analysis + choice %.2f + conversion %.2f + workspace and r0 %.2f\n",
           p->analysis_ms + p->build_ms + p->setup_ms, p->analysis_ms, p->build_ms, p->setup_ms);
  else
    printf("  setup           %.2f ms = analysis + choice %.2f + conversion, upload and SpMV compile %.2f + solver "
           "kernels %.2f + workspace and r0 %.2f\n", p->analysis_ms + p->build_ms + p->setup_ms, p->analysis_ms,
           p->build_ms, p->jit_ms, p->setup_ms - p->jit_ms);
  printf("  iterations      %.2f ms, %.2f us per iteration", p->solve_ms, p->per_iter_us);
  if (r->bound_us > 0)
    printf(" = %.2fx the bandwidth bound %.2f us (SpMV %lld B x %d + vectors %lld B per iteration)", p->per_iter_us / r->bound_us,
           r->bound_us, (long long)r->plan_bytes, p->spmvs_per_iter, (long long)p->vector_bytes_per_iter);
  printf("\n");
  if (p->upgraded_at >= 0)
    printf("  upgrade         started on the CSR as it was; converted after %lld iterations (%.2f ms, inside the "
           "iterations' time)\n", (long long)p->upgraded_at, p->upgrade_ms);
  printf("  end to end      %.2f ms wall: plan create (validation, analysis, choice, diagonal, build) + solve "
         "(%d restarts from x)\n", r->wall_ms, p->restarts);
}

/* `spx help solve` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_solve_help[] = {
    "MATRIX is a Matrix Market file or a generator: gen:poisson7:N, gen:poisson27:N, "
    "gen:aniso7:N (z couplings 1e-4 of x and y), gen:elasticity:N, gen:powerlaw:N, or any spec bench takes (rep:FILE:NNZ ...); it must be "
    "square. Prints the iterations, the residual recomputed from scratch, setup vs iteration time "
    "and the time per iteration against its bandwidth bound. On a GPU the same solve also runs on a "
    "cuSPARSE plan, side by side, after a 2-iteration warm-up on each. Under mpirun (spx built with "
    "MPI) the matrix is read on rank 0 and distributed by rows (spx/dist.h), and cg, pcg or bicgstab "
    "runs on every rank (a GPU each where every rank has one, else the host backend); --precond amg then "
    "preconditions by the AMG blocks (each rank's hierarchy of its own rows and columns, block Jacobi); "
    "the report adds each rank's rows, halo, time and hierarchy.",
    "--rhs FILE\tthe right-hand side, an N x 1 Matrix Market file (default: b = A * ones, so the "
    "exact solution is all ones)",
    "--ones\tb = all ones instead of A * ones",
    "--method M\tcg, pcg (Jacobi-preconditioned CG), bicgstab, or amg (V-cycles of the AMG hierarchy "
    "alone) (default cg)",
    "--precond P\tnone, or amg: cg and bicgstab preconditioned by one AMG V-cycle (smoothed aggregation, "
    "every level's operators on tuned plans; the hierarchy's levels, sizes, complexities and setup "
    "phases are printed; no cuSPARSE side); under mpirun one cycle of each rank's hierarchy of its local "
    "block (default none)",
    "--smoother S\twith AMG: jacobi, l1jacobi, chebyshev or gs (multicolor Gauss-Seidel, symmetric) on "
    "every level (default chebyshev)",
    "--sweeps N\twith AMG: smoothing sweeps before and after the coarse correction, 0 to 100 (default 1)",
    "--theta T\twith AMG: strength threshold of the fine level, 0 to 1, halved on each coarser one "
    "(default 0.08)",
    "--cycle C\twith AMG: v, w or f (f is not symmetric: prefer --method bicgstab or amg) (default v)",
    "--relaxed\twith --smoother gs: color ignoring weak couplings (below 0.9 of the row's largest) for "
    "fewer colors (default off)",
    "--gpu-setup-rows N\twith AMG on a GPU: levels of at least N rows run their setup on the GPU "
    "(strength, aggregates, P and R A P), the rest on the host; 0: all of it on the host (default 20000)",
    "--aggregation A\twith AMG: auto (mis2 on the levels set up on a GPU, greedy on the host's), mis2 "
    "(parallel MIS(2) roots) or greedy (rows in order, serial) (default auto)",
    "--coarsening C\twith AMG: sa (smoothed aggregation) or rs (classical Ruge-Stueben: PMIS C/F split, "
    "direct interpolation, strength 0.25, truncation 0.2; its setup on the host) (default sa)",
    "--rs-interp I\twith --coarsening rs: direct (from the strong C neighbours) or ext+i (extended+i, "
    "also from the strong C neighbours of the strong F neighbours; at most 4 entries a row of P) (default direct)",
    "--rs-theta T\twith --coarsening rs: classical strength threshold, above 0 and below 1 (default 0.25)",
    "--rs-trunc F\twith --coarsening rs: drop P's weights below F times the row's largest, 0 to below 1 "
    "(default 0.2)",
    "--rs-pmax N\twith --rs-interp ext+i: most entries a row of P keeps, 0 (no cap) to 32 (default 4)",
    "--plan-trials\twith AMG: the levels' plans take --strategy as given (auto may time candidates); "
    "without it a timing strategy runs as model for them (default off)",
    "--tol T\trelative residual to stop at (default 1e-8)",
    "--maxit N\tmost iterations (default 10000)",
    "--strategy S\tthe tuner's strategy: auto, kubota, mps, trial or model (default auto)",
    "--format F\tforce format F (cusparse included) instead of the strategy's choice (default: the "
    "strategy's choice)",
    "--host\trun on the host backend even where there is a GPU (default: the GPU when there is one)",
    "--partition P\tunder mpirun: contiguous (the rows in order, balanced by nonzeros + rows) or metis "
    "(METIS's graph partition, the matrix permuted; spx built with METIS); the report adds the halo "
    "bytes per SpMV of all ranks (default contiguous)",
    "--spmv N\tunder mpirun: also time N distributed SpMVs, the local and ghost blocks alone and the "
    "status agreements, and report the halo exchange's overlap (default 0: none)",
    "--json\tprint JSON instead of text (default: text)",
    "--compare-cusparse\tthe cuSPARSE side-by-side solve; on a GPU it always runs, on the host "
    "never (accepted for scripts; default: on with a GPU)",
    "--defer\tspx's plan starts on the CSR as it is and converts once the residual says it pays "
    "(default off)",
    "--no-graph\ton a GPU, launch each iteration's kernels instead of replaying the iterations "
    "between state reads as one CUDA graph (default: graphs where the plan allows)",
    "--reps N\tside by side: runs per side, alternating, each reporting its median run, 1 to 9 "
    "(default 3)",
    "$ spx solve gen:poisson7:100 --precond amg --smoother gs --ones",
    NULL};

int spx_cli_solve(int argc, char **argv) {
  const char *file = NULL, *rhs = NULL, *method = "cg", *v, *strategy_name = "auto", *format = NULL, *precond = "none";
  int json = 0, host = 0, compare = 0, k, ones = 0, bad = 0, reps = 3, nrun = 0, no_graph = 0;
  double tol = 1e-8, gbs = 0;
  int64_t maxit = 10000, i;
  spx_plan_strategy strategy;
  spx_context *ctx = NULL;
  spx_context_options co = {SPX_BACKEND_AUTO, 0};
  spx_csr *a = NULL;
  spx_solve_options o;
  spx_amg_options amg;
  enum { max_reps = 9 };
  solve_run *runs = NULL, *css = NULL, run, cs;
  double *b = NULL;
#if defined(SPX_CLI_MPI)
  { /* under mpirun: the distributed solve (cmd_solve_mpi.c) */
    int handled = 0, rc = spx_cli_solve_mpi(argc, argv, &handled);
    if (handled) return rc;
  }
#endif
  spx_amg_options_default(&amg);
  for (k = 1; k < argc; k++) {
    int taken;
    if ((v = spx_cli_opt(argc, argv, &k, "--rhs"))) rhs = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--precond"))) precond = v;
    else if ((taken = spx_cli_solve_amg_option(argc, argv, &k, &amg))) {
      if (taken == 2) return 2;
    } else if (!strcmp(argv[k], "--ones")) ones = 1;
    else if ((v = spx_cli_opt(argc, argv, &k, "--method"))) method = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--tol"))) {
      if (!spx_cli_number("solve", "--tol", v, "a positive number", 0, 0, 1e300, &tol)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &k, "--maxit"))) { if (!spx_cli_int("solve", "--maxit", v, &maxit)) return 2; }
    else if ((v = spx_cli_opt(argc, argv, &k, "--strategy"))) strategy_name = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--format"))) format = v;
    else if (!strcmp(argv[k], "--host")) host = 1;
    else if (!strcmp(argv[k], "--json")) json = 1;
    else if (!strcmp(argv[k], "--compare-cusparse")) compare = 1;
    else if (!strcmp(argv[k], "--defer")) solve_defer = 1;
    else if (!strcmp(argv[k], "--no-graph")) no_graph = 1;
    else if ((v = spx_cli_opt(argc, argv, &k, "--reps"))) {
      int64_t r;
      if (!spx_cli_int("solve", "--reps", v, &r)) return 2;
      if (r < 1 || r > max_reps) return spx_cli_usage("solve", "--reps is 1 to %d, not %lld", (int)max_reps, (long long)r);
      reps = (int)r;
    }
    else if (argv[k][0] == '-') return spx_cli_usage("solve", "unknown option '%s'", argv[k]);
    else if (!file) file = argv[k];
    else return spx_cli_usage("solve", "one matrix only ('%s' and '%s')", file, argv[k]);
  }
  if (!file) return spx_cli_usage("solve", "no matrix given");
  if (strcmp(method, "cg") && strcmp(method, "pcg") && strcmp(method, "bicgstab") && strcmp(method, "amg"))
    return spx_cli_usage("solve", "--method is cg, pcg, bicgstab or amg, not '%s'", method);
  if (strcmp(precond, "none") && strcmp(precond, "amg"))
    return spx_cli_usage("solve", "--precond is none or amg, not '%s'", precond);
  if (!strcmp(method, "amg")) precond = "amg";
  if (!strcmp(precond, "amg")) {
    if (!strcmp(method, "pcg"))
      return spx_cli_usage("solve", "--precond amg takes --method cg, bicgstab or amg (pcg is Jacobi's)");
    if (format) return spx_cli_usage("solve", "--format does not apply with AMG: every level's plan is tuned");
    solve_amg = &amg;
  }
  if (spx_plan_strategy_parse(strategy_name, &strategy)) return spx_cli_usage("solve", "%s", spx_last_error());
  spx_cli_progress("reading %s", file);
  if (spx_cli_solve_load(file, &a)) { spx_cli_progress_done(); return spx_cli_fail("solve"); }
  spx_cli_progress_done();
  if (a->nrows != a->ncols) {
    fprintf(stderr, "spx solve: %s is %lld x %lld; the solvers need a square matrix\n", file, (long long)a->nrows,
            (long long)a->ncols);
    spx_csr_destroy(a);
    return 1;
  }
  b = malloc((size_t)a->nrows * sizeof *b + 8);
  if (!b) { spx_csr_destroy(a); fprintf(stderr, "spx solve: out of memory\n"); return 1; }
  if (rhs) {
    spx_csr *r = NULL;
    if (spx_mm_read(rhs, SPX_DOUBLE, &r, NULL)) { bad = spx_cli_fail("solve"); goto done; }
    if (r->nrows != a->nrows || r->ncols != 1) {
      fprintf(stderr, "spx solve: %s is %lld x %lld; the right-hand side must be %lld x 1\n", rhs, (long long)r->nrows,
              (long long)r->ncols, (long long)a->nrows);
      spx_csr_destroy(r);
      bad = 1;
      goto done;
    }
    memset(b, 0, (size_t)a->nrows * sizeof *b);
    for (i = 0; i < r->nrows; i++)
      if (r->row_ptr[i + 1] > r->row_ptr[i]) b[i] = r->val.d[r->row_ptr[i]];
    spx_csr_destroy(r);
  } else if (spx_cli_solve_rhs(a, ones, b)) {
    bad = 1;
    goto done;
  }
  if (host) co.backend = SPX_BACKEND_HOST;
  if (spx_context_create(&co, &ctx)) { bad = spx_cli_fail("solve"); goto done; }
  if (spx_context_backend(ctx) == SPX_BACKEND_CUDA) {
    spx_cli_progress("measuring copy bandwidth");
    if (spx_copy_bandwidth(ctx, (size_t)1 << 29, 5, &gbs)) gbs = 0;
    spx_clear_error();
    spx_cli_progress_done();
    compare = solve_amg == NULL; /* always side by side on a GPU, but for AMG */
  } else compare = 0;
  spx_solve_options_default(&o);
  o.rtol = tol;
  o.maxit = maxit;
  o.host_vectors = 1;
  o.no_graph = no_graph;
  if (compare) {
    /* One-time process costs (driver, NVRTC and cuSPARSE loading, every kernel's compile or cache
     * load, the tuner's calibration file, the OpenMP threads) and the driver's first mapping of
     * memory of this size are paid once per program, not per solve: the same solve, planned the
     * same way but stopped after 2 iterations, runs first on each side, so that neither timed
     * solve carries them. (A 16^3 warm-up left the device profile's kernels and the first large
     * allocations to spx's timed solve, the first of the two: 17 ms warm, 300 ms on a cold JIT
     * cache, and 10 ms more of workspace allocation than cuSPARSE's solve after it.) */
    spx_solve_options wo = o;
    solve_run junk;
    wo.maxit = 2;
    wo.upgrade_at = 1; /* a deferred plan converts in the warm-up too: its kernels load there */
    spx_cli_progress("warm-up");
    if (!solve_one(ctx, a, method, format, strategy, b, &wo, 2 * maxit, 0, &junk))
      (void)solve_one(ctx, a, method, "cusparse", strategy, b, &wo, 2 * maxit, 0, &junk);
    spx_clear_error();
    spx_cli_progress_done();
  }
  if (!compare) reps = 1;
  runs = calloc((size_t)reps, sizeof *runs);
  css = calloc((size_t)reps, sizeof *css);
  if (!runs || !css) { fprintf(stderr, "spx solve: out of memory\n"); bad = 1; goto done; }
  for (nrun = 0; nrun < reps; nrun++) { /* alternating, so that drift hits both sides */
    if ((bad = solve_one(ctx, a, method, format, strategy, b, &o, 2 * maxit, gbs, &runs[nrun]))) goto done;
    if (compare && (bad = solve_one(ctx, a, method, "cusparse", strategy, b, &o, 2 * maxit, gbs, &css[nrun]))) goto done;
  }
  run = *solve_median(runs, reps);
  if (compare) cs = *solve_median(css, reps);
  if (json) {
    printf("{\"matrix\": ");
    spx_cli_json_str(stdout, file);
    spx_cli_json_printf(stdout, ", \"rows\": %lld, \"nnz\": %lld, \"method\": \"%s\", \"precond\": \"%s\", \"backend\": \"%s\", "
                        "\"tol\": %g, \"copy_gbs\": %.6g, \"spx\": ", (long long)a->nrows, (long long)a->nnz, method,
                        solve_amg ? "amg" : "none", spx_backend_name(ctx), tol, gbs);
    solve_print(&run, 1);
    if (compare) { printf(", \"cusparse\": "); solve_print(&cs, 1); }
    printf("}\n");
  } else {
    printf("spx solve %s: %lld rows, %lld nonzeros, %s%s, rtol %g, %s backend", file, (long long)a->nrows,
           (long long)a->nnz, method, solve_amg && strcmp(method, "amg") ? " + amg" : "", tol, spx_backend_name(ctx));
    if (gbs > 0) printf(", copy bandwidth %.0f GB/s", gbs);
    printf("\n");
    solve_print(&run, 0);
    if (compare) {
      double lo, hi, clo, chi;
      solve_print(&cs, 0);
      solve_spread(runs, reps, &lo, &hi);
      solve_spread(css, reps, &clo, &chi);
      printf("spx vs cuSPARSE  %.2fx end to end (wall), %.2fx per iteration (medians of %d alternating runs; walls "
             "spx %.1f..%.1f ms, cuSPARSE %.1f..%.1f ms)\n", run.wall_ms > 0 ? cs.wall_ms / run.wall_ms : 0.0,
             run.rep.per_iter_us > 0 ? cs.rep.per_iter_us / run.rep.per_iter_us : 0.0, reps, lo, hi, clo, chi);
    }
  }
  bad = run.st != SPX_OK || (compare && cs.st != SPX_OK);
done:
  free(runs);
  free(css);
  free(b);
  spx_csr_destroy(a);
  spx_context_destroy(ctx);
  return bad;
}
