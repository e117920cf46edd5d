/* SPDX-License-Identifier: BSD-3-Clause */
/* krylov.cu: the vector kernels of the Krylov solvers (spx/solve.h): fused updates with their dot
 * products, and one-block kernels that turn the dot products into the method's scalars on the
 * device (alpha, beta, omega, rho, the residual, the stop flag), so the host never waits for a
 * scalar between kernels.
 *
 * MAPPING  vector kernels: one thread per element, grid-stride loop (thread t of a grid of G blocks
 *          handles t, t + G*SPX_BLOCK, ...), launched with exactly SPX_BLOCK threads per block and
 *          a grid fixed for the solve. A kernel with dot products leaves one double per block and
 *          term in part[term * gridDim.x + block] (a tree sum in shared memory, fixed order).
 *          Scalar kernels: one block of SPX_BLOCK threads sums the G partials of each term in a
 *          fixed order (thread t: t, t + SPX_BLOCK, ...; then the same tree), and thread 0 updates
 *          the state. Same device, same grid: the same bits every run.
 * BYTES    per element, s = sizeof(SPX_VALUE_T) (dinv counted where it is read):
 *            spx_kry_dot2       2s  (a.b, b.c with c == b)
 *            spx_kry_cg_r       3s  (read q, r; write r)          +s with Jacobi
 *            spx_kry_cg_xp      5s  (read x, p, r; write x, p)    +s with Jacobi (or z)
 *            spx_kry_bicg_s     3s  (read v, r; write r = s)
 *            spx_kry_bicg_xr    7s  (read x, p, s, t, r0; write x, r)
 *            spx_kry_bicg_p     4s  (read r, p, v; write p)
 *          CG: dot2 + cg_r + cg_xp = 10s per element and iteration; BiCGSTAB: 2 dot2 + s + xr + p
 *          = 18s; plus the SpMV(s).
 * STATE    double st[SPX_ST_COUNT] on the device, indices below (ORDER: the same as the SPX__ST_*
 *          of include/spx/internal/solve_impl.h). Once st[DONE] is set every kernel returns at once,
 *          except the x update of the stopping iteration (st[FINISH]), so the host may queue
 *          iterations ahead of the stop and read the state only now and then.
 * FLOATS   vectors of float are updated in double (scalars are double) and rounded once; every
 *          dot product accumulates in double.
 *
 * CONSTANTS (pass as -D options; each has a default so that nvcc compiles the file alone)
 *   SPX_VALUE_T   element type: double or float                    (default double)
 *   SPX_BLOCK     threads per block, a power of two, exactly the launch's (default 256)
 *
 * Compile alone: nvcc -c -DSPX_VALUE_T=float templates/krylov.cu */

#ifndef SPX_VALUE_T
#define SPX_VALUE_T double
#endif
#ifndef SPX_BLOCK
#define SPX_BLOCK 256
#endif

typedef SPX_VALUE_T spx_value_t;

/* The state. */
#define SPX_ST_DONE 0    /* 1 once the solve stopped (converged, broke down) */
#define SPX_ST_STATUS 1  /* why: SPX_KS_* */
#define SPX_ST_IT 2      /* completed iterations */
#define SPX_ST_FINISH 3  /* 1: the stopping iteration's x update is still due */
#define SPX_ST_TOL2 4    /* max(rtol^2 ||b||^2, atol^2) */
#define SPX_ST_BB 5      /* ||b||^2 */
#define SPX_ST_RR 6      /* ||r||^2 of the recurrence (BiCGSTAB: ||s||^2 after a half-step stop) */
#define SPX_ST_RZ 7      /* CG: r.z; BiCGSTAB: rho = r0^.r */
#define SPX_ST_ALPHA 8
#define SPX_ST_BETA 9
#define SPX_ST_OMEGA 10
#define SPX_ST_R0N2 11   /* BiCGSTAB: ||r0^||^2 */
#define SPX_ST_SS 12     /* BiCGSTAB: ||s||^2 */
#define SPX_ST_BAD 13    /* the value that broke down */
#define SPX_ST_OUT 14    /* spx_kry_sum: the sums (3 slots) */
#define SPX_ST_COUNT 17

