/* SPDX-License-Identifier: BSD-3-Clause */
/* Neighbour search by cell lists: the particles are binned into square (3-D: cubic) cells of edge
 * p->cell (>= the largest radius of influence, so a particle's neighbours lie in its own and the 8
 * (3-D: 26) surrounding cells) and the particle arrays are permuted into cell order every step.
 * Kernels then walk 3 x 3 (x 3) cells of contiguous particles, and the PPE matrix's rows (numbered in particle order)
 * come out grouped by cell: neighbouring particles are neighbouring rows, with columns in a short
 * band, which is what keeps the SpMV's x reads in cache. */
#include "mps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The grid spans the particles' bounding box at the start, one cell wider on every side (the
 * tank's dummy layers close the domain, so fluid never needs more). */
int mps_grid_init(mps_grid *g, const mps_particles *s, const mps_params *p) {
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300, zmin = 1e300, zmax = -1e300;
  int64_t i;
  size_t n = (size_t)(s->n > 0 ? s->n : 1), cells;
  memset(g, 0, sizeof *g);
  for (i = 0; i < s->n; i++) {
    xmin = fmin(xmin, s->x[i]);
    xmax = fmax(xmax, s->x[i]);
    ymin = fmin(ymin, s->y[i]);
    ymax = fmax(ymax, s->y[i]);
    if (p->dim == 3) {
      zmin = fmin(zmin, s->z[i]);
      zmax = fmax(zmax, s->z[i]);
    }
  }
  g->h = p->cell;
  g->x0 = xmin - g->h;
  g->y0 = ymin - g->h;
  g->nx = (int)ceil((xmax - g->x0) / g->h) + 2;
  g->ny = (int)ceil((ymax - g->y0) / g->h) + 2;
  g->nz = 1;
  if (p->dim == 3) {
    g->z0 = zmin - g->h;
    g->nz = (int)ceil((zmax - g->z0) / g->h) + 2;
    g->layers = 1;
  }
  cells = (size_t)g->nx * (size_t)g->ny * (size_t)g->nz;
  if (cells >= INT32_MAX) {
    fprintf(stderr, "mps: the cell grid (%d x %d x %d) needs more than 2^31 cells\n", g->nx, g->ny, g->nz);
    return -1;
  }
  g->start = calloc(cells + 2, sizeof *g->start);
  g->cell = calloc(n, sizeof *g->cell);
  g->key = calloc(n, sizeof *g->key);
  g->perm = calloc(n, sizeof *g->perm);
  g->scratch = calloc(n, 8);
  return g->start && g->cell && g->key && g->perm && g->scratch ? 0 : -1;
}

void mps_grid_free(mps_grid *g) {
  free(g->start);
  free(g->cell);
  free(g->key);
  free(g->perm);
  free(g->scratch);
  memset(g, 0, sizeof *g);
}

/* The cell of a position, or nx * ny (the ghosts' bin, sorted last) outside the grid's inner
 * cells: the outermost ring stays empty so the 3 x 3 walk never leaves the grid. */
static int32_t cell_of(const mps_grid *g, double x, double y) {
  double fx = (x - g->x0) / g->h, fy = (y - g->y0) / g->h;
  int cx, cy;
  if (!(fx >= 1.0 && fy >= 1.0 && fx < g->nx - 1 && fy < g->ny - 1)) return (int32_t)g->nx * g->ny;
  cx = (int)fx;
  cy = (int)fy;
  return (int32_t)cy * g->nx + cx;
}

/* The same in 3-D: (cz * ny + cy) * nx + cx, or nx * ny * nz outside the inner cells (the outermost
 * shell stays empty so the 3 x 3 x 3 walk never leaves the grid). */
static int32_t cell_of3(const mps_grid *g, double x, double y, double z) {
  double fz = (z - g->z0) / g->h;
  int32_t c = cell_of(g, x, y), ghost = (int32_t)g->nx * g->ny * g->nz;
  if (c == (int32_t)g->nx * g->ny || !(fz >= 1.0 && fz < g->nz - 1)) return ghost;
  return (int32_t)((int)fz * g->ny) * g->nx + c;
}

/* Counting sort by key, stable: perm[new] = old. */
static void counting_sort(mps_grid *g, int64_t n) {
  int64_t i, ncell = (int64_t)g->nx * g->ny * g->nz + 1;
  memset(g->start, 0, (size_t)(ncell + 1) * sizeof *g->start);
  for (i = 0; i < n; i++) g->start[g->key[i] + 1]++;
  for (i = 0; i < ncell; i++) g->start[i + 1] += g->start[i];
  for (i = 0; i < n; i++) g->perm[g->start[g->key[i]]++] = (int32_t)i;
  /* start[c] now holds the end of cell c: shift back to starts */
  for (i = ncell; i > 0; i--) g->start[i] = g->start[i - 1];
  g->start[0] = 0;
}

#define MPS_PERMUTE(type, arr)                                                                     \
  do {                                                                                             \
    type *t_ = (type *)g->scratch;                                                                 \
    int64_t k_;                                                                                    \
    for (k_ = 0; k_ < s->n; k_++) t_[k_] = (arr)[g->perm[k_]];                                     \
    memcpy((arr), t_, (size_t)s->n * sizeof(type));                                                \
  } while (0)

void mps_grid_sort(mps_grid *g, mps_particles *s) {
  int64_t i, ghost = (int64_t)g->nx * g->ny * g->nz;
  for (i = 0; i < s->n; i++) {
    g->key[i] = s->type[i] == MPS_GHOST ? (int32_t)ghost
                : s->z              ? cell_of3(g, s->x[i], s->y[i], s->z[i])
                                    : cell_of(g, s->x[i], s->y[i]);
    if (g->key[i] == ghost) s->type[i] = MPS_GHOST;
  }
  counting_sort(g, s->n);
  MPS_PERMUTE(int32_t, s->id);
  MPS_PERMUTE(int8_t, s->type);
  MPS_PERMUTE(double, s->x);
  MPS_PERMUTE(double, s->y);
  MPS_PERMUTE(double, s->u);
  MPS_PERMUTE(double, s->v);
  MPS_PERMUTE(double, s->p);
  if (s->z) {
    MPS_PERMUTE(double, s->z);
    MPS_PERMUTE(double, s->w);
  }
  for (i = 0; i < s->n; i++) g->cell[i] = g->key[g->perm[i]];
}
