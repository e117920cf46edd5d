/* SPDX-License-Identifier: BSD-3-Clause */
/* The particle kernels of one MPS step (papers/002 section 2.2), host versions. Each k_* function
 * computes one particle from its neighbours and writes only that particle's entries, so the
 * loops below run in any order and on any number of threads with the same bits, and each is one
 * CUDA thread per particle when the kernels move to the GPU. Sums over neighbours run in cell order
 * then particle order (fixed by the sort), never in thread order.
 * In 3-D (p->dim == 3, s->z set) each kernel adds the z terms; the 2-D arithmetic is unchanged, z is
 * never read, and d in the models' factors (2-8), (2-16) is p->dim. */
#include "mps.h"

#include <math.h>

static int active(const mps_particles *s, int64_t j) { return s->type[j] != MPS_GHOST; }

/* ---- explicit viscosity and gravity -------------------------------------------------------- */
/* u* of fluid particle i (2-17): the Laplacian model (2-16) over all non-ghost neighbours (walls and
 * dummies stand still, u = 0). */
static void k_explicit(const mps_view *v, int64_t i) {
  const mps_particles *s = v->s;
  const mps_params *p = v->p;
  const int d3 = s->z != NULL;
  double lu = 0, lv = 0, lw = 0, re2 = p->re_lap * p->re_lap, c = 2.0 * p->dim / (p->lambda * p->n0_lap);
  MPS_NEIGHBOURS(v->g, i, j) {
    double d[3], r2 = mps_offset(s, i, j, d), w;
    if (j == i || !active(s, j) || r2 >= re2) continue;
    w = mps_weight(sqrt(r2), p->re_lap, p->l0);
    lu += (s->u[j] - s->u[i]) * w;
    lv += (s->v[j] - s->v[i]) * w;
    if (d3) lw += (s->w[j] - s->w[i]) * w;
  }
  s->ax[i] = s->u[i] + p->dt * (p->nu * c * lu);
  s->ay[i] = s->v[i] + p->dt * (p->nu * c * lv + p->g);
  if (d3) s->az[i] = s->w[i] + p->dt * (p->nu * c * lw);
}

/* Fluid particles take the new velocity in ax, ay (az). The explicit step moves them by dt times it
 * (2-18, whole = 1); a collision moves them by dt times the change only (whole = 0). */
static void take_velocity(const mps_view *v, int whole) {
  mps_particles *s = v->s;
  double dt = v->p->dt;
  int64_t i;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++) {
    if (s->type[i] != MPS_FLUID) continue;
    s->x[i] += dt * (whole ? s->ax[i] : s->ax[i] - s->u[i]);
    s->y[i] += dt * (whole ? s->ay[i] : s->ay[i] - s->v[i]);
    s->u[i] = s->ax[i];
    s->v[i] = s->ay[i];
    if (s->z) {
      s->z[i] += dt * (whole ? s->az[i] : s->az[i] - s->w[i]);
      s->w[i] = s->az[i];
    }
  }
}

void mps_explicit(const mps_view *v) {
  mps_particles *s = v->s;
  int64_t i;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++)
    if (s->type[i] == MPS_FLUID) k_explicit(v, i);
  take_velocity(v, 1);
}

/* ---- collisions ---------------------------------------------------------------------------- */
/* New velocity of fluid particle i: each approaching neighbour closer than p->collision takes
 * away (1 + e) m_i m_j / (m_i + m_j) of the normal relative velocity (equal particle masses: half of
 * it). Neighbours' velocities are the ones before this kernel, i's own accumulates in neighbour
 * order. */
static void k_collision(const mps_view *v, int64_t i) {
  const mps_particles *s = v->s;
  const mps_params *p = v->p;
  const int d3 = s->z != NULL;
  double ui = s->u[i], vi = s->v[i], wi = d3 ? s->w[i] : 0, d2 = p->collision * p->collision;
  MPS_NEIGHBOURS(v->g, i, j) {
    double d[3], r2 = mps_offset(s, i, j, d), dx = d[0], dy = d[1], dz = d[2], r, vn;
    if (j == i || !active(s, j) || r2 >= d2 || r2 <= 0) continue;
    r = sqrt(r2);
    vn = (ui - s->u[j]) * dx + (vi - s->v[j]) * dy;
    if (d3) vn += (wi - s->w[j]) * dz;
    vn /= r;
    if (vn <= 0) continue;
    vn *= 0.5 * (1.0 + p->restitution);
    ui -= vn * dx / r;
    vi -= vn * dy / r;
    if (d3) wi -= vn * dz / r;
  }
  s->ax[i] = ui;
  s->ay[i] = vi;
  if (d3) s->az[i] = wi;
}

