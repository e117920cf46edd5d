/* Shared pieces of the spx command: the subcommand table, argument helpers, progress output. */
#ifndef SPX_CLI_H
#define SPX_CLI_H

#include <spx/spx.h>
#include <stdio.h>

/* Subcommands. Columns: name, usage (after "spx "), one-line summary. ORDER: as `spx help` lists. */
#define SPX_CLI_COMMANDS(_)                                                                        \
  _(info,    "info FILE [--json] [--float]",               "read a Matrix Market file and print its analysis") \
  _(gen,     "gen KIND [options] -o FILE",                 "write a generated matrix (poisson3d, elasticity3d, powerlaw, replicate)") \
  _(formats, "formats [FILE] [--json] [--float] [--param k=v,...]", "every format on a matrix (default elasticity3d 16^3): bytes, padding, conversion time, SpMV check") \
  _(bench,   "bench [MATRIX ...] [--set large|small] [--dtype double|float|both] [--formats a,b] [--plain-loads] [--exact-shape] [--json F] [--csv F] [--svg F]", "GPU SpMV of every format vs best cuSPARSE (needs a GPU)") \
  _(jit,     "jit --stats|--clear|--compile TPL [-D SPX_X=V]...|--warm MATRIX|--warm-list FILE [--arch sm_XY]", "the JIT kernel cache") \
  _(select,  "select FILE... [--strategy S] [--json] [--calls N] | select --eval MATRIX... [--set shared|replicated|generated|large] [--half fit|validation] [--nnz N] [--strategies a,b] [--no-solve] [--cold] [--json-file F] [--svg F] | select --list --set S [--half H]", "the auto-tuner's plan and reason per strategy; --eval: against the measured oracle (needs a GPU)") \
  _(stencil, "stencil --n NX,NY,NZ [--steps T] [--method overlap|incore|normal|mm|mmt|mmtb] [--budget 2G] [--depth 1|2|4] [--tts N] [--slab N] [--block 32x8] [--type float|double] [--check] [--json] [--host] | stencil --sweep [--edges N,...] [--methods a,b] [--budget B] [--steps T] [--json-file F] [--csv F] [--svg F]", "3-D 7-point stencil in core or larger than GPU memory (out-of-core methods); --sweep: GStencil/s vs domain edge") \
  _(solve,   "solve FILE|gen:poisson7:N|gen:elasticity:N [--rhs FILE | --ones] [--method cg|pcg|bicgstab] [--tol T] [--maxit N] [--strategy S | --format F] [--host] [--json] [--compare-cusparse] [--defer] [--reps N]", "a Krylov solve on the tuned plan (or on format F, cusparse included): iterations, recomputed residual, setup vs iteration time, per-iteration bandwidth bound (cuSPARSE side by side on a GPU)") \
  _(device,  "device [--json] [--upload MIB]",               "show the backend and the GPU spx would use; --upload: its upload GB/s") \
  _(run,     "run [--n N] [--json]",                       "the main job on a generated 3-D problem (what `spx` alone runs)") \
  _(help,    "help",                                       "this list")

#define SPX_CLI_DECLARE(name, usage, what) int spx_cli_##name(int argc, char **argv);
SPX_CLI_COMMANDS(SPX_CLI_DECLARE)
#undef SPX_CLI_DECLARE

/* Prints "spx: <what>: <last error>" to stderr and returns 1 (the exit code for a failed command). */
int spx_cli_fail(const char *what);
/* Usage error: prints the message and the command's usage line; returns 2. */
int spx_cli_usage(const char *cmd, const char *fmt, ...);
/* Value of option `name` at argv[*i] ("--n 5" or "--n=5"); advances *i. NULL if argv[*i] is not it. */
const char *spx_cli_opt(int argc, char **argv, int *i, const char *name);
/* Parses a positive integer option value; returns 0 and prints usage on error. */
int spx_cli_int(const char *cmd, const char *name, const char *v, int64_t *out);
/* Progress on stderr, only when stderr is a terminal: "spx: <step>..." (overwritten by the next). */
void spx_cli_progress(const char *fmt, ...);
void spx_cli_progress_done(void);
/* The stated minimal-bytes model of a GPU SpMV, the same for every format so rates compare: CSR's
 * arrays once (values, 32-bit columns, 32-bit row pointers), x read once, y written once (beta = 0).
 * A format that stores less (BSR, RBP) can pass 100% of copy bandwidth. */
double spx_cli_spmv_min_bytes(const spx_csr *a, size_t value_bytes);
/* A matrix from a spec: a Matrix Market file or a generator, poisson7:N, poisson27:N (N^3 grid),
 * elasticity:N (N^3 hexahedra, 3 unknowns per node), powerlaw:N (rows), rep:FILE:NNZ (block-diagonal
 * copies of a file, a path or a shared matrix name, until at least NNZ nonzeros). name receives a
 * short label. */
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
