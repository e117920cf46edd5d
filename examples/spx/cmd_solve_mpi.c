/* SPDX-License-Identifier: BSD-3-Clause */
/* spx solve under mpirun (built where GN found MPI: SPX_CLI_MPI): the matrix read on rank 0 and
 * scattered by rows (spx/dist.h; --partition metis: METIS's rows, permuted), b = A 1 (or ones)
 * likewise, the distributed solver (--precond amg: preconditioned by the AMG blocks, each rank's
 * hierarchy of its local block), and a report of every rank's rows, halo and time (and hierarchy)
 * beside the global iterations and residuals. Each rank runs
 * on a GPU of its node (the node-local rank modulo the node's GPUs) where every rank has one, else
 * on the host backend (--host asks for it). --spmv N then times N distributed SpMVs against the
 * two blocks' SpMVs alone, for the halo's exposed time and overlap. Without an MPI launcher in the
 * environment spx solve is the one-process command, and this file is not entered. */
#include "cli.h"

#if defined(SPX_CLI_MPI)
#include <spx/dist.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct solve_mpi_args {
  const char *file, *method, *format, *strategy, *partition, *precond;
  double tol;
  int64_t maxit, spmv;
  int ones, json, host;
  int amg;                    /* --precond amg */
  spx_amg_options ao;         /* its options (spx solve's: --smoother, --sweeps, --cycle, ...) */
} solve_mpi_args;

/* The options the distributed solve takes; anything else is a usage error (on rank 0's stderr). */
static int solve_mpi_parse(int argc, char **argv, int rank, solve_mpi_args *a) {
  int k, taken;
  const char *v;
  memset(a, 0, sizeof *a);
  a->method = "cg"; a->strategy = "auto"; a->partition = "contiguous"; a->precond = "none"; a->tol = 1e-8;
  a->maxit = 10000;
  spx_amg_options_default(&a->ao);
  for (k = 1; k < argc; k++) {
    if ((v = spx_cli_opt(argc, argv, &k, "--method"))) a->method = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--precond"))) a->precond = v;
    else if ((taken = spx_cli_solve_amg_option(argc, argv, &k, &a->ao))) {
      if (taken == 2) return 2;
    }
    else if ((v = spx_cli_opt(argc, argv, &k, "--format"))) a->format = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--strategy"))) a->strategy = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--partition"))) a->partition = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--tol"))) {
      if (!spx_cli_number("solve", "--tol", v, "a positive number", 0, 0, 1e300, &a->tol)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &k, "--maxit"))) {
      if (!spx_cli_int("solve", "--maxit", v, &a->maxit)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &k, "--spmv"))) {
      if (!spx_cli_int("solve", "--spmv", v, &a->spmv)) return 2;
    } else if (!strcmp(argv[k], "--ones")) a->ones = 1;
    else if (!strcmp(argv[k], "--json")) a->json = 1;
    else if (!strcmp(argv[k], "--host")) a->host = 1;
    else if (argv[k][0] == '-')
      return rank ? 2 : spx_cli_usage("solve", "under mpirun spx solve takes --method cg|pcg|bicgstab, --precond "
                                      "none|amg and the AMG options, --format, --strategy, --partition, --tol, "
                                      "--maxit, --spmv N, --ones, --json and --host, not '%s'", argv[k]);
    else if (!a->file) a->file = argv[k];
    else return rank ? 2 : spx_cli_usage("solve", "one matrix only ('%s' and '%s')", a->file, argv[k]);
  }
  if (!a->file) return rank ? 2 : spx_cli_usage("solve", "no matrix given");
  if (strcmp(a->method, "cg") && strcmp(a->method, "pcg") && strcmp(a->method, "bicgstab"))
    return rank ? 2 : spx_cli_usage("solve", "under mpirun --method is cg, pcg or bicgstab, not '%s' (AMG runs as "
                                    "--precond amg there: one cycle of each rank's block)", a->method);
  if (strcmp(a->precond, "none") && strcmp(a->precond, "amg"))
    return rank ? 2 : spx_cli_usage("solve", "--precond is none or amg, not '%s'", a->precond);
  a->amg = !strcmp(a->precond, "amg");
  if (a->amg && !strcmp(a->method, "pcg"))
    return rank ? 2 : spx_cli_usage("solve", "--precond amg takes --method cg or bicgstab (pcg is Jacobi's)");
  return 0;
}

