/* SPDX-License-Identifier: BSD-3-Clause */
/* spx stencil under mpirun (built where GN found MPI: SPX_CLI_MPI): the grid split into z-slabs over
 * the ranks (spx_dist_stencil_run in spx/dist.h), each rank on a GPU of its node where every rank
 * has one, else on the host backend (--host asks for it). Each rank fills its planes of the grid
 * the one-process command fills (a hash of the global cell index) and runs; rank 0 prints every
 * rank's planes, layout, time, rate, halo bytes and exchange time beside the total rate. --check
 * gathers the result on rank 0 and compares it bit for bit with a one-process run there, on its
 * context with the same options. Without an MPI launcher in the environment spx stencil is the
 * one-process command, and this file is not entered. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2 */
#include "cli.h"

#if defined(SPX_CLI_MPI)
#include <spx/dist.h>

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --check gathers the grid on rank 0: at most this many bytes (MPI counts are int). */
#define STM_CHECK_MAX ((int64_t)1 << 30)

/* The options, parsed on every rank; only rank 0's usage messages reach stderr. */
static int stm_parse(int argc, char **argv, int rank, spx_cli_stencil_args *a) {
  int keep = -1, rc;
  if (rank) { /* the other ranks parse the same words: silence their copies of the messages */
    int null = open("/dev/null", O_WRONLY);
    fflush(stderr);
    keep = dup(2);
    if (null >= 0) { dup2(null, 2); close(null); }
  }
  rc = spx_cli_stencil_parse(argc, argv, a);
  if (!rc && a->sweep) rc = spx_cli_usage("stencil", "--sweep is a one-process run; under mpirun give --n");
  if (!rc && (a->json_file || a->csv_file || a->svg_file))
    rc = spx_cli_usage("stencil", "--json-file, --csv and --svg are for --sweep; under mpirun --json prints JSON");
  if (!rc && a->check && (double)a->n[0] * a->n[1] * a->n[2] * SPX_DTYPE_SIZE(a->dtype) > (double)STM_CHECK_MAX)
    rc = spx_cli_usage("stencil", "--check under mpirun gathers the grid on rank 0: at most 1 GiB of it");
  if (keep >= 0) { fflush(stderr); dup2(keep, 2); close(keep); }
  return rc;
}