/* Why the solve stopped (st[SPX_ST_STATUS]). */
#define SPX_KS_RUNNING 0
#define SPX_KS_CONVERGED 1
#define SPX_KS_NOT_SPD 2     /* CG: p.Ap <= 0 */
#define SPX_KS_PREC_NOT_SPD 3 /* CG: r.z <= 0 */
#define SPX_KS_NONFINITE 4   /* the residual is NaN or Inf */
#define SPX_KS_RHO 5         /* BiCGSTAB: r0^.r ~ 0 */
#define SPX_KS_R0V 6         /* BiCGSTAB: r0^.v ~ 0 */
#define SPX_KS_OMEGA 7       /* BiCGSTAB: t.s ~ 0 or t = 0 */

/* |x| <= SPX_KRY_EPS * norms is a BiCGSTAB breakdown. */
#define SPX_KRY_EPS 1e-14

#define SPX_FOR_EACH(i, n)                                                              \
  for (long long i = (long long)blockIdx.x * SPX_BLOCK + threadIdx.x; i < (n);           \
       i += (long long)gridDim.x * SPX_BLOCK)

/* 1 for a finite x, without the math library (x - x is NaN for Inf and NaN). */
static __device__ __forceinline__ int spx_kry_finite(double x) { return x - x == 0.0; }

/* Per-block tree sums of up to three terms into part[k * gridDim.x + blockIdx.x]. Every thread of
 * the block must call it (it synchronizes). */
static __device__ __forceinline__ void spx_kry_block(double v0, double v1, double v2, int nt,
                                                     double *__restrict__ part) {
  __shared__ double sh[3][SPX_BLOCK];
  const int t = threadIdx.x;
  sh[0][t] = v0; sh[1][t] = v1; sh[2][t] = v2;
  __syncthreads();
#pragma unroll
  for (int s = SPX_BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) {
      sh[0][t] += sh[0][t + s];
      sh[1][t] += sh[1][t + s];
      sh[2][t] += sh[2][t + s];
    }
    __syncthreads();
  }
  if (t == 0)
    for (int k = 0; k < nt; k++) part[(long long)k * gridDim.x + blockIdx.x] = sh[k][0];
}

/* In the one block of a scalar kernel: out[k] = the sum of the g partials of term k, k < nt, in a
 * fixed order; every thread receives the sums. */
static __device__ __forceinline__ void spx_kry_total(const double *__restrict__ part, int g, int nt,
                                                     double out[3]) {
  __shared__ double sh[3][SPX_BLOCK];
  const int t = threadIdx.x;
  double a[3] = {0, 0, 0};
  for (int i = t; i < g; i += SPX_BLOCK)
    for (int k = 0; k < nt; k++) a[k] += part[(long long)k * g + i];
  sh[0][t] = a[0]; sh[1][t] = a[1]; sh[2][t] = a[2];
  __syncthreads();
#pragma unroll
  for (int s = SPX_BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) {
      sh[0][t] += sh[0][t + s];
      sh[1][t] += sh[1][t + s];
      sh[2][t] += sh[2][t + s];
    }
    __syncthreads();
  }
  out[0] = sh[0][0]; out[1] = sh[1][0]; out[2] = sh[2][0];
}

static __device__ __forceinline__ void spx_kry_hist(double *st, double *hist, long long hcap, double rr) {
  long long it = (long long)st[SPX_ST_IT];
  st[SPX_ST_RR] = rr;
  if (hist && it < hcap) hist[it] = sqrt(rr);
}

/* Stops with a reason; the bad value is kept for the message. */
static __device__ __forceinline__ void spx_kry_stop(double *st, int why, double bad, int finish) {
  st[SPX_ST_DONE] = 1;
  st[SPX_ST_STATUS] = why;
  st[SPX_ST_BAD] = bad;
  st[SPX_ST_FINISH] = finish;
}

