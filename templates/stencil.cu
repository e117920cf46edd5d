/* SPDX-License-Identifier: BSD-3-Clause */
/* stencil.cu: the 3-D 7-point diffusion stencil, one step per launch and in-kernel temporal blocking.
 *
 * GRID     SPX_NX x SPX_NY x SPX_NZ cells, x fastest: cell (x, y, z) of a buffer that holds planes
 *          [wz0, wz1) of the domain is buf[((z - wz0) * NY + y) * NX + x]. Dirichlet boundary: cells
 *          with x, y or z on the first or last index never change (they are copied to the output).
 * UPDATE   u'(c) = CC*u(c) + CXM*u(x-1) + CXP*u(x+1) + CYM*u(y-1) + CYP*u(y+1) + CZM*u(z-1) + CZP*u(z+1),
 *          summed in exactly this order with round-to-nearest multiplies and adds (__dmul_rn/__dadd_rn
 *          are never contracted into FMAs), so every kernel here and the host reference agree bit
 *          for bit, and so do every out-of-core method and the in-core run.
 *          With SPX_RING = cap > 0 (mmtb, overlap) the buffers are rings of cap planes and plane z
 *          lies at slot (z - zoff) mod cap instead: a slab's window then starts where the one below
 *          it left its top planes, so that they need no copy (zoff: the plane in slot 0, wz0 in a
 *          linear window; overlap's rounds shift it to continue one ring).
 * WORK     a launch writes the output planes [zlo, zhi) (1 <= zlo, zhi <= NZ-1) of `out`, DEPTH steps
 *          ahead of `in`; it reads `in` on [zlo - DEPTH, zhi + DEPTH) clipped to [0, NZ), which must
 *          lie in [wz0, wz1) and hold valid values. The caller keeps the z-boundary planes in both
 *          buffers. spx_stencil_step: blockIdx.z takes `chunk` output planes each; spx_stencil_tb:
 *          see its WORK below.
 *
 * spx_stencil_step   MAPPING one thread per SPX_STENCIL_XV adjacent (x, y) columns of a SPX_BX x SPX_BY
 *                    block (blockIdx.x covers BX * XV cells), looping over z with a register queue
 *                    (below, centre, above); x/y neighbours come through the read-only cache. No
 *                    shared memory. XV = 2: a warp spans 64 x cells and each of its loads and stores
 *                    moves twice the bytes (float2/double2: the pair, its y and z neighbours; the
 *                    pair's outer x neighbours are two scalars), 5 loads per 2 cells instead of 10,
 *                    so more bytes are in flight per thread. BYTES 2 * sizeof(T) per cell per step
 *                    (one read, one write) plus 2 planes per z-chunk.
 * spx_stencil_tb     MAPPING one thread per column of a SPX_BX x SPX_BY tile that includes a halo of
 *                    DEPTH columns on each side, so the block writes (BX - 2 DEPTH) x (BY - 2 DEPTH)
 *                    columns. Streaming over z, input plane zin feeds level 1 at plane zin-1, level 2
 *                    at zin-2, ... level DEPTH at zin-DEPTH: each level keeps its z-queue in registers
 *                    and its centre plane in shared memory for the x/y neighbours, so DEPTH steps cost
 *                    one read and one write of the grid. BYTES per cell per DEPTH steps: sizeof(T) *
 *                    (BX*BY / ((BX-2D)*(BY-2D)) + 1), plus 2 DEPTH planes per z-chunk.
 *
 * CONSTANTS (pass as -D options; each has a default so that nvcc compiles the file alone)
 *   SPX_VALUE_T          double or float                                          (double)
 *   SPX_NX, SPX_NY, SPX_NZ  grid size                                             (64)
 *   SPX_BX, SPX_BY       block shape (threads); launch bound SPX_BX * SPX_BY         (32, 8)
 *   SPX_DEPTH            time steps per launch of spx_stencil_tb: 1, 2 or 4       (2)
 *   SPX_TB_PF            input planes spx_stencil_tb loads ahead of the one it feeds in; 0
 *                        loads each where it is used                                 (2)
 *   SPX_RING             0: plane z at slot z - wz0; cap > 0: buffers are rings of cap planes
 *                        (mmtb and overlap windows), plane z at slot z mod cap        (0)
 *   SPX_STENCIL_XV       x cells per thread of spx_stencil_step: 1 or 2; 2 needs an even SPX_NX
 *                        and buffers aligned to 2 * sizeof(T) (device allocations are), so that
 *                        every pair is                                              (1)
 *   SPX_CC, SPX_CXM, SPX_CXP, SPX_CYM, SPX_CYP, SPX_CZM, SPX_CZP
 *                        coefficients, as exact hexadecimal literals (%a)          (0.4, 0.1 x 6)
 *
 * Compile alone: nvcc -c -DSPX_VALUE_T=float templates/stencil.cu */

