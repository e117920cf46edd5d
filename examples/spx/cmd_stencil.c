/* SPDX-License-Identifier: BSD-3-Clause */
/* spx stencil: the 3-D 7-point diffusion stencil, in core or larger than GPU memory.
 *
 * One run: GStencil/s, the time split (kernel, H2D, D2H, device copies), the plan (slab size, TTS
 * and why), the PCIe bandwidth measured in the same run, the model's prediction and the bound
 * min(in-core rate, TTS x PCIe / bytes per cell each way) beside the measured rate; --check
 * compares with the host reference (small grids) or an in-core GPU run (checksum and cells).
 *
 * --sweep: a Figure-11-like dataset (GStencil/s against the domain edge for normal, mm, mmt, mmtb,
 * overlap, and incore where it fits) under one budget: --json/--csv/--svg files. */
#define _POSIX_C_SOURCE 200809L /* strtok_r: declared in every toolchain, not only where -fopenmp implies it */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef spx_cli_stencil_args st_args;

/* Deterministic values in [0, 1) (a hash of the global index), so that runs of the same size
 * compare, and the ranks of a distributed run fill their planes alike. */
void spx_cli_stencil_fill(const spx_stencil *p, int64_t z0, int64_t z1, void *g) {
  const int64_t first = z0 * p->nx * p->ny, n = (z1 - z0) * p->nx * p->ny;
  int64_t i;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (i = 0; i < n; i++) {
    uint64_t h = (uint64_t)(first + i) * 0x9E3779B97F4A7C15ull;
    double v;
    h ^= h >> 29; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 32;
    v = (double)(h >> 11) * (1.0 / 9007199254740992.0);
    if (p->dtype == SPX_FLOAT) ((float *)g)[i] = (float)v;
    else ((double *)g)[i] = v;
  }
}
static void st_fill(const spx_stencil *p, void *g) { spx_cli_stencil_fill(p, 0, p->nz, g); }

/* GStencil/s over a run's kernel time (0 when none was timed). */
static double st_kernel_gs(const spx_stencil *p, int64_t steps, double kernel_ms) {
  return kernel_ms > 0 ? 1e-6 * (double)p->nx * (double)p->ny * (double)p->nz * (double)steps / kernel_ms : 0;
}

/* Largest relative difference over the cells, bitwise equality, and both checksums. */
typedef struct st_cmp { double maxrel, sum_a, sum_b; int bitwise; } st_cmp;
static st_cmp st_compare(const spx_stencil *p, const void *a, const void *b) {
  int64_t n = p->nx * p->ny * p->nz, i;
  st_cmp c = {0, 0, 0, 1};
  c.bitwise = !memcmp(a, b, (size_t)n * SPX_DTYPE_SIZE(p->dtype));
  for (i = 0; i < n; i++) {
    double x = p->dtype == SPX_FLOAT ? ((const float *)a)[i] : ((const double *)a)[i];
    double y = p->dtype == SPX_FLOAT ? ((const float *)b)[i] : ((const double *)b)[i];
    double r = fabs(x - y) / (fabs(y) > 1e-30 ? fabs(y) : 1e-30);
    if (x != x || y != y) r = INFINITY;
    if (r > c.maxrel) c.maxrel = r;
    c.sum_a += x; c.sum_b += y;
  }
  return c;
}

void spx_cli_stencil_options(const st_args *a, spx_stencil_method m, const double pcie[3], spx_stencil_options *o) {
  memset(o, 0, sizeof *o);
  o->method = m;
  o->budget = a->budget;
  o->depth = m == SPX_STENCIL_NORMAL || m == SPX_STENCIL_MM ? 0 : a->depth;
  o->tts = m == SPX_STENCIL_NORMAL ? 0 : a->tts;
  o->slab = a->slab;
  o->bx = a->bx; o->by = a->by;
  o->incore_gstencils = a->incore_gs;
  if (pcie && pcie[0] > 0) {
    o->pcie_gbs = pcie[0] < pcie[1] ? pcie[0] : pcie[1];
    o->pcie_duplex_gbs = pcie[2];
  }
}

static int st_usage(const char *msg) { return spx_cli_usage("stencil", "%s", msg); }

