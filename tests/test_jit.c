/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/jit.h: the embedded template table (and that the committed copy is fresh), keys,
 * NVRTC compiles of every template, the disk cache (hits, corruption, eviction, off, directory
 * resolution, concurrent writers in several processes) and, with a GPU, kernels launched from
 * the cache with the times of a cold compile, a disk hit and a memory hit.
 * Without NVRTC the compile tests skip; without a GPU the GPU tests skip. Each test that touches
 * the disk cache runs in a fresh temporary directory (SPX_CACHE_DIR) and removes it. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv, fork, pipe, utimensat, pthread, mkfifo, symlink */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "spx_test.h"
#include "spx_test_capture.h"
#include <spx/internal/cuda_types.h>
#include <spx/internal/common.h>
#include "spx_test_env.h" /* env_put */
#include <stdatomic.h>

const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0:protect_shadow_gap=0"; }

/* ---- helpers ------------------------------------------------------------------------------------ */
typedef struct fixture {
  char root[256]; /* SPX_CACHE_DIR */
  char dir[300];  /* root/v1: where entries go */
} fixture;

static void env_unset_all(void) {
  env_put("SPX_CACHE", NULL);
  env_put("SPX_CACHE_DIR", NULL);
  env_put("SPX_CACHE_MAX_MB", NULL);
}

static int setup(void **state) {
  fixture *f = (fixture *)calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->root, sizeof f->root, "/tmp/spx_test_jit_XXXXXX");
  if (!mkdtemp(f->root)) { free(f); return -1; }
  snprintf(f->dir, sizeof f->dir, "%s/%s", f->root, SPX_JIT_CACHE_SUBDIR);
  env_unset_all();
  env_put("SPX_CACHE_DIR", f->root);
  spx_jit_clear_memory();
  *state = f;
  return 0;
}

/* rm -rf dir, never following a symbolic link (some tests plant them, and make directories that
 * others could write to: chmod back first). */
static void rm_tree(const char *dir) {
  DIR *d;
  struct dirent *de;
  struct stat st;
  char p[600];
  (void)chmod(dir, 0700);
  if (!(d = opendir(dir))) return;
  while ((de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(p);
    else unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static int teardown(void **state) {
  fixture *f = (fixture *)*state;
  spx_jit_clear_memory();
  rm_tree(f->root);
  env_unset_all();
  free(f);
  return 0;
}

/* Entries (32-hex names) and temporary files in dir. */
static int count_entries(const char *dir, int *ntmp) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0, t = 0;
  if (d) {
    while ((de = readdir(d)) != NULL) {
      if (strlen(de->d_name) == 32) n++;
      else if (!strncmp(de->d_name, ".tmp-", 5)) t++;
    }
    closedir(d);
  }
  if (ntmp) *ntmp = t;
  return n;
}

static void key_of(const char *tpl, int nd, const char *const *defs, const char *arch, char hex[33]) {
  spx_jit_key_inputs in;
  assert_int_equal(spx_jit_key_describe(tpl, nd, defs, arch, &in), SPX_OK);
  assert_int_equal(spx_jit_key_compute(&in, hex), SPX_OK);
}

static void entry_path(const fixture *f, const char *hex, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s", f->dir, hex);
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

static uint64_t fnv1a64(const char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
  return h;
}

static char *slurp(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  char *b;
  long sz;
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  sz = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  b = (char *)malloc((size_t)sz + 1);
  if (b && fread(b, 1, (size_t)sz, fp) != (size_t)sz) { free(b); b = NULL; }
  fclose(fp);
  if (b) { b[sz] = 0; *n = (size_t)sz; }
  return b;
}

/* lstat's permission bits (-1: no such path). */
static int mode_of(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static int is_regular(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* cp src dst, mode 0600. */
static void copy_file(const char *src, const char *dst) {
  size_t n = 0;
  char *b = slurp(src, &n);
  int fd;
  assert_non_null(b);
  assert_true((fd = open(dst, O_CREAT | O_TRUNC | O_WRONLY, 0600)) >= 0);
  assert_int_equal(write(fd, b, n), (ssize_t)n);
  close(fd);
  free(b);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *const dbl[] = {"SPX_VALUE_T=double"};
static const char *const flt[] = {"SPX_VALUE_T=float"};

/* templates/<file> as gen/embed stores it: each `#include "<name>.cuh"` line replaced by
 * templates/<name>.cuh (a file without a trailing newline gets one). NULL when a file is missing. */
static char *slurp_template(const char *file, size_t *n) {
  char path[300], *text, *out, *line;
  size_t tn, cap, used = 0;
  snprintf(path, sizeof path, "templates/%s", file);
  if (!(text = slurp(path, &tn))) return NULL;
  cap = tn + 1;
  out = (char *)malloc(cap);
  for (line = text; out && *line;) {
    char *eol = strchr(line, '\n'), *add = line, *inc = NULL;
    size_t len = eol ? (size_t)(eol - line) + 1 : strlen(line), an = len;
    if (!strncmp(line, "#include \"", 10)) {
      char hp[300];
      snprintf(hp, sizeof hp, "templates/%.*s", (int)(strchr(line + 10, '"') - (line + 10)), line + 10);
      if (!(inc = slurp(hp, &an))) { free(out); out = NULL; break; }
      add = inc;
    }
    if (used + an + 2 > cap && !(out = (char *)realloc(out, cap = 2 * (used + an + 2)))) { free(inc); break; }
    memcpy(out + used, add, an);
    used += an;
    if (inc && an && inc[an - 1] != '\n') out[used++] = '\n';
    free(inc);
    line += len;
  }
  free(text);
  if (out) { out[used] = 0; *n = used; }
  return out;
}

/* ---- the template table ----------------------------------------------------------------------- */
/* Every templates/<name>.cu is embedded, byte for byte (its #include "<name>.cuh" lines inlined),
 * with the right hash (tests run from the repository root). */
static void test_template_table(void **state) {
  DIR *d;
  struct dirent *de;
  char bad[400] = "";
  int i, nfiles = 0;
  (void)state;
  assert_true(spx_jit_template_count() >= 1);
  assert_null(spx_jit_template_name(-1));
  assert_null(spx_jit_template_name(spx_jit_template_count()));
  for (i = 0; i < spx_jit_template_count(); i++) {
    const char *src;
    size_t n;
    uint64_t h;
    assert_int_equal(spx_jit_template_source(spx_jit_template_name(i), &src, &n, &h), SPX_OK);
    assert_int_equal(strlen(src), n);
    assert_true(h == fnv1a64(src, n));
    if (i) assert_true(strcmp(spx_jit_template_name(i - 1), spx_jit_template_name(i)) < 0);
  }
  assert_int_equal(spx_jit_template_source("no_such_template", NULL, NULL, NULL), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "vector"));
  if (!(d = opendir("templates"))) {
    print_message("no templates/ here (not run from the repository root): source check skipped\n");
    return;
  }
  while (!bad[0] && (de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name), n = 0, en = 0;
    char name[128], *text;
    const char *src = NULL;
    if (len < 4 || strcmp(de->d_name + len - 3, ".cu") || len - 3 >= sizeof name) continue;
    memcpy(name, de->d_name, len - 3);
    name[len - 3] = 0;
    nfiles++;
    if (spx_jit_template_source(name, &src, &en, NULL) != SPX_OK) {
      snprintf(bad, sizeof bad, "templates/%s is not embedded: add it to spx_templates in gen/BUILD.gn "
               "and update include/spx/internal/templates_gen.h", de->d_name);
      break;
    }
    if (!(text = slurp_template(de->d_name, &n)) || n != en || memcmp(text, src, n))
      snprintf(bad, sizeof bad, "include/spx/internal/templates_gen.h is stale: templates/%s (or a .cuh it includes) changed. "
               "Run ninja -C out templates_update", de->d_name);
    free(text);
  }
  closedir(d); /* before failing: a failed assertion jumps out of the test */
  if (bad[0]) fail_msg("%s", bad);
  assert_int_equal(nfiles, spx_jit_template_count());
}

/* The committed table equals the one the build generated ($SPX_GEN_DIR/spx/templates_gen.h,
 * exported by tests/run.sh); skipped when SPX_GEN_DIR is unset. */
static void test_committed_table_is_fresh(void **state) {
  const char *gen = getenv("SPX_GEN_DIR");
  char path[600], *a, *b;
  size_t na = 0, nb = 0;
  int same;
  (void)state;
  if (!gen || !*gen) skip();
  snprintf(path, sizeof path, "%s/spx/templates_gen.h", gen);
  a = slurp("include/spx/internal/templates_gen.h", &na);
  b = slurp(path, &nb);
  same = a && b && na == nb && !memcmp(a, b, na);
  free(a); /* before failing: a failed assertion jumps out of the test */
  if (!b) fail_msg("SPX_GEN_DIR=%s but %s cannot be read (build //gen:templates_gen)", gen, path);
  free(b);
  if (!same)
    fail_msg("include/spx/internal/templates_gen.h is stale: it differs from %s.\n"
             "Update it: cp %s include/spx/internal/templates_gen.h", path, path);
}

/* Each template compiles alone with nvcc, as the README promises: `nvcc -c` in double (the
 * default) and device code in float, all templates in one run of each, both at once. Skipped
 * without nvcc, and in the clang builds: the check does not depend on this binary's compiler and
 * takes seconds, so the gcc build alone runs it. */
static void test_templates_nvcc(void **state) {
  const char *home = getenv("CUDA_HOME");
  char nvcc[300], cmd[1600], files[1000] = "", tmp[] = "/tmp/spx_test_nvcc_XXXXXX";
  size_t used = 0;
  int i, rc;
  (void)state;
#if defined(__clang__)
  skip();
#endif
  snprintf(nvcc, sizeof nvcc, "%s/bin/nvcc", home && *home ? home : "/usr/local/cuda");
  if (access(nvcc, X_OK) != 0 || access("templates", R_OK) != 0 || getenv("SPX_TEST_NO_NVCC")) skip();
  assert_non_null(mkdtemp(tmp));
  for (i = 0; i < spx_jit_template_count() && used + 64 < sizeof files; i++)
    used += (size_t)snprintf(files + used, sizeof files - used, " templates/%s.cu", spx_jit_template_name(i));
  snprintf(cmd, sizeof cmd,
           "'%s' -c -odir %s%s & p=$!; '%s' --ptx -DSPX_VALUE_T=float -odir %s%s; f=$?; wait $p; exit $(($? | f))",
           nvcc, tmp, files, nvcc, tmp, files);
  rc = system(cmd);
  snprintf(files, sizeof files, "rm -rf '%s'", tmp);
  assert_int_equal(system(files), 0);
  if (rc != 0) fail_msg("nvcc could not compile the templates alone: %s", cmd);
}

/* ---- keys and defines ----------------------------------------------------------------------- */
static spx_jit_key_inputs base_inputs(const char *const *defs, int nd, const char *const *opts, int nopt) {
  spx_jit_key_inputs in;
  memset(&in, 0, sizeof in);
  in.template_name = "vector";
  in.template_hash = 0x0123456789abcdefull;
  in.ndefines = nd;
  in.defines = defs;
  snprintf(in.arch, sizeof in.arch, "sm_90");
  in.nvrtc_major = 13;
  in.nvrtc_minor = 0;
  in.noptions = nopt;
  in.options = opts;
  in.spx_version = "0.1.0";
  return in;
}

static void test_define_validation(void **state) {
  static const char *const bad[][2] = {
      {"T=float", "SPX_"},       {"SPX_", "no name"},        {"SPX_A B=1", "letters"},
      {"spx_a=1", "SPX_"},       {"SPX_A=1\n", "control"},   {"=1", "SPX_"},
  };
  const char *opts[] = {"--std=c++17"};
  const char *dup[] = {"SPX_K=1", "SPX_A=2", "SPX_K=1"}, *nul[] = {"SPX_A=1", NULL};
  char hex[33];
  spx_jit_key_inputs in;
  size_t i;
  int origin;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    in = base_inputs(&bad[i][0], 1, opts, 1);
    assert_int_equal(spx_jit_key_compute(&in, hex), SPX_INVALID_ARGUMENT);
    if (!strstr(spx_last_error(), bad[i][1])) fail_msg("'%s': %s", bad[i][0], spx_last_error());
  }
  in = base_inputs(&bad[0][0], 1, opts, 1);
  assert_int_equal(spx_jit_key_compute(&in, hex), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "NVRTC's built-in headers"));
  in = base_inputs(dup, 3, opts, 1);
  assert_int_equal(spx_jit_key_compute(&in, hex), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "SPX_K"));
  in = base_inputs(nul, 2, opts, 1);
  assert_int_equal(spx_jit_key_compute(&in, hex), SPX_INVALID_ARGUMENT);
  in = base_inputs(NULL, -1, opts, 1);
  assert_int_equal(spx_jit_key_compute(&in, hex), SPX_INVALID_ARGUMENT);
  in = base_inputs(NULL, 1, opts, 1);
  assert_int_equal(spx_jit_key_compute(&in, hex), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_jit_key_compute(NULL, hex), SPX_INVALID_ARGUMENT);
  /* A plain flag ("SPX_FAST") and any value characters are fine. */
  {
    const char *ok[] = {"SPX_FAST", "SPX_VALUE_T=unsigned long long", "SPX_X=(1<<4)"};
    in = base_inputs(ok, 3, opts, 1);
    assert_int_equal(spx_jit_key_compute(&in, hex), SPX_OK);
    assert_int_equal(strlen(hex), 32);
  }
  /* Through the public entry points (rejected before NVRTC is even needed). */
  if (!spx_test_have_nvrtc()) skip(); /* the checks above ran; tests/run.sh fails this skip where NVRTC should be */
  assert_int_equal(spx_jit_compile_only("vector", 1, &bad[0][0], "sm_90", &origin), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "SPX_"));
  assert_int_equal(spx_jit_compile_only("nope", 0, NULL, "sm_90", &origin), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "vector"));
  assert_int_equal(spx_jit_compile_only("vector", 0, NULL, "sm90", &origin), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_jit_compile_only("vector", 0, NULL, "sm_9", &origin), SPX_INVALID_ARGUMENT);
  assert_int_equal(spx_jit_compile_only("vector", 0, NULL, "sm_90xy", &origin), SPX_INVALID_ARGUMENT);
  if (spx_device_count() == 0) {
    assert_int_equal(spx_jit_compile_only("vector", 0, NULL, NULL, &origin), SPX_INVALID_ARGUMENT);
    assert_non_null(strstr(spx_last_error(), "sm_90"));
  }
}