/* Rank 0's matrix and b (NULL elsewhere); 1 on failure, with the message printed. */
static int solve_mpi_load(const solve_mpi_args *a, spx_csr **m, double **b) {
  if (spx_cli_solve_load(a->file, m)) return spx_cli_fail("solve");
  if ((*m)->nrows != (*m)->ncols) {
    fprintf(stderr, "spx solve: %s is %lld x %lld; the solvers need a square matrix\n", a->file,
            (long long)(*m)->nrows, (long long)(*m)->ncols);
    return 1;
  }
  if (!(*b = (double *)malloc(sizeof **b * (size_t)((*m)->nrows + 1))) || spx_cli_solve_rhs(*m, a->ones, *b)) {
    fprintf(stderr, "spx solve: out of memory\n");
    return 1;
  }
  return 0;
}

/* What each rank reports (gathered on rank 0): SOLVE_MPI_FIELDS doubles. */
enum { F_ROWS, F_NNZ, F_GHOSTS, F_HALO_BYTES, F_SOLVE_MS, F_WAIT_MS, F_REDUCE_MS, F_ITER_US, F_SPMV_US, F_ALONE_US,
       F_AGREE_US, F_HALO_US, F_AMG_MS, F_AMG_LEVELS, F_AMG_OC, F_AMG_GC, F_AMG_COARSE, F_AMG_CYCLES,
       SOLVE_MPI_FIELDS };

/* The halo's exposed share of one SpMV on rank q's numbers: the distributed SpMV less the two
 * blocks alone and less the call's two status agreements; overlap = 1 - exposed / the halo's time. */
static double solve_mpi_exposed(const double *f) {
  double e = f[F_SPMV_US] - f[F_ALONE_US] - f[F_AGREE_US];
  return e > 0 ? e : 0;
}
static double solve_mpi_overlap(const double *f) {
  double o = f[F_HALO_US] > 0 ? 1 - solve_mpi_exposed(f) / f[F_HALO_US] : 1;
  return o < 0 ? 0 : o;
}

/* With --precond amg, what the preconditioner is: the cycle, the smoother, the sweeps, symmetric or not. */
static void solve_mpi_amg_line(const solve_mpi_args *a, const spx_dist_amg_info *ai) {
  printf("  preconditioner  AMG blocks: one %s-cycle of each rank's hierarchy of its local block (block Jacobi), "
         "smoother %s, sweeps %d/%d%s; slowest setup %.2f ms\n", spx_amg_cycle_type_name(a->ao.cycle),
         spx_amg_smoother_name(a->ao.smoother), a->ao.pre_sweeps, a->ao.post_sweeps,
         ai->symmetric ? ", symmetric" : ", NOT symmetric (CG assumes it: prefer --method bicgstab)", ai->max_setup_ms);
}

/* Rank 0's report: the global result, then one line per rank. ai: rank 0's AMG blocks' info (with
 * --precond amg, else NULL). */
