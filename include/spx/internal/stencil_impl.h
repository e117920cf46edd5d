/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/stencil.h: the planner (capacity formula + cost model), one schedule per
 * method family written once against a small set of operations (copy, step, record, wait), and two
 * executors of those operations: the GPU (driver API, three streams, JIT kernels from
 * templates/stencil.cu) and the host (memcpy and an OpenMP step), so the host backend runs the
 * very schedule the GPU runs, copy for copy, and tests without a GPU check every method's
 * plane arithmetic exactly. */
#include <stdio.h>
#include <unistd.h>
#include "common.h"
#include "config.h"
#include "cuda_types.h"
#include "../stencil.h"
#include "../jit.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

/* ---- Names ------------------------------------------------------------------------------------ */
static const char *const spx__stencil_method_names[] = {
#define SPX__STENCIL_METHOD_NAME(e, name, grids, what) name,
    SPX_STENCIL_METHODS(SPX__STENCIL_METHOD_NAME)
#undef SPX__STENCIL_METHOD_NAME
};
static const int spx__stencil_method_grids[] = {
#define SPX__STENCIL_METHOD_GRIDS(e, name, grids, what) grids,
    SPX_STENCIL_METHODS(SPX__STENCIL_METHOD_GRIDS)
#undef SPX__STENCIL_METHOD_GRIDS
};

const char *spx_stencil_method_name(spx_stencil_method m) {
  return (int)m >= 0 && m < SPX_STENCIL_METHOD_COUNT ? spx__stencil_method_names[m] : "unknown";
}

spx_status spx_stencil_method_parse(const char *s, spx_stencil_method *out) {
  int i;
  if (!s || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_method_parse: NULL argument");
  for (i = 0; i < SPX_STENCIL_METHOD_COUNT; i++)
    if (!strcmp(s, spx__stencil_method_names[i])) { *out = (spx_stencil_method)i; return SPX_OK; }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown stencil method '%.40s' (overlap, incore, normal, mm, "
                   "mmt, mmtb)", s);
}

spx_status spx_stencil_init(spx_stencil *p, int64_t nx, int64_t ny, int64_t nz, spx_dtype dtype,
                            double c0, double cx, double cy, double cz) {
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_init: NULL problem");
  memset(p, 0, sizeof *p);
  if (nx < 3 || ny < 3 || nz < 3 || nx > INT32_MAX || ny > INT32_MAX || nz > INT32_MAX ||
      (double)nx * (double)ny * (double)nz > 4.6e18 || (dtype != SPX_DOUBLE && dtype != SPX_FLOAT))
    return spx__fail(SPX_INVALID_ARGUMENT, "stencil grid %lld x %lld x %lld (%s): every edge needs "
                     "3..2^31-1 cells (a boundary on each side and one interior cell) and a double or "
                     "float type", (long long)nx, (long long)ny, (long long)nz, spx_dtype_name(dtype));
  p->nx = nx; p->ny = ny; p->nz = nz; p->dtype = dtype;
  p->c[0] = c0; p->c[1] = p->c[2] = cx; p->c[3] = p->c[4] = cy; p->c[5] = p->c[6] = cz;
  return SPX_OK;
}

static spx_status spx__stencil_check(const spx_stencil *p, const char *what) {
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL problem", what);
  if (p->nx < 3 || p->ny < 3 || p->nz < 3 || p->nx > INT32_MAX || p->ny > INT32_MAX || p->nz > INT32_MAX ||
      (double)p->nx * (double)p->ny * (double)p->nz > 4.6e18 || (p->dtype != SPX_DOUBLE && p->dtype != SPX_FLOAT))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: bad grid %lld x %lld x %lld (each edge 3..2^31-1)", what,
                     (long long)p->nx, (long long)p->ny, (long long)p->nz);
  return SPX_OK;
}

/* ---- Capacity -------------------------------------------------------------------------------- */
/* Device planes of each buffer of a method; see the CAPACITY table in stencil.h. */
typedef struct spx__stencil_bufs { int64_t window, total; } spx__stencil_bufs;

static spx__stencil_bufs spx__stencil_bufs_of(spx_stencil_method m, int d, int64_t R, int64_t Ds, int64_t nz) {
  spx__stencil_bufs b;
  memset(&b, 0, sizeof b);
  switch (m) {
  case SPX_STENCIL_INCORE: b.window = nz; break;
  case SPX_STENCIL_NORMAL: b.window = SPX__MIN(nz, Ds + 2); break;
  case SPX_STENCIL_MM:
  case SPX_STENCIL_MMT: b.window = SPX__MIN(nz, Ds + 2 * R); break;
  case SPX_STENCIL_MMTB:
    b.window = SPX__MIN(nz, Ds + R + d + 1); /* rings: the planes a slab hands the next stay in place */
    break;
  case SPX_STENCIL_OVERLAP:
    /* rings with room for the next slab's upload and the last one's download beside the slab
     * that computes (spx__sx_mmtb); one slab: the domain */
    b.window = Ds >= nz - 2 ? nz : 2 * Ds + R + d + 2;
    break;
  default: break;
  }
  b.total = 2 * b.window;
  return b;
}

static int spx__stencil_depth_ok(int d) { return d == 1 || d == 2 || d == 4; }

spx_status spx_stencil_capacity(const spx_stencil *p, spx_stencil_method m, int depth, int64_t tts,
                                int64_t slab, int64_t *bytes) {
  spx_status s;
  if (!bytes) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_capacity: bytes is NULL");
  *bytes = 0;
  if ((s = spx__stencil_check(p, "spx_stencil_capacity"))) return s;
  if ((int)m < 0 || m >= SPX_STENCIL_METHOD_COUNT || !spx__stencil_depth_ok(depth) || tts < 1 || slab < 1 ||
      slab > p->nz - 2)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_capacity: method %d, depth %d (1, 2, 4), tts %lld "
                     "(>= 1), slab %lld (1..%lld)", (int)m, depth, (long long)tts, (long long)slab,
                     (long long)(p->nz - 2));
  *bytes = spx__stencil_bufs_of(m, depth, tts, slab, p->nz).total * p->nx * p->ny *
           (int64_t)SPX_DTYPE_SIZE(p->dtype);
  return SPX_OK;
}

/* ---- Host memory ------------------------------------------------------------------------------ */
/* MemAvailable from /proc/meminfo, else free physical pages; INT64_MAX when unknown. */
static int64_t spx__host_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  long long kb;
  if (f) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) { fclose(f); return (int64_t)kb * 1024; }
    fclose(f);
  }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
  {
    long pages = sysconf(_SC_AVPHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (pages > 0 && ps > 0) return (int64_t)pages * ps;
  }
#endif
  return INT64_MAX;
}

static spx_status spx__host_fits(int64_t need, const spx_stencil_options *o, const char *what) {
  int64_t avail = o && o->host_limit > 0 ? o->host_limit : spx__host_available();
  if (need > avail)
    return spx__fail(SPX_OUT_OF_MEMORY, "%s needs %.2f GiB of host memory and %.2f GiB %s: use a smaller "
                     "grid, float instead of double, or method mmtb/overlap (one host grid)", what,
                     (double)need / 1073741824.0, (double)avail / 1073741824.0,
                     o && o->host_limit > 0 ? "is the limit" : "are available");
  return SPX_OK;
}

/* ---- Planner ---------------------------------------------------------------------------------- */
/* Launches of a round of r steps at depth d: the one-step ones first, then those of depth d. Never
 * a shallower launch after a deeper one: in mmtb's ring windows, launch k+1 then writes below the
 * top 2 dk planes of launch k's input, which the next slab reads (see spx__sx_mmtb). One-step
 * launches: r % d, and d more where `odd` asks for an odd launch count and d is even (overlap: the
 * output then lands in the second window, so uploads need not wait for downloads, which an even
 * count makes them do). */
