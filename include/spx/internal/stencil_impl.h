/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/stencil.h: the kernels of a plan (templates/stencil.cu, their
 * specialization constants) and spx_stencil_warm, spx_stencil_run (the plan from
 * stencil_plan_impl.h, the executor's buffers, streams and events, the schedule of
 * stencil_schedule_impl.h, the report and the trace), the grids and the link's bandwidth. */
#include <stdio.h>
#include "common.h"
#include "config.h"
#include "cuda_types.h"
#include "stencil_sched.h"
#include "../jit.h"
#include "../stencil.h"

/* ---- Kernels ----------------------------------------------------------------------------------- */
#define SPX__STENCIL_NDEFS 16
/* The specialization constants of one kernel; returns how many. SPX_STENCIL_XV only when 2, so
 * the one-cell kernel keeps the defines (and cache key) it always had. */
static int spx__stencil_defines(const spx_stencil *p, int depth, int shared, int bx, int by, int xv, int64_t ring,
                                char d[SPX__STENCIL_NDEFS][64], const char **ptr) {
  static const char *const cname[7] = {"SPX_CC", "SPX_CXM", "SPX_CXP", "SPX_CYM", "SPX_CYP", "SPX_CZM", "SPX_CZP"};
  int n = 0, i;
  snprintf(d[n++], 64, "SPX_VALUE_T=%s", p->dtype == SPX_FLOAT ? "float" : "double");
  snprintf(d[n++], 64, "SPX_NX=%lld", (long long)p->nx);
  snprintf(d[n++], 64, "SPX_NY=%lld", (long long)p->ny);
  snprintf(d[n++], 64, "SPX_NZ=%lld", (long long)p->nz);
  snprintf(d[n++], 64, "SPX_BX=%d", bx);
  snprintf(d[n++], 64, "SPX_BY=%d", by);
  if (shared) {
    /* The shared-memory kernel's load distance: 2 planes in float, 1 in double, the fastest of
     * each (bench/results/stencil/tb-pf.txt); loads ahead stay in flight across the levels' barriers.
     * SPX_STENCIL_TB_PF=0..8 overrides it, to compare distances on one build (bench/device.sh
     * tb-pf). */
    const char *e = spx__cfg()->stencil_tb_pf;
    snprintf(d[n++], 64, "SPX_DEPTH=%d", depth);
    if (e && e[0] >= '0' && e[0] <= '8' && !e[1]) snprintf(d[n++], 64, "SPX_TB_PF=%c", e[0]);
    else snprintf(d[n++], 64, "SPX_TB_PF=%d", p->dtype == SPX_FLOAT ? 2 : 1);
  }
  else if (xv == 2) snprintf(d[n++], 64, "SPX_STENCIL_XV=2");
  if (ring) snprintf(d[n++], 64, "SPX_RING=%lld", (long long)ring); /* mmtb, overlap: ring windows */
  for (i = 0; i < 7; i++) /* %a is exact: the kernel sees the very double the host rounds to T */
    snprintf(d[n++], 64, "%s=%a", cname[i], p->c[i]);
  for (i = 0; i < n; i++) ptr[i] = d[i];
  return n;
}

/* The two kernels of a plan: the main one (depth steps, shared memory when pl->shared) and the
 * one-step kernel for the steps a round has beyond a multiple of the depth. */
typedef struct spx__stencil_kernels {
  const char *name[2];
  int n[2], bx[2], by[2], xv[2]; /* xv: x cells per thread (1 for spx_stencil_tb) */
  char defs[2][SPX__STENCIL_NDEFS][64];
  const char *ptr[2][SPX__STENCIL_NDEFS];
} spx__stencil_kernels;

