/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/device.h. On a machine without a GPU only the host-context refusals run; the rest
 * skip and run on the GPU machine. */
#define _POSIX_C_SOURCE 200809L /* setenv, nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "spx_test.h"
#include <spx/internal/cuda_types.h> /* spx__h2d_count */
#include "spx_test_env.h" /* env_put */

static spx_context *gpu_ctx(void) {
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  if (spx_device_count() == 0 || spx_context_create(&o, &ctx) != SPX_OK) return NULL;
  return ctx;
}

static void test_host_context_refuses(void **state) {
  spx_context_options o = {SPX_BACKEND_HOST, 0};
  spx_context *ctx;
  spx_devptr p = 123;
  (void)state;
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, 64, &p), SPX_NOT_AVAILABLE);
  assert_int_equal(p, 0);
  assert_non_null(strstr(spx_last_error(), "host"));
  assert_int_equal(spx_context_set_stream(ctx, NULL), SPX_NOT_AVAILABLE);
  assert_int_equal(spx_context_synchronize(ctx), SPX_OK);
  spx_device_free(ctx, 0);
  assert_int_equal(spx_device_alloc(NULL, 64, &p), SPX_INVALID_ARGUMENT);
  spx_context_destroy(ctx);
}

/* spx_context_launch's refusals: a host context, NULL arguments, a zero dimension. */
static void test_launch_errors(void **state) {
  spx_context_options o = {SPX_BACKEND_HOST, 0};
  spx_context *ctx;
  const unsigned one[3] = {1, 1, 1}, zero[3] = {1, 0, 1};
  int dummy = 0;
  (void)state;
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  assert_int_equal(spx_context_launch(ctx, &dummy, one, one, 0, NULL), SPX_NOT_AVAILABLE);
  assert_non_null(strstr(spx_last_error(), "spx_context_launch"));
  assert_non_null(strstr(spx_last_error(), "host backend"));
  assert_int_equal(spx_context_launch(ctx, NULL, one, one, 0, NULL), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "NULL function"));
  assert_int_equal(spx_context_launch(ctx, &dummy, NULL, one, 0, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_context_launch(ctx, &dummy, one, zero, 0, NULL), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "at least 1"));
  assert_int_equal(spx_context_launch(NULL, &dummy, one, one, 0, NULL), SPX_INVALID_ARGUMENT);
  spx_context_destroy(ctx);
}

/* A program's own template, added to spx's JIT and launched through spx_context_launch on the
 * context's stream (2-D grid, dynamic shared memory), against the host's answer. */
static const char launch_src[] =
    "extern \"C\" __global__ void test_launch_axpy(int n, double a, const double *x, double *y) {\n"
    "  extern __shared__ double tile[];\n"
    "  int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;\n"
    "  tile[threadIdx.x] = i < n ? x[i] : 0.0;\n"
    "  __syncthreads();\n"
    "  if (i < n) y[i] = __dadd_rn(__dmul_rn(a, tile[threadIdx.x]), y[i]);\n"
    "}\n";