static int64_t spx__stencil_ones(int64_t r, int d, int odd) {
  int64_t u = r % d;
  if (odd && d % 2 == 0 && r - u >= d && (u + (r - u) / d) % 2 == 0) u += d;
  return u;
}
static int64_t spx__stencil_nlaunch(int64_t r, int d, int odd) {
  const int64_t u = spx__stencil_ones(r, d, odd);
  return u + (r - u) / d;
}
static int spx__stencil_ldepth(int64_t k, int64_t r, int d, int odd) { return k < spx__stencil_ones(r, d, odd) ? 1 : d; }
static int64_t spx__stencil_lstart(int64_t k, int64_t r, int d, int odd) {
  const int64_t u = spx__stencil_ones(r, d, odd);
  return k < u ? k : u + (k - u) * d;
}

typedef struct spx__stencil_rates {
  double rc;      /* in-core cells per second of the kernel the plan uses */
  double pcie;    /* one direction, bytes/s */
  double duplex;  /* both at once, bytes/s (total) */
  double copy;    /* device copy, bytes/s (read + write counted) */
} spx__stencil_rates;

static void spx__stencil_block(const spx_stencil_options *o, int d, int shared, int *bx, int *by) {
  *bx = o && o->bx > 0 ? o->bx : 32;
  *by = o && o->by > 0 ? o->by : shared ? 32 : 8;
  (void)d;
}

static spx__stencil_rates spx__stencil_rates_of(const spx_stencil *p, const spx_stencil_options *o,
                                                const spx_device_info *dev, int d, int shared, int bx, int by) {
  spx__stencil_rates r;
  double esz = (double)SPX_DTYPE_SIZE(p->dtype);
  r.copy = o && o->copy_gbs > 0 ? o->copy_gbs * 1e9
           : dev && dev->peak_bandwidth_gbs > 0 ? 0.9 * dev->peak_bandwidth_gbs * 1e9 : 1e12;
  r.pcie = o && o->pcie_gbs > 0 ? o->pcie_gbs * 1e9 : 25e9;
  r.duplex = o && o->pcie_duplex_gbs > 0 ? o->pcie_duplex_gbs * 1e9 : 1.6 * r.pcie;
  if (o && o->incore_gstencils > 0) r.rc = o->incore_gstencils * 1e9;
  else if (!shared) r.rc = 0.85 * r.copy / (2 * esz);
  else { /* bytes per cell per d steps: the haloed tile read once, the output written once */
    double eff = (double)(bx - 2 * d) * (by - 2 * d) / ((double)bx * by);
    r.rc = 0.8 * r.copy * d / (esz * (1.0 / eff + 1.0));
  }
  return r;
}

/* Modelled seconds of one round of Rr steps with slabs of at most Ds planes (J of them). */
static double spx__stencil_round(const spx_stencil *p, spx_stencil_method m, int d, int64_t Rr, int64_t J,
                                 const spx__stencil_rates *r) {
  const double P = (double)p->nx * p->ny, pb = P * SPX_DTYPE_SIZE(p->dtype), Z = (double)(p->nz - 2);
  const double launch = 4e-6, R = (double)Rr;
  const int64_t nl = spx__stencil_nlaunch(Rr, d, m == SPX_STENCIL_OVERLAP);
  double comp, h2d, d2h, d2d;
  if (m == SPX_STENCIL_MMTB || m == SPX_STENCIL_OVERLAP) {
    comp = (Z + 2) * P * R / r->rc + (double)(J * nl) * launch;
    /* the ring windows keep the planes a slab hands the next: no copies but the boundary planes */
    d2d = 2.0 * 2.0 * pb / r->copy;
    h2d = (Z + 2) * pb / r->pcie;
    d2h = Z * pb / r->pcie;
    if (m == SPX_STENCIL_OVERLAP) {
      /* the two directions at once, unless an even number of launches (depth 1) leaves the
       * output in the first window: then each upload waits for the download two slabs back */
      double both = nl % 2 ? (h2d + d2h) * r->pcie / r->duplex : h2d + d2h;
      return SPX__MAX(comp + d2d, SPX__MAX(both, SPX__MAX(h2d, d2h)));
    }
    return comp + d2d + h2d + d2h;
  }
  /* normal, mm, mmt: each of the J - 1 inner slab edges is recomputed from both sides, 2 (Rr - s)
   * planes after step s: Rr (Rr - 1) planes per edge (at most the domain per step), and Rr planes
   * of halo go up on each side of it. */
  {
    double halo = SPX__MIN(R * (R - 1), 2.0 * Z * R) * (double)(J - 1);
    comp = ((Z + 2) * R + halo) * P / r->rc + (double)(J * nl) * launch;
    h2d = SPX__MIN((double)J * (Z + 2), Z + 2 + 2.0 * R * (double)(J - 1)) * pb / r->pcie;
    d2h = Z * pb / r->pcie;
    return comp + h2d + d2h;
  }
}

/* Modelled seconds of `steps` steps with tts R and slabs of at most Ds planes (J of them). */
static double spx__stencil_model(const spx_stencil *p, spx_stencil_method m, int d, int64_t steps, int64_t R,
                                 int64_t Ds, int64_t J, const spx__stencil_rates *r) {
  const double P = (double)p->nx * p->ny, pb = P * SPX_DTYPE_SIZE(p->dtype);
  double total;
  if (m == SPX_STENCIL_INCORE)
    return (double)steps * (double)p->nz * P / r->rc + (double)spx__stencil_nlaunch(steps, d, 0) * 4e-6 +
           2.0 * (double)p->nz * pb / r->pcie;
  total = (double)(steps / R) * spx__stencil_round(p, m, d, R, J, r);
  if (steps % R) total += spx__stencil_round(p, m, d, steps % R, J, r);
  if (m == SPX_STENCIL_OVERLAP && J > 1) /* the pipeline fills once: the first slab up, the last down */
    total += 2.0 * (double)Ds * pb / r->pcie;
  return total;
}

/* The largest slab (interior planes) that fits `budget` for tts R, or 0. */
static int64_t spx__stencil_max_slab(const spx_stencil *p, spx_stencil_method m, int d, int64_t R, int64_t budget) {
  const int64_t pb = p->nx * p->ny * (int64_t)SPX_DTYPE_SIZE(p->dtype);
  int64_t lo = 0, hi = p->nz - 2;
  /* overlap's one slab needs only the domain's two grids, less than two slabs' rings */
  if (spx__stencil_bufs_of(m, d, R, hi, p->nz).total <= budget / pb) return hi;
  hi--;
  while (lo < hi) { /* below one slab, the capacity grows with the slab */
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (spx__stencil_bufs_of(m, d, R, mid, p->nz).total > budget / pb) hi = mid - 1;
    else lo = mid;
  }
  return lo;
}

/* Tile 0 saves its top 2d planes for every launch: its slab must reach R + d - 1 planes. */
static int spx__stencil_feasible(spx_stencil_method m, int d, int64_t R, int64_t Z, int64_t J) {
  int dmax = R >= d ? d : 1;
  if (m != SPX_STENCIL_MMTB && m != SPX_STENCIL_OVERLAP) return 1;
  return J == 1 || (Z + J - 1) / J >= R + dmax - 1; /* the first slab's size, see spx__sx_slab */
}

/* x cells per thread of the one-step kernel: the option, else SPX_STENCIL_XV=1|2 from the
 * environment (to compare the two on one build: bench/device.sh stencil-ab), else 2, which keeps
 * more bytes in flight per thread. 2 loads cell pairs as float2/double2, aligned only when every
 * row starts at an even index: an odd nx runs 1. */
