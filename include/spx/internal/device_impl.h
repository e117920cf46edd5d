/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/device.h. Every entry point pushes the context's CUDA context and pops it
 * on the way out, so the caller's current context is never disturbed. At the end, the streams,
 * events, async copies and page-locked memory that code scheduling its own work over streams (the
 * stencil) takes from this layer (cuda_types.h), and the link's bandwidth timed with them. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "config.h"
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

/* bytes of page-aligned host memory registered with the driver (the context current), or NULL:
 * registering malloc'd memory pins 16 MiB in about a millisecond where cuMemHostAlloc took 10
 * (the allocator hooks cannot align: free() releases it, in spx__pinned_free). */
static char *spx__pinned_new(const spx__cuda_api *cu, size_t bytes) {
  void *p = NULL;
  if (!cu->cuMemHostRegister || !cu->cuMemHostUnregister || posix_memalign(&p, 4096, bytes)) return NULL;
  if (cu->cuMemHostRegister(p, bytes, 0) != SPX__CUDA_SUCCESS) {
    free(p);
    return NULL;
  }
  return (char *)p;
}

static void spx__pinned_free(const spx__cuda_api *cu, char *p) {
  if (!p) return;
  (void)cu->cuMemHostUnregister(p);
  free(p);
}

/* ---- A cache of freed blocks --------------------------------------------------------------------
 * cuMemAlloc and cuMemFree cost a tenth of a millisecond or more each (a free also waits for the
 * device), and a plan's build allocates and frees a dozen blocks (the staged CSR, a converter's
 * scratch) and a solver's workspace a dozen more: a visible share of a short solve
 * (docs/performance.md, "Allocation and free"). So spx_device_free keeps a block, with an event
 * recorded on the context's stream, and spx_device_alloc hands out the smallest kept block that
 * fits (at most twice the request) once its event has completed: no work queued before the free
 * can still touch it, on any stream. The cache holds at most SPX_DEVICE_CACHE_MB (default: 1/16
 * of the device's memory, at most 2 GiB; 0 turns it off) and 64 blocks, oldest out first; a
 * cuMemAlloc that runs out of memory empties it and tries again, spx_device_trim empties it on
 * demand, and spx_context_device_info counts it free. */
#define SPX__DCACHE_SLOTS 64

typedef struct spx__dblock {
  spx__CUdeviceptr p;
  size_t bytes;
  spx__CUevent ev; /* recorded at the free */
} spx__dblock;

struct spx__dcache {
  pthread_mutex_t mu;
  size_t cap, bytes; /* cap 0: off */
  int n;             /* blocks, oldest first */
  spx__dblock b[SPX__DCACHE_SLOTS];
  long long hits;
  /* The small copies' pinned buffer (spx__pin_copy), made at the first one: state 0 not yet,
   * 1 made, -1 not to be had. */
  pthread_mutex_t pin_mu;
  char *pin;
  spx__CUevent pin_ev[2]; /* a download's halves, double-buffered */
  int pin_state;
  long long pin_copies;
  int64_t free_seen; /* the free memory last read (spx__free_seen_set), without the cache's blocks */
  int free_read;     /* 1 once free_seen holds a reading */
};

static size_t spx__dcache_cap(const spx_context *ctx) {
  const spx__env_num *mb = &spx__cfg()->device_cache_mb;
  size_t cap;
  if (mb->set) return mb->set > 0 && mb->n > 0 ? (size_t)mb->n << 20 : 0; /* a bad value: off, as 0 */
  cap = ctx->info.total_mem > 0 ? (size_t)ctx->info.total_mem / 16 : 0;
  return cap > ((size_t)2 << 30) ? (size_t)2 << 30 : cap;
}

spx_status spx__dcache_create(spx_context *ctx) {
  struct spx__dcache *c;
  if (!(c = (struct spx__dcache *)spx__calloc(1, sizeof *c))) return SPX_OUT_OF_MEMORY;
  if (pthread_mutex_init(&c->mu, NULL)) { free(c); return spx__fail(SPX_INTERNAL, "spx_context: mutex"); }
  if (pthread_mutex_init(&c->pin_mu, NULL)) {
    pthread_mutex_destroy(&c->mu);
    free(c);
    return spx__fail(SPX_INTERNAL, "spx_context: mutex");
  }
  c->cap = spx__dcache_cap(ctx);
  ctx->dcache = c;
  return SPX_OK;
}

/* Frees blocks [0, k) (the context current; the cache locked) and moves the rest down. cuMemFree
 * waits for the device, so a block still in use is not pulled from under its work. */
static void spx__dcache_drop(const spx__cuda_api *cu, struct spx__dcache *c, int k) {
  int i;
  for (i = 0; i < k; i++) {
    (void)cu->cuMemFree(c->b[i].p);
    (void)cu->cuEventDestroy(c->b[i].ev);
    c->bytes -= c->b[i].bytes;
  }
  memmove(c->b, c->b + k, (size_t)(c->n - k) * sizeof c->b[0]);
  c->n -= k;
}

/* Empties the cache (k: blocks freed, may be NULL). */
static spx_status spx__dcache_trim(spx_context *ctx, int *k) {
  struct spx__dcache *c = ctx->dcache;
  const spx__cuda_api *cu = spx__cuda();
  if (k) *k = 0;
  if (!c || !cu) return SPX_OK;
  if (spx__ctx_push(ctx)) return spx_last_status();
  pthread_mutex_lock(&c->mu);
  if (k) *k = c->n;
  spx__dcache_drop(cu, c, c->n);
  pthread_mutex_unlock(&c->mu);
  spx__ctx_pop(ctx);
  return SPX_OK;
}

