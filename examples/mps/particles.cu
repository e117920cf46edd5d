/* SPDX-License-Identifier: BSD-3-Clause */
/* particles.cu: the particle kernels of one MPS step on the GPU, the device twins of kernels.c,
 * grid.c and ppe.c (mps.h). gpu.c adds this file to spx's JIT (spx_jit_template_add; the build
 * embeds it as a C string, examples/mps/embed_cu.sh) and launches it through spx_context_launch.
 *
 * DIM      SPX_MPS_DIM, a JIT define (gpu.c): 2 or 3. In 3-D each kernel adds its twin's z terms
 *          after the x and y ones (mps.h mps_offset's order); in 2-D they compile away, and the 2-D
 *          arithmetic is the same as the 3-D one's first terms.
 * MAPPING  one thread per particle (i = blockIdx.x * blockDim.x + threadIdx.x < n), any block
 *          size; mps_g_cellsort one thread per cell; the scans (mps_g_scan_tile, _sums, _add)
 *          tiles of MPS_TILE entries, blocks of exactly MPS_TILE_THREADS threads (gpu_abi.h), and
 *          one block of MPS_SCAN_THREADS for the tiles' sums. Each kernel takes the step's arrays
 *          and parameters by value (mps_dev, gpu_abi.h) and writes only its own particle's
 *          (cell's, tile's) entries.
 * BITS     Every kernel does the host twin's arithmetic in the host twin's order, so that its
 *          results are the host's to the bit: spx's NVRTC options leave FMA contraction on
 *          (--fmad=true is NVRTC's default and spx passes only --std=c++17), so every product
 *          and every sum that could fuse is written __dmul_rn / __dadd_rn / __dsub_rn, which the
 *          compiler never contracts. Double division and sqrt are IEEE round-to-nearest on the
 *          device as on the host. Sums over neighbours run in the host's order (the 3 x 3 cells,
 *          3-D: 3 x 3 x 3, planes then rows bottom up, particles in cell order), never in thread
 *          order.
 * SORT     The host's stable counting sort, deterministically: counts per cell with integer
 *          atomics (a sum: the same whatever the order), an exclusive scan gives the cell starts,
 *          each particle takes a slot in its cell with an integer atomic (the order inside a cell
 *          is the race's), then one thread per cell sorts its slots by the old index (insertion
 *          sort: ~12 particles a cell in 2-D, ~43 in 3-D). The ghosts' bin, which is not bounded
 *          by any density, takes its slots from a scan of the ghost flags instead (the old order
 *          directly). The result is the host's perm exactly: cells in order, and inside a cell
 *          the old order (stable). No float atomics anywhere.
 * SCANS    Exclusive scans of non-negative ints over any n, in three launches: each tile's sum
 *          (and largest entry), one block scans the tiles' sums, each tile scans itself from its
 *          offset. Integer sums: exact and the same in any order; a total past 2^31 - 1 (the
 *          PPE's nonzeros: its row pointers are 32-bit) comes out -1, and gpu.c stops.
 * BYTES    per particle and kernel about 9 neighbour cells x 12 particles x (x, y and one or two
 *          more arrays): latency-bound at 5,824 particles (launches dominate); 3-D: 27 cells of
 *          about 43 particles, x, y, z and more. */
#include "gpu_abi.h"

/* gpu.c checks the same size on the host: the two compilers lay mps_dev out alike */
static_assert(sizeof(mps_dev) == 63 * 8 + 4 * 4, "mps_dev: the host's layout (gpu.c) differs");

#ifndef SPX_MPS_DIM
#define SPX_MPS_DIM 2
#endif
static_assert(SPX_MPS_DIM == 2 || SPX_MPS_DIM == 3, "SPX_MPS_DIM: 2 or 3");
/* MPS_D3: the z terms; MPS_LAYERS: cell planes either side in z (mps_grid.layers). Enumerators,
 * so that they fold and leave no device variable behind. */
enum { MPS_D3 = SPX_MPS_DIM == 3, MPS_LAYERS = MPS_D3 ? 1 : 0 };

enum { MPS_FLUID = 0, MPS_WALL = 1, MPS_DUMMY = 2, MPS_GHOST = 3 };
enum { MPS_BC_NONE = 0, MPS_BC_INNER = 1, MPS_BC_SURFACE = 2 };

#define MUL(a, b) __dmul_rn((a), (b))
#define ADD(a, b) __dadd_rn((a), (b))
#define SUB(a, b) __dsub_rn((a), (b))

