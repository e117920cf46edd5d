/* amg_setup.cu: the kernels of AMG's setup on the GPU (spx/amg.h, WHERE): a level's diagonal, the
 * strength of connection with the filtered diagonal, the passes of the MIS(2) aggregation
 * (rounds, roots numbered, rows joined, rows left attached), the smoothed prolongation P = (I - omega D_F^-1 A_F) T row by row, the power
 * iteration and Gershgorin bound for rho, and an exclusive scan of 32-bit counts. Every kernel has
 * a host twin in include/spx/internal/amg_setup_impl.h taking the same steps: the integers
 * (strength flags, aggregates, P's pattern) are the twin's exactly, and so are P's values for the
 * same omega (each product and sum as the twin's, rounded alone: no FMA contraction). rho's sums
 * run per block, so they agree with the twin's to rounding, and with themselves bit for bit on the
 * same device (a fixed grid). A level's matrix A is CSR with 32-bit offsets and columns, sorted
 * columns and one diagonal entry per row; mask[k] is 1 where entry k is a strong off-diagonal.
 *
 * MAPPING  one thread per row, grid-stride (thread t of G blocks takes rows t, t + G*SPX_BLOCK, ...)
 *          launched with exactly SPX_BLOCK threads per block, but for:
 *          spx_amgs_scan_tiles, spx_amgs_scan_apply: block b takes the tile of SPX_TILE counts from
 *            b*SPX_TILE (thread t its SPX_ITEMS consecutive ones), a shared-memory scan of the
 *            threads' sums; spx_amgs_scan_top: one block scans the tiles' sums in order.
 *          spx_amgs_rho_sum, spx_amgs_gersh_max: one block reduces the per-block partials in a
 *            fixed order (thread t takes partials t, t + SPX_BLOCK, ..., then a tree).
 *          Reductions inside a block: shared-memory trees of fixed shape; integer totals (weak
 *          entries, undecided rows) by one atomic add per warp (integers: any order, same sum).
 * BYTES    per row of len entries (4-byte columns, 8-byte values, 1-byte mask, 4-byte offsets):
 *            spx_amgs_diag        8 + 12 len + 8
 *            spx_amgs_strength    8 + len (12 + 8 gathered d + 1 written) + 16
 *            spx_amgs_sub         8 + len (6 + 4 gathered) + 4
 *            spx_amgs_mis_init    12 + len (5 + 4 gathered) + 8
 *            spx_amgs_mis_max     8 + len (5 + 8 gathered) + 8
 *            spx_amgs_mis_decide  16 + len (5 + 8 gathered) + 8
 *            spx_amgs_mis_join, spx_amgs_agg_*  about 8 + len (5 + 4..8 gathered) + 8
 *            spx_amgs_p_count     8 + len * u (5 + 4 gathered) + 4, u the row's aggregates
 *            spx_amgs_p_fill      count's + len (8) + 16 + u (12)
 *            spx_amgs_rho_step    8 + len (13 + 8 gathered) + 32
 *            scan                 8 per count (read twice, written once)
 *
 * CONSTANTS (pass as -D options; each has a default so that nvcc compiles the file alone)
 *   SPX_BLOCK     threads per block, a power of two of at least 64, exactly the launch's (default 256)
 *
 * Compile alone: nvcc -c templates/amg_setup.cu */

#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif
#define SPX_ITEMS 8
#define SPX_TILE (SPX_BLOCK * SPX_ITEMS)

typedef unsigned long long spx_u64;

#define SPX_FOR_EACH(i, n)                                                              \
  for (long long i = (long long)blockIdx.x * SPX_BLOCK + threadIdx.x; i < (n);           \
       i += (long long)gridDim.x * SPX_BLOCK)

/* MIS(2) states in a tuple's top two bits; a tuple is (state, 31-bit hash of the row, row), and a
 * pass's graph is the strength graph's entries in sub (mask itself, or among the rows still free). */
#define SPX_OUT 0ull
#define SPX_UND 1ull
#define SPX_IN 2ull
#define SPX_STATE(t) ((t) >> 62)

/* The row's priority: splitmix64's finalizer of the row index, 31 bits (the host twin's). */
__device__ __forceinline__ spx_u64 spx_amgs_tuple(long long i, spx_u64 state) {
  spx_u64 x = (spx_u64)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return state << 62 | (x >> 33) << 31 | (spx_u64)i;
}