/* Every input of the key changes it; the order of the defines does not. */
static void test_key_inputs(void **state) {
  const char *opts[] = {"--std=c++17"}, *opts2[] = {"--std=c++17", "-lineinfo"}, *opts3[] = {"--std=c++20"};
  const char *d1[] = {"SPX_VALUE_T=double", "SPX_BLOCK=256"}, *d1r[] = {"SPX_BLOCK=256", "SPX_VALUE_T=double"};
  const char *d2[] = {"SPX_VALUE_T=float", "SPX_BLOCK=256"}, *d3[] = {"SPX_VALUE_T=double", "SPX_BLOCK=128"};
  const char *d4[] = {"SPX_VALUE_T=double", "SPX_BLOCK=256", "SPX_X"}, *d5[] = {"SPX_VALUE_T=double"};
  const char *d6[] = {"SPX_VALUE_T=double", "SPX_BLOCK2=56"}; /* same characters, other split */
  enum { N = 16 };
  char keys[N][33], again[33];
  spx_jit_key_inputs in[N];
  int i, j;
  (void)state;
  for (i = 0; i < N; i++) in[i] = base_inputs(d1, 2, opts, 1);
  in[1].template_hash ^= 1;                 /* template text */
  in[2].template_name = "vector2";
  in[3].defines = d2;                       /* value type */
  in[4].defines = d3;                       /* another define's value */
  in[5].defines = d4; in[5].ndefines = 3;   /* one more define */
  in[6].defines = d5; in[6].ndefines = 1;   /* one fewer */
  snprintf(in[7].arch, sizeof in[7].arch, "sm_80");
  snprintf(in[8].arch, sizeof in[8].arch, "compute_90");
  in[9].nvrtc_major = 12;
  in[10].nvrtc_minor = 1;
  in[11].options = opts2; in[11].noptions = 2;
  in[12].options = opts3;
  in[13].spx_version = "0.1.1";
  in[14].noptions = 0;
  in[15].defines = d6;
  for (i = 0; i < N; i++) assert_int_equal(spx_jit_key_compute(&in[i], keys[i]), SPX_OK);
  for (i = 0; i < N; i++)
    for (j = 0; j < i; j++)
      if (!strcmp(keys[i], keys[j])) fail_msg("inputs %d and %d give the same key %s", i, j, keys[i]);
  in[0].defines = d1r;
  assert_int_equal(spx_jit_key_compute(&in[0], again), SPX_OK);
  assert_string_equal(again, keys[0]);
  /* What the library keys on: the embedded template and the real NVRTC version. */
  if (spx_test_have_nvrtc()) {
    spx_jit_key_inputs d;
    uint64_t h;
    int maj, min;
    assert_int_equal(spx_jit_key_describe("vector", 2, d1, "sm_90", &d), SPX_OK);
    assert_int_equal(spx_jit_template_source("vector", NULL, NULL, &h), SPX_OK);
    assert_true(d.template_hash == h);
    assert_string_equal(d.arch, "sm_90");
    assert_int_equal(spx_nvrtc_version(&maj, &min), SPX_OK);
    assert_int_equal(d.nvrtc_major, maj);
    assert_int_equal(d.nvrtc_minor, min);
    assert_string_equal(d.spx_version, SPX_VERSION_STRING);
    assert_true(d.noptions >= 1);
  }
}

/* ---- NVRTC -------------------------------------------------------------------------------- */
/* NVRTC's output does not depend on the compiler that built this test, and each compile takes
 * about a second on a CI core: the gcc build runs every specialization, the clang builds (plain
 * and sanitized, which check the host side around NVRTC) one per template. */
#if defined(__clang__)
static const int all_specs = 0;
#else
static const int all_specs = 1;
#endif

/* One compile of test_every_template_compiles, and how it went. */
typedef struct jit_compile_job {
  const char *tmpl, *arch;
  const char *const *defs;
  int ndefs, origin;
  spx_status s;
  char err[300];
} jit_compile_job;
typedef struct jit_compile_queue {
  jit_compile_job *jobs;
  int njobs;
  atomic_int next;
} jit_compile_queue;

/* Takes compiles off the queue until it is empty (the JIT is thread-safe: spx's own background
 * compiles run so; the messages are per thread). */
static void *jit_compile_worker(void *arg) {
  jit_compile_queue *q = (jit_compile_queue *)arg;
  int i;
  while ((i = atomic_fetch_add(&q->next, 1)) < q->njobs) {
    jit_compile_job *j = &q->jobs[i];
    j->s = spx_jit_compile_only(j->tmpl, j->ndefs, j->defs, j->arch, &j->origin);
    if (j->s) snprintf(j->err, sizeof j->err, "%s", spx_last_error());
  }
  return NULL;
}

/* Runs the n compiles on a thread per CPU (up to 4: NVRTC is single-threaded, and a compile takes
 * about a second); each job keeps its status and message. */
static void jit_compile_all(jit_compile_job *jobs, int n) {
  jit_compile_queue q;
  pthread_t th[3];
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int nth = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
  int k, started = 0;
  q.jobs = jobs;
  q.njobs = n;
  atomic_init(&q.next, 0);
  for (k = 1; k < nth; k++) started += pthread_create(&th[started], NULL, jit_compile_worker, &q) == 0;
  jit_compile_worker(&q);
  for (k = 0; k < started; k++) pthread_join(th[k], NULL);
}

