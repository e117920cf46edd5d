/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/stencil_sched.h: what the stencil's rooms (stencil_plan_impl.h,
 * stencil_schedule_impl.h, stencil_impl.h, bottom up in spx.h) give the rooms above them: the
 * planner's buffers and launch arithmetic, then the executor (struct spx__sx) the schedules run on
 * and the schedules themselves. Each section names the file that defines it; a room calls only the
 * sections before its own. Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_STENCIL_SCHED_H
#define SPX_INTERNAL_STENCIL_SCHED_H

#include "common.h"
#include "cuda_types.h"
#include "../stencil.h"

/* ---- stencil_plan_impl.h: the planner --------------------------------------------------------- */
/* Host grids of each method (SPX_STENCIL_METHODS' grids column). */
extern const int spx__stencil_method_grids[];
/* Device planes of each buffer of a method; see the CAPACITY table in stencil.h. */
typedef struct spx__stencil_bufs { int64_t window, total; } spx__stencil_bufs;
spx__stencil_bufs spx__stencil_bufs_of(spx_stencil_method m, int d, int64_t R, int64_t Ds, int64_t nz);
/* p is a valid problem; else SPX_INVALID_ARGUMENT naming `what`. */
spx_status spx__stencil_check(const spx_stencil *p, const char *what);
/* need bytes of host memory fit (o->host_limit, else what the system has available). */
spx_status spx__host_fits(int64_t need, const spx_stencil_options *o, const char *what);
/* Launches of a round of r steps at depth d (odd: overlap's odd launch count), and launch k's depth
 * and first step. */
int64_t spx__stencil_nlaunch(int64_t r, int d, int odd);
int spx__stencil_ldepth(int64_t k, int64_t r, int d, int odd);
int64_t spx__stencil_lstart(int64_t k, int64_t r, int d, int odd);
/* Planes of a plan's ring windows (mmtb, overlap: the window buffers' size), 0 for linear windows. */
int64_t spx__stencil_ring(const spx_stencil_plan *pl);

/* ---- stencil_schedule_impl.h: the executor and the schedules ---------------------------------- */
enum { SPX__SXC_KERNEL, SPX__SXC_H2D, SPX__SXC_D2H, SPX__SXC_D2D, SPX__SXC_N };       /* time split */
enum { SPX__SXS_COMPUTE, SPX__SXS_UP, SPX__SXS_DOWN, SPX__SXS_N };                     /* streams */
enum { SPX__SXB_W0, SPX__SXB_W1, SPX__SXB_N }; /* buffers: the two windows */
/* events: a tile's upload done; compute and download done by tile parity; slab j's download */
enum { SPX__SXE_UP_DONE, SPX__SXE_K0, SPX__SXE_K1, SPX__SXE_D0, SPX__SXE_D1, SPX__SXE_TILE };

typedef struct spx__sx_timing { int cat, stream; spx__CUevent e0, e1; } spx__sx_timing;

typedef struct spx__sx {
  const spx_stencil *p;
  const spx_stencil_plan *pl;
  int64_t pb;                        /* bytes per plane */
  int gpu;
  uintptr_t buf[SPX__SXB_N];         /* device (or host-backend) buffers */
  int64_t cap[SPX__SXB_N];           /* their planes */
  char *g[2];                        /* host grids: the caller's, and the second one */
  /* host backend */
  char *tmp[2];
  /* GPU */
  spx_context *ctx;
  const spx__cuda_api *cu;
  spx__CUstream st[SPX__SXS_N];
  spx__CUevent *ev;
  int nev;
  spx__CUfunction fn_main, fn_one;
  unsigned main_block[2], one_block[2];
  int main_xv, one_xv;               /* x cells per thread of each kernel */
  int64_t min_chunk;                 /* SPX_STENCIL_CHUNK: shortest z-chunk of a launch (0: by depth) */
  int64_t ring_off;                  /* overlap: this round's planes lie at slot (z + ring_off) mod cap */
  int sm_count;
  int64_t main_slots;                /* blocks of the tb kernel the GPU runs at once */
  int64_t max_chunk;                 /* SPX_STENCIL_CHUNK_MAX */
  int timing;
  spx__sx_timing *log;
  int64_t nlog, caplog;
  /* results */
  double ms[SPX__SXC_N];
  int64_t bytes[SPX__SXC_N];
  int64_t launches;
} spx__sx;

/* Runs the plan's schedule; *final = the host grid with the result. */
spx_status spx__sx_schedule(spx__sx *x, int *final);
/* Parallel copy of the interior planes of the second grid back into the caller's. */
void spx__sx_copy_back(spx__sx *x);

#endif /* SPX_INTERNAL_STENCIL_SCHED_H */