static void test_gpu_launch(void **state) {
  spx_context *ctx = gpu_ctx();
  enum { N = 100003 };
  const unsigned block[3] = {128, 1, 1}, grid[3] = {400, (N + 128 * 400 - 1) / (128 * 400), 1};
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *back = malloc(N * sizeof *back), a = 1.5;
  spx_devptr dx = 0, dy = 0;
  void *fn = NULL, *args[4];
  int n = N, i;
  (void)state;
  if (!ctx) { free(x); free(y); free(back); skip(); }
  for (i = 0; i < N; i++) { x[i] = (double)rand() / RAND_MAX - 0.5; y[i] = (double)rand() / RAND_MAX; }
  assert_int_equal(spx_jit_template_add("test_launch", launch_src), SPX_OK);
  assert_int_equal(spx_jit_kernel(ctx, "test_launch", "test_launch_axpy", 0, NULL, &fn), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, N * sizeof(double), &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, N * sizeof(double), &dy), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, dx, x, N * sizeof(double)), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, dy, y, N * sizeof(double)), SPX_OK);
  args[0] = &n; args[1] = &a; args[2] = &dx; args[3] = &dy;
  assert_int_equal(spx_context_launch(ctx, fn, grid, block, 128 * sizeof(double), args), SPX_OK);
  assert_int_equal(spx_context_synchronize(ctx), SPX_OK);
  assert_int_equal(spx_device_download(ctx, back, dy, N * sizeof(double)), SPX_OK);
  for (i = 0; i < N; i++) assert_true(back[i] == a * x[i] + y[i]);
  /* the driver's refusal is a status with a sentence: more threads per block than any GPU has */
  {
    const unsigned big[3] = {4096, 1, 1};
    assert_int_equal(spx_context_launch(ctx, fn, grid, big, 0, args), SPX_CUDA);
    assert_non_null(strstr(spx_last_error(), "spx_context_launch"));
  }
  spx_device_free(ctx, dx);
  spx_device_free(ctx, dy);
  free(x); free(y); free(back);
  spx_context_destroy(ctx);
}

static void test_round_trip_and_memset(void **state) {
  enum { N = 300001 };
  spx_context *ctx = gpu_ctx();
  double *h, *back;
  unsigned char bytes[64];
  spx_devptr a = 0, b = 0;
  int64_t i;
  (void)state;
  if (!ctx) skip();
  h = malloc(N * sizeof *h);
  back = malloc(N * sizeof *back);
  spx_test_fill(h, N);
  assert_int_equal(spx_device_alloc(ctx, N * sizeof *h, &a), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, N * sizeof *h, &b), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, a, h, N * sizeof *h), SPX_OK);
  assert_int_equal(spx_device_memset(ctx, b, 0xff, N * sizeof *h), SPX_OK);
  assert_int_equal(spx_device_download(ctx, back, b, N * sizeof *h), SPX_OK);
  for (i = 0; i < N; i++) assert_true(back[i] != back[i]); /* 0xff.. is a NaN */
  assert_int_equal(spx_device_copy(ctx, b, a, N * sizeof *h), SPX_OK);
  assert_int_equal(spx_device_download(ctx, back, b, N * sizeof *h), SPX_OK);
  assert_memory_equal(back, h, N * sizeof *h);
  assert_int_equal(spx_device_memset(ctx, a, 0x5a, sizeof bytes), SPX_OK);
  assert_int_equal(spx_device_download(ctx, bytes, a, sizeof bytes), SPX_OK);
  for (i = 0; i < (int64_t)sizeof bytes; i++) assert_int_equal(bytes[i], 0x5a);
  spx_device_free(ctx, a);
  spx_device_free(ctx, b);
  free(h); free(back);
  spx_context_destroy(ctx);
}

static void test_out_of_memory_is_a_status(void **state) {
  spx_context *ctx = gpu_ctx();
  spx_devptr p = 1;
  (void)state;
  if (!ctx) skip();
  assert_int_equal(spx_device_alloc(ctx, (size_t)1 << 50, &p), SPX_DEVICE_OUT_OF_MEMORY);
  assert_int_equal(p, 0);
  assert_non_null(strstr(spx_last_error(), "out of memory"));
  /* Still usable afterwards. */
  assert_int_equal(spx_device_alloc(ctx, 1024, &p), SPX_OK);
  spx_device_free(ctx, p);
  spx_context_destroy(ctx);
}

/* Stands in for work still queued: the context's stream waits in this host function until `go`. */
static atomic_int hold_go;
static void hold_stream(void *data) {
  const struct timespec t = {0, 100000};
  (void)data;
  while (!atomic_load(&hold_go)) nanosleep(&t, NULL);
}

