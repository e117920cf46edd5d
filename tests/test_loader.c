/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/loader.h: loading CUDA at run time, the host fallback, NVRTC without a GPU, and
 * (when a GPU is present) contexts, memory, a JIT-compiled kernel and cuSPARSE through the tables.
 * The GPU tests skip without a device; the no-GPU tests skip on a machine that has one. */
#define _POSIX_C_SOURCE 200809L /* dup, dup2, fileno, setenv, pthread */
#include <pthread.h>
#include <unistd.h>
#include "spx_test.h"
#include "spx_test_capture.h"
#include <spx/internal/cuda_types.h>
#include <spx/internal/config.h> /* spx__config_reload */

/* Sanitizer settings this program needs; ASAN_OPTIONS in the environment still overrides them.
 * intercept_tls_get_addr=0: NVRTC and cuSPARSE use dynamic TLS, and the sanitizer runtimes of LLVM
 *   <= 16 and GCC <= 13 mistake some of those blocks for a glibc 2.19 TLS header, so LeakSanitizer's
 *   tracer crashes at exit (google/sanitizers#1322).
 * protect_shadow_gap=0: the CUDA driver maps memory where ASan would reserve its shadow gap. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0:protect_shadow_gap=0"; }

/* ---- helpers ------------------------------------------------------------------------------------ */
/* Saved environment variable, restored by env_restore. */
typedef struct saved_env { const char *name; char *value; int was_set; } saved_env;

static saved_env env_set(const char *name, const char *value) {
  saved_env s;
  const char *old = getenv(name);
  s.name = name;
  s.was_set = old != NULL;
  s.value = old ? strdup(old) : NULL;
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  spx__config_reload(); /* spx reads its environment once */
  return s;
}

static void env_restore(saved_env *s) {
  if (s->was_set) setenv(s->name, s->value, 1);
  else unsetenv(s->name);
  spx__config_reload();
  free(s->value);
  s->value = NULL;
}

/* Reads a FILE written by spx_context_print back as a string. */
static char *print_to_string(const spx_context *ctx, int json) {
  FILE *t = tmpfile();
  long n;
  char *buf;
  assert_non_null(t);
  assert_int_equal(spx_context_print(ctx, t, json), SPX_OK);
  n = ftell(t);
  rewind(t);
  buf = (char *)calloc((size_t)n + 1, 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, t), (size_t)n);
  fclose(t);
  return buf;
}

static const char *stub_driver(void) {
  static char path[600];
  const char *home = getenv("CUDA_HOME");
  snprintf(path, sizeof path, "%s/lib64/stubs/libcuda.so", home && *home ? home : "/usr/local/cuda");
  return access(path, R_OK) == 0 ? path : NULL;
}

static const char twice_src[] =
    "extern \"C\" __global__ void twice(const double *x, double *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = 2.0 * x[i];\n"
    "}\n";

/* ---- the tables ----------------------------------------------------------------------------- */
typedef struct sym_name { const char *member, *exported; int required; } sym_name;
#define ROW(req, ret, member, exported, params) {#member, #exported, req},
static const sym_name all_syms[] = {
    SPX__CUDA_SYMBOLS(ROW) SPX__NVRTC_SYMBOLS(ROW) SPX__CUSPARSE_SYMBOLS(ROW)};
#undef ROW

static void test_symbol_tables(void **state) {
  const int n = (int)(sizeof all_syms / sizeof all_syms[0]);
  int i, j;
  (void)state;
  /* The enums behind these counts would not compile with a name listed twice. */
  assert_int_equal(n, SPX__CUDA_SYMBOL_COUNT + SPX__NVRTC_SYMBOL_COUNT + SPX__CUSPARSE_SYMBOL_COUNT);
  assert_int_equal(SPX__CUDA_SYMBOL_COUNT, SPX__CUDA_EXPORT_COUNT);
  assert_int_equal(SPX__NVRTC_SYMBOL_COUNT, SPX__NVRTC_EXPORT_COUNT);
  assert_int_equal(SPX__CUSPARSE_SYMBOL_COUNT, SPX__CUSPARSE_EXPORT_COUNT);
  assert_true(SPX__CUDA_SYMBOL_COUNT >= 40);
  assert_int_equal(sizeof(spx__cuda_api), SPX__CUDA_SYMBOL_COUNT * sizeof(void *));
  for (i = 0; i < n; i++) {
    size_t m = strlen(all_syms[i].member);
    /* The export is the member name itself or its _v2 version. */
    assert_memory_equal(all_syms[i].exported, all_syms[i].member, m);
    assert_true(!strcmp(all_syms[i].exported + m, "") || !strcmp(all_syms[i].exported + m, "_v2"));
    for (j = 0; j < i; j++) {
      assert_string_not_equal(all_syms[i].member, all_syms[j].member);
      assert_string_not_equal(all_syms[i].exported, all_syms[j].exported);
    }
  }
  /* The versions the brief asks for are looked up by their versioned names. */
  for (i = 0; i < n; i++) {
    if (!strcmp(all_syms[i].member, "cuMemAlloc")) assert_string_equal(all_syms[i].exported, "cuMemAlloc_v2");
    if (!strcmp(all_syms[i].member, "cuDevicePrimaryCtxRelease"))
      assert_string_equal(all_syms[i].exported, "cuDevicePrimaryCtxRelease_v2");
    if (!strcmp(all_syms[i].member, "cusparseSpMV_preprocess")) assert_int_equal(all_syms[i].required, 0);
  }
}