static void solve_mpi_print(const solve_mpi_args *a, const spx_solve_report *r, const spx_dist_info *in, int size,
                            const double *rows, double wall_ms, const spx_dist_amg_info *ai) {
  const char *be = in->backend == SPX_BACKEND_CUDA ? "cuda" : "host";
  double halo = 0; /* every rank's halo bytes per SpMV: what the partition costs */
  int q;
  for (q = 0; q < size; q++) halo += rows[SOLVE_MPI_FIELDS * q + F_HALO_BYTES];
  if (a->json) {
    spx_cli_json_printf(stdout, "{\"matrix\": ");
    spx_cli_json_str(stdout, a->file);
    spx_cli_json_printf(stdout, ", \"ranks\": %d, \"backend\": \"%s\", \"halo_ipc\": %d, \"partition\": \"%s\", \"rows\": %lld, "
                        "\"method\": \"%s\", \"precond\": \"%s\", \"iterations\": %lld, \"rel_resid\": %.6g, "
                        "\"true_rel_resid\": %.6g, \"wall_ms\": %.6g, \"halo_bytes_total\": %.0f, ", size, be,
                        in->halo_ipc, spx_dist_partition_name(in->partition), (long long)in->n, r->method,
                        ai ? "amg" : "none", (long long)r->iterations, r->rel_resid, r->true_rel_resid, wall_ms, halo);
    if (ai)
      spx_cli_json_printf(stdout, "\"amg\": {\"cycle\": \"%s\", \"smoother\": \"%s\", \"pre_sweeps\": %d, "
                          "\"post_sweeps\": %d, \"symmetric\": %d, \"max_setup_ms\": %.6g}, ",
                          spx_amg_cycle_type_name(a->ao.cycle), spx_amg_smoother_name(a->ao.smoother), a->ao.pre_sweeps,
                          a->ao.post_sweeps, ai->symmetric, ai->max_setup_ms);
    printf("\"per_rank\": [");
    for (q = 0; q < size; q++) {
      const double *f = rows + SOLVE_MPI_FIELDS * q;
      spx_cli_json_printf(stdout, "%s{\"rows\": %.0f, \"nnz\": %.0f, \"ghosts\": %.0f, \"halo_bytes\": %.0f, "
                          "\"solve_ms\": %.6g, \"per_iter_us\": %.6g, \"halo_wait_ms\": %.6g, \"reduce_ms\": %.6g",
                          q ? ", " : "", f[F_ROWS], f[F_NNZ], f[F_GHOSTS], f[F_HALO_BYTES], f[F_SOLVE_MS], f[F_ITER_US],
                          f[F_WAIT_MS], f[F_REDUCE_MS]);
      if (ai)
        spx_cli_json_printf(stdout, ", \"amg_setup_ms\": %.6g, \"amg_levels\": %.0f, \"amg_operator_complexity\": %.6g, "
                            "\"amg_grid_complexity\": %.6g, \"amg_coarse_rows\": %.0f, \"amg_cycles\": %.0f",
                            f[F_AMG_MS], f[F_AMG_LEVELS], f[F_AMG_OC], f[F_AMG_GC], f[F_AMG_COARSE], f[F_AMG_CYCLES]);
      if (a->spmv > 0)
        spx_cli_json_printf(stdout, ", \"spmv_us\": %.6g, \"alone_us\": %.6g, \"agree_us\": %.6g, \"halo_us\": %.6g, "
                            "\"exposed_us\": %.6g, \"overlap\": %.6g", f[F_SPMV_US], f[F_ALONE_US], f[F_AGREE_US],
                            f[F_HALO_US], solve_mpi_exposed(f), solve_mpi_overlap(f));
      printf("}");
    }
    printf("]}\n");
    return;
  }
  printf("spx solve %s: %lld rows on %d ranks (%s backend%s, %s partition), %s%s, rtol %g\n", a->file,
         (long long)in->n, size, be, in->halo_ipc ? ", the halo GPU to GPU over CUDA IPC" : "",
         spx_dist_partition_name(in->partition), r->method, ai ? " + amg blocks" : "", a->tol);
  printf("  %s\n  iterations      %lld, ||r||/||b|| %.3g (recomputed %.3g)\n  end to end      %.2f ms wall "
         "(scatter, plans, %ssolve; rank 0)\n", r->message, (long long)r->iterations, r->rel_resid, r->true_rel_resid,
         wall_ms, ai ? "AMG setup, " : "");
  if (ai) solve_mpi_amg_line(a, ai);
  printf("  halo            %.0f bytes per SpMV, all ranks\n", halo);
  printf("  rank      rows   nonzeros   ghosts  halo bytes/SpMV   solve ms  us/iter  halo wait ms  sums ms%s\n",
         ai ? "  amg setup ms  levels  coarse rows  op. complexity" : "");
  for (q = 0; q < size; q++) {
    const double *f = rows + SOLVE_MPI_FIELDS * q;
    printf("  %4d %9.0f %10.0f %8.0f %17.0f %10.2f %8.1f %13.2f %8.2f", q, f[F_ROWS], f[F_NNZ], f[F_GHOSTS],
           f[F_HALO_BYTES], f[F_SOLVE_MS], f[F_ITER_US], f[F_WAIT_MS], f[F_REDUCE_MS]);
    if (ai) printf(" %13.2f %7.0f %12.0f %15.3f", f[F_AMG_MS], f[F_AMG_LEVELS], f[F_AMG_COARSE], f[F_AMG_OC]);
    printf("\n");
  }
  if (a->spmv <= 0) return;
  printf("  SpMV (%lld each, us): distributed = the two blocks alone + the status agreements + the exposed halo\n",
         (long long)a->spmv);
  printf("  rank  distributed    alone  agreements  halo (host path)  exposed  overlap\n");
  for (q = 0; q < size; q++) {
    const double *f = rows + SOLVE_MPI_FIELDS * q;
    printf("  %4d %12.2f %8.2f %11.2f %17.2f %8.2f %7.0f%%\n", q, f[F_SPMV_US], f[F_ALONE_US], f[F_AGREE_US],
           f[F_HALO_US], solve_mpi_exposed(f), 100 * solve_mpi_overlap(f));
  }
}