void spx__dcache_destroy(spx_context *ctx) {
  struct spx__dcache *c = ctx->dcache;
  const spx__cuda_api *cu = spx__cuda();
  if (!c) return;
  (void)spx__dcache_trim(ctx, NULL);
  if (c->pin) {
    if (cu && !spx__ctx_push(ctx)) {
      spx__pinned_free(cu, c->pin);
      if (c->pin_ev[0]) (void)cu->cuEventDestroy(c->pin_ev[0]);
      if (c->pin_ev[1]) (void)cu->cuEventDestroy(c->pin_ev[1]);
      spx__ctx_pop(ctx);
    } else {
      free(c->pin); /* no driver to unregister with */
    }
  }
  spx_clear_error();
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->pin_mu);
  free(c);
  ctx->dcache = NULL;
}

void spx__dcache_stats(const spx_context *ctx, long long *hits, int *blocks, size_t *bytes) {
  struct spx__dcache *c = ctx ? ctx->dcache : NULL;
  *hits = 0; *blocks = 0; *bytes = 0;
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  *hits = c->hits; *blocks = c->n; *bytes = c->bytes;
  pthread_mutex_unlock(&c->mu);
}

/* The smallest completed block of at least bytes and at most twice that (small requests: up to
 * 64 KiB), taken out of the cache; 0 when there is none. The context is current. */
static spx__CUdeviceptr spx__dcache_take(const spx__cuda_api *cu, struct spx__dcache *c, size_t bytes) {
  const size_t most = bytes < ((size_t)32 << 10) ? (size_t)64 << 10 : 2 * bytes;
  spx__CUdeviceptr p = 0;
  int i, best = -1;
  pthread_mutex_lock(&c->mu);
  for (i = 0; i < c->n; i++)
    if (c->b[i].bytes >= bytes && c->b[i].bytes <= most && (best < 0 || c->b[i].bytes < c->b[best].bytes) &&
        cu->cuEventQuery(c->b[i].ev) == SPX__CUDA_SUCCESS)
      best = i;
  if (best >= 0) {
    p = c->b[best].p;
    (void)cu->cuEventDestroy(c->b[best].ev);
    c->bytes -= c->b[best].bytes;
    memmove(c->b + best, c->b + best + 1, (size_t)(c->n - best - 1) * sizeof c->b[0]);
    c->n--;
    c->hits++;
  }
  pthread_mutex_unlock(&c->mu);
  return p;
}

/* Keeps p (the context current); 0 when it is not kept and the caller frees it. */
static int spx__dcache_keep(const spx__cuda_api *cu, const spx_context *ctx, spx__CUdeviceptr p) {
  struct spx__dcache *c = ctx->dcache;
  spx__CUdeviceptr base = 0;
  size_t bytes = 0;
  spx__CUevent ev = NULL;
  if (!c || !c->cap || cu->cuMemGetAddressRange(&base, &bytes, p) != SPX__CUDA_SUCCESS || base != p ||
      bytes > c->cap)
    return 0;
  if (cu->cuEventCreate(&ev, 2 /* CU_EVENT_DISABLE_TIMING */) != SPX__CUDA_SUCCESS) return 0;
  if (cu->cuEventRecord(ev, ctx->stream) != SPX__CUDA_SUCCESS) {
    (void)cu->cuEventDestroy(ev);
    return 0;
  }
  pthread_mutex_lock(&c->mu);
  if (c->n == SPX__DCACHE_SLOTS) spx__dcache_drop(cu, c, 1);
  while (c->n > 0 && c->bytes + bytes > c->cap) spx__dcache_drop(cu, c, 1);
  c->b[c->n].p = p;
  c->b[c->n].bytes = bytes;
  c->b[c->n].ev = ev;
  c->n++;
  c->bytes += bytes;
  pthread_mutex_unlock(&c->mu);
  return 1;
}

spx_status spx_device_alloc(spx_context *ctx, size_t bytes, spx_devptr *out) {
  const spx__cuda_api *cu;
  spx__CUdeviceptr p = 0;
  spx_status s;
  int dropped;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_alloc: out is NULL");
  *out = 0;
  if (!(cu = spx__dev_api(ctx, "spx_device_alloc"))) return spx_last_status();
  if (!bytes) bytes = 1;
  if (ctx->dcache && ctx->dcache->cap && (p = spx__dcache_take(cu, ctx->dcache, bytes))) {
    spx__ctx_pop(ctx);
    *out = (spx_devptr)p;
    return SPX_OK;
  }
  s = spx__cu_check(cu->cuMemAlloc(&p, bytes), "cuMemAlloc");
  spx__ctx_pop(ctx);
  if (s == SPX_DEVICE_OUT_OF_MEMORY && !spx__dcache_trim(ctx, &dropped) && dropped > 0) {
    /* what the cache held is free again */
    if (spx__ctx_push(ctx)) return spx_last_status();
    s = spx__cu_check(cu->cuMemAlloc(&p, bytes), "cuMemAlloc");
    spx__ctx_pop(ctx);
  }
  if (s == SPX_DEVICE_OUT_OF_MEMORY)
    return spx__fail(s, "device out of memory allocating %.1f MiB on %s", (double)bytes / 1048576.0,
                     ctx->info.name);
  if (!s) *out = (spx_devptr)p;
  return s;
}

void spx_device_free(spx_context *ctx, spx_devptr p) {
  const spx__cuda_api *cu;
  if (!p || !ctx || ctx->backend != SPX_BACKEND_CUDA || !(cu = spx__cuda()) || spx__ctx_push(ctx)) return;
  if (!spx__dcache_keep(cu, ctx, (spx__CUdeviceptr)p)) (void)cu->cuMemFree((spx__CUdeviceptr)p);
  spx__ctx_pop(ctx);
}

spx_status spx_device_trim(spx_context *ctx) {
  if (!ctx) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_trim: NULL context");
  return ctx->backend == SPX_BACKEND_CUDA ? spx__dcache_trim(ctx, NULL) : SPX_OK;
}