/* ---- without a GPU -------------------------------------------------------------------------- */
static void test_no_gpu_host_backend(void **state) {
  spx_context *ctx = (spx_context *)1;
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_lib_status ls;
  spx_device_info info;
  (void)state;
  if (spx_device_count() > 0) skip();
  spx_lib_status_get(SPX_LIB_CUDA, &ls);
  assert_int_equal(ls.loaded, 0);
  assert_true(ls.reason[0] != 0);
  assert_string_equal(spx_backend_name(NULL), "host");
  assert_int_equal(spx_device_count(), 0);
  assert_null(spx__cuda());
  assert_int_equal(spx_cuda_load(), SPX_NOT_AVAILABLE);
  assert_non_null(strstr(spx_last_error(), "driver"));
  assert_int_equal(spx_context_create(&o, &ctx), SPX_NOT_AVAILABLE);
  assert_null(ctx);
  assert_non_null(strstr(spx_last_error(), "CUDA backend was requested"));
  if (!ls.path[0]) assert_non_null(strstr(spx_last_error(), "no CUDA driver"));
  assert_int_equal(spx_device_info_get(0, &info), SPX_NOT_AVAILABLE);
  /* An explicit host context works everywhere. */
  o.backend = SPX_BACKEND_HOST;
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  assert_int_equal(spx_context_backend(ctx), SPX_BACKEND_HOST);
  assert_string_equal(spx_backend_name(ctx), "host");
  assert_int_equal(spx_context_device_info(ctx, &info), SPX_OK);
  assert_int_equal(info.ordinal, -1);
  assert_int_equal(spx__ctx_push(ctx), SPX_INVALID_ARGUMENT);
  spx__ctx_pop(ctx); /* a no-op on the host */
  spx_context_destroy(ctx);
}

static void test_fallback_notice_once(void **state) {
  saved_env quiet, backend;
  capture cap;
  char *err;
  spx_context *c[3];
  int i;
  (void)state;
  if (spx_device_count() > 0) skip();
  quiet = env_set("SPX_QUIET", NULL);
  backend = env_set("SPX_BACKEND", NULL);
  spx__loader_reset();
  cap = cap_begin(0);
  for (i = 0; i < 3; i++) assert_int_equal(spx_context_create(NULL, &c[i]), SPX_OK);
  err = cap_end(&cap, 0);
  for (i = 0; i < 3; i++) {
    assert_int_equal(spx_context_backend(c[i]), SPX_BACKEND_HOST);
    spx_context_destroy(c[i]);
  }
  assert_int_equal(count_substr(err, "using the host backend"), 1);
  assert_non_null(strstr(err, "spx: "));
  assert_int_equal(spx__loader_notice_count(), 1);
  free(err);
  /* SPX_QUIET silences it, yet it still counts once. */
  env_restore(&quiet);
  quiet = env_set("SPX_QUIET", "1");
  spx__loader_reset();
  cap = cap_begin(0);
  assert_int_equal(spx_context_create(NULL, &c[0]), SPX_OK);
  err = cap_end(&cap, 0);
  spx_context_destroy(c[0]);
  assert_string_equal(err, "");
  assert_int_equal(spx__loader_notice_count(), 1);
  free(err);
  env_restore(&quiet);
  env_restore(&backend);
  spx__loader_reset();
}

/* A driver named by SPX_LIBCUDA that does not exist: a clean failure naming the path, and an AUTO
 * context that falls back to the host (on any machine, GPU or not). */
