/* SPDX-License-Identifier: BSD-3-Clause */
/* The device description the tuner's model reads (spx_plan_device) and its file: the defaults
 * before calibration, the calibration file's JSON (save, parse, load), its path in the cache
 * directory and the directories on the way, and this process's copy of the file last read or
 * written (tuner.h: spx__calib_get, spx__calib_keep). It calls the context's device queries, the
 * files written whole (io.h) and the JIT cache's directory (jit.h); nothing of the tuner. */
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include "common.h"
#include "tuner.h"
#include "../io.h"
#include "../jit.h"
#include "../loader.h"
#include "../plan.h"

spx_status spx_plan_device_default(spx_context *ctx, spx_plan_device *d) {
  if (!d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_default: NULL argument");
  return spx__plan_device_base(ctx, d, 1);
}

spx_status spx__plan_device_base(spx_context *ctx, spx_plan_device *d, int fresh) {
  spx_device_info info;
  memset(d, 0, sizeof *d);
  if (ctx && spx_context_backend(ctx) == SPX_BACKEND_CUDA) {
    if (fresh) {
      spx_status s = spx_context_device_info(ctx, &info);
      if (s) return s;
    } else { /* the properties read at the context's creation, the free memory as last read */
      info = ctx->info;
      info.free_mem = spx__free_seen(ctx);
    }
    snprintf(d->name, sizeof d->name, "%.63s", info.name);
    /* An SpMV kernel reaches about 80 % of the DDR peak on recent parts. */
    d->bandwidth_gbs = info.peak_bandwidth_gbs > 0 ? 0.8 * info.peak_bandwidth_gbs : 500;
    d->launch_us = 4;
    d->imbalance_weight = 0.5;
    d->x_miss = 0.25;
    d->cache_bytes = info.l2_bytes > 0 ? info.l2_bytes : 4 << 20;
    d->warp = 32;
    d->cusparse_factor = 1.1;
    d->h2d_gbs = 12;
    d->convert_ns_per_byte = 1.0;
    d->convert_ns_per_nnz = 1.0;
    d->jit_ms = 5;
    d->jit_hit_ms = 0.3;
    d->memory_bytes = info.free_mem > 0 ? info.free_mem : info.total_mem;
    d->chain_ns = SPX__PLAN_CHAIN_NS;
    d->sms = info.sm_count;
    return SPX_OK;
  }
  snprintf(d->name, sizeof d->name, "host");
  d->bandwidth_gbs = 10;
  d->launch_us = 0.5;
  d->imbalance_weight = 0;
  d->x_miss = 0.25;
  d->cache_bytes = 32 << 20;
  d->warp = 1;
  d->cusparse_factor = 1;
  d->convert_ns_per_byte = 1.0;
  d->convert_ns_per_nnz = 1.0;
  return SPX_OK;
}

/* Device JSON: one flat object of numbers and the name; fields unknown to this reader are ignored. */
#define SPX__PLAN_DEV_FIELDS(_)                                          \
  _(bandwidth_gbs,       double)                                         \
  _(launch_us,           double)                                         \
  _(imbalance_weight,    double)                                         \
  _(x_miss,              double)                                         \
  _(cache_bytes,         int64_t)                                        \
  _(warp,                int)                                            \
  _(cusparse_factor,     double)                                         \
  _(h2d_gbs,             double)                                         \
  _(convert_ns_per_byte, double)                                         \
  _(convert_ns_per_nnz,  double)                                         \
  _(jit_ms,              double)                                         \
  _(jit_hit_ms,          double)                                         \
  _(cusparse_call_us,    double)                                         \
  _(memory_bytes,        int64_t)                                        \
  _(gather_cusparse,     double)                                         \
  _(gather_default,      double)                                         \
  _(chain_ns,            double)                                         \
  _(sms,                 int)                                            \
  _(atomic_row_ns,       double)                                         \
  _(calibrated,          int)

/* The calibration file's contents as last loaded or saved by this process, keyed by its path. */
static pthread_mutex_t spx__calib_lock = PTHREAD_MUTEX_INITIALIZER;
static spx_plan_device spx__calib;
static char spx__calib_path[1400];
static int spx__calib_have;
void spx__calib_keep(const char *path, const spx_plan_device *d) {
  pthread_mutex_lock(&spx__calib_lock);
  snprintf(spx__calib_path, sizeof spx__calib_path, "%s", path);
  spx__calib = *d;
  spx__calib_have = 1;
  pthread_mutex_unlock(&spx__calib_lock);
}
int spx__calib_get(const char *path, const char *name, spx_plan_device *d) {
  int hit;
  pthread_mutex_lock(&spx__calib_lock);
  hit = spx__calib_have && !strcmp(spx__calib_path, path) && !strcmp(spx__calib.name, name);
  if (hit) *d = spx__calib;
  pthread_mutex_unlock(&spx__calib_lock);
  return hit;
}

spx_status spx_plan_device_save(const char *path, const spx_plan_device *d) {
  FILE *f;
  spx_file *out;
  const char *c;
  spx_status s;
  if (!path || !d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_save: NULL argument");
  pthread_mutex_lock(&spx__calib_lock); /* a file rewritten is read again */
  spx__calib_have = 0;
  pthread_mutex_unlock(&spx__calib_lock);
  /* private: a link planted at path is replaced, never written through */
  if ((s = spx_file_create(path, 1, &out))) return s;
  f = spx_file_stream(out);
  fprintf(f, "{\n  \"name\": \"");
  for (c = d->name; *c; c++) fputc(*c == '"' || *c == '\\' ? '_' : *c, f);
  fprintf(f, "\"");
#define SPX__PD_W(field, type) fprintf(f, ",\n  \"" #field "\": %.9g", (double)d->field);
  SPX__PLAN_DEV_FIELDS(SPX__PD_W)
#undef SPX__PD_W
  {
    int k;
    for (k = 0; k < spx_format_count() && k < SPX_FORMAT_MAX; k++) {
      const char *nm = spx_format_name((spx_format)k);
      if (d->format_factor[k] > 0) fprintf(f, ",\n  \"factor_%s\": %.9g", nm, d->format_factor[k]);
      if (d->format_convert_ns[k] > 0) fprintf(f, ",\n  \"convert_%s\": %.9g", nm, d->format_convert_ns[k]);
      if (d->format_staged_convert_ns[k] > 0) fprintf(f, ",\n  \"staged_convert_%s\": %.9g", nm, d->format_staged_convert_ns[k]);
      if (d->format_factor_block[k] > 0) fprintf(f, ",\n  \"blockfactor_%s\": %.9g", nm, d->format_factor_block[k]);
      if (d->format_gather[k] > 0) fprintf(f, ",\n  \"gather_%s\": %.9g", nm, d->format_gather[k]);
      if (d->format_floor_us[k] > 0) fprintf(f, ",\n  \"floor_%s\": %.9g", nm, d->format_floor_us[k]);
    }
  }
  fprintf(f, "\n}\n");
  return spx_file_commit(out);
}

/* The number after "key": in text, or 0 when absent. */
static int spx__plan_json_num(const char *text, const char *key, double *v) {
  char pat[80];
  const char *p;
  char *end;
  snprintf(pat, sizeof pat, "\"%s\"", key);
  if (!(p = strstr(text, pat))) return 0;
  p += strlen(pat);
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (*p++ != ':') return 0;
  *v = strtod(p, &end);
  return end != p;
}

/* Integer fields: a number outside the type's range (or not finite) is a parse error, not a cast
 * with undefined behaviour. */
static int spx__plan_num_ok(double v, int is_int, int bits) {
  double lim = bits == 32 ? 2147483647.0 : 9.2e18;
  if (v - v != 0) return 0; /* NaN or infinite */
  return !is_int || (v >= -lim && v <= lim);
}

spx_status spx_plan_device_parse(const char *text, const char *what, spx_plan_device *d) {
  const char *p;
  double v;
  int k;
  if (!text || !d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_parse: NULL argument");
  if (!what) what = "tuner file";
  memset(d, 0, sizeof *d);
  if ((p = strstr(text, "\"name\"")) && (p = strchr(p + 6, '"'))) {
    size_t i = 0;
    for (p++; *p && *p != '"' && i + 1 < sizeof d->name; p++) d->name[i++] = *p;
    d->name[i] = 0;
  }
#define SPX__PD_R(field, type)                                                                          \
  if (!spx__plan_json_num(text, #field, &v)) return spx__fail(SPX_PARSE, "%s: no \"%s\"", what, #field); \
  /* (type)0.5 == 0: an integer field (int: 32 bits, int64_t: 64) */                                     \
  if (!spx__plan_num_ok(v, (type)0.5 == 0, sizeof(type) == 4 ? 32 : 64))                                   \
    return spx__fail(SPX_PARSE, "%s: \"%s\" = %g is out of range", what, #field, v);                       \
  d->field = (type)v;
  SPX__PLAN_DEV_FIELDS(SPX__PD_R)
#undef SPX__PD_R
  for (k = 0; k < spx_format_count() && k < SPX_FORMAT_MAX; k++) { /* optional, by format name; finite */
    char key[80];
    snprintf(key, sizeof key, "factor_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_factor[k] = v;
    snprintf(key, sizeof key, "convert_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_convert_ns[k] = v;
    snprintf(key, sizeof key, "staged_convert_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_staged_convert_ns[k] = v;
    snprintf(key, sizeof key, "blockfactor_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_factor_block[k] = v;
    snprintf(key, sizeof key, "gather_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_gather[k] = v;
    snprintf(key, sizeof key, "floor_%.60s", spx_format_name((spx_format)k));
    if (spx__plan_json_num(text, key, &v) && v > 0 && spx__plan_num_ok(v, 0, 64)) d->format_floor_us[k] = v;
  }
  if (!(d->bandwidth_gbs > 0) || d->warp < 1 || d->launch_us < 0)
    return spx__fail(SPX_PARSE, "%s: bandwidth_gbs, warp and launch_us out of range", what);
  return SPX_OK;
}

spx_status spx_plan_device_load(const char *path, spx_plan_device *d) {
  FILE *f;
  char text[16384];
  size_t n;
  if (!path || !d) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_device_load: NULL argument");
  if (!(f = fopen(path, "r"))) return spx__fail(SPX_IO, "%s: cannot open: %s", path, strerror(errno));
  n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  return spx_plan_device_parse(text, path, d);
}

const char *spx_plan_device_path(const char *device_name) {
  static SPX__THREAD_LOCAL char path[1400];
  const char *root = spx_jit_cache_dir(), *c;
  char name[80];
  size_t i = 0;
  if (!root || !device_name) return NULL;
  for (c = device_name; *c && i + 1 < sizeof name; c++)
    name[i++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ? *c : '_';
  name[i] = 0;
  /* The version goes up whenever the fields or what a rate measures change: an older file is then
   * not read (the device is calibrated again), never misread. Its history: docs/performance.md. */
  if (snprintf(path, sizeof path, "%s/tuner/v18/%s.json", root, name) >= (int)sizeof path) return NULL;
  return path;
}

/* mkdir -p of the directory part of path. */
void spx__plan_mkdirs(const char *path) {
  char d[1400];
  size_t i;
  snprintf(d, sizeof d, "%s", path);
  for (i = 1; d[i]; i++)
    if (d[i] == '/') { d[i] = 0; mkdir(d, 0700); d[i] = '/'; }
}