static void spx__stencil_kernels_of(const spx_stencil *p, const spx_stencil_plan *pl, spx__stencil_kernels *k) {
  const int xv = pl->xv == 2 && p->nx % 2 == 0 ? 2 : 1; /* a plan made elsewhere (spx_stencil_warm) may say 0 */
  const int64_t ring = spx__stencil_ring(pl);
  memset(k, 0, sizeof *k);
  k->name[0] = pl->shared ? "spx_stencil_tb" : "spx_stencil_step";
  k->bx[0] = pl->bx; k->by[0] = pl->by;
  k->xv[0] = pl->shared ? 1 : xv;
  k->n[0] = spx__stencil_defines(p, pl->depth, pl->shared, pl->bx, pl->by, k->xv[0], ring, k->defs[0], k->ptr[0]);
  k->name[1] = "spx_stencil_step";
  k->bx[1] = 32; k->by[1] = 8;
  k->xv[1] = xv;
  k->n[1] = spx__stencil_defines(p, 1, 0, 32, 8, k->xv[1], ring, k->defs[1], k->ptr[1]);
}

spx_status spx_stencil_warm(const spx_stencil *p, const spx_stencil_plan *pl, const char *arch) {
  spx__stencil_kernels k;
  spx_status s;
  int i;
  if ((s = spx__stencil_check(p, "spx_stencil_warm"))) return s;
  if (!pl) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_warm: NULL plan");
  spx__stencil_kernels_of(p, pl, &k);
  for (i = 0; i < 2; i++)
    if ((s = spx_jit_compile_only("stencil", k.n[i], k.ptr[i], arch, NULL))) return s;
  return SPX_OK;
}

/* ---- Run ---------------------------------------------------------------------------------------- */
static void spx__sx_release(spx__sx *x) {
  int i;
  int64_t t;
  if (x->gpu) {
    if (!spx__ctx_push(x->ctx)) {
      for (t = 0; t < x->nlog; t++) {
        if (x->log[t].e0) spx__event_free(x->cu, x->log[t].e0);
        if (x->log[t].e1) spx__event_free(x->cu, x->log[t].e1);
      }
      for (i = 0; i < x->nev; i++)
        if (x->ev && x->ev[i]) spx__event_free(x->cu, x->ev[i]);
      for (i = 0; i < SPX__SXS_N; i++)
        if (x->st[i]) spx__stream_free(x->cu, x->st[i]);
      if (x->g[1]) spx__host_free(x->cu, x->g[1]);
      spx__ctx_pop(x->ctx);
    }
    for (i = 0; i < SPX__SXB_N; i++) spx_device_free(x->ctx, (spx_devptr)x->buf[i]);
  } else {
    for (i = 0; i < SPX__SXB_N; i++) SPX_FREE((void *)x->buf[i]);
    SPX_FREE(x->tmp[0]);
    SPX_FREE(x->tmp[1]);
    SPX_FREE(x->g[1]);
  }
  SPX_FREE(x->ev);
  SPX_FREE(x->log);
}

/* Allocates the buffers of the plan, poisoned (NaN bytes): a schedule that reads a plane it never
 * wrote gives NaN, which every comparison catches. */
static spx_status spx__sx_alloc(spx__sx *x) {
  const spx_stencil_plan *pl = x->pl;
  const int64_t nz = x->p->nz;
  spx__stencil_bufs b = spx__stencil_bufs_of(pl->method, pl->depth, pl->tts, pl->slab, nz);
  int i;
  spx_status s;
  x->cap[SPX__SXB_W0] = x->cap[SPX__SXB_W1] = pl->window_planes; /* a ring's size: the kernels' SPX_RING */
  for (i = 0; i < SPX__SXB_N; i++) {
    size_t bytes = (size_t)(x->cap[i] * x->pb);
    if (!bytes) continue;
    if (x->gpu) {
      spx_devptr d = 0;
      if ((s = spx_device_alloc(x->ctx, bytes, &d))) return spx__wrap(s, "stencil %s buffer", spx_stencil_method_name(pl->method));
      x->buf[i] = (uintptr_t)d;
      if ((s = spx_device_memset(x->ctx, d, 0xff, bytes))) return s;
    } else {
      void *h = spx__alloc(1, bytes);
      if (!h) return SPX_OUT_OF_MEMORY;
      memset(h, 0xff, bytes);
      x->buf[i] = (uintptr_t)h;
    }
  }
  if (!x->gpu && pl->depth > 1)
    for (i = 0; i < 2; i++) {
      if (!(x->tmp[i] = (char *)spx__alloc(1, (size_t)(b.window * x->pb)))) return SPX_OUT_OF_MEMORY;
      memset(x->tmp[i], 0xff, (size_t)(b.window * x->pb));
    }
  if (spx__stencil_method_grids[pl->method] > 1) {
    size_t bytes = (size_t)(nz * x->pb);
    if (x->gpu) {
      void *h = NULL;
      if ((s = spx__ctx_push(x->ctx))) return s;
      s = spx__host_alloc(x->cu, &h, bytes, "cuMemHostAlloc (the second host grid)");
      spx__ctx_pop(x->ctx);
      if (s) return s;
      x->g[1] = (char *)h;
    } else if (!(x->g[1] = (char *)spx__alloc(1, bytes))) {
      return SPX_OUT_OF_MEMORY;
    }
  }
  return SPX_OK;
}