/* Every template compiles for sm_80 and sm_90 with a spread of specializations. */
static void test_every_template_compiles(void **state) {
  /* sm_90 gets every spec, sm_80 the first two (double and float). */
  static const char *const specs[][3] = {
      {"SPX_VALUE_T=double", NULL, NULL},
      {"SPX_VALUE_T=float", NULL, NULL},
      {NULL, NULL, NULL},
      {"SPX_VALUE_T=float", "SPX_BLOCK=128", NULL},
      /* the largest block (a template's defaults must keep static shared memory under 48 KiB) */
      {"SPX_VALUE_T=double", "SPX_BLOCK=1024", NULL},
  };
  static const char *const archs[] = {"sm_90", "sm_80"};
  const int nspecs = (int)(sizeof specs / sizeof specs[0]);
  spx_jit_stats s0, s1;
  jit_compile_job *jobs;
  int t, a, k, n, origin, ncomp = 0, njobs = 0;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  env_put("SPX_CACHE", "off");
  jobs = calloc((size_t)spx_jit_template_count() * 2 * (size_t)nspecs, sizeof *jobs);
  assert_non_null(jobs);
  for (t = 0; t < spx_jit_template_count(); t++)
    for (a = 0; a < 2; a++)
      for (k = 0; k < (!all_specs ? !a : a ? 2 : nspecs); k++) {
        jit_compile_job *j = &jobs[njobs++];
        for (n = 0; n < 3 && specs[k][n]; n++) {}
        j->tmpl = spx_jit_template_name(t);
        j->arch = archs[a];
        j->defs = specs[k];
        j->ndefs = n;
      }
  spx_jit_stats_get(&s0);
  jit_compile_all(jobs, njobs);
  for (k = 0; k < njobs; k++) {
    const jit_compile_job *j = &jobs[k];
    if (j->s != SPX_OK)
      fail_msg("%s for %s (%s %s): %s", j->tmpl, j->arch, j->defs[0] ? j->defs[0] : "", j->defs[1] ? j->defs[1] : "",
               j->err);
    assert_int_equal(j->origin, SPX_JIT_COMPILED);
    ncomp++;
  }
  free(jobs);
  spx_jit_stats_get(&s1);
  assert_int_equal(s1.compiles - s0.compiles, ncomp);
  assert_int_equal(s1.compile_failures, s0.compile_failures);
  print_message("%d compiles, %.1f ms each on average\n", ncomp,
                (s1.compile_ms_total - s0.compile_ms_total) / ncomp);
  /* PTX for a compute_XY target. */
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "compute_80", &origin), SPX_OK);
}

/* The device converters' kernels (convert.cu) compile for sm_90 with every define set the drivers
 * in cuda_impl.h pass: the value type alone (SELL, SELL16, BSR, ELL, JDS, the scans, SDIA with C <= 32) and
 * SPX_RPL (SDIA rows per lane: 2 for C in 33..64, 32 up to C = 1024); the cubin names each kernel. */
static void test_convert_kernels_compile(void **state) {
  static const char *const specs[][2] = {
      {"SPX_VALUE_T=double", NULL}, {"SPX_VALUE_T=float", NULL},
      {"SPX_VALUE_T=double", "SPX_RPL=2"}, {"SPX_VALUE_T=float", "SPX_RPL=32"},
  };
  static const char *const kernels[] = {"spx_sdia_count", "spx_sdia_fill", "spx_bsr_count", "spx_bsr_fill",
                                        "spx_scan_sums", "spx_scan_tiles", "spx_scan_apply", "spx_sell_fill",
                                        "spx_rows_max", "spx_ell_fill", "spx_jds_count", "spx_jds_scatter",
                                        "spx_jds_diags", "spx_jds_fill"};
  fixture *f = (fixture *)*state;
  jit_compile_job jobs[4];
  const int nk = all_specs ? (int)(sizeof specs / sizeof specs[0]) : 1;
  int k, j;
  if (!spx_test_have_nvrtc()) skip();
  memset(jobs, 0, sizeof jobs);
  for (k = 0; k < nk; k++) {
    jobs[k].tmpl = "convert";
    jobs[k].arch = "sm_90";
    jobs[k].defs = specs[k];
    jobs[k].ndefs = specs[k][1] ? 2 : 1;
  }
  jit_compile_all(jobs, nk); /* the compiles at once; the cubins read below are on disk after */
  for (k = 0; k < nk; k++) {
    int nd = jobs[k].ndefs;
    char hex[33], path[600];
    size_t n = 0;
    char *bin;
    if (jobs[k].s != SPX_OK) fail_msg("convert.cu (%s %s): %s", specs[k][0], specs[k][1] ? specs[k][1] : "", jobs[k].err);
    key_of("convert", nd, specs[k], "sm_90", hex);
    entry_path(f, hex, path, sizeof path);
    assert_non_null(bin = slurp(path, &n));
    for (j = 0; j < (int)(sizeof kernels / sizeof kernels[0]); j++) {
      size_t len = strlen(kernels[j]), i;
      int found = 0;
      for (i = 0; !found && i + len <= n; i++) found = !memcmp(bin + i, kernels[j], len);
      if (!found) fail_msg("convert.cu (%s %s): no %s in the cubin", specs[k][0], specs[k][1] ? specs[k][1] : "", kernels[j]);
    }
    free(bin);
  }
}

/* A compile error is SPX_NVRTC with the log; it is remembered (no second compile) and nothing is
 * written to disk. */
static void test_compile_error(void **state) {
  fixture *f = (fixture *)*state;
  const char *bad[] = {"SPX_VALUE_T=not_a_type_xyz"};
  spx_jit_stats s0, s1;
  char first[1024];
  int origin = 9;
  double t0;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  spx_jit_stats_get(&s0);
  assert_int_equal(spx_jit_compile_only("vector", 1, bad, "sm_90", &origin), SPX_NVRTC);
  assert_int_equal(origin, 0);
  assert_non_null(strstr(spx_last_error(), "not_a_type_xyz"));
  assert_non_null(strstr(spx_last_error(), "vector.cu"));
  snprintf(first, sizeof first, "%s", spx_last_error());
  t0 = now_s();
  assert_int_equal(spx_jit_compile_only("vector", 1, bad, "sm_90", &origin), SPX_NVRTC);
  assert_true(now_s() - t0 < 0.01);
  assert_string_equal(spx_last_error(), first);
  spx_jit_stats_get(&s1);
  assert_int_equal(s1.compiles - s0.compiles, 1);
  assert_int_equal(s1.compile_failures - s0.compile_failures, 1);
  assert_int_equal(count_entries(f->dir, NULL), 0);
}

/* ---- the disk cache ----------------------------------------------------------------------- */
static void test_disk_store_and_hit(void **state) {
  fixture *f = (fixture *)*state;
  char hex[33], path[600], hex2[33], path2[600];
  spx_jit_stats s0, s1, s2, s3;
  int64_t bytes = -1, entries = -1;
  int origin, i, ntmp;
  double t0, per_hit;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  assert_string_equal(spx_jit_cache_dir(), f->root);
  key_of("vector", 1, dbl, "sm_90", hex);
  entry_path(f, hex, path, sizeof path);
  spx_jit_stats_get(&s0);
  assert_int_equal(spx_jit_disk_usage(&bytes, &entries), SPX_OK);
  assert_int_equal(bytes, 0);
  assert_int_equal(entries, 0);
  assert_true(s0.disk_enabled);
  assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_90", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_true(file_size(path) > 128);
  assert_int_equal(count_entries(f->dir, &ntmp), 1);
  assert_int_equal(ntmp, 0);
  spx_jit_stats_get(&s1);
  assert_int_equal(s1.misses - s0.misses, 1);
  assert_int_equal(s1.compiles - s0.compiles, 1);
  assert_int_equal(s1.disk_writes - s0.disk_writes, 1);
  assert_int_equal(s1.disk_entries, 1);
  assert_int_equal(s1.disk_bytes, file_size(path));
  /* Memory hit: no disk, no compile; microseconds. */
  t0 = now_s();
  for (i = 0; i < 1000; i++) assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_90", &origin), SPX_OK);
  per_hit = (now_s() - t0) / 1000;
  assert_int_equal(origin, SPX_JIT_MEMORY);
  print_message("in-memory hit: %.2f us\n", per_hit * 1e6);
  assert_true(per_hit < 1e-3);
  spx_jit_stats_get(&s2);
  assert_int_equal(s2.mem_hits - s1.mem_hits, 1000);
  assert_int_equal(s2.compiles, s1.compiles);
  /* A new process (here: a forgotten memory) finds it on disk. */
  spx_jit_clear_memory();
  t0 = now_s();
  assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_90", &origin), SPX_OK);
  print_message("disk hit (read and check, no load): %.3f ms\n", (now_s() - t0) * 1e3);
  assert_int_equal(origin, SPX_JIT_DISK);
  spx_jit_stats_get(&s3);
  assert_int_equal(s3.disk_hits - s2.disk_hits, 1);
  assert_int_equal(s3.compiles, s2.compiles);
  assert_int_equal(s3.misses, s2.misses);
  /* Another specialization is another entry. */
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_90", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(count_entries(f->dir, NULL), 2);
  /* spx_jit_clear empties the directory, memory too. */
  assert_int_equal(spx_jit_disk_usage(&bytes, &entries), SPX_OK);
  assert_int_equal(entries, 2);
  key_of("vector", 1, flt, "sm_90", hex2);
  entry_path(f, hex2, path2, sizeof path2);
  assert_int_equal(bytes, file_size(path) + file_size(path2));
  assert_int_equal(spx_jit_clear(), SPX_OK);
  assert_int_equal(count_entries(f->dir, NULL), 0);
  spx_jit_stats_get(&s3);
  assert_int_equal(s3.disk_entries, 0);
  assert_int_equal(access(f->dir, F_OK), -1);
  assert_int_equal(access(f->root, F_OK), 0);
  assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_90", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_COMPILED);
}

/* Damage one entry in some way, then: a warning, a recompile, the file replaced and valid. */
typedef enum { FLIP_PAYLOAD, FLIP_HEADER, TRUNCATE_HALF, TRUNCATE_SHORT, EMPTY, GARBAGE } damage;

