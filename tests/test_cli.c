/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of the spx command itself ($SPX_BIN, set by tests/run.sh): sizes printed by `spx info`,
 * generator round trips through files, and exit codes and messages for bad use. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spx_test.h"
#include "../examples/spx/cli.h" /* the command table: every name the help tests cover */

/* A sanitizer's report in the command's output (the clang_san build of spx, tests/run.sh) fails the
 * test whatever the exit code: a usage error must not come with a UBSan report either. */
static void spx_cli_no_sanitizer_report(const char *args, const char *out) {
  if (strstr(out, "runtime error:") || strstr(out, "AddressSanitizer") || strstr(out, "LeakSanitizer"))
    fail_msg("spx %s: sanitizer report:\n%s", args, out);
}

/* Runs `$SPX_BIN args` with stderr folded into stdout, after the shell commands in prefix ("" for
 * none); returns the exit code, output in buf. */
static int spx_cli_run_in(const char *prefix, const char *args, char *buf, size_t len) {
  char cmd[2048];
  const char *bin = getenv("SPX_BIN");
  FILE *p;
  size_t n;
  int rc;
  snprintf(cmd, sizeof cmd, "%s SPX_QUIET=1 '%s' %s 2>&1", prefix, bin ? bin : "out/spx", args);
  p = popen(cmd, "r");
  if (!p) return -1;
  n = fread(buf, 1, len - 1, p);
  buf[n] = 0;
  rc = pclose(p);
  spx_cli_no_sanitizer_report(args, buf);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int spx_cli_run_cmd(const char *args, char *buf, size_t len) { return spx_cli_run_in("", args, buf, len); }

/* The same with stdout alone in buf (what a JSON consumer reads); stderr is checked for a
 * sanitizer report and dropped. */
static int spx_cli_run_stdout(const char *args, char *buf, size_t len) {
  char cmd[2048], err[] = "/tmp/spx_cli_err_XXXXXX", ebuf[1 << 14];
  const char *bin = getenv("SPX_BIN");
  FILE *p;
  size_t n;
  int rc, fd = mkstemp(err);
  assert_true(fd >= 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "SPX_QUIET=1 '%s' %s 2>'%s'", bin ? bin : "out/spx", args, err);
  p = popen(cmd, "r");
  if (!p) return -1;
  n = fread(buf, 1, len - 1, p);
  buf[n] = 0;
  rc = pclose(p);
  p = fopen(err, "r");
  n = p ? fread(ebuf, 1, sizeof ebuf - 1, p) : 0;
  ebuf[n] = 0;
  if (p) fclose(p);
  unlink(err);
  spx_cli_no_sanitizer_report(args, ebuf);
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
  /* the text form ends with its verdict: what was checked, and that it held */
  assert_int_equal(spx_cli_run_cmd("run --n 12", out, sizeof out), 0);
  {
    const char *last = out + strlen(out);
    while (last > out && last[-1] == '\n') last--;
    while (last > out && last[-1] != '\n') last--;
    assert_true(!strncmp(last, "PASSED: host SpMV against the analytic row sums", 47));
  }
}

/* spx solve on the host backend: the tuned plan converges; --format runs the solve on the format
 * named (or fails, naming the candidates); the classical AMG options take */
static void test_solve_host(void **state) {
  char buf[8192];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:10 --host --method cg", buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "converged in"));
  assert_non_null(strstr(buf, "why           auto"));
  /* a host run names no GPU step (upload, compile, device kernels) in its setup */
  assert_non_null(strstr(buf, "setup "));
  if (strstr(buf, "upload") || strstr(buf, "compile") || strstr(buf, "solver kernels")) fail_msg("GPU terms in:\n%s", buf);
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:10 --host --method bicgstab --format jds", buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "plan jds"));
  assert_non_null(strstr(buf, "forced: jds"));
  assert_non_null(strstr(buf, "converged in"));
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:10 --host --format nosuch", buf, sizeof buf), 1);
  assert_non_null(strstr(buf, "\"nosuch\" is not a candidate"));
  /* classical AMG's options reach the hierarchy: the report names the interpolation */
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:12 --host --precond amg --coarsening rs --rs-interp ext+i "
                                   "--rs-pmax 5 --rs-theta 0.3 --rs-trunc 0.1", buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "extended+i interpolation"));
  assert_non_null(strstr(buf, "converged in"));
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

