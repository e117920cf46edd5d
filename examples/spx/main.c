/* SPDX-License-Identifier: BSD-3-Clause */
/* spx: the command-line face of the library. `spx` alone runs the main job (spx run). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <spx/spx.h>
#if defined(SPX_CLI_MPI)
#include <spx/dist.h> /* the distributed part, for spx solve and spx stencil under mpirun */
#endif

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

typedef struct spx_cli_command {
  const char *name, *usage, *what;
  int (*fn)(int, char **);
  const char *const *help;
} spx_cli_command;

static const spx_cli_command spx_cli_table[] = {
#define SPX_CLI_ENTRY(name, usage, what) {#name, usage, what, spx_cli_##name, spx_cli_##name##_help},
    SPX_CLI_COMMANDS(SPX_CLI_ENTRY)
#undef SPX_CLI_ENTRY
};
#define SPX_CLI_NCOMMANDS (sizeof spx_cli_table / sizeof spx_cli_table[0])

/* Help output is wrapped at this many columns. */
#define SPX_CLI_WIDTH 100
/* Options column of a command's help: "  --opt ARG" padded to here, then what it does. */
#define SPX_CLI_OPT_COL 28

static const spx_cli_command *spx_cli_find(const char *name) {
  size_t i;
  for (i = 0; i < SPX_CLI_NCOMMANDS; i++)
    if (!strcmp(spx_cli_table[i].name, name)) return &spx_cli_table[i];
  return NULL;
}

/* Writes the words of text (split at spaces; len bytes, or up to its end when len < 0) to f from
 * column col, breaking lines before SPX_CLI_WIDTH; a new line starts with indent spaces. A word
 * longer than a line gets a line of its own. Ends with a newline. */