static void test_env_override_missing(void **state) {
  saved_env cuda = env_set("SPX_LIBCUDA", "/nonexistent/libcuda.so.1");
  saved_env nvrtc = env_set("SPX_LIBNVRTC", "/nonexistent/libnvrtc.so");
  saved_env quiet = env_set("SPX_QUIET", "1");
  spx_lib_status ls;
  spx_context *ctx;
  int major = -1, minor = -1;
  (void)state;
  spx__loader_reset();
  assert_int_equal(spx_cuda_load(), SPX_NOT_AVAILABLE);
  assert_non_null(strstr(spx_last_error(), "/nonexistent/libcuda.so.1"));
  assert_non_null(strstr(spx_last_error(), "SPX_LIBCUDA"));
  spx_lib_status_get(SPX_LIB_CUDA, &ls);
  assert_int_equal(ls.loaded, 0);
  assert_string_equal(ls.path, "");
  assert_non_null(strstr(ls.reason, "/nonexistent/libcuda.so.1"));
  assert_int_equal(spx_device_count(), 0);
  assert_int_equal(spx_context_create(NULL, &ctx), SPX_OK);
  assert_int_equal(spx_context_backend(ctx), SPX_BACKEND_HOST);
  spx_context_destroy(ctx);
  assert_int_equal(spx_nvrtc_version(&major, &minor), SPX_NOT_AVAILABLE);
  assert_int_equal(major, 0);
  assert_non_null(strstr(spx_last_error(), "/nonexistent/libnvrtc.so"));
  assert_null(spx__nvrtc());
  env_restore(&cuda);
  env_restore(&nvrtc);
  env_restore(&quiet);
  spx__loader_reset();
}

/* The toolkit's stub libcuda exports every driver symbol but fails cuInit: the whole driver table
 * resolves (by the names the table gives), and spx reports the driver as unusable. */
static void test_stub_driver(void **state) {
  const char *stub = stub_driver();
  saved_env cuda, quiet;
  spx_lib_status ls;
  spx_context *ctx;
  char *text;
  (void)state;
  if (!stub) skip();
  cuda = env_set("SPX_LIBCUDA", stub);
  quiet = env_set("SPX_QUIET", "1");
  spx__loader_reset();
  assert_int_equal(spx_cuda_load(), SPX_NOT_AVAILABLE);
  spx_lib_status_get(SPX_LIB_CUDA, &ls);
  assert_int_equal(ls.loaded, 0);
  assert_string_equal(ls.path, stub);
  assert_non_null(strstr(ls.reason, "cuInit"));
  assert_null(strstr(ls.reason, "has no ")); /* every required symbol was found */
  assert_int_equal(spx_device_count(), 0);
  assert_int_equal(spx_context_create(NULL, &ctx), SPX_OK);
  assert_int_equal(spx_context_backend(ctx), SPX_BACKEND_HOST);
  text = print_to_string(ctx, 0);
  assert_non_null(strstr(text, "cannot be used"));
  free(text);
  spx_context_destroy(ctx);
  env_restore(&cuda);
  env_restore(&quiet);
  spx__loader_reset();
}

static void test_cu_check(void **state) {
  (void)state;
  assert_int_equal(spx__cu_check(0, "cuInit"), SPX_OK);
  assert_int_equal(spx__cu_check(SPX__CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), SPX_DEVICE_OUT_OF_MEMORY);
  assert_non_null(strstr(spx_last_error(), "cuMemAlloc"));
  assert_non_null(strstr(spx_last_error(), "CUDA_ERROR_OUT_OF_MEMORY"));
  assert_int_equal(spx__cu_check(SPX__CUDA_ERROR_LAUNCH_FAILED, "cuLaunchKernel"), SPX_CUDA);
  assert_non_null(strstr(spx_last_error(), "CUDA_ERROR_LAUNCH_FAILED"));
  assert_int_equal(spx__cu_check(12345, "x"), SPX_CUDA);
  assert_non_null(strstr(spx_last_error(), "12345"));
  assert_string_equal(spx__cu_error_name(SPX__CUDA_ERROR_NO_DEVICE), "CUDA_ERROR_NO_DEVICE");
  assert_int_equal(spx__nvrtc_check(0, "x"), SPX_OK);
  assert_int_equal(spx__nvrtc_check(SPX__NVRTC_ERROR_COMPILATION, "nvrtcCompileProgram"), SPX_NVRTC);
  assert_int_equal(spx__cusparse_check(0, "x"), SPX_OK);
  assert_int_equal(spx__cusparse_check(SPX__CUSPARSE_STATUS_ALLOC_FAILED, "cusparseSpMV"),
                   SPX_DEVICE_OUT_OF_MEMORY);
  assert_int_equal(spx__cusparse_check(7, "cusparseSpMV"), SPX_CUSPARSE);
  assert_non_null(strstr(spx_last_error(), "cusparseSpMV"));
}