/* One atomic add per warp of every lane's v (an integer: the total is the same in any order). */
__device__ __forceinline__ void spx_amgs_count(spx_u64 *total, spx_u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0 && v) atomicAdd(total, v);
}

/* d[i] = a_ii (0 where the row has none). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_diag(long long n, const int *__restrict__ rp, const int *__restrict__ ci, const double *__restrict__ val,
              double *__restrict__ d) {
  SPX_FOR_EACH(i, n) {
    double v = 0;
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (ci[k] == i) v = val[k];
    d[i] = v;
  }
}

/* The strength of row i: mask[k] = 1 where a_ik (k off the diagonal) has a_ik^2 >= th2 |a_ii a_kk|;
 * dF[i] = a_ii + the row's weak off-diagonals in column order, or a_ii where that sum is zero or of
 * the other sign; *weak += the weak off-diagonals (every lane reaches the warp's count after its
 * rows). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_strength(long long n, const int *__restrict__ rp, const int *__restrict__ ci, const double *__restrict__ val,
                  const double *__restrict__ d, double th2, unsigned char *__restrict__ mask, double *__restrict__ dF,
                  spx_u64 *weak) {
  spx_u64 w = 0;
  SPX_FOR_EACH(i, n) {
    const double di = d[i];
    double lump = 0;
    for (int k = rp[i]; k < rp[i + 1]; k++) {
      const int j = ci[k];
      const double a = val[k];
      int s = 0;
      if (j != i) {
        const double p = __dmul_rn(di, d[j]);
        s = a != 0 && __dmul_rn(a, a) >= __dmul_rn(th2, p < 0 ? -p : p);
        if (!s) {
          lump = __dadd_rn(lump, a);
          w++;
        }
      }
      mask[k] = (unsigned char)s;
    }
    if (!(__dmul_rn(__dadd_rn(di, lump), di) > 0)) lump = 0;
    dF[i] = __dadd_rn(di, lump);
  }
  spx_amgs_count(weak, w);
}

/* sub[k] = mask[k] for the entries between rows still free (agg -1): the graph of the MIS(2)
 * rule's second pass. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_sub(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
             const unsigned char *__restrict__ mask, const int *__restrict__ agg, unsigned char *__restrict__ sub) {
  SPX_FOR_EACH(i, n) {
    const int fi = agg[i] == -1;
    for (int k = rp[i]; k < rp[i + 1]; k++) sub[k] = (unsigned char)(fi && mask[k] && agg[ci[k]] == -1);
  }
}

/* A pass's start: a free row (agg -1) with at least minc free neighbours in sub is undecided, every
 * other row out. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_mis_init(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
                  const unsigned char *__restrict__ sub, const int *__restrict__ agg, int minc,
                  spx_u64 *__restrict__ tup) {
  SPX_FOR_EACH(i, n) {
    int c = 0;
    if (agg[i] == -1)
      for (int k = rp[i]; k < rp[i + 1]; k++) c += sub[k] && agg[ci[k]] == -1;
    tup[i] = spx_amgs_tuple(i, agg[i] == -1 && c >= minc ? SPX_UND : SPX_OUT);
  }
}

/* out[i] = the largest tuple of row i and its neighbours in sub. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_mis_max(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
                 const unsigned char *__restrict__ sub, const spx_u64 *__restrict__ in, spx_u64 *__restrict__ out) {
  SPX_FOR_EACH(i, n) {
    spx_u64 t = in[i];
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (sub[k]) {
        const spx_u64 u = in[ci[k]];
        if (u > t) t = u;
      }
    out[i] = t;
  }
}

/* One round's decision: an undecided row whose tuple is the largest within two steps (t1 one step,
 * read again over the neighbours) joins the set; one with a member within two steps leaves.
 * *und += the rows still undecided. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_mis_decide(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
                    const unsigned char *__restrict__ sub, const spx_u64 *__restrict__ t1, spx_u64 *__restrict__ tup,
                    spx_u64 *und) {
  spx_u64 left = 0;
  SPX_FOR_EACH(i, n) {
    if (SPX_STATE(tup[i]) != SPX_UND) continue;
    spx_u64 t = t1[i];
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (sub[k]) {
        const spx_u64 u = t1[ci[k]];
        if (u > t) t = u;
      }
    if (t == tup[i]) tup[i] = spx_amgs_tuple(i, SPX_IN);
    else if (SPX_STATE(t) == SPX_IN) tup[i] = spx_amgs_tuple(i, SPX_OUT);
    else left++;
  }
  spx_amgs_count(und, left);
}

/* flag[i] = 1 for the set's rows (a pass's roots). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_root_flag(long long n, const spx_u64 *__restrict__ tup, int *__restrict__ flag) {
  SPX_FOR_EACH(i, n) flag[i] = SPX_STATE(tup[i]) == SPX_IN;
}

/* A pass's aggregates: a root leads aggregate next0 + off[i] (roots numbered in row order: off is
 * the scan of root_flag); a free row with a root among its neighbours in sub joins the one with
 * the largest tuple (symmetric strength: the only one). Rows placed before keep theirs. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_mis_join(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
                  const unsigned char *__restrict__ sub, const spx_u64 *__restrict__ tup, const int *__restrict__ off,
                  int next0, int *__restrict__ agg) {
  SPX_FOR_EACH(i, n) {
    spx_u64 best = 0;
    if (SPX_STATE(tup[i]) == SPX_IN) {
      agg[i] = next0 + off[i];
      continue;
    }
    if (agg[i] != -1) continue;
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (sub[k]) {
        const spx_u64 u = tup[ci[k]];
        if (SPX_STATE(u) == SPX_IN && u > best) best = u;
      }
    if (best) agg[i] = next0 + off[best & 0x7FFFFFFFull];
  }
}

/* Pass 2: a row left joins the smallest aggregate (size: rows after the passes above; the first
 * in column order of the smallest) among its strong neighbours that a pass placed, written as
 * -2 - aggregate so that no row attaches to it (a neighbour read while it changes is -1 or below
 * -1 either way: not placed). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_agg_attach(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
                    const unsigned char *__restrict__ mask, const int *__restrict__ size, int *agg) {
  SPX_FOR_EACH(i, n) {
    int best = -1;
    if (agg[i] != -1) continue;
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (mask[k]) {
        const int a = agg[ci[k]];
        if (a >= 0 && (best < 0 || size[a] < size[best])) best = a;
      }
    if (best >= 0) agg[i] = -2 - best;
  }
}

/* flag[i] = 1 for the rows no pass placed. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_single_flag(long long n, const int *__restrict__ agg, int *__restrict__ flag) {
  SPX_FOR_EACH(i, n) flag[i] = agg[i] == -1;
}

/* Pass 3: the attached rows' aggregates decoded; the rows left are aggregates of their own,
 * numbered after the passes' in row order (off: the scan of single_flag). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_agg_final(long long n, const int *__restrict__ off, int next0, int *__restrict__ agg) {
  SPX_FOR_EACH(i, n) {
    const int a = agg[i];
    agg[i] = a <= -2 ? -2 - a : a == -1 ? next0 + off[i] : a;
  }
}

/* size[agg[i]] += 1 for the placed rows (size zeroed first; integer adds: any order). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_agg_size(long long n, const int *__restrict__ agg, int *__restrict__ size) {
  SPX_FOR_EACH(i, n)
    if (agg[i] >= 0) atomicAdd(&size[agg[i]], 1);
}

/* scale[c] = 1 / sqrt(size[c]) by the host's spx__sqrt (a power of two, then Newton), each step
 * rounded alone: the tentative P's column scales, bit for bit the twin's. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_agg_scale(long long nagg, const int *__restrict__ size, double *__restrict__ scale) {
  SPX_FOR_EACH(c, nagg) {
    const double x = (double)size[c];
    double r = 1;
    while (__dmul_rn(r, r) < x) r = __dmul_rn(r, 2.0);
    while (__dmul_rn(r, r) > __dmul_rn(4.0, x)) r = __ddiv_rn(r, 2.0);
    for (int it = 0; it < 60; it++) {
      const double q = __dmul_rn(0.5, __dadd_rn(r, __ddiv_rn(x, r)));
      if (q == r) break;
      r = q;
    }
    scale[c] = __ddiv_rn(1.0, r);
  }
}

/* The entries of row i that A_F keeps: its diagonal and its strong off-diagonals. */
#define SPX_KEPT(k, i) (ci[k] == (i) || mask[k])