__device__ __forceinline__ long long mps_tid() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }

/* mps.h's mps_weight (2-4) */
__device__ __forceinline__ double mps_weight(double r, double re, double l0) {
  double lim = MUL(1e-3, l0), rr = r > lim ? r : lim;
  return r < re ? SUB(re / rr, 1.0) : 0.0;
}

/* mps.h's mps_offset: r_j - r_i (dz 0 in 2-D) and its squared length (dx^2 + dy^2) + dz^2, unfused */
__device__ __forceinline__ double mps_offset(const mps_dev &d, long long i, int j, double &dx, double &dy, double &dz) {
  double r2;
  dx = d.x[j] - d.x[i];
  dy = d.y[j] - d.y[i];
  dz = 0;
  r2 = ADD(MUL(dx, dx), MUL(dy, dy));
  if (MPS_D3) {
    dz = d.z[j] - d.z[i];
    r2 = ADD(r2, MUL(dz, dz));
  }
  return r2;
}

/* mps.h's MPS_NEIGHBOURS: the 3 x 3 (x 3) cells round i's, planes then rows bottom up, each grid
 * row one contiguous range */
#define MPS_NEIGHBOURS(d, i, j)                                                                    \
  for (int dz_ = -MPS_LAYERS; dz_ <= MPS_LAYERS; dz_++)                                            \
    for (int dy_ = -1; dy_ <= 1; dy_++)                                                            \
      for (int j = (d).start[(d).cell[i] + (dz_ * (d).ny + dy_) * (d).nx - 1],                     \
               end_ = (d).start[(d).cell[i] + (dz_ * (d).ny + dy_) * (d).nx + 2];                  \
           j < end_; j++)

/* ---- neighbour search: the stable counting sort by cell (grid.c) ----------------------------- */
/* n integers to zero (the counts and fill cursors before a sort) */
extern "C" __global__ void mps_g_zero(int *a, long long n) {
  long long i = mps_tid();
  if (i < n) a[i] = 0;
}

/* grid.c cell_of (3-D: cell_of3), or ghost outside the inner cells */
__device__ int mps_cell_of(const mps_dev &d, long long i, int ghost) {
  double fx = (d.x[i] - d.x0) / d.h, fy = (d.y[i] - d.y0) / d.h;
  int c;
  if (!(fx >= 1.0 && fy >= 1.0 && fx < d.nx - 1 && fy < d.ny - 1)) return ghost;
  c = (int)fy * d.nx + (int)fx;
  if (MPS_D3) {
    double fz = (d.z[i] - d.z0) / d.h;
    if (!(fz >= 1.0 && fz < d.nz - 1)) return ghost;
    c += ((int)fz * d.ny) * d.nx;
  }
  return c;
}

/* grid.c mps_grid_sort's first loop, and the counts of counting_sort; flag[i] = 1 for a ghost
 * (the scan of the flags gives the ghosts their slots in order) */
extern "C" __global__ void mps_g_key(mps_dev d) {
  long long i = mps_tid();
  int ghost = d.nx * d.ny * d.nz, k;
  if (i >= d.n) return;
  k = d.type[i] == MPS_GHOST ? ghost : mps_cell_of(d, i, ghost);
  if (k == ghost) d.type[i] = MPS_GHOST;
  d.key[i] = k;
  d.flag[i] = k == ghost;
  atomicAdd(&d.count[k], 1);
}

/* ---- exclusive scans over any n (SCANS above) --------------------------------------------------- */
/* A block's exclusive scan of one value a thread (Hillis-Steele in sh[blockDim.x]): the thread's
 * prefix, *total the block's sum. Every thread of the block calls it. */
__device__ int mps_block_scan(int v, int *sh, int *total) {
  const int t = threadIdx.x, nt = blockDim.x;
  int k, ex;
  sh[t] = v;
  __syncthreads();
  for (k = 1; k < nt; k *= 2) {
    int add = t >= k ? sh[t - k] : 0;
    __syncthreads();
    sh[t] += add;
    __syncthreads();
  }
  *total = sh[nt - 1];
  ex = t > 0 ? sh[t - 1] : 0;
  __syncthreads(); /* sh free again */
  return ex;
}