static void damage_file(const char *path, damage how) {
  int64_t n = file_size(path);
  FILE *fp;
  int c;
  assert_true(n > 128);
  switch (how) {
    case FLIP_PAYLOAD:
    case FLIP_HEADER: {
      long at = how == FLIP_PAYLOAD ? (long)(128 + (n - 128) / 2) : 20; /* a key byte */
      fp = fopen(path, "r+b");
      assert_non_null(fp);
      fseek(fp, at, SEEK_SET);
      c = fgetc(fp);
      fseek(fp, at, SEEK_SET);
      fputc(c ^ 0x10, fp);
      fclose(fp);
      break;
    }
    case TRUNCATE_HALF: assert_int_equal(truncate(path, (off_t)(n / 2)), 0); break;
    case TRUNCATE_SHORT: assert_int_equal(truncate(path, 10), 0); break;
    case EMPTY: assert_int_equal(truncate(path, 0), 0); break;
    case GARBAGE:
      fp = fopen(path, "wb");
      assert_non_null(fp);
      for (c = 0; c < 4000; c++) fputc(c * 7, fp);
      fclose(fp);
      break;
  }
}

static void test_disk_corruption(void **state) {
  fixture *f = (fixture *)*state;
  char hex[33], path[600], *good, *now;
  size_t ng, nn;
  spx_jit_stats s0, s1;
  int origin, how;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  key_of("vector", 1, flt, "sm_80", hex);
  entry_path(f, hex, path, sizeof path);
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  good = slurp(path, &ng);
  assert_non_null(good);
  for (how = FLIP_PAYLOAD; how <= GARBAGE; how++) {
    spx_jit_clear_memory();
    damage_file(path, (damage)how);
    spx_jit_stats_get(&s0);
    assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
    spx_jit_stats_get(&s1);
    if (origin != SPX_JIT_COMPILED) fail_msg("damage %d was not detected", how);
    assert_int_equal(s1.disk_corrupt - s0.disk_corrupt, 1);
    assert_int_equal(s1.compiles - s0.compiles, 1);
    /* Replaced: the same bytes as the first compile, and a hit from now on. */
    now = slurp(path, &nn);
    assert_non_null(now);
    assert_int_equal(nn, ng);
    assert_memory_equal(now, good, ng);
    free(now);
    spx_jit_clear_memory();
    assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
    assert_int_equal(origin, SPX_JIT_DISK);
  }
  free(good);
  assert_int_equal(count_entries(f->dir, NULL), 1);
}

static void set_mtime(const char *path, time_t when) {
  struct timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = when;
  ts[0].tv_nsec = ts[1].tv_nsec = 0;
  assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* A cap of 2.5 entries keeps the two most recently used; a hit counts as a use. */
static void test_disk_eviction(void **state) {
  fixture *f = (fixture *)*state;
  const char *d[4][2] = {{"SPX_VALUE_T=double", "SPX_BLOCK=64"}, {"SPX_VALUE_T=double", "SPX_BLOCK=96"},
                         {"SPX_VALUE_T=double", "SPX_BLOCK=160"}, {"SPX_VALUE_T=double", "SPX_BLOCK=192"}};
  char hex[4][33], path[4][600], cap[64], stale[600], fresh[600];
  int64_t size, total;
  spx_jit_stats s0, s1;
  time_t t = time(NULL);
  int i, origin, fd;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  for (i = 0; i < 4; i++) {
    key_of("vector", 2, d[i], "sm_90", hex[i]);
    entry_path(f, hex[i], path[i], sizeof path[i]);
  }
  assert_int_equal(spx_jit_compile_only("vector", 2, d[0], "sm_90", &origin), SPX_OK);
  size = file_size(path[0]);
  assert_true(size > 128);
  set_mtime(path[0], t - 100); /* explicit ages: file times may be coarser than compiles are apart */
  snprintf(cap, sizeof cap, "%.9f", 2.5 * (double)(size + 64) / 1048576.0);
  env_put("SPX_CACHE_MAX_MB", cap);
  assert_int_equal(spx_jit_compile_only("vector", 2, d[1], "sm_90", &origin), SPX_OK);
  set_mtime(path[1], t - 90);
  spx_jit_stats_get(&s0);
  /* A stale temporary file (a writer died an hour ago) goes with the next write; a fresh one
   * (a writer at work) stays. */
  snprintf(stale, sizeof stale, "%s/.tmp-%s-AAAAAA", f->dir, hex[3]);
  snprintf(fresh, sizeof fresh, "%s/.tmp-%s-BBBBBB", f->dir, hex[3]);
  assert_true((fd = open(stale, O_CREAT | O_WRONLY, 0600)) >= 0);
  close(fd);
  assert_true((fd = open(fresh, O_CREAT | O_WRONLY, 0600)) >= 0);
  close(fd);
  set_mtime(stale, t - 7200);
  assert_int_equal(spx_jit_compile_only("vector", 2, d[2], "sm_90", &origin), SPX_OK);
  spx_jit_stats_get(&s1);
  assert_int_equal(s1.evictions - s0.evictions, 1);
  assert_int_equal(access(path[0], F_OK), -1); /* the oldest went */
  assert_int_equal(access(path[1], F_OK), 0);
  assert_int_equal(access(path[2], F_OK), 0);
  assert_int_equal(access(stale, F_OK), -1);
  assert_int_equal(access(fresh, F_OK), 0);
  unlink(fresh);
  total = file_size(path[1]) + file_size(path[2]);
  assert_true((double)total <= 2.5 * (double)(size + 64));
  assert_int_equal(s1.disk_entries, 2);
  /* Use entry 1 (a disk hit refreshes its time), so entry 2 is now the least recently used. */
  set_mtime(path[2], t - 80);
  spx_jit_clear_memory();
  assert_int_equal(spx_jit_compile_only("vector", 2, d[1], "sm_90", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_DISK);
  assert_int_equal(spx_jit_compile_only("vector", 2, d[3], "sm_90", &origin), SPX_OK);
  assert_int_equal(access(path[1], F_OK), 0);
  assert_int_equal(access(path[2], F_OK), -1);
  assert_int_equal(access(path[3], F_OK), 0);
  assert_int_equal(count_entries(f->dir, NULL), 2);
  /* A cap below one entry keeps nothing; an invalid cap falls back to the default. */
  env_put("SPX_CACHE_MAX_MB", "0.0000001");
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_90", &origin), SPX_OK);
  assert_int_equal(count_entries(f->dir, NULL), 0);
  env_put("SPX_CACHE_MAX_MB", "lots");
  spx_jit_stats_get(&s1);
  assert_true(s1.disk_cap_mb == 512.0);
}

static void test_cache_off(void **state) {
  fixture *f = (fixture *)*state;
  static const char *const offs[] = {"off", "0", "no", "false"};
  spx_jit_stats s;
  int i, origin;
  DIR *d;
  struct dirent *de;
  (void)state;
  for (i = 0; i < 4; i++) {
    env_put("SPX_CACHE", offs[i]);
    assert_null(spx_jit_cache_dir());
  }
  spx_jit_stats_get(&s);
  assert_int_equal(s.disk_enabled, 0);
  if (spx_test_have_nvrtc()) {
    assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
    assert_int_equal(origin, SPX_JIT_COMPILED);
  }
  /* Nothing at all was written: not even the v1/ directory. */
  d = opendir(f->root);
  assert_non_null(d);
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) fail_msg("%s/%s was written", f->root, de->d_name);
  closedir(d);
  env_put("SPX_CACHE", "on");
  assert_string_equal(spx_jit_cache_dir(), f->root);
}

/* SPX_CACHE_DIR > XDG_CACHE_HOME/spx (absolute only) > HOME/.cache/spx > none. */
static void test_cache_dir_resolution(void **state) {
  char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  (void)state;
  env_put("SPX_CACHE_DIR", "/a/b");
  env_put("XDG_CACHE_HOME", "/x");
  env_put("HOME", "/h");
  assert_string_equal(spx_jit_cache_dir(), "/a/b");
  env_put("SPX_CACHE_DIR", "");
  assert_string_equal(spx_jit_cache_dir(), "/x/spx");
  env_put("SPX_CACHE_DIR", NULL);
  assert_string_equal(spx_jit_cache_dir(), "/x/spx");
  env_put("XDG_CACHE_HOME", "relative/dir"); /* the XDG spec says to ignore it */
  assert_string_equal(spx_jit_cache_dir(), "/h/.cache/spx");
  env_put("XDG_CACHE_HOME", NULL);
  assert_string_equal(spx_jit_cache_dir(), "/h/.cache/spx");
  env_put("HOME", NULL);
  assert_null(spx_jit_cache_dir());
  if (home) env_put("HOME", home);
  if (xdg) env_put("XDG_CACHE_HOME", xdg);
  free(home);
  free(xdg);
}

/* Four processes compile the same kernel into the same directory at the same moment: all
 * succeed, and one valid entry remains (no temporary files). */
static void test_concurrent_processes(void **state) {
  enum { NCHILD = 4 };
  fixture *f = (fixture *)*state;
  const char *defs[] = {"SPX_VALUE_T=float", "SPX_BLOCK=512"};
  pid_t pid[NCHILD];
  int go[2], i, st, ok = 0, ntmp, origin;
  char c;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  spx_jit_clear_memory(); /* the children must not find it in memory */
  assert_int_equal(pipe(go), 0);
  fflush(NULL);
  for (i = 0; i < NCHILD; i++) {
    pid[i] = fork();
    assert_true(pid[i] >= 0);
    if (pid[i] == 0) { /* child: wait for the start signal, compile, report through the exit code */
      int o = -1;
      spx_status s;
      close(go[1]);
      if (read(go[0], &c, 1) < 0) _exit(3);
      s = spx_jit_compile_only("vector", 2, defs, "sm_90", &o);
      _exit(s == SPX_OK && o == SPX_JIT_COMPILED ? 0 : s == SPX_OK ? 2 : 1);
    }
  }
  close(go[0]);
  close(go[1]); /* EOF releases every child at once */
  for (i = 0; i < NCHILD; i++) {
    assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
    if (WIFEXITED(st) && WEXITSTATUS(st) <= 2) ok++; /* 2: it found another's entry: also fine */
    else print_message("child %d: status %d\n", i, st);
  }
  assert_int_equal(ok, NCHILD);
  assert_int_equal(count_entries(f->dir, &ntmp), 1);
  assert_int_equal(ntmp, 0);
  assert_int_equal(spx_jit_compile_only("vector", 2, defs, "sm_90", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_DISK);
}

/* Threads asking for the same and for different kernels at once. */
typedef struct thread_arg { int id; spx_status s; int origin; } thread_arg;
static void *thread_main(void *p) {
  thread_arg *a = (thread_arg *)p;
  const char *d[] = {a->id % 2 ? "SPX_VALUE_T=float" : "SPX_VALUE_T=double"};
  a->s = spx_jit_compile_only("vector", 1, d, "sm_80", &a->origin);
  return NULL;
}

static void test_concurrent_threads(void **state) {
  enum { NT = 6 };
  fixture *f = (fixture *)*state;
  pthread_t th[NT];
  thread_arg a[NT];
  int i;
  (void)state;
  if (!spx_test_have_nvrtc()) skip();
  for (i = 0; i < NT; i++) {
    a[i].id = i;
    assert_int_equal(pthread_create(&th[i], NULL, thread_main, &a[i]), 0);
  }
  for (i = 0; i < NT; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(a[i].s, SPX_OK);
  }
  assert_int_equal(count_entries(f->dir, NULL), 2);
}

/* ---- the disk cache: what may stand in an entry's place, and whom it trusts -------------------- */
static void on_alarm(int sig) {
  static const char msg[] = "test_jit: a JIT cache lookup hung (a FIFO in an entry's place?)\n";
  (void)sig;
  if (write(2, msg, sizeof msg - 1) < 0) {}
  _exit(3);
}

/* A FIFO in an entry's place neither blocks the lookup (open() of a FIFO waits for a writer) nor is
 * read: it counts as a corrupt entry, is compiled again and replaced. A symbolic link in an entry's
 * place is not followed, even to a valid entry: also compiled again and replaced (the link, not its
 * target). */
static void test_disk_entry_not_a_file(void **state) {
  fixture *f = (fixture *)*state;
  char hex[33], path[600], elsewhere[600], *before, *after;
  size_t nb, na;
  spx_jit_stats s0, s1;
  int origin;
  if (!spx_test_have_nvrtc()) skip();
  key_of("vector", 1, dbl, "sm_80", hex);
  entry_path(f, hex, path, sizeof path);
  assert_int_equal(mkdir(f->dir, 0700), 0);
  assert_int_equal(mkfifo(path, 0600), 0);
  signal(SIGALRM, on_alarm);
  alarm(120); /* generous: a compile under the sanitizers; a hang never returns */
  spx_jit_stats_get(&s0);
  assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
  alarm(0);
  signal(SIGALRM, SIG_DFL);
  spx_jit_stats_get(&s1);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(s1.disk_corrupt - s0.disk_corrupt, 1);
  assert_int_equal(s1.disk_writes - s0.disk_writes, 1);
  assert_true(is_regular(path));
  spx_jit_clear_memory();
  assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_DISK);
  /* A link to a valid entry (a copy outside the entry directory). */
  snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", f->root);
  copy_file(path, elsewhere);
  assert_non_null(before = slurp(elsewhere, &nb));
  assert_int_equal(unlink(path), 0);
  assert_int_equal(symlink(elsewhere, path), 0);
  spx_jit_clear_memory();
  spx_jit_stats_get(&s0);
  assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
  spx_jit_stats_get(&s1);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(s1.disk_corrupt - s0.disk_corrupt, 1);
  assert_int_equal(s1.disk_hits, s0.disk_hits);
  assert_true(is_regular(path)); /* the link was replaced ... */
  assert_non_null(after = slurp(elsewhere, &na)); /* ... and its target left as it was */
  assert_int_equal(na, nb);
  assert_memory_equal(after, before, nb);
  free(before);
  free(after);
}

/* Directories the cache creates are 0700 and entries 0600, whatever the umask. */
static void test_disk_private_modes(void **state) {
  fixture *f = (fixture *)*state;
  char root[300], dir[400], hex[33], path[500];
  mode_t old;
  int origin;
  spx_status s;
  if (!spx_test_have_nvrtc()) skip();
  snprintf(root, sizeof root, "%s/new/cache", f->root); /* two levels that do not exist yet */
  snprintf(dir, sizeof dir, "%s/%s", root, SPX_JIT_CACHE_SUBDIR);
  env_put("SPX_CACHE_DIR", root);
  key_of("vector", 1, flt, "sm_80", hex);
  snprintf(path, sizeof path, "%s/%s", dir, hex);
  old = umask(0);
  s = spx_jit_compile_only("vector", 1, flt, "sm_80", &origin);
  umask(old);
  assert_int_equal(s, SPX_OK);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(mode_of(root), 0700);
  assert_int_equal(mode_of(dir), 0700);
  assert_true(is_regular(path));
  assert_int_equal(mode_of(path), 0600);
  spx_jit_clear_memory();
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_DISK);
}