/* Streams, events and kernels of a GPU run (inside a pushed context). */
static spx_status spx__sx_gpu_setup(spx__sx *x, const spx__stencil_kernels *k) {
  spx_status s;
  int i;
  x->nev = SPX__SXE_TILE + (int)x->pl->nslabs;
  if (!(x->ev = (spx__CUevent *)spx__calloc((size_t)x->nev, sizeof *x->ev))) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < SPX__SXS_N; i++)
    if ((s = spx__stream_new(x->cu, &x->st[i]))) return s;
  for (i = 0; i < x->nev; i++)
    if ((s = spx__event_new(x->cu, &x->ev[i], 0))) return s;
  x->main_block[0] = (unsigned)k->bx[0]; x->main_block[1] = (unsigned)k->by[0];
  x->one_block[0] = (unsigned)k->bx[1]; x->one_block[1] = (unsigned)k->by[1];
  x->main_xv = k->xv[0]; x->one_xv = k->xv[1];
  if (x->pl->shared) { /* spx_stencil_tb's grid: the blocks that run at once, unless SPX_STENCIL_SLOTS says */
    int per = 0;
    SPX__CU_TRY(x->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, x->fn_main, k->bx[0] * k->by[0], 0));
    if (!x->main_slots) x->main_slots = (int64_t)SPX__MAX(1, per) * SPX__MAX(1, x->sm_count);
  }
  return SPX_OK;
}

/* SPX_STENCIL_TRACE=FILE: the GPU run's timeline, one line per copy and launch (stream, kind, start
 * and end in ms from the run's first operation), to see which stream waits on which in overlap. */
static spx_status spx__sx_trace(const spx__sx *x, const char *path) {
  static const char *const sname[SPX__SXS_N] = {"compute", "up", "down"};
  static const char *const cname[SPX__SXC_N] = {"kernel", "h2d", "d2h", "d2d"};
  FILE *f;
  int64_t t;
  if (!x->nlog) return SPX_OK;
  if (!(f = fopen(path, "w"))) return spx__fail(SPX_IO, "SPX_STENCIL_TRACE=%s: cannot open it for writing", path);
  fprintf(f, "stream,kind,start_ms,end_ms\n");
  for (t = 0; t < x->nlog; t++) {
    float a = 0, b = 0;
    spx_status s = spx__event_ms(x->cu, &a, x->log[0].e0, x->log[t].e0);
    if (!s) s = spx__event_ms(x->cu, &b, x->log[0].e0, x->log[t].e1);
    if (s) { fclose(f); return s; }
    fprintf(f, "%s,%s,%.4f,%.4f\n", sname[x->log[t].stream], cname[x->log[t].cat], a, b);
  }
  if (fclose(f)) return spx__fail(SPX_IO, "SPX_STENCIL_TRACE=%s: write failed", path);
  return SPX_OK;
}

/* A measurement knob: *out = the positive count in environment variable `name` (its value k),
 * unchanged when it is unset or empty; anything else is a clear error. */
