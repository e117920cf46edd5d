/* SPDX-License-Identifier: BSD-3-Clause */
/* Output files. Each is written to NAME.tmp and renamed to NAME once complete, so a reader (or a
 * run that was stopped) never sees half a file under the real name. */
#include "mps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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

/* ---- Frames: the particles drawn as a PNG (zlib's deflate and CRC, no other library) ---------- */
typedef struct frame_data {
  const mps_particles *s;
  const mps_frame_view *v;
  unsigned char *rgb; /* width * height * 3, drawn */
} frame_data;

static void put_u32(unsigned char *b, uint32_t v) {
  b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16); b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v;
}

/* One chunk: length, type, data, and the CRC of type and data (the PNG rule). */
static int png_chunk(FILE *f, const char *type, const unsigned char *data, uint32_t len) {
  unsigned char head[8], tail[4];
  uLong crc = crc32(0L, (const Bytef *)type, 4);
  if (len) crc = crc32(crc, data, len);
  put_u32(head, len);
  memcpy(head + 4, type, 4);
  put_u32(tail, (uint32_t)crc);
  return fwrite(head, 1, 8, f) != 8 || (len && fwrite(data, 1, len, f) != len) || fwrite(tail, 1, 4, f) != 4;
}

static int write_png(FILE *f, const void *data) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const frame_data *d = (const frame_data *)data;
  const int w = d->v->width, h = d->v->height;
  const size_t row = (size_t)w * 3 + 1, raw_len = row * (size_t)h;
  unsigned char ihdr[13], *raw = malloc(raw_len);
  uLongf zlen = compressBound((uLong)raw_len);
  unsigned char *z = malloc(zlen);
  int y, bad = !raw || !z;
  if (!bad) {
    for (y = 0; y < h; y++) { /* each scanline: filter type 0, then its pixels */
      raw[(size_t)y * row] = 0;
      memcpy(raw + (size_t)y * row + 1, d->rgb + (size_t)y * (size_t)w * 3, (size_t)w * 3);
    }
    bad = compress2(z, &zlen, raw, (uLong)raw_len, 6) != Z_OK;
  }
  if (!bad) {
    put_u32(ihdr, (uint32_t)w);
    put_u32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = ihdr[11] = ihdr[12] = 0; /* 8-bit RGB, deflate, no interlace */
    bad = fwrite(sig, 1, 8, f) != 8 || png_chunk(f, "IHDR", ihdr, 13) || png_chunk(f, "IDAT", z, (uint32_t)zlen) ||
          png_chunk(f, "IEND", NULL, 0);
  }
  free(raw);
  free(z);
  return bad ? -1 : 0;
}

/* Pressure to colour: blue at 0, through cyan and yellow, red at pmax and above. */
static void pressure_rgb(double p, double pmax, unsigned char *c) {
  double t = pmax > 0 ? p / pmax : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  if (t < 1.0 / 3) { c[0] = 0; c[1] = (unsigned char)(255 * 3 * t); c[2] = 255; }
  else if (t < 2.0 / 3) { c[0] = (unsigned char)(255 * (3 * t - 1)); c[1] = 255; c[2] = (unsigned char)(255 * (2 - 3 * t)); }
  else { c[0] = 255; c[1] = (unsigned char)(255 * (3 - 3 * t)); c[2] = 0; }
}

typedef struct depth {
  double z;
  int64_t i;
} depth;

static int depth_cmp(const void *a, const void *b) {
  const depth *x = (const depth *)a, *y = (const depth *)b;
  if (x->z != y->z) return x->z < y->z ? 1 : -1;
  return (x->i > y->i) - (x->i < y->i);
}

/* order[0..n) by z descending (far first), ties by index: the same picture on every run. */
static int sort_far_first(const mps_particles *s, int64_t *order, int64_t n) {
  depth *t = malloc(sizeof *t * (size_t)(n > 0 ? n : 1));
  int64_t k;
  if (!t) return -1;
  for (k = 0; k < n; k++) { t[k].z = s->z[order[k]]; t[k].i = order[k]; }
  qsort(t, (size_t)n, sizeof *t, depth_cmp);
  for (k = 0; k < n; k++) order[k] = t[k].i;
  free(t);
  return 0;
}

/* A disc of radius r pixels at (cx, cy), image y down. */
static void disc(unsigned char *rgb, int w, int h, double cx, double cy, double r, const unsigned char *c) {
  int x0 = (int)floor(cx - r), x1 = (int)ceil(cx + r), y0 = (int)floor(cy - r), y1 = (int)ceil(cy + r), x, y;
  for (y = y0 < 0 ? 0 : y0; y <= y1 && y < h; y++)
    for (x = x0 < 0 ? 0 : x0; x <= x1 && x < w; x++) {
      const double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
      if (dx * dx + dy * dy <= r * r) memcpy(rgb + ((size_t)y * (size_t)w + (size_t)x) * 3, c, 3);
    }
}

/* The walls first, then the fluid coloured by pressure (3-D: seen from the front, x to the right
 * and y up, the far fluid drawn first so the near covers it); dummies and ghosts not at all. */
int mps_frame_png(const char *path, const mps_particles *s, const mps_frame_view *v) {
  /* 3-D: the tank's back wall fills the view, so the walls are a light backdrop there */
  static const unsigned char wall2[3] = {110, 110, 110}, wall3[3] = {225, 225, 225};
  const unsigned char *wall = s->z ? wall3 : wall2;
  const double scale = (double)(v->width - 1) / (v->x1 - v->x0), r = v->radius > 0.5 ? v->radius : 0.5;
  frame_data d;
  int64_t i, k, *order = NULL, nf = 0;
  int pass, bad;
  d.s = s;
  d.v = v;
  d.rgb = malloc((size_t)v->width * (size_t)v->height * 3);
  if (!d.rgb) return -1;
  memset(d.rgb, 255, (size_t)v->width * (size_t)v->height * 3);
  if (!(order = malloc(sizeof *order * (size_t)(s->n > 0 ? s->n : 1)))) return free(d.rgb), -1;
  for (i = 0; i < s->n; i++)
    if (s->type[i] == MPS_FLUID) order[nf++] = i;
  if (s->z && sort_far_first(s, order, nf)) return free(order), free(d.rgb), -1;
  for (pass = 0; pass < 2; pass++) {
    int64_t n = pass ? nf : s->n;
    for (k = 0; k < n; k++) {
      unsigned char c[3];
      i = pass ? order[k] : k;
      if (!pass && s->type[i] != MPS_WALL) continue;
      if (pass) pressure_rgb(s->p[i], v->pmax, c);
      disc(d.rgb, v->width, v->height, (s->x[i] - v->x0) * scale, (v->y1 - s->y[i]) * scale, r, pass ? c : wall);
    }
  }
  free(order);
  bad = write_atomic(path, write_png, &d);
  free(d.rgb);
  return bad;
}