/* One refused cache: one notice naming `bad` and `reason`, disk_enabled 0, nothing read or written
 * (an entry planted in `dir`, when given, is not served) however often the cache is asked. */
static void expect_refused(const char *dir, const char *bad, const char *reason, const char *planted) {
  spx_jit_stats s0, s1, st;
  int64_t bytes = -1, entries = -1;
  char *err, want[600], *before = NULL, *after;
  size_t nb = 0, na;
  int origin, ntmp, n0 = count_entries(dir, NULL);
  capture c;
  if (planted) assert_non_null(before = slurp(planted, &nb));
  c = cap_begin(1);
  spx_jit_stats_get(&s0);
  assert_int_equal(s0.disk_enabled, 0);
  assert_int_equal(spx_jit_disk_usage(&bytes, &entries), SPX_OK);
  assert_int_equal(bytes, 0);
  assert_int_equal(entries, 0);
  if (spx_test_have_nvrtc()) {
    assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
    assert_int_equal(origin, SPX_JIT_COMPILED);
    spx_jit_clear_memory();
    assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
    assert_int_equal(origin, SPX_JIT_COMPILED); /* memory only: no disk hit */
    assert_int_equal(spx_jit_forget("vector", 1, dbl, "sm_80"), SPX_OK);
  }
  assert_int_equal(spx_jit_clear(), SPX_OK);
  spx_jit_stats_get(&s1);
  err = cap_end(&c, 1);
  assert_int_equal(s1.disk_enabled, 0);
  assert_int_equal(s1.disk_writes, s0.disk_writes);
  assert_int_equal(s1.disk_hits, s0.disk_hits);
  assert_int_equal(s1.disk_corrupt, s0.disk_corrupt);
  assert_int_equal(count_entries(dir, &ntmp), n0); /* nothing written, nothing removed */
  assert_int_equal(ntmp, 0);
  snprintf(want, sizeof want, "JIT cache directory %s %s", bad, reason);
  if (count_substr(err, want) != 1 || count_substr(err, "JIT cache directory") != 1)
    fail_msg("want one notice \"%s\", got:\n%s", want, err);
  assert_non_null(strstr(err, "running without the disk cache"));
  free(err);
  if (planted) {
    assert_non_null(after = slurp(planted, &na));
    assert_int_equal(na, nb);
    assert_memory_equal(after, before, nb);
    free(after);
    free(before);
  }
  spx_jit_stats_get(&st); /* and the verdict stays for the path: still off, no second notice */
  assert_int_equal(st.disk_enabled, 0);
}

/* A cache directory (or its v1) that others can write to, a symbolic link, or another user's:
 * refused with one notice, and the process runs on the memory cache alone. */
static void test_disk_untrusted_dir(void **state) {
  fixture *f = (fixture *)*state;
  char good[300], gdir[400], bad[400], bdir[500], link[300], hex[33], gpath[500], bpath[600];
  spx_jit_stats st;
  int origin;
  snprintf(good, sizeof good, "%s/good", f->root);
  snprintf(gdir, sizeof gdir, "%s/%s", good, SPX_JIT_CACHE_SUBDIR);
  /* The cache directory itself writable by everyone. */
  assert_int_equal(chmod(f->root, 0777), 0);
  expect_refused(f->dir, f->root, "is writable by others (mode 0777)", NULL);
  assert_int_equal(access(f->dir, F_OK), -1); /* not even v1 was made */
  assert_int_equal(chmod(f->root, 0700), 0);
  /* A trusted one, with an entry (by NVRTC when it loads), for the cases below to plant. */
  assert_int_equal(mkdir(good, 0700), 0);
  env_put("SPX_CACHE_DIR", good);
  spx_jit_stats_get(&st);
  assert_int_equal(st.disk_enabled, 1);
  if (spx_test_have_nvrtc()) {
    key_of("vector", 1, dbl, "sm_80", hex);
    snprintf(gpath, sizeof gpath, "%s/%s", gdir, hex);
    spx_jit_clear_memory();
    assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
    assert_true(is_regular(gpath));
    spx_jit_clear_memory();
  }
  /* v1 group-writable (the cache directory fine), holding a planted valid entry. */
  snprintf(bad, sizeof bad, "%s/groupv1", f->root);
  snprintf(bdir, sizeof bdir, "%s/%s", bad, SPX_JIT_CACHE_SUBDIR);
  assert_int_equal(mkdir(bad, 0700), 0);
  assert_int_equal(mkdir(bdir, 0700), 0);
  assert_int_equal(chmod(bdir, 0770), 0);
  if (spx_test_have_nvrtc()) {
    snprintf(bpath, sizeof bpath, "%s/%s", bdir, hex);
    copy_file(gpath, bpath);
  }
  env_put("SPX_CACHE_DIR", bad);
  expect_refused(bdir, bdir, "is writable by its group (mode 0770)", spx_test_have_nvrtc() ? bpath : NULL);
  /* A symbolic link to the trusted directory. */
  snprintf(link, sizeof link, "%s/link", f->root);
  assert_int_equal(symlink(good, link), 0);
  env_put("SPX_CACHE_DIR", link);
  expect_refused(gdir, link, "is a symbolic link", spx_test_have_nvrtc() ? gpath : NULL);
  snprintf(bad, sizeof bad, "%s/", link); /* a trailing slash: lstat would follow the link */
  env_put("SPX_CACHE_DIR", bad);
  expect_refused(gdir, link, "is a symbolic link", spx_test_have_nvrtc() ? gpath : NULL);
  /* Another user's (root can make one; others skip this case). */
  if (geteuid() == 0) {
    char other[300], odir[400];
    snprintf(other, sizeof other, "%s/nobodys", f->root);
    snprintf(odir, sizeof odir, "%s/%s", other, SPX_JIT_CACHE_SUBDIR);
    assert_int_equal(mkdir(other, 0700), 0);
    assert_int_equal(chown(other, 65534, 65534), 0);
    env_put("SPX_CACHE_DIR", other);
    expect_refused(odir, other, "is owned by uid 65534", NULL);
  } else {
    print_message("not root: the other user's directory case is skipped\n");
  }
  /* The trusted one still works. */
  env_put("SPX_CACHE_DIR", good);
  spx_jit_stats_get(&st);
  assert_int_equal(st.disk_enabled, 1);
  if (spx_test_have_nvrtc()) {
    assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_80", &origin), SPX_OK);
    assert_int_equal(origin, SPX_JIT_DISK);
  }
}