static spx_status spx__stencil_env_count(const char *name, const spx__env_num *k, const char *what, int64_t *out) {
  if (!k->set) return SPX_OK;
  if (k->set < 0 || k->n < 1 || k->n > INT32_MAX)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s=%.20s: use %s >= 1, or unset it", name, k->str, what);
  *out = k->n;
  return SPX_OK;
}

spx_status spx_stencil_run(spx_context *ctx, const spx_stencil *p, void *grid, int64_t steps,
                           const spx_stencil_options *opt, spx_stencil_report *rep) {
  spx_device_info dev;
  spx_stencil_plan pl;
  spx__stencil_kernels kern;
  spx__sx x;
  spx_status s;
  double t0;
  const char *trace;
  int final = 0, i, pushed = 0;
  if (rep) memset(rep, 0, sizeof *rep);
  if ((s = spx__stencil_check(p, "spx_stencil_run"))) return s;
  if (!ctx || !grid) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_run: NULL context or grid");
  if (steps < 0) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_run: %lld steps", (long long)steps);
  if (!steps) return SPX_OK;
  memset(&x, 0, sizeof x);
  x.gpu = ctx->backend == SPX_BACKEND_CUDA;
  if (x.gpu) {
    if ((s = spx_context_device_info(ctx, &dev))) return s;
    if (!(x.cu = spx__cuda())) return spx__fail(SPX_NOT_AVAILABLE, "spx_stencil_run: no CUDA driver");
  } else {
    memset(&dev, 0, sizeof dev);
    dev.ordinal = -1;
  }
  if ((s = spx_stencil_choose(p, steps, opt, &dev, &pl))) return s;
  if ((s = spx__host_fits(pl.host_bytes, opt, "this stencil run"))) return s;
  if (x.gpu && dev.free_mem > 0 && pl.device_bytes > dev.free_mem)
    return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "stencil %s needs %.1f MiB of device memory and %.1f MiB are "
                     "free: give a smaller budget", spx_stencil_method_name(pl.method),
                     (double)pl.device_bytes / 1048576.0, (double)dev.free_mem / 1048576.0);
  x.p = p; x.pl = &pl; x.ctx = ctx;
  x.pb = p->nx * p->ny * (int64_t)SPX_DTYPE_SIZE(p->dtype);
  x.g[0] = (char *)grid;
  x.timing = rep != NULL;
  if ((s = spx__stencil_env_count("SPX_STENCIL_CHUNK", &spx__cfg()->stencil_chunk, "a plane count", &x.min_chunk)) ||
      (s = spx__stencil_env_count("SPX_STENCIL_CHUNK_MAX", &spx__cfg()->stencil_chunk_max, "a plane count",
                                  &x.max_chunk)) ||
      (s = spx__stencil_env_count("SPX_STENCIL_SLOTS", &spx__cfg()->stencil_slots, "a block count", &x.main_slots)))
    return s;
  x.sm_count = dev.sm_count;
  if (x.gpu) { /* the kernels first: a compile error costs no allocation */
    void *fn;
    double j0 = spx__now();
    spx__stencil_kernels_of(p, &pl, &kern);
    if ((s = spx_jit_kernel(ctx, "stencil", kern.name[0], kern.n[0], kern.ptr[0], &fn))) return s;
    x.fn_main = (spx__CUfunction)fn;
    if ((s = spx_jit_kernel(ctx, "stencil", kern.name[1], kern.n[1], kern.ptr[1], &fn))) return s;
    x.fn_one = (spx__CUfunction)fn;
    if (rep) rep->jit_ms = 1e3 * (spx__now() - j0);
  }
  if ((s = spx__sx_alloc(&x))) goto done;
  if (x.gpu) {
    if ((s = spx__ctx_push(ctx))) goto done;
    pushed = 1;
    if ((s = spx__sx_gpu_setup(&x, &kern))) goto done;
  }
  t0 = spx__now();
  if ((s = spx__sx_schedule(&x, &final))) goto done;
  if (x.gpu)
    for (i = 0; i < SPX__SXS_N; i++)
      if ((s = spx__stream_sync(x.cu, x.st[i], "cuStreamSynchronize (stencil)"))) goto done;
  if (final) spx__sx_copy_back(&x);
  if (rep) {
    int64_t t;
    rep->total_ms = 1e3 * (spx__now() - t0);
    for (t = 0; t < x.nlog; t++) {
      float ms = 0;
      if ((s = spx__event_ms(x.cu, &ms, x.log[t].e0, x.log[t].e1))) goto done;
      x.ms[x.log[t].cat] += ms;
    }
    if (x.gpu && (trace = spx__cfg()->stencil_trace) && *trace && (s = spx__sx_trace(&x, trace))) goto done;
    rep->plan = pl;
    rep->kernel_ms = x.ms[SPX__SXC_KERNEL];
    rep->h2d_ms = x.ms[SPX__SXC_H2D];
    rep->d2h_ms = x.ms[SPX__SXC_D2H];
    rep->d2d_ms = x.ms[SPX__SXC_D2D];
    rep->h2d_bytes = x.bytes[SPX__SXC_H2D];
    rep->d2h_bytes = x.bytes[SPX__SXC_D2H];
    rep->d2d_bytes = x.bytes[SPX__SXC_D2D];
    rep->launches = x.launches;
    rep->gstencils = rep->total_ms > 0 ? (double)p->nx * p->ny * p->nz * (double)steps / (rep->total_ms * 1e-3) * 1e-9 : 0;
  }