/* 1 on every rank when bad on any. */
static int stm_any(int bad) {
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

/* What each rank reports (gathered on rank 0): STM_FIELDS doubles. */
enum { F_Z0, F_Z1, F_SPLIT, F_HALO, F_HALO_SENT, F_TOTAL, F_INTERIOR, F_EDGE, F_COPY, F_POST, F_WAIT, F_AGREE,
       F_SETUP, F_GS, F_SLABS, F_TTS, F_METHOD, STM_FIELDS };

static void stm_fields(const spx_dist_stencil_report *r, double *f) {
  f[F_Z0] = (double)r->z0; f[F_Z1] = (double)r->z1; f[F_SPLIT] = r->split; f[F_HALO] = (double)r->halo_bytes;
  f[F_HALO_SENT] = (double)r->halo_bytes_sent; f[F_TOTAL] = r->total_ms; f[F_INTERIOR] = r->interior_ms;
  f[F_EDGE] = r->edge_ms; f[F_COPY] = r->copy_ms; f[F_POST] = r->post_ms; f[F_WAIT] = r->wait_ms;
  f[F_AGREE] = r->agree_ms; f[F_SETUP] = r->setup_ms; f[F_GS] = r->gstencils;
  f[F_SLABS] = (double)r->local.plan.nslabs; f[F_TTS] = (double)r->local.plan.tts; f[F_METHOD] = r->local.plan.method;
}

/* The ranks' halo bytes per exchange and in all, and the sum of their rates. */
typedef struct stm_sums { double halo, sent, gs; } stm_sums;
static stm_sums stm_sum(const double *rows, int size) {
  stm_sums s = {0, 0, 0};
  int q;
  for (q = 0; q < size; q++) {
    s.halo += rows[STM_FIELDS * q + F_HALO];
    s.sent += rows[STM_FIELDS * q + F_HALO_SENT];
    s.gs += rows[STM_FIELDS * q + F_GS];
  }
  return s;
}

/* The --check verdict on rank 0: -1 not asked, 0 mismatch, 1 bitwise equal; first differing cell. */
typedef struct stm_check { int ok; int64_t first; double maxrel; } stm_check;

static void stm_print_json(const spx_cli_stencil_args *a, const spx_dist_stencil_report *r, const char *be,
                           const double *rows, int size, const stm_check *c) {
  const stm_sums s = stm_sum(rows, size);
  int q;
  spx_cli_json_printf(stdout, "{\"n\": [%lld, %lld, %lld], \"type\": \"%s\", \"steps\": %lld, \"ranks\": %d, "
                      "\"backend\": \"%s\", \"method\": \"%s\", \"interval\": %lld, \"exchanges\": %lld, "
                      "\"overlap\": %s, \"total_ms\": %.3f, \"gstencils\": %.4f, \"sum_rank_gstencils\": %.4f, "
                      "\"halo_bytes_per_exchange\": %.0f, \"halo_bytes_total\": %.0f, \"per_rank\": [",
                      (long long)a->n[0], (long long)a->n[1], (long long)a->n[2], spx_dtype_name(a->dtype),
                      (long long)a->steps, size, be, spx_stencil_method_name(a->method), (long long)r->interval,
                      (long long)r->exchanges, a->no_overlap ? "false" : "true", r->max_total_ms, r->total_gstencils,
                      s.gs, s.halo, s.sent);
  for (q = 0; q < size; q++) {
    const double *f = rows + STM_FIELDS * q;
    spx_cli_json_printf(stdout, "%s{\"z0\": %.0f, \"z1\": %.0f, \"split\": %.0f, \"local_method\": \"%s\", "
                        "\"local_slabs\": %.0f, \"local_tts\": %.0f, \"total_ms\": %.3f, \"gstencils\": %.4f, "
                        "\"interior_ms\": %.3f, \"edge_ms\": %.3f, \"copy_ms\": %.3f, \"post_ms\": %.3f, "
                        "\"wait_ms\": %.3f, \"agree_ms\": %.3f, \"setup_ms\": %.3f, \"halo_bytes_per_exchange\": %.0f, "
                        "\"halo_bytes_sent\": %.0f}", q ? ", " : "", f[F_Z0], f[F_Z1], f[F_SPLIT],
                        spx_stencil_method_name((spx_stencil_method)(int)f[F_METHOD]), f[F_SLABS], f[F_TTS], f[F_TOTAL],
                        f[F_GS], f[F_INTERIOR], f[F_EDGE], f[F_COPY], f[F_POST], f[F_WAIT], f[F_AGREE], f[F_SETUP],
                        f[F_HALO], f[F_HALO_SENT]);
  }
  printf("]");
  if (c->ok >= 0)
    spx_cli_json_printf(stdout, ", \"check\": \"%s\", \"bitwise\": %s, \"max_rel_diff\": %.3g", c->ok ? "match" : "mismatch",
                        c->ok ? "true" : "false", c->maxrel);
  printf("}\n");
}

static void stm_print(const spx_cli_stencil_args *a, const spx_dist_stencil_report *r, const char *be,
                      const double *rows, int size, const stm_check *c) {
  const stm_sums s = stm_sum(rows, size);
  int q;
  if (a->json) { stm_print_json(a, r, be, rows, size, c); return; }
  printf("stencil %lld x %lld x %lld %s, %lld steps on %d ranks (%s), z-slabs; method %s on each; halos every %lld "
         "steps (%lld exchanges)%s\n", (long long)a->n[0], (long long)a->n[1], (long long)a->n[2],
         spx_dtype_name(a->dtype), (long long)a->steps, size, be, spx_stencil_method_name(a->method),
         (long long)r->interval, (long long)r->exchanges, a->no_overlap ? ", each waited for before computing" : "");
  printf("total:   %.2f ms (the slowest rank), %.2f GStencil/s; the ranks' own rates add up to %.2f GStencil/s\n",
         r->max_total_ms, r->total_gstencils, s.gs);
  printf("halo:    %.3f MB per exchange (all ranks), %.3f MB in all\n", s.halo * 1e-6, s.sent * 1e-6);
  printf("rank  planes                layout    local plan           time ms  GStencil/s  interior ms  edges ms  "
         "copies ms  post ms  wait ms  sync ms  setup ms\n");
  for (q = 0; q < size; q++) {
    const double *f = rows + STM_FIELDS * q;
    char planes[32], plan[32];
    snprintf(planes, sizeof planes, f[F_Z1] > f[F_Z0] ? "%.0f..%.0f (%.0f)" : "none", f[F_Z0], f[F_Z1] - 1,
             f[F_Z1] - f[F_Z0]);
    snprintf(plan, sizeof plan, f[F_SLABS] > 0 ? "%s %.0fx, tts %.0f" : "-",
             spx_stencil_method_name((spx_stencil_method)(int)f[F_METHOD]), f[F_SLABS], f[F_TTS]);
    printf("%4d  %-20s  %-8s  %-19s %8.2f %11.2f %12.2f %9.2f %10.2f %8.2f %8.2f %8.2f %9.2f\n", q, planes,
           f[F_Z1] == f[F_Z0] ? "-" : f[F_SPLIT] > 0 ? "split" : "one grid", plan, f[F_TOTAL], f[F_GS], f[F_INTERIOR],
           f[F_EDGE], f[F_COPY], f[F_POST], f[F_WAIT], f[F_AGREE], f[F_SETUP]);
  }
  printf("         split: the halos move while the interior computes, then the edge grids run; wait = the exchange "
         "left after the interior (%s)\n", a->no_overlap ? "--no-overlap: the whole exchange" : "its exposed part; "
         "--no-overlap times it alone");
  if (c->ok >= 0)
    printf("check:   %s (against a one-process run on rank 0: %s%s)\n", c->ok ? "match" : "mismatch",
           c->ok ? "bitwise equal" : "not bitwise", c->ok ? "" : ", see the cell below");
  if (c->ok == 0)
    printf("         first differing cell %lld, max relative difference %.3g\n", (long long)c->first, c->maxrel);
}

/* --check: the planes gathered on rank 0 against a one-process run there. Collective. */
static int stm_check_run(const spx_cli_stencil_args *a, spx_context *ctx, const spx_stencil *p, const void *u,
                         int rank, int size, stm_check *c) {
  const size_t vs = SPX_DTYPE_SIZE(p->dtype);
  const int64_t pb = p->nx * p->ny * (int64_t)vs, cells = p->nx * p->ny * p->nz;
  int *cnt = NULL, *dsp = NULL, q, bad = 0;
  char *got = NULL, *ref = NULL;
  int64_t z0, z1, i;
  spx_stencil_options o;
  c->ok = -1;
  if (rank == 0) {
    cnt = (int *)malloc(sizeof(int) * (size_t)size); dsp = (int *)malloc(sizeof(int) * (size_t)size);
    got = (char *)malloc((size_t)cells * vs);
    ref = (char *)malloc((size_t)cells * vs);
    bad = !cnt || !dsp || !got || !ref;
    for (q = 0; !bad && q < size; q++) {
      spx_dist_stencil_planes(p->nz, size, q, &z0, &z1);
      dsp[q] = (int)(z0 * pb);
      cnt[q] = (int)((z1 - z0) * pb);
    }
  }
  if (stm_any(bad)) { if (rank == 0) fprintf(stderr, "spx stencil --check: out of memory\n"); goto done; }
  spx_dist_stencil_planes(p->nz, size, rank, &z0, &z1);
  MPI_Gatherv(u, (int)((z1 - z0) * pb), MPI_BYTE, got, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    spx_cli_stencil_options(a, a->method, NULL, &o);
    spx_cli_stencil_fill(p, 0, p->nz, ref);
    if (spx_stencil_run(ctx, p, ref, a->steps, &o, NULL)) { bad = spx_cli_fail("stencil --check"); goto done; }
    c->ok = !memcmp(got, ref, (size_t)cells * vs);
    c->first = -1; c->maxrel = 0;
    for (i = 0; !c->ok && i < cells; i++) {
      double x = p->dtype == SPX_FLOAT ? ((float *)got)[i] : ((double *)got)[i];
      double y = p->dtype == SPX_FLOAT ? ((float *)ref)[i] : ((double *)ref)[i];
      double rel = x == y ? 0 : fabs(x - y) / (fabs(y) > 1e-30 ? fabs(y) : 1e-30);
      if (rel != 0 && c->first < 0) c->first = i;
      if (!(rel <= c->maxrel)) c->maxrel = rel; /* NaN too */
    }
    bad = !c->ok;
  }
done:
  free(cnt); free(dsp); free(got); free(ref);
  return stm_any(bad);
}

/* The run itself, between MPI_Init and MPI_Finalize; every rank returns the same exit code. */
static int stm_run(const spx_cli_stencil_args *a, int rank, int size) {
  spx_context *ctx = NULL;
  spx_stencil p;
  spx_dist_stencil_options o;
  spx_dist_stencil_report r;
  double pcie[3] = {0, 0, 0}, mine[STM_FIELDS], *rows = NULL;
  void *u = NULL;
  int64_t z0 = 0, z1 = 0;
  int bad = 0, cuda;
  stm_check c = {-1, -1, 0};
  const char *be;
  if (spx_stencil_init(&p, a->n[0], a->n[1], a->n[2], a->dtype, 0.4, 0.1, 0.1, 0.1))
    bad = rank ? 1 : spx_cli_fail("stencil");
  if (!bad && spx_cli_mpi_context(a->host, &ctx)) bad = spx_cli_fail("stencil");
  if (stm_any(bad)) goto done;
  cuda = spx_context_backend(ctx) == SPX_BACKEND_CUDA;
  be = cuda ? "cuda" : "host";
  if (cuda && spx_stencil_pcie_bandwidth(ctx, (size_t)256 << 20, 3, &pcie[0], &pcie[1], &pcie[2])) {
    spx_clear_error(); /* the plan's estimates then */
    pcie[0] = 0;
  }
  spx_dist_stencil_options_default(&o);
  spx_cli_stencil_options(a, a->method, pcie, &o.local);
  o.interval = a->interval;
  o.no_overlap = a->no_overlap;
  spx_dist_stencil_planes(p.nz, size, rank, &z0, &z1);
  if (spx_dist_stencil_grid_alloc(MPI_COMM_WORLD, ctx, &p, &o.local, &u)) bad = spx_cli_fail("stencil");
  if (!bad && z1 > z0) spx_cli_stencil_fill(&p, z0, z1, u);
  if (!bad && rank == 0 && !(rows = (double *)malloc(sizeof *rows * STM_FIELDS * (size_t)size))) bad = 1;
  if (stm_any(bad)) { bad = 1; goto done; }
  if (!a->json && rank == 0) spx_cli_progress("%d ranks, %s, %lld steps", size, spx_stencil_method_name(a->method), (long long)a->steps);
  MPI_Barrier(MPI_COMM_WORLD);
  if (spx_dist_stencil_run(MPI_COMM_WORLD, ctx, &p, u, a->steps, &o, &r)) { /* the same status on every rank */
    if (rank == 0) spx_cli_progress_done();
    bad = rank ? 1 : spx_cli_fail("stencil");
    goto done;
  }
  if (rank == 0) spx_cli_progress_done();
  stm_fields(&r, mine);
  MPI_Gather(mine, STM_FIELDS, MPI_DOUBLE, rows, STM_FIELDS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (a->check) bad = stm_check_run(a, ctx, &p, u, rank, size, &c);
  if (rank == 0) stm_print(a, &r, be, rows, size, &c);
done:
  spx_stencil_grid_free(ctx, u);
  spx_context_destroy(ctx);
  free(rows);
  return stm_any(bad);
}

int spx_cli_stencil_mpi(int argc, char **argv, int *handled) {
  int rank = 0, size = 1, rc, init = 0, level = 0;
  spx_cli_stencil_args a;
  *handled = spx_cli_mpi_launched();
  if (!*handled) return 0;
  MPI_Initialized(&init);
  /* FUNNELED: the interior computes on a thread of spx's own while this one calls MPI */
  if (!init && MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level) != MPI_SUCCESS) {
    fprintf(stderr, "spx stencil: MPI_Init failed under an MPI launcher\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rc = stm_parse(argc, argv, rank, &a);
  if (!rc) rc = stm_run(&a, rank, size);
  if (!init) MPI_Finalize();
  return rc;
}
#else
/* Built without MPI: spx stencil is the one-process command only. */
typedef int spx_cli_stencil_mpi_absent;
#endif
