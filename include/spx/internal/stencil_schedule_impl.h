/* SPDX-License-Identifier: BSD-3-Clause */
/* The stencil's schedules (stencil_sched.h): one per method family (incore; normal, mm, mmt; mmtb,
 * overlap), each written once against a small set of operations (copy, step, record, wait), and
 * the executor of those operations on two backends: the GPU (driver API, three streams, the
 * kernels stencil_impl.h binds) and the host (memcpy and an OpenMP step, also spx_stencil_reference),
 * so the host backend runs the very schedule the GPU runs, copy for copy, and tests without a GPU
 * check every method's plane arithmetic exactly. It reads the plan's launch arithmetic
 * (stencil_plan_impl.h). */
#include "common.h"
#include "cuda_types.h"
#include "stencil_sched.h"
#include "../stencil.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

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
spx_status spx__sx_schedule(spx__sx *x, int *final) {
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
void spx__sx_copy_back(spx__sx *x) {
  const int64_t nz = x->p->nz;
  int64_t z;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (nz * x->pb > (1 << 22))
#endif
  for (z = 1; z < nz - 1; z++) memcpy(x->g[0] + z * x->pb, x->g[1] + z * x->pb, (size_t)x->pb);
}
