/* SPDX-License-Identifier: BSD-3-Clause */
/* mps.h: the 2-D and 3-D semi-implicit MPS program (papers/002, section 2): particles, the cell grid, the
 * per-particle kernels, the pressure Poisson equation on spx, output. Kernels are written one
 * particle per call (mps_k_*), reading neighbours through the cell grid, writing only their own
 * particle's outputs: each maps to one CUDA thread per particle, and the host loops over them
 * (OpenMP) give the same bits with any thread count. */
#ifndef MPS_H
#define MPS_H

#include <stdint.h>
#include <stdio.h>
#include <spx/spx.h>

/* Particle types (papers/002 Figure 2-8: fluid, wall, dummy). Wall particles take part in the
 * pressure equation; dummy particles only fill the wall's number density; ghosts left the grid
 * and take part in nothing. */
enum { MPS_PARALLEL_MIN = 4096 };

enum { MPS_FLUID = 0, MPS_WALL = 1, MPS_DUMMY = 2, MPS_GHOST = 3 };
/* Boundary condition of a fluid or wall particle in the pressure equation. */
enum { MPS_BC_NONE = 0, MPS_BC_INNER = 1, MPS_BC_SURFACE = 2 };

typedef struct mps_params {
  int dim;               /* 2 or 3: the dimension d of the models (2-8), (2-16), (2-26) */
  double l0;             /* initial particle spacing [m] (Table 5-2: 0.025) */
  double dt;             /* time step [s] (1e-4) */
  double rho;            /* fluid density [kg/m^3] (1000) */
  double nu;             /* kinematic viscosity [m^2/s] (water, 1e-6) */
  double g;              /* gravity along y, which is up in 2-D and 3-D [m/s^2] (-9.8) */
  double re_n, re_grad, re_lap; /* radii of influence [m]: 2.1, 2.1, 3.1 l0 */
  double cell;           /* cell edge of the neighbour grid [m] (Table 5-2's grid size 3.5 l0) */
  double beta;           /* free surface: n_i < beta n0 (0.97) */
  double collision;      /* particles closer than this [m] collide (0.5 l0) */
  double restitution;    /* of those collisions (0.2) */
  double compressibility;/* [1/Pa] on the PPE diagonal (water, 0.45e-9): keeps the matrix SPD */
  /* The PPE's source. (2-25) takes gamma (n* - n0) / (n0 dt^2) alone (gamma = 1; Koshizuka's
   * sample code relaxes it to 0.2). At the thesis's dt = 1e-4 that source kicks particles by
   * (density error) / dt each step, and a water column at rest churns within 0.1 s here; the
   * mixed source (Tanaka & Masunaga, J. Comput. Phys. 229 (2010) 4279) takes the velocity
   * divergence as the main term and keeps a small density term against drift: the default. */
  int mixed;             /* 1: -div u* / dt + gamma (n* - n0) / (n0 dt^2) [1]; 0: the density term only */
  double relax;          /* gamma [0.01 mixed, 0.2 density] */
  double rtol;           /* CG relative tolerance (1e-8) */
  /* From the initial lattice (mps_params_reference): the number densities of a particle inside
   * the fluid for each radius, and lambda0 (2-11). */
  double n0_n, n0_grad, n0_lap, lambda;
} mps_params;

void mps_params_default(mps_params *p);
/* The spacing l0 and what Table 5-2 ties to it: the radii, the grid's cell, the collision distance. */
void mps_params_spacing(mps_params *p, double l0);
/* n0 and lambda0 on the initial lattice: square in 2-D, cubic in 3-D (p->dim). */
void mps_params_reference(mps_params *p);

/* Particles, structure of arrays (the order the cell sort gives; id is the particle's name). */
typedef struct mps_particles {
  int64_t n;
  int32_t *id;
  int8_t *type, *bc;
  double *x, *y, *u, *v, *p; /* position, velocity, pressure */
  double *z, *w, *az;        /* 3-D only (NULL in 2-D): position, velocity, scratch along z */
  double *nd;                /* number density (re_n) at the last build */
  double *pmin;              /* min pressure over the gradient's neighbourhood */
  double *ax, *ay;           /* per-step scratch: acceleration or new velocity */
  int32_t *row;              /* PPE row of an inner particle, else -1 */
} mps_particles;

int mps_particles_alloc(mps_particles *s, int64_t n);
/* The z arrays of a 3-D run, after mps_particles_alloc; 0 or -1. */
int mps_particles_alloc_z(mps_particles *s);
void mps_particles_free(mps_particles *s);

