/* SPDX-License-Identifier: BSD-3-Clause */
/* spx solve under mpirun (built where GN found MPI: SPX_CLI_MPI): the matrix read on rank 0 and
 * scattered by rows (spx/dist.h), b = A 1 (or ones) likewise, the distributed solver, and a report
 * of every rank's rows, halo and time beside the global iterations and residuals. The distributed
 * solvers run on the host backend. Without an MPI launcher in the environment spx solve is the
 * one-process command, and this file is not entered. */
#include "cli.h"

#if defined(SPX_CLI_MPI)
#include <spx/dist.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether an MPI launcher started this process (Open MPI, MPICH/Hydra, PMIx). */
static int solve_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

typedef struct solve_mpi_args {
  const char *file, *method, *format, *strategy;
  double tol;
  int64_t maxit;
  int ones, json;
} solve_mpi_args;

/* The options the distributed solve takes; anything else is a usage error (on rank 0's stderr). */
static int solve_mpi_parse(int argc, char **argv, int rank, solve_mpi_args *a) {
  int k;
  const char *v;
  memset(a, 0, sizeof *a);
  a->method = "cg"; a->strategy = "auto"; a->tol = 1e-8; a->maxit = 10000;
  for (k = 1; k < argc; k++) {
    if ((v = spx_cli_opt(argc, argv, &k, "--method"))) a->method = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--format"))) a->format = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--strategy"))) a->strategy = v;
    else if ((v = spx_cli_opt(argc, argv, &k, "--tol"))) {
      if (!spx_cli_number("solve", "--tol", v, "a positive number", 0, 0, 1e300, &a->tol)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &k, "--maxit"))) {
      if (!spx_cli_int("solve", "--maxit", v, &a->maxit)) return 2;
    } else if (!strcmp(argv[k], "--ones")) a->ones = 1;
    else if (!strcmp(argv[k], "--json")) a->json = 1;
    else if (!strcmp(argv[k], "--host")) continue; /* the distributed solvers run on the host anyway */
    else if (argv[k][0] == '-')
      return rank ? 2 : spx_cli_usage("solve", "under mpirun spx solve takes --method cg|pcg|bicgstab, --format, "
                                      "--strategy, --tol, --maxit, --ones, --json and --host, not '%s'", argv[k]);
    else if (!a->file) a->file = argv[k];
    else return rank ? 2 : spx_cli_usage("solve", "one matrix only ('%s' and '%s')", a->file, argv[k]);
  }
  if (!a->file) return rank ? 2 : spx_cli_usage("solve", "no matrix given");
  if (strcmp(a->method, "cg") && strcmp(a->method, "pcg") && strcmp(a->method, "bicgstab"))
    return rank ? 2 : spx_cli_usage("solve", "under mpirun --method is cg, pcg or bicgstab, not '%s'", a->method);
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

/* Rank 0's report: the global result, then one line per rank. */
static void solve_mpi_print(const solve_mpi_args *a, const spx_solve_report *r, const spx_dist_info *in, int size,
                            const double *rows, double wall_ms) {
  int q;
  if (a->json) {
    spx_cli_json_printf(stdout, "{\"matrix\": ");
    spx_cli_json_str(stdout, a->file);
    spx_cli_json_printf(stdout, ", \"ranks\": %d, \"rows\": %lld, \"method\": \"%s\", \"iterations\": %lld, "
                        "\"rel_resid\": %.6g, \"true_rel_resid\": %.6g, \"wall_ms\": %.6g, \"per_rank\": [",
                        size, (long long)in->n, r->method, (long long)r->iterations, r->rel_resid, r->true_rel_resid, wall_ms);
    for (q = 0; q < size; q++)
      spx_cli_json_printf(stdout, "%s{\"rows\": %.0f, \"nnz\": %.0f, \"ghosts\": %.0f, \"halo_bytes\": %.0f, "
                          "\"solve_ms\": %.6g, \"halo_wait_ms\": %.6g, \"reduce_ms\": %.6g}", q ? ", " : "",
                          rows[7 * q], rows[7 * q + 1], rows[7 * q + 2], rows[7 * q + 3], rows[7 * q + 4],
                          rows[7 * q + 5], rows[7 * q + 6]);
    printf("]}\n");
    return;
  }
  printf("spx solve %s: %lld rows on %d ranks (host backend), %s, rtol %g\n", a->file, (long long)in->n, size,
         r->method, a->tol);
  printf("  %s\n  iterations      %lld, ||r||/||b|| %.3g (recomputed %.3g)\n  end to end      %.2f ms wall "
         "(scatter, plans, solve; rank 0)\n", r->message, (long long)r->iterations, r->rel_resid, r->true_rel_resid,
         wall_ms);
  printf("  rank      rows   nonzeros   ghosts  halo bytes/SpMV   solve ms  halo wait ms  sums ms\n");
  for (q = 0; q < size; q++)
    printf("  %4d %9.0f %10.0f %8.0f %17.0f %10.2f %13.2f %8.2f\n", q, rows[7 * q], rows[7 * q + 1],
           rows[7 * q + 2], rows[7 * q + 3], rows[7 * q + 4], rows[7 * q + 5], rows[7 * q + 6]);
}