static spx_status spx__stencil_xv(const spx_stencil *p, const spx_stencil_options *o, int *xv) {
  const char *e = spx__cfg()->stencil_xv;
  /* Default 2 in float only: pairs bring float close to the roofline, while double already
   * reaches it with one cell and the pairs cost registers (bench/results/stencil-ab.txt). */
  *xv = p->dtype == SPX_FLOAT ? 2 : 1;
  if (o->xv) {
    if (o->xv != 1 && o->xv != 2)
      return spx__fail(SPX_INVALID_ARGUMENT, "stencil: xv %d (x cells per thread of the one-step kernel: 1 or 2)", o->xv);
    *xv = o->xv;
  } else if (e && *e) {
    if (strcmp(e, "1") && strcmp(e, "2"))
      return spx__fail(SPX_INVALID_ARGUMENT, "SPX_STENCIL_XV=%.20s: use 1 or 2 (x cells per thread of the one-step "
                       "stencil kernel), or unset it", e);
    *xv = e[0] - '0';
  }
  if (p->nx % 2) *xv = 1;
  return SPX_OK;
}

spx_status spx_stencil_choose(const spx_stencil *p, int64_t steps, const spx_stencil_options *opt,
                              const spx_device_info *dev, spx_stencil_plan *out) {
  spx_stencil_options o;
  spx_stencil_plan pl;
  spx__stencil_rates rt;
  spx_status s;
  int64_t Z, pb, budget, R, Rbest = 0, Dsbest = 0, Jbest = 0, Rmax;
  double best = 1e300, esz;
  int gpu = dev && dev->ordinal >= 0;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_choose: out is NULL");
  memset(out, 0, sizeof *out);
  if ((s = spx__stencil_check(p, "spx_stencil_choose"))) return s;
  if (opt) o = *opt;
  else memset(&o, 0, sizeof o);
  if (steps < 1) return spx__fail(SPX_INVALID_ARGUMENT, "stencil: %lld steps (at least 1)", (long long)steps);
  if ((int)o.method < 0 || o.method >= SPX_STENCIL_METHOD_COUNT)
    return spx__fail(SPX_INVALID_ARGUMENT, "stencil: unknown method %d", (int)o.method);
  if (o.budget < 0 || o.tts < 0 || o.slab < 0 || o.depth < 0 || o.bx < 0 || o.by < 0 || o.xv < 0 || o.host_limit < 0)
    return spx__fail(SPX_INVALID_ARGUMENT, "stencil: negative option");
  if (o.tts > steps) o.tts = steps; /* a round never runs more steps than the run has */
  memset(&pl, 0, sizeof pl);
  pl.method = o.method;
  pl.steps = steps;
  esz = (double)SPX_DTYPE_SIZE(p->dtype);
  Z = p->nz - 2;
  pb = p->nx * p->ny * (int64_t)SPX_DTYPE_SIZE(p->dtype);
  /* Depth: normal and mm are one step per launch by definition (what separates mm from mmt). */
  if (o.method == SPX_STENCIL_NORMAL || o.method == SPX_STENCIL_MM) {
    if (o.depth > 1)
      return spx__fail(SPX_INVALID_ARGUMENT, "stencil: method %s runs one step per launch; depth %d applies to "
                       "incore, mmt, mmtb and overlap", spx_stencil_method_name(o.method), o.depth);
    pl.depth = 1;
  } else {
    pl.depth = o.depth ? o.depth : SPX_STENCIL_DEFAULT_DEPTH;
  }
  if (!spx__stencil_depth_ok(pl.depth))
    return spx__fail(SPX_INVALID_ARGUMENT, "stencil: depth %d (1, 2 or 4 steps per launch)", pl.depth);
  pl.shared = pl.depth > 1 || o.shared;
  spx__stencil_block(&o, pl.depth, pl.shared, &pl.bx, &pl.by);
  if ((s = spx__stencil_xv(p, &o, &pl.xv))) return s;
  if (pl.bx * pl.by > 1024 || pl.bx % 32 || (pl.shared && (pl.bx <= 2 * pl.depth || pl.by <= 2 * pl.depth ||
                                                           (double)pl.depth * pl.bx * pl.by * esz > 48 * 1024)))
    return spx__fail(SPX_INVALID_ARGUMENT, "stencil: block %d x %d: x a multiple of 32, at most 1024 threads, "
                     "more than 2*depth each way, depth*bx*by*sizeof(T) <= 48 KiB of shared memory",
                     pl.bx, pl.by);
  if (o.method == SPX_STENCIL_NORMAL && o.tts > 1)
    return spx__fail(SPX_INVALID_ARGUMENT, "stencil: method normal has one step per round trip (tts 1)");
  budget = o.budget;
  if (!budget) {
    if (gpu) {
      int64_t reserve = SPX__MAX((int64_t)256 << 20, dev->total_mem / 20);
      budget = dev->free_mem - reserve;
      if (budget <= 0)
        return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "stencil: %.0f MiB free on %s, less than the %.0f MiB "
                         "kept in reserve", (double)dev->free_mem / 1048576.0, dev->name, (double)reserve / 1048576.0);
    } else {
      budget = INT64_MAX / 2;
    }
  }
  pl.budget = budget;
  rt = spx__stencil_rates_of(p, &o, dev, pl.depth, pl.shared, pl.bx, pl.by);
  if (o.method == SPX_STENCIL_INCORE) {
    spx__stencil_bufs b = spx__stencil_bufs_of(SPX_STENCIL_INCORE, pl.depth, steps, Z, p->nz);
    if (b.total > budget / pb)
      return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "stencil: incore needs two grids, %.1f MiB, over the budget "
                       "of %.1f MiB: use an out-of-core method (overlap, mmtb, ...)",
                       (double)b.total * pb / 1048576.0, (double)budget / 1048576.0);
    Rbest = steps; Dsbest = Z; Jbest = 1;
    best = spx__stencil_model(p, SPX_STENCIL_INCORE, pl.depth, steps, steps, Z, 1, &rt);
  } else {
    Rmax = o.method == SPX_STENCIL_NORMAL ? 1 : o.tts ? o.tts : SPX__MIN(steps, (int64_t)1 << 16);
    for (R = o.tts ? o.tts : 1; R <= Rmax; R++) {
      int64_t Ds, J;
      double t;
      /* Candidates: multiples of the depth, fewer steps than the depth (small budgets), and the
       * whole run in one round. Of the tts that give the same number of rounds, only the smallest
       * multiple of the depth: its rounds are as equal as the depth allows, its windows smallest,
       * its slabs largest. A short last round (640^3 under 1 GiB, 128 steps as 88 + 40) moves as
       * much over PCIe per slab as a long one, so its slabs' uploads barely fit their compute and
       * any jitter stalls the pipeline; 64 + 64 leaves slack in both. overlap at an even depth
       * takes the next multiple when that one has an even number of launches and the last round
       * stays within d steps of the others (66 + 62, not 64 + 64): an even count runs d one-step
       * launches more (spx__stencil_ones), each dearer per step than a depth-d launch. Not
       * 34 x 3 + 26 for 32 x 4: uneven rounds cost more than the odd count saves
       * (docs/performance.md, "Kernel waves"). */
      if (!o.tts && o.method != SPX_STENCIL_NORMAL) {
        int64_t n = (steps + R - 1) / R, Rn = (steps + n - 1) / n;
        if (R % pl.depth && R > pl.depth && R != steps) continue;
        Rn = (Rn + pl.depth - 1) / pl.depth * pl.depth;
        if (o.method == SPX_STENCIL_OVERLAP && pl.depth % 2 == 0 && (Rn / pl.depth) % 2 == 0 && n > 1 &&
            steps - (n - 1) * (Rn + pl.depth) >= Rn - pl.depth)
          Rn += pl.depth;
        Rn = SPX__MIN(steps, Rn);
        if (R >= pl.depth && R != Rn) continue;
      }
      Ds = spx__stencil_max_slab(p, o.method, pl.depth, R, budget);
      if (o.slab) {
        if (Ds < SPX__MIN(o.slab, Z)) continue;
        Ds = SPX__MIN(o.slab, Z);
      }
      if (Ds < 1) continue;
      J = (Z + Ds - 1) / Ds;
      if (!spx__stencil_feasible(o.method, pl.depth, R, Z, J)) continue;
      t = spx__stencil_model(p, o.method, pl.depth, steps, R, Ds, J, &rt);
      if (t < best * (1 - 1e-9)) { best = t; Rbest = R; Dsbest = Ds; Jbest = J; }
    }
    if (Rbest && o.method == SPX_STENCIL_OVERLAP && !o.slab) {
      /* Thinner slabs than the budget allows, at the tts chosen above: the pipeline fills with the
       * first slab's upload and drains with the last one's download, which the other slabs do not
       * hide (with a few large slabs, a quarter of the run). More slabs cost
       * device copies and launches instead; the model weighs both, but not below 4 x tts planes a
       * slab: there the 4 tts planes each boundary copies outweigh the slab, and the copies (at half
       * the copy bandwidth) and the shorter z-marches cost more than the model says; nor at a
       * smaller tts than chosen (docs/performance.md, "Stencil slabs and chunks"). J grows by
       * ~1/8 a step. */
      int64_t J2 = Jbest, Jcap = SPX__MIN(64 * Jbest, Z / (4 * Rbest));
      R = Rbest;
      while ((J2 = SPX__MAX(J2 + 1, J2 + J2 / 8)) <= Jcap) {
        int64_t Ds2 = (Z + J2 - 1) / J2, J3 = (Z + Ds2 - 1) / Ds2;
        double t;
        if (Ds2 < 4 * R || !spx__stencil_feasible(o.method, pl.depth, R, Z, J3)) break; /* thinner only gets worse */
        t = spx__stencil_model(p, o.method, pl.depth, steps, R, Ds2, J3, &rt);
        if (t < best * (1 - 1e-9)) { best = t; Dsbest = Ds2; Jbest = J3; }
      }
    }
    if (!Rbest) {
      int64_t R0 = o.tts ? o.tts : 1, need = spx__stencil_bufs_of(o.method, pl.depth, R0, 1, p->nz).total;
      if (o.tts && (o.method == SPX_STENCIL_MMTB || o.method == SPX_STENCIL_OVERLAP) && need * pb <= budget)
        return spx__fail(SPX_INVALID_ARGUMENT, "stencil: tts %lld%s leaves no slab layout for %s in the budget "
                         "(the first slab needs tts + depth - 1 = %lld planes)", (long long)o.tts,
                         o.slab ? " and the given slab" : "", spx_stencil_method_name(o.method),
                         (long long)(o.tts + SPX__MIN(pl.depth, o.tts) - 1));
      if (o.slab && need * pb <= budget)
        return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "stencil: slabs of %lld planes for %s do not fit the budget "
                         "of %.1f MiB", (long long)o.slab, spx_stencil_method_name(o.method), (double)budget / 1048576.0);
      return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "stencil: the budget of %.3f MiB cannot hold one slab for %s: "
                       "the smallest (1 plane, tts %lld, depth %d) needs %lld planes of %.3f MiB = %.3f MiB",
                       (double)budget / 1048576.0, spx_stencil_method_name(o.method), (long long)R0, pl.depth,
                       (long long)need, (double)pb / 1048576.0, (double)need * pb / 1048576.0);
    }
  }
  pl.tts = Rbest;
  pl.slab = Dsbest;
  pl.nslabs = Jbest;
  pl.rounds = (steps + Rbest - 1) / Rbest;
  {
    spx__stencil_bufs b = spx__stencil_bufs_of(o.method, pl.depth, Rbest, Dsbest, p->nz);
    pl.window_planes = b.window;
    pl.device_bytes = b.total * pb;
  }
  pl.host_grids = spx__stencil_method_grids[o.method];
  pl.host_bytes = (pl.host_grids - 1) * (int64_t)p->nz * pb;
  if (!gpu) /* the host backend holds the device buffers, and two temporaries for depth > 1 */
    pl.host_bytes += pl.device_bytes + (pl.depth > 1 ? 2 * pl.window_planes * pb : 0);
  pl.model_gstencils = (double)p->nx * p->ny * p->nz * (double)steps / best * 1e-9;
  /* The bound, min(in-core rate, TTS x PCIe / bytes per cell each way), with the PCIe rate
   * of one direction; overlap moves both ways at once, each at most half the duplex total. */
  if (o.method == SPX_STENCIL_INCORE) pl.bound_gstencils = rt.rc * 1e-9;
  else
    pl.bound_gstencils = SPX__MIN(rt.rc, (double)pl.tts *
                                             (o.method == SPX_STENCIL_OVERLAP ? SPX__MIN(rt.pcie, rt.duplex / 2) : rt.pcie) /
                                             esz) * 1e-9;
  snprintf(pl.why, sizeof pl.why, "%s: %lld slab(s) of <= %lld planes, %lld step(s) per round trip, depth %d, "
           "one-step kernel %d cell(s) per thread in x; %.2f GiB of %.2f GiB budget; model %.1f GStencil/s",
           spx_stencil_method_name(o.method), (long long)pl.nslabs, (long long)pl.slab, (long long)pl.tts, pl.depth,
           pl.xv, (double)pl.device_bytes / 1073741824.0, (double)SPX__MIN(budget, (int64_t)1 << 60) / 1073741824.0,
           pl.model_gstencils);
  *out = pl;
  return SPX_OK;
}