/* A block's largest value (blockDim.x a power of two; values >= 0) into *m, every thread's. */
__device__ void mps_block_max(int v, int *sh, int *m) {
  const int t = threadIdx.x;
  int k;
  sh[t] = v;
  __syncthreads();
  for (k = blockDim.x / 2; k > 0; k /= 2) {
    if (t < k && sh[t + k] > sh[t]) sh[t] = sh[t + k];
    __syncthreads();
  }
  *m = sh[0];
  __syncthreads();
}

/* 1 of 3: tile b (MPS_TILE entries from b * MPS_TILE) sums into sums[b], and with maxes its
 * largest entry into maxes[b]. */
extern "C" __global__ void __launch_bounds__(MPS_TILE_THREADS)
    mps_g_scan_tile(const int *in, long long n, int *sums, int *maxes) {
  __shared__ int sh[MPS_TILE_THREADS];
  const long long lo = (long long)blockIdx.x * MPS_TILE + (long long)threadIdx.x * MPS_TILE_ITEMS;
  int s = 0, m = 0, k, total;
  for (k = 0; k < MPS_TILE_ITEMS; k++)
    if (lo + k < n) {
      int v = in[lo + k];
      s += v;
      m = v > m ? v : m;
    }
  (void)mps_block_scan(s, sh, &total);
  if (maxes) mps_block_max(m, sh, &m);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = total;
    if (maxes) maxes[blockIdx.x] = m;
  }
}

/* 2 of 3, one block of MPS_SCAN_THREADS: the tiles' sums[0..nb) scanned in place (exclusive),
 * sums[nb] the total, -1 when it passes 2^31 - 1 (summed again in 64 bits to know); with maxes,
 * maxes[nb] the largest of maxes[0..nb). Thread t scans a contiguous chunk; every read of a chunk
 * comes before the barrier, so in place is safe. */
extern "C" __global__ void __launch_bounds__(MPS_SCAN_THREADS) mps_g_scan_sums(int *sums, long long nb, int *maxes) {
  __shared__ int sh[MPS_SCAN_THREADS];
  __shared__ long long wide[MPS_SCAN_THREADS];
  const int t = threadIdx.x;
  const long long per = (nb + MPS_SCAN_THREADS - 1) / MPS_SCAN_THREADS, lo = t * per;
  const long long hi = lo + per < nb ? lo + per : nb;
  int s = 0, m = 0, total, k;
  long long i, w = 0;
  for (i = lo; i < hi; i++) {
    s += sums[i];
    w += sums[i];
    if (maxes && maxes[i] > m) m = maxes[i];
  }
  wide[t] = w;
  s = mps_block_scan(s, sh, &total); /* its barriers publish wide[] too */
  for (k = MPS_SCAN_THREADS / 2; k > 0; k /= 2) {
    if (t < k) wide[t] += wide[t + k];
    __syncthreads();
  }
  if (maxes) mps_block_max(m, sh, &m);
  for (i = lo; i < hi; i++) {
    int v = sums[i];
    sums[i] = s;
    s += v;
  }
  if (t == 0) {
    sums[nb] = wide[0] > 2147483647LL ? -1 : total;
    if (maxes) maxes[nb] = m;
  }
}

/* 3 of 3: out[i] = the sum of in[0..i) for i < n (tile b from its offset sums[b]), and out[n] the
 * total. out and in differ. */
extern "C" __global__ void __launch_bounds__(MPS_TILE_THREADS)
    mps_g_scan_add(const int *in, int *out, long long n, const int *sums) {
  __shared__ int sh[MPS_TILE_THREADS];
  const long long lo = (long long)blockIdx.x * MPS_TILE + (long long)threadIdx.x * MPS_TILE_ITEMS;
  int v[MPS_TILE_ITEMS], s = 0, k, total;
  for (k = 0; k < MPS_TILE_ITEMS; k++) {
    v[k] = lo + k < n ? in[lo + k] : 0;
    s += v[k];
  }
  s = mps_block_scan(s, sh, &total) + sums[blockIdx.x];
  for (k = 0; k < MPS_TILE_ITEMS; k++) {
    if (lo + k < n) out[lo + k] = s;
    s += v[k];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) out[n] = sums[gridDim.x];
}

/* Each particle takes a slot in its cell (the order inside a cell is fixed by mps_g_cellsort); a
 * ghost takes the slot of its rank among the ghosts (rowscan: the scan of the flags), in order. */