/* The cell grid: particles sorted by cell (cell = (cz * ny + cy) * nx + cx; 2-D: nz = 1, cz = 0),
 * start[c]..start[c+1] the particles of cell c; cell[i] the cell of particle i when sorted
 * (ghosts: nx * ny * nz, last). */
typedef struct mps_grid {
  double x0, y0, z0, h;
  int nx, ny, nz;
  int layers;     /* cell layers either side in z that a neighbour walk visits: 0 in 2-D, 1 in 3-D */
  int32_t *start; /* nx * ny * nz + 2 */
  int32_t *cell;  /* per particle */
  int32_t *key;   /* scratch: the cell of each particle before the sort */
  int32_t *perm;  /* scratch: new -> old */
  void *scratch;  /* scratch for the permutation, 8 bytes per particle */
} mps_grid;

int mps_grid_init(mps_grid *g, const mps_particles *s, const mps_params *p);
void mps_grid_free(mps_grid *g);
/* Bins particles by cell and permutes every particle array into cell order (stable: equal cells
 * keep their order, so the sort is deterministic). Particles outside the grid become ghosts. */
void mps_grid_sort(mps_grid *g, mps_particles *s);

/* ---- Layouts (papers/002 Figure 5-1, 5-2, 5-5) ------------------------------------------- */
enum { MPS_MAX_BLOCKS = 4 };
typedef struct mps_layout {
  const char *name;
  int tank_w, tank_h;                 /* inside of the closed tank, in cells of l0 */
  int nblocks;
  int block[MPS_MAX_BLOCKS][6];       /* water blocks: x, y, w, h in cells (x, y from the tank's
                                       * inner lower-left corner); 3-D: then z, d (depth) */
  int thesis_total, thesis_water;     /* the counts papers/002 gives (0: none) */
  int tank_d;                         /* 3-D: the tank's inside depth along z in cells; 0 in 2-D */
} mps_layout;

/* By name: dambreak, falling, drop, floor (2-D), dambreak3d (tank_d > 0); 0 found, -1 not. */
int mps_layout_named(const char *name, mps_layout *out);
/* Particles of a layout: walls (2 layers) and dummies (2 layers) round the tank, then water; 3-D
 * (tank_d > 0) on a cubic lattice with the z arrays. */
int mps_layout_build(const mps_layout *l, const mps_params *p, mps_particles *s);
void mps_layout_count(const mps_layout *l, int64_t *total, int64_t *water, int64_t *wall, int64_t *dummy);

/* ---- Kernels (kernels.c) ------------------------------------------------------------------- */
/* What a kernel reads: particles, grid, parameters. */
typedef struct mps_view {
  mps_particles *s;
  const mps_grid *g;
  const mps_params *p;
} mps_view;

/* u* = u + dt (nu lap u + g), r* = r + dt u* (2-15, 2-17, 2-18) on fluid particles. */
void mps_explicit(const mps_view *v);
/* Pairs closer than p->collision and approaching exchange momentum (restitution e); positions move
 * by the velocity change times dt. */
void mps_collision(const mps_view *v);
/* Number density (2-3) at the current positions, boundary condition (surface below beta n0), and
 * the PPE row numbers; returns the number of rows. */
int64_t mps_density(const mps_view *v);
/* Pressure from the solution (surface and others 0, negative clamped to 0), min pressure of the
 * gradient's neighbourhood, then u += -dt/rho grad p, r += -dt^2/rho grad p (2-20, 2-21, 2-27). */
void mps_correct(const mps_view *v, const double *x);

/* ---- The pressure Poisson equation (ppe.c) ------------------------------------------------- */
typedef struct mps_ppe {
  int64_t cap_rows, cap_nnz;
  int64_t *row_ptr;
  int32_t *col;
  double *val, *b, *x;
  int64_t row_max;   /* the longest row (from the build: what the lagged choice's B needs) */
  spx_csr a;         /* view of the arrays above */
} mps_ppe;

/* Builds (2-26) as CSR on the rows mps_density numbered: A p = b with
 * A_ij = -2d/(lambda n0) w_ij / rho (i != j, both inner), A_ii = sum_j 2d/(lambda n0) w_ij / rho
 * + compressibility / dt^2, b_i = relax / dt^2 (n_i - n0) / n0 (- div u*_i / dt, mixed); x gets the
 * previous pressures. */