/* ---- The CLI's own checks: output files, JSON, number options, non-finite values ---------------- */

static void spx_cli_mkdtemp(char *dir, size_t len) {
  snprintf(dir, len, "/tmp/spx_cli_dir_XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void spx_cli_rm_rf(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void spx_cli_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* path's content, or "" when it cannot be read. */
static const char *spx_cli_read_text(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, len - 1, f) : 0;
  buf[n] = 0;
  if (f) fclose(f);
  return buf;
}

static int spx_cli_dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  assert_non_null(d);
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

/* 1 if text is JSON (python3's json module, NaN and Infinity refused), 0 if not, -1 without python3. */
static int spx_cli_json_parses(const char *text) {
  FILE *p;
  int rc;
  if (system("command -v python3 >/dev/null 2>&1") != 0) return -1;
  p = popen("python3 -c 'import json, sys; json.load(sys.stdin, parse_constant=lambda c: sys.exit(\"bare \" + c))' "
            ">/dev/null 2>&1", "w");
  if (!p) return -1;
  fputs(text, p);
  rc = pclose(p);
  return WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

/* text is JSON (without python3: at least no bare non-finite number) and holds want (NULL: anything). */
static void spx_cli_assert_json(const char *what, const char *text, const char *want) {
  int v = spx_cli_json_parses(text);
  if (v == 0) fail_msg("%s: not JSON:\n%s", what, text);
  if (v < 0) {
    static const char *const bare[] = {": nan", ": -nan", ": inf", ": -inf", "[nan", "[inf"};
    size_t k;
    for (k = 0; k < sizeof bare / sizeof *bare; k++)
      if (strstr(text, bare[k])) fail_msg("%s: bare non-finite number in:\n%s", what, text);
  }
  if (want && !strstr(text, want)) fail_msg("%s: no %s in:\n%s", what, want, text);
}

/* select --device-file (bench/model_replay.py): the model's candidates for each matrix as on the
 * device a calibration file describes, without that device: one JSON line a matrix with every
 * candidate (cuSPARSE among them, as on a GPU) and the ranking's lowest; a missing file fails
 * naming it, and the mode refuses --eval. */
static void test_select_device_file(void **state) {
  char dir[64], dev[96], args[512], out[1 << 16];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  spx_cli_mkdtemp(dir, sizeof dir);
  snprintf(dev, sizeof dev, "%s/gpu.json", dir);
  spx_cli_write_text(dev, "{\"name\": \"A fake GPU\", \"bandwidth_gbs\": 2000, \"launch_us\": 3, \"imbalance_weight\": 0, "
                          "\"x_miss\": 0.25, \"cache_bytes\": 50000000, \"warp\": 32, \"cusparse_factor\": 1.1, \"h2d_gbs\": 20, "
                          "\"convert_ns_per_byte\": 1, \"convert_ns_per_nnz\": 1, \"jit_ms\": 5, \"jit_hit_ms\": 0.3, "
                          "\"cusparse_call_us\": 4, \"memory_bytes\": 0, \"gather_cusparse\": 0, \"gather_default\": 0, "
                          "\"chain_ns\": 90, \"sms\": 100, \"atomic_row_ns\": 0.04, \"calibrated\": 1}\n");
  snprintf(args, sizeof args, "select poisson7:12 poisson27:10 --device-file '%s' --calls 1000", dev);
  assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
  {
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    assert_non_null(strchr(nl + 1, '\n')); /* a line each */
    *nl = 0;
    spx_cli_assert_json("select --device-file", out, "\"device\": \"A fake GPU\"");
    spx_cli_assert_json("select --device-file", out, "\"format\": \"cusparse_csr\"");
    spx_cli_assert_json("select --device-file", out, "\"lowest\": \"");
    assert_non_null(strstr(out, "\"matrix\": \"poisson7:12\""));
  }
  snprintf(args, sizeof args, "select poisson7:12 --device-file '%s/none.json'", dir);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 1);
  assert_non_null(strstr(out, "none.json"));
  snprintf(args, sizeof args, "select --eval poisson7:12 --device-file '%s'", dev);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 2);
  spx_cli_rm_rf(dir);
}