/* Planes of a plan's ring windows (mmtb, overlap: the window buffers' size), 0 for linear windows. */
static int64_t spx__stencil_ring(const spx_stencil_plan *pl) {
  return pl->method == SPX_STENCIL_MMTB || pl->method == SPX_STENCIL_OVERLAP ? pl->window_planes : 0;
}

/* ---- Host step ---------------------------------------------------------------------------------- */
/* One step on planes [zlo, zhi) of a window whose plane 0 is domain plane wz0. The sum runs in the
 * kernels' order, one rounding per operation (no contraction: clang's pragma below; GCC in ISO mode
 * does not contract). */
#if defined(__clang__)
#define SPX__NO_CONTRACT _Pragma("STDC FP_CONTRACT OFF")
#define SPX__NO_CONTRACT_FN
#elif defined(__GNUC__) /* GNU modes (the default of a plain `cc`) contract unless told not to */
#define SPX__NO_CONTRACT
#define SPX__NO_CONTRACT_FN __attribute__((optimize("fp-contract=off")))
#else
#define SPX__NO_CONTRACT
#define SPX__NO_CONTRACT_FN
#endif
/* The host step's rows in parallel where OpenMP is on (a bare pragma warns without it). */
#if defined(_OPENMP)
#define SPX__STENCIL_OMP_ROWS _Pragma("omp parallel for schedule(static) if (n * nx > 65536)")
#else
#define SPX__STENCIL_OMP_ROWS
#endif
/* Slot of plane z in a buffer of cap planes: a ring whose slot 0 holds plane zoff (mod cap); with
 * zoff = the window's first plane and cap >= its planes, the plain linear layout. */
static int64_t spx__stencil_slot(int64_t z, int64_t zoff, int64_t cap) {
  int64_t r = (z - zoff) % cap;
  return r < 0 ? r + cap : r;
}