/* ---- Shared ------------------------------------------------------------------------------------ */

/* Terms a.b and, with c, b.c. Nothing once stopped. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_dot2(long long n, const spx_value_t *__restrict__ a, const spx_value_t *__restrict__ b,
             const spx_value_t *__restrict__ c, double *__restrict__ part, const double *__restrict__ st) {
  double s0 = 0, s1 = 0;
  if (st[SPX_ST_DONE] != 0) return;
  if (c) {
    SPX_FOR_EACH(i, n) {
      double bi = (double)b[i];
      s0 += (double)a[i] * bi;
      s1 += bi * (double)c[i];
    }
  } else {
    SPX_FOR_EACH(i, n) s0 += (double)a[i] * (double)b[i];
  }
  spx_kry_block(s0, s1, 0, 2, part);
}

/* y = x (any state). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_copy(long long n, const spx_value_t *__restrict__ x, spx_value_t *__restrict__ y) {
  SPX_FOR_EACH(i, n) y[i] = x[i];
}

/* Jacobi: dinv = 1 / d in the vector type (d and dinv may be one array, for double); *bad = the
 * least i with d[i] zero or not finite (left as it is), for the host's message. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_dinv(long long n, const double *d, spx_value_t *dinv, unsigned long long *bad) {
  SPX_FOR_EACH(i, n) {
    double v = d[i];
    if (v == 0 || !isfinite(v)) atomicMin(bad, (unsigned long long)i);
    else dinv[i] = (spx_value_t)(1.0 / v);
  }
}

/* The true residual: term (b - q).(b - q) (any state). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_resid(long long n, const spx_value_t *__restrict__ b, const spx_value_t *__restrict__ q,
              double *__restrict__ part) {
  double s0 = 0;
  SPX_FOR_EACH(i, n) {
    double d = (double)b[i] - (double)q[i];
    s0 += d * d;
  }
  spx_kry_block(s0, 0, 0, 1, part);
}

/* y[rows[i]] += t[i] for i < m, rows distinct: spx/dist.h's ghost block, whose plan has only the
 * rows that read other ranks' entries, adds its product into those rows of y. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_scatter_add(long long m, const int *__restrict__ rows, const spx_value_t *__restrict__ t,
                    spx_value_t *__restrict__ y) {
  SPX_FOR_EACH(i, m) y[rows[i]] += t[i];
}

/* st[SPX_ST_OUT + k] = the sums of nt terms (any state). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_sum(int g, int nt, const double *__restrict__ part, double *__restrict__ st) {
  double s[3];
  spx_kry_total(part, g, nt, s);
  if (threadIdx.x == 0)
    for (int k = 0; k < nt; k++) st[SPX_ST_OUT + k] = s[k];
}

/* ---- CG (with Jacobi: dinv = 1 / diag(A); with a preconditioner callback: z) ------------------- */