/* An entry others could have written is not served: a compile happens instead (not a corruption).
 * This user's is then replaced by a private one; another user's is left alone, by lookups,
 * spx_jit_forget and spx_jit_clear alike. */
static void test_disk_untrusted_entry(void **state) {
  fixture *f = (fixture *)*state;
  char hex[33], path[600], *err, *before, *after;
  size_t nb, na;
  spx_jit_stats s0, s1;
  int64_t bytes, entries;
  int origin;
  capture c;
  if (!spx_test_have_nvrtc()) skip();
  key_of("vector", 1, flt, "sm_80", hex);
  entry_path(f, hex, path, sizeof path);
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  assert_int_equal(mode_of(path), 0600);
  /* Writable by everyone: a miss. */
  assert_int_equal(chmod(path, 0666), 0);
  spx_jit_clear_memory();
  spx_jit_stats_get(&s0);
  c = cap_begin(1);
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  err = cap_end(&c, 1);
  spx_jit_stats_get(&s1);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(s1.compiles - s0.compiles, 1);
  assert_int_equal(s1.misses - s0.misses, 1);
  assert_int_equal(s1.disk_hits, s0.disk_hits);
  assert_int_equal(s1.disk_corrupt, s0.disk_corrupt);
  if (!strstr(err, path) || !strstr(err, "writable by others (mode 0666)"))
    fail_msg("no warning about %s:\n%s", path, err);
  free(err);
  assert_int_equal(mode_of(path), 0600); /* replaced by a private one, served from now on */
  spx_jit_clear_memory();
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_DISK);
  /* Group-writable: a miss too. */
  assert_int_equal(chmod(path, 0620), 0);
  spx_jit_clear_memory();
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(mode_of(path), 0600);
  if (geteuid() != 0) {
    print_message("not root: the other user's entry case is skipped\n");
    return;
  }
  /* Another user's (mode 0600): a miss, and the file stays as it was. */
  assert_non_null(before = slurp(path, &nb));
  assert_int_equal(chown(path, 65534, 65534), 0);
  spx_jit_clear_memory();
  spx_jit_stats_get(&s0);
  assert_int_equal(spx_jit_compile_only("vector", 1, flt, "sm_80", &origin), SPX_OK);
  spx_jit_stats_get(&s1);
  assert_int_equal(origin, SPX_JIT_COMPILED);
  assert_int_equal(s1.disk_hits, s0.disk_hits);
  assert_int_equal(s1.disk_corrupt, s0.disk_corrupt);
  assert_int_equal(s1.disk_writes, s0.disk_writes);
  assert_int_equal(spx_jit_disk_usage(&bytes, &entries), SPX_OK);
  assert_int_equal(entries, 0); /* not one of ours */
  assert_int_equal(spx_jit_forget("vector", 1, flt, "sm_80"), SPX_OK);
  assert_int_equal(spx_jit_clear(), SPX_OK);
  {
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_uid, 65534);
  }
  assert_non_null(after = slurp(path, &na));
  assert_int_equal(na, nb);
  assert_memory_equal(after, before, nb);
  free(before);
  free(after);
}

/* spx_jit_clear and spx_jit_forget remove this user's entries and temporary files only: not
 * symbolic links (nor what they point to), FIFOs, other names; and nothing at all through a
 * symbolic link in the entry directory's place. */
static void test_clear_and_forget_stay_inside(void **state) {
  fixture *f = (fixture *)*state;
  static const char key1[] = "0123456789abcdef0123456789abcdef", key2[] = "fedcba9876543210fedcba9876543210",
                    key3[] = "00000000000000000000000000000000", key4[] = "11111111111111111111111111111111";
  char out[300], p[600], q[600], hex[33], *err;
  int origin, fd;
  capture c;
  snprintf(out, sizeof out, "%s/outside", f->root);
  assert_int_equal(mkdir(out, 0700), 0);
  /* outside/: a key-named file, a temporary-named one, another */
#define OUTFILE(name)                                                         \
  do {                                                                        \
    snprintf(p, sizeof p, "%s/%s", out, name);                                \
    assert_true((fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600)) >= 0);     \
    assert_int_equal(write(fd, "x", 1), 1);                                   \
    close(fd);                                                                \
  } while (0)
  OUTFILE(key1);
  OUTFILE(".tmp-" "0123456789abcdef0123456789abcdef-AAAAAA");
  OUTFILE("notes");
  /* v1 is a link to outside/: refused, nothing removed. */
  assert_int_equal(symlink(out, f->dir), 0);
  c = cap_begin(1);
  assert_int_equal(spx_jit_clear(), SPX_OK);
  if (spx_test_have_nvrtc()) {
    snprintf(p, sizeof p, "%s/%s", out, key1);
    key_of("vector", 1, dbl, "sm_90", hex);
    snprintf(q, sizeof q, "%s/%s", out, hex);
    copy_file(p, q); /* what forget would remove through the link */
    assert_int_equal(spx_jit_forget("vector", 1, dbl, "sm_90"), SPX_OK);
    assert_int_equal(access(q, F_OK), 0);
  }
  err = cap_end(&c, 1);
  assert_non_null(strstr(err, "is a symbolic link"));
  free(err);
  assert_int_equal(count_entries(out, &fd), spx_test_have_nvrtc() ? 2 : 1);
  assert_int_equal(fd, 1);
  snprintf(p, sizeof p, "%s/notes", out);
  assert_int_equal(access(p, F_OK), 0);
  /* A real v1 (another path: the first's verdict stays) with links, a FIFO and one real entry. */
  {
    char root2[300], dir2[400];
    snprintf(root2, sizeof root2, "%s/real", f->root);
    snprintf(dir2, sizeof dir2, "%s/%s", root2, SPX_JIT_CACHE_SUBDIR);
    assert_int_equal(mkdir(root2, 0700), 0);
    assert_int_equal(mkdir(dir2, 0700), 0);
    env_put("SPX_CACHE_DIR", root2);
    snprintf(p, sizeof p, "%s/%s", out, key1);
    snprintf(q, sizeof q, "%s/%s", dir2, key1);
    assert_int_equal(symlink(p, q), 0);                           /* a key-named link out */
    snprintf(p, sizeof p, "%s/.tmp-0123456789abcdef0123456789abcdef-AAAAAA", out);
    snprintf(q, sizeof q, "%s/.tmp-0123456789abcdef0123456789abcdef-BBBBBB", dir2);
    assert_int_equal(symlink(p, q), 0);                           /* a temporary-named link out */
    snprintf(q, sizeof q, "%s/%s", dir2, key2);
    assert_int_equal(mkfifo(q, 0600), 0);                         /* a key-named FIFO */
    snprintf(q, sizeof q, "%s/%s", dir2, key3);
    copy_file(p, q);                                              /* a real entry: removed */
    snprintf(q, sizeof q, "%s/%s", dir2, key4);
    assert_int_equal(symlink(out, q), 0);                         /* a key-named link to a directory */
    assert_int_equal(spx_jit_clear(), SPX_OK);
    snprintf(q, sizeof q, "%s/%s", dir2, key3);
    assert_int_equal(access(q, F_OK), -1);
    snprintf(q, sizeof q, "%s/%s", dir2, key1);
    assert_int_equal(mode_of(q) >= 0, 1);                         /* the link itself stays */
    snprintf(q, sizeof q, "%s/%s", dir2, key2);
    assert_int_equal(mode_of(q) >= 0, 1);
    snprintf(q, sizeof q, "%s/.tmp-0123456789abcdef0123456789abcdef-BBBBBB", dir2);
    assert_int_equal(mode_of(q) >= 0, 1);
    assert_int_equal(access(dir2, F_OK), 0);                      /* not empty: stays */
    /* spx_jit_forget of a key whose place holds a link out: the link and its target stay. */
    if (spx_test_have_nvrtc()) {
      assert_int_equal(spx_jit_compile_only("vector", 1, dbl, "sm_90", &origin), SPX_OK);
      key_of("vector", 1, dbl, "sm_90", hex);
      snprintf(q, sizeof q, "%s/%s", dir2, hex);
      assert_true(is_regular(q));
      assert_int_equal(spx_jit_forget("vector", 1, dbl, "sm_90"), SPX_OK); /* a real entry goes */
      assert_int_equal(access(q, F_OK), -1);
      snprintf(p, sizeof p, "%s/%s", out, hex);
      assert_int_equal(symlink(p, q), 0);
      assert_int_equal(spx_jit_forget("vector", 1, dbl, "sm_90"), SPX_OK);
      assert_int_equal(mode_of(q) >= 0, 1);
      assert_true(is_regular(p));
    }
  }
  assert_int_equal(count_entries(out, &fd), spx_test_have_nvrtc() ? 2 : 1);
  assert_int_equal(fd, 1);
#undef OUTFILE
}

/* ---- with a GPU ------------------------------------------------------------------------------ */
static spx_context *gpu_ctx(void) {
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  spx_context *ctx = NULL;
  if (spx_device_count() == 0 || !spx_test_have_nvrtc() || spx_context_create(&o, &ctx) != SPX_OK) return NULL;
  return ctx;
}

