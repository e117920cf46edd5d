/* Tests of the spx command itself ($SPX_BIN, set by tests/run.sh): sizes printed by `spx info`,
 * generator round trips through files, and exit codes and messages for bad use. */
#define _POSIX_C_SOURCE 200809L
#include <sys/wait.h>
#include <unistd.h>

#include "spx_test.h"

/* Runs `$SPX_BIN args` with stderr folded into stdout; returns the exit code, output in buf. */
static int spx_cli_run_cmd(const char *args, char *buf, size_t len) {
  char cmd[2048];
  const char *bin = getenv("SPX_BIN");
  FILE *p;
  size_t n;
  int rc;
  snprintf(cmd, sizeof cmd, "SPX_QUIET=1 '%s' %s 2>&1", bin ? bin : "out/spx", args);
  p = popen(cmd, "r");
  if (!p) return -1;
  n = fread(buf, 1, len - 1, p);
  buf[n] = 0;
  rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int spx_cli_have_bin(void) {
  const char *bin = getenv("SPX_BIN");
  FILE *f = fopen(bin ? bin : "out/spx", "rb");
  if (f) fclose(f);
  return f != NULL;
}

/* A fresh file name from a mkstemp template (the file is made, empty, and closed). */
static void spx_cli_tmpname(char *tmpl) {
  int fd = mkstemp(tmpl);
  assert_true(fd >= 0);
  close(fd);
}

static long long spx_json_int(const char *json, const char *key) {
  char pat[128];
  const char *p;
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  p = strstr(json, pat);
  return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void test_info_bcsstk16(void **state) {
  static char out[1 << 16];
  char args[1200], path[1024];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  spx_test_matrix_path("bcsstk16", path, sizeof path);
  snprintf(args, sizeof args, "info --json '%s'", path);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  /* SuiteSparse HB/bcsstk16: 4884 x 4884, 147631 stored (lower triangle), 290378 in full. */
  assert_int_equal(spx_json_int(out, "nrows"), 4884);
  assert_int_equal(spx_json_int(out, "ncols"), 4884);
  assert_int_equal(spx_json_int(out, "entries"), 147631);
  assert_int_equal(spx_json_int(out, "nnz"), 290378);
  snprintf(args, sizeof args, "info '%s'", path);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  assert_non_null(strstr(out, "4884"));
}

/* The tuner's eval corpus (issue 29): bench/corpus/split.tsv is what `spx select --list` gives for
 * the shared and generated sets (the rule is stable), every name sits in exactly one half, both
 * halves are used, the shared group covers MANIFEST.tsv, and a replicated matrix keeps its shared
 * name's half. */
static void test_corpus_split(void **state) {
  static char out[1 << 17], file[1 << 17], line[512];
  spx_test_entry *m = NULL;
  int nm = spx_test_manifest(&m), i, nfit = 0, nval = 0, nshared = 0;
  FILE *f = fopen("bench/corpus/split.tsv", "r");
  size_t used = 0;
  char args[1400];
  (void)state;
  if (!spx_cli_have_bin()) { free(m); skip(); }
  assert_non_null(f);
  assert_true(nm > 100);
  while (fgets(line, sizeof line, f)) {
    char g[32], h[32], name[256];
    if (line[0] == '#') continue;
    assert_int_equal(sscanf(line, "%31s %31s %255s", g, h, name), 3);
    assert_true(!strcmp(h, "fit") || !strcmp(h, "validation"));
    nfit += !strcmp(h, "fit");
    nval += !strcmp(h, "validation");
    if (!strcmp(g, "shared")) nshared++;
    used += (size_t)snprintf(file + used, sizeof file - used, "%s\t%s\t%s\n", g, h, name);
    assert_true(used < sizeof file);
  }
  fclose(f);
  assert_int_equal(nshared, nm);
  assert_true(nfit > nm / 4 && nval > nm / 4);
  /* every shared name once, in the file and in the manifest */
  for (i = 0; i < nm; i++) {
    char fit[300], val[300];
    const char *a, *b;
    snprintf(fit, sizeof fit, "shared\tfit\t%s\n", m[i].name);
    snprintf(val, sizeof val, "shared\tvalidation\t%s\n", m[i].name);
    a = strstr(file, fit);
    b = strstr(file, val);
    if (!a == !b) fail_msg("%s is in %s half of split.tsv", m[i].name, a ? "both the fit and the validation" : "neither");
    assert_null(strstr((a ? a : b) + 1, a ? fit : val));
  }
  /* the CLI gives the same halves, group by group */
  {
    static const char *const groups[] = {"shared", "generated"};
    int g;
    for (g = 0; g < 2; g++) {
      char *tok, *save = NULL;
      snprintf(args, sizeof args, "select --list --set %s", groups[g]);
      setenv("SPX_SHARED_MATRICES", spx_test_matrix_dir(), 1);
      assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
      for (tok = strtok_r(out, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
        char h[32], name[256], want[400];
        const char *p;
        assert_int_equal(sscanf(tok, "%31s %255s", h, name), 2);
        snprintf(want, sizeof want, "%s\t%s\t%s\n", groups[g], h, name);
        p = strstr(file, want);
        if (!p) fail_msg("%s %s is in the %s half by the rule, not in split.tsv", groups[g], name, h);
        assert_null(strstr(p + 1, want)); /* once */
      }
    }
  }
  /* a replicated matrix is in its shared name's half, and a half asked for holds only that half */
  snprintf(args, sizeof args, "select --list --set replicated --half fit --nnz 1000");
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  {
    char *tok, *save = NULL;
    int n = 0;
    for (tok = strtok_r(out, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save), n++) {
      char h[32], name[256], spec[600], want[400];
      assert_int_equal(sscanf(tok, "%31s %255s %599s", h, name, spec), 3);
      assert_string_equal(h, "fit");
      snprintf(want, sizeof want, "shared\tfit\t%s\n", name);
      assert_non_null(strstr(file, want));
      snprintf(want, sizeof want, "rep:%s:1000", name);
      assert_string_equal(spec, want);
    }
    for (i = 0, nfit = 0; (size_t)i < used; i++) nfit += !strncmp(file + i, "shared\tfit\t", 11);
    assert_int_equal(n, nfit);
  }
  assert_int_equal(spx_cli_run_cmd("select --list --set nosuch", out, sizeof out), 2);
  assert_non_null(strstr(out, "unknown set"));
  free(m);
}

static void test_gen_then_info(void **state) {
  static char out[1 << 16];
  char args[512], tmpl[] = "/tmp/spx_cli_XXXXXX";
  (void)state;
  if (!spx_cli_have_bin()) skip();
  spx_cli_tmpname(tmpl);
  /* 4x5x6 7-point Poisson: 120 rows, 7*120 - 2*(20+24+30) = 692 nonzeros. */
  snprintf(args, sizeof args, "gen poisson3d --nx 4 --ny 5 --nz 6 -o %s.mtx.gz", tmpl);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  snprintf(args, sizeof args, "info --json %s.mtx.gz", tmpl);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  assert_int_equal(spx_json_int(out, "nrows"), 120);
  assert_int_equal(spx_json_int(out, "nnz"), 692);
  snprintf(args, sizeof args, "gen replicate %s.mtx.gz --copies 3 -o %s.rep.mtx", tmpl, tmpl);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  snprintf(args, sizeof args, "info --json %s.rep.mtx", tmpl);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  assert_int_equal(spx_json_int(out, "nrows"), 360);
  assert_int_equal(spx_json_int(out, "nnz"), 3 * 692);
  snprintf(args, sizeof args, "%s.mtx.gz", tmpl); remove(args);
  snprintf(args, sizeof args, "%s.rep.mtx", tmpl); remove(args);
  remove(tmpl);
}

static void test_bad_use(void **state) {
  static char out[1 << 16];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  assert_int_equal(spx_cli_run_cmd("info /nonexistent/m.mtx", out, sizeof out), 1);
  assert_non_null(strstr(out, "/nonexistent/m.mtx"));
  assert_int_equal(spx_cli_run_cmd("frobnicate", out, sizeof out), 2);
  assert_non_null(strstr(out, "unknown command"));
  assert_int_equal(spx_cli_run_cmd("gen poisson3d --n -3 -o /tmp/x.mtx", out, sizeof out), 2);
  assert_non_null(strstr(out, "positive integer"));
  assert_int_equal(spx_cli_run_cmd("info", out, sizeof out), 2);
  assert_int_equal(spx_cli_run_cmd("device --upload 0", out, sizeof out), 2);
  assert_non_null(strstr(out, "positive integer"));
  assert_int_equal(spx_cli_run_cmd("device --frob", out, sizeof out), 2);
  assert_non_null(strstr(out, "unknown argument"));
}

/* spx device --upload: a GB/s line on a GPU, a clear refusal without one. */
static void test_device_upload(void **state) {
  static char out[1 << 16];
  int rc;
  (void)state;
  if (!spx_cli_have_bin()) skip();
  rc = spx_cli_run_cmd("device --upload 16", out, sizeof out);
  if (spx_device_count() > 0) {
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "GB/s"));
  } else {
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "needs a GPU"));
  }
}