#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_NX
#define SPX_NX 64
#endif
#ifndef SPX_NY
#define SPX_NY 64
#endif
#ifndef SPX_NZ
#define SPX_NZ 64
#endif
#ifndef SPX_BX
#define SPX_BX 32
#endif
#ifndef SPX_BY
#define SPX_BY 8
#endif
#ifndef SPX_DEPTH
#define SPX_DEPTH 2
#endif
#ifndef SPX_STENCIL_XV
#define SPX_STENCIL_XV 1
#endif
#ifndef SPX_TB_PF
#define SPX_TB_PF 2
#endif
#ifndef SPX_RING
#define SPX_RING 0
#endif
#if SPX_TB_PF < 0 || SPX_TB_PF > 8
#error "SPX_TB_PF (planes spx_stencil_tb loads ahead) is 0..8"
#endif
#if SPX_STENCIL_XV != 1 && SPX_STENCIL_XV != 2
#error "SPX_STENCIL_XV is 1 or 2"
#endif
#if SPX_STENCIL_XV == 2 && SPX_NX % 2
#error "SPX_STENCIL_XV=2 needs an even SPX_NX: an odd row length misaligns the pair loads"
#endif
#ifndef SPX_CC
#define SPX_CC 0.4
#endif
#ifndef SPX_CXM
#define SPX_CXM 0.1
#endif
#ifndef SPX_CXP
#define SPX_CXP 0.1
#endif
#ifndef SPX_CYM
#define SPX_CYM 0.1
#endif
#ifndef SPX_CYP
#define SPX_CYP 0.1
#endif
#ifndef SPX_CZM
#define SPX_CZM 0.1
#endif
#ifndef SPX_CZP
#define SPX_CZP 0.1
#endif

typedef SPX_VALUE_T spx_value_t;
/* Two adjacent x cells as one aligned vector (SPX_STENCIL_XV = 2). */
template <typename T> struct spx_pair_of;
template <> struct spx_pair_of<float> { typedef float2 type; };
template <> struct spx_pair_of<double> { typedef double2 type; };
typedef spx_pair_of<spx_value_t>::type spx_pair_t;

#define SPX_PLANE ((long long)SPX_NX * SPX_NY)

/* Slot of plane z, zoff the plane in slot 0 (the host's rule, spx__stencil_slot): (z - zoff) mod
 * SPX_RING in a ring, else z - zoff (zoff = wz0). A compile-time ring size keeps the linear kernels
 * (in core, mm) what they were: the run-time one cost the in-core depth-2 kernel 10%. */
__device__ __forceinline__ int spx_slot(long long z, long long zoff) {
#if SPX_RING
  const int r = (int)((z - zoff) % SPX_RING);
  return r < 0 ? r + SPX_RING : r;
#else
  return (int)(z - zoff);
#endif
}
/* The slot after s: planes advance one at a time, so a compare replaces the modulo. */
__device__ __forceinline__ int spx_next(int s) {
#if SPX_RING
  return s + 1 == SPX_RING ? 0 : s + 1;
#else
  return s + 1;
#endif
}

__device__ __forceinline__ float spx_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float spx_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double spx_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double spx_add(double a, double b) { return __dadd_rn(a, b); }

/* The update, in the one order the host reference uses too. */
__device__ __forceinline__ spx_value_t spx_update(spx_value_t c, spx_value_t w, spx_value_t e,
                                                  spx_value_t s, spx_value_t n, spx_value_t b,
                                                  spx_value_t t) {
  spx_value_t r = spx_mul((spx_value_t)(SPX_CC), c);
  r = spx_add(r, spx_mul((spx_value_t)(SPX_CXM), w));
  r = spx_add(r, spx_mul((spx_value_t)(SPX_CXP), e));
  r = spx_add(r, spx_mul((spx_value_t)(SPX_CYM), s));
  r = spx_add(r, spx_mul((spx_value_t)(SPX_CYP), n));
  r = spx_add(r, spx_mul((spx_value_t)(SPX_CZM), b));
  r = spx_add(r, spx_mul((spx_value_t)(SPX_CZP), t));
  return r;
}