static spx_status launch(spx_context *ctx, void *fn, int64_t n, void **args) {
  const spx__cuda_api *cu = spx__cuda();
  unsigned grid = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
  spx_status s;
  if ((s = spx__ctx_push(ctx))) return s;
  s = spx__cu_check(cu->cuLaunchKernel((spx__CUfunction)fn, grid, 1, 1, 256, 1, 1, 0, ctx->stream, args, NULL),
                    "cuLaunchKernel");
  if (!s) s = spx__cu_check(cu->cuStreamSynchronize(ctx->stream), "cuStreamSynchronize");
  spx__ctx_pop(ctx);
  return s;
}

static void test_host_context(void **state) {
  spx_context_options o = {SPX_BACKEND_HOST, 0};
  spx_context *ctx;
  void *fn = (void *)1;
  (void)state;
  assert_int_equal(spx_context_create(&o, &ctx), SPX_OK);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_axpby", 1, dbl, &fn), SPX_NOT_AVAILABLE);
  assert_null(fn);
  assert_int_equal(spx_jit_kernel(NULL, "vector", "spx_axpby", 1, dbl, &fn), SPX_INVALID_ARGUMENT);
  spx_context_destroy(ctx);
}

/* y = a x + b y through the JIT, in double and float, against the host; the times of a cold
 * compile, a disk hit and a memory hit (printed; the targets are 150 ms, 3 ms and 5 us). */
static void test_gpu_axpby(void **state) {
  enum { N = 1000003 };
  spx_context *ctx = gpu_ctx();
  double *x, *y, *ref, a = 1.75, b = -0.5, t0, cold, disk, mem;
  float *xf, *yf;
  spx_devptr dx = 0, dy = 0;
  void *fn = NULL, *fn2 = NULL, *args[5];
  long long n = N;
  spx_jit_stats s0, s1;
  int64_t i;
  int k;
  (void)state;
  if (!ctx) skip();
  x = (double *)malloc(N * sizeof *x);
  y = (double *)malloc(N * sizeof *y);
  ref = (double *)malloc(N * sizeof *ref);
  xf = (float *)malloc(N * sizeof *xf);
  yf = (float *)malloc(N * sizeof *yf);
  spx_test_fill(x, N);
  spx_test_fill(y, N);
  for (i = 0; i < N; i++) ref[i] = a * x[i] + b * y[i];
  /* Cold: nothing in memory or on disk. */
  spx_jit_stats_get(&s0);
  t0 = now_s();
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_axpby", 1, dbl, &fn), SPX_OK);
  cold = now_s() - t0;
  spx_jit_stats_get(&s1);
  assert_non_null(fn);
  assert_int_equal(s1.compiles - s0.compiles, 1);
  /* Memory hits. */
  t0 = now_s();
  for (k = 0; k < 100000; k++) assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_axpby", 1, dbl, &fn2), SPX_OK);
  mem = (now_s() - t0) / 100000;
  assert_ptr_equal(fn, fn2);
  /* Disk hit: forget memory, load again from the entry written above. */
  spx_jit_clear_memory();
  spx_jit_stats_get(&s0);
  t0 = now_s();
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_axpby", 1, dbl, &fn), SPX_OK);
  disk = now_s() - t0;
  spx_jit_stats_get(&s1);
  assert_int_equal(s1.disk_hits - s0.disk_hits, 1);
  assert_int_equal(s1.compiles, s0.compiles);
  print_message("JIT vector.cu on %s: cold compile+load %.1f ms (target 150), disk hit+load %.3f ms "
                "(target 3), memory hit %.3f us (target 5); module load %.3f ms\n",
                ctx->info.name, cold * 1e3, disk * 1e3, mem * 1e6, s1.load_ms_total - s0.load_ms_total);
  assert_true(mem < 1e-3);
  /* Another kernel of the same module: no compile, no load. */
  spx_jit_stats_get(&s0);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_scale", 1, dbl, &fn2), SPX_OK);
  spx_jit_stats_get(&s1);
  assert_true(fn2 != NULL && fn2 != fn);
  assert_int_equal(s1.compiles, s0.compiles);
  assert_int_equal(s1.disk_hits, s0.disk_hits);
  assert_int_equal(s1.mem_hits - s0.mem_hits, 1);
  /* Run it. */
  assert_int_equal(spx_device_alloc(ctx, N * sizeof(double), &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx, N * sizeof(double), &dy), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, dx, x, N * sizeof(double)), SPX_OK);
  assert_int_equal(spx_device_upload(ctx, dy, y, N * sizeof(double)), SPX_OK);
  args[0] = &n; args[1] = &a; args[2] = &dx; args[3] = &b; args[4] = &dy;
  assert_int_equal(launch(ctx, fn, N, args), SPX_OK);
  assert_int_equal(spx_device_download(ctx, y, dy, N * sizeof(double)), SPX_OK);
  assert_true(spx_test_relerr(y, ref, N) < 1e-14);
  /* b = 0: y is not read (poisoned with NaN). */
  b = 0;
  assert_int_equal(spx_device_memset(ctx, dy, 0xff, N * sizeof(double)), SPX_OK);
  assert_int_equal(launch(ctx, fn, N, args), SPX_OK);
  assert_int_equal(spx_device_download(ctx, y, dy, N * sizeof(double)), SPX_OK);
  for (i = 0; i < N; i++) ref[i] = a * x[i];
  assert_true(spx_test_relerr(y, ref, N) < 1e-15);
  /* float. */
  {
    float af = 2.5f, bf = 0.25f;
    for (i = 0; i < N; i++) { xf[i] = (float)x[i]; yf[i] = (float)spx_test_rand(); ref[i] = (double)(af * xf[i] + bf * yf[i]); }
    assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_axpby", 1, flt, &fn), SPX_OK);
    assert_int_equal(spx_device_upload(ctx, dx, xf, N * sizeof(float)), SPX_OK);
    assert_int_equal(spx_device_upload(ctx, dy, yf, N * sizeof(float)), SPX_OK);
    args[1] = &af; args[3] = &bf;
    assert_int_equal(launch(ctx, fn, N, args), SPX_OK);
    assert_int_equal(spx_device_download(ctx, yf, dy, N * sizeof(float)), SPX_OK);
    for (i = 0; i < N; i++) y[i] = yf[i];
    assert_true(spx_test_relerr(y, ref, N) < 1e-6);
  }
  /* An unknown kernel of a known template. */
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_nope", 1, dbl, &fn), SPX_INVALID_ARGUMENT);
  assert_non_null(strstr(spx_last_error(), "spx_nope"));
  spx_device_free(ctx, dx);
  spx_device_free(ctx, dy);
  free(x); free(y); free(ref); free(xf); free(yf);
  spx_context_destroy(ctx);
}

/* fill, scale, copy_stream; a handle outlives the context it was made in; copy bandwidth. */
/* spx__jit_where, as the planner prices a kernel by it: nowhere once forgotten, loaded once
 * spx_jit_kernel handed it out, held (on disk, not loaded) after the memory table is cleared. */
static void test_gpu_jit_where(void **state) {
  spx_context *ctx = gpu_ctx();
  spx_device_info info;
  char arch[32];
  void *fn = NULL;
  (void)state;
  if (!ctx) skip();
  assert_int_equal(spx_context_device_info(ctx, &info), SPX_OK);
  assert_int_equal(spx__jit_device_arch(info.cc_major, info.cc_minor, arch), SPX_OK);
  assert_int_equal(spx_jit_forget("vector", 1, dbl, arch), SPX_OK);
  assert_int_equal(spx__jit_where(ctx, "vector", "spx_fill", 1, dbl), SPX__JIT_NOWHERE);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_fill", 1, dbl, &fn), SPX_OK);
  assert_int_equal(spx__jit_where(ctx, "vector", "spx_fill", 1, dbl), SPX__JIT_LOADED);
  /* another kernel of the same module: its image is in memory, its handle not handed out yet */
  assert_int_equal(spx__jit_where(ctx, "vector", "spx_scale", 1, dbl), SPX__JIT_HELD);
  assert_int_equal(spx__jit_where(ctx, "no_such_template", "spx_fill", 1, dbl), SPX__JIT_NOWHERE);
  assert_int_equal(spx__jit_where(NULL, "vector", "spx_fill", 1, dbl), SPX__JIT_NOWHERE);
  spx_context_destroy(ctx);
  spx_jit_clear_memory();
  ctx = gpu_ctx();
  assert_non_null(ctx);
  if (spx_jit_cache_dir()) assert_int_equal(spx__jit_where(ctx, "vector", "spx_fill", 1, dbl), SPX__JIT_HELD);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_fill", 1, dbl, &fn), SPX_OK);
  assert_int_equal(spx__jit_where(ctx, "vector", "spx_fill", 1, dbl), SPX__JIT_LOADED);
  spx_context_destroy(ctx);
}