/* Pre-filling the JIT disk cache for another machine's GPU, here where there is none. */
static void test_jit_warm_without_gpu(void **state) {
  static char out[1 << 16];
  char args[1600], path[1024], dir[] = "/tmp/spx_warm_XXXXXX";
  int major, minor;
  (void)state;
  if (!spx_cli_have_bin() || spx_nvrtc_version(&major, &minor) != SPX_OK) skip();
  assert_non_null(mkdtemp(dir));
  spx_test_matrix_path("bcspwr02", path, sizeof path);
  snprintf(args, sizeof args, "jit --warm '%s' --arch sm_80", path);
  setenv("SPX_CACHE_DIR", dir, 1);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  assert_null(strstr(out, " 0 kernels compiled"));
  assert_non_null(strstr(out, "kernels compiled"));
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  assert_non_null(strstr(out, " 0 kernels compiled")); /* the second time everything is cached */
  snprintf(args, sizeof args, "rm -rf '%s'", dir);
  assert_int_equal(system(args), 0);
}

static void test_main_job_small(void **state) {
  static char out[1 << 16];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  assert_int_equal(spx_cli_run_cmd("run --n 12 --json", out, sizeof out), 0);
  assert_int_equal(spx_json_int(out, "nrows"), 12 * 12 * 12);
  assert_non_null(strstr(out, "\"check_max_abs_err\": 0,"));
}