spx_status spx_cli_mpi_context(int host, spx_context **ctx) {
  spx_context_options co;
  MPI_Comm node;
  int nrank = 0, gpus = host ? 0 : spx_device_count(), least = 0;
  MPI_Allreduce(&gpus, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  memset(&co, 0, sizeof co);
  co.backend = least > 0 ? SPX_BACKEND_CUDA : SPX_BACKEND_HOST;
  if (least > 0 && MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_free(&node);
    co.device = nrank % gpus;
  }
  spx_clear_error();
  return spx_context_create(&co, ctx);
}

/* Device (or host) vectors of n values for the SpMV timing; 1 on failure. */
static int solve_mpi_vec(spx_context *ctx, int64_t n, const double *init, void **out) {
  size_t bytes = sizeof(double) * (size_t)(n + 1);
  *out = NULL;
  if (spx_context_backend(ctx) != SPX_BACKEND_CUDA) {
    double *h = (double *)calloc((size_t)(n + 1), sizeof *h);
    if (h && init) memcpy(h, init, sizeof(double) * (size_t)n);
    *out = h;
    return !h;
  } else {
    spx_devptr p = 0;
    if (spx_device_alloc(ctx, bytes, &p) || spx_device_memset(ctx, p, 0, bytes) ||
        (init && n > 0 && spx_device_upload(ctx, p, init, sizeof(double) * (size_t)n))) {
      if (p) spx_device_free(ctx, p);
      return 1;
    }
    *out = (void *)(uintptr_t)p;
    return 0;
  }
}
static void solve_mpi_vec_free(spx_context *ctx, void *v) {
  if (spx_context_backend(ctx) == SPX_BACKEND_CUDA) spx_device_free(ctx, (spx_devptr)(uintptr_t)v);
  else free(v);
}

/* --spmv N: the distributed SpMV, the two blocks alone (no messages) and the status agreements,
 * each N times after a warm-up, every rank starting together; f gets the per-call times (us). */
static int solve_mpi_spmv(const solve_mpi_args *a, spx_dist_matrix *d, spx_context *ctx, const double *xl, double *f) {
  spx_dist_info i0, i1;
  spx_plan *loc = spx_dist_local_plan(d), *gho = spx_dist_ghost_plan(d);
  void *x = NULL, *y = NULL, *g = NULL;
  int64_t k, n = a->spmv;
  int bad = 0, any = 0, one = 1, all = 0;
  double t0;
  spx_dist_get_info(d, &i0);
  bad = solve_mpi_vec(ctx, i0.nlocal, xl, &x) || solve_mpi_vec(ctx, i0.nlocal, NULL, &y) ||
        solve_mpi_vec(ctx, i0.nghost, NULL, &g);
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) goto done;
  for (k = 0; k < 3 && !bad; k++) bad = spx_dist_spmv(d, 1.0, x, 0.0, y) != SPX_OK;
  bad |= spx_context_synchronize(ctx) != SPX_OK;
  spx_dist_get_info(d, &i0);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (k = 0; k < n && !bad; k++) bad = spx_dist_spmv(d, 1.0, x, 0.0, y) != SPX_OK;
  bad |= spx_context_synchronize(ctx) != SPX_OK;
  f[F_SPMV_US] = 1e6 * (MPI_Wtime() - t0) / (double)n;
  spx_dist_get_info(d, &i1);
  f[F_HALO_US] = 1e3 * (i1.halo_ms - i0.halo_ms) / (double)n;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (k = 0; k < n && !bad; k++) {
    if (loc) bad |= spx_plan_spmv(loc, 1.0, x, 0.0, y) != SPX_OK;
    if (gho) bad |= spx_plan_spmv(gho, 1.0, g, 1.0, y) != SPX_OK;
  }
  bad |= spx_context_synchronize(ctx) != SPX_OK;
  f[F_ALONE_US] = 1e6 * (MPI_Wtime() - t0) / (double)n;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (k = 0; k < n; k++) { /* spx_dist_spmv's entry and exit agreements */
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  f[F_AGREE_US] = 1e6 * (MPI_Wtime() - t0) / (double)n;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
done:
  if (x) solve_mpi_vec_free(ctx, x);
  if (y) solve_mpi_vec_free(ctx, y);
  if (g) solve_mpi_vec_free(ctx, g);
  if (any && !a->json) fprintf(stderr, "spx solve: --spmv timing failed: %s\n", spx_last_error());
  return any;
}

/* The solve itself, between MPI_Init and MPI_Finalize; every rank returns the same status. */
static int solve_mpi_run(const solve_mpi_args *a, int rank, int size) {
  spx_csr *m = NULL;
  double *b = NULL, *bl = NULL, *x = NULL, *rows = NULL, mine[SOLVE_MPI_FIELDS], t0 = MPI_Wtime();
  int bad = 0, any = 0;
  spx_context *ctx = NULL;
  spx_dist_options o;
  spx_dist_matrix *d = NULL;
  spx_dist_info in;
  spx_dist_amg *M = NULL;
  spx_dist_amg_info ai;
  spx_plan_options apo;
  spx_solve_options so;
  spx_solve_report r;
  spx_status st;
  memset(mine, 0, sizeof mine);
  memset(&ai, 0, sizeof ai);
  spx_dist_options_default(&o);
  o.plan.force = a->format;
  o.keep_local = a->amg; /* the local block, what each rank's hierarchy is set up on */
  if (spx_plan_strategy_parse(a->strategy, &o.plan.strategy)) bad = rank ? 1 : spx_cli_usage("solve", "%s", spx_last_error());
  if (!bad && spx_dist_partition_parse(a->partition, &o.partition))
    bad = rank ? 1 : spx_cli_usage("solve", "--partition: %s", spx_last_error());
  if (!bad && spx_cli_mpi_context(a->host, &ctx)) bad = spx_cli_fail("solve");
  if (!bad) {
    o.ctx = ctx;
    o.plan.backend = spx_context_backend(ctx);
  }
  if (!bad && rank == 0) bad = solve_mpi_load(a, &m, &b);
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) goto done;
  if ((st = spx_dist_scatter(MPI_COMM_WORLD, 0, m, &o, &d))) { bad = spx_cli_fail("solve"); goto done; }
  spx_csr_destroy(m); /* rank 0's global copy: the ranks hold their rows now */
  m = NULL;
  if (a->amg) { /* every level's plan tuned by --strategy (a timing one runs as model unless --plan-trials) */
    spx_amg_options ao = a->ao;
    apo = o.plan;
    apo.force = NULL; /* --format is the distributed matrix's */
    apo.eager = 1;
    ao.plan = &apo;
    if ((st = spx_dist_amg_create(d, &ao, &M))) { bad = spx_cli_fail("solve"); goto done; }
    spx_dist_amg_get_info(M, &ai);
  }
  spx_dist_get_info(d, &in);
  bl = (double *)malloc(sizeof *bl * (size_t)(in.nlocal + 1)); x = (double *)calloc((size_t)(in.nlocal + 1), sizeof *x);
  rows = (double *)malloc(sizeof *rows * SOLVE_MPI_FIELDS * (size_t)size);
  bad = !bl || !x || !rows;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) { bad = 1; fprintf(stderr, "spx solve: out of memory\n"); goto done; }
  /* b in the matrix's original order: the ranks' parts follow the partition's (permuted) rows */
  if ((st = spx_dist_scatter_vector(d, 0, b, bl))) { bad = spx_cli_fail("solve"); goto done; }
  spx_solve_options_default(&so);
  so.rtol = a->tol;
  so.maxit = a->maxit;
  so.host_vectors = 1; /* b and x are this rank's host arrays on either backend */
  if (M) {
    so.precond = spx_dist_amg_precond;
    so.precond_data = M;
  }
  st = !strcmp(a->method, "bicgstab") ? spx_dist_solve_bicgstab(d, bl, x, &so, &r)
       : !strcmp(a->method, "pcg")    ? spx_dist_solve_pcg_jacobi(d, bl, x, &so, &r)
                                      : spx_dist_solve_cg(d, bl, x, &so, &r);
  spx_dist_get_info(d, &in);
  mine[F_ROWS] = (double)in.nlocal; mine[F_NNZ] = (double)(in.nnz_local + in.nnz_ghost); mine[F_GHOSTS] = (double)in.nghost;
  mine[F_HALO_BYTES] = (double)in.halo_bytes; mine[F_SOLVE_MS] = r.solve_ms; mine[F_WAIT_MS] = in.halo_wait_ms;
  mine[F_REDUCE_MS] = in.reduce_ms; mine[F_ITER_US] = r.per_iter_us;
  if (M) {
    spx_dist_amg_get_info(M, &ai);
    mine[F_AMG_MS] = ai.setup_ms; mine[F_AMG_LEVELS] = ai.levels; mine[F_AMG_OC] = ai.operator_complexity;
    mine[F_AMG_GC] = ai.grid_complexity; mine[F_AMG_COARSE] = (double)ai.coarse_rows; mine[F_AMG_CYCLES] = (double)ai.cycles;
  }
  bad = st != SPX_OK;
  if (st && rank == 0) fprintf(stderr, "spx solve: %s\n", r.message[0] ? r.message : spx_last_error());
  if (!st && a->spmv > 0) bad = solve_mpi_spmv(a, d, ctx, x, mine);
  MPI_Gather(mine, SOLVE_MPI_FIELDS, MPI_DOUBLE, rows, SOLVE_MPI_FIELDS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) solve_mpi_print(a, &r, &in, size, rows, 1e3 * (MPI_Wtime() - t0), M ? &ai : NULL);
done:
  spx_dist_amg_destroy(M); /* before its matrix */
  spx_dist_destroy(d);
  spx_context_destroy(ctx);
  spx_csr_destroy(m);
  free(b); free(bl); free(x); free(rows);
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

int spx_cli_solve_mpi(int argc, char **argv, int *handled) {
  int rank = 0, size = 1, rc, init = 0;
  solve_mpi_args a;
  *handled = spx_cli_mpi_launched();
  if (!*handled) return 0;
  MPI_Initialized(&init);
  if (!init && MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "spx solve: MPI_Init failed under an MPI launcher\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rc = solve_mpi_parse(argc, argv, rank, &a);
  if (!rc) rc = solve_mpi_run(&a, rank, size);
  if (!init) MPI_Finalize();
  return rc;
}
#else
/* Built without MPI: spx solve is the one-process command only. */
typedef int spx_cli_solve_mpi_absent;
#endif