/* The smallest aggregate above last among row i's kept entries (0x7FFFFFFF: none): walking a row's
 * aggregates in increasing order without sorting it. */
__device__ __forceinline__ int spx_amgs_next_agg(const int *__restrict__ rp, const int *__restrict__ ci,
                                                 const unsigned char *__restrict__ mask, const int *__restrict__ agg,
                                                 long long i, int last) {
  int next = 0x7FFFFFFF;
  for (int k = rp[i]; k < rp[i + 1]; k++)
    if (SPX_KEPT(k, i)) {
      const int a = agg[ci[k]];
      if (a > last && a < next) next = a;
    }
  return next;
}

/* cnt[i] = P's entries in row i: the distinct aggregates of the entries A_F keeps (plain, P = T:
 * 1). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_p_count(long long n, const int *__restrict__ rp, const int *__restrict__ ci,
                 const unsigned char *__restrict__ mask, const int *__restrict__ agg, int plain,
                 int *__restrict__ cnt) {
  SPX_FOR_EACH(i, n) {
    int c = 0, last = -1;
    if (plain) {
      cnt[i] = 1;
      continue;
    }
    for (int next; (next = spx_amgs_next_agg(rp, ci, mask, agg, i, last)) != 0x7FFFFFFF; last = next) c++;
    cnt[i] = c;
  }
}

/* Row i of P = F T, F = I - s D_F^-1 A_F (A_F's diagonal dF), T[j][agg[j]] = scale[agg[j]]: its
 * columns (aggregates) in increasing order from prp[i], each value the sum, in column order of A's
 * row, of (delta_ij - (s / dF[i]) a_F,ij) scale[agg[j]] (plain: row i of T). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_p_fill(long long n, const int *__restrict__ rp, const int *__restrict__ ci, const double *__restrict__ val,
                const unsigned char *__restrict__ mask, const double *__restrict__ dF, const int *__restrict__ agg,
                const double *__restrict__ scale, double s, int plain, const int *__restrict__ prp,
                int *__restrict__ pci, double *__restrict__ pval) {
  SPX_FOR_EACH(i, n) {
    int q = prp[i], last = -1;
    double sd;
    if (plain) {
      pci[q] = agg[i];
      pval[q] = scale[agg[i]];
      continue;
    }
    sd = __ddiv_rn(s, dF[i]);
    for (;;) {
      const int next = spx_amgs_next_agg(rp, ci, mask, agg, i, last);
      int first = 1;
      double v = 0;
      if (next == 0x7FFFFFFF) break;
      for (int k = rp[i]; k < rp[i + 1]; k++)
        if (SPX_KEPT(k, i) && agg[ci[k]] == next) {
          const int diag = ci[k] == i;
          const double f = __dsub_rn(diag ? 1.0 : 0.0, __dmul_rn(sd, diag ? dF[i] : val[k]));
          const double t = __dmul_rn(f, scale[next]);
          v = first ? t : __dadd_rn(v, t);
          first = 0;
        }
      pci[q] = next;
      pval[q++] = v;
      last = next;
    }
  }
}

/* The power iteration's start: x[i] in [-1, 1), a hash of i (the host twin's). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_rho_start(long long n, double *__restrict__ x) {
  SPX_FOR_EACH(i, n) {
    spx_u64 h = (spx_u64)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    x[i] = (double)(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  }
}

/* The block's three values in sh reduced into sh[.][0] in a fixed tree: rows 0 and 1 added, row 2
 * the maximum. Every thread of the block calls it, after writing its own column of sh. */