extern "C" __global__ void mps_g_place(mps_dev d) {
  long long i = mps_tid();
  int k;
  if (i >= d.n) return;
  k = d.key[i];
  d.perm[d.start[k] + (k == d.nx * d.ny * d.nz ? d.rowscan[i] : atomicAdd(&d.fill[k], 1))] = (int)i;
}

/* One thread per inner cell: its slots sorted by old index, so the sort is stable as the host's
 * counting sort is (the ghosts' bin is in order already: mps_g_place). */
extern "C" __global__ void mps_g_cellsort(mps_dev d) {
  long long c = mps_tid();
  int lo, hi, a, b;
  if (c >= (long long)d.nx * d.ny * d.nz) return;
  lo = d.start[c];
  hi = d.start[c + 1];
  for (a = lo + 1; a < hi; a++) {
    int v = d.perm[a];
    for (b = a - 1; b >= lo && d.perm[b] > v; b--) d.perm[b + 1] = d.perm[b];
    d.perm[b + 1] = v;
  }
}

/* grid.c MPS_PERMUTE into the second set of arrays (the host swaps the sets after), and cell[]. */
extern "C" __global__ void mps_g_permute(mps_dev d) {
  long long k = mps_tid();
  int o;
  if (k >= d.n) return;
  o = d.perm[k];
  d.id2[k] = d.id[o];
  d.type2[k] = d.type[o];
  d.x2[k] = d.x[o];
  d.y2[k] = d.y[o];
  d.u2[k] = d.u[o];
  d.v2[k] = d.v[o];
  d.p2[k] = d.p[o];
  if (MPS_D3) {
    d.z2[k] = d.z[o];
    d.w2[k] = d.w[o];
  }
  d.cell[k] = d.key[o];
}

/* ---- explicit viscosity and gravity, collisions (kernels.c) ------------------------------------ */
__device__ __forceinline__ bool mps_active(const mps_dev &d, int j) { return d.type[j] != MPS_GHOST; }
__device__ __forceinline__ bool mps_carries(const mps_dev &d, int j) {
  return d.type[j] == MPS_FLUID || d.type[j] == MPS_WALL;
}

/* kernels.c k_explicit */
extern "C" __global__ void mps_g_explicit(mps_dev d) {
  long long i = mps_tid();
  double lu = 0, lv = 0, lw = 0, re2, c;
  if (i >= d.n || d.type[i] != MPS_FLUID) return;
  re2 = MUL(d.re_lap, d.re_lap);
  c = 2.0 * SPX_MPS_DIM / MUL(d.lambda, d.n0_lap);
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz), w;
    if (j == i || !mps_active(d, j) || r2 >= re2) continue;
    w = mps_weight(sqrt(r2), d.re_lap, d.l0);
    lu = ADD(lu, MUL(d.u[j] - d.u[i], w));
    lv = ADD(lv, MUL(d.v[j] - d.v[i], w));
    if (MPS_D3) lw = ADD(lw, MUL(d.w[j] - d.w[i], w));
  }
  d.ax[i] = ADD(d.u[i], MUL(d.dt, MUL(MUL(d.nu, c), lu)));
  d.ay[i] = ADD(d.v[i], MUL(d.dt, ADD(MUL(MUL(d.nu, c), lv), d.g)));
  if (MPS_D3) d.az[i] = ADD(d.w[i], MUL(d.dt, MUL(MUL(d.nu, c), lw)));
}

/* kernels.c take_velocity: whole = 1 after the explicit step, 0 after collisions */
extern "C" __global__ void mps_g_take(mps_dev d, int whole) {
  long long i = mps_tid();
  if (i >= d.n || d.type[i] != MPS_FLUID) return;
  d.x[i] = ADD(d.x[i], MUL(d.dt, whole ? d.ax[i] : d.ax[i] - d.u[i]));
  d.y[i] = ADD(d.y[i], MUL(d.dt, whole ? d.ay[i] : d.ay[i] - d.v[i]));
  d.u[i] = d.ax[i];
  d.v[i] = d.ay[i];
  if (MPS_D3) {
    d.z[i] = ADD(d.z[i], MUL(d.dt, whole ? d.az[i] : d.az[i] - d.w[i]));
    d.w[i] = d.az[i];
  }
}

