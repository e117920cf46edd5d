/* SPDX-License-Identifier: BSD-3-Clause */
/* spx jit: the kernel cache from the shell.
 *   spx jit --stats [--json]                      where the cache is, what it holds, the templates
 *   spx jit --clear                               empty it (the v1/ entries only)
 *   spx jit --compile TEMPLATE [-D SPX_X=V]... [--arch sm_XY] [--json]
 *                                                 compile one specialization (or find it cached)
 *   spx jit --warm MATRIX [--arch sm_XY]          compile the kernels of every format (double and
 *                                                 float) for a Matrix Market file, e.g. on a build
 *                                                 machine without a GPU for the GPU machines
 *   spx jit --warm-list FILE [--arch sm_XY] [--json]
 *                                                 compile every line "TEMPLATE [SPX_X=V ...]" of
 *                                                 FILE ('#' starts a comment)
 * Without --arch the target is device 0's architecture; without a GPU --arch is required. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define SPX_CLI_JIT_MAX_DEFINES 64

/* One compile request: what --compile builds from argv and --warm from each line. */
typedef struct spx_cli_jit_job {
  const char *tpl;
  int ndefines;
  const char *defines[SPX_CLI_JIT_MAX_DEFINES];
  const char *arch; /* NULL: device 0's */
} spx_cli_jit_job;

static const char *spx_cli_jit_origin(int o) {
  return o == SPX_JIT_MEMORY ? "memory" : o == SPX_JIT_DISK ? "disk" : "compiled";
}

/* Prints dir/tail as a JSON string. */
static void spx_cli_jit_json_path(const char *dir, const char *tail) {
  size_t n = strlen(dir) + strlen(tail) + 1;
  char *p = malloc(n);
  if (!p) { printf("null"); return; }
  snprintf(p, n, "%s%s", dir, tail);
  spx_cli_json_str(stdout, p);
  free(p);
}

/* Compiles one job; prints a line (or a JSON object) saying how long and from where. 0 on
 * success, 1 on failure (message printed). */
static int spx_cli_jit_compile_one(const spx_cli_jit_job *j, int json, const char *where) {
  spx_jit_key_inputs in;
  const char *dir;
  char hex[33] = "";
  int origin = 0, i;
  double t0 = spx_cli_now(), ms;
  spx_status s = spx_jit_compile_only(j->tpl, j->ndefines, j->defines, j->arch, &origin);
  ms = 1e3 * (spx_cli_now() - t0);
  if (s) {
    fprintf(stderr, "spx jit: %s%s%s: %s\n", where ? where : "", where ? ": " : "", j->tpl, spx_last_error());
    return 1;
  }
  if (spx_jit_key_describe(j->tpl, j->ndefines, j->defines, j->arch, &in) == SPX_OK)
    spx_jit_key_compute(&in, hex);
  dir = spx_jit_cache_dir();
  if (json) {
    printf("{\"template\": ");
    spx_cli_json_str(stdout, j->tpl);
    printf(", \"defines\": [");
    for (i = 0; i < j->ndefines; i++) {
      printf("%s", i ? ", " : "");
      spx_cli_json_str(stdout, j->defines[i]);
    }
    printf("], \"arch\": ");
    spx_cli_json_str(stdout, in.arch);
    spx_cli_json_printf(stdout, ", \"origin\": \"%s\", \"ms\": %.3f, \"key\": \"%s\", \"file\": ",
                        spx_cli_jit_origin(origin), ms, hex);
    if (dir) {
      char tail[64];
      snprintf(tail, sizeof tail, "/%s/%s", SPX_JIT_CACHE_SUBDIR, hex);
      spx_cli_jit_json_path(dir, tail);
    } else {
      printf("null");
    }
    printf("}\n");
    return 0;
  }
  printf("%s", j->tpl);
  for (i = 0; i < j->ndefines; i++) printf(" %s", j->defines[i]);
  printf(" for %s: %s %.1f ms", in.arch, origin == SPX_JIT_COMPILED ? "compiled in" : "from the cache in", ms);
  if (origin != SPX_JIT_COMPILED) printf(" (%s)", spx_cli_jit_origin(origin));
  if (dir) printf("  [%s/%s/%s]\n", dir, SPX_JIT_CACHE_SUBDIR, hex);
  else printf("  [disk cache off]\n");
  return 0;
}

/* --warm FILE: one job per line, "TEMPLATE [SPX_X=V ...]"; '#' starts a comment. A bad line is
 * reported with FILE:LINE and the rest still run. */