enum { SPX_CLI_MISSING_DIR = 1, SPX_CLI_DEV_FULL = 2, SPX_CLI_NO_SPACE = 4 };

/* One output option made to fail: cmd has one %s, the path. MISSING_DIR: a path in a directory that
 * does not exist; DEV_FULL: /dev/full (written in place), when writable here; NO_SPACE: an existing
 * file while no write may grow a file (ulimit -f 0, SIGXFSZ ignored: the write fails with EFBIG), which
 * must stay as it was with no temporary left beside it. Each gives exit code 1 and a message naming
 * the file. */
static void spx_cli_check_writer(const char *cmd, int how) {
  static char out[1 << 16];
  char dir[64], path[256], args[1024], text[64];
  spx_cli_mkdtemp(dir, sizeof dir);
  if (how & SPX_CLI_MISSING_DIR) {
    snprintf(path, sizeof path, "%s/missing/out.file", dir);
    snprintf(args, sizeof args, cmd, path);
    if (spx_cli_run_cmd(args, out, sizeof out) != 1 || !strstr(out, path))
      fail_msg("spx %s: want exit code 1 and a message naming %s, got:\n%s", args, path, out);
    assert_int_equal(spx_cli_dir_entries(dir), 0);
  }
  if ((how & SPX_CLI_DEV_FULL) && access("/dev/full", W_OK) == 0) {
    snprintf(args, sizeof args, cmd, "/dev/full");
    if (spx_cli_run_cmd(args, out, sizeof out) != 1 || !strstr(out, "/dev/full"))
      fail_msg("spx %s: want exit code 1 and a message naming /dev/full, got:\n%s", args, out);
  }
  if (how & SPX_CLI_NO_SPACE) {
    snprintf(path, sizeof path, "%s/existing.file", dir);
    spx_cli_write_text(path, "the previous results\n");
    snprintf(args, sizeof args, cmd, path);
    if (spx_cli_run_in("trap '' XFSZ; ulimit -f 0 &&", args, out, sizeof out) != 1 || !strstr(out, path))
      fail_msg("spx %s (ulimit -f 0): want exit code 1 and a message naming %s, got:\n%s", args, path, out);
    assert_string_equal(spx_cli_read_text(path, text, sizeof text), "the previous results\n");
    assert_int_equal(spx_cli_dir_entries(dir), 1); /* no temporary left */
  }
  spx_cli_rm_rf(dir);
}

/* Every file the command writes: a failed write is exit code 1 with the file named, never a silent
 * loss; an existing file stays as it was; a missing directory fails before any measurement (bench
 * and select --eval fail so here too, without a GPU). Standard output counts as well. */
static void test_output_files_fail(void **state) {
  static char out[1 << 16];
  char args[512];
  const int all = SPX_CLI_MISSING_DIR | SPX_CLI_DEV_FULL | SPX_CLI_NO_SPACE;
  /* bench and select --eval measure on a GPU only: without one, the missing directory alone */
  const int measured = spx_device_count() > 0 ? SPX_CLI_MISSING_DIR | SPX_CLI_DEV_FULL : SPX_CLI_MISSING_DIR;
  static const char *const sweep = "stencil --sweep --host --edges 12 --steps 2 --budget 20K --methods incore,mm";
  (void)state;
  if (!spx_cli_have_bin()) skip();
  snprintf(args, sizeof args, "%s --json-file %%s", sweep);
  spx_cli_check_writer(args, all);
  snprintf(args, sizeof args, "%s --csv %%s", sweep);
  spx_cli_check_writer(args, all);
  snprintf(args, sizeof args, "%s --svg %%s", sweep);
  spx_cli_check_writer(args, all);
  spx_cli_check_writer("gen poisson3d --n 3 -o %s", all);
  spx_cli_check_writer("bench poisson7:8 --formats csr --reps 3 --json %s", measured);
  spx_cli_check_writer("bench poisson7:8 --formats csr --reps 3 --csv %s", measured);
  spx_cli_check_writer("bench poisson7:8 --formats csr --reps 3 --svg %s", measured);
  spx_cli_check_writer("select --eval poisson7:8 --no-solve --strategies model --json-file %s", measured);
  spx_cli_check_writer("select --eval poisson7:8 --no-solve --strategies model --svg %s", measured);
  /* the files go with the modes that write them, not silently nowhere */
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 12 --json-file /tmp/spx_never.json", out, sizeof out), 2);
  assert_int_equal(spx_cli_run_cmd("select --json-file /tmp/spx_never.json poisson7:4", out, sizeof out), 2);
  if (access("/dev/full", W_OK) == 0)
    assert_int_equal(spx_cli_run_cmd("run --n 4 --json >/dev/full", out, sizeof out), 1);
}