static void test_block_cache(void **state) {
  spx_context *ctx, *off;
  spx_devptr a = 0, b = 0, c = 0, d = 0, huge = 1;
  long long hits, h0;
  int blocks;
  size_t bytes;
  spx_device_info i0, i1;
  (void)state;
  env_put("SPX_DEVICE_CACHE_MB", NULL);
  if (!(ctx = gpu_ctx())) skip();
  spx__dcache_stats(ctx, &h0, &blocks, &bytes);
  assert_int_equal(h0, 0);
  assert_int_equal(blocks, 0);
  /* a freed block comes back for a request it fits (at most twice its size) ... */
  assert_int_equal(spx_device_alloc(ctx, 3 << 20, &a), SPX_OK);
  assert_int_equal(spx_context_device_info(ctx, &i0), SPX_OK);
  spx_device_free(ctx, a);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 1);
  assert_true(bytes >= (size_t)3 << 20);
  assert_int_equal(spx_context_device_info(ctx, &i1), SPX_OK);
  assert_true(i1.free_mem >= i0.free_mem + (3 << 20) - (64 << 10)); /* kept counts as free */
  assert_int_equal(spx_context_synchronize(ctx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (2 << 20) + 1, &b), SPX_OK);
  assert_true(b == a);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(hits, h0 + 1);
  assert_int_equal(blocks, 0);
  /* ... not for one it would waste more than half of, nor one it is too small for */
  spx_device_free(ctx, b);
  assert_int_equal(spx_context_synchronize(ctx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, 1 << 20, &c), SPX_OK);
  assert_true(c != b);
  assert_int_equal(spx_device_alloc(ctx, 4 << 20, &d), SPX_OK);
  assert_true(d != b);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(hits, h0 + 1);
  assert_int_equal(blocks, 1);
  spx_device_free(ctx, c);
  spx_device_free(ctx, d);
  /* a block whose free is still behind queued work is not handed out until that work is done */
  if (spx__cuda()->cuLaunchHostFunc) {
    spx_devptr e = 0, f = 0, g = 0;
    assert_int_equal(spx_device_trim(ctx), SPX_OK);
    assert_int_equal(spx_device_alloc(ctx, 5 << 20, &e), SPX_OK);
    atomic_store(&hold_go, 0);
    assert_int_equal(spx__ctx_push(ctx), SPX_OK);
    assert_int_equal(spx__cuda()->cuLaunchHostFunc((spx__CUstream)spx_context_stream(ctx), hold_stream, NULL), 0);
    spx__ctx_pop(ctx);
    spx_device_free(ctx, e);
    assert_int_equal(spx_device_alloc(ctx, 5 << 20, &f), SPX_OK);
    assert_true(f != e);
    atomic_store(&hold_go, 1);
    assert_int_equal(spx_context_synchronize(ctx), SPX_OK);
    assert_int_equal(spx_device_alloc(ctx, 5 << 20, &g), SPX_OK);
    assert_true(g == e);
    spx_device_free(ctx, f);
    spx_device_free(ctx, g);
  }
  /* trim gives everything back; an allocation that does not fit empties the cache first */
  assert_int_equal(spx_device_trim(ctx), SPX_OK);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 0);
  assert_int_equal(bytes, 0);
  assert_int_equal(spx_device_alloc(ctx, 1 << 20, &a), SPX_OK);
  spx_device_free(ctx, a);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 1);
  assert_int_equal(spx_device_alloc(ctx, (size_t)1 << 50, &huge), SPX_DEVICE_OUT_OF_MEMORY);
  assert_int_equal(huge, 0);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 0);
  spx_context_destroy(ctx);
  /* SPX_DEVICE_CACHE_MB caps it (a block over the cap is freed at once), 0 turns it off */
  env_put("SPX_DEVICE_CACHE_MB", "4");
  ctx = gpu_ctx();
  assert_non_null(ctx);
  assert_int_equal(spx_device_alloc(ctx, 5 << 20, &a), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, 3 << 20, &b), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, 3 << 20, &c), SPX_OK);
  spx_device_free(ctx, a);
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 0);
  spx_device_free(ctx, b);
  spx_device_free(ctx, c); /* b goes, oldest first */
  spx__dcache_stats(ctx, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 1);
  assert_true(bytes <= (size_t)4 << 20);
  spx_context_destroy(ctx);
  env_put("SPX_DEVICE_CACHE_MB", "0");
  off = gpu_ctx();
  assert_non_null(off);
  assert_int_equal(spx_device_alloc(off, 1 << 20, &a), SPX_OK);
  spx_device_free(off, a);
  spx__dcache_stats(off, &hits, &blocks, &bytes);
  assert_int_equal(blocks, 0);
  assert_int_equal(hits, 0);
  spx_context_destroy(off);
  env_put("SPX_DEVICE_CACHE_MB", NULL);
}