void spx__free_seen_set(const spx_context *ctx, int64_t raw) {
  struct spx__dcache *c = ctx ? ctx->dcache : NULL;
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  c->free_seen = raw;
  c->free_read = 1;
  pthread_mutex_unlock(&c->mu);
}

int64_t spx__free_seen(const spx_context *ctx) {
  struct spx__dcache *c = ctx ? ctx->dcache : NULL;
  int64_t f = 0;
  if (!c) return 0;
  pthread_mutex_lock(&c->mu);
  if (c->free_read) f = c->free_seen + (int64_t)c->bytes; /* the blocks spx keeps are spx's to use */
  pthread_mutex_unlock(&c->mu);
  return f;
}

size_t spx__dcache_bytes(const spx_context *ctx) {
  long long h;
  int n;
  size_t b;
  spx__dcache_stats(ctx, &h, &n, &b);
  return b;
}

/* ---- Uploads through pinned buffers -------------------------------------------------------------
 * A copy from pageable memory runs through the driver's own staging copy on the calling thread, at
 * a fraction of the link's pinned rate, and for a large matrix that copy is most of a plan's
 * setup. Large uploads instead go through a pool of pinned buffers, one per device while any
 * spx_context on it lives (spx__h2d_release): T worker threads each copy their chunks (k, k + T,
 * ...) into two buffers of their own and queue them on their own stream, so host copies run in
 * parallel and overlap the DMA (rates: docs/performance.md, "The pool's workers"). Large
 * downloads use the same workers the other way: into fresh pages one thread copies out at a
 * fraction of the link's rate. The buffers come from spx__pinned_new. SPX_UPLOAD_THREADS sets T
 * (0: the driver's path only). */
/* Smaller copies: the context's pinned buffer, a piece at a time; from SPX__H2D_MIN the pool wins
 * even after its threads' start-up. */
#define SPX__H2D_MIN ((size_t)2 << 20)
#define SPX__H2D_CHUNK ((size_t)1 << 20)
#define SPX__H2D_MAXW 16

typedef struct spx__h2d_pool {
  int device, nw;  /* ordinal; workers (0: the pool could not be set up, use the driver's path) */
  char *mem;       /* nw x 2 chunks, registered */
  spx__CUstream st[SPX__H2D_MAXW];
  spx__CUevent ev[SPX__H2D_MAXW][2];
  pthread_mutex_t busy; /* one pooled upload at a time per device; others take the driver's path */
} spx__h2d_pool;

static pthread_mutex_t spx__h2d_lock = PTHREAD_MUTEX_INITIALIZER;
static int spx__h2d_users[64]; /* live CUDA spx_contexts by device: the pool lives while there are any */
static atomic_llong spx__h2d_done; /* pooled uploads so far: tests see that the pool served */
static spx__h2d_pool *spx__h2d_pools[64]; /* by device ordinal; made at the first large upload */

/* Workers for pooled uploads (the pool's size): SPX_UPLOAD_THREADS, else three quarters of the
 * online CPUs, at most 12. < 2: none. Past about 12 workers the host's memory bandwidth, not the
 * copies' count, bounds the rate (docs/performance.md, "The pool's workers"). */
static int spx__h2d_workers(void) {
  const spx__env_num *k = &spx__cfg()->upload_threads;
  long long n = k->n;
  if (!k->set) n = SPX__MIN(spx__cpus() * 3 / 4, 12);
  else if (k->set < 0) n = 0; /* a bad value: none, as 0 */
  if (n > SPX__H2D_MAXW) n = SPX__H2D_MAXW;
  return n < 2 ? 0 : (int)n;
}

/* Workers for an upload with host work of its own beside it (the plan's pattern, while a thread
 * samples its columns): SPX_UPLOAD_THREADS when set, else half the CPUs, at most 8, so that the
 * work beside keeps the rest. 0 only when there is no pool (0 to spx__h2d_upload means all). */
int spx__h2d_workers_beside(void) {
  const int n = spx__h2d_workers();
  if (spx__cfg()->upload_threads.set || n == 0) return n;
  return (int)SPX__MAX(1, SPX__MIN((long)n, SPX__MIN(spx__cpus() / 2, 8L)));
}

/* Lets go of what the pool made (its context current): streams, events, the buffers. */
static void spx__h2d_clear(const spx__cuda_api *cu, spx__h2d_pool *pl) {
  int i;
  for (i = 0; i < SPX__H2D_MAXW; i++) {
    if (pl->st[i]) (void)cu->cuStreamDestroy(pl->st[i]);
    if (pl->ev[i][0]) (void)cu->cuEventDestroy(pl->ev[i][0]);
    if (pl->ev[i][1]) (void)cu->cuEventDestroy(pl->ev[i][1]);
  }
  memset(pl->st, 0, sizeof pl->st);
  memset(pl->ev, 0, sizeof pl->ev);
  spx__pinned_free(cu, pl->mem);
  pl->mem = NULL;
  pl->nw = 0;
}

void spx__h2d_retain(int device) {
  if (device < 0 || device >= 64) return;
  pthread_mutex_lock(&spx__h2d_lock);
  spx__h2d_users[device]++;
  pthread_mutex_unlock(&spx__h2d_lock);
}

/* ctx is being destroyed (its primary context still retained): the last user of the device lets
 * its pool go. Uploads run inside calls on a live context, so none is in flight. */
void spx__h2d_release(const spx_context *ctx) {
  const spx__cuda_api *cu = spx__cuda();
  spx__h2d_pool *pl = NULL;
  if (!ctx || ctx->device < 0 || ctx->device >= 64) return;
  pthread_mutex_lock(&spx__h2d_lock);
  if (spx__h2d_users[ctx->device] > 0 && --spx__h2d_users[ctx->device] == 0) {
    pl = spx__h2d_pools[ctx->device];
    spx__h2d_pools[ctx->device] = NULL;
  }
  pthread_mutex_unlock(&spx__h2d_lock);
  if (!pl) return;
  if (cu && pl->mem && !spx__ctx_push(ctx)) {
    spx__h2d_clear(cu, pl);
    spx__ctx_pop(ctx);
  } else {
    spx_clear_error();
  }
  pthread_mutex_destroy(&pl->busy);
  SPX_FREE(pl);
}

