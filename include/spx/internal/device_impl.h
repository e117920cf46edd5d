/* Implementation of spx/device.h. Every entry point pushes the context's CUDA context and pops it
 * on the way out, so the caller's current context is never disturbed. */
#include "common.h"
#include "cuda_types.h"
#include "../device.h"

/* The driver table for a CUDA context, or NULL with SPX_NOT_AVAILABLE recorded. */
static const spx__cuda_api *spx__dev_api(const spx_context *ctx, const char *what) {
  const spx__cuda_api *cu;
  if (!ctx) { spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL context", what); return NULL; }
  if (ctx->backend != SPX_BACKEND_CUDA || !(cu = spx__cuda())) {
    spx__fail(SPX_NOT_AVAILABLE, "%s: the context uses the host backend (no GPU)", what);
    return NULL;
  }
  if (spx__ctx_push(ctx)) return NULL;
  return cu;
}

spx_status spx_device_alloc(spx_context *ctx, size_t bytes, spx_devptr *out) {
  const spx__cuda_api *cu;
  spx__CUdeviceptr p = 0;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_alloc: out is NULL");
  *out = 0;
  if (!(cu = spx__dev_api(ctx, "spx_device_alloc"))) return spx_last_status();
  s = spx__cu_check(cu->cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  spx__ctx_pop(ctx);
  if (s == SPX_DEVICE_OUT_OF_MEMORY)
    return spx__fail(s, "device out of memory allocating %.1f MiB on %s", (double)bytes / 1048576.0,
                     ctx->info.name);
  if (!s) *out = (spx_devptr)p;
  return s;
}

void spx_device_free(spx_context *ctx, spx_devptr p) {
  const spx__cuda_api *cu;
  if (!p || !ctx || ctx->backend != SPX_BACKEND_CUDA || !(cu = spx__cuda()) || spx__ctx_push(ctx)) return;
  (void)cu->cuMemFree((spx__CUdeviceptr)p);
  spx__ctx_pop(ctx);
}

spx_status spx_device_upload(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes) {
  const spx__cuda_api *cu;
  spx_status s;
  if (!bytes) return SPX_OK;
  if (!src || !dst) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_upload: NULL pointer");
  if (!(cu = spx__dev_api(ctx, "spx_device_upload"))) return spx_last_status();
  s = spx__cu_check(cu->cuMemcpyHtoDAsync((spx__CUdeviceptr)dst, src, bytes, ctx->stream), "cuMemcpyHtoDAsync");
  if (!s) s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  spx__ctx_pop(ctx);
  return s;
}

spx_status spx_device_download(spx_context *ctx, void *dst, spx_devptr src, size_t bytes) {
  const spx__cuda_api *cu;
  spx_status s;
  if (!bytes) return SPX_OK;
  if (!src || !dst) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_download: NULL pointer");
  if (!(cu = spx__dev_api(ctx, "spx_device_download"))) return spx_last_status();
  s = spx__cu_check(cu->cuMemcpyDtoHAsync(dst, (spx__CUdeviceptr)src, bytes, ctx->stream), "cuMemcpyDtoHAsync");
  if (!s) s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  spx__ctx_pop(ctx);
  return s;
}

/* Copies and fills run after the stream's queued work (synchronize first) and complete before
 * returning: simple and ordered; hot paths use kernels on the stream instead. */
spx_status spx_device_copy(spx_context *ctx, spx_devptr dst, spx_devptr src, size_t bytes) {
  const spx__cuda_api *cu;
  spx_status s;
  if (!bytes) return SPX_OK;
  if (!src || !dst) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_copy: NULL pointer");
  if (!(cu = spx__dev_api(ctx, "spx_device_copy"))) return spx_last_status();
  s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  if (!s) s = spx__cu_check(cu->cuMemcpyDtoD((spx__CUdeviceptr)dst, (spx__CUdeviceptr)src, bytes), "cuMemcpyDtoD");
  if (!s) s = spx__cu_check(cu->cuCtxSynchronize(), "cuCtxSynchronize");
  spx__ctx_pop(ctx);
  return s;
}

spx_status spx_device_memset(spx_context *ctx, spx_devptr dst, unsigned char value, size_t bytes) {
  const spx__cuda_api *cu;
  spx_status s;
  if (!bytes) return SPX_OK;
  if (!dst) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_memset: NULL pointer");
  if (!(cu = spx__dev_api(ctx, "spx_device_memset"))) return spx_last_status();
  s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  if (!s) s = spx__cu_check(cu->cuMemsetD8((spx__CUdeviceptr)dst, value, bytes), "cuMemsetD8");
  if (!s) s = spx__cu_check(cu->cuCtxSynchronize(), "cuCtxSynchronize");
  spx__ctx_pop(ctx);
  return s;
}

spx_status spx_context_set_stream(spx_context *ctx, void *stream) {
  if (!ctx) return spx__fail(SPX_INVALID_ARGUMENT, "spx_context_set_stream: NULL context");
  if (ctx->backend != SPX_BACKEND_CUDA)
    return spx__fail(SPX_NOT_AVAILABLE, "spx_context_set_stream: the context uses the host backend");
  ctx->stream = (spx__CUstream)stream;
  return SPX_OK;
}

void *spx_context_stream(const spx_context *ctx) { return ctx ? (void *)ctx->stream : NULL; }

spx_status spx_context_synchronize(spx_context *ctx) {
  const spx__cuda_api *cu;
  spx_status s;
  if (ctx && ctx->backend == SPX_BACKEND_HOST) return SPX_OK;
  if (!(cu = spx__dev_api(ctx, "spx_context_synchronize"))) return spx_last_status();
  s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  spx__ctx_pop(ctx);
  return s;
}

struct spx_timer {
  spx_context *ctx;
  spx__CUevent start, stop;
};

spx_status spx_timer_create(spx_context *ctx, spx_timer **out) {
  const spx__cuda_api *cu;
  spx_timer *t;
  spx_status s;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_timer_create: out is NULL");
  *out = NULL;
  if (!(cu = spx__dev_api(ctx, "spx_timer_create"))) return spx_last_status();
  if (!(t = (spx_timer *)spx__calloc(1, sizeof *t))) { spx__ctx_pop(ctx); return SPX_OUT_OF_MEMORY; }
  t->ctx = ctx;
  s = spx__cu_check(cu->cuEventCreate(&t->start, 0), "cuEventCreate");
  if (!s) s = spx__cu_check(cu->cuEventCreate(&t->stop, 0), "cuEventCreate");
  spx__ctx_pop(ctx);
  if (s) { spx_timer_destroy(t); return s; }
  *out = t;
  return SPX_OK;
}

void spx_timer_destroy(spx_timer *t) {
  const spx__cuda_api *cu;
  if (!t) return;
  if ((cu = spx__cuda()) && !spx__ctx_push(t->ctx)) {
    if (t->start) (void)cu->cuEventDestroy(t->start);
    if (t->stop) (void)cu->cuEventDestroy(t->stop);
    spx__ctx_pop(t->ctx);
  }
  SPX_FREE(t);
}

spx_status spx_timer_start(spx_timer *t) {
  const spx__cuda_api *cu;
  spx_status s;
  if (!t) return spx__fail(SPX_INVALID_ARGUMENT, "spx_timer_start: NULL timer");
  if (!(cu = spx__dev_api(t->ctx, "spx_timer_start"))) return spx_last_status();
  s = spx__cu_check(cu->cuEventRecord(t->start, t->ctx->stream), "cuEventRecord");
  spx__ctx_pop(t->ctx);
  return s;
}

spx_status spx_timer_stop(spx_timer *t, double *ms) {
  const spx__cuda_api *cu;
  spx_status s;
  float f = 0;
  if (!t || !ms) return spx__fail(SPX_INVALID_ARGUMENT, "spx_timer_stop: NULL argument");
  if (!(cu = spx__dev_api(t->ctx, "spx_timer_stop"))) return spx_last_status();
  s = spx__cu_check(cu->cuEventRecord(t->stop, t->ctx->stream), "cuEventRecord");
  if (!s) s = spx__cu_check(cu->cuEventSynchronize(t->stop), "cuEventSynchronize");
  if (!s) s = spx__cu_check(cu->cuEventElapsedTime(&f, t->start, t->stop), "cuEventElapsedTime");
  spx__ctx_pop(t->ctx);
  *ms = f;
  return s;
}