/* The solve itself, between MPI_Init and MPI_Finalize; every rank returns the same status. */
static int solve_mpi_run(const solve_mpi_args *a, int rank, int size) {
  spx_csr *m = NULL;
  double *b = NULL, *bl = NULL, *x = NULL, *rows = NULL, mine[7], t0 = MPI_Wtime();
  int *cnt = NULL, *dsp = NULL, q, bad = 0, any = 0;
  spx_dist_options o;
  spx_dist_matrix *d = NULL;
  spx_dist_info in;
  spx_solve_options so;
  spx_solve_report r;
  spx_status st;
  spx_dist_options_default(&o);
  o.plan.backend = SPX_BACKEND_HOST;
  o.plan.force = a->format;
  if (spx_plan_strategy_parse(a->strategy, &o.plan.strategy)) bad = rank ? 1 : spx_cli_usage("solve", "%s", spx_last_error());
  if (!bad && rank == 0) bad = solve_mpi_load(a, &m, &b);
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) goto done;
  if ((st = spx_dist_scatter(MPI_COMM_WORLD, 0, m, &o, &d))) { bad = spx_cli_fail("solve"); goto done; }
  spx_dist_get_info(d, &in);
  cnt = (int *)malloc(sizeof *cnt * (size_t)size); dsp = (int *)malloc(sizeof *dsp * (size_t)size);
  bl = (double *)malloc(sizeof *bl * (size_t)(in.nlocal + 1)); x = (double *)calloc((size_t)(in.nlocal + 1), sizeof *x);
  rows = (double *)malloc(sizeof *rows * 7 * (size_t)size);
  bad = !cnt || !dsp || !bl || !x || !rows;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) { bad = 1; fprintf(stderr, "spx solve: out of memory\n"); goto done; }
  for (q = 0; q < size; q++) {
    dsp[q] = (int)spx_dist_row_start(d, q);
    cnt[q] = (int)(spx_dist_row_start(d, q + 1) - dsp[q]);
  }
  MPI_Scatterv(b, cnt, dsp, MPI_DOUBLE, bl, (int)in.nlocal, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  spx_solve_options_default(&so);
  so.rtol = a->tol;
  so.maxit = a->maxit;
  st = !strcmp(a->method, "bicgstab") ? spx_dist_solve_bicgstab(d, bl, x, &so, &r)
       : !strcmp(a->method, "pcg")    ? spx_dist_solve_pcg_jacobi(d, bl, x, &so, &r)
                                      : spx_dist_solve_cg(d, bl, x, &so, &r);
  spx_dist_get_info(d, &in);
  mine[0] = (double)in.nlocal; mine[1] = (double)(in.nnz_local + in.nnz_ghost); mine[2] = (double)in.nghost;
  mine[3] = (double)in.halo_bytes; mine[4] = r.solve_ms; mine[5] = in.halo_wait_ms; mine[6] = in.reduce_ms;
  MPI_Gather(mine, 7, MPI_DOUBLE, rows, 7, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) solve_mpi_print(a, &r, &in, size, rows, 1e3 * (MPI_Wtime() - t0));
  bad = st != SPX_OK;
  if (st && rank == 0) fprintf(stderr, "spx solve: %s\n", r.message[0] ? r.message : spx_last_error());
done:
  spx_dist_destroy(d);
  spx_csr_destroy(m);
  free(b); free(bl); free(x); free(rows); free(cnt); free(dsp);
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

int spx_cli_solve_mpi(int argc, char **argv, int *handled) {
  int rank = 0, size = 1, rc, init = 0;
  solve_mpi_args a;
  *handled = solve_mpi_launched();
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
