/* SPDX-License-Identifier: BSD-3-Clause */
/* Output files. Each is written to NAME.tmp and renamed to NAME once complete, so a reader (or a
 * run that was stopped) never sees half a file under the real name. */
#include "mps.h"

#include <stdlib.h>
#include <string.h>

typedef int (*mps_writer)(FILE *f, const void *data);

static int write_atomic(const char *path, mps_writer w, const void *data) {
  size_t len = strlen(path) + 5;
  char *tmp = malloc(len);
  FILE *f;
  int bad;
  if (!tmp) return -1;
  snprintf(tmp, len, "%s.tmp", path);
  if (!(f = fopen(tmp, "wb"))) {
    fprintf(stderr, "mps: cannot write %s\n", tmp);
    free(tmp);
    return -1;
  }
  bad = w(f, data);
  bad |= ferror(f);
  bad |= fclose(f);
  if (!bad && rename(tmp, path)) bad = -1;
  if (bad) {
    fprintf(stderr, "mps: writing %s failed\n", path);
    remove(tmp);
  }
  free(tmp);
  return bad ? -1 : 0;
}

typedef struct snap {
  const mps_particles *s;
  double t;
} snap;

/* One line per particle that is not a dummy: id, type (0 fluid, 1 wall, 3 ghost), position,
 * velocity, pressure (3-D: x, y, z and u, v, w). Lines in the cell order of the step; sort by id to
 * follow a particle. */
static int write_snapshot(FILE *f, const void *data) {
  const snap *d = (const snap *)data;
  const mps_particles *s = d->s;
  int64_t i;
  fprintf(f, "# t = %.6f s\n%s\n", d->t, s->z ? "id,type,x,y,z,u,v,w,p" : "id,type,x,y,u,v,p");
  for (i = 0; i < s->n; i++) {
    if (s->type[i] == MPS_DUMMY) continue;
    if (s->z)
      fprintf(f, "%d,%d,%.6f,%.6f,%.6f,%.5f,%.5f,%.5f,%.3f\n", (int)s->id[i], (int)s->type[i], s->x[i], s->y[i],
              s->z[i], s->u[i], s->v[i], s->w[i], s->p[i]);
    else
      fprintf(f, "%d,%d,%.6f,%.6f,%.5f,%.5f,%.3f\n", (int)s->id[i], (int)s->type[i], s->x[i], s->y[i], s->u[i],
              s->v[i], s->p[i]);
  }
  return 0;
}

int mps_snapshot_csv(const char *path, const mps_particles *s, double t) {
  snap d;
  d.s = s;
  d.t = t;
  return write_atomic(path, write_snapshot, &d);
}

/* x and y (3-D: x, y, z) of every particle, as doubles in id order: two runs are the same to the
 * bit when these files are. */
static int write_positions(FILE *f, const void *data) {
  const mps_particles *s = (const mps_particles *)data;
  int64_t i, d = s->z ? 3 : 2;
  double *xy = calloc((size_t)(d * s->n + 1), sizeof *xy);
  int bad;
  if (!xy) return -1;
  for (i = 0; i < s->n; i++) {
    xy[d * s->id[i]] = s->x[i];
    xy[d * s->id[i] + 1] = s->y[i];
    if (s->z) xy[d * s->id[i] + 2] = s->z[i];
  }
  bad = fwrite(xy, sizeof *xy, (size_t)(d * s->n), f) != (size_t)(d * s->n);
  free(xy);
  return bad ? -1 : 0;
}

int mps_positions_dump(const char *path, const mps_particles *s) { return write_atomic(path, write_positions, s); }

typedef struct front_data {
  const double *t, *z;
  int64_t n;
  double a, tscale;
} front_data;

static int write_front(FILE *f, const void *data) {
  const front_data *d = (const front_data *)data;
  int64_t i;
  fprintf(f, "t,front,T,Z\n");
  for (i = 0; i < d->n; i++)
    fprintf(f, "%.5f,%.5f,%.4f,%.4f\n", d->t[i], d->z[i], d->t[i] * d->tscale, d->a > 0 ? d->z[i] / d->a : 0.0);
  return 0;
}

int mps_front_csv(const char *path, const double *t, const double *z, int64_t n, double a, double tscale) {
  front_data d;
  d.t = t;
  d.z = z;
  d.n = n;
  d.a = a;
  d.tscale = tscale;
  return write_atomic(path, write_front, &d);
}