#define SPX__STENCIL_HOST_STEP(NAME, T)                                                           \
  static SPX__NO_CONTRACT_FN void NAME(const spx_stencil *p, const void *vin, void *vout,          \
                                       int64_t zoff, int64_t cap, int64_t zlo, int64_t zhi) {      \
    SPX__NO_CONTRACT                                                                               \
    const T *in = (const T *)vin;                                                                  \
    T *out = (T *)vout;                                                                            \
    const int64_t nx = p->nx, ny = p->ny, nz = p->nz, P = nx * ny, n = (zhi - zlo) * ny;           \
    const T c0 = (T)p->c[0], c1 = (T)p->c[1], c2 = (T)p->c[2], c3 = (T)p->c[3], c4 = (T)p->c[4];   \
    const T c5 = (T)p->c[5], c6 = (T)p->c[6];                                                      \
    int64_t zy;                                                                                    \
    SPX__STENCIL_OMP_ROWS                                                                          \
    for (zy = 0; zy < n; zy++) {                                                                   \
      const int64_t z = zlo + zy / ny, y = zy % ny, off = y * nx;                                   \
      const int64_t sz = spx__stencil_slot(z, zoff, cap) * P;                                      \
      const T *a = in + sz + off;                                                                  \
      T *o = out + sz + off;                                                                       \
      const T *bl, *ab;                                                                            \
      int64_t x;                                                                                   \
      if (z <= 0 || z >= nz - 1 || y == 0 || y == ny - 1) {                                        \
        memcpy(o, a, (size_t)nx * sizeof(T));                                                      \
        continue;                                                                                  \
      }                                                                                            \
      bl = in + spx__stencil_slot(z - 1, zoff, cap) * P + off;                                     \
      ab = in + spx__stencil_slot(z + 1, zoff, cap) * P + off;                                     \
      o[0] = a[0];                                                                                 \
      o[nx - 1] = a[nx - 1];                                                                       \
      for (x = 1; x < nx - 1; x++) {                                                               \
        T r = c0 * a[x];                                                                           \
        r = r + c1 * a[x - 1];                                                                     \
        r = r + c2 * a[x + 1];                                                                     \
        r = r + c3 * a[x - nx];                                                                    \
        r = r + c4 * a[x + nx];                                                                    \
        r = r + c5 * bl[x];                                                                        \
        r = r + c6 * ab[x];                                                                        \
        o[x] = r;                                                                                  \
      }                                                                                            \
    }                                                                                              \
  }
SPX__STENCIL_HOST_STEP(spx__stencil_step_d, double)
SPX__STENCIL_HOST_STEP(spx__stencil_step_f, float)
#undef SPX__STENCIL_HOST_STEP

static void spx__stencil_host_step(const spx_stencil *p, const void *in, void *out, int64_t zoff, int64_t cap,
                                   int64_t zlo, int64_t zhi) {
  if (zhi <= zlo) return;
  if (p->dtype == SPX_FLOAT) spx__stencil_step_f(p, in, out, zoff, cap, zlo, zhi);
  else spx__stencil_step_d(p, in, out, zoff, cap, zlo, zhi);
}

spx_status spx_stencil_reference(const spx_stencil *p, void *grid, int64_t steps) {
  size_t bytes;
  char *tmp, *a, *b;
  int64_t t;
  spx_status s;
  if ((s = spx__stencil_check(p, "spx_stencil_reference"))) return s;
  if (!grid || steps < 0) return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_reference: NULL grid or negative steps");
  bytes = (size_t)(p->nx * p->ny * p->nz) * SPX_DTYPE_SIZE(p->dtype);
  if (!steps) return SPX_OK;
  if ((s = spx__host_fits((int64_t)bytes, NULL, "the reference's second grid"))) return s;
  if (!(tmp = (char *)spx__alloc(1, bytes))) return SPX_OUT_OF_MEMORY;
  memcpy(tmp, grid, bytes); /* the boundary, which steps never write */
  a = (char *)grid; b = tmp;
  for (t = 0; t < steps; t++) {
    char *c;
    spx__stencil_host_step(p, a, b, 0, p->nz, 1, p->nz - 1);
    c = a; a = b; b = c;
  }
  if (a != (char *)grid) memcpy(grid, a, bytes);
  SPX_FREE(tmp);
  return SPX_OK;
}

/* ---- Executor --------------------------------------------------------------------------------- */
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

static spx_status spx__sx_internal(const char *what, int64_t a, int64_t b, int64_t c) {
  return spx__fail(SPX_INTERNAL, "stencil schedule: %s (%lld, %lld, %lld) outside its buffer", what,
                   (long long)a, (long long)b, (long long)c);
}

static spx_status spx__sx_mark(spx__sx *x, int stream, int cat, int end) {
  spx__sx_timing *t;
  spx_status s;
  if (!x->timing) return SPX_OK;
  if (!end) {
    if (x->nlog == x->caplog) {
      int64_t nc = x->caplog ? 2 * x->caplog : 256;
      spx__sx_timing *n = (spx__sx_timing *)SPX_REALLOC(x->log, (size_t)nc * sizeof *n);
      if (!n) return spx__fail(SPX_OUT_OF_MEMORY, "stencil: timing log");
      x->log = n; x->caplog = nc;
    }
    t = &x->log[x->nlog++];
    memset(t, 0, sizeof *t);
    t->cat = cat;
    t->stream = stream;
    if ((s = spx__event_new(x->cu, &t->e0, 1)) || (s = spx__event_new(x->cu, &t->e1, 1))) return s;
    return spx__event_record(x->cu, t->e0, x->st[stream]);
  }
  return spx__event_record(x->cu, x->log[x->nlog - 1].e1, x->st[stream]);
}

/* Address of plane k of buffer b, and of plane z of host grid g. */
static uintptr_t spx__sx_at(const spx__sx *x, int b, int64_t k) { return x->buf[b] + (uintptr_t)(k * x->pb); }
static uintptr_t spx__sx_host(const spx__sx *x, int g, int64_t z) { return (uintptr_t)(x->g[g] + z * x->pb); }
/* The plane in slot 0 of a window that starts at wz0: -ring_off in a ring (plane z at slot
 * (z + ring_off) mod cap), else wz0. */
static int64_t spx__sx_zoff(const spx__sx *x, int64_t wz0) { return spx__stencil_ring(x->pl) ? -x->ring_off : wz0; }
/* Slot of domain plane z in window buffer b whose window starts at wz0. */
static int64_t spx__sx_slot(const spx__sx *x, int b, int64_t wz0, int64_t z) {
  return spx__stencil_slot(z, spx__sx_zoff(x, wz0), x->cap[b]);
}

/* One copy of n planes on a stream; the host backend copies at once. */
static spx_status spx__sx_raw(spx__sx *x, int stream, int cat, uintptr_t dst, uintptr_t src, int64_t n) {
  size_t bytes = (size_t)(n * x->pb);
  spx_status s;
  if (n <= 0) return SPX_OK;
  x->bytes[cat] += (int64_t)bytes;
  if (!x->gpu) {
    double t0 = spx__now();
    memcpy((void *)dst, (const void *)src, bytes);
    x->ms[cat] += 1e3 * (spx__now() - t0);
    return SPX_OK;
  }
  if ((s = spx__sx_mark(x, stream, cat, 0))) return s;
  if (cat == SPX__SXC_H2D)
    s = spx__copy_h2d_async(x->cu, (spx_devptr)dst, (const void *)src, bytes, x->st[stream]);
  else if (cat == SPX__SXC_D2H)
    s = spx__copy_d2h_async(x->cu, (void *)dst, (spx_devptr)src, bytes, x->st[stream]);
  else
    s = spx__copy_d2d_async(x->cu, (spx_devptr)dst, (spx_devptr)src, bytes, x->st[stream]);
  return s ? s : spx__sx_mark(x, stream, cat, 1);
}