/* r = b - q; p = z (z = dinv r, or r) unless p is NULL; terms r.r, b.b, r.z. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_init(long long n, const spx_value_t *__restrict__ b, const spx_value_t *__restrict__ q,
                spx_value_t *__restrict__ r, const spx_value_t *__restrict__ dinv, spx_value_t *__restrict__ p,
                double *__restrict__ part) {
  double s0 = 0, s1 = 0, s2 = 0;
  SPX_FOR_EACH(i, n) {
    double bi = (double)b[i];
    spx_value_t ri = (spx_value_t)(bi - (double)q[i]);
    double rd = (double)ri, zd = dinv ? (double)dinv[i] * rd : rd;
    r[i] = ri;
    if (p) p[i] = (spx_value_t)zd;
    s0 += rd * rd;
    s1 += bi * bi;
    s2 += rd * zd;
  }
  spx_kry_block(s0, s1, s2, 3, part);
}

/* Iteration 0: ||b||, the tolerance, ||r_0||, and r.z when have_rz. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_start(int g, const double *__restrict__ part, double *__restrict__ st, double *__restrict__ hist,
                 long long hcap, double rtol2, double atol2, int have_rz) {
  double s[3];
  spx_kry_total(part, g, 3, s);
  if (threadIdx.x != 0) return;
  for (int k = 0; k < SPX_ST_COUNT; k++) st[k] = 0;
  st[SPX_ST_BB] = s[1];
  st[SPX_ST_TOL2] = rtol2 * s[1] > atol2 ? rtol2 * s[1] : atol2;
  spx_kry_hist(st, hist, hcap, s[0]);
  if (!spx_kry_finite(s[0]) || !spx_kry_finite(s[1])) { spx_kry_stop(st, SPX_KS_NONFINITE, s[0], 0); return; }
  if (s[0] <= st[SPX_ST_TOL2]) { spx_kry_stop(st, SPX_KS_CONVERGED, 0, 0); return; }
  if (have_rz) {
    if (!(s[2] > 0) || !spx_kry_finite(s[2])) { spx_kry_stop(st, SPX_KS_PREC_NOT_SPD, s[2], 0); return; }
    st[SPX_ST_RZ] = s[2];
  }
}

/* After the SpMV q = A p and spx_kry_dot2(p, q): alpha = r.z / p.q; p.q <= 0 is a breakdown.
 * Once stopped it clears FINISH (the stopping iteration's x update ran before it). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_alpha(int g, const double *__restrict__ part, double *__restrict__ st) {
  double s[3];
  if (st[SPX_ST_DONE] != 0) {
    if (threadIdx.x == 0) st[SPX_ST_FINISH] = 0;
    return;
  }
  spx_kry_total(part, g, 1, s);
  if (threadIdx.x != 0) return;
  if (!(s[0] > 0) || !spx_kry_finite(s[0])) { spx_kry_stop(st, SPX_KS_NOT_SPD, s[0], 0); return; }
  st[SPX_ST_ALPHA] = st[SPX_ST_RZ] / s[0];
}

/* r -= alpha q; terms r.r and r.dinv.r (r.r without dinv). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_r(long long n, const spx_value_t *__restrict__ q, spx_value_t *__restrict__ r,
             const spx_value_t *__restrict__ dinv, double *__restrict__ part, const double *__restrict__ st) {
  double s0 = 0, s1 = 0, a;
  if (st[SPX_ST_DONE] != 0) return;
  a = st[SPX_ST_ALPHA];
  if (dinv) {
    SPX_FOR_EACH(i, n) {
      double rd = (double)(spx_value_t)((double)r[i] - a * (double)q[i]);
      r[i] = (spx_value_t)rd;
      s0 += rd * rd;
      s1 += rd * (double)dinv[i] * rd;
    }
  } else {
    SPX_FOR_EACH(i, n) {
      double rd = (double)(spx_value_t)((double)r[i] - a * (double)q[i]);
      r[i] = (spx_value_t)rd;
      s0 += rd * rd;
    }
    s1 = s0;
  }
  spx_kry_block(s0, s1, 0, 2, part);
}

/* After spx_kry_cg_r: counts the iteration, records ||r||, stops when it passes (the x update is
 * then still due: FINISH); with have_rz, beta = r.z / r.z_old (r.z <= 0: breakdown). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_beta(int g, const double *__restrict__ part, double *__restrict__ st, double *__restrict__ hist,
                long long hcap, int have_rz) {
  double s[3];
  if (st[SPX_ST_DONE] != 0) return;
  spx_kry_total(part, g, 2, s);
  if (threadIdx.x != 0) return;
  st[SPX_ST_IT] += 1;
  spx_kry_hist(st, hist, hcap, s[0]);
  if (s[0] <= st[SPX_ST_TOL2]) { spx_kry_stop(st, SPX_KS_CONVERGED, 0, 1); return; }
  if (!spx_kry_finite(s[0])) { spx_kry_stop(st, SPX_KS_NONFINITE, s[0], 0); return; }
  if (have_rz) {
    if (!(s[1] > 0) || !spx_kry_finite(s[1])) { spx_kry_stop(st, SPX_KS_PREC_NOT_SPD, s[1], 1); return; }
    st[SPX_ST_BETA] = s[1] / st[SPX_ST_RZ];
    st[SPX_ST_RZ] = s[1];
  }
}

/* With a preconditioner callback, after spx_kry_dot2(r, z): r.z of the new z. first: iteration 0
 * (r.z only), else beta = r.z / r.z_old. r.z <= 0 is a breakdown. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_rz(int g, const double *__restrict__ part, double *__restrict__ st, int first) {
  double s[3];
  if (st[SPX_ST_DONE] != 0) return;
  spx_kry_total(part, g, 1, s);
  if (threadIdx.x != 0) return;
  if (!(s[0] > 0) || !spx_kry_finite(s[0])) { spx_kry_stop(st, SPX_KS_PREC_NOT_SPD, s[0], first ? 0 : 1); return; }
  if (!first) st[SPX_ST_BETA] = s[0] / st[SPX_ST_RZ];
  st[SPX_ST_RZ] = s[0];
}

/* x += alpha p, then (still running) p = z + beta p with z = the callback's z, dinv r, or r. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_cg_xp(long long n, spx_value_t *__restrict__ x, spx_value_t *__restrict__ p,
              const spx_value_t *__restrict__ r, const spx_value_t *__restrict__ dinv,
              const spx_value_t *__restrict__ z, const double *__restrict__ st) {
  const int done = st[SPX_ST_DONE] != 0;
  double a, b;
  if (done && st[SPX_ST_FINISH] == 0) return;
  a = st[SPX_ST_ALPHA];
  b = st[SPX_ST_BETA];
  if (done) {
    SPX_FOR_EACH(i, n) x[i] = (spx_value_t)((double)x[i] + a * (double)p[i]);
  } else if (z) {
    SPX_FOR_EACH(i, n) {
      double pi = (double)p[i];
      x[i] = (spx_value_t)((double)x[i] + a * pi);
      p[i] = (spx_value_t)((double)z[i] + b * pi);
    }
  } else if (dinv) {
    SPX_FOR_EACH(i, n) {
      double pi = (double)p[i];
      x[i] = (spx_value_t)((double)x[i] + a * pi);
      p[i] = (spx_value_t)((double)dinv[i] * (double)r[i] + b * pi);
    }
  } else {
    SPX_FOR_EACH(i, n) {
      double pi = (double)p[i];
      x[i] = (spx_value_t)((double)x[i] + a * pi);
      p[i] = (spx_value_t)((double)r[i] + b * pi);
    }
  }
}

/* ---- BiCGSTAB (right preconditioning: phat = M p, shat = M s; without one they are p and s) --- */