/* The device's pool, made on first use (under the pool lock, with ctx current). NULL: none. */
static spx__h2d_pool *spx__h2d_get(const spx__cuda_api *cu, const spx_context *ctx) {
  spx__h2d_pool *pl;
  int i, nw;
  if (ctx->device < 0 || ctx->device >= 64) return NULL;
  pthread_mutex_lock(&spx__h2d_lock);
  if ((pl = spx__h2d_pools[ctx->device]) != NULL || (nw = spx__h2d_workers()) == 0) {
    pthread_mutex_unlock(&spx__h2d_lock);
    return pl && pl->nw ? pl : NULL;
  }
  if ((pl = (spx__h2d_pool *)SPX_CALLOC(1, sizeof *pl)) != NULL) {
    pl->device = ctx->device;
    pthread_mutex_init(&pl->busy, NULL);
    if ((pl->mem = spx__pinned_new(cu, (size_t)nw * 2 * SPX__H2D_CHUNK)) != NULL) {
      int ok = 1;
      for (i = 0; i < nw && ok; i++)
        ok = cu->cuStreamCreate(&pl->st[i], 1 /* non-blocking */) == SPX__CUDA_SUCCESS &&
             cu->cuEventCreate(&pl->ev[i][0], 2 /* no timing */) == SPX__CUDA_SUCCESS &&
             cu->cuEventCreate(&pl->ev[i][1], 2) == SPX__CUDA_SUCCESS;
      if (ok) pl->nw = nw;
    }
    /* a pool that failed stays, with nw 0, so that no later call tries again; what it made is let go */
    if (!pl->nw) spx__h2d_clear(cu, pl);
    spx__h2d_pools[ctx->device] = pl;
  }
  pthread_mutex_unlock(&spx__h2d_lock);
  return pl && pl->nw ? pl : NULL;
}

typedef struct spx__h2d_job {
  const spx_context *ctx;
  spx__h2d_pool *pl;
  int id, nw; /* this worker, of the upload's nw (the chunks k = id, id + nw, ...) */
  spx__CUdeviceptr dst;  /* the device side (the source of a download) */
  const char *src;
  char *down;            /* non-NULL: a download into down, from dst */
  size_t bytes;
  atomic_int *stop; /* set by the first worker that fails: the others stop queueing */
  spx_status s;
  char msg[256];    /* the failure's message: errors are per thread */
} spx__h2d_job;

static void *spx__h2d_worker(void *arg) {
  spx__h2d_job *j = (spx__h2d_job *)arg;
  const spx__cuda_api *cu = spx__cuda();
  spx__h2d_pool *pl = j->pl;
  const size_t nch = (j->bytes + SPX__H2D_CHUNK - 1) / SPX__H2D_CHUNK;
  size_t k;
  int b = 0, used[2] = {0, 0};
  spx_status s;
  if ((s = spx__ctx_push(j->ctx))) goto out;
  if (j->down) { /* chunk k comes down into one buffer while chunk k - nw is copied out of the other */
    size_t prev = nch;
    for (k = (size_t)j->id; k < nch + (size_t)j->nw && !s && !atomic_load(j->stop); k += (size_t)j->nw) {
      if (k < nch) {
        const size_t off = k * SPX__H2D_CHUNK, n = SPX__MIN(SPX__H2D_CHUNK, j->bytes - off);
        char *buf = pl->mem + ((size_t)j->id * 2 + (size_t)b) * SPX__H2D_CHUNK;
        if ((s = spx__cu_check(cu->cuMemcpyDtoHAsync(buf, j->dst + off, n, pl->st[j->id]), "cuMemcpyDtoHAsync")) ||
            (s = spx__cu_check(cu->cuEventRecord(pl->ev[j->id][b], pl->st[j->id]), "cuEventRecord")))
          break;
      }
      if (prev < nch) {
        const size_t off = prev * SPX__H2D_CHUNK, n = SPX__MIN(SPX__H2D_CHUNK, j->bytes - off);
        if ((s = spx__cu_check(cu->cuEventSynchronize(pl->ev[j->id][b ^ 1]), "cuEventSynchronize"))) break;
        memcpy(j->down + off, pl->mem + ((size_t)j->id * 2 + (size_t)(b ^ 1)) * SPX__H2D_CHUNK, n);
      }
      prev = k;
      b ^= 1;
    }
  } else { /* chunk k goes up from one buffer while the other's copy may still be in flight */
    for (k = (size_t)j->id; k < nch && !s && !atomic_load(j->stop); k += (size_t)j->nw) {
      const size_t off = k * SPX__H2D_CHUNK, n = SPX__MIN(SPX__H2D_CHUNK, j->bytes - off);
      char *buf = pl->mem + ((size_t)j->id * 2 + (size_t)b) * SPX__H2D_CHUNK;
      /* the buffer's previous copy must have left it before it is refilled */
      if (used[b] && (s = spx__cu_check(cu->cuEventSynchronize(pl->ev[j->id][b]), "cuEventSynchronize"))) break;
      memcpy(buf, j->src + off, n);
      if ((s = spx__cu_check(cu->cuMemcpyHtoDAsync(j->dst + off, buf, n, pl->st[j->id]), "cuMemcpyHtoDAsync")) ||
          (s = spx__cu_check(cu->cuEventRecord(pl->ev[j->id][b], pl->st[j->id]), "cuEventRecord")))
        break;
      used[b] = 1;
      b ^= 1;
    }
  }
  { /* whatever was queued completes before the pool's buffers can be reused */
    spx_status s2 = spx__cu_check(cu->cuStreamSynchronize(pl->st[j->id]), "cuStreamSynchronize");
    if (!s) s = s2;
  }
  spx__ctx_pop(j->ctx);
out:
  if (s) {
    snprintf(j->msg, sizeof j->msg, "%.250s", spx_last_error());
    atomic_store(j->stop, 1);
  }
  j->s = s;
  return NULL;
}