/* One step on output planes [zlo, zhi); the window holds planes [wz0, wz1). */
#if SPX_STENCIL_XV == 1
extern "C" __global__ void __launch_bounds__(SPX_BX * SPX_BY)
spx_stencil_step(const spx_value_t *__restrict__ in, spx_value_t *__restrict__ out, long long wz0,
                 long long wz1, int zlo, int zhi, int chunk, long long zoff) {
  const int gx = blockIdx.x * SPX_BX + threadIdx.x, gy = blockIdx.y * SPX_BY + threadIdx.y;
  const int z0 = zlo + (int)blockIdx.z * chunk;
  const int z1 = min(z0 + chunk, zhi);
  (void)wz0; (void)wz1; /* the window checks are the caller's here; zoff places the planes */
  if (gx >= SPX_NX || gy >= SPX_NY || z0 >= z1) return;
  const bool edge = gx == 0 || gx == SPX_NX - 1 || gy == 0 || gy == SPX_NY - 1;
  const long long col = (long long)gy * SPX_NX + gx;
  /* zlo >= 1 and zhi <= NZ-1: planes z0-1 and z1 exist and lie in the window. */
  int sc = spx_slot(z0, zoff), sa = spx_next(sc);
  spx_value_t below = __ldg(in + spx_slot(z0 - 1, zoff) * SPX_PLANE + col), centre = __ldg(in + sc * SPX_PLANE + col);
  for (int z = z0; z < z1; z++, sc = sa, sa = spx_next(sa)) {
    const spx_value_t *p = in + sc * SPX_PLANE + col;
    const spx_value_t above = __ldg(in + sa * SPX_PLANE + col);
    out[sc * SPX_PLANE + col] = edge ? centre
                                     : spx_update(centre, __ldg(p - 1), __ldg(p + 1), __ldg(p - SPX_NX),
                                                  __ldg(p + SPX_NX), below, above);
    below = centre;
    centre = above;
  }
}
#else
/* Cells gx and gx + 1 (gx even). Every load is unconditional, so that all of them issue together:
 * each lies in the window even for a boundary cell (rows gy - 1 and gy + 1 and cells gx - 1 and
 * gx + 2 stay within planes z - 1 .. z + 1, which the window holds), and a boundary cell's sum,
 * maybe of garbage, is not used. */
extern "C" __global__ void __launch_bounds__(SPX_BX * SPX_BY)
spx_stencil_step(const spx_value_t *__restrict__ in, spx_value_t *__restrict__ out, long long wz0,
                 long long wz1, int zlo, int zhi, int chunk, long long zoff) {
  const int gx = 2 * (int)(blockIdx.x * SPX_BX + threadIdx.x), gy = blockIdx.y * SPX_BY + threadIdx.y;
  const int z0 = zlo + (int)blockIdx.z * chunk;
  const int z1 = min(z0 + chunk, zhi);
  (void)wz0; (void)wz1; /* the window checks are the caller's here; zoff places the planes */
  if (gx >= SPX_NX || gy >= SPX_NY || z0 >= z1) return; /* NX even: gx < NX means gx + 1 < NX */
  const bool yedge = gy == 0 || gy == SPX_NY - 1;
  const bool edge0 = yedge || gx == 0, edge1 = yedge || gx + 1 == SPX_NX - 1;
  const long long col = (long long)gy * SPX_NX + gx;
  int sc = spx_slot(z0, zoff), sa = spx_next(sc);
  spx_pair_t below = __ldg((const spx_pair_t *)(in + spx_slot(z0 - 1, zoff) * SPX_PLANE + col)),
             centre = __ldg((const spx_pair_t *)(in + sc * SPX_PLANE + col));
  for (int z = z0; z < z1; z++, sc = sa, sa = spx_next(sa)) {
    const spx_value_t *p = in + sc * SPX_PLANE + col;
    spx_value_t *q = out + sc * SPX_PLANE + col;
    const spx_pair_t above = __ldg((const spx_pair_t *)(in + sa * SPX_PLANE + col));
#if SPX_RING
    /* a ring's first and last slots have no plane before or after them in memory: a boundary
     * cell's neighbours outside its row or plane load from the cell itself (unused) */
    const spx_pair_t s = __ldg((const spx_pair_t *)(gy > 0 ? p - SPX_NX : p)),
                     n = __ldg((const spx_pair_t *)(gy < SPX_NY - 1 ? p + SPX_NX : p));
    const spx_value_t w = __ldg(gx > 0 ? p - 1 : p), e = __ldg(gx + 2 < SPX_NX ? p + 2 : p);
#else
    const spx_pair_t s = __ldg((const spx_pair_t *)(p - SPX_NX)), n = __ldg((const spx_pair_t *)(p + SPX_NX));
    const spx_value_t w = __ldg(p - 1), e = __ldg(p + 2);
#endif
    /* Both sums first, then selects: no branch between one z step's loads and the next's. */
    const spx_value_t u0 = spx_update(centre.x, w, centre.y, s.x, n.x, below.x, above.x);
    const spx_value_t u1 = spx_update(centre.y, centre.x, e, s.y, n.y, below.y, above.y);
    spx_pair_t r;
    r.x = edge0 ? centre.x : u0;
    r.y = edge1 ? centre.y : u1;
    *(spx_pair_t *)q = r;
    below = centre;
    centre = above;
  }
}
#endif