__device__ __forceinline__ void spx_amgs_tree3(double (*sh)[SPX_BLOCK]) {
  __syncthreads();
  for (int h = SPX_BLOCK / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) {
      sh[0][threadIdx.x] += sh[0][threadIdx.x + h];
      sh[1][threadIdx.x] += sh[1][threadIdx.x + h];
      sh[2][threadIdx.x] = fmax(sh[2][threadIdx.x], sh[2][threadIdx.x + h]);
    }
    __syncthreads();
  }
}

/* A block's shares of three sums (s0, s1 added, s2 the maximum) into part[3 * block ..]. */
__device__ __forceinline__ void spx_amgs_block3(double s0, double s1, double s2, double *part) {
  __shared__ double sh[3][SPX_BLOCK];
  sh[0][threadIdx.x] = s0;
  sh[1][threadIdx.x] = s1;
  sh[2][threadIdx.x] = s2;
  spx_amgs_tree3(sh);
  if (threadIdx.x == 0) {
    part[3 * blockIdx.x] = sh[0][0];
    part[3 * blockIdx.x + 1] = sh[1][0];
    part[3 * blockIdx.x + 2] = sh[2][0];
  }
}

/* The weight W x reads at entry k of row i: dd[i] on the diagonal (A_F's lumped one, or a_ii), a_ik
 * elsewhere; a weak entry of the filtered operator (mask given) is skipped. */
