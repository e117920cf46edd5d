/* SPDX-License-Identifier: BSD-3-Clause */
/* The stencil's planner (stencil_sched.h): the methods' names, a problem's checks, the capacity
 * formula (device planes per method), the host memory a run may take, and the cost model that
 * spx_stencil_choose minimizes over round trips, slabs and launch depths. A plan is host
 * arithmetic on the device's description: nothing here touches the device. */
#include <stdio.h>
#include <unistd.h>
#include "common.h"
#include "config.h"
#include "stencil_sched.h"
#include "../stencil.h"

/* ---- Names ------------------------------------------------------------------------------------ */
static const char *const spx__stencil_method_names[] = {
#define SPX__STENCIL_METHOD_NAME(e, name, grids, what) name,
    SPX_STENCIL_METHODS(SPX__STENCIL_METHOD_NAME)
#undef SPX__STENCIL_METHOD_NAME
};
const int spx__stencil_method_grids[] = {
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

spx_status spx__stencil_check(const spx_stencil *p, const char *what) {
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL problem", what);
  if (p->nx < 3 || p->ny < 3 || p->nz < 3 || p->nx > INT32_MAX || p->ny > INT32_MAX || p->nz > INT32_MAX ||
      (double)p->nx * (double)p->ny * (double)p->nz > 4.6e18 || (p->dtype != SPX_DOUBLE && p->dtype != SPX_FLOAT))
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: bad grid %lld x %lld x %lld (each edge 3..2^31-1)", what,
                     (long long)p->nx, (long long)p->ny, (long long)p->nz);
  return SPX_OK;
}

/* ---- Capacity -------------------------------------------------------------------------------- */

spx__stencil_bufs spx__stencil_bufs_of(spx_stencil_method m, int d, int64_t R, int64_t Ds, int64_t nz) {
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

spx_status spx__host_fits(int64_t need, const spx_stencil_options *o, const char *what) {
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
int64_t spx__stencil_nlaunch(int64_t r, int d, int odd) {
  const int64_t u = spx__stencil_ones(r, d, odd);
  return u + (r - u) / d;
}
int spx__stencil_ldepth(int64_t k, int64_t r, int d, int odd) { return k < spx__stencil_ones(r, d, odd) ? 1 : d; }
int64_t spx__stencil_lstart(int64_t k, int64_t r, int d, int odd) {
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
   * reaches it with one cell and the pairs cost registers (bench/results/stencil/stencil-ab.txt). */
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

int64_t spx__stencil_ring(const spx_stencil_plan *pl) {
  return pl->method == SPX_STENCIL_MMTB || pl->method == SPX_STENCIL_OVERLAP ? pl->window_planes : 0;
}