int mps_ppe_build(mps_ppe *e, const mps_view *v, int64_t nrows);
void mps_ppe_free(mps_ppe *e);
/* Room for nrows rows and nnz entries (row_ptr, b, x: nrows + 1; col, val: nnz); 0 or -1. */
int mps_ppe_reserve(mps_ppe *e, int64_t nrows, int64_t nnz);
/* e->a viewing the arrays as a CSR of nrows rows and nnz entries. */
void mps_ppe_view(mps_ppe *e, int64_t nrows, int64_t nnz);

/* Per-step format selection: fixed (force a format), lagged (the thesis: formula (5-1), spx's mps
 * strategy, on step k's B and R chooses step k+1's format), auto (spx). */
enum { MPS_SELECT_FIXED = 0, MPS_SELECT_LAGGED = 1, MPS_SELECT_AUTO = 2 };

typedef struct mps_solver {
  spx_context *ctx;
  int mode;
  char fixed[16];        /* fixed: "csr", "ell", "jds", "cusparse" */
  char current[16];      /* the format the step solves with (lagged: chosen from the last matrix) */
  char last[16];         /* the previous step's, for counting switches */
  int64_t switches, steps, iterations;
  int64_t uses[4];       /* steps solved in csr, ell, jds, cusparse */
  int64_t uses_other;    /* ... in another format (auto) */
  int64_t last_iters, unconverged;
  double rtol;           /* CG relative tolerance */
  int no_graph;          /* the solves' options.no_graph (mps --no-graph) */
  double last_B, last_R, last_resid; /* the last step's matrix features (4-1, 4-2), true residual */
  char next[16];         /* lagged: step k+1's format, chosen from step k's B and R */
  int64_t fallbacks;     /* lagged: steps whose chosen format could not be planned (jds, then csr) */
  /* seconds: plan creation (choice, conversion) on the step's path (the lagged choice included),
   * the solves, the lagged choice alone */
  double t_select, t_solve, t_choice;
} mps_solver;

int mps_solver_init(mps_solver *m, spx_backend backend, const char *select);
void mps_solver_free(mps_solver *m);
/* Solves the step's system; e->x in: the guess, out: the pressures. t_select / t_solve grow.
 * With b and x non-NULL (device pointers on a CUDA context: the GPU particle path) the solve reads
 * b and updates x in place on the device; e->a is still the host CSR the plan is made from.
 * e->row_max must be the longest row's length (the lagged choice reads it). */
int mps_solver_step(mps_solver *m, mps_ppe *e, const void *b, void *x);
/* The same on the GPU particle path's device CSR a (spx_plan_create_device: nothing comes to the
 * host), its device b and x; row_max: its longest row. */
int mps_solver_step_device(mps_solver *m, const spx_dcsr *a, int64_t row_max, void *b, void *x);

/* ---- The particle kernels on the GPU (gpu.c, particles.cu) ---------------------------------- */
/* One thread per particle, each kernel the device twin of a host kernel (README.md lists them);
 * the results are the host kernels' to the bit. On the solver's context (CUDA) and stream. */
typedef struct mps_gpu mps_gpu;
/* Compiles particles.cu with NVRTC, 2-D and 3-D, for each architecture of a comma-separated list
 * ("sm_80,sm_90"; no GPU needed): 0 compiled, 77 NVRTC missing, 1 a failure (printed). */
int mps_gpu_compile_check(const char *archs);
/* Device arrays for s and the grid's shape (3-D: the z arrays), the kernels compiled for p->dim (or
 * from the JIT cache), s uploaded. 77 when ctx is not CUDA (no GPU), 1 on a failure (printed). */
int mps_gpu_init(mps_gpu **out, spx_context *ctx, const mps_particles *s, const mps_grid *grid, const mps_params *p);
void mps_gpu_free(mps_gpu *g);
int mps_gpu_upload(mps_gpu *g, const mps_particles *s);
int mps_gpu_sort(mps_gpu *g);    /* mps_grid_sort */
int mps_gpu_move(mps_gpu *g);    /* mps_explicit, mps_collision */
/* mps_density and mps_ppe_build into a device CSR (its rows, nonzeros and longest row known) */
int mps_gpu_ppe(mps_gpu *g);
/* that CSR downloaded into e (e->row_max too), for spx_plan_create and the checks */
int mps_gpu_ppe_download(mps_gpu *g, mps_ppe *e);
int64_t mps_gpu_rows(const mps_gpu *g);
void mps_gpu_dcsr(const mps_gpu *g, spx_dcsr *a, int64_t *row_max); /* the CSR built last, on the device */
void mps_gpu_vectors(mps_gpu *g, void **b, void **x); /* the PPE's device b and x */
/* mps_correct on the device's solution (x NULL) or on host x (uploaded) */
int mps_gpu_correct(mps_gpu *g, const double *x);
/* id, type, x, y, u, v, p (3-D: z, w) into s; all: every array the kernels write */
int mps_gpu_download(mps_gpu *g, mps_particles *s, int all);
/* milliseconds by phase, summed over the steps: sort, explicit + collisions, density + PPE build,
 * correction (device events), then the CSR's download to the host (wall) */