#define SPX_W_SKIP(k, i) (mask && ci[k] != (i) && !mask[k])
#define SPX_W(k, i) (ci[k] == (i) ? dd[i] : val[k])

/* One power step while state[2] is 0: y = W x, and the block's x.y, x.dd.x and max |y_i / dd_i|. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_rho_step(long long n, const int *__restrict__ rp, const int *__restrict__ ci, const double *__restrict__ val,
                  const unsigned char *__restrict__ mask, const double *__restrict__ dd, const double *__restrict__ x,
                  double *__restrict__ y, const double *__restrict__ state, double *__restrict__ part) {
  double p0 = 0, p1 = 0, mx = 0;
  if (state[2] != 0) return; /* stopped: every block leaves, none waits at a barrier */
  SPX_FOR_EACH(i, n) {
    double t = 0;
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (!SPX_W_SKIP(k, i)) t += SPX_W(k, i) * x[ci[k]];
    y[i] = t;
    p0 += x[i] * t;
    p1 += x[i] * dd[i] * x[i];
    t /= dd[i];
    mx = fmax(mx, fabs(t));
  }
  spx_amgs_block3(p0, p1, mx, part);
}

/* One block: the partials of nb blocks summed in a fixed order into state: [0] lam = x.y / x.dd.x,
 * [1] 1 / max |y_i / dd_i| (the next x's scale), [2] 1 once that max is not a positive finite
 * number (the iteration stops; lam stays the last one computed). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_rho_sum(int nb, const double *__restrict__ part, double *__restrict__ state) {
  __shared__ double sh[3][SPX_BLOCK];
  double s0 = 0, s1 = 0, s2 = 0;
  if (state[2] != 0) return;
  for (int b = threadIdx.x; b < nb; b += SPX_BLOCK) {
    s0 += part[3 * b];
    s1 += part[3 * b + 1];
    s2 = fmax(s2, part[3 * b + 2]);
  }
  sh[0][threadIdx.x] = s0;
  sh[1][threadIdx.x] = s1;
  sh[2][threadIdx.x] = s2;
  spx_amgs_tree3(sh);
  if (threadIdx.x == 0) {
    const double m = sh[2][0];
    state[0] = sh[1][0] != 0 ? sh[0][0] / sh[1][0] : 0;
    if (!(m > 0) || m - m != 0) state[2] = 1;
    else state[1] = 1.0 / m;
  }
}

/* x = y / dd * state[1] while the iteration runs. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_rho_scale(long long n, const double *__restrict__ y, const double *__restrict__ dd,
                   const double *__restrict__ state, double *__restrict__ x) {
  const double sc = state[1];
  if (state[2] != 0) return;
  SPX_FOR_EACH(i, n) x[i] = y[i] / dd[i] * sc;
}

/* The Gershgorin bound's block maxima: max_i sum_k |W_ik| / |dd_i| into part[block]. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_gersh(long long n, const int *__restrict__ rp, const int *__restrict__ ci, const double *__restrict__ val,
               const unsigned char *__restrict__ mask, const double *__restrict__ dd, double *__restrict__ part) {
  __shared__ double sh[SPX_BLOCK];
  double g = 0;
  SPX_FOR_EACH(i, n) {
    double s = 0, di = dd[i] < 0 ? -dd[i] : dd[i];
    for (int k = rp[i]; k < rp[i + 1]; k++)
      if (!SPX_W_SKIP(k, i)) s += fabs(SPX_W(k, i));
    if (s / di > g) g = s / di;
  }
  sh[threadIdx.x] = g;
  __syncthreads();
  for (int h = SPX_BLOCK / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + h]);
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

/* One block: state[3] = the largest of nb block maxima (exact in any order). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_gersh_max(int nb, const double *__restrict__ part, double *__restrict__ state) {
  __shared__ double sh[SPX_BLOCK];
  double g = 0;
  for (int b = threadIdx.x; b < nb; b += SPX_BLOCK) g = fmax(g, part[b]);
  sh[threadIdx.x] = g;
  __syncthreads();
  for (int h = SPX_BLOCK / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + h]);
    __syncthreads();
  }
  if (threadIdx.x == 0) state[3] = sh[0];
}

/* An exclusive scan of a block's SPX_BLOCK values in shared memory (Hillis-Steele, fixed shape);
 * returns this thread's exclusive prefix, *total the block's sum. */