/* Host grid g planes [z, z+n) -> buffer b planes [k, k+n), and back, and buffer to buffer: every range
 * is checked, so a schedule that strays outside a buffer fails (SPX_INTERNAL) on the host backend
 * too instead of corrupting memory on the GPU. */
static spx_status spx__sx_h2d(spx__sx *x, int stream, int b, int64_t k, int g, int64_t z, int64_t n) {
  if (n < 0 || k < 0 || k + n > x->cap[b] || z < 0 || z + n > x->p->nz) return spx__sx_internal("upload", b, k, n);
  return spx__sx_raw(x, stream, SPX__SXC_H2D, spx__sx_at(x, b, k), spx__sx_host(x, g, z), n);
}
static spx_status spx__sx_d2h(spx__sx *x, int stream, int g, int64_t z, int b, int64_t k, int64_t n) {
  if (n < 0 || k < 0 || k + n > x->cap[b] || z < 1 || z + n > x->p->nz - 1) return spx__sx_internal("download", b, k, n);
  return spx__sx_raw(x, stream, SPX__SXC_D2H, spx__sx_host(x, g, z), spx__sx_at(x, b, k), n);
}
static spx_status spx__sx_d2d(spx__sx *x, int stream, int db, int64_t dk, int sb, int64_t sk, int64_t n) {
  if (n < 0 || dk < 0 || dk + n > x->cap[db] || sk < 0 || sk + n > x->cap[sb])
    return spx__sx_internal("device copy", db, dk, n);
  return spx__sx_raw(x, stream, SPX__SXC_D2D, spx__sx_at(x, db, dk), spx__sx_at(x, sb, sk), n);
}

static spx_status spx__sx_record(spx__sx *x, int stream, int e) {
  if (!x->gpu) return SPX_OK;
  return spx__event_record(x->cu, x->ev[e], x->st[stream]);
}
static spx_status spx__sx_wait(spx__sx *x, int stream, int e) {
  if (!x->gpu) return SPX_OK;
  return spx__stream_wait(x->cu, x->st[stream], x->ev[e]);
}

/* Output planes per item (chunk) of spx_stencil_tb's launch over `range` planes of `ntile` column
 * tiles with P resident blocks, and its blocks: the chunk whose modelled time is least. Per item,
 * its planes plus 2 dk + 2 of start-up (the levels and the loads ahead); whole waves of P items,
 * then the M left cut into S pieces, as the kernel counts them: a grid of fixed chunks ends each
 * launch on a few blocks running alone. Chunks of at most 48 dk planes (SPX_STENCIL_CHUNK_MAX
 * overrides): longer z-marches run slower per plane (docs/performance.md, "Kernel waves").
 * SPX_STENCIL_CHUNK bounds the chunk below. */
static int64_t spx__stencil_tb_chunk(int64_t range, int64_t ntile, int64_t P, int dk, int64_t min_chunk,
                                     int64_t max_chunk, int64_t *blocks) {
  const int64_t minp = 4 * (int64_t)dk, over = 2 * (int64_t)dk + 2;
  int64_t gz, best = range, bestc = -1;
  P = SPX__MAX(1, P);
  *blocks = 0;
  for (gz = 1; gz <= SPX__MIN(range, 256); gz++) {
    const int64_t c = (range + gz - 1) / gz, g = (range + c - 1) / c, items = ntile * g;
    const int64_t full = items / P * P, M = items - full;
    const int64_t S = M ? SPX__MAX(1, SPX__MIN(P / M, c / minp)) : 1;
    const int64_t cost = full / P * (c + over) + (M ? (c + S - 1) / S + over : 0);
    if ((c < min_chunk && gz > 1) || items >= INT32_MAX / 2) break; /* the kernel counts items in int */
    if (c > (max_chunk > 0 ? max_chunk : 48 * (int64_t)dk) && gz < range) continue;
    if (bestc < 0 || cost < bestc) { bestc = cost; best = c; *blocks = full + M * S; }
  }
  return best;
}

/* dk steps from window buffer `in` to `out` on output planes [zlo, zhi); both windows hold domain
 * planes [wz0, wz1) and `in` must be valid on [zlo - dk, zhi + dk) clipped to the domain. */
static spx_status spx__sx_step(spx__sx *x, int dk, int in, int out, int64_t wz0, int64_t wz1, int64_t zlo,
                               int64_t zhi) {
  const int64_t nz = x->p->nz;
  const int64_t lo = SPX__MAX(0, zlo - dk), hi = SPX__MIN(nz, zhi + dk);
  if (zlo >= zhi && zlo >= 1 && zhi <= nz - 1) /* mmtb's first slab can be skewed out of a step */
    return SPX_OK;
  if (zlo < 1 || zhi > nz - 1 || zlo >= zhi || lo < wz0 || hi > wz1 || wz1 - wz0 > x->cap[in] ||
      wz1 - wz0 > x->cap[out])
    return spx__fail(SPX_INTERNAL, "stencil schedule: step of depth %d on planes [%lld, %lld) needs [%lld, %lld) "
                     "in the window [%lld, %lld) of %lld planes", dk, (long long)zlo, (long long)zhi,
                     (long long)lo, (long long)hi, (long long)wz0, (long long)wz1, (long long)x->cap[in]);
  x->launches++;
  if (!x->gpu) {
    double t0 = spx__now();
    const char *src = (const char *)x->buf[in];
    int t, i;
    if (dk > 1) /* the temporaries need the z-boundary planes the levels read */
      for (i = 0; i < 2; i++) {
        const int64_t first = spx__sx_slot(x, in, wz0, 0) * x->pb, last = spx__sx_slot(x, in, wz0, nz - 1) * x->pb;
        if (wz0 == 0) memcpy(x->tmp[i] + first, src + first, (size_t)x->pb);
        if (wz1 == nz) memcpy(x->tmp[i] + last, src + last, (size_t)x->pb);
      }
    for (t = 1; t <= dk; t++) {
      char *dst = t == dk ? (char *)x->buf[out] : x->tmp[t & 1];
      spx__stencil_host_step(x->p, src, dst, spx__sx_zoff(x, wz0), x->cap[in], SPX__MAX(1, zlo - (dk - t)),
                             SPX__MIN(nz - 1, zhi + (dk - t)));
      src = dst;
    }
    x->ms[SPX__SXC_KERNEL] += 1e3 * (spx__now() - t0);
    return SPX_OK;
  }
  {
    const spx_stencil_plan *pl = x->pl;
    const int main = dk == pl->depth, tb = main && pl->shared;
    const unsigned bx = main ? x->main_block[0] : x->one_block[0], by = main ? x->main_block[1] : x->one_block[1];
    const int xv = main ? x->main_xv : x->one_xv;
    const int64_t ox = tb ? bx - 2 * dk : (int64_t)bx * xv, oy = tb ? by - 2 * dk : by, range = zhi - zlo;
    int64_t gx = (x->p->nx + ox - 1) / ox, gy = (x->p->ny + oy - 1) / oy;
    int64_t chunk, gz;
    spx__CUdeviceptr pin = (spx__CUdeviceptr)x->buf[in], pout = (spx__CUdeviceptr)x->buf[out];
    long long w0 = (long long)wz0, w1 = (long long)wz1, zo = (long long)spx__sx_zoff(x, wz0);
    int zl = (int)zlo, zh = (int)zhi, ch;
    int slots = (int)SPX__MIN(x->main_slots, INT32_MAX);
    void *params[9];
    spx_status s;
    if (tb) { /* a 1-D grid in waves of the resident blocks (spx_stencil_tb) */
      chunk = spx__stencil_tb_chunk(range, gx * gy, slots, dk, x->min_chunk, x->max_chunk, &gx);
      gy = 1; gz = 1;
      if (gx < 1) return spx__sx_internal("tb grid", range, gx, slots);
    } else {
      /* About eight waves of resident blocks: with a few, the last partial wave leaves the GPU
       * part idle. Each chunk costs 2 extra planes, so not shorter than 32. */
      const int64_t want = (int64_t)SPX__MAX(1, x->sm_count) * SPX__MAX(1, 2048 / (int64_t)(bx * by)) * 8;
      const int64_t nch = SPX__MAX(1, (want + gx * gy - 1) / (gx * gy));
      chunk = SPX__MAX((range + nch - 1) / nch, x->min_chunk > 0 ? x->min_chunk : 32);
      chunk = SPX__MAX(SPX__MIN(chunk, range), (range + 65534) / 65535);
      gz = (range + chunk - 1) / chunk;
    }
    ch = (int)chunk;
    params[0] = &pin; params[1] = &pout; params[2] = &w0; params[3] = &w1;
    params[4] = &zl; params[5] = &zh; params[6] = &ch; params[7] = &zo; params[8] = &slots; /* tb only */
    if ((s = spx__sx_mark(x, SPX__SXS_COMPUTE, SPX__SXC_KERNEL, 0))) return s;
    s = spx__cu_check(x->cu->cuLaunchKernel(main ? x->fn_main : x->fn_one, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                                            bx, by, 1, 0, x->st[SPX__SXS_COMPUTE], params, NULL),
                      tb ? "spx_stencil_tb" : "spx_stencil_step");
    return s ? s : spx__sx_mark(x, SPX__SXS_COMPUTE, SPX__SXC_KERNEL, 1);
  }
}