/* Uploads under the pooled size and every download go through the context's pinned buffer, in
 * pieces (downloads double-buffered): every size around a piece, from a host offset that is not
 * aligned, arrives whole, and nothing past it is written. */
static void test_small_copies_pinned(void **state) {
  const size_t m = spx__h2d_min();
  const size_t sizes[] = {1, 8, 4096, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, m / 2 + 3, m - 16};
  spx_context *ctx = gpu_ctx();
  unsigned char *h, *back;
  spx_devptr d = 0;
  size_t k, i;
  long long n0;
  (void)state;
  if (!ctx) skip();
  h = malloc((8 << 20) + 1);
  back = malloc((8 << 20) + 16);
  for (i = 0; i < (8 << 20) + 1; i++) h[i] = (unsigned char)(i * 2654435761u >> 13);
  assert_int_equal(spx_device_alloc(ctx, (8 << 20) + 16, &d), SPX_OK);
  n0 = spx__pin_count(ctx);
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const size_t n = sizes[k];
    assert_int_equal(spx_device_memset(ctx, d, 0xab, n + 16), SPX_OK);
    assert_int_equal(spx_device_upload(ctx, d, h + 1, n), SPX_OK);
    memset(back, 0, n + 16);
    assert_int_equal(spx_device_download(ctx, back + 1, d, n + 15), SPX_OK);
    assert_memory_equal(back + 1, h + 1, n);
    for (i = n; i < n + 15; i++) assert_int_equal(back[1 + i], 0xab);
  }
  /* two copies each (upload, download) per size, all pinned on a context no other thread uses */
  assert_int_equal(spx__pin_count(ctx) - n0, 2 * (long long)(sizeof sizes / sizeof sizes[0]));
  assert_int_equal(spx_device_download(ctx, NULL, d, 8), SPX_INVALID_ARGUMENT);
  spx_device_free(ctx, d);
  free(h); free(back);
  spx_context_destroy(ctx);
}

static void test_timer(void **state) {
  spx_context *ctx = gpu_ctx();
  spx_timer *t;
  spx_devptr p;
  double ms = -1;
  (void)state;
  if (!ctx) skip();
  assert_int_equal(spx_timer_create(ctx, &t), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, (size_t)256 << 20, &p), SPX_OK);
  assert_int_equal(spx_timer_start(t), SPX_OK);
  assert_int_equal(spx_device_memset(ctx, p, 1, (size_t)256 << 20), SPX_OK);
  assert_int_equal(spx_timer_stop(t, &ms), SPX_OK);
  assert_true(ms > 0 && ms < 10000);
  spx_device_free(ctx, p);
  spx_timer_destroy(t);
  spx_context_destroy(ctx);
}

/* Large uploads go through the pinned pool in chunks spread over worker threads: sizes that are not
 * a chunk multiple, an unaligned source, and two threads uploading at once (one takes the pool,
 * the other the driver's path) all land byte for byte. */
typedef struct up_job {
  spx_context *ctx;
  const unsigned char *src;
  size_t bytes;
  spx_devptr dst;
  spx_status s;
} up_job;

static void *up_thread(void *arg) {
  up_job *j = (up_job *)arg;
  j->s = spx_device_upload(j->ctx, j->dst, j->src, j->bytes);
  return NULL;
}

