/* SPDX-License-Identifier: BSD-3-Clause */
/* Parameters (papers/002 Table 5-2), particle storage and the initial layouts (Figures 5-1, 5-2,
 * 5-5). */
#include "mps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mps_params_spacing(mps_params *p, double l0) {
  p->l0 = l0;
  p->re_n = 2.1 * p->l0;
  p->re_grad = 2.1 * p->l0;
  p->re_lap = 3.1 * p->l0;
  p->cell = 3.5 * p->l0;
  p->collision = 0.5 * p->l0;
}

void mps_params_default(mps_params *p) {
  memset(p, 0, sizeof *p);
  p->dim = 2;
  mps_params_spacing(p, 0.025);
  p->dt = 1e-4;
  p->rho = 1000.0;
  p->nu = 1e-6;
  p->g = -9.8;
  p->beta = 0.97;
  p->restitution = 0.2;
  p->compressibility = 0.45e-9;
  p->mixed = 1;
  p->relax = 0.01;
  p->rtol = 1e-8;
}

/* The weight (2-4) of a lattice neighbour, as the kernels compute it. */
static double lattice_weight(double r, double re) { return r < re ? re / r - 1.0 : 0.0; }

/* n0 (2-5) and lambda0 (2-11) of a particle inside a full square (2-D) or cubic (3-D) lattice of
 * spacing l0: the state the fluid starts in, so that n_i = n0 means "as dense as at the start". */
void mps_params_reference(mps_params *p) {
  int i, j, m, k = (int)ceil(p->re_lap / p->l0) + 1, kz = p->dim == 3 ? k : 0;
  double nn = 0, ng = 0, nl = 0, r2w = 0;
  for (m = -kz; m <= kz; m++)
    for (j = -k; j <= k; j++)
      for (i = -k; i <= k; i++) {
        double r;
        if (i == 0 && j == 0 && m == 0) continue;
        r = p->l0 * sqrt((double)(i * i + j * j + m * m));
        nn += lattice_weight(r, p->re_n);
        ng += lattice_weight(r, p->re_grad);
        nl += lattice_weight(r, p->re_lap);
        r2w += r * r * lattice_weight(r, p->re_lap);
      }
  p->n0_n = nn;
  p->n0_grad = ng;
  p->n0_lap = nl;
  p->lambda = r2w / nl;
}

int mps_particles_alloc(mps_particles *s, int64_t n) {
  size_t m = (size_t)(n > 0 ? n : 1);
  memset(s, 0, sizeof *s);
  s->n = n;
  s->id = calloc(m, sizeof *s->id);
  s->row = calloc(m, sizeof *s->row);
  s->type = calloc(m, 1);
  s->bc = calloc(m, 1);
  s->x = calloc(m, sizeof(double));
  s->y = calloc(m, sizeof(double));
  s->u = calloc(m, sizeof(double));
  s->v = calloc(m, sizeof(double));
  s->p = calloc(m, sizeof(double));
  s->nd = calloc(m, sizeof(double));
  s->pmin = calloc(m, sizeof(double));
  s->ax = calloc(m, sizeof(double));
  s->ay = calloc(m, sizeof(double));
  return s->id && s->row && s->type && s->bc && s->x && s->y && s->u && s->v && s->p && s->nd && s->pmin &&
                 s->ax && s->ay
             ? 0
             : -1;
}

int mps_particles_alloc_z(mps_particles *s) {
  size_t m = (size_t)(s->n > 0 ? s->n : 1);
  s->z = calloc(m, sizeof(double));
  s->w = calloc(m, sizeof(double));
  s->az = calloc(m, sizeof(double));
  return s->z && s->w && s->az ? 0 : -1;
}

void mps_particles_free(mps_particles *s) {
  free(s->z);
  free(s->w);
  free(s->az);
  free(s->id);
  free(s->row);
  free(s->type);
  free(s->bc);
  free(s->x);
  free(s->y);
  free(s->u);
  free(s->v);
  free(s->p);
  free(s->nd);
  free(s->pmin);
  free(s->ax);
  free(s->ay);
  memset(s, 0, sizeof *s);
}

/* The thesis's tank (Figure 5-1): x and y from 0 to 3.0 at l0 = 0.025, i.e. 120 x 120 cells inside,
 * closed on all four sides by 4 layers (2 wall + 2 dummy, as in Koshizuka's sample code): 128^2 -
 * 120^2 = 1,984 particles, which with the 3,840 water particles (1.2 x 2.0: 48 x 80) gives the
 * thesis's 5,824. The drop and floor layouts are the thesis's counts solved for the same tank:
 * 8,224 - 5,824 = 2,400 = a 120 x 20 pool under the falling block; 5,344 - 1,984 = 3,360 = a
 * 120 x 28 layer (0.7 m). The falling block is the dam-break block turned on its side (80 x 48),
 * centred in x, as high as the tank allows (section 5.2). */