/* Slab j of J over the interior planes [1, nz-1): [a, b), sizes differing by at most one. */
static void spx__sx_slab(const spx__sx *x, int64_t j, int64_t *a, int64_t *b) {
  const int64_t Z = x->p->nz - 2, J = x->pl->nslabs;
  *a = 1 + (j * Z + J - 1) / J; /* ceil: the first slab is a largest one (mmtb needs it tall) */
  *b = 1 + ((j + 1) * Z + J - 1) / J;
}

#define SPX__SX_TRY(call)                  \
  do {                                     \
    spx_status spx__sx_s_ = (call);        \
    if (spx__sx_s_) return spx__sx_s_;     \
  } while (0)

/* incore: both grids on the device; every launch covers all interior planes. */
static spx_status spx__sx_incore(spx__sx *x) {
  const int64_t nz = x->p->nz, T = x->pl->steps, nl = spx__stencil_nlaunch(T, x->pl->depth, 0);
  int64_t k;
  int cur = 0;
  SPX__SX_TRY(spx__sx_h2d(x, SPX__SXS_COMPUTE, SPX__SXB_W0, 0, 0, 0, nz));
  SPX__SX_TRY(spx__sx_d2d(x, SPX__SXS_COMPUTE, SPX__SXB_W1, 0, SPX__SXB_W0, 0, nz)); /* the boundary */
  for (k = 0; k < nl; k++, cur ^= 1)
    SPX__SX_TRY(spx__sx_step(x, spx__stencil_ldepth(k, T, x->pl->depth, 0), SPX__SXB_W0 + cur, SPX__SXB_W0 + (cur ^ 1),
                             0, nz, 1, nz - 1));
  return spx__sx_d2h(x, SPX__SXS_COMPUTE, 0, 1, SPX__SXB_W0 + cur, 1, nz - 2);
}

/* normal, mm, mmt: per round, each slab goes up with R planes of halo on each side (clipped at the
 * domain), R steps run with the valid range shrinking by the launch depth at each unclipped side,
 * and the slab comes down into the other host grid. One stream: everything in order. *final
 * receives the grid holding the result. */
static spx_status spx__sx_mm(spx__sx *x, int *final) {
  const int64_t nz = x->p->nz, T = x->pl->steps, R = x->pl->tts, J = x->pl->nslabs;
  const int d = x->pl->depth;
  int64_t done = 0, j, k;
  int src = 0;
  /* The second grid's z-boundary planes (its x/y boundary cells arrive with every download). */
  memcpy(x->g[1], x->g[0], (size_t)x->pb);
  memcpy(x->g[1] + (nz - 1) * x->pb, x->g[0] + (nz - 1) * x->pb, (size_t)x->pb);
  for (; done < T; done += SPX__MIN(R, T - done), src ^= 1) {
    const int64_t Rr = SPX__MIN(R, T - done), nl = spx__stencil_nlaunch(Rr, d, 0);
    for (j = 0; j < J; j++) {
      int64_t a, b, lo, hi, L, H;
      int cur = 0;
      spx__sx_slab(x, j, &a, &b);
      lo = SPX__MAX(0, a - Rr); hi = SPX__MIN(nz, b + Rr);
      SPX__SX_TRY(spx__sx_h2d(x, SPX__SXS_COMPUTE, SPX__SXB_W0, 0, src, lo, hi - lo));
      if (lo == 0) SPX__SX_TRY(spx__sx_d2d(x, SPX__SXS_COMPUTE, SPX__SXB_W1, 0, SPX__SXB_W0, 0, 1));
      if (hi == nz) SPX__SX_TRY(spx__sx_d2d(x, SPX__SXS_COMPUTE, SPX__SXB_W1, nz - 1 - lo, SPX__SXB_W0, nz - 1 - lo, 1));
      for (L = lo, H = hi, k = 0; k < nl; k++, cur ^= 1) {
        const int dk = spx__stencil_ldepth(k, Rr, d, 0);
        const int64_t zl = L == 0 ? 1 : L + dk, zh = H == nz ? nz - 1 : H - dk;
        SPX__SX_TRY(spx__sx_step(x, dk, SPX__SXB_W0 + cur, SPX__SXB_W0 + (cur ^ 1), lo, hi, zl, zh));
        if (L) L += dk;
        if (H != nz) H -= dk;
      }
      SPX__SX_TRY(spx__sx_d2h(x, SPX__SXS_COMPUTE, src ^ 1, a, SPX__SXB_W0 + cur, a - lo, b - a));
    }
  }
  *final = src;
  return SPX_OK;
}

/* Copies between domain planes [z, z + n) of window buffer w (window from wz0) and the same planes
 * of host grid g: up (FROM_HOST) or down (TO_HOST). A range that wraps around a ring is two copies. */
enum { SPX__SXW_FROM_HOST, SPX__SXW_TO_HOST };
static spx_status spx__sx_win(spx__sx *x, int stream, int op, int w, int64_t wz0, int64_t z, int64_t n, int g) {
  while (n > 0) {
    const int64_t sl = spx__sx_slot(x, w, wz0, z), m = SPX__MIN(n, x->cap[w] - sl);
    spx_status s = op == SPX__SXW_FROM_HOST ? spx__sx_h2d(x, stream, w, sl, g, z, m) : spx__sx_d2h(x, stream, g, z, w, sl, m);
    if (s) return s;
    z += m; n -= m;
  }
  return SPX_OK;
}