void mps_collision(const mps_view *v) {
  mps_particles *s = v->s;
  int64_t i;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++)
    if (s->type[i] == MPS_FLUID) k_collision(v, i);
  take_velocity(v, 0);
}

/* ---- number density and the free surface --------------------------------------------------- */
static void k_density(const mps_view *v, int64_t i) {
  mps_particles *s = v->s;
  const mps_params *p = v->p;
  double n = 0, re2 = p->re_n * p->re_n;
  MPS_NEIGHBOURS(v->g, i, j) {
    double d[3], r2 = mps_offset(s, i, j, d);
    if (j == i || !active(s, j) || r2 >= re2) continue;
    n += mps_weight(sqrt(r2), p->re_n, p->l0);
  }
  s->nd[i] = n;
  s->bc[i] = n < p->beta * p->n0_n ? MPS_BC_SURFACE : MPS_BC_INNER;
}

int64_t mps_density(const mps_view *v) {
  mps_particles *s = v->s;
  int64_t i, rows = 0;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++) {
    s->bc[i] = MPS_BC_NONE;
    s->nd[i] = 0;
    if (s->type[i] == MPS_FLUID || s->type[i] == MPS_WALL) k_density(v, i);
  }
  /* rows in particle (cell) order: a scan on the GPU */
  for (i = 0; i < s->n; i++) s->row[i] = s->bc[i] == MPS_BC_INNER ? (int32_t)rows++ : -1;
  return rows;
}

/* ---- pressure gradient and the correction -------------------------------------------------- */
/* The smallest pressure of i and its gradient neighbours (fluid and wall): the gradient model
 * (2-8) is taken relative to it, so that every neighbour pushes i away (Koshizuka's stabilised
 * form; with p_i itself a neighbour of lower pressure would pull and particles would cluster). */
static void k_pmin(const mps_view *v, int64_t i) {
  mps_particles *s = v->s;
  const mps_params *p = v->p;
  double m = s->p[i], re2 = p->re_grad * p->re_grad;
  MPS_NEIGHBOURS(v->g, i, j) {
    double d[3], r2 = mps_offset(s, i, j, d);
    if (j == i || r2 >= re2 || (s->type[j] != MPS_FLUID && s->type[j] != MPS_WALL)) continue;
    if (s->p[j] < m) m = s->p[j];
  }
  s->pmin[i] = m;
}

/* Acceleration -grad p / rho of fluid particle i, (2-8) with d = p->dim. */
static void k_gradient(const mps_view *v, int64_t i) {
  mps_particles *s = v->s;
  const mps_params *p = v->p;
  const int d3 = s->z != NULL;
  double gx = 0, gy = 0, gz = 0, re2 = p->re_grad * p->re_grad, c = (double)p->dim / p->n0_grad;
  MPS_NEIGHBOURS(v->g, i, j) {
    double d[3], r2 = mps_offset(s, i, j, d), dx = d[0], dy = d[1], dz = d[2], f;
    if (j == i || r2 >= re2 || r2 <= 0 || (s->type[j] != MPS_FLUID && s->type[j] != MPS_WALL)) continue;
    f = (s->p[j] - s->pmin[i]) / r2 * mps_weight(sqrt(r2), p->re_grad, p->l0);
    gx += f * dx;
    gy += f * dy;
    if (d3) gz += f * dz;
  }
  s->ax[i] = -c * gx / p->rho;
  s->ay[i] = -c * gy / p->rho;
  if (d3) s->az[i] = -c * gz / p->rho;
}

void mps_correct(const mps_view *v, const double *x) {
  mps_particles *s = v->s;
  const mps_params *p = v->p;
  int64_t i;
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++) {
    double q = s->row[i] >= 0 ? x[s->row[i]] : 0.0;
    s->p[i] = q > 0 ? q : 0.0; /* no tension: negative pressures are 0 */
  }
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++)
    if (s->type[i] == MPS_FLUID) k_pmin(v, i);
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++)
    if (s->type[i] == MPS_FLUID) k_gradient(v, i);
  MPS_PARALLEL_FOR
  for (i = 0; i < s->n; i++) {
    if (s->type[i] != MPS_FLUID) continue;
    s->u[i] += p->dt * s->ax[i];
    s->v[i] += p->dt * s->ay[i];
    s->x[i] += p->dt * p->dt * s->ax[i]; /* (2-27): r = r* + (u^{k+1} - u*) dt */
    s->y[i] += p->dt * p->dt * s->ay[i];
    if (s->z) {
      s->w[i] += p->dt * s->az[i];
      s->z[i] += p->dt * p->dt * s->az[i];
    }
  }
}