done:
  if (pushed) {
    if (s) /* drain what was queued before anything is freed */
      for (i = 0; i < SPX__SXS_N; i++)
        if (x.st[i]) spx__stream_drain(x.cu, x.st[i]);
    spx__ctx_pop(ctx);
  }
  spx__sx_release(&x);
  return s;
}

/* ---- Grids and PCIe ----------------------------------------------------------------------------- */
spx_status spx_stencil_grid_alloc(spx_context *ctx, const spx_stencil *p, const spx_stencil_options *opt,
                                  void **out) {
  size_t bytes;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_grid_alloc: out is NULL");
  *out = NULL;
  if ((s = spx__stencil_check(p, "spx_stencil_grid_alloc"))) return s;
  if (!ctx) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_grid_alloc: NULL context");
  bytes = (size_t)(p->nx * p->ny * p->nz) * SPX_DTYPE_SIZE(p->dtype);
  if ((s = spx__host_fits((int64_t)bytes, opt, "the stencil grid"))) return s;
  if (ctx->backend == SPX_BACKEND_CUDA) {
    const spx__cuda_api *cu = spx__cuda();
    if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "spx_stencil_grid_alloc: no CUDA driver");
    if ((s = spx__ctx_push(ctx))) return s;
    s = spx__host_alloc(cu, out, bytes, "cuMemHostAlloc (stencil grid)");
    spx__ctx_pop(ctx);
    if (s) *out = NULL;
    return s;
  }
  if (!(*out = spx__alloc(1, bytes))) return SPX_OUT_OF_MEMORY;
  spx__advise_huge(*out, bytes);
  return SPX_OK;
}

void spx_stencil_grid_free(spx_context *ctx, void *grid) {
  const spx__cuda_api *cu;
  if (!grid || !ctx) return;
  if (ctx->backend == SPX_BACKEND_CUDA) {
    if ((cu = spx__cuda()) && !spx__ctx_push(ctx)) {
      spx__host_free(cu, grid);
      spx__ctx_pop(ctx);
    }
    return;
  }
  SPX_FREE(grid);
}

spx_status spx_stencil_pcie_bandwidth(spx_context *ctx, size_t bytes, int reps, double *h2d_gbs,
                                      double *d2h_gbs, double *duplex_gbs) {
  return spx__link_bandwidth(ctx, bytes, reps, h2d_gbs, d2h_gbs, duplex_gbs);
}