/* kernels.c k_collision */
extern "C" __global__ void mps_g_collision(mps_dev d) {
  long long i = mps_tid();
  double ui, vi, wi, d2;
  if (i >= d.n || d.type[i] != MPS_FLUID) return;
  ui = d.u[i];
  vi = d.v[i];
  wi = MPS_D3 ? d.w[i] : 0;
  d2 = MUL(d.collision, d.collision);
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz), r, vn;
    if (j == i || !mps_active(d, j) || r2 >= d2 || r2 <= 0) continue;
    r = sqrt(r2);
    vn = ADD(MUL(ui - d.u[j], dx), MUL(vi - d.v[j], dy));
    if (MPS_D3) vn = ADD(vn, MUL(wi - d.w[j], dz));
    vn = vn / r;
    if (vn <= 0) continue;
    vn = MUL(vn, MUL(0.5, 1.0 + d.restitution));
    ui = SUB(ui, MUL(vn, dx) / r);
    vi = SUB(vi, MUL(vn, dy) / r);
    if (MPS_D3) wi = SUB(wi, MUL(vn, dz) / r);
  }
  d.ax[i] = ui;
  d.ay[i] = vi;
  if (MPS_D3) d.az[i] = wi;
}

/* ---- number density, free surface, PPE rows (kernels.c mps_density) --------------------------- */
/* kernels.c k_density for fluid and wall particles, bc NONE and nd 0 for the rest; flag[i] = 1 for
 * an inner particle (the row scan's input) */
extern "C" __global__ void mps_g_density(mps_dev d) {
  long long i = mps_tid();
  double n = 0, re2;
  if (i >= d.n) return;
  d.bc[i] = MPS_BC_NONE;
  d.nd[i] = 0;
  d.flag[i] = 0;
  if (d.type[i] != MPS_FLUID && d.type[i] != MPS_WALL) return;
  re2 = MUL(d.re_n, d.re_n);
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz);
    if (j == i || !mps_active(d, j) || r2 >= re2) continue;
    n = ADD(n, mps_weight(sqrt(r2), d.re_n, d.l0));
  }
  d.nd[i] = n;
  d.bc[i] = n < MUL(d.beta, d.n0_n) ? MPS_BC_SURFACE : MPS_BC_INNER;
  d.flag[i] = d.bc[i] == MPS_BC_INNER;
}

/* row numbers from the scan of the flags: particle (cell) order, as the host numbers them */
extern "C" __global__ void mps_g_rows(mps_dev d) {
  long long i = mps_tid();
  if (i < d.n) d.row[i] = d.flag[i] ? d.rowscan[i] : -1;
}

/* ---- the PPE in CSR (ppe.c) ------------------------------------------------------------------ */
/* ppe.c k_count: row length of an inner particle (0 for the others, the row-start scan's input) */
extern "C" __global__ void mps_g_count(mps_dev d) {
  long long i = mps_tid();
  double re2;
  int k = 1;
  if (i >= d.n) return;
  if (d.row[i] < 0) {
    d.len[i] = 0;
    return;
  }
  re2 = MUL(d.re_lap, d.re_lap);
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz;
    if (j != i && d.row[j] >= 0 && mps_offset(d, i, j, dx, dy, dz) < re2) k++;
  }
  d.len[i] = k;
}

/* row_ptr (32- and 64-bit) from the row starts by particle (offs, the scan of len):
 * row_ptr[row[i]] = offs[i], and row_ptr[nrows] = nnz */
extern "C" __global__ void mps_g_rowptr(mps_dev d) {
  long long i = mps_tid();
  if (i >= d.n) return;
  if (d.row[i] >= 0) {
    d.row_ptr[d.row[i]] = d.offs[i];
    d.row_ptr64[d.row[i]] = d.offs[i];
  }
  if (i == 0) {
    d.row_ptr[d.rowscan[d.n]] = d.offs[d.n];
    d.row_ptr64[d.rowscan[d.n]] = d.offs[d.n];
  }
}

/* ppe.c divergence */
__device__ double mps_divergence(const mps_dev &d, long long i) {
  double s = 0, re2 = MUL(d.re_grad, d.re_grad);
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz), q;
    if (j == i || !mps_carries(d, j) || r2 >= re2 || r2 <= 0) continue;
    q = ADD(MUL(d.u[j] - d.u[i], dx), MUL(d.v[j] - d.v[i], dy));
    if (MPS_D3) q = ADD(q, MUL(d.w[j] - d.w[i], dz));
    s = ADD(s, MUL(q / r2, mps_weight(sqrt(r2), d.re_grad, d.l0)));
  }
  return MUL((double)SPX_MPS_DIM / d.n0_grad, s);
}

