/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of the contexts of spx/loader.h: spx_context create, destroy, info, print. A CUDA
 * context retains the device's primary context (loader_impl.h) and owns its block cache and pinned
 * buffer (device_impl.h), so contexts sit above both: the loader and device memory take a context
 * only as the struct of cuda_types.h and never call up here. */
#include "common.h"
#include "config.h"
#include "cuda_types.h"
#include "../loader.h"

/* SPX_BACKEND in the environment, consulted for AUTO requests: 1 when it is unset or valid. */
static int spx__env_backend_parse(spx_backend *b) {
  const char *e = spx__cfg()->backend;
  *b = SPX_BACKEND_AUTO;
  if (!e || !*e || !strcmp(e, "auto")) return 1;
  if (!strcmp(e, "host")) *b = SPX_BACKEND_HOST;
  else if (!strcmp(e, "cuda")) *b = SPX_BACKEND_CUDA;
  else return 0;
  return 1;
}

static spx_status spx__env_backend(spx_backend *b) {
  if (!spx__env_backend_parse(b))
    return spx__fail(SPX_INVALID_ARGUMENT, "SPX_BACKEND=%s: use auto, host or cuda", spx__cfg()->backend);
  return SPX_OK;
}

static void spx__host_info(spx_device_info *o) {
  memset(o, 0, sizeof *o);
  o->ordinal = -1;
  snprintf(o->name, sizeof o->name, "host");
}

spx_status spx_context_create(const spx_context_options *opt, spx_context **out) {
  spx_context_options o = {SPX_BACKEND_AUTO, 0};
  const spx__cuda_api *cu;
  spx__CUcontext primary = NULL;
  spx_context *c;
  char why[800];
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_context_create: out is NULL");
  *out = NULL;
  if (opt) o = *opt;
  if (o.backend != SPX_BACKEND_AUTO && o.backend != SPX_BACKEND_HOST && o.backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_INVALID_ARGUMENT, "unknown backend %d (use SPX_BACKEND_AUTO, _HOST or _CUDA)",
                     (int)o.backend);
  if (o.device < 0) return spx__fail(SPX_INVALID_ARGUMENT, "negative device ordinal %d", o.device);
  if (o.backend == SPX_BACKEND_AUTO && (s = spx__env_backend(&o.backend))) return s;
  if (o.backend == SPX_BACKEND_AUTO) {
    if (spx_device_count() > 0) {
      o.backend = SPX_BACKEND_CUDA;
    } else {
      spx__no_gpu_reason(why, sizeof why);
      spx__fallback_notice(why);
      o.backend = SPX_BACKEND_HOST;
    }
  }
  if (o.backend == SPX_BACKEND_CUDA && (s = spx__check_ordinal(o.device, why, sizeof why)))
    return s != SPX_NOT_AVAILABLE ? s
                                  : spx__fail(s, "the CUDA backend was requested but is not available: %s", why);
  if (!(c = (spx_context *)spx__calloc(1, sizeof *c))) return SPX_OUT_OF_MEMORY;
  c->backend = o.backend;
  c->device = -1;
  if (o.backend == SPX_BACKEND_HOST) {
    spx__host_info(&c->info);
    *out = c;
    return SPX_OK;
  }
  cu = spx__cuda();
  c->device = o.device;
  if ((s = spx__device_props(cu, o.device, &c->cu_device, &c->info))) goto fail;
  if ((s = spx__cu_check(cu->cuDevicePrimaryCtxRetain(&primary, c->cu_device),
                         "cuDevicePrimaryCtxRetain")))
    goto fail;
  c->cu_ctx = primary;
  spx__h2d_retain(c->device); /* released in spx_context_destroy */
  if ((s = spx__free_mem(cu, c->cu_ctx, &c->info.free_mem)) || (s = spx__dcache_create(c))) goto fail;
  spx__free_seen_set(c, c->info.free_mem);
  *out = c;
  return SPX_OK;
fail:
  spx_context_destroy(c);
  return s;
}

void spx_context_destroy(spx_context *ctx) {
  const spx__cuda_api *cu;
  if (!ctx) return;
  if (ctx->backend == SPX_BACKEND_CUDA && ctx->cu_ctx && (cu = spx__cuda())) {
    spx__dcache_destroy(ctx); /* the blocks it kept */
    spx__h2d_release(ctx);    /* the device's upload pool, when this was its last context */
    cu->cuDevicePrimaryCtxRelease(ctx->cu_device);
  }
  SPX_FREE(ctx);
}

spx_backend spx_context_backend(const spx_context *ctx) {
  return ctx ? ctx->backend : SPX_BACKEND_HOST;
}

const char *spx_backend_name(const spx_context *ctx) {
  spx_backend b = SPX_BACKEND_AUTO;
  if (ctx) return ctx->backend == SPX_BACKEND_CUDA ? "cuda" : "host";
  if (spx__env_backend_parse(&b) && b == SPX_BACKEND_HOST) return "host";
  return spx_device_count() > 0 ? "cuda" : "host";
}