/* File names go into JSON escaped (a quote, a backslash and a tab in the name), everywhere the CLI
 * prints or writes JSON; the sweep's "command" holds the arguments, the same name among them. */
static void test_json_file_names(void **state) {
  static char out[1 << 18];
  char dir[64], path[256], args[1024], want[300];
  static const char *const cmds[] = {"info --json '%s'", "formats --json '%s'", "select --json '%s'",
                                     "select --json --strategy model '%s'", "solve '%s' --host --json"};
  size_t k;
  (void)state;
  if (!spx_cli_have_bin()) skip();
  spx_cli_mkdtemp(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/a\"b\\c\td.mtx", dir);
  spx_cli_write_text(path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 5\n"
                           "1 1 4\n2 1 -1\n2 2 4\n3 2 -1\n3 3 4\n");
  snprintf(want, sizeof want, "\"%s/a\\\"b\\\\c\\u0009d.mtx\"", dir);
  for (k = 0; k < sizeof cmds / sizeof *cmds; k++) {
    snprintf(args, sizeof args, cmds[k], path);
    assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
    spx_cli_assert_json(args, out, want);
  }
  /* select --json on two files: one JSON object per line, and nothing unknown as a number (an
   * untimed candidate's measured_us is null, not -1) */
  snprintf(args, sizeof args, "select --json --strategy model '%s' '%s'", path, path);
  assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
  {
    char *nl = strchr(out, '\n');
    assert_non_null(nl);
    assert_non_null(strchr(nl + 1, '\n'));
    assert_string_equal(strchr(nl + 1, '\n') + 1, "");
    *nl = 0;
    spx_cli_assert_json(args, out, "\"measured_us\": null");
    spx_cli_assert_json(args, nl + 1, "\"measured_us\": null");
    if (strstr(out, ": -1,") || strstr(out, ": -2,")) fail_msg("%s: a sentinel number in:\n%s", args, out);
  }
  snprintf(args, sizeof args, "stencil --sweep --host --edges 12 --steps 2 --budget 20K --methods mm --json-file '%s.json'",
           path);
  assert_int_equal(spx_cli_run_cmd(args, out, sizeof out), 0);
  snprintf(path + strlen(path), sizeof path - strlen(path), ".json");
  spx_cli_assert_json(args, spx_cli_read_text(path, out, sizeof out), "\"command\": \"spx stencil --sweep");
  assert_non_null(strstr(out, "a\\\"b\\\\c\\u0009d.mtx.json\""));
  spx_cli_rm_rf(dir);
  /* and the other JSON the command prints */
  {
    static const char *const more[] = {"run --n 4 --json", "stencil --host --n 12 --steps 2 --check --json",
                                       "jit --stats --json", "device --json"};
    for (k = 0; k < sizeof more / sizeof *more; k++) {
      assert_int_equal(spx_cli_run_stdout(more[k], out, sizeof out), 0);
      spx_cli_assert_json(more[k], out, NULL);
    }
  }
}

/* A matrix with Inf and NaN values: every format agrees with CSR (NaN where CSR has NaN, the same
 * Inf where it has Inf), in double and float, and what the JSON holds of a non-finite number is
 * null: a solve on it breaks down and reports NaN norms. */