/* spx solve on the host backend: the tuned plan converges; --format runs the solve on the format
 * named (or fails, naming the candidates) */
static void test_solve_host(void **state) {
  char buf[8192];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:10 --host --method cg", buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "converged in"));
  assert_non_null(strstr(buf, "why           auto"));
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:10 --host --method bicgstab --format jds", buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "plan jds"));
  assert_non_null(strstr(buf, "forced: jds"));
  assert_non_null(strstr(buf, "converged in"));
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:10 --host --format nosuch", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "\"nosuch\" is not a candidate"));
}

/* spx stencil on the host backend: an out-of-core method under a budget of several slabs matches the
 * host reference; bad sizes and budgets fail with a message. */
static void test_stencil_host(void **state) {
  char buf[8192];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 20,20,20 --steps 5 --method mmtb --budget 40K --check", buf,
                                   sizeof buf), 0);
  assert_non_null(strstr(buf, "check:   match"));
  assert_non_null(strstr(buf, "GStencil/s"));
  assert_null(strstr(buf, "1 slab(s)"));
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 20,20,20 --steps 5 --method overlap --budget 100K --type double "
                                   "--check --json", buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "\"check\": \"match\""));
  assert_non_null(strstr(buf, "\"bitwise\": true"));
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 20,2,20 --steps 5", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "3..2^31-1"));
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 20,20,20 --method mmtb --budget 1K", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "cannot hold one slab"));
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 20,20,20 --depth 3", buf, sizeof buf), 2);
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 20,20,20 --budget 12Q", buf, sizeof buf), 2);
}

/* spx stencil --sweep on the host backend: a row per method and edge, and the in-core runs (the
 * one-step kernel and the depth kernel, with no budget cap) whose kernel rate is each out-of-core
 * row's bound: on the host the PCIe term (TTS x 25 GB/s / 4 B) is far above it. */
static void test_stencil_sweep_host(void **state) {
  char buf[16384], path[] = "/tmp/spx_sweep_XXXXXX", line[512];
  double incore[5] = {0, 0, 0, 0, 0};
  int rows = 0, ooc = 0;
  FILE *f;
  (void)state;
  if (!spx_cli_have_bin()) skip();
  spx_cli_tmpname(path);
  snprintf(line, sizeof line, "stencil --sweep --host --edges 24,32 --steps 4 --budget 100K --csv %s", path);
  assert_int_equal(spx_cli_run_cmd(line, buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "%bound"));
  f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof line, f));
  assert_non_null(strstr(line, "kernel_gstencils,model,bound,incore,depth"));
  while (fgets(line, sizeof line, f)) {
    long long edge, tts, slab, nslabs;
    char method[16];
    double gs, kgs, model, bound, inc;
    int depth;
    assert_int_equal(sscanf(line, "%lld,%15[^,],%lf,%lf,%lf,%lf,%lf,%d,%lld,%lld,%lld", &edge, method, &gs, &kgs, &model,
                            &bound, &inc, &depth, &tts, &slab, &nslabs), 11);
    assert_true(depth == 1 || depth == 2 || depth == 4);
    assert_true(gs > 0 && kgs > 0 && inc > 0);
    rows++;
    if (!strcmp(method, "incore")) { /* measured first for each edge, in the order of depths */
      assert_true(kgs == inc && bound == inc);
      incore[depth] = inc;
      continue;
    }
    ooc++;
    /* printed with 4 decimals: the very in-core row's rate at the depth it runs */
    assert_true(fabs(inc - incore[depth]) < 1e-4 && fabs(bound - inc) < 1e-4);
    assert_int_equal(depth == 1, !strcmp(method, "normal") || !strcmp(method, "mm"));
    if (strcmp(method, "normal")) assert_true(nslabs > 1); /* the budget forces slabs */
  }
  fclose(f);
  unlink(path);
  assert_int_equal(ooc, 2 * 5);
  assert_int_equal(rows, 2 * 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_bcsstk16),
      cmocka_unit_test(test_gen_then_info),
      cmocka_unit_test(test_corpus_split),
      cmocka_unit_test(test_bad_use),
      cmocka_unit_test(test_device_upload),
      cmocka_unit_test(test_jit_warm_without_gpu),
      cmocka_unit_test(test_main_job_small),
      cmocka_unit_test(test_solve_host),
      cmocka_unit_test(test_stencil_host),
      cmocka_unit_test(test_stencil_sweep_host),
  };
  return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