spx_status spx_context_device_info(const spx_context *ctx, spx_device_info *out) {
  spx_status s = SPX_OK;
  if (!ctx || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_context_device_info: NULL argument");
  *out = ctx->info;
  if (ctx->backend == SPX_BACKEND_CUDA && !(s = spx__free_mem(spx__cuda(), ctx->cu_ctx, &out->free_mem))) {
    spx__free_seen_set(ctx, out->free_mem);
    out->free_mem = spx__free_seen(ctx);
  }
  spx__lib_versions(out);
  return s;
}

/* ---- Printing --------------------------------------------------------------------------------- */
static void spx__json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void spx__version_str(spx_lib which, const spx_device_info *in, char *buf, size_t len) {
  if (which == SPX_LIB_CUDA && in->driver_version)
    snprintf(buf, len, "%d.%d", in->driver_version / 1000, in->driver_version % 1000 / 10);
  else if (which == SPX_LIB_NVRTC && (in->nvrtc_major || in->nvrtc_minor))
    snprintf(buf, len, "%d.%d", in->nvrtc_major, in->nvrtc_minor);
  else if (which == SPX_LIB_CUSPARSE && in->cusparse_version)
    snprintf(buf, len, "%d.%d.%d", in->cusparse_version / 1000, in->cusparse_version % 1000 / 100,
             in->cusparse_version % 100);
  else
    buf[0] = 0;
}

spx_status spx_context_print(const spx_context *ctx, FILE *f, int json) {
  spx_device_info in;
  spx_lib_status ls[SPX_LIB_COUNT];
  char why[800] = "", ver[32];
  const char *backend;
  int i, gpu;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (!f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_context_print: f is NULL");
  for (i = 0; i < SPX_LIB_COUNT; i++) spx_lib_status_get((spx_lib)i, &ls[i]);
  if (ctx) {
    spx_status s = spx_context_device_info(ctx, &in);
    if (s) return s;
    backend = spx_backend_name(ctx);
  } else {
    backend = spx_backend_name(NULL);
    if (!strcmp(backend, "cuda")) {
      spx_status s = spx_device_info_get(0, &in);
      if (s) return s;
    } else {
      spx__host_info(&in);
      spx__lib_versions(&in);
    }
  }
  gpu = !strcmp(backend, "cuda");
  if (!gpu) {
    spx__no_gpu_reason(why, sizeof why);
    if (!why[0]) snprintf(why, sizeof why, "the host backend was requested");
  }
  if (json) {
    fprintf(f, "{\"backend\":\"%s\"", backend);
    if (gpu) {
      fprintf(f, ",\"device\":{\"ordinal\":%d,\"name\":", in.ordinal);
      spx__json_str(f, in.name);
      fprintf(f, ",\"arch\":\"sm_%d%d\",\"sm_count\":%d,\"cc_major\":%d,\"cc_minor\":%d,"
                 "\"total_mem\":%lld,\"free_mem\":%lld,\"l2_bytes\":%lld,\"max_threads_per_sm\":%d,"
                 "\"mem_clock_khz\":%.0f,\"mem_bus_width\":%d,\"peak_bandwidth_gbs\":%.1f}",
              in.cc_major, in.cc_minor, in.sm_count, in.cc_major, in.cc_minor, (long long)in.total_mem,
              (long long)in.free_mem, (long long)in.l2_bytes, in.max_threads_per_sm, in.mem_clock_khz,
              in.mem_bus_width, in.peak_bandwidth_gbs);
    } else {
      fputs(",\"reason\":", f);
      spx__json_str(f, why);
    }
    fputs(",\"libs\":{", f);
    for (i = 0; i < SPX_LIB_COUNT; i++) {
      spx__version_str((spx_lib)i, &in, ver, sizeof ver);
      fprintf(f, "%s\"%s\":{\"loaded\":%s,\"version\":", i ? "," : "", spx_lib_name((spx_lib)i),
              ls[i].loaded ? "true" : "false");
      spx__json_str(f, ver);
      fputs(",\"path\":", f);
      spx__json_str(f, ls[i].path);
      fputs(",\"reason\":", f);
      spx__json_str(f, ls[i].reason);
      fputc('}', f);
    }
    fputs("}}\n", f);
  } else {
    fprintf(f, "backend   %s\n", backend);
    if (gpu) {
      fprintf(f, "device    %d: %s, sm_%d%d, %d SMs, %.2f GiB (%.2f GiB free)\n", in.ordinal, in.name,
              in.cc_major, in.cc_minor, in.sm_count, (double)in.total_mem / gib,
              (double)in.free_mem / gib);
      fprintf(f, "memory    %d-bit bus at %.0f MHz: %.0f GB/s peak; L2 %.1f MiB\n", in.mem_bus_width,
              in.mem_clock_khz / 1e3, in.peak_bandwidth_gbs, (double)in.l2_bytes / (1024.0 * 1024.0));
    } else {
      fprintf(f, "why       %s\n", why);
    }
    for (i = 0; i < SPX_LIB_COUNT; i++) {
      static const char *const label[SPX_LIB_COUNT] = {"driver  ", "nvrtc   ", "cusparse"}; /* ORDER LIB */
      spx__version_str((spx_lib)i, &in, ver, sizeof ver);
      if (ls[i].loaded)
        fprintf(f, "%s  %s (%s)\n", label[i], ver[0] ? ver : "?", ls[i].path);
      else
        fprintf(f, "%s  not available: %s\n", label[i], ls[i].reason);
    }
  }
  return ferror(f) ? spx__fail(SPX_IO, "spx_context_print: writing failed") : SPX_OK;
}