static void test_nonfinite_values(void **state) {
  static char out[1 << 17];
  char dir[64], path[256], args[512];
  (void)state;
  if (!spx_cli_have_bin()) skip();
  spx_cli_mkdtemp(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/nonfinite.mtx", dir);
  spx_cli_write_text(path, "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 inf\n1 2 2\n2 2 nan\n3 1 -inf\n"
                           "3 3 1.5\n");
  snprintf(args, sizeof args, "formats '%s'", path);
  if (spx_cli_run_cmd(args, out, sizeof out) != 0) fail_msg("spx %s:\n%s", args, out);
  assert_null(strstr(out, " !"));
  snprintf(args, sizeof args, "formats --float '%s'", path);
  if (spx_cli_run_cmd(args, out, sizeof out) != 0) fail_msg("spx %s:\n%s", args, out);
  snprintf(args, sizeof args, "formats --json '%s'", path);
  assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
  spx_cli_assert_json(args, out, "\"spmv_ok\": true");
  assert_null(strstr(out, "\"spmv_ok\": false"));
  snprintf(args, sizeof args, "info --json '%s'", path);
  assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
  spx_cli_assert_json(args, out, "\"inf\": 2");
  snprintf(args, sizeof args, "solve '%s' --host --json", path);
  assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 1); /* broke down: not converged */
  spx_cli_assert_json(args, out, "\"bnorm\": null");
  spx_cli_rm_rf(dir);
}

/* Number options go through one checked parser: NaN, Inf, negative, overflow and trailing junk are
 * usage errors (exit code 2) naming the option and the value, with no sanitizer report (the
 * clang_san spx: `--budget nanG` once converted NaN to an integer). */
static void test_number_options(void **state) {
  static char out[1 << 16];
  static const struct { const char *args, *option, *value; } bad[] = {
      {"stencil --budget nanG", "--budget", "'nanG'"},
      {"stencil --budget infG", "--budget", "'infG'"},
      {"stencil --budget -1G", "--budget", "'-1G'"},
      {"stencil --budget 1e30G", "--budget", "'1e30G'"},
      {"stencil --host --n 20 --budget 0.1", "--budget", "'0.1'"},
      {"stencil --host --n 20 --budget 1Gx", "--budget", "'1Gx'"},
      {"stencil --host --n 20,20,99999999999999999999", "--n", "99999999999999999999"},
      {"stencil --host --n 20,nan,20", "--n", "nan"},
      {"stencil --host --n 20 --block 99999999999x8", "--block", "99999999999x8"},
      {"stencil --host --n 20 --depth nan", "--depth", "'nan'"},
      {"stencil --host --n 20 --incore-rate inf", "--incore-rate", "'inf'"},
      {"stencil --sweep --host --edges 24,,32", "--edges", "24,,32"},
      {"gen poisson3d --n 1e3 -o /tmp/spx_never.mtx", "--n", "'1e3'"},
      {"gen poisson3d --n 99999999999999999999 -o /tmp/spx_never.mtx", "--n", "'99999999999999999999'"},
      {"gen powerlaw --alpha nan -o /tmp/spx_never.mtx", "--alpha", "'nan'"},
      {"gen poisson3d --points 4294967303 -o /tmp/spx_never.mtx", "--points", "'4294967303'"},
      {"solve gen:poisson7:4 --host --tol nan", "--tol", "'nan'"},
      {"solve gen:poisson7:4 --host --tol -1", "--tol", "'-1'"},
      {"solve gen:poisson7:4 --host --maxit 5x", "--maxit", "'5x'"},
      {"solve gen:poisson7:4 --host --precond amg --coarsening rs --rs-pmax 40", "--rs-pmax", "'40'"},
      {"solve gen:poisson7:4 --host --precond amg --coarsening rs --rs-trunc 1.5", "--rs-trunc", "'1.5'"},
      {"solve gen:poisson7:4 --host --precond amg --coarsening rs --rs-theta -0.1", "--rs-theta", "'-0.1'"},
      {"bench --reps inf", "--reps", "'inf'"},
      {"device --upload 1e99", "--upload", "'1e99'"},
      {"select --calls -5 poisson7:4", "--calls", "'-5'"},
  };
  size_t k;
  (void)state;
  if (!spx_cli_have_bin()) skip();
  for (k = 0; k < sizeof bad / sizeof *bad; k++) {
    int rc = spx_cli_run_cmd(bad[k].args, out, sizeof out);
    if (rc != 2 || !strstr(out, bad[k].option) || !strstr(out, bad[k].value))
      fail_msg("spx %s: want a usage error naming %s and %s (exit code 2), got %d:\n%s", bad[k].args, bad[k].option,
               bad[k].value, rc, out);
  }
  /* a size in a generator's spec is checked the same way (a failure to load: exit code 1) */
  assert_int_equal(spx_cli_run_cmd("solve gen:poisson7:nan --host", out, sizeof out), 1);
  assert_non_null(strstr(out, "positive integer"));
  /* and what is right still passes */
  assert_int_equal(spx_cli_run_cmd("stencil --host --n 12,12,16 --steps 2 --budget 1.5MiB --block 32x4 --depth 1", out,
                                   sizeof out), 0);
}