static const mps_layout layouts[] = {
    {"dambreak", 120, 120, 1, {{0, 0, 48, 80}}, 5824, 3840, 0},
    {"falling", 120, 120, 1, {{20, 72, 80, 48}}, 5824, 3840, 0},
    {"drop", 120, 120, 2, {{0, 0, 120, 20}, {20, 72, 80, 48}}, 8224, 6240, 0},
    {"floor", 120, 120, 1, {{0, 0, 120, 28}}, 5344, 3360, 0},
    /* 3-D (README.md): a 0.6 x 0.6 x 0.3 m tank (x, y up, z), a 0.2 x 0.4 m column (n^2 = 2) against
     * the wall x = 0 across the whole depth: 8 x 16 x 12 = 1,536 water particles. */
    {"dambreak3d", 24, 24, 1, {{0, 0, 8, 16, 0, 12}}, 0, 0, 12},
};

int mps_layout_named(const char *name, mps_layout *out) {
  size_t i;
  for (i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
    if (!strcmp(name, layouts[i].name)) {
      *out = layouts[i];
      return 0;
    }
  return -1;
}

enum { MPS_WALL_LAYERS = 2, MPS_LAYERS = 4 };

/* How far cell index i lies outside [0, n): 0 inside, 1 the first layer out, ... */
static int outside(int i, int n) { return i < 0 ? -i : (i >= n ? i - n + 1 : 0); }

/* Type of cell (i, j, m) of the tank's grid (i, j, m from -MPS_LAYERS, 0 the first inside cell; m = 0
 * in 2-D), or -1 for an empty inside cell. The shell a cell lies on (its largest distance outside the
 * inside along any axis) says wall (1, 2) or dummy (3, 4): in 3-D the tank is closed on all six
 * sides, as the 2-D tank is on its four. */
static int cell_type(const mps_layout *l, int i, int j, int m) {
  int dx = outside(i, l->tank_w), dy = outside(j, l->tank_h), dz = l->tank_d > 0 ? outside(m, l->tank_d) : 0;
  int d = dx > dy ? dx : dy, b;
  if (dz > d) d = dz;
  if (d > 0) return d <= MPS_WALL_LAYERS ? MPS_WALL : MPS_DUMMY;
  for (b = 0; b < l->nblocks; b++) {
    const int *k = l->block[b];
    if (i >= k[0] && i < k[0] + k[2] && j >= k[1] && j < k[1] + k[3] &&
        (l->tank_d == 0 || (m >= k[4] && m < k[4] + k[5])))
      return MPS_FLUID;
  }
  return -1;
}

/* The layers of cells along z: one plane (m = 0) in 2-D. */
static int z_first(const mps_layout *l) { return l->tank_d > 0 ? -MPS_LAYERS : 0; }
static int z_end(const mps_layout *l) { return l->tank_d > 0 ? l->tank_d + MPS_LAYERS : 1; }

void mps_layout_count(const mps_layout *l, int64_t *total, int64_t *water, int64_t *wall, int64_t *dummy) {
  int i, j, m;
  int64_t c[3] = {0, 0, 0};
  for (m = z_first(l); m < z_end(l); m++)
    for (j = -MPS_LAYERS; j < l->tank_h + MPS_LAYERS; j++)
      for (i = -MPS_LAYERS; i < l->tank_w + MPS_LAYERS; i++) {
        int t = cell_type(l, i, j, m);
        if (t >= 0) c[t]++;
      }
  *water = c[MPS_FLUID];
  *wall = c[MPS_WALL];
  *dummy = c[MPS_DUMMY];
  *total = c[0] + c[1] + c[2];
}

/* Particle centres at ((i + 1/2) l0, (j + 1/2) l0[, (m + 1/2) l0]): the inside of the tank is
 * [0, w l0] x [0, h l0] (x [0, d l0]), and a water block's particles fill exactly its box. Row-major
 * order (x fastest, then y, then z), ids in that order. */
int mps_layout_build(const mps_layout *l, const mps_params *p, mps_particles *s) {
  int64_t total, water, wall, dummy, k = 0;
  int i, j, m;
  mps_layout_count(l, &total, &water, &wall, &dummy);
  if (mps_particles_alloc(s, total) || (l->tank_d > 0 && mps_particles_alloc_z(s))) return -1;
  for (m = z_first(l); m < z_end(l); m++)
    for (j = -MPS_LAYERS; j < l->tank_h + MPS_LAYERS; j++)
      for (i = -MPS_LAYERS; i < l->tank_w + MPS_LAYERS; i++) {
        int t = cell_type(l, i, j, m);
        if (t < 0) continue;
        s->id[k] = (int32_t)k;
        s->type[k] = (int8_t)t;
        s->x[k] = (i + 0.5) * p->l0;
        s->y[k] = (j + 0.5) * p->l0;
        if (s->z) s->z[k] = (m + 0.5) * p->l0;
        s->row[k] = -1;
        k++;
      }
  return 0;
}