/* Input plane z of a column (at p), or 0 outside the domain and the window (values no written cell
 * uses). */
__device__ __forceinline__ spx_value_t spx_tb_load(const spx_value_t *p, bool in_domain, long long wz0, long long wz1,
                                                   int z) {
  return in_domain && z >= 0 && z < SPX_NZ && z >= wz0 && z < wz1 ? __ldg(p) : (spx_value_t)0;
}

/* SPX_DEPTH steps of one item: output planes [zs, ze) of column tile (bx, by). */
__device__ __forceinline__ void spx_tb_item(const spx_value_t *__restrict__ in, spx_value_t *__restrict__ out,
                                            long long wz0, long long wz1, long long zoff, int bx, int by, int zs,
                                            int ze,
                                            spx_value_t (*sm)[SPX_BY][SPX_BX]) {
  const int D = SPX_DEPTH;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int gx = bx * (SPX_BX - 2 * D) + tx - D, gy = by * (SPX_BY - 2 * D) + ty - D;
  const bool in_domain = gx >= 0 && gx < SPX_NX && gy >= 0 && gy < SPX_NY;
  const bool edge = gx <= 0 || gx >= SPX_NX - 1 || gy <= 0 || gy >= SPX_NY - 1;
  const bool inner = tx >= 1 && tx <= SPX_BX - 2 && ty >= 1 && ty <= SPX_BY - 2;
  const bool writer = in_domain && tx >= D && tx < SPX_BX - D && ty >= D && ty < SPX_BY - D;
  const long long col = in_domain ? (long long)gy * SPX_NX + gx : 0;
  /* q[l] = level l at planes (c-1, c, c+1), c the centre the next level computes. Values of planes
   * outside the valid range are garbage that no written cell depends on. */
  spx_value_t q[SPX_DEPTH][3];
  /* pf[k] = input plane zin + k, loaded SPX_TB_PF planes ahead: the loads are in flight across
   * the barriers of the levels in between (one load per thread and plane otherwise waits out its
   * latency each plane: depth 2 ran at 93% of the one-step roofline, 2000^3 float on an H100) */
  /* ls: slot of the next plane to load, at lp; ws: slot of the plane level DEPTH finishes this
   * iteration, at wp. A ring's z loop runs in segments in which neither slot wraps: inside one the
   * pointers advance a plane, with no slot arithmetic per plane (a compare and select per slot and
   * a 64-bit multiply per address cost the ring kernels 12-17%, H100, float, depth 2). A linear
   * window is one segment. The compiler unrolls this form of the loop x2 (not the one with slot
   * indices), measured on an H100, float, depth 2, against the slot-index loop: in core 512^3 11%
   * faster, 1024^3 3% slower; rings (mmtb 512^3, overlap 640^3 and 1024^3 under 1 GiB) 16-20%
   * faster. An explicit x4 was slower than x2 everywhere. */
  int ls = spx_slot(zs - D, zoff), ws = spx_slot(zs - 2 * D, zoff);
  const spx_value_t *lp = in + ls * SPX_PLANE + col;
  spx_value_t *wp = out + ws * SPX_PLANE + col;
#if SPX_TB_PF
  spx_value_t pf[SPX_TB_PF];
#pragma unroll
  for (int k = 0; k < SPX_TB_PF; k++) {
    pf[k] = spx_tb_load(lp, in_domain, wz0, wz1, zs - D + k);
    lp += SPX_PLANE;
#if SPX_RING
    if (++ls == SPX_RING) { ls = 0; lp = in + col; }
#endif
  }
#endif
#pragma unroll
  for (int l = 0; l < D; l++) q[l][0] = q[l][1] = q[l][2] = (spx_value_t)0;
  for (int zin = zs - D; zin < ze + D;) {
#if SPX_RING
    const int n = min(ze + D - zin, min(SPX_RING - ls, SPX_RING - ws)), zseg = zin + n;
#else
    const int zseg = ze + D;
#endif
    for (; zin < zseg; zin++, lp += SPX_PLANE, wp += SPX_PLANE) {
#if SPX_TB_PF
      const spx_value_t v = pf[0];
#pragma unroll
      for (int k = 0; k + 1 < SPX_TB_PF; k++) pf[k] = pf[k + 1];
      pf[SPX_TB_PF - 1] = spx_tb_load(lp, in_domain, wz0, wz1, zin + SPX_TB_PF);
#else
      const spx_value_t v = spx_tb_load(lp, in_domain, wz0, wz1, zin);
#endif
      q[0][0] = q[0][1];
      q[0][1] = q[0][2];
      q[0][2] = v;
#pragma unroll
      for (int l = 1; l <= D; l++) {
        const int zc = zin - l;
        const spx_value_t c = q[l - 1][1];
        spx_value_t r = c;
        sm[l - 1][ty][tx] = c;
        __syncthreads();
        if (inner && !edge && zc >= 1 && zc <= SPX_NZ - 2)
          r = spx_update(c, sm[l - 1][ty][tx - 1], sm[l - 1][ty][tx + 1], sm[l - 1][ty - 1][tx],
                         sm[l - 1][ty + 1][tx], q[l - 1][0], q[l - 1][2]);
        if (l < D) {
          q[l][0] = q[l][1];
          q[l][1] = q[l][2];
          q[l][2] = r;
        } else if (writer && zc >= zs && zc < ze) {
          *wp = r; /* zc = zin - D: slot ws */
        }
      }
      if (D == 1) __syncthreads();
    }
#if SPX_RING
    ls += n;
    ws += n;
    if (ls == SPX_RING) { ls = 0; lp -= SPX_RING * SPX_PLANE; }
    if (ws == SPX_RING) { ws = 0; wp -= SPX_RING * SPX_PLANE; }
#endif
  }
}

