/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/device.h: device memory, streams and timing in an spx_context (CUDA backend).
 *
 * Memory is plain cuMemAlloc in the context's device PRIMARY context, so pointers are interchangeable
 * with cudaMalloc'd ones of a program on the CUDA runtime (spx_device_free keeps blocks for reuse:
 * see there). Work is queued on the context's stream:
 * the legacy default stream unless the caller hands in its own (spx_context_set_stream). */
#ifndef SPX_DEVICE_H
#define SPX_DEVICE_H

#include "loader.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device address (CUdeviceptr); 0 is "none". */
typedef uint64_t spx_devptr;

/* Allocates bytes on the context's device; SPX_DEVICE_OUT_OF_MEMORY (nothing leaked) when it does
 * not fit; SPX_NOT_AVAILABLE on a host context. *out = 0 on failure. */
spx_status spx_device_alloc(spx_context *ctx, size_t bytes, spx_devptr *out);
/* Frees; 0 is a no-op. The context keeps freed blocks for reuse, as a caching allocator does
 * (SPX_DEVICE_CACHE_MB caps it: default 1/16 of the device's memory, at most 2 GiB; 0 turns it
 * off): a kept block is handed out again only after the work queued on the context's stream before
 * the free has finished, so work on other streams that reads p must be done before the free, as
 * with cudaFreeAsync. An allocation that does not fit empties the cache and tries again. */
void spx_device_free(spx_context *ctx, spx_devptr p);
/* Gives the blocks the context keeps back to the driver (for memory used outside spx). */
spx_status spx_device_trim(spx_context *ctx);
/* Copies, ordered on the context's stream; they return when the copy is complete. */
spx_status spx_device_upload(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes);
spx_status spx_device_download(spx_context *ctx, void *dst, spx_devptr src, size_t bytes);
spx_status spx_device_copy(spx_context *ctx, spx_devptr dst, spx_devptr src, size_t bytes);
/* Fills bytes with one byte value (used to poison outputs in tests). */
spx_status spx_device_memset(spx_context *ctx, spx_devptr dst, unsigned char value, size_t bytes);

/* Work from now on goes to the caller's CUstream / cudaStream_t (NULL: the legacy default
 * stream). spx never destroys a stream it was handed. */
spx_status spx_context_set_stream(spx_context *ctx, void *stream);
void *spx_context_stream(const spx_context *ctx);
spx_status spx_context_synchronize(spx_context *ctx);

/* Launches a kernel a program got from spx's JIT (spx_jit_kernel on a template it added with
 * spx_jit_template_add, spx/jit.h) on the context's stream: asynchronous, as cuLaunchKernel.
 * function is the CUfunction spx_jit_kernel gave for this context's device; grid and block are
 * {x, y, z} (each >= 1); shmem the dynamic shared memory in bytes; args as cuLaunchKernel's
 * kernelParams, one pointer per kernel argument in order (a kernel without arguments may pass NULL).
 * The context's CUDA context is made current for the launch and the caller's restored after.
 * SPX_NOT_AVAILABLE on a host context; SPX_INVALID_ARGUMENT for NULL function, grid or block or a
 * zero dimension; a launch the driver refuses is SPX_CUDA with the driver's reason. Errors of the
 * kernel's run show at the next synchronizing call (spx_context_synchronize, a download, a timer).
 * (spx_kernel_launch, cuda.h, is the type describing an SpMV's launches; this is the call.) */
spx_status spx_context_launch(spx_context *ctx, void *function, const unsigned grid[3], const unsigned block[3],
                              unsigned shmem, void **args);

/* Device-side timing with events on the context's stream. */
typedef struct spx_timer spx_timer;
spx_status spx_timer_create(spx_context *ctx, spx_timer **out);
void spx_timer_destroy(spx_timer *t);
spx_status spx_timer_start(spx_timer *t);
/* Records the stop event, waits for it, returns milliseconds since start. */
spx_status spx_timer_stop(spx_timer *t, double *ms);

#ifdef __cplusplus
}
#endif
#endif /* SPX_DEVICE_H */