/* ppe.c k_row: columns in particle order (sorted), the diagonal gathering the surface neighbours */
extern "C" __global__ void mps_g_fill(mps_dev d) {
  long long i = mps_tid();
  double re2, a, diag, bi;
  int k, kd, r;
  if (i >= d.n || (r = d.row[i]) < 0) return;
  re2 = MUL(d.re_lap, d.re_lap);
  a = 2.0 * SPX_MPS_DIM / MUL(MUL(d.lambda, d.n0_lap), d.rho);
  diag = d.compressibility / MUL(d.dt, d.dt);
  k = kd = d.offs[i];
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz), c;
    if (j == i) {
      kd = k;
      d.col[k++] = r;
      continue;
    }
    if (!mps_carries(d, j) || r2 >= re2) continue;
    c = MUL(a, mps_weight(sqrt(r2), d.re_lap, d.l0));
    diag = ADD(diag, c);
    if (d.row[j] >= 0) {
      d.col[k] = d.row[j];
      d.val[k++] = -c;
    }
  }
  d.val[kd] = diag;
  bi = MUL(d.relax / MUL(d.dt, d.dt), d.nd[i] - d.n0_n) / d.n0_n;
  if (d.mixed) bi = SUB(bi, mps_divergence(d, i) / d.dt);
  d.b[r] = bi;
  d.sol[r] = d.p[i];
}

/* ---- pressure and the correction (kernels.c mps_correct) ------------------------------------- */
/* pressure from the solution: 0 off the rows, negative clamped to 0 */
extern "C" __global__ void mps_g_pressure(mps_dev d) {
  long long i = mps_tid();
  double q;
  if (i >= d.n) return;
  q = d.row[i] >= 0 ? d.sol[d.row[i]] : 0.0;
  d.p[i] = q > 0 ? q : 0.0;
}

/* kernels.c k_pmin */
extern "C" __global__ void mps_g_pmin(mps_dev d) {
  long long i = mps_tid();
  double m, re2;
  if (i >= d.n || d.type[i] != MPS_FLUID) return;
  m = d.p[i];
  re2 = MUL(d.re_grad, d.re_grad);
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz);
    if (j == i || r2 >= re2 || !mps_carries(d, j)) continue;
    if (d.p[j] < m) m = d.p[j];
  }
  d.pmin[i] = m;
}

/* kernels.c k_gradient */
extern "C" __global__ void mps_g_gradient(mps_dev d) {
  long long i = mps_tid();
  double gx = 0, gy = 0, gz = 0, re2, c;
  if (i >= d.n || d.type[i] != MPS_FLUID) return;
  re2 = MUL(d.re_grad, d.re_grad);
  c = (double)SPX_MPS_DIM / d.n0_grad;
  MPS_NEIGHBOURS(d, i, j) {
    double dx, dy, dz, r2 = mps_offset(d, i, j, dx, dy, dz), f;
    if (j == i || r2 >= re2 || r2 <= 0 || !mps_carries(d, j)) continue;
    f = MUL((d.p[j] - d.pmin[i]) / r2, mps_weight(sqrt(r2), d.re_grad, d.l0));
    gx = ADD(gx, MUL(f, dx));
    gy = ADD(gy, MUL(f, dy));
    if (MPS_D3) gz = ADD(gz, MUL(f, dz));
  }
  d.ax[i] = MUL(-c, gx) / d.rho;
  d.ay[i] = MUL(-c, gy) / d.rho;
  if (MPS_D3) d.az[i] = MUL(-c, gz) / d.rho;
}

/* kernels.c mps_correct's last loop: (2-20, 2-21, 2-27) */
extern "C" __global__ void mps_g_update(mps_dev d) {
  long long i = mps_tid();
  if (i >= d.n || d.type[i] != MPS_FLUID) return;
  d.u[i] = ADD(d.u[i], MUL(d.dt, d.ax[i]));
  d.v[i] = ADD(d.v[i], MUL(d.dt, d.ay[i]));
  d.x[i] = ADD(d.x[i], MUL(MUL(d.dt, d.dt), d.ax[i]));
  d.y[i] = ADD(d.y[i], MUL(MUL(d.dt, d.dt), d.ay[i]));
  if (MPS_D3) {
    d.w[i] = ADD(d.w[i], MUL(d.dt, d.az[i]));
    d.z[i] = ADD(d.z[i], MUL(MUL(d.dt, d.dt), d.az[i]));
  }
}