/* A pooled upload under way: its workers, and the pool's lock it holds until spx__h2d_end. */
struct spx__h2d_async {
  spx__h2d_pool *pl;
  int nw;
  spx__h2d_job job[SPX__H2D_MAXW];
  pthread_t th[SPX__H2D_MAXW];
  int started[SPX__H2D_MAXW];
  atomic_int stop;
};

/* Starts the upload on the pool's workers: worker 0 on this thread when `here` (the call then
 * returns with the copies done but for spx__h2d_end's joins), else all on threads of their own.
 * SPX_OK with *out NULL: the pool is not to be had (small, none, or busy with another thread's
 * upload); the caller uploads the driver's way. The context's stream has been synchronized. */
static spx_status spx__h2d_begin(const spx__cuda_api *cu, const spx_context *ctx, spx_devptr dst, const void *src,
                                 char *down, size_t bytes, int here, int want, spx__h2d_async **out) {
  spx__h2d_async *a;
  spx__h2d_pool *pl;
  int i;
  *out = NULL;
  if (bytes < SPX__H2D_MIN || !(pl = spx__h2d_get(cu, ctx))) return SPX_OK;
  if (!(a = (spx__h2d_async *)SPX_CALLOC(1, sizeof *a))) return SPX_OK; /* the driver's path needs no memory */
  if (pthread_mutex_trylock(&pl->busy)) { SPX_FREE(a); return SPX_OK; } /* another thread's upload holds it */
  a->pl = pl;
  atomic_init(&a->stop, 0);
  a->nw = (int)SPX__MIN((size_t)(want > 0 ? SPX__MIN(want, pl->nw) : pl->nw), (bytes + SPX__H2D_CHUNK - 1) / SPX__H2D_CHUNK);
  { /* the chunks go round-robin, so the upload waits for its slowest worker: leave the cores of
     * running jobs (NVRTC compiles) to them */
    const long free_cpus = spx__cpus() - 1 - (long)spx__jobs_busy();
    if (a->nw > 1 && free_cpus < a->nw) a->nw = (int)SPX__MAX(1L, free_cpus);
  }
  for (i = 0; i < a->nw; i++) {
    spx__h2d_job *j = &a->job[i];
    j->ctx = ctx; j->pl = pl; j->id = i; j->nw = a->nw; j->dst = (spx__CUdeviceptr)dst;
    j->src = (const char *)src; j->down = down; j->bytes = bytes; j->stop = &a->stop;
  }
#if defined(_OPENMP)
  /* An upload the caller waits for runs on OpenMP's threads: right after a parallel loop (the
   * plan's validation, a row-pointer narrowing) they still spin on every core, and threads of the
   * pool's own would wait behind them for scheduler slices. */
  if (here && !omp_in_parallel()) {
#pragma omp parallel for num_threads(a->nw) schedule(static, 1)
    for (i = 0; i < a->nw; i++) spx__h2d_worker(&a->job[i]);
    for (i = 0; i < a->nw; i++) a->started[i] = 2;
    *out = a;
    return SPX_OK;
  }
#endif
  /* a worker that could not start has its chunks copied by spx__h2d_end */
  for (i = here ? 1 : 0; i < a->nw; i++) a->started[i] = pthread_create(&a->th[i], NULL, spx__h2d_worker, &a->job[i]) == 0;
  if (here) { a->started[0] = 2; spx__h2d_worker(&a->job[0]); } /* 2: ran on this thread */
  *out = a;
  return SPX_OK;
}

/* Waits for the upload (NULL: nothing pending) and frees its record: its data is on the device after. */
spx_status spx__h2d_end(spx__h2d_async *a) {
  spx_status s = SPX_OK;
  int i;
  if (!a) return SPX_OK;
  for (i = 0; i < a->nw; i++) {
    if (!a->started[i]) spx__h2d_worker(&a->job[i]);
    else if (a->started[i] == 1) pthread_join(a->th[i], NULL);
  }
  pthread_mutex_unlock(&a->pl->busy);
  for (i = 0; i < a->nw && !s; i++)
    if (a->job[i].s) s = spx__fail(a->job[i].s, "%s", a->job[i].msg);
  if (!s) atomic_fetch_add(&spx__h2d_done, 1);
  SPX_FREE(a);
  return s;
}

long long spx__h2d_count(void) { return atomic_load(&spx__h2d_done); }
size_t spx__h2d_min(void) { return SPX__H2D_MIN; }

/* ---- Copies through a pinned buffer -------------------------------------------------------------
 * A copy from or to pageable memory goes through the driver's own staging, and beside a pooled
 * upload that path crawls: a small download (a converter's width and scan copies, run while the
 * values go up) stalls for milliseconds and slows the pool, and a download into fresh pages runs
 * far below the link's rate. Copies under SPX__H2D_MIN (and larger ones when the pool is busy or
 * missing) instead go through the context's registered buffer of SPX__PIN_BYTES on the context's
 * stream: uploads a piece at a time, downloads in its two halves in turn; when another thread
 * holds it, the driver's way. */
#define SPX__PIN_BYTES ((size_t)1 << 20)