/* SPX_DEPTH steps on output planes [zlo, zhi) through shared memory.
 * WORK  items: the TX x TY column tiles times z-chunks of `chunk` output planes, chunk-major (item
 *       i: tile i % (TX TY), chunk i / (TX TY)), one block each, in waves of `slots` blocks (those
 *       the GPU runs at once). The M < slots items of the last wave are cut in z into S pieces
 *       each, one block a piece, instead of M blocks running whole items alone at the end (640^3
 *       has 529 tiles a chunk and an H100 264 resident blocks: each launch ended with one or two).
 *       A piece has at least SPX_TB_MINP planes, as each costs 2 DEPTH planes of start-up. The
 *       grid is 1-D: the full waves' blocks, then the pieces (the host counts them the same way). */
#define SPX_TB_TX ((SPX_NX + SPX_BX - 2 * SPX_DEPTH - 1) / (SPX_BX - 2 * SPX_DEPTH))
#define SPX_TB_TY ((SPX_NY + SPX_BY - 2 * SPX_DEPTH - 1) / (SPX_BY - 2 * SPX_DEPTH))
#define SPX_TB_MINP (4 * SPX_DEPTH)
extern "C" __global__ void __launch_bounds__(SPX_BX * SPX_BY)
spx_stencil_tb(const spx_value_t *__restrict__ in, spx_value_t *__restrict__ out, long long wz0,
               long long wz1, int zlo, int zhi, int chunk, long long zoff, int slots) {
  /* One centre plane per level; a level's plane is rewritten only after a barrier of another
   * level (DEPTH >= 2) or the trailing barrier (DEPTH == 1), so one buffer per level suffices. */
  __shared__ spx_value_t sm[SPX_DEPTH][SPX_BY][SPX_BX];
  const int NT = SPX_TB_TX * SPX_TB_TY;
  const int items = NT * ((zhi - zlo + chunk - 1) / chunk), full = items / slots * slots; /* host: < 2^31 */
  int it = (int)blockIdx.x, zs, ze;
  if (it < full) {
    zs = zlo + it / NT * chunk;
    ze = min(zs + chunk, zhi);
  } else { /* piece `part` of item `it` */
    const int M = items - full, S = max(1, min(slots / M, chunk / SPX_TB_MINP)), part = (it - full) % S;
    int len;
    it = full + (it - full) / S;
    zs = zlo + it / NT * chunk;
    len = min(zs + chunk, zhi) - zs;
    ze = zs + (int)((long long)len * (part + 1) / S);
    zs += (int)((long long)len * part / S);
  }
  if (zs >= ze) return; /* uniform over the block: no barrier is skipped by part of it */
  spx_tb_item(in, out, wz0, wz1, zoff, it % NT % SPX_TB_TX, it % NT / SPX_TB_TX, zs, ze, sm);
}