static void test_gpu_vector_kernels(void **state) {
  enum { N = 1 << 20 };
  spx_context *ctx = gpu_ctx(), *ctx2 = NULL;
  spx_context_options o = {SPX_BACKEND_CUDA, 0};
  void *fill = NULL, *scale = NULL, *copy = NULL, *args[3];
  spx_devptr dx = 0, dy = 0, bx = 0, by = 0;
  double *h, v = 3.0, a = -2.0, ms;
  long long n = N, nb;
  spx_timer *t = NULL;
  int64_t i;
  (void)state;
  if (!ctx) skip();
  h = (double *)malloc(N * sizeof *h);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_fill", 1, dbl, &fill), SPX_OK);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_scale", 1, dbl, &scale), SPX_OK);
  assert_int_equal(spx_jit_kernel(ctx, "vector", "spx_copy_stream", 1, dbl, &copy), SPX_OK);
  spx_context_destroy(ctx); /* the handles stay valid: spx holds the primary context */
  assert_int_equal(spx_context_create(&o, &ctx2), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx2, N * sizeof(double), &dx), SPX_OK);
  assert_int_equal(spx_device_alloc(ctx2, N * sizeof(double), &dy), SPX_OK);
  args[0] = &n; args[1] = &v; args[2] = &dx;
  assert_int_equal(launch(ctx2, fill, N, args), SPX_OK);
  args[1] = &a;
  assert_int_equal(launch(ctx2, scale, N, args), SPX_OK);
  args[1] = &dx; args[2] = &dy;
  assert_int_equal(spx_device_memset(ctx2, dy, 0xff, N * sizeof(double)), SPX_OK);
  assert_int_equal(launch(ctx2, copy, N, args), SPX_OK);
  assert_int_equal(spx_device_download(ctx2, h, dy, N * sizeof(double)), SPX_OK);
  for (i = 0; i < N; i++)
    if (h[i] != -6.0) fail_msg("y[%lld] = %g, want -6", (long long)i, h[i]);
  /* STREAM copy of 2 x 512 MiB. */
  nb = (512ll << 20) / 8;
  if (spx_device_alloc(ctx2, (size_t)nb * 8, &bx) == SPX_OK && spx_device_alloc(ctx2, (size_t)nb * 8, &by) == SPX_OK) {
    args[0] = &nb; args[1] = &bx; args[2] = &by;
    assert_int_equal(launch(ctx2, copy, nb, args), SPX_OK); /* warm-up */
    assert_int_equal(spx_timer_create(ctx2, &t), SPX_OK);
    assert_int_equal(spx_timer_start(t), SPX_OK);
    assert_int_equal(launch(ctx2, copy, nb, args), SPX_OK);
    assert_int_equal(spx_timer_stop(t, &ms), SPX_OK);
    print_message("spx_copy_stream: %.0f GB/s (2 x 512 MiB, double, 4096 x 256 threads)\n",
                  2.0 * (double)nb * 8 / (ms * 1e-3) / 1e9);
    spx_timer_destroy(t);
  }
  spx_device_free(ctx2, bx);
  spx_device_free(ctx2, by);
  spx_device_free(ctx2, dx);
  spx_device_free(ctx2, dy);
  free(h);
  spx_context_destroy(ctx2);
}

/* ---- The tier switch, with a fake slow compiler (host: no GPU, no NVRTC) ----------------------------
 * The tiered JIT runs a stand-in while a background job compiles; spx__tier_settle is the switch
 * every tiered dmatrix goes through. Here the job sleeps instead of compiling and the owner's
 * "kernels" are labels, so the switch's rules are checked where CI runs. */
enum { RUN_NOTHING = 0, RUN_STANDIN = 1, RUN_FINAL = 2, RUN_FALLBACK = 3 };
typedef struct fake_owner {
  int running;          /* RUN_* */
  int final_binds, fallback_binds;
} fake_owner;
typedef struct fake_compile {
  int ms, fail;
  int extra_ms;         /* work after publishing the result early (the generic kernel's compile) */
  atomic_int *finished; /* set as the job ends (it outlives its owner) */
} fake_compile;

static spx_status fake_compile_run(spx__job *j, void *v) {
  fake_compile *c = (fake_compile *)v;
  struct timespec ts = {c->ms / 1000, (long)(c->ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  if (c->extra_ms > 0) {
    struct timespec te = {c->extra_ms / 1000, (long)(c->extra_ms % 1000) * 1000000L};
    spx__job_publish(j, SPX_OK);
    nanosleep(&te, NULL);
  }
  if (c->finished) atomic_store(c->finished, 1);
  return c->fail ? spx__fail(SPX_NVRTC, "fake compile of the test kernel failed") : SPX_OK;
}

static spx_status fake_bind(void *v, int final) {
  fake_owner *o = (fake_owner *)v;
  if (final) { o->final_binds++; o->running = RUN_FINAL; }
  else { o->fallback_binds++; o->running = RUN_FALLBACK; }
  return SPX_OK;
}

static spx__job *fake_start(int ms, int fail, atomic_int *finished) {
  fake_compile *c = (fake_compile *)calloc(1, sizeof *c);
  assert_non_null(c);
  c->ms = ms; c->fail = fail; c->finished = finished;
  return spx__job_start(fake_compile_run, c);
}

/* One "SpMV": what the owner runs after the non-blocking switch (blocking when nothing runs). */
static int fake_spmv(spx__tier *t, fake_owner *o) {
  assert_int_equal(spx__tier_settle(t, t->state == SPX__TIER_NONE, fake_bind, o, "test"), SPX_OK);
  return o->running;
}

static void wait_done(spx__job *j) {
  int i;
  for (i = 0; i < 400 && !spx__job_done(j); i++) {
    struct timespec ts = {0, 5000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(spx__job_done(j));
}

static void test_tier_switch_fake_compiler(void **state) {
  spx__tier t;
  fake_owner o;
  double t0;
  int i;
  (void)state;
  env_put("SPX_QUIET", "1");
  /* a stand-in runs at once, and keeps running while the compile is under way */
  memset(&t, 0, sizeof t); memset(&o, 0, sizeof o);
  o.running = RUN_STANDIN;
  t.state = SPX__TIER_STANDIN;
  assert_non_null(t.job = fake_start(300, 0, NULL));
  assert_true(spx__tier_runnable(&t));
  t0 = spx__now();
  for (i = 0; i < 5; i++) assert_int_equal(fake_spmv(&t, &o), RUN_STANDIN);
  assert_true(spx__now() - t0 < 0.2); /* nobody waited for the 300 ms compile */
  assert_int_equal(t.state, SPX__TIER_STANDIN);
  /* the first call after the compile ended switches, once */
  wait_done(t.job);
  assert_int_equal(fake_spmv(&t, &o), RUN_FINAL);
  for (i = 0; i < 5; i++) assert_int_equal(fake_spmv(&t, &o), RUN_FINAL);
  assert_int_equal(o.final_binds, 1);
  assert_int_equal(o.fallback_binds, 0);
  assert_int_equal(t.state, SPX__TIER_FINAL);
  assert_int_equal(t.fell_back, 0);
  assert_null(t.job);

  /* nothing to run: not runnable until the compile ends, and the first call waits for it */
  memset(&t, 0, sizeof t); memset(&o, 0, sizeof o);
  t.state = SPX__TIER_NONE;
  assert_non_null(t.job = fake_start(150, 0, NULL));
  assert_false(spx__tier_runnable(&t));
  t0 = spx__now();
  assert_int_equal(fake_spmv(&t, &o), RUN_FINAL);
  assert_true(spx__now() - t0 > 0.1);
  assert_true(spx__tier_runnable(&t));

  /* a failed compile keeps the stand-in (no bind at all) ... */
  memset(&t, 0, sizeof t); memset(&o, 0, sizeof o);
  o.running = RUN_STANDIN;
  t.state = SPX__TIER_STANDIN;
  assert_non_null(t.job = fake_start(20, 1, NULL));
  wait_done(t.job);
  assert_int_equal(fake_spmv(&t, &o), RUN_STANDIN);
  assert_int_equal(o.final_binds + o.fallback_binds, 0);
  assert_int_equal(t.fell_back, 1);
  assert_int_equal(t.state, SPX__TIER_FINAL);
  /* ... or, where nothing ran, binds the fallback */
  memset(&t, 0, sizeof t); memset(&o, 0, sizeof o);
  t.state = SPX__TIER_NONE;
  assert_non_null(t.job = fake_start(20, 1, NULL));
  assert_int_equal(fake_spmv(&t, &o), RUN_FALLBACK);
  assert_int_equal(o.fallback_binds, 1);
  assert_int_equal(t.fell_back, 1);

  /* a job that publishes early lets the owner switch while it goes on (and its late return of a
   * failure counts for nothing) */
  {
    static atomic_int finished;
    fake_compile *c = (fake_compile *)calloc(1, sizeof *c);
    atomic_store(&finished, 0);
    c->ms = 10; c->extra_ms = 300; c->fail = 1; c->finished = &finished;
    memset(&t, 0, sizeof t); memset(&o, 0, sizeof o);
    t.state = SPX__TIER_NONE;
    t0 = spx__now();
    assert_non_null(t.job = spx__job_start(fake_compile_run, c));
    assert_int_equal(fake_spmv(&t, &o), RUN_FINAL);
    assert_true(spx__now() - t0 < 0.25);
    assert_int_equal(t.fell_back, 0);
    assert_false(atomic_load(&finished));
    for (i = 0; i < 400 && !atomic_load(&finished); i++) {
      struct timespec ts = {0, 5000000L};
      nanosleep(&ts, NULL);
    }
    assert_true(atomic_load(&finished));
  }

  /* an owner that lets go mid-compile does not wait, and the job still finishes (then frees itself:
   * the sanitizer builds see a leak or a use after free otherwise) */
  {
    static atomic_int finished;
    spx__job *j;
    atomic_store(&finished, 0);
    assert_non_null(j = fake_start(100, 0, &finished));
    t0 = spx__now();
    spx__job_release(j);
    assert_true(spx__now() - t0 < 0.05);
    for (i = 0; i < 400 && !atomic_load(&finished); i++) {
      struct timespec ts = {0, 5000000L};
      nanosleep(&ts, NULL);
    }
    assert_true(atomic_load(&finished));
    {
      struct timespec ts = {0, 20000000L}; /* the thread's last steps after fn returned */
      nanosleep(&ts, NULL);
    }
  }
  env_put("SPX_QUIET", NULL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_template_table),
      T(test_committed_table_is_fresh),
      T(test_templates_nvcc),
      T(test_define_validation),
      T(test_key_inputs),
      T(test_every_template_compiles),
      T(test_convert_kernels_compile),
      T(test_compile_error),
      T(test_disk_store_and_hit),
      T(test_disk_corruption),
      T(test_disk_eviction),
      T(test_cache_off),
      T(test_cache_dir_resolution),
      T(test_concurrent_processes),
      T(test_concurrent_threads),
      T(test_disk_entry_not_a_file),
      T(test_disk_private_modes),
      T(test_disk_untrusted_dir),
      T(test_disk_untrusted_entry),
      T(test_clear_and_forget_stay_inside),
      T(test_host_context),
      T(test_gpu_axpby),
      T(test_gpu_jit_where), T(test_gpu_vector_kernels),
      T(test_tier_switch_fake_compiler),
  };
  return cmocka_run_group_tests_name("jit", tests, NULL, NULL);
}