/* The context's pinned buffer, locked (the context current); NULL: use the driver's way. */
static char *spx__pin_get(const spx__cuda_api *cu, const spx_context *ctx) {
  struct spx__dcache *c = ctx->dcache;
  if (!c || pthread_mutex_trylock(&c->pin_mu)) return NULL;
  if (c->pin_state == 0) {
    c->pin_state = -1;
    if ((c->pin = spx__pinned_new(cu, SPX__PIN_BYTES)) != NULL) {
      if (cu->cuEventCreate(&c->pin_ev[0], 2 /* no timing */) == SPX__CUDA_SUCCESS &&
          cu->cuEventCreate(&c->pin_ev[1], 2) == SPX__CUDA_SUCCESS) {
        c->pin_state = 1;
      } else { /* whatever was made goes with it (the destroy path checks each) */
        if (c->pin_ev[0]) (void)cu->cuEventDestroy(c->pin_ev[0]);
        c->pin_ev[0] = NULL;
        spx__pinned_free(cu, c->pin);
        c->pin = NULL;
      }
    }
  }
  if (c->pin_state != 1) { pthread_mutex_unlock(&c->pin_mu); return NULL; }
  return c->pin;
}

/* to_dev: host -> dev, else dev -> host; ordered on the context's stream, done on return. The
 * context is current. SPX_OK with *done 0: the buffer is not to be had, nothing copied. */
static spx_status spx__pin_copy(const spx__cuda_api *cu, const spx_context *ctx, int to_dev, spx__CUdeviceptr dev,
                                char *host, size_t bytes, int *done) {
  struct spx__dcache *c = ctx->dcache;
  char *pin = spx__pin_get(cu, ctx);
  size_t off;
  spx_status s = SPX_OK;
  *done = 0;
  if (!pin) return SPX_OK;
  if (to_dev) {
    for (off = 0; off < bytes && !s; off += SPX__PIN_BYTES) {
      const size_t n = SPX__MIN(SPX__PIN_BYTES, bytes - off);
      memcpy(pin, host + off, n);
      s = spx__cu_check(cu->cuMemcpyHtoDAsync(dev + off, pin, n, ctx->stream), "cuMemcpyHtoDAsync");
      if (!s) s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
    }
  } else {
    /* halves of the buffer in turn: piece k + 1 comes down while piece k is copied out */
    const size_t half = SPX__PIN_BYTES / 2, np = (bytes + half - 1) / half;
    size_t k;
    for (k = 0; k < np && !s; k++) {
      size_t j;
      for (j = k == 0 ? 0 : k + 1; j <= k + 1 && j < np && !s; j++) {
        const size_t o = j * half, n = SPX__MIN(half, bytes - o);
        s = spx__cu_check(cu->cuMemcpyDtoHAsync(pin + (j & 1) * half, dev + o, n, ctx->stream), "cuMemcpyDtoHAsync");
        if (!s) s = spx__cu_check(cu->cuEventRecord(c->pin_ev[j & 1], ctx->stream), "cuEventRecord");
      }
      if (!s) s = spx__cu_check(cu->cuEventSynchronize(c->pin_ev[k & 1]), "cuEventSynchronize");
      if (!s) memcpy(host + k * half, pin + (k & 1) * half, SPX__MIN(half, bytes - k * half));
    }
    if (s) (void)cu->cuStreamSynchronize(ctx->stream); /* nothing of ours left in flight */
  }
  c->pin_copies++;
  pthread_mutex_unlock(&c->pin_mu);
  *done = 1;
  return s;
}

long long spx__pin_count(const spx_context *ctx) {
  struct spx__dcache *c = ctx ? ctx->dcache : NULL;
  long long n;
  if (!c) return 0;
  pthread_mutex_lock(&c->pin_mu);
  n = c->pin_copies;
  pthread_mutex_unlock(&c->pin_mu);
  return n;
}

/* The upload, through the pool where it can be had, else the driver's way; ordered after the
 * context stream's queued work, as a copy on the stream would be. pending NULL: done on return.
 * Else the pool's workers may go on after the return (the plan's values while a converter reads
 * the pattern): *pending, for spx__h2d_end before dst is read or freed, is NULL when it is done. */
spx_status spx__h2d_upload(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes, int want,
                           spx__h2d_async **pending) {
  const spx__cuda_api *cu;
  spx__h2d_async *a = NULL;
  spx_status s = SPX_OK;
  if (pending) *pending = NULL;
  if (!bytes) return SPX_OK;
  if (!src || !dst) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_upload: NULL pointer");
  if (!(cu = spx__dev_api(ctx, "spx_device_upload"))) return spx_last_status();
  if (bytes >= SPX__H2D_MIN && !(s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize")))
    s = spx__h2d_begin(cu, ctx, dst, src, NULL, bytes, !pending, want, &a);
  if (!s && a) {
    if (pending) *pending = a;
    else s = spx__h2d_end(a);
  } else if (!s) {
    int done = 0;
    if (bytes < SPX__H2D_MIN) s = spx__pin_copy(cu, ctx, 1, (spx__CUdeviceptr)dst, (char *)(uintptr_t)src, bytes, &done);
    if (!s && !done) {
      s = spx__cu_check(cu->cuMemcpyHtoDAsync((spx__CUdeviceptr)dst, src, bytes, ctx->stream), "cuMemcpyHtoDAsync");
      if (!s) s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
    }
  }
  spx__ctx_pop(ctx);
  return s;
}

spx_status spx_device_upload(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes) {
  return spx__h2d_upload(ctx, dst, src, bytes, 0, NULL);
}

spx_status spx__h2d_upload_workers(spx_context *ctx, spx_devptr dst, const void *src, size_t bytes, int want) {
  return spx__h2d_upload(ctx, dst, src, bytes, want, NULL);
}

spx_status spx_device_download(spx_context *ctx, void *dst, spx_devptr src, size_t bytes) {
  const spx__cuda_api *cu;
  spx_status s = SPX_OK;
  int done = 0;
  if (!bytes) return SPX_OK;
  if (!src || !dst) return spx__fail(SPX_INVALID_ARGUMENT, "spx_device_download: NULL pointer");
  if (!(cu = spx__dev_api(ctx, "spx_device_download"))) return spx_last_status();
  /* a large one on the pool's workers: copying out of one pinned buffer into fresh pages (page
   * faults) runs far below the link's rate, so several threads copy out at once */
  if (bytes >= SPX__H2D_MIN && !(s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize"))) {
    spx__h2d_async *a = NULL;
    if (!(s = spx__h2d_begin(cu, ctx, (spx_devptr)src, NULL, (char *)dst, bytes, 1, 0, &a)) && a) {
      s = spx__h2d_end(a);
      spx__ctx_pop(ctx);
      return s;
    }
  }
  /* any size: the driver's pageable path is slow into fresh pages (a plan's diagonal) */
  if (!s) s = spx__pin_copy(cu, ctx, 0, (spx__CUdeviceptr)src, (char *)dst, bytes, &done);
  if (!s && !done) {
    s = spx__cu_check(cu->cuMemcpyDtoHAsync(dst, (spx__CUdeviceptr)src, bytes, ctx->stream), "cuMemcpyDtoHAsync");
    if (!s) s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  }
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

spx_status spx_context_launch(spx_context *ctx, void *function, const unsigned grid[3], const unsigned block[3],
                              unsigned shmem, void **args) {
  const spx__cuda_api *cu;
  spx_status s;
  if (!function || !grid || !block)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_context_launch: NULL %s", !function ? "function" : !grid ? "grid" : "block");
  if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2])
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_context_launch: grid %u x %u x %u, block %u x %u x %u: every "
                     "dimension must be at least 1", grid[0], grid[1], grid[2], block[0], block[1], block[2]);
  if (!(cu = spx__dev_api(ctx, "spx_context_launch"))) return spx_last_status();
  s = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)function, grid[0], grid[1], grid[2], block[0], block[1],
                                       block[2], shmem, ctx->stream, args, NULL),
                    "spx_context_launch: cuLaunchKernel");
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