static void test_bad_arguments(void **state) {
  spx_context *ctx = (spx_context *)1;
  spx_context_options o = {(spx_backend)7, 0};
  spx_lib_status ls;
  saved_env b;
  (void)state;
  assert_int_equal(spx_context_create(NULL, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_context_create(&o, &ctx), SPX_INVALID_ARGUMENT);
  assert_null(ctx);
  o.backend = SPX_BACKEND_AUTO;
  o.device = -1;
  assert_int_equal(spx_context_create(&o, &ctx), SPX_INVALID_ARGUMENT);
  o.device = 0;
  b = env_set("SPX_BACKEND", "quantum");
  assert_int_equal(spx_context_create(&o, &ctx), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "SPX_BACKEND=quantum"));
  env_restore(&b);
  o.backend = SPX_BACKEND_HOST;
  o.device = 0;
  b = env_set("SPX_BACKEND", "cuda"); /* only AUTO requests consult it */
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  assert_int_equal(spx_context_backend(ctx), SPX_BACKEND_HOST);
  spx_context_destroy(ctx);
  env_restore(&b);
  b = env_set("SPX_BACKEND", "host");
  assert_string_equal(spx_backend_name(NULL), "host");
  assert_int_equal(spx_context_create(NULL, &ctx), SPX_OK);
  assert_int_equal(spx_context_backend(ctx), SPX_BACKEND_HOST);
  spx_context_destroy(ctx);
  env_restore(&b);
  spx_context_destroy(NULL);
  assert_int_equal(spx_context_print(NULL, NULL, 0), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_context_device_info(NULL, NULL), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_device_info_get(0, NULL), SPX_INVALID_ARGUMENT);
  spx_lib_status_get((spx_lib)99, &ls);
  assert_int_equal(ls.loaded, 0);
  assert_non_null(strstr(ls.reason, "unknown"));
  spx_lib_status_get(SPX_LIB_CUDA, NULL);
  assert_string_equal(spx_lib_name(SPX_LIB_NVRTC), "nvrtc");
  assert_string_equal(spx_lib_name((spx_lib)-1), "unknown");
}

static void test_print_host(void **state) {
  spx_context_options o = {SPX_BACKEND_HOST, 0};
  spx_context *ctx;
  char *text, *json;
  size_t n;
  (void)state;
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  text = print_to_string(ctx, 0);
  assert_non_null(strstr(text, "backend   host\n"));
  assert_non_null(strstr(text, "why       "));
  assert_non_null(strstr(text, "nvrtc"));
  assert_non_null(strstr(text, "cusparse"));
  json = print_to_string(ctx, 1);
  n = strlen(json);
  assert_true(n > 2 && json[0] == '{' && json[n - 2] == '}' && json[n - 1] == '\n');
  assert_non_null(strstr(json, "\"backend\":\"host\""));
  assert_non_null(strstr(json, "\"libs\":{\"cuda\":{\"loaded\":"));
  assert_int_equal(count_substr(json, "{"), count_substr(json, "}"));
  free(text);
  free(json);
  spx_context_destroy(ctx);
  text = print_to_string(NULL, 0); /* what AUTO would get */
  assert_non_null(strstr(text, "backend   "));
  free(text);
}

/* Loader entry points from many threads at once, starting from nothing loaded. */
static void *thread_body(void *arg) {
  int *r = (int *)arg, major = 0, minor = 0;
  r[0] = spx_device_count();
  spx_nvrtc_version(&major, &minor);
  r[1] = major * 100 + minor;
  r[2] = spx__cuda() != NULL;
  return NULL;
}

