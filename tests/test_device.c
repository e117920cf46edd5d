/* Tests of spx/device.h. On a machine without a GPU only the host-context refusals run; the rest
 * skip and run on the GPU machine. */
#include "spx_test.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_context_refuses),
      cmocka_unit_test(test_round_trip_and_memset),
      cmocka_unit_test(test_out_of_memory_is_a_status),
      cmocka_unit_test(test_timer),
  };
  return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
