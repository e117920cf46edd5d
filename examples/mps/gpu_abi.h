/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_abi.h: what the host (gpu.c) hands every particle kernel (particles.cu) by value: the device
 * arrays of one step and the parameters. Included by both: the C compiler and NVRTC lay it out the
 * same way (8-byte members first, then the 4-byte ones), and gpu.c checks its size. Pointers are
 * device addresses (on the host, spx_devptr values cast to pointers; never dereferenced there). */
#ifndef MPS_GPU_ABI_H
#define MPS_GPU_ABI_H

typedef struct mps_dev {
  /* particles in cell order (the arrays of mps_particles; z, w, az, z2, w2 only in 3-D, else
   * NULL), and the permute's destinations */
  int *id, *row;
  signed char *type, *bc;
  double *x, *y, *u, *v, *p, *nd, *pmin, *ax, *ay, *z, *w, *az;
  int *id2;
  signed char *type2;
  double *x2, *y2, *u2, *v2, *p2, *z2, *w2;
  /* the cell grid: start (ncell + 1), per-cell counts and fill cursors (ncell), per particle the
   * cell before (key) and after (cell) the sort, perm (new -> old) */
  int *start, *count, *fill, *key, *cell, *perm;
  /* scans: inner flags and row numbers (n + 1), row lengths and row starts by particle (n + 1) */
  int *flag, *rowscan, *len, *offs;
  /* the PPE in CSR (32-bit row pointers, as spx_dmatrix_wrap_csr takes; row_ptr64 the same as
   * spx_csr's int64_t, downloaded for the host's plan), right-hand side, guess / solution */
  int *row_ptr, *col;
  double *val, *b, *sol;
  long long *row_ptr64;
  /* mps_params (the same names) and the grid's origin and cell edge */
  double l0, dt, rho, nu, g, re_n, re_grad, re_lap, beta, collision, restitution, compressibility, relax;
  double n0_n, n0_grad, n0_lap, lambda;
  double x0, y0, z0, h;
  long long n;     /* particles */
  int nx, ny, nz;  /* cells (nz 1 in 2-D); nx * ny * nz is the ghosts' bin, nx * ny * nz + 1 bins in all */
  int mixed;       /* mps_params.mixed */
} mps_dev;

/* The prefix scans' launch shape (gpu.c launches them so; particles.cu's scan kernels assume it):
 * tiles of MPS_TILE_THREADS threads of MPS_TILE_ITEMS consecutive entries each, and one block of
 * MPS_SCAN_THREADS threads for the tiles' sums. */
enum { MPS_TILE_THREADS = 256, MPS_TILE_ITEMS = 8, MPS_TILE = MPS_TILE_THREADS * MPS_TILE_ITEMS, MPS_SCAN_THREADS = 1024 };

#endif /* MPS_GPU_ABI_H */