static void test_threads(void **state) {
  enum { T = 8 };
  pthread_t th[T];
  int res[T][3], i;
  (void)state;
  spx__loader_reset();
  for (i = 0; i < T; i++) assert_int_equal(pthread_create(&th[i], NULL, thread_body, res[i]), 0);
  for (i = 0; i < T; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  for (i = 1; i < T; i++) assert_memory_equal(res[i], res[0], sizeof res[0]);
}

/* ---- NVRTC (no GPU needed) -------------------------------------------------------------------- */
/* NVRTC that knows sm_90 (12.0 and later); the tests below compile for it. */
static int nvrtc_has_sm90(void) {
  int major = 0, minor = 0;
  return spx_nvrtc_version(&major, &minor) == SPX_OK && major >= 12;
}

static void test_nvrtc_version(void **state) {
  int major = 0, minor = 0;
  spx_lib_status ls;
  (void)state;
  if (spx_nvrtc_version(&major, &minor) != SPX_OK) skip();
  print_message("NVRTC %d.%d\n", major, minor);
  assert_true(major >= 11);
  assert_true(minor >= 0 && minor < 10);
  spx_lib_status_get(SPX_LIB_NVRTC, &ls);
  assert_int_equal(ls.loaded, 1);
  assert_non_null(strstr(ls.path, "nvrtc"));
  assert_string_equal(ls.reason, "");
}

static void test_cusparse_version(void **state) {
  int v = 0;
  (void)state;
  if (spx_cusparse_version(&v) != SPX_OK) skip();
  print_message("cuSPARSE %d\n", v);
  assert_true(v >= 11000);
  assert_non_null(spx__cusparse());
  assert_non_null(spx__cusparse()->cusparseSpMV);
}

static void test_nvrtc_arch(void **state) {
  char opt[64];
  int cubin = -1;
  (void)state;
  if (!nvrtc_has_sm90()) skip();
  assert_int_equal(spx__nvrtc_arch(9, 0, opt, sizeof opt, &cubin), SPX_OK);
  assert_string_equal(opt, "--gpu-architecture=sm_90");
  assert_int_equal(cubin, 1);
  /* A future device gets PTX of the newest arch NVRTC knows, for the driver to compile. */
  assert_int_equal(spx__nvrtc_arch(9, 9, opt, sizeof opt, &cubin), SPX_OK);
  assert_non_null(strstr(opt, "--gpu-architecture=compute_9"));
  assert_int_equal(cubin, 0);
  assert_int_equal(spx__nvrtc_arch(1, 0, opt, sizeof opt, &cubin), SPX_UNSUPPORTED);
  assert_non_null(strstr(spx_last_error(), "sm_10"));
}

static void test_nvrtc_compile(void **state) {
  const char *opts[] = {"--gpu-architecture=sm_90", "-default-device"};
  void *img = NULL;
  size_t size = 0;
  char *log = NULL;
  (void)state;
  if (!nvrtc_has_sm90()) skip();
  assert_int_equal(spx__nvrtc_compile(twice_src, "twice.cu", 1, opts, 1, &img, &size, &log), SPX_OK);
  assert_non_null(img);
  assert_true(size > 64);
  assert_memory_equal(img, "\177ELF", 4);
  assert_non_null(log);
  free(img);
  free(log);
  /* PTX, NUL-terminated, with the unmangled entry. */
  opts[0] = "--gpu-architecture=compute_90";
  assert_int_equal(spx__nvrtc_compile(twice_src, "twice.cu", 1, opts, 0, &img, &size, NULL), SPX_OK);
  assert_int_equal(((char *)img)[size - 1], 0);
  assert_non_null(strstr((char *)img, ".entry twice"));
  free(img);
  /* compute_XX gives no CUBIN. */
  assert_int_equal(spx__nvrtc_compile(twice_src, "twice.cu", 1, opts, 1, &img, &size, NULL), SPX_NVRTC);
  assert_null(img);
  assert_int_equal(size, 0);
}

static void test_nvrtc_compile_error(void **state) {
  const char *bad = "extern \"C\" __global__ void broken(double *y) { y[0] = undefined_thing; }\n";
  const char *opts[] = {"--gpu-architecture=sm_90"};
  const char *bad_opt[] = {"--gpu-architecture=sm_1"};
  void *img = (void *)1;
  size_t size = 1;
  char *log = NULL;
  (void)state;
  if (!nvrtc_has_sm90()) skip();
  assert_int_equal(spx__nvrtc_compile(bad, "broken.cu", 1, opts, 1, &img, &size, &log), SPX_NVRTC);
  assert_null(img);
  assert_int_equal(size, 0);
  assert_int_equal(spx_last_status(), SPX_NVRTC);
  assert_non_null(strstr(spx_last_error(), "broken.cu"));
  assert_non_null(strstr(spx_last_error(), "undefined_thing"));
  assert_non_null(strstr(spx_last_error(), "NVRTC_ERROR_COMPILATION"));
  assert_non_null(log);
  assert_non_null(strstr(log, "undefined_thing"));
  free(log);
  assert_int_equal(spx__nvrtc_compile(twice_src, "twice.cu", 1, bad_opt, 1, &img, &size, NULL), SPX_NVRTC);
  assert_non_null(strstr(spx_last_error(), "sm_1"));
  assert_int_equal(spx__nvrtc_compile(NULL, "x.cu", 0, NULL, 1, &img, &size, NULL), SPX_INVALID_ARGUMENT);
}

/* ---- with a GPU ------------------------------------------------------------------------------- */
/* Record the first failure and jump to the cleanup, so that everything is freed before asserting. */
#define CK(expr)                                       \
  do {                                                 \
    if (st == SPX_OK && (st = (expr)) != SPX_OK) {     \
      print_message("%s: %s\n", #expr, spx_last_error()); \
      goto done;                                       \
    }                                                  \
  } while (0)
#define CU(call) CK(spx__cu_check((call), #call))
#define SP(call) CK(spx__cusparse_check((call), #call))

static void test_gpu_context(void **state) {
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx, *ctx2;
  spx_device_info info, info2;
  char *text, *json, arch[16];
  int d;
  (void)state;
  if (spx_device_count() == 0) skip();
  assert_int_equal(spx_cuda_load(), SPX_OK);
  assert_string_equal(spx_backend_name(NULL), "cuda");
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  assert_int_equal(spx_context_backend(ctx), SPX_BACKEND_CUDA);
  assert_string_equal(spx_backend_name(ctx), "cuda");
  assert_int_equal(spx_context_device_info(ctx, &info), SPX_OK);
  print_message("device %d: %s sm_%d%d, %d SMs, %.1f GiB, L2 %lld, %.0f GB/s, driver %d\n", info.ordinal,
                info.name, info.cc_major, info.cc_minor, info.sm_count, info.total_mem / 1073741824.0,
                (long long)info.l2_bytes, info.peak_bandwidth_gbs, info.driver_version);
  assert_int_equal(info.ordinal, 0);
  assert_true(strlen(info.name) > 0);
  assert_true(info.sm_count > 0);
  assert_true(info.cc_major >= 7);
  assert_true(info.total_mem > 0);
  assert_true(info.free_mem > 0 && info.free_mem <= info.total_mem);
  assert_true(info.driver_version >= 11000);
  assert_true(info.max_threads_per_sm >= 1024);
  assert_true(info.l2_bytes > 0);
  /* AUTO gives CUDA here, and a second context shares the same primary context. */
  assert_int_equal(spx_context_create(NULL, &ctx2), SPX_OK);
  assert_int_equal(spx_context_backend(ctx2), SPX_BACKEND_CUDA);
  assert_ptr_equal(ctx2->cu_ctx, ctx->cu_ctx);
  spx_context_destroy(ctx2);
  /* spx leaves no context current behind the caller. */
  {
    spx__CUcontext cur = (spx__CUcontext)1;
    assert_int_equal(spx__cuda()->cuCtxGetCurrent(&cur), 0);
    assert_null(cur);
  }
  text = print_to_string(ctx, 0);
  json = print_to_string(ctx, 1);
  snprintf(arch, sizeof arch, "sm_%d%d", info.cc_major, info.cc_minor);
  assert_non_null(strstr(text, "backend   cuda"));
  assert_non_null(strstr(text, arch));
  assert_non_null(strstr(text, info.name));
  assert_non_null(strstr(json, "\"backend\":\"cuda\""));
  assert_non_null(strstr(json, arch));
  print_message("%s%s", text, json);
  free(text);
  free(json);
  spx_context_destroy(ctx);
  for (d = 0; d < spx_device_count(); d++) {
    assert_int_equal(spx_device_info_get(d, &info2), SPX_OK);
    assert_true(info2.sm_count > 0);
  }
  assert_int_equal(spx_device_info_get(spx_device_count(), &info2), SPX_INVALID_ARGUMENT);
  o.device = spx_device_count();
  assert_int_equal(spx_context_create(&o, &ctx), SPX_INVALID_ARGUMENT);
}

static void test_gpu_roundtrip(void **state) {
  enum { N = 100003 };
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  const spx__cuda_api *cu = NULL;
  spx__CUdeviceptr d = 0;
  double *x = (double *)malloc(N * sizeof(double)), *y = (double *)malloc(N * sizeof(double));
  spx_status st = SPX_OK;
  int pushed = 0, i;
  (void)state;
  assert_non_null(x);
  assert_non_null(y);
  if (spx_device_count() == 0) { free(x); free(y); skip(); }
  spx_test_fill(x, N);
  for (i = 0; i < N; i++) y[i] = NAN;
  CK(spx_context_create(&o, &ctx));
  cu = spx__cuda();
  CK(spx__ctx_push(ctx));
  pushed = 1;
  CU(cu->cuMemAlloc(&d, N * sizeof(double)));
  CU(cu->cuMemsetD8(d, 0xff, N * sizeof(double)));
  CU(cu->cuMemcpyHtoD(d, x, N * sizeof(double)));
  CU(cu->cuMemcpyDtoH(y, d, N * sizeof(double)));
done:
  if (d) cu->cuMemFree(d);
  if (pushed) spx__ctx_pop(ctx);
  spx_context_destroy(ctx);
  if (st == SPX_OK) assert_memory_equal(x, y, N * sizeof(double));
  free(x);
  free(y);
  assert_int_equal(st, SPX_OK);
  /* A huge allocation fails with DEVICE_OUT_OF_MEMORY, not a crash. */
  st = spx_context_create(&o, &ctx);
  assert_int_equal(st, SPX_OK);
  assert_int_equal(spx__ctx_push(ctx), SPX_OK);
  d = 0;
  st = spx__cu_check(spx__cuda()->cuMemAlloc(&d, (size_t)1 << 50), "cuMemAlloc");
  if (d) spx__cuda()->cuMemFree(d);
  spx__ctx_pop(ctx);
  spx_context_destroy(ctx);
  assert_int_equal(st, SPX_DEVICE_OUT_OF_MEMORY);
}

static void test_gpu_kernel(void **state) {
  enum { N = 5000 };
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  const spx__cuda_api *cu = NULL;
  spx_device_info info;
  char opt[64], errlog[4096] = "";
  const char *opts[1];
  void *img = NULL;
  size_t size = 0;
  int cubin = 0, pushed = 0, n = N, i;
  spx__CUmodule mod = NULL;
  spx__CUfunction fn = NULL;
  spx__CUdeviceptr dx = 0, dy = 0;
  spx__CUjit_option jo[2] = {SPX__CU_JIT_ERROR_LOG_BUFFER, SPX__CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *jv[2];
  void *args[3];
  double *x = (double *)malloc(N * sizeof(double)), *y = (double *)malloc(N * sizeof(double));
  spx_status st = SPX_OK;
  (void)state;
  assert_non_null(x);
  assert_non_null(y);
  if (spx_device_count() == 0 || !spx__nvrtc()) { free(x); free(y); skip(); }
  spx_test_fill(x, N);
  for (i = 0; i < N; i++) y[i] = NAN;
  CK(spx_context_create(&o, &ctx));
  cu = spx__cuda();
  CK(spx_context_device_info(ctx, &info));
  CK(spx__nvrtc_arch(info.cc_major, info.cc_minor, opt, sizeof opt, &cubin));
  print_message("compiling with %s (%s)\n", opt, cubin ? "CUBIN" : "PTX");
  opts[0] = opt;
  CK(spx__nvrtc_compile(twice_src, "twice.cu", 1, opts, cubin, &img, &size, NULL));
  CK(spx__ctx_push(ctx));
  pushed = 1;
  jv[0] = errlog;
  jv[1] = (void *)(uintptr_t)sizeof errlog;
  st = spx__cu_check(cu->cuModuleLoadDataEx(&mod, img, 2, jo, jv), "cuModuleLoadDataEx");
  if (st) { print_message("%s\n%s\n", spx_last_error(), errlog); goto done; }
  CU(cu->cuModuleGetFunction(&fn, mod, "twice"));
  CU(cu->cuMemAlloc(&dx, N * sizeof(double)));
  CU(cu->cuMemAlloc(&dy, N * sizeof(double)));
  CU(cu->cuMemcpyHtoD(dx, x, N * sizeof(double)));
  CU(cu->cuMemsetD32(dy, 0x7fc00001u, 2 * N)); /* poison: NaN bit patterns */
  args[0] = &dx;
  args[1] = &dy;
  args[2] = &n;
  CU(cu->cuLaunchKernel(fn, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  CU(cu->cuCtxSynchronize());
  CU(cu->cuMemcpyDtoH(y, dy, N * sizeof(double)));
done:
  if (dx) cu->cuMemFree(dx);
  if (dy) cu->cuMemFree(dy);
  if (mod) cu->cuModuleUnload(mod);
  if (pushed) spx__ctx_pop(ctx);
  spx_context_destroy(ctx);
  free(img);
  if (st == SPX_OK)
    for (i = 0; i < N; i++)
      if (y[i] != 2 * x[i]) {
        print_message("y[%d] = %g, want %g\n", i, y[i], 2 * x[i]);
        st = SPX_INTERNAL;
        break;
      }
  free(x);
  free(y);
  assert_int_equal(st, SPX_OK);
}

/* y = A x for a random tridiagonal A through cuSPARSE, against the same product on the host. */
static void test_gpu_cusparse_spmv(void **state) {
  enum { N = 2000 };
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  const spx__cuda_api *cu = NULL;
  const spx__cusparse_api *sp = NULL;
  spx__cusparseHandle_t h = NULL;
  spx__cusparseSpMatDescr_t A = NULL;
  spx__cusparseDnVecDescr_t vx = NULL, vy = NULL;
  spx__CUdeviceptr drp = 0, dci = 0, dv = 0, dx = 0, dy = 0, dbuf = 0;
  int32_t rp[N + 1], *ci = (int32_t *)malloc(3 * N * sizeof(int32_t));
  double *v = (double *)malloc(3 * N * sizeof(double)), x[N], y[N], ref[N];
  const double alpha = 1, beta = 0;
  size_t bytes = 0;
  int nnz = 0, i, k, pushed = 0;
  spx_status st = SPX_OK;
  (void)state;
  assert_non_null(ci);
  assert_non_null(v);
  if (spx_device_count() == 0 || !(sp = spx__cusparse())) { free(ci); free(v); skip(); }
  for (i = 0; i < N; i++) {
    rp[i] = nnz;
    for (k = i - 1; k <= i + 1; k++)
      if (k >= 0 && k < N) { ci[nnz] = k; v[nnz++] = spx_test_rand(); }
  }
  rp[N] = nnz;
  spx_test_fill(x, N);
  for (i = 0; i < N; i++) {
    ref[i] = 0;
    for (k = rp[i]; k < rp[i + 1]; k++) ref[i] += v[k] * x[ci[k]];
    y[i] = NAN;
  }
  CK(spx_context_create(&o, &ctx));
  cu = spx__cuda();
  CK(spx__ctx_push(ctx));
  pushed = 1;
  CU(cu->cuMemAlloc(&drp, sizeof rp));
  CU(cu->cuMemAlloc(&dci, (size_t)nnz * sizeof(int32_t)));
  CU(cu->cuMemAlloc(&dv, (size_t)nnz * sizeof(double)));
  CU(cu->cuMemAlloc(&dx, sizeof x));
  CU(cu->cuMemAlloc(&dy, sizeof y));
  CU(cu->cuMemcpyHtoD(drp, rp, sizeof rp));
  CU(cu->cuMemcpyHtoD(dci, ci, (size_t)nnz * sizeof(int32_t)));
  CU(cu->cuMemcpyHtoD(dv, v, (size_t)nnz * sizeof(double)));
  CU(cu->cuMemcpyHtoD(dx, x, sizeof x));
  CU(cu->cuMemsetD8(dy, 0xff, sizeof y));
  SP(sp->cusparseCreate(&h));
  {
    int ver = 0;
    SP(sp->cusparseGetVersion(h, &ver));
    print_message("cuSPARSE handle version %d\n", ver);
  }
  SP(sp->cusparseCreateCsr(&A, N, N, nnz, (void *)(uintptr_t)drp, (void *)(uintptr_t)dci,
                           (void *)(uintptr_t)dv, SPX__CUSPARSE_INDEX_32I, SPX__CUSPARSE_INDEX_32I,
                           SPX__CUSPARSE_INDEX_BASE_ZERO, SPX__CUDA_R_64F));
  SP(sp->cusparseCreateDnVec(&vx, N, (void *)(uintptr_t)dx, SPX__CUDA_R_64F));
  SP(sp->cusparseCreateDnVec(&vy, N, (void *)(uintptr_t)dy, SPX__CUDA_R_64F));
  SP(sp->cusparseSpMV_bufferSize(h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, vx, &beta, vy,
                                 SPX__CUDA_R_64F, SPX__CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
  if (bytes) CU(cu->cuMemAlloc(&dbuf, bytes));
  if (sp->cusparseSpMV_preprocess)
    SP(sp->cusparseSpMV_preprocess(h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, vx, &beta, vy,
                                   SPX__CUDA_R_64F, SPX__CUSPARSE_SPMV_ALG_DEFAULT, (void *)(uintptr_t)dbuf));
  SP(sp->cusparseSpMV(h, SPX__CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, vx, &beta, vy, SPX__CUDA_R_64F,
                      SPX__CUSPARSE_SPMV_ALG_DEFAULT, (void *)(uintptr_t)dbuf));
  CU(cu->cuCtxSynchronize());
  CU(cu->cuMemcpyDtoH(y, dy, sizeof y));
done:
  if (A) sp->cusparseDestroySpMat(A);
  if (vx) sp->cusparseDestroyDnVec(vx);
  if (vy) sp->cusparseDestroyDnVec(vy);
  if (h) sp->cusparseDestroy(h);
  if (drp) cu->cuMemFree(drp);
  if (dci) cu->cuMemFree(dci);
  if (dv) cu->cuMemFree(dv);
  if (dx) cu->cuMemFree(dx);
  if (dy) cu->cuMemFree(dy);
  if (dbuf) cu->cuMemFree(dbuf);
  if (pushed) spx__ctx_pop(ctx);
  spx_context_destroy(ctx);
  free(ci);
  free(v);
  assert_int_equal(st, SPX_OK);
  assert_true(spx_test_relerr(y, ref, N) < 1e-14);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_symbol_tables),
      cmocka_unit_test(test_no_gpu_host_backend),
      cmocka_unit_test(test_cu_check),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_print_host),
      cmocka_unit_test(test_nvrtc_version),
      cmocka_unit_test(test_cusparse_version),
      cmocka_unit_test(test_nvrtc_arch),
      cmocka_unit_test(test_nvrtc_compile),
      cmocka_unit_test(test_nvrtc_compile_error),
      cmocka_unit_test(test_gpu_context),
      cmocka_unit_test(test_gpu_roundtrip),
      cmocka_unit_test(test_gpu_kernel),
      cmocka_unit_test(test_gpu_cusparse_spmv),
      /* These reload the libraries under changed environments; each ends with a clean reload. */
      cmocka_unit_test(test_fallback_notice_once),
      cmocka_unit_test(test_env_override_missing),
      cmocka_unit_test(test_stub_driver),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
