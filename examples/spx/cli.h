/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the spx command: the subcommand table, argument helpers, progress output. */
#ifndef SPX_CLI_H
#define SPX_CLI_H

#include <spx/spx.h>
#include <stdio.h>

/* Subcommands. Columns: name, usage (after "spx "; '\n' between alternative forms), one-line
 * summary (`spx help` wraps it at 100 columns). ORDER: as `spx help` lists. Each command's full help
 * (options with their defaults, one example) is spx_cli_NAME_help[], next to the command in its
 * cmd_NAME.c: `spx help NAME` and `spx NAME --help` print it (spx_cli_command_help). */
#define SPX_CLI_COMMANDS(_)                                                                        \
  _(info,    "info FILE [--json] [--float]",                                                       \
             "read a Matrix Market file and print its analysis")                                   \
  _(gen,     "gen KIND [SRC] [options] -o FILE",                                                   \
             "write a generated matrix (poisson3d, elasticity3d, powerlaw, replicate)")            \
  _(formats, "formats [FILE] [--json] [--float] [--param k=v,...]",                                \
             "every format on a matrix (default elasticity3d 16^3): bytes, padding, conversion "   \
             "time, SpMV check")                                                                   \
  _(bench,   "bench [MATRIX ...] [options]",                                                       \
             "GPU SpMV of every format vs best cuSPARSE (needs a GPU)")                            \
  _(jit,     "jit --stats|--clear|--compile TPL|--warm MATRIX|--warm-list FILE [options]",         \
             "the JIT kernel cache")                                                               \
  _(select,  "select FILE... [options]\nselect --eval MATRIX... [options]\nselect --list --set S [--half H]", \
             "the auto-tuner's plan and reason per strategy; --eval: against the measured oracle " \
             "(needs a GPU)")                                                                      \
  _(stencil, "stencil --n NX,NY,NZ [options]\nstencil --sweep [options]",                          \
             "3-D 7-point stencil in core or larger than GPU memory (out-of-core methods); "       \
             "--sweep: GStencil/s vs domain edge")                                                 \
  _(solve,   "solve MATRIX [options]",                                                             \
             "a Krylov solve on the tuned plan (or on format F, cusparse included): iterations, "  \
             "recomputed residual, setup vs iteration time, per-iteration bandwidth bound "        \
             "(cuSPARSE side by side on a GPU)")                                                   \
  _(device,  "device [--json] [--upload MIB]",                                                     \
             "show the backend and the GPU spx would use; --upload: its upload GB/s")              \
  _(run,     "run [--n N] [--json]",                                                               \
             "the main job on a generated 3-D problem (what `spx` alone runs)")                    \
  _(help,    "help [COMMAND]",                                                                     \
             "this list, or a command's options (also: spx COMMAND --help)")

/* Each command's entry point and its help: NULL-terminated lines, each one of
 *   "text"                       a paragraph (what the command does, its operands)
 *   "-o FILE\twhat it does ..."  an option, its argument, what it does and its default
 *   "$ spx ..."                  the example (one) */
#define SPX_CLI_DECLARE(name, usage, what)                                                         \
  int spx_cli_##name(int argc, char **argv);                                                       \
  extern const char *const spx_cli_##name##_help[];
SPX_CLI_COMMANDS(SPX_CLI_DECLARE)
#undef SPX_CLI_DECLARE

/* Exit codes of every command (`spx help` lists them). */
#define SPX_CLI_EXIT_OK 0
#define SPX_CLI_EXIT_FAIL 1
#define SPX_CLI_EXIT_USAGE 2

/* Prints the help of command `name` (usage, the paragraphs, the options, the example) to f, wrapped
 * at 100 columns. 0, or 2 with a message on stderr when there is no such command. */
int spx_cli_command_help(FILE *f, const char *name);
/* Prints "spx: <what>: <last error>" to stderr and returns 1 (the exit code for a failed command). */
int spx_cli_fail(const char *what);
/* Usage error: prints the message and the command's usage line; returns 2. */
int spx_cli_usage(const char *cmd, const char *fmt, ...);
/* Value of option `name` at argv[*i] ("--n 5" or "--n=5"); advances *i. NULL if argv[*i] is not it. */
const char *spx_cli_opt(int argc, char **argv, int *i, const char *name);
/* Number options, one checked parser for every command: the whole of v must be a finite number
 * above lo and at most hi (an integer in decimal digits with SPX_CLI_INTEGER; with SPX_CLI_BYTES a
 * binary suffix k, M, G or T, then an optional B or iB, multiplies it, and the product is rounded
 * down to whole bytes). NaN, Inf, overflow, out of range and trailing junk are usage errors:
 * "OPTION wants WHAT, got 'V'" and the usage line. 1 with *out set, else 0 (the command returns 2). */