__device__ __forceinline__ long long spx_amgs_block_scan(long long v, long long *total) {
  __shared__ long long sh[SPX_BLOCK];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int o = 1; o < SPX_BLOCK; o <<= 1) {
    const long long add = (int)threadIdx.x >= o ? sh[threadIdx.x - o] : 0;
    __syncthreads();
    sh[threadIdx.x] += add;
    __syncthreads();
  }
  *total = sh[SPX_BLOCK - 1];
  v = sh[threadIdx.x] - v;
  __syncthreads(); /* sh is read above before a next call writes it */
  return v;
}

/* ---- R = P^T: row lengths, an unordered fill, each row sorted ------------------------------------ */
/* cnt[j] = the entries of column j (cnt zeroed first; integer adds: any order). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_t_count(long long n, const int *__restrict__ rp, const int *__restrict__ ci, int *__restrict__ cnt) {
  SPX_FOR_EACH(i, n)
    for (int k = rp[i]; k < rp[i + 1]; k++) atomicAdd(&cnt[ci[k]], 1);
}

/* Entry (i, j) of P into row j of R at the next free slot of that row (cur zeroed first): the order
 * within a row depends on timing, so spx_amgs_t_sort orders it after. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_t_fill(long long n, const int *__restrict__ rp, const int *__restrict__ ci, const double *__restrict__ val,
                const int *__restrict__ rrp, int *__restrict__ cur, int *__restrict__ rci, double *__restrict__ rval) {
  SPX_FOR_EACH(i, n)
    for (int k = rp[i]; k < rp[i + 1]; k++) {
      const int j = ci[k], at = rrp[j] + atomicAdd(&cur[j], 1);
      rci[at] = (int)i;
      rval[at] = val[k];
    }
}

/* Row j of R by increasing column (the columns of a row are distinct: one order, whatever the fill
 * left; insertion sort, a thread a row: R's rows are an aggregate's neighbourhood, short). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_t_sort(long long m, const int *__restrict__ rrp, int *__restrict__ rci, double *__restrict__ rval) {
  SPX_FOR_EACH(j, m)
    for (int k = rrp[j] + 1; k < rrp[j + 1]; k++) {
      const int c = rci[k];
      const double v = rval[k];
      int q = k - 1;
      for (; q >= rrp[j] && rci[q] > c; q--) {
        rci[q + 1] = rci[q];
        rval[q + 1] = rval[q];
      }
      rci[q + 1] = c;
      rval[q + 1] = v;
    }
}

/* tiles[b] = the sum of tile b of in[0 .. n). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_scan_tiles(long long n, const int *__restrict__ in, long long *__restrict__ tiles) {
  const long long lo = (long long)blockIdx.x * SPX_TILE + (long long)threadIdx.x * SPX_ITEMS;
  long long s = 0, total;
  for (int e = 0; e < SPX_ITEMS; e++)
    if (lo + e < n) s += in[lo + e];
  (void)spx_amgs_block_scan(s, &total);
  if (threadIdx.x == 0) tiles[blockIdx.x] = total;
}

/* One block: tiles[0 .. nt) replaced by their exclusive scan, tiles[nt] = the total. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_scan_top(long long nt, long long *tiles) {
  long long carry = 0;
  for (long long base = 0; base < nt; base += SPX_BLOCK) {
    const long long t = base + threadIdx.x;
    long long v = t < nt ? tiles[t] : 0, total;
    const long long ex = spx_amgs_block_scan(v, &total);
    if (t < nt) tiles[t] = carry + ex;
    carry += total;
  }
  if (threadIdx.x == 0) tiles[nt] = carry;
}

/* out[i] = tiles[tile of i] + the counts before i in its tile (32-bit: the caller checked the
 * total), and out[n] = the total. Launched with n / SPX_TILE + 1 blocks (as scan_tiles), so that
 * some tile holds position n. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_amgs_scan_apply(long long n, const int *__restrict__ in, const long long *__restrict__ tiles,
                    int *__restrict__ out) {
  const long long lo = (long long)blockIdx.x * SPX_TILE + (long long)threadIdx.x * SPX_ITEMS;
  long long s = 0, total, ex;
  for (int e = 0; e < SPX_ITEMS; e++)
    if (lo + e < n) s += in[lo + e];
  ex = tiles[blockIdx.x] + spx_amgs_block_scan(s, &total);
  for (int e = 0; e < SPX_ITEMS; e++)
    if (lo + e < n) {
      const int c = in[lo + e];
      out[lo + e] = (int)ex;
      ex += c;
    }
  if (lo <= n && n < lo + SPX_ITEMS) out[n] = (int)ex; /* the thread holding the end */
}