/* r = b - q; r0 = r; p = r; terms r.r, b.b. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_init(long long n, const spx_value_t *__restrict__ b, const spx_value_t *__restrict__ q,
                  spx_value_t *__restrict__ r, spx_value_t *__restrict__ r0, spx_value_t *__restrict__ p,
                  double *__restrict__ part) {
  double s0 = 0, s1 = 0;
  SPX_FOR_EACH(i, n) {
    double bi = (double)b[i];
    spx_value_t ri = (spx_value_t)(bi - (double)q[i]);
    double rd = (double)ri;
    r[i] = ri; r0[i] = ri; p[i] = ri;
    s0 += rd * rd;
    s1 += bi * bi;
  }
  spx_kry_block(s0, s1, 0, 2, part);
}

extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_start(int g, const double *__restrict__ part, double *__restrict__ st, double *__restrict__ hist,
                   long long hcap, double rtol2, double atol2) {
  double s[3];
  spx_kry_total(part, g, 2, s);
  if (threadIdx.x != 0) return;
  for (int k = 0; k < SPX_ST_COUNT; k++) st[k] = 0;
  st[SPX_ST_BB] = s[1];
  st[SPX_ST_TOL2] = rtol2 * s[1] > atol2 ? rtol2 * s[1] : atol2;
  st[SPX_ST_R0N2] = s[0];
  st[SPX_ST_RZ] = s[0]; /* rho = r0^.r_0 = ||r_0||^2 */
  st[SPX_ST_OMEGA] = 1;
  spx_kry_hist(st, hist, hcap, s[0]);
  if (!spx_kry_finite(s[0]) || !spx_kry_finite(s[1])) { spx_kry_stop(st, SPX_KS_NONFINITE, s[0], 0); return; }
  if (s[0] <= st[SPX_ST_TOL2]) spx_kry_stop(st, SPX_KS_CONVERGED, 0, 0);
}