static void spx_cli_wrap(FILE *f, int col, int indent, const char *text, int len) {
  const char *p = text, *end = len < 0 ? text + strlen(text) : text + len;
  int first = 1;
  while (p < end) {
    const char *w;
    int n;
    while (p < end && *p == ' ') p++;
    if (p == end) break;
    for (w = p; w < end && *w != ' '; w++) {}
    n = (int)(w - p);
    if (!first && col + 1 + n > SPX_CLI_WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (!first) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", n, p);
    col += n;
    first = 0;
    p = w;
  }
  fputc('\n', f);
}

/* "usage: spx FORM" for each '\n'-separated form of a usage string, the later ones aligned. */
static void spx_cli_print_usage(FILE *f, const char *usage) {
  const char *p = usage;
  int first = 1;
  for (;;) {
    const char *nl = strchr(p, '\n');
    int len = nl ? (int)(nl - p) : (int)strlen(p);
    fputs(first ? "usage: spx " : "   or: spx ", f);
    spx_cli_wrap(f, 11, 15, p, len);
    if (!nl) break;
    p = nl + 1;
    first = 0;
  }
}

/* The "  -h, --help" line that ends every command's options. */
static void spx_cli_help_option(FILE *f) {
  fprintf(f, "  %-*s", SPX_CLI_OPT_COL - 2, "-h, --help");
  spx_cli_wrap(f, SPX_CLI_OPT_COL, SPX_CLI_OPT_COL, "print this help and exit 0 (anywhere among the arguments)", -1);
}

int spx_cli_command_help(FILE *f, const char *name) {
  const spx_cli_command *c = spx_cli_find(name);
  const char *const *l;
  int options = 0, closed = 0;
  if (!c) {
    fprintf(stderr, "spx help: unknown command '%s' (spx help lists them)\n", name);
    return SPX_CLI_EXIT_USAGE;
  }
  spx_cli_print_usage(f, c->usage);
  fputc('\n', f);
  spx_cli_wrap(f, 0, 0, c->what, -1);
  for (l = c->help; *l; l++) {
    const char *tab = strchr(*l, '\t');
    if ((*l)[0] == '-' && tab) {
      int n = (int)(tab - *l);
      if (!options++) fputs("\noptions:\n", f);
      if (2 + n + 2 > SPX_CLI_OPT_COL) { /* a long option: what it does on the next line */
        fprintf(f, "  %.*s\n%*s", n, *l, SPX_CLI_OPT_COL, "");
      } else {
        fprintf(f, "  %-*.*s", SPX_CLI_OPT_COL - 2, n, *l);
      }
      spx_cli_wrap(f, SPX_CLI_OPT_COL, SPX_CLI_OPT_COL, tab + 1, -1);
      continue;
    }
    if (!closed && (options || (*l)[0] == '$')) { /* the options end before the example */
      if (!options) fputs("\noptions:\n", f);
      spx_cli_help_option(f);
      closed = 1;
    }
    if ((*l)[0] == '$') {
      fputs("\nexample:\n  ", f);
      spx_cli_wrap(f, 2, 6, *l + 2, -1);
    } else {
      fputc('\n', f);
      spx_cli_wrap(f, 0, 0, *l, -1);
    }
  }
  if (!closed) {
    if (!options) fputs("\noptions:\n", f);
    spx_cli_help_option(f);
  }
  return SPX_CLI_EXIT_OK;
}

const char *const spx_cli_help_help[] = {
    "Without COMMAND: every command with its one-line summary, the exit codes and the environment. "
    "With COMMAND: that command's usage, every option with what it does and its default, and an "
    "example; the same as spx COMMAND --help.",
    "$ spx help solve",
    NULL};

/* The command list: `spx help`, `spx --help`, `spx -h`. */
static void spx_cli_list(FILE *f) {
  size_t i;
  fprintf(f, "spx %s: sparse matrices and stencils on NVIDIA GPUs\n\n", SPX_VERSION_STRING);
  fputs("usage: spx COMMAND [options]      spx alone runs `spx run`; spx --version prints the version\n\n"
        "commands:\n", f);
  for (i = 0; i < SPX_CLI_NCOMMANDS; i++) {
    fprintf(f, "  %-9s ", spx_cli_table[i].name);
    spx_cli_wrap(f, 12, 12, spx_cli_table[i].what, -1);
  }
  fputc('\n', f);
  spx_cli_wrap(f, 0, 0,
               "spx help COMMAND (or spx COMMAND --help, or -h) prints a command's options with their defaults "
               "and an example. FILE may be .mtx or .mtx.gz.", -1);
  fputs("\nexit codes:\n"
        "  0  success\n"
        "  1  failure: the command ran and failed (a file it could not read or write, no GPU where one is\n"
        "     needed, a check that did not pass)\n"
        "  2  usage error: an unknown command or option, a missing or malformed argument\n"
        "\nenvironment:\n"
        "  SPX_QUIET=1  silence notices\n", f);
}

int spx_cli_help(int argc, char **argv) {
  if (argc > 2) return spx_cli_usage("help", "one COMMAND at most, got '%s' and '%s'", argv[1], argv[2]);
  if (argc == 2) return spx_cli_command_help(stdout, argv[1]);
  spx_cli_list(stdout);
  return SPX_CLI_EXIT_OK;
}

int spx_cli_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int spx_cli_fail(const char *what) {
  fprintf(stderr, "spx: %s: %s\n", what, spx_last_error());
  return 1;
}

int spx_cli_usage(const char *cmd, const char *fmt, ...) {
  const spx_cli_command *c;
  char name[32];
  va_list ap;
  fprintf(stderr, "spx %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  snprintf(name, sizeof name, "%.*s", (int)strcspn(cmd, " "), cmd); /* "stencil --sweep": stencil */
  if ((c = spx_cli_find(name))) {
    spx_cli_print_usage(stderr, c->usage);
    fprintf(stderr, "(spx help %s lists the options)\n", c->name);
  }
  return SPX_CLI_EXIT_USAGE;
}

const char *spx_cli_opt(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n)) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] || *i + 1 >= argc) return NULL;
  return argv[++*i];
}