static int spx_cli_jit_warm(const char *file, const char *arch, int json) {
  FILE *f = fopen(file, "r");
  char line[4096], where[600];
  int lineno = 0, failed = 0, done = 0;
  double t0 = spx_cli_now();
  if (!f) {
    fprintf(stderr, "spx jit: cannot open %s\n", file);
    return 1;
  }
  while (fgets(line, sizeof line, f)) {
    spx_cli_jit_job j;
    char *p = line, *hash = strchr(line, '#');
    lineno++;
    if (hash) *hash = 0;
    memset(&j, 0, sizeof j);
    j.arch = arch;
    snprintf(where, sizeof where, "%s:%d", file, lineno);
    for (;;) { /* split at blanks in place */
      const char *tok;
      p += strspn(p, " \t\r\n");
      if (!*p) break;
      tok = p;
      p += strcspn(p, " \t\r\n");
      if (*p) *p++ = 0;
      if (!j.tpl) j.tpl = tok;
      else if (j.ndefines < SPX_CLI_JIT_MAX_DEFINES) j.defines[j.ndefines++] = tok;
      else break;
    }
    if (!j.tpl) continue;
    if (*p) {
      fprintf(stderr, "spx jit: %s: more than %d defines\n", where, SPX_CLI_JIT_MAX_DEFINES);
      failed++;
      done++;
      continue;
    }
    failed += spx_cli_jit_compile_one(&j, json, where);
    done++;
  }
  fclose(f);
  if (!json)
    printf("warmed %d kernel%s from %s in %.1f s%s\n", done - failed, done - failed == 1 ? "" : "s", file,
           spx_cli_now() - t0, failed ? " (some failed: see above)" : "");
  return failed ? 1 : 0;
}

/* --warm MATRIX: every format with a GPU kernel, in double and float, as spx_dmatrix_create would
 * specialize it for this matrix. */
static int spx_cli_jit_warm_matrix(const char *path, const char *arch) {
  spx_csr *a = NULL;
  int f, t, compiled = 0, cached = 0, failed = 0;
  double t0 = spx_cli_now();
  if (spx_mm_read(path, SPX_DOUBLE, &a, NULL)) return spx_cli_fail("jit --warm");
  for (t = 0; t < 2; t++) {
    spx_csr *b = NULL;
    if (spx_csr_copy(a, t ? SPX_FLOAT : SPX_DOUBLE, &b)) { spx_csr_destroy(a); return spx_cli_fail("jit --warm"); }
    for (f = 0; f < spx_format_count(); f++) {
      spx_fmt *m = NULL;
      int c = 0, h = 0;
      spx_status s;
      if (!spx_format_has_kernel((spx_format)f)) continue;
      s = spx_fmt_from_csr(b, (spx_format)f, NULL, &m);
      if (s == SPX_UNSUPPORTED) continue;
      if (!s) s = spx_dmatrix_warm(m, NULL, arch, &c, &h);
      if (s) { fprintf(stderr, "spx jit --warm: %s %s: %s\n", spx_format_name((spx_format)f), t ? "float" : "double", spx_last_error()); failed++; }
      compiled += c; cached += h;
      spx_fmt_destroy(m);
    }
    spx_csr_destroy(b);
  }
  spx_csr_destroy(a);
  printf("warmed %s for %s: %d kernels compiled, %d already cached, in %.1f s%s\n", path, arch ? arch : "device 0",
         compiled, cached, spx_cli_now() - t0, failed ? " (some failed: see above)" : "");
  return failed ? 1 : 0;
}

static int spx_cli_jit_stats(int json) {
  spx_jit_stats st;
  int64_t bytes = 0, entries = 0;
  const char *dir = spx_jit_cache_dir();
  int i, io = spx_jit_disk_usage(&bytes, &entries) != SPX_OK;
  spx_jit_stats_get(&st);
  if (json) {
    printf("{\"cache_dir\": ");
    if (dir) spx_cli_jit_json_path(dir, "/" SPX_JIT_CACHE_SUBDIR);
    else printf("null");
    spx_cli_json_printf(stdout, ", \"enabled\": %s, \"entries\": %lld, \"bytes\": %lld, \"cap_mb\": %.3f, \"templates\": [",
                        st.disk_enabled ? "true" : "false", (long long)entries, (long long)bytes, st.disk_cap_mb);
    for (i = 0; i < spx_jit_template_count(); i++) {
      size_t n = 0;
      uint64_t h = 0;
      spx_jit_template_source(spx_jit_template_name(i), NULL, &n, &h);
      printf("%s{\"name\": \"%s\", \"bytes\": %zu, \"hash\": \"%016llx\"}", i ? ", " : "",
             spx_jit_template_name(i), n, (unsigned long long)h);
    }
    spx_cli_json_printf(stdout, "], \"process\": {\"mem_hits\": %lld, \"disk_hits\": %lld, \"misses\": %lld, \"compiles\": %lld, "
                        "\"compile_failures\": %lld, \"compile_ms\": %.3f, \"load_ms\": %.3f}}\n",
                        (long long)st.mem_hits, (long long)st.disk_hits, (long long)st.misses, (long long)st.compiles,
                        (long long)st.compile_failures, st.compile_ms_total, st.load_ms_total);
    return io ? spx_cli_fail("jit") : 0;
  }
  if (dir)
    printf("cache directory   %s/%s\n", dir, SPX_JIT_CACHE_SUBDIR);
  else
    printf("cache directory   none (SPX_CACHE is off, or neither SPX_CACHE_DIR, XDG_CACHE_HOME nor HOME is set)\n");
  if (dir)
    printf("entries           %lld, %.2f MiB of %.0f MiB (SPX_CACHE_MAX_MB)\n", (long long)entries,
           (double)bytes / 1048576.0, st.disk_cap_mb);
  printf("templates        ");
  for (i = 0; i < spx_jit_template_count(); i++) printf(" %s", spx_jit_template_name(i));
  printf("\n");
  return io ? spx_cli_fail("jit") : 0;
}