static void test_large_uploads(void **state) {
  const size_t m = spx__h2d_min();
  const size_t sizes[] = {m - 1, m, m + 12345, ((size_t)50 << 20) + 7};
  const size_t maxb = ((size_t)50 << 20) + 64;
  spx_context *ctx = gpu_ctx();
  unsigned char *h, *back;
  spx_devptr d = 0, d2 = 0;
  long long before;
  size_t i, k;
  (void)state;
  if (!ctx) skip();
  h = malloc(maxb);
  back = malloc(maxb);
  assert_non_null(h); assert_non_null(back);
  for (i = 0; i < maxb; i++) h[i] = (unsigned char)(i * 2654435761u >> 13);
  assert_int_equal(spx_device_alloc(ctx, maxb, &d), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, maxb, &d2), SPX_OK);
  before = spx__h2d_count();
  for (k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    const unsigned char *src = h + (k & 1) * 3; /* odd source offsets too */
    assert_int_equal(spx_device_memset(ctx, d, 0, maxb), SPX_OK);
    assert_int_equal(spx_device_upload(ctx, d, src, sizes[k]), SPX_OK);
    assert_int_equal(spx_device_download(ctx, back, d, sizes[k] + 1), SPX_OK);
    assert_memory_equal(back, src, sizes[k]);
    assert_int_equal(back[sizes[k]], 0); /* nothing written past the end */
    /* a large download comes down on the pool's workers too: to an odd address, and nothing
     * written before it or past its end */
    memset(back, 0x5a, maxb);
    assert_int_equal(spx_device_download(ctx, back + 3, d, sizes[k]), SPX_OK);
    assert_memory_equal(back + 3, src, sizes[k]);
    assert_int_equal(back[2], 0x5a);
    assert_int_equal(back[3 + sizes[k]], 0x5a);
  }
  /* on fewer workers than the pool has (a plan's pattern beside its column sample): every chunk
   * still goes up, whichever worker's it is */
  for (k = 1; k <= 3; k++) {
    const size_t n = ((size_t)23 << 20) + 17;
    assert_int_equal(spx_device_memset(ctx, d, 0, maxb), SPX_OK);
    assert_int_equal(spx__h2d_upload_workers(ctx, d, h + k, n, (int)k * 2), SPX_OK);
    assert_int_equal(spx_device_download(ctx, back, d, n + 1), SPX_OK);
    assert_memory_equal(back, h + k, n);
    assert_int_equal(back[n], 0);
  }
  /* the pool served the three uploads of >= spx__h2d_min(), unless it is switched off or the host is small */
  if (!getenv("SPX_UPLOAD_THREADS") && sysconf(_SC_NPROCESSORS_ONLN) >= 4)
    assert_true(spx__h2d_count() >= before + 3);
  {
    pthread_t th;
    up_job a = {ctx, h + 1, (size_t)40 << 20, d, SPX_OK}, b = {ctx, h + 5, (size_t)40 << 20, d2, SPX_OK};
    assert_int_equal(pthread_create(&th, NULL, up_thread, &a), 0);
    up_thread(&b);
    pthread_join(th, NULL);
    assert_int_equal(a.s, SPX_OK);
    assert_int_equal(b.s, SPX_OK);
    assert_int_equal(spx_device_download(ctx, back, d, a.bytes), SPX_OK);
    assert_memory_equal(back, a.src, a.bytes);
    assert_int_equal(spx_device_download(ctx, back, d2, b.bytes), SPX_OK);
    assert_memory_equal(back, b.src, b.bytes);
  }
  spx_device_free(ctx, d);
  spx_device_free(ctx, d2);
  free(h); free(back);
  spx_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_context_refuses),
      cmocka_unit_test(test_launch_errors),
      cmocka_unit_test(test_gpu_launch),
      cmocka_unit_test(test_round_trip_and_memset),
      cmocka_unit_test(test_out_of_memory_is_a_status),
      cmocka_unit_test(test_block_cache),
      cmocka_unit_test(test_small_copies_pinned),
      cmocka_unit_test(test_timer),
      cmocka_unit_test(test_large_uploads),
  };
  return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