/* spx_cli_number's check, silent: 1 with *out, or 0. */
static int spx_cli_parse_number(const char *v, int flags, double lo, double hi, double *out) {
  char *end;
  double x = 0, mul = 1;
  errno = 0;
  if (flags & SPX_CLI_INTEGER) x = (double)strtoll(v, &end, 10);
  else x = strtod(v, &end);
  if (end == v || isspace((unsigned char)*v) || errno == ERANGE) return 0;
  if (flags & SPX_CLI_BYTES) {
    switch (*end) {
      case 'k': case 'K': mul = 0x1p10; end++; break;
      case 'm': case 'M': mul = 0x1p20; end++; break;
      case 'g': case 'G': mul = 0x1p30; end++; break;
      case 't': case 'T': mul = 0x1p40; end++; break;
      default: break;
    }
    if (*end == 'i' && end[1] == 'B') end += 2;
    else if (*end == 'B') end++;
    x = floor(x * mul);
  }
  /* !(a && b) rather than (!a || !b): a NaN fails every comparison, so it lands here too */
  if (*end || !isfinite(x) || !(x > lo && x <= hi)) return 0;
  *out = x;
  return 1;
}

int spx_cli_number(const char *cmd, const char *name, const char *v, const char *what, int flags, double lo, double hi,
                   double *out) {
  if (spx_cli_parse_number(v, flags, lo, hi, out)) return 1;
  spx_cli_usage(cmd, "%s wants %s, got '%s'", name, what, v);
  return 0;
}

int spx_cli_int(const char *cmd, const char *name, const char *v, int64_t *out) {
  double x;
  if (!spx_cli_number(cmd, name, v, "a positive integer", SPX_CLI_INTEGER, 0, 0x1p53, &x)) return 0;
  *out = (int64_t)x;
  return 1;
}

int spx_cli_bytes(const char *cmd, const char *name, const char *v, int64_t *out) {
  double x;
  if (!spx_cli_number(cmd, name, v, "a size in bytes such as 2G, 512M or 1000000", SPX_CLI_BYTES, 0, 0x1p62, &x))
    return 0;
  *out = (int64_t)x;
  return 1;
}

int spx_cli_int_list(const char *cmd, const char *name, const char *v, char sep, int64_t *out, int max) {
  const char seps[2] = {sep, 0};
  const char *p = v;
  int n = 0;
  for (;;) {
    char tok[32];
    size_t l = strcspn(p, seps);
    double x;
    if (n == max || l >= sizeof tok) break;
    memcpy(tok, p, l);
    tok[l] = 0;
    if (!spx_cli_parse_number(tok, SPX_CLI_INTEGER, 0, 0x1p53, &x)) break;
    out[n++] = (int64_t)x;
    if (!p[l]) return n;
    p += l + 1;
  }
  spx_cli_usage(cmd, "%s wants up to %d positive integers separated by '%c', got '%s'", name, max, sep, v);
  return 0;
}

int spx_cli_out_check(const char *cmd, const char *path) {
  spx_file *f;
  if (spx_file_create(path, 0, &f)) return spx_cli_fail(cmd);
  spx_file_abort(f);
  return 0;
}

int spx_cli_out_commit(const char *cmd, spx_file *f) {
  return f && spx_file_commit(f) ? spx_cli_fail(cmd) : 0;
}