#define SPX_CLI_INTEGER 1
#define SPX_CLI_BYTES 2
int spx_cli_number(const char *cmd, const char *name, const char *v, const char *what, int flags, double lo, double hi,
                   double *out);
/* A positive integer (1 .. 2^53). 1, or 0 after the usage message. */
int spx_cli_int(const char *cmd, const char *name, const char *v, int64_t *out);
/* A byte size: 2G, 512M, 1.5GiB, 64k, 1000000 (1 byte .. 2^62). 1, or 0 after the usage message. */
int spx_cli_bytes(const char *cmd, const char *name, const char *v, int64_t *out);
/* Up to max positive integers separated by sep ("20,20,20", "32x8"), each as spx_cli_int: the
 * count, or 0 after the usage message. */
int spx_cli_int_list(const char *cmd, const char *name, const char *v, char sep, int64_t *out, int max);
/* Output files (--json-file, --csv, --svg ...) are written whole or not at all through spx/io.h:
 * spx_file_create at the end, the stream filled, spx_file_commit. spx_cli_out_check makes and drops
 * a temporary in path's directory before a long run, so that a bad path fails at once rather than
 * after the measurements. Both print "spx: CMD: cannot write PATH: why" and return 1 on failure. */
int spx_cli_out_check(const char *cmd, const char *path);
/* Commits f (spx_file_commit; NULL: nothing to do). 0, or 1 with the message printed. */
int spx_cli_out_commit(const char *cmd, spx_file *f);
/* The CLI's JSON writer (json.c), for every JSON the command prints or writes. spx_cli_json_str:
 * s as a JSON string (quotes and backslashes escaped, control characters as \uXXXX, bytes that are
 * not UTF-8 as U+FFFD; NULL gives null). spx_cli_json_printf: fprintf for the JSON around them, at
 * the precision each number has there, except that a floating-point conversion of NaN or Inf prints
 * null (d i u x c s f e g; l, ll, z on integers; %s is copied as it is: names spx itself makes, the
 * JSON's own punctuation; strings from outside go through spx_cli_json_str). */