/* No line of s longer than 100 columns. */
static void spx_cli_check_width(const char *what, const char *s) {
  int line = 1;
  while (*s) {
    size_t n = strcspn(s, "\n");
    if (n > 100) fail_msg("%s: line %d is %zu columns:\n%.*s", what, line, n, (int)n, s);
    s += n + (s[n] == '\n');
    line++;
  }
}

static int spx_cli_optchar(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

/* 1 if opt occurs in s as a whole word ("--n" is not found in "--nx"). */
static int spx_cli_mentions(const char *s, const char *opt) {
  const char *p = s;
  size_t n = strlen(opt);
  while ((p = strstr(p, opt))) {
    if ((p == s || !spx_cli_optchar(p[-1])) && !spx_cli_optchar(p[n])) return 1;
    p += n;
  }
  return 0;
}

/* Every option literal the command's parser compares against ("--json", "-o", "-D"), read from
 * examples/spx/cmd_NAME.c, must be in its help. 0 when that file does not exist (help: main.c). */
static int spx_cli_help_covers_source(const char *name, const char *help) {
  static char src[1 << 17];
  char path[256];
  const char *p;
  FILE *f;
  size_t n;
  int found = 0;
  snprintf(path, sizeof path, "examples/spx/cmd_%s.c", name);
  if (!(f = fopen(path, "r"))) return 0;
  n = fread(src, 1, sizeof src - 1, f);
  src[n] = 0;
  fclose(f);
  for (p = src; (p = strstr(p, "\"-")); p++) {
    const char *q = p + 1;
    char opt[64];
    size_t l;
    while (*q == '-') q++;
    if (!isalpha((unsigned char)*q)) continue;
    while (spx_cli_optchar(*q)) q++;
    if (*q != '"' || (l = (size_t)(q - p - 1)) >= sizeof opt) continue;
    memcpy(opt, p + 1, l);
    opt[l] = 0;
    if (!spx_cli_mentions(help, opt)) fail_msg("spx help %s does not mention %s (%s):\n%s", name, opt, path, help);
    found++;
  }
  return found;
}

/* Every command of the table: `spx CMD --help`, `spx CMD ... -h ...` and `spx help CMD` exit 0 and
 * print the same help on stdout: usage, the options (every one its parser accepts), an example, no
 * line over 100 columns. `spx help` and `spx --help`: the command list with the exit codes. */
static void test_help(void **state) {
  static char help[1 << 16], out[1 << 16];
#define SPX_CLI_NAME(name, usage, what) #name,
  static const char *const names[] = {SPX_CLI_COMMANDS(SPX_CLI_NAME) NULL};
#undef SPX_CLI_NAME
  static const struct { const char *cmd, *opts[4]; } named[] = {
      {"solve", {"--ones", "--defer", "--reps", "--rhs"}},
      {"select", {"--calls", "--cold", "--eval", NULL}},
      {"bench", {"--exact-shape", "--plain-loads", "--reps", NULL}},
      {"gen", {"-o", "--alpha", "--copies", NULL}},
      {"stencil", {"--incore-rate", "--sweep", NULL, NULL}},
      {"jit", {"-D", "--arch", NULL, NULL}},
  };
  char args[256];
  size_t i, k;
  (void)state;
  if (!spx_cli_have_bin()) skip();
  for (i = 0; names[i]; i++) {
    snprintf(args, sizeof args, "help %s", names[i]);
    if (spx_cli_run_stdout(args, help, sizeof help)) fail_msg("spx %s: exit code not 0:\n%s", args, help);
    snprintf(args, sizeof args, "%s --help", names[i]);
    assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
    if (strcmp(help, out)) fail_msg("spx %s differs from spx help %s:\n%s", args, names[i], out);
    snprintf(args, sizeof args, "%s --json -h x.mtx", names[i]); /* -h anywhere, other arguments ignored */
    assert_int_equal(spx_cli_run_stdout(args, out, sizeof out), 0);
    if (strcmp(help, out)) fail_msg("spx %s differs from spx help %s:\n%s", args, names[i], out);
    spx_cli_check_width(args, help);
    snprintf(args, sizeof args, "usage: spx %s", names[i]);
    if (strncmp(help, args, strlen(args))) fail_msg("spx help %s does not start with '%s':\n%s", names[i], args, help);
    if (!strstr(help, "\nexample:\n  spx ")) fail_msg("spx help %s has no example:\n%s", names[i], help);
    if (!strstr(help, "\noptions:\n")) fail_msg("spx help %s has no options:\n%s", names[i], help);
    if (!spx_cli_help_covers_source(names[i], help) && strcmp(names[i], "help"))
      fail_msg("no options found in examples/spx/cmd_%s.c (run from the repository root)", names[i]);
  }
  for (i = 0; i < sizeof named / sizeof named[0]; i++) {
    snprintf(args, sizeof args, "help %s", named[i].cmd);
    assert_int_equal(spx_cli_run_stdout(args, help, sizeof help), 0);
    for (k = 0; k < 4 && named[i].opts[k]; k++)
      if (!spx_cli_mentions(help, named[i].opts[k])) fail_msg("spx %s does not mention %s:\n%s", args, named[i].opts[k], help);
  }
  /* the command list */
  assert_int_equal(spx_cli_run_stdout("help", help, sizeof help), 0);
  assert_int_equal(spx_cli_run_stdout("--help", out, sizeof out), 0);
  assert_string_equal(help, out);
  assert_int_equal(spx_cli_run_stdout("-h", out, sizeof out), 0);
  assert_string_equal(help, out);
  spx_cli_check_width("spx help", help);
  assert_non_null(strstr(help, "exit codes"));
  assert_non_null(strstr(help, "usage error"));
  for (i = 0; names[i]; i++) {
    snprintf(args, sizeof args, "\n  %s ", names[i]);
    if (!strstr(help, args)) fail_msg("spx help does not list %s:\n%s", names[i], help);
  }
  /* no such command: a usage error, on stderr */
  assert_int_equal(spx_cli_run_stdout("help nosuch", out, sizeof out), 2);
  assert_string_equal(out, "");
  assert_int_equal(spx_cli_run_cmd("help nosuch", out, sizeof out), 2);
  assert_non_null(strstr(out, "unknown command 'nosuch'"));
  assert_int_equal(spx_cli_run_cmd("help info gen", out, sizeof out), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_bcsstk16),
      cmocka_unit_test(test_gen_then_info),
      cmocka_unit_test(test_corpus_split),
      cmocka_unit_test(test_select_device_file),
      cmocka_unit_test(test_bad_use),
      cmocka_unit_test(test_device_upload),
      cmocka_unit_test(test_jit_warm_without_gpu),
      cmocka_unit_test(test_main_job_small),
      cmocka_unit_test(test_solve_host),
      cmocka_unit_test(test_stencil_host),
      cmocka_unit_test(test_stencil_sweep_host),
      cmocka_unit_test(test_output_files_fail),
      cmocka_unit_test(test_json_file_names),
      cmocka_unit_test(test_nonfinite_values),
      cmocka_unit_test(test_number_options),
      cmocka_unit_test(test_help),
  };
  return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