double spx_cli_relerr(const void *a, const void *b, int64_t n, spx_dtype t) {
  double num = 0, den = 0;
  int64_t i;
  for (i = 0; i < n; i++) {
    double x = t == SPX_DOUBLE ? ((const double *)a)[i] : ((const float *)a)[i];
    double y = t == SPX_DOUBLE ? ((const double *)b)[i] : ((const float *)b)[i];
    if (!isfinite(x) || !isfinite(y)) {
      if ((isnan(x) && isnan(y)) || x == y) continue; /* both NaN, or the same infinity */
      return INFINITY;
    }
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int spx_cli_progress_shown;
void spx_cli_progress(const char *fmt, ...) {
  va_list ap;
  if (!isatty(2)) return;
  fputs("\r\033[Kspx: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("...", stderr);
  fflush(stderr);
  spx_cli_progress_shown = 1;
}
void spx_cli_progress_done(void) {
  if (spx_cli_progress_shown) fputs("\r\033[K", stderr);
  spx_cli_progress_shown = 0;
}

double spx_cli_spmv_min_bytes(const spx_csr *a, size_t value_bytes) {
  return (double)a->nnz * (double)(value_bytes + 4) + (double)(a->nrows + 1) * 4 +
         (double)(a->ncols + a->nrows) * (double)value_bytes;
}

double spx_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int spx_cli_cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

void spx_cli_sort(double *v, int n) {
  if (n > 1) qsort(v, (size_t)n, sizeof *v, spx_cli_cmp_double);
}

double spx_cli_median(double *v, int n) {
  if (n < 1) return 0;
  spx_cli_sort(v, n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const char *const spx_cli_large_set[] = {
    "poisson7:128", "poisson27:100", "elasticity:48", "powerlaw:4000000",
    "rep:bcsstk16:20000000", "rep:cage10:20000000", "rep:ct2010:20000000", "rep:bayer10:20000000", NULL};

/* The size in a generator's spec ("poisson7:N", the NNZ of "rep:FILE:NNZ"): decimal digits up to
 * the end, in 1 .. 2^53; -1 otherwise. */
static long long spx_cli_spec_size(const char *s) {
  char *end;
  long long n;
  errno = 0;
  n = strtoll(s, &end, 10);
  return end == s || *end || errno == ERANGE || !isdigit((unsigned char)*s) || n < 1 || n > (1ll << 53) ? -1 : n;
}

/* "NXxNYxNZ" (three positive integers): 1 with box set, else 0. */
static int spx_cli_spec_box(const char *s, long long box[3]) {
  char buf[96], *x1, *x2;
  if (strlen(s) >= sizeof buf || !strchr(s, 'x')) return 0;
  snprintf(buf, sizeof buf, "%s", s);
  if (!(x1 = strchr(buf, 'x')) || !(x2 = strchr(x1 + 1, 'x'))) return 0;
  *x1 = *x2 = 0;
  box[0] = spx_cli_spec_size(buf);
  box[1] = spx_cli_spec_size(x1 + 1);
  box[2] = spx_cli_spec_size(x2 + 1);
  if (box[0] > 0 && box[1] > 0 && box[2] > 0) return 1;
  box[0] = box[1] = box[2] = 0;
  return 0;
}

spx_status spx_cli_load_matrix(const char *spec, spx_csr **a, char *name, size_t len) {
  const char *c = strchr(spec, ':');
  const int gen = !strncmp(spec, "poisson7:", 9) || !strncmp(spec, "poisson27:", 10) ||
                  !strncmp(spec, "aniso7:", 7) || !strncmp(spec, "elasticity:", 11) || !strncmp(spec, "powerlaw:", 9);
  long long n = 0, box[3] = {0, 0, 0};
  if (gen && !strncmp(spec, "poisson", 7) && spx_cli_spec_box(c + 1, box)) n = box[0]; /* NXxNYxNZ */
  else if (gen) n = spx_cli_spec_size(c + 1);
  if (n < 0)
    return spx_format_fail(SPX_INVALID_ARGUMENT, "%s: the size after ':' must be a positive integer%s", spec,
                           !strncmp(spec, "poisson", 7) ? " or NXxNYxNZ" : "");
  if (!strncmp(spec, "poisson7:", 9) || !strncmp(spec, "poisson27:", 10)) {
    snprintf(name, len, "%s", spec);
    if (box[0]) return spx_gen_poisson3d(box[0], box[1], box[2], spec[7] == '7' ? 7 : 27, SPX_DOUBLE, a);
    return spx_gen_poisson3d(n, n, n, spec[7] == '7' ? 7 : 27, SPX_DOUBLE, a);
  }
  if (!strncmp(spec, "aniso7:", 7)) { /* papers/003's anisotropic diffusion: z coupling 1e-4 of x and y */
    snprintf(name, len, "%s", spec);
    return spx_gen_poisson3d_aniso(n, n, n, 1, 1, 1e-4, SPX_DOUBLE, a);
  }
  if (!strncmp(spec, "elasticity:", 11)) {
    snprintf(name, len, "%s", spec);
    return spx_gen_elasticity3d(n, n, n, SPX_DOUBLE, a);
  }
  if (!strncmp(spec, "powerlaw:", 9)) {
    snprintf(name, len, "%s", spec);
    return spx_gen_powerlaw(n, 2.2, 2, 2000, 42, SPX_DOUBLE, a);
  }
  if (!strncmp(spec, "rep:", 4)) {
    char file[256], path[1400];
    const char *colon = strrchr(spec + 4, ':');
    spx_csr *b;
    spx_status s;
    long long want = colon ? spx_cli_spec_size(colon + 1) : 20000000;
    size_t fl = colon ? (size_t)(colon - (spec + 4)) : strlen(spec + 4);
    if (want < 0)
      return spx_format_fail(SPX_INVALID_ARGUMENT, "%s: NNZ after the last ':' must be a positive integer", spec);
    if (fl >= sizeof file) fl = sizeof file - 1;
    memcpy(file, spec + 4, fl);
    file[fl] = 0;
    if (strchr(file, '/') || strstr(file, ".mtx")) snprintf(path, sizeof path, "%s", file);
    else {
      snprintf(path, sizeof path, "%s/%s.mtx.gz", spx_cli_shared_dir(), file);
    }
    if ((s = spx_mm_read(path, SPX_DOUBLE, &b, NULL))) return s;
    s = spx_gen_replicate(b, b->nnz ? (want + b->nnz - 1) / b->nnz : 1, a);
    snprintf(name, len, "%s x%lld", file, b->nnz ? (want + b->nnz - 1) / b->nnz : 1);
    spx_csr_destroy(b);
    return s;
  }
  {
    const char *base = strrchr(spec, '/');
    snprintf(name, len, "%s", base ? base + 1 : spec);
    if ((c = strstr(name, ".mtx"))) name[c - name] = 0;
  }
  return spx_mm_read(spec, SPX_DOUBLE, a, NULL);
}

/* The command's output to stdout is its result: a write that failed there (a full disk under a
 * redirection, a closed pipe) fails the command too. */
static int spx_cli_stdout_done(int rc) {
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "spx: cannot write the standard output: %s\n", strerror(errno ? errno : EIO));
    return rc ? rc : 1;
  }
  return rc;
}

/* -h or --help anywhere among a command's arguments. */
static int spx_cli_wants_help(int argc, char **argv) {
  int i;
  for (i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  return 0;
}

int main(int argc, char **argv) {
  const spx_cli_command *c;
  /* line by line when piped too: a long run's progress reaches a log or a pager as it happens */
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) return spx_cli_stdout_done(spx_cli_run(argc, argv));
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    spx_cli_list(stdout);
    return spx_cli_stdout_done(SPX_CLI_EXIT_OK);
  }
  if (!strcmp(argv[1], "--version")) { printf("spx %s\n", SPX_VERSION_STRING); return spx_cli_stdout_done(0); }
  if ((c = spx_cli_find(argv[1]))) {
    if (spx_cli_wants_help(argc - 1, argv + 1)) return spx_cli_stdout_done(spx_cli_command_help(stdout, c->name));
    return spx_cli_stdout_done(c->fn(argc - 1, argv + 1));
  }
  fprintf(stderr, "spx: unknown command '%s' (spx help lists the commands)\n", argv[1]);
  return SPX_CLI_EXIT_USAGE;
}