void spx_cli_json_str(FILE *f, const char *s);
void spx_cli_json_printf(FILE *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A solve's report as JSON: the fields and keys of spx_solve_report_print's, with NaN and Inf (a
 * solve that broke down) as null. */
void spx_cli_json_solve_report(FILE *f, const spx_solve_report *r);
/* Relative difference ||a - b|| / ||b|| of n values of dtype t, NaN-aware: a pair that is NaN on
 * both sides or the same infinity on both sides is equal; any other non-finite pair gives +Inf. */
double spx_cli_relerr(const void *a, const void *b, int64_t n, spx_dtype t);
/* Progress on stderr, only when stderr is a terminal: "spx: <step>..." (overwritten by the next). */
void spx_cli_progress(const char *fmt, ...);
void spx_cli_progress_done(void);
/* The stated minimal-bytes model of a GPU SpMV, the same for every format so rates compare: CSR's
 * arrays once (values, 32-bit columns, 32-bit row pointers), x read once, y written once (beta = 0).
 * A format that stores less (BSR, RBP) can pass 100% of copy bandwidth. */
double spx_cli_spmv_min_bytes(const spx_csr *a, size_t value_bytes);
/* A matrix from a spec: a Matrix Market file or a generator, poisson7:N, poisson27:N (N^3 grid),
 * aniso7:N (N^3, 7-point, z couplings 1e-4 of x and y: papers/003's anisotropic problem),
 * elasticity:N (N^3 hexahedra, 3 unknowns per node), powerlaw:N (rows), rep:FILE:NNZ (block-diagonal
 * copies of a file, a path or a shared matrix name, until at least NNZ nonzeros). name receives a
 * short label. */
/* 1 when an MPI launcher started this process (Open MPI, MPICH/Hydra, PMIx): then spx solve and
 * spx stencil, built with MPI, run distributed (main.c). */
int spx_cli_mpi_launched(void);
/* spx solve under an MPI launcher (cmd_solve_mpi.c, built with MPI): *handled 1 when it ran (the
 * return is then the command's exit status), 0 when no launcher started this process. */
int spx_cli_solve_mpi(int argc, char **argv, int *handled);
/* Under MPI (cmd_solve_mpi.c): this rank's context, a GPU of its node where every rank of
 * MPI_COMM_WORLD has one (the node-local rank modulo the node's GPUs), else the host (host: 1
 * asks for it). Collective over MPI_COMM_WORLD. */
spx_status spx_cli_mpi_context(int host, spx_context **ctx);
/* spx stencil's options (cmd_stencil.c parses them; cmd_stencil_mpi.c runs them under mpirun). */
#define SPX_CLI_STENCIL_MAX_EDGES 32
typedef struct spx_cli_stencil_args {
  int64_t n[3], steps, budget, tts, slab, edges[SPX_CLI_STENCIL_MAX_EDGES];
  int nedges, depth, bx, by, check, json, host, sweep, method_set, methods[SPX_STENCIL_METHOD_COUNT], nmethods;
  int64_t interval;           /* under mpirun: steps between halo exchanges (0: the plan's) */
  int no_overlap;             /* under mpirun: the halos waited for before the interior runs */
  double incore_gs;
  spx_dtype dtype;
  spx_stencil_method method;
  const char *json_file, *csv_file, *svg_file;
} spx_cli_stencil_args;
/* argv into a; 0, or 2 after the usage message. */
int spx_cli_stencil_parse(int argc, char **argv, spx_cli_stencil_args *a);
/* Planes [z0, z1) of p's initial grid into g (their values only: a hash of the global cell index,
 * so that runs of the same size compare whatever the ranks). */
void spx_cli_stencil_fill(const spx_stencil *p, int64_t z0, int64_t z1, void *g);
/* The run options of a for method m (pcie: the measured link, NULL when not measured). */
void spx_cli_stencil_options(const spx_cli_stencil_args *a, spx_stencil_method m, const double pcie[3],
                             spx_stencil_options *o);
/* spx stencil under an MPI launcher (cmd_stencil_mpi.c, built with MPI), as spx_cli_solve_mpi. */
int spx_cli_stencil_mpi(int argc, char **argv, int *handled);
/* spx solve's matrix (a file, a generator spec, "gen:" + spec) and right-hand side (ones, or A 1). */
spx_status spx_cli_solve_load(const char *spec, spx_csr **a);
int spx_cli_solve_rhs(const spx_csr *a, int ones, double *b);
/* spx solve's AMG options (--smoother, --sweeps, --theta, --cycle, --relaxed, --gpu-setup-rows,
 * --aggregation, --coarsening, --rs-interp, --rs-theta, --rs-trunc, --rs-pmax, --plan-trials) at
 * argv[*k], one process or under mpirun: 1 when it was one (into o, *k past its value), 0 when it
 * is not, 2 after the usage message. */
int spx_cli_solve_amg_option(int argc, char **argv, int *k, spx_amg_options *o);
spx_status spx_cli_load_matrix(const char *spec, spx_csr **a, char *name, size_t len);
/* The large benchmark set of issue 4 (generators and replicated shared matrices), NULL-terminated. */
extern const char *const spx_cli_large_set[];
/* The tuner's evaluation corpus (corpus.c): sets "shared" (the shared matrices as they are),
 * "replicated" (each replicated block-diagonally to rep_nnz nonzeros), "generated" and "large"
 * (the earlier reference set, in neither half). A matrix's half is fit (0) or validation (1) by
 * the hash of its name; half -1 asks for both. *out (spx_cli_corpus_free) holds each spec
 * (what spx_cli_load_matrix reads), name and half. Nonzero on failure, with spx_last_error(). */
typedef struct spx_cli_corpus_entry {
  char *spec;
  char name[96];
  int half;
} spx_cli_corpus_entry;
int spx_cli_corpus(const char *set, int half, int64_t rep_nnz, spx_cli_corpus_entry **out, int *n);
void spx_cli_corpus_free(spx_cli_corpus_entry *v, int n);
/* $SPX_SHARED_MATRICES, else ../shared/matrices. */
const char *spx_cli_shared_dir(void);
/* Seconds since an arbitrary start. */
double spx_cli_now(void);
/* Sorts v[0..n) ascending; spx_cli_median sorts and returns the median (mean of the middle two). */
void spx_cli_sort(double *v, int n);
double spx_cli_median(double *v, int n);

#endif