/* mmtb and overlap (one host grid, updated in place). Per round of Rr steps, slabs run in z order
 * and slab j holds, at level s, the planes [a - s, b - s) (skewed one plane per step; slab 0 starts
 * at plane 1 and the last slab ends at nz-1). Launch k (level s -> s + dk) reads the 2 dk planes
 * below, [a - s - 2dk, a - s), which slab j-1 computed at the same level, and computes
 * [a - s - dk, b - s - dk). The windows are rings (plane z at slot z mod cap, cap >= a window;
 * overlap shifts the slots by a round's offset, below), so
 * those planes are where slab j-1 left them: its later launches into the same buffer write only
 * lower planes (launch k+1 writes level s + dk + dk' up to b - s - dk - dk' <= b - s - 2dk, as a
 * launch is never deeper than the next), and slab j's own writes land in slots that alias planes
 * below its window. So nothing is copied on the device but the boundary planes (the paper's reuse
 * buffer, without its copies). Only the slab crosses PCIe: level 0 of [a, b) goes up, level Rr of
 * [a - Rr, b - Rr) comes down; a later slab never reads what an earlier one wrote back.
 *
 * overlap moves slab t+1 up (UP stream) and slab t-1 down (DOWN stream) while slab t computes,
 * straight into and out of the rings, which hold 2 Ds + R + d + 2 planes for it. Round r's plane
 * z lies at slot (z + r nz) mod cap: the rounds continue one z march, so that in it each tile's
 * window and upload lie above the tile before's window start, at most cap planes from it (two
 * slabs, R + d of skew and the two boundary planes). Hence, per tile t:
 *   - its upload aliases only planes below tile t-1's window: it waits for tile t-2's compute,
 *     and for tile t-2's download when that tile's output stayed in the first window (an even
 *     number of launches; the planner prefers odd counts);
 *   - its compute writes planes that alias at most tile t-2's (and earlier) output: it waits for
 *     tile t-2's download, which ran while tile t-1 computed;
 *   - its download waits for its compute.
 * Events order the host planes too: an upload waits for last round's download of the planes. */
static spx_status spx__sx_mmtb(spx__sx *x) {
  const int64_t nz = x->p->nz, T = x->pl->steps, R = x->pl->tts, J = x->pl->nslabs;
  const int d = x->pl->depth, ov = x->pl->method == SPX_STENCIL_OVERLAP;
  const int up = ov ? SPX__SXS_UP : SPX__SXS_COMPUTE, down = ov ? SPX__SXS_DOWN : SPX__SXS_COMPUTE;
  int64_t done = 0, Rprev = 0, j, k, tile = 0, round = 0;
  int ob[2] = {0, 0}; /* output window of the last two tiles, by parity */
  for (; done < T; Rprev = SPX__MIN(R, T - done), done += Rprev, round++) {
    const int64_t Rr = SPX__MIN(R, T - done), nl = spx__stencil_nlaunch(Rr, d, ov);
    const int dmax = Rr >= d ? d : 1;
    if (ov) x->ring_off = round * nz % x->cap[SPX__SXB_W0];
    for (j = 0; j < J; j++, tile++) {
      const int first = j == 0, last = j == J - 1, par = (int)(tile % 2);
      int64_t a, b, wz0, wz1, ul, uh, ol, oh;
      int cur = 0;
      spx__sx_slab(x, j, &a, &b);
      wz0 = SPX__MAX(0, a - Rr - dmax);
      wz1 = last ? nz : b;
      ul = first ? 0 : a;
      uh = last ? nz : b;
      /* Level 0 of the slab (with the z-boundary plane of the first and last slab). */
      if (ov && tile >= 2) {
        SPX__SX_TRY(spx__sx_wait(x, up, SPX__SXE_K0 + par));
        if (ob[par] == 0) SPX__SX_TRY(spx__sx_wait(x, up, SPX__SXE_D0 + par));
      }
      if (ov && done > 0) { /* the planes come from last round's downloads: wait for the last slab that wrote one */
        int64_t i, dep = 0;
        for (i = 0; i < J; i++) {
          int64_t ai, bi;
          spx__sx_slab(x, i, &ai, &bi);
          if ((i == 0 ? 1 : ai - Rprev) < uh) dep = i;
        }
        SPX__SX_TRY(spx__sx_wait(x, up, SPX__SXE_TILE + (int)dep));
      }
      SPX__SX_TRY(spx__sx_win(x, up, SPX__SXW_FROM_HOST, SPX__SXB_W0, wz0, ul, uh - ul, 0));
      if (ov) {
        SPX__SX_TRY(spx__sx_record(x, up, SPX__SXE_UP_DONE));
        SPX__SX_TRY(spx__sx_wait(x, SPX__SXS_COMPUTE, SPX__SXE_UP_DONE));
        if (tile >= 2) SPX__SX_TRY(spx__sx_wait(x, SPX__SXS_COMPUTE, SPX__SXE_D0 + par));
      }
      if (first)
        SPX__SX_TRY(spx__sx_d2d(x, SPX__SXS_COMPUTE, SPX__SXB_W1, spx__sx_slot(x, SPX__SXB_W1, wz0, 0), SPX__SXB_W0,
                                spx__sx_slot(x, SPX__SXB_W0, wz0, 0), 1));
      if (last)
        SPX__SX_TRY(spx__sx_d2d(x, SPX__SXS_COMPUTE, SPX__SXB_W1, spx__sx_slot(x, SPX__SXB_W1, wz0, nz - 1), SPX__SXB_W0,
                                spx__sx_slot(x, SPX__SXB_W0, wz0, nz - 1), 1));
      for (k = 0; k < nl; k++, cur ^= 1) {
        const int dk = spx__stencil_ldepth(k, Rr, d, ov);
        const int64_t s = spx__stencil_lstart(k, Rr, d, ov);
        const int w = SPX__SXB_W0 + cur;
        SPX__SX_TRY(spx__sx_step(x, dk, w, SPX__SXB_W0 + (cur ^ 1), wz0, wz1, first ? 1 : a - s - dk,
                                 last ? nz - 1 : b - s - dk));
      }
      ol = first ? 1 : a - Rr;
      oh = last ? nz - 1 : b - Rr;
      if (ov) {
        SPX__SX_TRY(spx__sx_record(x, SPX__SXS_COMPUTE, SPX__SXE_K0 + par));
        SPX__SX_TRY(spx__sx_wait(x, down, SPX__SXE_K0 + par));
      }
      SPX__SX_TRY(spx__sx_win(x, down, SPX__SXW_TO_HOST, SPX__SXB_W0 + cur, wz0, ol, oh - ol, 0));
      if (ov) {
        SPX__SX_TRY(spx__sx_record(x, down, SPX__SXE_D0 + par));
        SPX__SX_TRY(spx__sx_record(x, down, SPX__SXE_TILE + (int)j));
      }
      ob[par] = cur;
    }
  }
  return SPX_OK;
}

/* Runs the plan's schedule; *final = the host grid with the result. */
static spx_status spx__sx_schedule(spx__sx *x, int *final) {
  *final = 0;
  switch (x->pl->method) {
  case SPX_STENCIL_INCORE: return spx__sx_incore(x);
  case SPX_STENCIL_NORMAL:
  case SPX_STENCIL_MM:
  case SPX_STENCIL_MMT: return spx__sx_mm(x, final);
  case SPX_STENCIL_MMTB:
  case SPX_STENCIL_OVERLAP: return spx__sx_mmtb(x);
  default: return spx__fail(SPX_INTERNAL, "stencil: method %d has no schedule", (int)x->pl->method);
  }
}

/* Parallel copy of the interior planes of the second grid back into the caller's. */
static void spx__sx_copy_back(spx__sx *x) {
  const int64_t nz = x->p->nz;
  int64_t z;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (nz * x->pb > (1 << 22))
#endif
  for (z = 1; z < nz - 1; z++) memcpy(x->g[0] + z * x->pb, x->g[1] + z * x->pb, (size_t)x->pb);
}

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
     * each (bench/results/tb-pf.txt); loads ahead stay in flight across the levels' barriers.
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