enum { MPS_GPU_PHASES = 5 };
void mps_gpu_times(const mps_gpu *g, double ms[MPS_GPU_PHASES]);
/* Every array against the host's to the bit (grid, e: also the grid and the PPE); tmp: scratch
 * particles of the same n. 0 equal, 1 a difference (printed). */
int mps_gpu_compare(mps_gpu *g, const mps_particles *s, const mps_grid *grid, const mps_ppe *e, mps_particles *tmp,
                    const char *phase, int64_t step);

/* ---- Output (output.c) --------------------------------------------------------------------- */
/* Writes path via path.tmp and a rename once complete; 0 on success. */
int mps_snapshot_csv(const char *path, const mps_particles *s, double t);
int mps_positions_dump(const char *path, const mps_particles *s);
/* t, front position z, T = t * tscale, Z = z / a per sample. */
int mps_front_csv(const char *path, const double *t, const double *z, int64_t n, double a, double tscale);
/* A frame: the window [x0, x1] x [y0, y1] in metres drawn width x height pixels (height from the
 * window's aspect), particles as discs of radius pixels, the fluid coloured by pressure from 0
 * (blue) to pmax (red). */
typedef struct mps_frame_view {
  int width, height;
  double x0, x1, y0, y1, radius, pmax;
} mps_frame_view;
int mps_frame_png(const char *path, const mps_particles *s, const mps_frame_view *v);

double mps_now(void);

/* ---- shared by the kernels (kernels.c, ppe.c) ------------------------------------------------ */
/* Loops over particles run on OpenMP threads from MPS_PARALLEL_MIN particles up: below that a
 * parallel region costs more than the loop (and on a loaded machine a region waits for a
 * descheduled thread). The results do not depend on it. */
#ifdef _OPENMP
#define MPS_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if (s->n >= MPS_PARALLEL_MIN)")
#else
#define MPS_PARALLEL_FOR
#endif

/* Neighbour candidates of particle i: the particles of the 3 x 3 cells round i's cell (3 x 3 x 3
 * in 3-D: g->layers planes either side). The three cells of one grid row are consecutive cell
 * numbers, so each row is one contiguous range; planes bottom (z) up, rows bottom (y) up. */
#define MPS_NEIGHBOURS(g, i, j)                                                                    \
  for (int dz_ = -(g)->layers; dz_ <= (g)->layers; dz_++)                                          \
    for (int dy_ = -1; dy_ <= 1; dy_++)                                                            \
      for (int32_t j = (g)->start[(g)->cell[i] + (dz_ * (g)->ny + dy_) * (g)->nx - 1],             \
                   end_ = (g)->start[(g)->cell[i] + (dz_ * (g)->ny + dy_) * (g)->nx + 2];          \
           j < end_; j++)

/* The offset r_j - r_i into d (d[2] 0 in 2-D) and its squared length (3-D when s->z is set; the
 * 2-D sum is unchanged). */
static inline double mps_offset(const mps_particles *s, int64_t i, int64_t j, double d[3]) {
  double r2;
  d[0] = s->x[j] - s->x[i];
  d[1] = s->y[j] - s->y[i];
  d[2] = 0;
  r2 = d[0] * d[0] + d[1] * d[1];
  if (s->z) {
    d[2] = s->z[j] - s->z[i];
    r2 += d[2] * d[2];
  }
  return r2;
}

/* The weight function (2-4). Distances below 1e-3 l0 are taken as 1e-3 l0: two particles at
 * one point would give an infinite weight (collision handling keeps them apart long before). */
static inline double mps_weight(double r, double re, double l0) {
  double rr = r > 1e-3 * l0 ? r : 1e-3 * l0;
  return r < re ? re / rr - 1.0 : 0.0;
}


#endif /* MPS_H */
