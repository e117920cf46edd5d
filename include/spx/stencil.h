/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/stencil.h: the 3-D 7-point diffusion stencil, in core and larger than GPU memory.
 *
 *   spx_stencil p;
 *   spx_stencil_init(&p, 512, 512, 512, SPX_FLOAT, 0.4, 0.1, 0.1, 0.1);
 *   void *u;  spx_stencil_grid_alloc(ctx, &p, NULL, &u);      pinned on a CUDA context
 *   ... fill u (nx*ny*nz values of p.dtype, x fastest) ...
 *   spx_stencil_run(ctx, &p, u, 100, NULL, &report);          100 steps, the result in u
 *   spx_stencil_grid_free(ctx, u);
 *
 * THE STENCIL  u'(x,y,z) = c[0] u + c[1] u(x-1) + c[2] u(x+1) + c[3] u(y-1) + c[4] u(y+1)
 *              + c[5] u(z-1) + c[6] u(z+1), summed in that order without FMA contraction, in the
 *   grid's type. Dirichlet fixed boundary: cells with x, y or z first or last never change. A
 *   rate in GStencil/s counts nx*ny*nz cell updates per step (boundary cells are copied by the
 *   kernels, so every cell is read and written).
 *
 * METHODS (the paper ../shared/papers/004: Jin, Endo, Matsuoka, "A fast stencil computation method
 *   for the domain to surpass memory capacity of GPU"). The domain lives in host memory; the device
 *   holds z-slabs of it. TTS = steps per round trip, Ds = interior planes per slab.
 *   incore   both grids on the device: one upload, every step, one download.
 *   normal   every step streams the whole domain through the device, slab by slab (TTS = 1).
 *   mm       a slab and TTS planes of halo on each side go up, TTS steps run on the device with
 *            the valid region shrinking by one plane per step (redundant halo compute), the slab
 *            comes back. One step per launch.
 *   mmt      mm with in-kernel temporal blocking (depth steps per launch, shared memory).
 *   mmtb     mmt with the paper's buffer reuse: slabs run in z order, skewed by one plane per
 *            step; each launch reads the 2*depth planes below the slab that the previous slab
 *            computed at the same time level. The device windows are rings (plane z at slot z mod
 *            their size), so those planes stay where the previous slab wrote them: no copy (the
 *            paper copies them through a reuse buffer). Only the slab itself crosses PCIe and no
 *            plane is computed twice (beyond the in-kernel halo). One host grid: the result is
 *            written in place.
 *   overlap  mmtb with uploads, compute and downloads on three streams (the paper's future work):
 *            slab j+1 goes up and slab j-1 comes down while slab j computes. The default.
 *
 * CAPACITY (device bytes = planes * nx*ny*sizeof(T); d = depth, R = TTS)
 *   paper    M >= 2 D^2 (Ds + TTS) + D^2 TTS * 4/2          (two slab grids + 4 planes per 2 steps)
 *   normal   2 (Ds + 2)
 *   mm, mmt  2 (Ds + 2R)                                     (halo of R planes each side)
 *   mmtb     2 (Ds + R + d + 1)                              (skew R + supply d + boundary plane;
 *                                                             ring windows: the planes the next slab
 *                                                             reuses stay in place, no reuse buffer)
 *   overlap  2 (2 Ds + R + d + 2), one slab: 2 nz            (rings with room for the next slab's
 *                                                             upload and the last one's download)
 *   incore   2 nz
 *   spx_stencil_capacity evaluates these; spx_stencil_choose picks R and Ds for a budget with a
 *   cost model (compute, PCIe each way, device copies, launches) and says why.
 *
 * HOST MEMORY  incore, mmtb, overlap: the caller's grid only. normal, mm, mmt: the caller's grid and
 *   one more of the same size (each round reads the old grid and writes the new one). The host
 *   backend also holds the "device" buffers (it emulates every method exactly: same schedule,
 *   same copies, same planes). A run that cannot fit host memory fails with SPX_OUT_OF_MEMORY
 *   before allocating anything.
 *
 * THREADS  spx_stencil_run is synchronous (it returns with the result in the grid) and uses its own
 *   streams; it may run concurrently with other spx calls on other contexts. */
#ifndef SPX_STENCIL_H
#define SPX_STENCIL_H

#include <stddef.h>
#include <stdint.h>
#include "device.h"
#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Methods. ORDER: the enum values; OVERLAP is the default (0).
 *  _(ENUM_SUFFIX, "name",    host grids, "what it does") */
#define SPX_STENCIL_METHODS(_)                                                                \
  _(OVERLAP, "overlap", 1, "mmtb with copies overlapped with compute on three streams")        \
  _(INCORE,  "incore",  1, "the whole domain on the device (two grids)")                       \
  _(NORMAL,  "normal",  2, "every step streams the whole domain through the device")           \
  _(MM,      "mm",      2, "TTS steps per round trip, halos recomputed, one step per launch")  \
  _(MMT,     "mmt",     2, "mm with in-kernel temporal blocking")                              \
  _(MMTB,    "mmtb",    1, "mmt with the buffer reuse that removes redundant halo work")

typedef enum spx_stencil_method {
#define SPX__STENCIL_METHOD_ENUM(e, name, grids, what) SPX_STENCIL_##e,
  SPX_STENCIL_METHODS(SPX__STENCIL_METHOD_ENUM)
#undef SPX__STENCIL_METHOD_ENUM
  SPX_STENCIL_METHOD_COUNT
} spx_stencil_method;

/* "mmtb"; "unknown" outside the table. */
const char *spx_stencil_method_name(spx_stencil_method m);
/* The method named s; SPX_INVALID_ARGUMENT (naming the choices) when there is none. */
spx_status spx_stencil_method_parse(const char *s, spx_stencil_method *out);

/* The problem. */
typedef struct spx_stencil {
  int64_t nx, ny, nz;  /* each >= 3 */
  spx_dtype dtype;
  double c[7];         /* centre, x-, x+, y-, y+, z-, z+ (rounded to dtype) */
} spx_stencil;

/* Fills p with a symmetric stencil: c[0] = c0, c[1..2] = cx, c[3..4] = cy, c[5..6] = cz.
 * SPX_INVALID_ARGUMENT for a size below 3 or a grid over 2^62 cells. */
spx_status spx_stencil_init(spx_stencil *p, int64_t nx, int64_t ny, int64_t nz, spx_dtype dtype,
                            double c0, double cx, double cy, double cz);

/* The temporal-blocking depth when the options give none: depth 4 is no faster than 2 at most
 * sizes (docs/performance.md; bench/results/stencil/stencil-fig11-s128-d4.txt). */
#define SPX_STENCIL_DEFAULT_DEPTH 2

typedef struct spx_stencil_options {
  spx_stencil_method method; /* 0 = overlap */
  int64_t budget;            /* device bytes the run may use; 0 = free memory less 5% (at least
                              * 256 MiB left); the host backend: unlimited */
  int depth;                 /* steps per launch, 1, 2 or 4; 0 = SPX_STENCIL_DEFAULT_DEPTH (1 for
                              * normal and mm, which are one step per launch by definition) */
  int64_t tts;               /* steps per round trip; 0 = the cost model's choice */
  int64_t slab;              /* interior planes per slab, at most; 0 = the largest that fits */
  int shared;                /* 1: the shared-memory kernel even at depth 1 */
  int bx, by;                /* block shape; 0 = 32 x 8 (one step) or 32 x 32 (shared memory) */
  int xv;                    /* x cells per thread of the one-step kernel, 1 or 2; 0 = the
                              * environment's SPX_STENCIL_XV=1|2 if set, else 2 in float and 1 in
                              * double. 2 needs an even nx (aligned pair loads): an odd nx runs 1 */
  int64_t host_limit;        /* host bytes the run may allocate; 0 = MemAvailable */
  /* Cost-model inputs (0 = estimates from the device): */
  double pcie_gbs;           /* one direction, GB/s */
  double pcie_duplex_gbs;    /* both directions at once, total GB/s */
  double copy_gbs;           /* device copy (read + write) GB/s */
  double incore_gstencils;   /* the in-core rate of the kernel the plan uses */
} spx_stencil_options;

/* What a run does. */
typedef struct spx_stencil_plan {
  spx_stencil_method method;
  int depth;                 /* steps per launch */
  int shared;                /* 1: spx_stencil_tb (shared memory), 0: spx_stencil_step */
  int bx, by;                /* block shape */
  int xv;                    /* x cells per thread of the one-step kernel (spx_stencil_step: the
                              * main kernel at depth 1, the remainder steps otherwise): 1 or 2 */
  int64_t steps;
  int64_t tts;               /* steps per round trip (R); steps for incore */
  int64_t slab;              /* interior planes per slab, at most (Ds); nz - 2 for incore */
  int64_t nslabs;            /* slabs per round */
  int64_t rounds;            /* ceil(steps / tts) */
  int64_t window_planes;     /* planes of each of the two device slab buffers */
  int64_t device_bytes;      /* everything allocated on the device */
  int64_t budget;            /* the budget it was made for */
  int host_grids;            /* 1 or 2 (the caller's included) */
  int64_t host_bytes;        /* host bytes the run allocates (second grid, host-backend buffers) */
  double model_gstencils;    /* the cost model's prediction */
  double bound_gstencils;    /* min(in-core rate, TTS * PCIe / bytes per cell each way) */
  char why[240];             /* the choice in a sentence */
} spx_stencil_plan;

/* Device bytes that method m needs for slabs of `slab` interior planes, `tts` steps per round trip
 * and depth `depth` (the CAPACITY table above). SPX_INVALID_ARGUMENT for non-positive values or
 * a depth other than 1, 2, 4. */
spx_status spx_stencil_capacity(const spx_stencil *p, spx_stencil_method m, int depth, int64_t tts,
                                int64_t slab, int64_t *bytes);

/* The plan for `steps` steps under opt (NULL: defaults) on device `dev` (NULL or a host context's
 * info: no device limits, budget unlimited unless given). SPX_DEVICE_OUT_OF_MEMORY when the budget
 * cannot hold one slab of the smallest configuration (the message gives what it needs);
 * SPX_INVALID_ARGUMENT for bad sizes or options. Needs no GPU. */
spx_status spx_stencil_choose(const spx_stencil *p, int64_t steps, const spx_stencil_options *opt,
                              const spx_device_info *dev, spx_stencil_plan *out);

typedef struct spx_stencil_report {
  spx_stencil_plan plan;
  double total_ms;                          /* wall time of the run, first copy to result */
  double kernel_ms, h2d_ms, d2h_ms, d2d_ms; /* summed per operation (they overlap in overlap) */
  int64_t h2d_bytes, d2h_bytes, d2d_bytes;
  int64_t launches;
  double gstencils;                         /* nx*ny*nz*steps / total_ms */
  double jit_ms;                            /* getting the kernels (not in total_ms) */
} spx_stencil_report;

/* Runs `steps` steps on `grid` (host memory, nx*ny*nz values of p->dtype, x fastest); the result
 * replaces it. A CUDA context runs on the GPU (grid should come from spx_stencil_grid_alloc: pinned
 * memory, else the copies are slow); a host context runs the host reference (incore, OpenMP) or
 * emulates the method exactly. rep (may be NULL) receives the plan and the timings. */
spx_status spx_stencil_run(spx_context *ctx, const spx_stencil *p, void *grid, int64_t steps,
                           const spx_stencil_options *opt, spx_stencil_report *rep);

/* The host reference (OpenMP): `steps` steps in place, with one scratch grid. */
spx_status spx_stencil_reference(const spx_stencil *p, void *grid, int64_t steps);

/* A grid for p: pinned host memory on a CUDA context, plain memory on the host. Checks host
 * memory first: SPX_OUT_OF_MEMORY with the sizes when the grid cannot fit (opt->host_limit, or
 * MemAvailable), before allocating anything. Free with spx_stencil_grid_free. */
spx_status spx_stencil_grid_alloc(spx_context *ctx, const spx_stencil *p, const spx_stencil_options *opt,
                                  void **out);
void spx_stencil_grid_free(spx_context *ctx, void *grid);

/* Pinned host-to-device and device-to-host bandwidth (GB/s), best of reps copies of bytes each,
 * one way then both at once (the sum of both directions): the PCIe numbers a plan is held to. */
spx_status spx_stencil_pcie_bandwidth(spx_context *ctx, size_t bytes, int reps, double *h2d_gbs,
                                      double *d2h_gbs, double *duplex_gbs);

/* Compiles the kernels a plan would use for p for architecture arch ("sm_90"; NULL: device 0's)
 * without a GPU (spx_jit_compile_only). */
spx_status spx_stencil_warm(const spx_stencil *p, const spx_stencil_plan *plan, const char *arch);

#ifdef __cplusplus
}
#endif
#endif /* SPX_STENCIL_H */