int spx_cli_stencil_parse(int argc, char **argv, st_args *a) {
  const char *v;
  int i;
  memset(a, 0, sizeof *a);
  a->steps = 0;
  a->dtype = SPX_FLOAT;
  a->method = SPX_STENCIL_OVERLAP;
  for (i = 1; i < argc; i++) {
    if ((v = spx_cli_opt(argc, argv, &i, "--n"))) {
      int k = spx_cli_int_list("stencil", "--n", v, ',', a->n, 3);
      if (!k) return 2;
      if (k == 1) a->n[1] = a->n[2] = a->n[0];
      else if (k != 3) return st_usage("--n wants NX,NY,NZ (or one edge N)");
    } else if ((v = spx_cli_opt(argc, argv, &i, "--steps"))) {
      if (!spx_cli_int("stencil", "--steps", v, &a->steps)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--method"))) {
      if (spx_stencil_method_parse(v, &a->method)) return st_usage(spx_last_error());
      a->method_set = 1;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--methods"))) {
      char buf[256], *tok, *save = NULL;
      snprintf(buf, sizeof buf, "%s", v);
      a->nmethods = 0;
      for (tok = strtok_r(buf, ",", &save); tok && a->nmethods < SPX_STENCIL_METHOD_COUNT; tok = strtok_r(NULL, ",", &save)) {
        spx_stencil_method m;
        if (spx_stencil_method_parse(tok, &m)) return st_usage(spx_last_error());
        a->methods[a->nmethods++] = (int)m;
      }
    } else if ((v = spx_cli_opt(argc, argv, &i, "--budget"))) {
      if (!spx_cli_bytes("stencil", "--budget", v, &a->budget)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--depth"))) {
      double d = 0;
      if (!spx_cli_number("stencil", "--depth", v, "1, 2 or 4", SPX_CLI_INTEGER, 0, 4, &d)) return 2;
      if (d == 3) return st_usage("--depth wants 1, 2 or 4");
      a->depth = (int)d;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--tts"))) {
      if (!spx_cli_int("stencil", "--tts", v, &a->tts)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--interval"))) {
      if (!spx_cli_int("stencil", "--interval", v, &a->interval)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--slab"))) {
      if (!spx_cli_int("stencil", "--slab", v, &a->slab)) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--block"))) {
      int64_t b[2];
      int k = spx_cli_int_list("stencil", "--block", v, 'x', b, 2);
      if (!k) return 2;
      if (k != 2 || b[0] > 1024 || b[1] > 1024)
        return spx_cli_usage("stencil", "--block wants BXxBY up to 1024 each, e.g. 32x8, got '%s'", v);
      a->bx = (int)b[0];
      a->by = (int)b[1];
    } else if ((v = spx_cli_opt(argc, argv, &i, "--type"))) {
      if (!strcmp(v, "float")) a->dtype = SPX_FLOAT;
      else if (!strcmp(v, "double")) a->dtype = SPX_DOUBLE;
      else return st_usage("--type float|double");
    } else if ((v = spx_cli_opt(argc, argv, &i, "--incore-rate"))) {
      if (!spx_cli_number("stencil", "--incore-rate", v, "a rate in GStencil/s above 0", 0, 0, 1e9, &a->incore_gs))
        return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--edges"))) {
      if (!(a->nedges = spx_cli_int_list("stencil", "--edges", v, ',', a->edges, SPX_CLI_STENCIL_MAX_EDGES))) return 2;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--csv"))) a->csv_file = v;
    else if ((v = spx_cli_opt(argc, argv, &i, "--svg"))) a->svg_file = v;
    else if (!strcmp(argv[i], "--json")) a->json = 1;
    else if ((v = spx_cli_opt(argc, argv, &i, "--json-file"))) a->json_file = v;
    else if (!strcmp(argv[i], "--check")) a->check = 1;
    else if (!strcmp(argv[i], "--host")) a->host = 1;
    else if (!strcmp(argv[i], "--sweep")) a->sweep = 1;
    else if (!strcmp(argv[i], "--no-overlap")) a->no_overlap = 1;
    else return spx_cli_usage("stencil", "unknown argument '%s'", argv[i]);
  }
  if (!a->sweep && !a->n[0]) return st_usage("--n NX,NY,NZ is required (or --sweep)");
  if (!a->steps) a->steps = a->sweep ? 32 : 10;
  return 0;
}

static spx_context *st_context(const st_args *a) {
  spx_context *ctx = NULL;
  spx_context_options co = {a->host ? SPX_BACKEND_HOST : SPX_BACKEND_CUDA, 0};
  if (spx_context_create(&co, &ctx)) {
    fprintf(stderr, "spx stencil: %s%s\n", spx_last_error(), a->host ? "" : " (--host runs the host backend)");
    return NULL;
  }
  return ctx;
}

/* PCIe each way and both at once, measured now (GPU only). */
static void st_pcie(spx_context *ctx, const st_args *a, double pcie[3]) {
  pcie[0] = pcie[1] = pcie[2] = 0;
  if (a->host) return;
  spx_cli_progress("measuring PCIe");
  if (spx_stencil_pcie_bandwidth(ctx, (size_t)256 << 20, 3, &pcie[0], &pcie[1], &pcie[2]))
    fprintf(stderr, "spx stencil: PCIe measurement failed: %s\n", spx_last_error());
  spx_cli_progress_done();
}

/* --check: the host reference for small runs, else an in-core GPU run (cells and checksums). */
static int st_check(spx_context *ctx, const st_args *a, const spx_stencil *p, const void *got, void *ref,
                    char *how, size_t hlen, st_cmp *c) {
  double cells = (double)p->nx * p->ny * p->nz;
  const double tol = p->dtype == SPX_FLOAT ? 1e-5 : 1e-12;
  if (a->host || cells * (double)a->steps <= 4e9) {
    snprintf(how, hlen, "host reference");
    if (spx_stencil_reference(p, ref, a->steps)) return -1;
  } else {
    spx_stencil_options o;
    spx_cli_stencil_options(a, SPX_STENCIL_INCORE, NULL, &o);
    o.tts = 0; o.slab = 0; o.budget = 0;
    snprintf(how, hlen, "in-core GPU run");
    if (spx_stencil_run(ctx, p, ref, a->steps, &o, NULL)) return -1;
  }
  *c = st_compare(p, got, ref);
  return c->maxrel <= tol;
}

static int st_one(const st_args *a) {
  spx_context *ctx = st_context(a);
  spx_stencil p;
  spx_stencil_options o;
  spx_stencil_report r;
  void *g = NULL, *ref = NULL;
  double pcie[3], esz, copy_gbs = 0, kern_gs, roof_gs;
  int rc = 0, ok = 1;
  st_cmp c;
  char how[64] = "";
  memset(&c, 0, sizeof c);
  if (!ctx) return 1;
  if (spx_stencil_init(&p, a->n[0], a->n[1], a->n[2], a->dtype, 0.4, 0.1, 0.1, 0.1)) {
    spx_context_destroy(ctx);
    return spx_cli_fail("stencil");
  }
  esz = (double)SPX_DTYPE_SIZE(p.dtype);
  st_pcie(ctx, a, pcie);
  /* The roofline of a one-step kernel: device copy bandwidth over 2 values (read + write) a cell. */
  if (!a->host && spx_copy_bandwidth(ctx, (size_t)1 << 30, 5, &copy_gbs)) { spx_clear_error(); copy_gbs = 0; }
  spx_cli_stencil_options(a, a->method, pcie, &o);
  if (spx_stencil_grid_alloc(ctx, &p, &o, &g)) { rc = spx_cli_fail("stencil"); goto done; }
  st_fill(&p, g);
  if (a->check) {
    if (spx_stencil_grid_alloc(ctx, &p, &o, &ref)) { rc = spx_cli_fail("stencil --check"); goto done; }
    memcpy(ref, g, (size_t)(p.nx * p.ny * p.nz) * (size_t)esz);
  }
  spx_cli_progress("%s, %lld steps", spx_stencil_method_name(a->method), (long long)a->steps);
  if (spx_stencil_run(ctx, &p, g, a->steps, &o, &r)) { spx_cli_progress_done(); rc = spx_cli_fail("stencil"); goto done; }
  spx_cli_progress_done();
  kern_gs = st_kernel_gs(&p, a->steps, r.kernel_ms);
  roof_gs = copy_gbs / (2 * esz);
  if (a->check) {
    spx_cli_progress("checking");
    ok = st_check(ctx, a, &p, g, ref, how, sizeof how, &c);
    spx_cli_progress_done();
    if (ok < 0) { rc = spx_cli_fail("stencil --check"); goto done; }
  }
  if (a->json) {
    const spx_stencil_plan *pl = &r.plan;
    spx_cli_json_printf(stdout, "{\"kernel_gstencils\": %.4f, \"copy_gbs\": %.2f, \"roofline_gstencils\": %.4f, ",
                        kern_gs, copy_gbs, roof_gs);
    printf("\"n\": [%lld, %lld, %lld], \"type\": \"%s\", \"steps\": %lld, \"backend\": \"%s\", \"method\": \"%s\", "
           "\"depth\": %d, \"shared\": %d, \"block\": [%d, %d], \"xv\": %d, \"tts\": %lld, \"slab\": %lld, \"nslabs\": %lld, "
           "\"rounds\": %lld, \"device_bytes\": %lld, \"budget\": %lld, \"host_grids\": %d, \"host_bytes\": %lld, "
           "\"why\": ",
           (long long)p.nx, (long long)p.ny, (long long)p.nz, spx_dtype_name(p.dtype), (long long)a->steps,
           a->host ? "host" : "cuda", spx_stencil_method_name(pl->method), pl->depth, pl->shared, pl->bx, pl->by,
           pl->xv, (long long)pl->tts, (long long)pl->slab, (long long)pl->nslabs, (long long)pl->rounds,
           (long long)pl->device_bytes, (long long)(pl->budget > ((int64_t)1 << 60) ? -1 : pl->budget), pl->host_grids,
           (long long)pl->host_bytes);
    spx_cli_json_str(stdout, pl->why);
    spx_cli_json_printf(stdout, ",\n \"gstencils\": %.4f, \"model_gstencils\": %.4f, \"bound_gstencils\": %.4f, \"total_ms\": %.3f, "
                        "\"kernel_ms\": %.3f, \"h2d_ms\": %.3f, \"d2h_ms\": %.3f, \"d2d_ms\": %.3f, \"h2d_bytes\": %lld, "
                        "\"d2h_bytes\": %lld, \"d2d_bytes\": %lld, \"launches\": %lld, \"jit_ms\": %.1f, "
                        "\"pcie_h2d_gbs\": %.2f, \"pcie_d2h_gbs\": %.2f, \"pcie_duplex_gbs\": %.2f",
                        r.gstencils, pl->model_gstencils, pl->bound_gstencils, r.total_ms, r.kernel_ms, r.h2d_ms, r.d2h_ms, r.d2d_ms,
                        (long long)r.h2d_bytes, (long long)r.d2h_bytes, (long long)r.d2d_bytes, (long long)r.launches, r.jit_ms,
                        pcie[0], pcie[1], pcie[2]);
    if (a->check)
      spx_cli_json_printf(stdout, ",\n \"check\": \"%s\", \"check_against\": \"%s\", \"bitwise\": %s, \"max_rel_diff\": %.3g, "
                          "\"checksum\": %.17g, \"checksum_ref\": %.17g",
                          ok ? "match" : "mismatch", how, c.bitwise ? "true" : "false", c.maxrel, c.sum_a, c.sum_b);
    printf("}\n");
  } else {
    const spx_stencil_plan *pl = &r.plan;
    printf("stencil %lld x %lld x %lld %s, %lld steps on the %s: method %s, depth %d (%s kernel, block %d x %d%s)\n",
           (long long)p.nx, (long long)p.ny, (long long)p.nz, spx_dtype_name(p.dtype), (long long)a->steps,
           a->host ? "host" : "GPU", spx_stencil_method_name(pl->method), pl->depth,
           pl->shared ? "shared-memory temporal-blocking" : "one-step", pl->bx, pl->by,
           pl->shared ? "" : pl->xv == 2 ? ", 2 cells per thread in x" : ", 1 cell per thread");
    printf("plan:    %s\n", pl->why);
    printf("         slab %lld planes x %lld slabs, TTS %lld, %lld rounds; device %.3f GiB (windows 2 x %lld planes); "
           "host grids %d (+%.3f GiB)\n",
           (long long)pl->slab, (long long)pl->nslabs, (long long)pl->tts, (long long)pl->rounds,
           (double)pl->device_bytes / 1073741824.0, (long long)pl->window_planes, pl->host_grids,
           (double)pl->host_bytes / 1073741824.0);
    printf("rate:    %.2f GStencil/s measured; model %.2f; bound %.2f = min(in-core %s, TTS %lld x PCIe / %.0f B per "
           "cell each way)\n",
           r.gstencils, pl->model_gstencils, pl->bound_gstencils, a->incore_gs > 0 ? "given" : "estimate",
           (long long)pl->tts, esz);
    if (pl->bound_gstencils > 0 && !a->host)
      printf("         %.0f%% of the bound\n", 100.0 * r.gstencils / pl->bound_gstencils);
    if (roof_gs > 0)
      printf("kernel:  %.2f GStencil/s counting kernel time only = %.0f%% of the one-step roofline %.2f (device copy "
             "%.0f GB/s measured now / %.0f B per cell)\n", kern_gs, 100.0 * kern_gs / roof_gs, roof_gs, copy_gbs, 2 * esz);
    printf("time:    total %.2f ms; kernel %.2f ms, H2D %.2f ms (%.3f GB), D2H %.2f ms (%.3f GB), device copies %.2f ms "
           "(%.3f GB); %lld launches; JIT %.1f ms (not in total)\n",
           r.total_ms, r.kernel_ms, r.h2d_ms, (double)r.h2d_bytes * 1e-9, r.d2h_ms, (double)r.d2h_bytes * 1e-9, r.d2d_ms,
           (double)r.d2d_bytes * 1e-9, (long long)r.launches, r.jit_ms);
    if (!a->host)
      printf("pcie:    H2D %.1f GB/s, D2H %.1f GB/s, both at once %.1f GB/s (pinned, measured in this run)\n", pcie[0],
             pcie[1], pcie[2]);
    if (a->check)
      printf("check:   %s (against the %s: %s, max relative difference %.3g, checksum %.12g vs %.12g)\n",
             ok ? "match" : "mismatch", how, c.bitwise ? "bitwise equal" : "not bitwise", c.maxrel, c.sum_a, c.sum_b);
  }
  if (!ok) rc = 1;
done:
  spx_stencil_grid_free(ctx, g);
  spx_stencil_grid_free(ctx, ref);
  spx_context_destroy(ctx);
  return rc;
}

/* ---- --sweep ------------------------------------------------------------------------------------ */
typedef struct st_row {
  int64_t edge;
  int method;
  double gs, kernel_gs, model, bound, incore, total_ms, kernel_ms, h2d_ms, d2h_ms, d2d_ms;
  int64_t tts, slab, nslabs;
  int depth;
  char error[160];
} st_row;

/* The sweep's dataset, for the writers below. */
typedef struct st_sweep_out {
  const st_args *a;
  const st_row *rows;
  int nrows, depth;
  const double *pcie;
  const char *command;
} st_sweep_out;

static void st_sweep_json(FILE *f, const st_sweep_out *o) {
  const st_args *a = o->a;
  int i;
  fprintf(f, "{\"command\": ");
  spx_cli_json_str(f, o->command);
  spx_cli_json_printf(f, ", \"type\": \"%s\", \"steps\": %lld, \"budget\": %lld, \"depth\": %d, \"backend\": \"%s\", "
                         "\"pcie_h2d_gbs\": %.2f, \"pcie_d2h_gbs\": %.2f, \"pcie_duplex_gbs\": %.2f, "
                         "\"incore\": \"both grids on the device, no budget cap\", \"rows\": [\n",
                      spx_dtype_name(a->dtype), (long long)a->steps, (long long)a->budget, o->depth,
                      a->host ? "host" : "cuda", o->pcie[0], o->pcie[1], o->pcie[2]);
  for (i = 0; i < o->nrows; i++) {
    const st_row *r = &o->rows[i];
    spx_cli_json_printf(f, "  {\"edge\": %lld, \"method\": \"%s\", \"gstencils\": %.4f, \"kernel_gstencils\": %.4f, "
                           "\"model\": %.4f, \"bound\": %.4f, \"incore\": %.4f, \"depth\": %d, \"tts\": %lld, "
                           "\"slab\": %lld, \"nslabs\": %lld, \"total_ms\": %.3f, \"kernel_ms\": %.3f, "
                           "\"h2d_ms\": %.3f, \"d2h_ms\": %.3f, \"d2d_ms\": %.3f, \"error\": ",
                        (long long)r->edge, spx_stencil_method_name((spx_stencil_method)r->method), r->gs,
                        r->kernel_gs, r->model, r->bound, r->incore, r->depth, (long long)r->tts, (long long)r->slab,
                        (long long)r->nslabs, r->total_ms, r->kernel_ms, r->h2d_ms, r->d2h_ms, r->d2d_ms);
    spx_cli_json_str(f, r->error);
    fprintf(f, "}%s\n", i + 1 < o->nrows ? "," : "");
  }
  fprintf(f, "]}\n");
}

static void st_sweep_csv(FILE *f, const st_sweep_out *o) {
  int i;
  fprintf(f, "edge,method,gstencils,kernel_gstencils,model,bound,incore,depth,tts,slab,nslabs,total_ms,kernel_ms,h2d_ms,"
             "d2h_ms,d2d_ms,error\n");
  for (i = 0; i < o->nrows; i++) {
    const st_row *r = &o->rows[i];
    fprintf(f, "%lld,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%lld,%lld,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,\"%s\"\n", (long long)r->edge,
            spx_stencil_method_name((spx_stencil_method)r->method), r->gs, r->kernel_gs, r->model, r->bound, r->incore,
            r->depth, (long long)r->tts, (long long)r->slab, (long long)r->nslabs, r->total_ms, r->kernel_ms,
            r->h2d_ms, r->d2h_ms, r->d2d_ms, r->error);
  }
}

static void st_sweep_svg(FILE *f, const st_sweep_out *o) {
  const st_args *a = o->a;
  const st_row *rows = o->rows;
  const int nrows = o->nrows, depth = o->depth;
  int i, m;
  static const char *const colors[SPX_STENCIL_METHOD_COUNT] = {"#e15759", "#59a14f", "#bab0ac", "#4e79a7",
                                                               "#f28e2b", "#b07aa1"};
  /* GStencil/s (log10) against the edge, one line per method, like the paper's Figure 11. */
  const double W = 760, H = 460, L = 70, T = 40, PW = 560, PH = 340;
  double ymax = 1e-3, ymin = 1e30, lo, hi, xmin = 1e30, xmax = 0;
  int e;
  /* one in-core line: the temporal-blocking depth's (the one-step in-core rows bound normal and mm) */
#define ST_SHOWN(i) (rows[i].gs > 0 && (rows[i].method != SPX_STENCIL_INCORE || rows[i].depth == depth))
  for (i = 0; i < nrows; i++) {
    if (ST_SHOWN(i)) { ymax = fmax(ymax, rows[i].gs); ymin = fmin(ymin, rows[i].gs); }
    xmin = fmin(xmin, (double)rows[i].edge); xmax = fmax(xmax, (double)rows[i].edge);
  }
  if (ymin > ymax) ymin = ymax / 10;
  lo = floor(log10(ymin)); hi = ceil(log10(ymax));
  if (hi <= lo) hi = lo + 1;
  if (xmax <= xmin) xmax = xmin + 1;
#define ST_X(v) (L + ((v) - xmin) / (xmax - xmin) * PW)
#define ST_Y(v) (T + PH - (log10(v) - lo) / (hi - lo) * PH)
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' font-family='sans-serif' font-size='11'>\n", W, H);
  fprintf(f, "<rect width='100%%' height='100%%' fill='white'/>\n");
  fprintf(f, "<text x='%.0f' y='20' font-size='14'>3-D 7-point stencil, %s, %lld steps, depth %d, device budget %.2f GiB "
             "(incore: no cap): GStencil/s vs domain edge</text>\n",
          L, spx_dtype_name(a->dtype), (long long)a->steps, depth, (double)a->budget / 1073741824.0);
  for (e = (int)lo; e <= (int)hi; e++) {
    double yy = ST_Y(pow(10.0, e));
    fprintf(f, "<line x1='%.0f' x2='%.0f' y1='%.1f' y2='%.1f' stroke='#ddd'/><text x='8' y='%.1f'>%g</text>\n", L,
            L + PW, yy, yy, yy + 4, pow(10.0, e));
  }
  for (i = 0; i < a->nedges; i++) {
    double xx = ST_X((double)a->edges[i]);
    fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' stroke='#eee'/><text x='%.1f' y='%.0f' text-anchor='middle'>%lld</text>\n",
            xx, xx, T, T + PH, xx, T + PH + 16, (long long)a->edges[i]);
  }
  fprintf(f, "<text x='%.0f' y='%.0f' text-anchor='middle'>domain edge N (N x N x N cells)</text>\n", L + PW / 2, T + PH + 34);
  fprintf(f, "<text transform='translate(18,%.0f) rotate(-90)' text-anchor='middle'>GStencil/s (log scale)</text>\n", T + PH / 2);
  for (m = 0; m < SPX_STENCIL_METHOD_COUNT; m++) {
    int any = 0;
    for (i = 0; i < nrows; i++) {
      if (rows[i].method != m || !ST_SHOWN(i)) continue;
      if (!any) fprintf(f, "<polyline fill='none' stroke-width='2' stroke='%s' points='", colors[m]);
      fprintf(f, "%s%.1f,%.1f", any ? " " : "", ST_X((double)rows[i].edge), ST_Y(rows[i].gs));
      any = 1;
    }
    if (any) fprintf(f, "'/>\n");
    for (i = 0; i < nrows; i++)
      if (rows[i].method == m && ST_SHOWN(i))
        fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3' fill='%s'><title>%s N=%lld: %.2f GStencil/s (tts %lld, %lld slabs)</title></circle>\n",
                ST_X((double)rows[i].edge), ST_Y(rows[i].gs), colors[m], spx_stencil_method_name((spx_stencil_method)m),
                (long long)rows[i].edge, rows[i].gs, (long long)rows[i].tts, (long long)rows[i].nslabs);
    for (i = 0; i < nrows; i++) if (rows[i].method == m && ST_SHOWN(i)) break;
    if (i < nrows) {
      fprintf(f, "<rect x='%.0f' y='%.0f' width='12' height='3' fill='%s'/><text x='%.0f' y='%.0f'>%s</text>\n",
              L + PW + 12, T + 10 + 18.0 * m, colors[m], L + PW + 28, T + 14 + 18.0 * m,
              spx_stencil_method_name((spx_stencil_method)m));
    }
  }
#undef ST_SHOWN
#undef ST_X
#undef ST_Y
  fprintf(f, "</svg>\n");
}

/* Every file asked for, each written whole or not at all; 1 if any could not be written. */
static int st_sweep_write(const st_sweep_out *o) {
  const char *const paths[3] = {o->a->json_file, o->a->csv_file, o->a->svg_file};
  void (*const writers[3])(FILE *, const st_sweep_out *) = {st_sweep_json, st_sweep_csv, st_sweep_svg};
  int k, rc = 0;
  for (k = 0; k < 3; k++) {
    spx_file *f;
    if (!paths[k]) continue;
    if (spx_file_create(paths[k], 0, &f)) { rc = spx_cli_fail("stencil --sweep"); continue; }
    writers[k](spx_file_stream(f), o);
    rc |= spx_cli_out_commit("stencil --sweep", f);
  }
  return rc;
}

/* The run's figures into a sweep row. */
static void st_sweep_fill(st_row *r, const spx_stencil *p, int64_t steps, const spx_stencil_report *rep) {
  r->gs = rep->gstencils; r->model = rep->plan.model_gstencils; r->bound = rep->plan.bound_gstencils;
  r->total_ms = rep->total_ms; r->kernel_ms = rep->kernel_ms; r->h2d_ms = rep->h2d_ms; r->d2h_ms = rep->d2h_ms;
  r->d2d_ms = rep->d2d_ms; r->tts = rep->plan.tts; r->slab = rep->plan.slab; r->nslabs = rep->plan.nslabs;
  r->depth = rep->plan.depth;
  r->kernel_gs = st_kernel_gs(p, steps, rep->kernel_ms);
}

/* One sweep run into row r: its figures, or the failure's message (quotes made CSV-safe). */
static void st_sweep_run(spx_context *ctx, const st_args *a, const spx_stencil *p, void *g,
                         const spx_stencil_options *o, st_row *r) {
  spx_stencil_report rep;
  if (spx_stencil_run(ctx, p, g, a->steps, o, &rep)) {
    snprintf(r->error, sizeof r->error, "%s", spx_last_error());
    for (char *c = r->error; *c; c++) if (*c == '"' || *c == '\\') *c = '\'';
    spx_clear_error();
    return;
  }
  st_sweep_fill(r, p, a->steps, &rep);
}

static void st_sweep_print(const st_row *r) {
  if (r->error[0]) {
    printf("%-6lld %-8s %10s (%s)\n", (long long)r->edge, spx_stencil_method_name((spx_stencil_method)r->method), "-",
           r->error);
    return;
  }
  printf("%-6lld %-8s %10.2f %8.2f %8.2f %8.2f %6.0f%% %6.0f%% %5d %5lld %6lld %6lld\n", (long long)r->edge,
         spx_stencil_method_name((spx_stencil_method)r->method), r->gs, r->kernel_gs, r->model, r->bound,
         r->bound > 0 ? 100.0 * r->gs / r->bound : 0.0, r->incore > 0 ? 100.0 * r->gs / r->incore : 0.0, r->depth,
         (long long)r->tts, (long long)r->slab, (long long)r->nslabs);
  fflush(stdout);
}

static int st_sweep(const st_args *a0, const char *command) {
  static const int64_t def_edges[] = {256, 384, 512, 640, 768, 896, 1024};
  static const int def_methods[] = {SPX_STENCIL_INCORE, SPX_STENCIL_NORMAL, SPX_STENCIL_MM, SPX_STENCIL_MMT,
                                    SPX_STENCIL_MMTB, SPX_STENCIL_OVERLAP};
  st_args a = *a0;
  spx_context *ctx;
  st_row *rows;
  double pcie[3];
  int nrows = 0, e, k, rc = 0, want_incore = 0, want_one = 0;
  const int depth = a.depth ? a.depth : SPX_STENCIL_DEFAULT_DEPTH; /* the temporal-blocking methods' */
  if (!a.nedges) {
    a.nedges = (int)(sizeof def_edges / sizeof *def_edges);
    memcpy(a.edges, def_edges, sizeof def_edges);
  }
  if (!a.nmethods) {
    a.nmethods = (int)(sizeof def_methods / sizeof *def_methods);
    memcpy(a.methods, def_methods, sizeof def_methods);
  }
  for (k = 0; k < a.nmethods; k++) {
    want_incore |= a.methods[k] == SPX_STENCIL_INCORE;
    want_one |= a.methods[k] == SPX_STENCIL_NORMAL || a.methods[k] == SPX_STENCIL_MM;
  }
  if (!a.budget) a.budget = (int64_t)1 << 30;
  /* a file that cannot be written fails now, not after the runs */
  if ((a.json_file && spx_cli_out_check("stencil --sweep", a.json_file)) ||
      (a.csv_file && spx_cli_out_check("stencil --sweep", a.csv_file)) ||
      (a.svg_file && spx_cli_out_check("stencil --sweep", a.svg_file)))
    return 1;
  if (!(ctx = st_context(&a))) return 1;
  st_pcie(ctx, &a, pcie);
  /* rows: the in-core runs (one-step and depth kernels) and every method, per edge */
  if (!(rows = (st_row *)calloc((size_t)(a.nedges * (a.nmethods + 2)), sizeof *rows))) { spx_context_destroy(ctx); return 1; }
  printf("incore: both grids on the device with no budget cap (the rate of the kernel the others run); bound = "
         "min(that in-core kernel rate, TTS x PCIe / %d B per cell); kernel = GStencil/s over kernel time\n",
         (int)SPX_DTYPE_SIZE(a.dtype));
  printf("%-6s %-8s %10s %8s %8s %8s %7s %7s %5s %5s %6s %6s\n", "edge", "method", "GStencil/s", "kernel", "model",
         "bound", "%bound", "%incore", "depth", "tts", "slab", "slabs");
  for (e = 0; e < a.nedges; e++) {
    spx_stencil p;
    void *g = NULL;
    spx_stencil_options o;
    double incore[5] = {0, 0, 0, 0, 0}; /* by depth: measured, else --incore-rate, else 0 (the model's estimate) */
    int d;
    if (spx_stencil_init(&p, a.edges[e], a.edges[e], a.edges[e], a.dtype, 0.4, 0.1, 0.1, 0.1)) { rc = spx_cli_fail("stencil --sweep"); break; }
    spx_cli_stencil_options(&a, SPX_STENCIL_INCORE, pcie, &o);
    if (spx_stencil_grid_alloc(ctx, &p, &o, &g)) { rc = spx_cli_fail("stencil --sweep"); break; }
    st_fill(&p, g);
    for (d = 1; d <= 4; d++) {
      st_row *r;
      if (d != depth && !(d == 1 && want_one)) continue;
      if (a.incore_gs > 0 && !want_incore) { incore[d] = a.incore_gs; continue; }
      /* In core at depth d, both grids on the device with no budget cap: the budget stands in for
       * a smaller GPU, the kernel's rate is this GPU's, so the out-of-core rows' bound (and their
       * model) take the measured rate of the kernel they run, not the model's estimate. */
      r = &rows[nrows++];
      memset(r, 0, sizeof *r);
      r->edge = a.edges[e];
      r->method = SPX_STENCIL_INCORE;
      r->depth = d;
      spx_cli_stencil_options(&a, SPX_STENCIL_INCORE, pcie, &o);
      o.budget = 0; o.tts = o.slab = 0;
      o.depth = d;
      o.incore_gstencils = 0;
      spx_cli_progress("N=%lld incore depth %d", (long long)r->edge, d);
      st_sweep_run(ctx, &a, &p, g, &o, r);
      spx_cli_progress_done();
      r->bound = r->incore = incore[d] = r->kernel_gs;
      if (a.incore_gs > 0) incore[d] = a.incore_gs; /* given: it bounds the others */
      if (want_incore) st_sweep_print(r);
      else nrows--;
    }
    for (k = 0; k < a.nmethods; k++) {
      st_row *r;
      const int m = a.methods[k];
      if (m == SPX_STENCIL_INCORE) continue;
      r = &rows[nrows++];
      memset(r, 0, sizeof *r);
      r->edge = a.edges[e];
      r->method = m;
      spx_cli_stencil_options(&a, (spx_stencil_method)m, pcie, &o);
      d = m == SPX_STENCIL_NORMAL || m == SPX_STENCIL_MM ? 1 : depth;
      o.incore_gstencils = r->incore = incore[d];
      spx_cli_progress("N=%lld %s", (long long)r->edge, spx_stencil_method_name((spx_stencil_method)m));
      st_sweep_run(ctx, &a, &p, g, &o, r);
      spx_cli_progress_done();
      st_sweep_print(r);
    }
    spx_stencil_grid_free(ctx, g);
  }
  {
    const st_sweep_out out = {&a, rows, nrows, depth, pcie, command};
    rc |= st_sweep_write(&out);
  }
  free(rows);
  spx_context_destroy(ctx);
  return rc;
}

/* `spx help stencil` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_stencil_help[] = {
    "One run: GStencil/s, the time split (kernel, H2D, D2H, device copies), the plan (slab size, TTS "
    "and why), the PCIe bandwidth measured in the same run and the model's bound. --sweep: GStencil/s "
    "against the domain edge for each method under one budget. Methods: overlap, incore, normal, "
    "mm, mmt, mmtb.",
    "Under mpirun (spx built with MPI): the grid split into z-slabs over the ranks, one GPU each "
    "where every rank has one, halos exchanged every --interval steps; each rank's planes, time, "
    "GStencil/s, halo bytes and exchange time, and the total rate; --check compares with a "
    "one-process run on rank 0, bit for bit.",
    "--n NX,NY,NZ\tthe grid (one N: N^3); required without --sweep",
    "--steps T\ttime steps (default 10; 32 with --sweep)",
    "--method M\tone run's method (default overlap)",
    "--budget B\tdevice bytes the run may use, e.g. 2G (default: free memory less 5%; 1G with "
    "--sweep)",
    "--depth 1|2|4\tsteps per kernel launch of the temporal-blocking methods (default 2; 1 for "
    "normal and mm)",
    "--tts N\tsteps per round trip (default: the cost model's choice)",
    "--slab N\tinterior planes per slab, at most (default: the largest that fits)",
    "--interval R\tunder mpirun: steps between halo exchanges (default: the tts of the plan for a rank's "
    "slab, at most the fewest planes a rank owns)",
    "--no-overlap\tunder mpirun: wait for the halos before computing, so that the exchange is timed "
    "alone (default: the interior computes while the halos move)",
    "--block BXxBY\tthread block shape, up to 1024 each (default 32x8; 32x32 with shared memory)",
    "--type float|double\tvalue type (default float)",
    "--incore-rate R\tthe in-core rate in GStencil/s the model uses (default: measured)",
    "--check\tcompare with the host reference (small grids) or an in-core GPU run; under mpirun with "
    "a one-process run on rank 0 (default off)",
    "--host\trun on the host backend instead of the GPU (default: the GPU)",
    "--json\tone run: print JSON instead of text (default: text)",
    "--sweep\tthe sweep over domain edges instead of one run",
    "--edges N,...\t--sweep: the domain edges (default 256,384,512,640,768,896,1024)",
    "--methods a,b\t--sweep: the methods (default incore,normal,mm,mmt,mmtb,overlap)",
    "--json-file F\t--sweep: write the rows as JSON to file F (default: none)",
    "--csv F\t--sweep: write the rows as CSV to file F (default: none)",
    "--svg F\t--sweep: write a plot to file F (default: none)",
    "$ spx stencil --n 1024,1024,1024 --steps 32 --method mmtb --budget 2G --check",
    NULL};

int spx_cli_stencil(int argc, char **argv) {
  st_args a;
  char command[1024] = "spx stencil";
  int i, rc;
#if defined(SPX_CLI_MPI)
  { /* under mpirun: the grid split over the ranks (cmd_stencil_mpi.c) */
    int handled = 0;
    rc = spx_cli_stencil_mpi(argc, argv, &handled);
    if (handled) return rc;
  }
#endif
  if ((rc = spx_cli_stencil_parse(argc, argv, &a))) return rc;
  if (a.interval || a.no_overlap) return st_usage("--interval and --no-overlap are for a run under mpirun");
  if (!a.sweep && a.nmethods) return st_usage("--methods is for --sweep; use --method");
  if (!a.sweep && (a.json_file || a.csv_file || a.svg_file))
    return st_usage("--json-file, --csv and --svg are for --sweep; one run prints --json");
  if (a.sweep) {
    for (i = 1; i < argc; i++)
      if (strlen(command) + strlen(argv[i]) + 2 < sizeof command) { strcat(command, " "); strcat(command, argv[i]); }
    return st_sweep(&a, command);
  }
  return st_one(&a);
}