/* ---- Streams, events and page-locked host memory --------------------------------------------------
 * For code that schedules its own copies and kernels over streams of its own (the stencil): the
 * driver's stream, event and host-memory calls stay in this layer. Each runs with the context
 * current (between spx__ctx_push and spx__ctx_pop), inside the caller's run of driver calls. */
spx_status spx__stream_new(const spx__cuda_api *cu, spx__CUstream *st) {
  return spx__cu_check(cu->cuStreamCreate(st, SPX__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}
void spx__stream_free(const spx__cuda_api *cu, spx__CUstream st) { (void)cu->cuStreamDestroy(st); }
void spx__stream_drain(const spx__cuda_api *cu, spx__CUstream st) { (void)cu->cuStreamSynchronize(st); }
spx_status spx__stream_sync(const spx__cuda_api *cu, spx__CUstream st, const char *what) {
  return spx__cu_check(cu->cuStreamSynchronize(st), what);
}
spx_status spx__stream_wait(const spx__cuda_api *cu, spx__CUstream st, spx__CUevent ev) {
  return spx__cu_check(cu->cuStreamWaitEvent(st, ev, 0), "cuStreamWaitEvent");
}

spx_status spx__event_new(const spx__cuda_api *cu, spx__CUevent *ev, int timing) {
  return spx__cu_check(cu->cuEventCreate(ev, timing ? SPX__CU_EVENT_DEFAULT : SPX__CU_EVENT_DISABLE_TIMING),
                       "cuEventCreate");
}
void spx__event_free(const spx__cuda_api *cu, spx__CUevent ev) { (void)cu->cuEventDestroy(ev); }
spx_status spx__event_record(const spx__cuda_api *cu, spx__CUevent ev, spx__CUstream st) {
  return spx__cu_check(cu->cuEventRecord(ev, st), "cuEventRecord");
}
spx_status spx__event_sync(const spx__cuda_api *cu, spx__CUevent ev) {
  return spx__cu_check(cu->cuEventSynchronize(ev), "cuEventSynchronize");
}
int spx__event_done(const spx__cuda_api *cu, spx__CUevent ev) {
  const spx__CUresult r = cu->cuEventQuery(ev);
  if (r == SPX__CUDA_SUCCESS) return 1;
  if (r == SPX__CUDA_ERROR_NOT_READY) return 0;
  (void)spx__cu_check(r, "cuEventQuery");
  return -1;
}
spx_status spx__event_ms(const spx__cuda_api *cu, float *ms, spx__CUevent from, spx__CUevent to) {
  return spx__cu_check(cu->cuEventElapsedTime(ms, from, to), "cuEventElapsedTime");
}

int spx__graph_usable(const spx__cuda_api *cu) {
  return cu && cu->cuStreamBeginCapture && cu->cuStreamEndCapture && cu->cuGraphInstantiateWithFlags && cu->cuGraphLaunch &&
         cu->cuGraphExecDestroy && cu->cuGraphDestroy;
}
/* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only this thread's unsafe calls end the capture */
#define SPX__CU_CAPTURE_THREAD_LOCAL 1
spx_status spx__graph_begin(const spx__cuda_api *cu, spx__CUstream st) {
  return spx__cu_check(cu->cuStreamBeginCapture(st, SPX__CU_CAPTURE_THREAD_LOCAL), "cuStreamBeginCapture");
}
spx_status spx__graph_end(const spx__cuda_api *cu, spx__CUstream st, spx__CUgraphExec *out) {
  spx__CUgraph g = NULL;
  spx_status s = spx__cu_check(cu->cuStreamEndCapture(st, &g), "cuStreamEndCapture");
  *out = NULL;
  if (!s && g) s = spx__cu_check(cu->cuGraphInstantiateWithFlags(out, g, 0), "cuGraphInstantiateWithFlags");
  if (g) (void)cu->cuGraphDestroy(g);
  if (s) *out = NULL;
  return s;
}
spx_status spx__graph_launch(const spx__cuda_api *cu, spx__CUgraphExec e, spx__CUstream st) {
  return spx__cu_check(cu->cuGraphLaunch(e, st), "cuGraphLaunch");
}
void spx__graph_free(const spx__cuda_api *cu, spx__CUgraphExec e) {
  if (e) (void)cu->cuGraphExecDestroy(e);
}

spx_status spx__copy_h2d_async(const spx__cuda_api *cu, spx_devptr dst, const void *src, size_t bytes,
                               spx__CUstream st) {
  return spx__cu_check(cu->cuMemcpyHtoDAsync((spx__CUdeviceptr)dst, src, bytes, st), "cuMemcpyHtoDAsync");
}
spx_status spx__copy_d2h_async(const spx__cuda_api *cu, void *dst, spx_devptr src, size_t bytes, spx__CUstream st) {
  return spx__cu_check(cu->cuMemcpyDtoHAsync(dst, (spx__CUdeviceptr)src, bytes, st), "cuMemcpyDtoHAsync");
}
spx_status spx__copy_d2d_async(const spx__cuda_api *cu, spx_devptr dst, spx_devptr src, size_t bytes,
                               spx__CUstream st) {
  return spx__cu_check(cu->cuMemcpyDtoDAsync((spx__CUdeviceptr)dst, (spx__CUdeviceptr)src, bytes, st),
                       "cuMemcpyDtoDAsync");
}

spx_status spx__host_alloc(const spx__cuda_api *cu, void **out, size_t bytes, const char *what) {
  return spx__cu_check(cu->cuMemHostAlloc(out, bytes, 0), what);
}
void spx__host_free(const spx__cuda_api *cu, void *p) { (void)cu->cuMemFreeHost(p); }

/* ---- The link to the host -----------------------------------------------------------------------
 * Copies between pinned host buffers and the device, each way alone and both at once, timed by
 * events on two streams: what a transfer-bound schedule (the out-of-core stencil) can count on. */
spx_status spx__link_bandwidth(spx_context *ctx, size_t bytes, int reps, double *h2d_gbs, double *d2h_gbs,
                               double *duplex_gbs) {
  const spx__cuda_api *cu = spx__cuda();
  void *h[2] = {NULL, NULL};
  spx_devptr dv[2] = {0, 0};
  spx__CUstream st[2] = {NULL, NULL};
  spx__CUevent ev[4] = {NULL, NULL, NULL, NULL};
  double best[3] = {1e30, 1e30, 1e30}, t0;
  spx_status s = SPX_OK;
  int r, i, pushed = 0;
  if (!h2d_gbs || !d2h_gbs || !duplex_gbs || !bytes || reps < 1 || !ctx)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_stencil_pcie_bandwidth: bad argument");
  *h2d_gbs = *d2h_gbs = *duplex_gbs = 0;
  if (ctx->backend != SPX_BACKEND_CUDA || !cu)
    return spx__fail(SPX_NOT_AVAILABLE, "spx_stencil_pcie_bandwidth: the context uses the host backend (no GPU)");
  for (i = 0; i < 2 && !s; i++) s = spx_device_alloc(ctx, bytes, &dv[i]);
  if (s || (s = spx__ctx_push(ctx))) goto done;
  pushed = 1;
  for (i = 0; i < 2 && !s; i++) s = spx__host_alloc(cu, &h[i], bytes, "cuMemHostAlloc");
  for (i = 0; i < 2 && !s; i++) s = spx__stream_new(cu, &st[i]);
  for (i = 0; i < 4 && !s; i++) s = spx__event_new(cu, &ev[i], 1);
  if (s) goto done;
  memset(h[0], 1, bytes);
  memset(h[1], 2, bytes);
  t0 = spx__now();
  /* r < 0: warm-up, until it has copied for 200 ms: an idle GPU's link comes up to speed only
   * under load (a first timing right after a build reads far below the later ones) */
  for (r = -1; r < reps; r++) {
    float ms[2] = {0, 0};
    int mode;
    if (r == 0 && spx__now() - t0 < 0.2) r = -1;
    for (mode = 0; mode < 3; mode++) { /* 0: up, 1: down, 2: both at once */
      if ((s = spx__event_record(cu, ev[0], st[0])) || (s = spx__stream_wait(cu, st[1], ev[0]))) goto done;
      if (mode != 1 && (s = spx__copy_h2d_async(cu, dv[0], h[0], bytes, st[0]))) goto done;
      if (mode != 0 && (s = spx__copy_d2h_async(cu, h[1], dv[1], bytes, st[1]))) goto done;
      if ((s = spx__event_record(cu, ev[1], st[0])) || (s = spx__event_record(cu, ev[2], st[1])) ||
          (s = spx__event_sync(cu, ev[1])) || (s = spx__event_sync(cu, ev[2])) ||
          (s = spx__event_ms(cu, &ms[0], ev[0], ev[1])) || (s = spx__event_ms(cu, &ms[1], ev[0], ev[2])))
        goto done;
      if (r >= 0) {
        double t = SPX__MAX(ms[0], ms[1]);
        if (t < best[mode]) best[mode] = t;
      }
    }
  }
  *h2d_gbs = (double)bytes / (best[0] * 1e-3) * 1e-9;
  *d2h_gbs = (double)bytes / (best[1] * 1e-3) * 1e-9;
  *duplex_gbs = 2.0 * (double)bytes / (best[2] * 1e-3) * 1e-9;
done:
  if (pushed) {
    for (i = 0; i < 2; i++) if (st[i]) spx__stream_drain(cu, st[i]);
    for (i = 0; i < 4; i++) if (ev[i]) spx__event_free(cu, ev[i]);
    for (i = 0; i < 2; i++) if (st[i]) spx__stream_free(cu, st[i]);
    for (i = 0; i < 2; i++) if (h[i]) spx__host_free(cu, h[i]);
    spx__ctx_pop(ctx);
  }
  for (i = 0; i < 2; i++) spx_device_free(ctx, dv[i]);
  return s;
}