/* After v = A phat and spx_kry_dot2(r0, v, v): alpha = rho / r0^.v. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_alpha(int g, const double *__restrict__ part, double *__restrict__ st) {
  double s[3];
  if (st[SPX_ST_DONE] != 0) return;
  spx_kry_total(part, g, 2, s);
  if (threadIdx.x != 0) return;
  if (!spx_kry_finite(s[0]) || !spx_kry_finite(s[1]) ||
      (s[0] < 0 ? -s[0] : s[0]) <= SPX_KRY_EPS * sqrt(st[SPX_ST_R0N2] * s[1])) {
    spx_kry_stop(st, SPX_KS_R0V, s[0], 0);
    return;
  }
  st[SPX_ST_ALPHA] = st[SPX_ST_RZ] / s[0];
}

/* s = r - alpha v, in r; term s.s. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_s(long long n, const spx_value_t *__restrict__ v, spx_value_t *__restrict__ r,
               double *__restrict__ part, const double *__restrict__ st) {
  double s0 = 0, a;
  if (st[SPX_ST_DONE] != 0) return;
  a = st[SPX_ST_ALPHA];
  SPX_FOR_EACH(i, n) {
    double sd = (double)(spx_value_t)((double)r[i] - a * (double)v[i]);
    r[i] = (spx_value_t)sd;
    s0 += sd * sd;
  }
  spx_kry_block(s0, 0, 0, 1, part);
}

/* The half step: ||s|| passing stops the solve (x += alpha phat still due: FINISH, omega = 0). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_half(int g, const double *__restrict__ part, double *__restrict__ st, double *__restrict__ hist,
                  long long hcap) {
  double s[3];
  if (st[SPX_ST_DONE] != 0) return;
  spx_kry_total(part, g, 1, s);
  if (threadIdx.x != 0) return;
  st[SPX_ST_SS] = s[0];
  if (s[0] <= st[SPX_ST_TOL2]) {
    st[SPX_ST_IT] += 1;
    spx_kry_hist(st, hist, hcap, s[0]);
    st[SPX_ST_OMEGA] = 0;
    spx_kry_stop(st, SPX_KS_CONVERGED, 0, 1);
    return;
  }
  if (!spx_kry_finite(s[0])) spx_kry_stop(st, SPX_KS_NONFINITE, s[0], 0);
}

/* After t = A shat and spx_kry_dot2(s, t, t): omega = t.s / t.t. A breakdown here still applies
 * x += alpha phat (FINISH, omega = 0), so x matches r = s. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_omega(int g, const double *__restrict__ part, double *__restrict__ st) {
  double s[3], ats;
  if (st[SPX_ST_DONE] != 0) return;
  spx_kry_total(part, g, 2, s);
  if (threadIdx.x != 0) return;
  ats = s[0] < 0 ? -s[0] : s[0];
  if (!(s[1] > 0) || !spx_kry_finite(s[0]) || !spx_kry_finite(s[1]) ||
      ats <= SPX_KRY_EPS * sqrt(s[1] * st[SPX_ST_SS])) {
    st[SPX_ST_OMEGA] = 0;
    st[SPX_ST_RR] = st[SPX_ST_SS];
    spx_kry_stop(st, SPX_KS_OMEGA, s[0], 1);
    return;
  }
  st[SPX_ST_OMEGA] = s[0] / s[1];
}

/* x += alpha phat + omega shat; then (still running) r = s - omega t with terms r0^.r, r.r. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_xr(long long n, spx_value_t *__restrict__ x, const spx_value_t *phat, const spx_value_t *shat,
                const spx_value_t *__restrict__ t, spx_value_t *r, const spx_value_t *__restrict__ r0,
                double *__restrict__ part, const double *__restrict__ st) {
  const int done = st[SPX_ST_DONE] != 0;
  double a, w, s0 = 0, s1 = 0;
  if (done && st[SPX_ST_FINISH] == 0) return;
  a = st[SPX_ST_ALPHA];
  w = st[SPX_ST_OMEGA];
  if (done) {
    if (w != 0) {
      SPX_FOR_EACH(i, n) x[i] = (spx_value_t)((double)x[i] + a * (double)phat[i] + w * (double)shat[i]);
    } else {
      SPX_FOR_EACH(i, n) x[i] = (spx_value_t)((double)x[i] + a * (double)phat[i]);
    }
    return;
  }
  SPX_FOR_EACH(i, n) {
    double sd = (double)r[i], rd;
    x[i] = (spx_value_t)((double)x[i] + a * (double)phat[i] + w * (double)shat[i]);
    rd = (double)(spx_value_t)(sd - w * (double)t[i]);
    r[i] = (spx_value_t)rd;
    s0 += (double)r0[i] * rd;
    s1 += rd * rd;
  }
  spx_kry_block(s0, s1, 0, 2, part);
}

/* End of an iteration: counts it, records ||r||, stops when it passes; else rho_new = r0^.r
 * (~0: breakdown) and beta = (rho_new / rho)(alpha / omega). Once stopped it clears FINISH. */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_r(int g, const double *__restrict__ part, double *__restrict__ st, double *__restrict__ hist,
               long long hcap) {
  double s[3], arho;
  if (st[SPX_ST_DONE] != 0) {
    if (threadIdx.x == 0) st[SPX_ST_FINISH] = 0;
    return;
  }
  spx_kry_total(part, g, 2, s);
  if (threadIdx.x != 0) return;
  st[SPX_ST_IT] += 1;
  spx_kry_hist(st, hist, hcap, s[1]);
  if (s[1] <= st[SPX_ST_TOL2]) { spx_kry_stop(st, SPX_KS_CONVERGED, 0, 0); return; }
  if (!spx_kry_finite(s[1])) { spx_kry_stop(st, SPX_KS_NONFINITE, s[1], 0); return; }
  arho = s[0] < 0 ? -s[0] : s[0];
  if (!spx_kry_finite(s[0]) || arho <= SPX_KRY_EPS * sqrt(st[SPX_ST_R0N2] * s[1])) {
    spx_kry_stop(st, SPX_KS_RHO, s[0], 0);
    return;
  }
  st[SPX_ST_BETA] = (s[0] / st[SPX_ST_RZ]) * (st[SPX_ST_ALPHA] / st[SPX_ST_OMEGA]);
  st[SPX_ST_RZ] = s[0];
}

/* p = r + beta (p - omega v). */
extern "C" __global__ void __launch_bounds__(SPX_BLOCK)
spx_kry_bicg_p(long long n, const spx_value_t *__restrict__ r, spx_value_t *__restrict__ p,
               const spx_value_t *__restrict__ v, const double *__restrict__ st) {
  double b, w;
  if (st[SPX_ST_DONE] != 0) return;
  b = st[SPX_ST_BETA];
  w = st[SPX_ST_OMEGA];
  SPX_FOR_EACH(i, n) p[i] = (spx_value_t)((double)r[i] + b * ((double)p[i] - w * (double)v[i]));
}