/* `spx help jit` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_jit_help[] = {
    "The JIT kernel cache from the shell. One of --stats, --clear, --compile, --warm, --warm-list is "
    "required.",
    "--stats\twhere the cache is, what it holds, the templates",
    "--clear\tempty the disk cache (its v1/ entries only)",
    "--compile TPL\tcompile one specialization of template TPL (or find it cached)",
    "-D SPX_X=V\twith --compile: a template define, repeatable (default: none)",
    "--warm MATRIX\tcompile the kernels of every format, double and float, for a Matrix Market file "
    "(e.g. on a build machine without a GPU, for the GPU machines)",
    "--warm-list FILE\tcompile every line \"TEMPLATE [SPX_X=V ...]\" of FILE ('#' starts a comment)",
    "--arch sm_XY\tthe target architecture (default: device 0's; required without a GPU)",
    "--json\tprint JSON (--stats, --compile, --warm-list) instead of text (default: text)",
    "$ spx jit --warm bcsstk16.mtx.gz --arch sm_90",
    NULL};

int spx_cli_jit(int argc, char **argv) {
  enum { NONE, STATS, CLEAR, COMPILE, WARM, WARM_MATRIX } mode = NONE;
  spx_cli_jit_job job;
  const char *v, *warm = NULL;
  int json = 0, i;
  memset(&job, 0, sizeof job);
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--stats")) mode = STATS;
    else if (!strcmp(argv[i], "--clear")) mode = CLEAR;
    else if ((v = spx_cli_opt(argc, argv, &i, "--compile"))) { mode = COMPILE; job.tpl = v; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--warm-list"))) { mode = WARM; warm = v; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--warm"))) { mode = WARM_MATRIX; warm = v; }
    else if ((v = spx_cli_opt(argc, argv, &i, "--arch"))) job.arch = v;
    else if (!strncmp(argv[i], "-D", 2)) {
      v = argv[i][2] ? argv[i] + 2 : i + 1 < argc ? argv[++i] : NULL;
      if (!v) return spx_cli_usage("jit", "-D needs SPX_NAME=value");
      if (job.ndefines == SPX_CLI_JIT_MAX_DEFINES)
        return spx_cli_usage("jit", "more than %d defines", SPX_CLI_JIT_MAX_DEFINES);
      job.defines[job.ndefines++] = v;
    } else {
      return spx_cli_usage("jit", "unknown argument '%s'", argv[i]);
    }
  }
  if ((mode == COMPILE || mode == WARM || mode == WARM_MATRIX) && !job.arch && spx_device_count() == 0)
    return spx_cli_usage("jit", "no GPU here: name the target with --arch (e.g. --arch sm_90)");
  if (mode != COMPILE && job.ndefines) return spx_cli_usage("jit", "-D goes with --compile");
  switch (mode) {
    case STATS: return spx_cli_jit_stats(json);
    case CLEAR: {
      const char *dir = spx_jit_cache_dir();
      if (spx_jit_clear()) return spx_cli_fail("jit --clear");
      if (dir) printf("cleared %s/%s\n", dir, SPX_JIT_CACHE_SUBDIR);
      else printf("the disk cache is off: nothing to clear\n");
      return 0;
    }
    case COMPILE: return spx_cli_jit_compile_one(&job, json, NULL);
    case WARM: return spx_cli_jit_warm(warm, job.arch, json);
    case WARM_MATRIX: return spx_cli_jit_warm_matrix(warm, job.arch);
    case NONE: break;
  }
  return spx_cli_usage("jit", "say --stats, --clear, --compile TEMPLATE or --warm FILE");
}
