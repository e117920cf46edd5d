/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/plan.h: the auto-tuner. A plan is a format + its parameters + an engine (an spx kernel or
 * cuSPARSE CSR), chosen for one matrix on one device, with the predicted time per SpMV, the
 * predicted conversion time and a sentence saying why.
 *
 *   spx_plan_options o;  spx_plan_options_default(&o);  o.expected_calls = 500;
 *   spx_plan *p;
 *   spx_plan_create(ctx, a, &o, &p);            ctx NULL: the plan makes its own (o.backend)
 *   spx_plan_create_device(ctx, &d, &o, &p);    or a CSR already on ctx's device (spx_dcsr, below)
 *   spx_plan_spmv(p, 1.0, x, 0.0, y);           host pointers on the host backend, device on CUDA
 *   puts(spx_plan_reason(p));  spx_plan_destroy(p);
 *
 * STRATEGIES (by name; the table below)
 *   kubota  papers/001 section 5, formula (2): ELL if B < 2.0 and R < 0.048 %, cuSPARSE CSR if
 *           B > 8.0 or R >= 0.048 %, else JDS.
 *   mps     papers/002 section 5.2.2, formula (5-1): the same rule retuned for small MPS matrices
 *           (B 2.3 / 2.7, R 0.005455 as a fraction); see internal/plan_strategy_impl.h for the
 *           two printing slips.
 *   trial   the papers' "exam": convert, run and time every candidate, keep the fastest.
 *   model   predicted time = bytes / bandwidth + launch + imbalance, at least the format's floor
 *           and the longest serial walk one thread of its kernel makes after it
 *           (spx_plan_device.chain_ns a step), plus
 *           conversion / expected_calls; a converted format must score convert_margin below the
 *           CSR baseline.
 *   auto    model, then a trial of the model's best two when that trial costs little next to the
 *           work expected_calls SpMVs will do. Where the best kernel is predicted within a few
 *           launch latencies (latency-bound: the formats differ by less than the model's error),
 *           a quick trial of the model's ranked candidates instead, as far down the ranking as
 *           trial_share of the work pays for (trial_gap does not apply there). That trial runs
 *           as a race over the caller's first SpMVs (RACE below) unless options.no_race.
 * A heuristic's choice that is not a candidate (does not fit the memory limit; cuSPARSE on the
 * host backend) falls back, and the reason says so.
 *
 * RACE  Where auto times candidates, spx_plan_create builds no candidate and returns; the caller's
 *   first spx_plan_spmv calls then time the candidates one after another (each built when its turn
 *   comes, a warm-up and trial_reps timed calls each: CUDA events on the context stream, read once
 *   done; the clock on the host), and the fastest by median (ties: the model's choice) becomes the
 *   plan, the others freed. Meanwhile the calls no block times run on the plan's start: the CSR as
 *   it is, nothing converted (on a GPU the arrays staged for the device profile, wrapped by
 *   cuSPARSE, else by spx's CSR kernel; on the host the race's copy); the model's choice is then
 *   built at its turn like the others. Where nothing can start so (a matrix too small to be staged,
 *   a model's choice that runs on the staged arrays as they are) the plan runs the model's choice,
 *   built as without a race. Every call computes y = alpha*A*x + beta*y, in the stream's order;
 *   results may differ in rounding across candidates, so spx_plan_wait (which spx_plan_time and
 *   the solvers call) ends a race at once, timing what is left as the trial does. While it runs
 *   (spx_plan_racing) the getters describe the model's choice (spx_plan_dmatrix and spx_plan_bytes
 *   what runs); measured_us fills in as candidates are timed, and the reason and getters change to
 *   the winner when it ends ("... race of the best two ... over the first SpMVs: ..."). Its builds
 *   and bookkeeping count in spx_plan_select_ms. A racing plan keeps the matrix for its candidates
 *   until it ends: the staged arrays where their values went up (downloaded once for a candidate
 *   converted on the host), else a copy (a lazy plan's own; an eager plan makes one).
 *
 * CANDIDATES  every registry format with a GPU kernel (spx_format_has_kernel), and cuSPARSE CSR on
 *   the CUDA backend when cuSPARSE loads. A candidate whose predicted bytes (plus x and y) pass the
 *   memory limit is excluded before anything is converted. Bytes come from a predictor per format
 *   where spx has one (O(n) or O(nnz) on the row structure, equal to spx_fmt_bytes), or where a
 *   registered format gave one (spx_format_set_model, below); a format without one is converted on
 *   the host once to learn its bytes.
 *   Above 2^20 nonzeros the column-dependent counts (RBP runs, BSR blocks, SELL slots and SELL16
 *   spans) come from 64 evenly spaced windows of 256 rows (down to 16 on dense rows: about 2^18
 *   nonzeros), scaled up (the candidate's note says so); row lengths are always read in full.
 *   Below that the column counts are read only when their priced cost is at most trial_share of
 *   the expected work and at most what they can save: a format that needs them must pay back its
 *   conversion (on a GPU at least a kernel's compile) out of the best candidate priced without
 *   them (else those formats are not modelled, and their notes say why). Each candidate's time is
 *   scaled by the per-format factor the calibration measured.
 *
 * THE DEVICE DESCRIPTION  spx_plan_device holds the constants the model uses. On the CUDA backend
 *   they are measured once per device by spx_plan_calibrate (copy bandwidth, launch latency, probe
 *   SpMVs, host conversion rates) and kept in <cache>/tuner/v18/<device>.json (cache as for the JIT:
 *   $SPX_CACHE_DIR, $XDG_CACHE_HOME/spx, ~/.cache/spx); spx_plan_device_default gives unmeasured
 *   defaults. A test may fill one by hand (options.device) and needs no GPU.
 *
 * RE-SELECTION  spx_reselect serves codes whose matrix changes every step (papers/002): hand in
 *   step k+1's matrix, keep working on step k, and the analysis, the choice and the host conversion
 *   run on a host thread meanwhile; spx_reselect_next gives step k+1's plan and what was hidden. */
#ifndef SPX_PLAN_H
#define SPX_PLAN_H

#include <stdio.h>
#include "status.h"
#include "types.h"
#include "csr.h"
#include "analyze.h"
#include "formats.h"
#include "loader.h"
#include "device.h"
#include "cuda.h" /* spx_dmatrix, spx_plan_dmatrix's result */

#ifdef __cplusplus
extern "C" {
#endif

/* Strategies. ORDER: the order `spx select` lists them; AUTO first (the default, 0).
 *  _(ENUM_SUFFIX, "name",   "what it does") */
#define SPX_PLAN_STRATEGIES(_)                                                                 \
  _(AUTO,    "auto",   "model, then the best candidates timed over the first SpMVs where the work makes it cheap") \
  _(KUBOTA,  "kubota", "B/R thresholds of the selection paper (ELL, JDS, cuSPARSE CSR)")         \
  _(MPS,     "mps",    "B/R thresholds retuned by the MPS thesis (5-1)")                         \
  _(TRIAL,   "trial",  "convert, run and time every candidate; keep the fastest")              \
  _(MODEL,   "model",  "calibrated cost model incl. conversion / expected_calls")

typedef enum spx_plan_strategy {
#define SPX__PLAN_STRATEGY_ENUM(e, name, what) SPX_PLAN_##e,
  SPX_PLAN_STRATEGIES(SPX__PLAN_STRATEGY_ENUM)
#undef SPX__PLAN_STRATEGY_ENUM
  SPX_PLAN_STRATEGY_COUNT
} spx_plan_strategy;

/* "kubota"; "unknown" outside the table. */
const char *spx_plan_strategy_name(spx_plan_strategy s);
const char *spx_plan_strategy_description(spx_plan_strategy s);
/* By name (case ignored); SPX_INVALID_ARGUMENT listing the names otherwise. */
spx_status spx_plan_strategy_parse(const char *name, spx_plan_strategy *out);
/* The B/R rule of strategy s (SPX_PLAN_KUBOTA or SPX_PLAN_MPS) on row statistics B (longest row /
 * mean row) and R (nnz / (rows x columns), a fraction), as spx_analysis gives them: "ell", "jds" or
 * "cusparse" (cuSPARSE CSR), the rule alone, before the plan's fallbacks (a choice that does not
 * fit goes to jds, then csr; no cuSPARSE: spx's csr). NULL for another strategy. A code that knows
 * B and R (from its own matrix build) chooses without a plan. */
const char *spx_plan_rule_choice(spx_plan_strategy s, double B, double R);

/* What runs the SpMV. */
typedef enum spx_plan_engine {
  SPX_PLAN_ENGINE_SPX = 0,     /* an spx format: its GPU kernel (CUDA) or host SpMV (host) */
  SPX_PLAN_ENGINE_CUSPARSE = 1 /* cuSPARSE CSR (CUDA backend only) */
} spx_plan_engine;

/* The constants of the cost model for one device (all times per SpMV unless said otherwise). */
typedef struct spx_plan_device {
  char name[64];              /* the device's name as the driver gives it, or "host" */
  double bandwidth_gbs;       /* achievable streaming bandwidth of an SpMV kernel, 1e9 B/s */
  double launch_us;           /* fixed cost of one SpMV call (launch + tail), microseconds */
  double imbalance_weight;    /* 0..1: cost of an idle lane-slot beyond its bytes, relative to a busy one */
  double x_miss;              /* share of nnz whose x read misses cache when x exceeds cache_bytes */
  int64_t cache_bytes;        /* L2 (GPU) or last-level cache (host) */
  int warp;                   /* lanes that run in lock step (32 on NVIDIA GPUs, 1 on the host) */
  double cusparse_factor;     /* cuSPARSE CSR time / the model's balanced-CSR time */
  double h2d_gbs;             /* host -> device upload bandwidth (0: no upload, host backend) */
  double convert_ns_per_byte; /* host conversion, per byte of the converted format */
  double convert_ns_per_nnz;  /* host conversion, per input nonzero (reading the CSR) */
  double jit_ms;              /* one kernel compile when the JIT cache misses */
  double jit_hit_ms;          /* a kernel the JIT cache holds but this process has not loaded
                               * (a disk read and a module load); one it has loaded costs nothing */
  double cusparse_call_us;    /* the least time one cuSPARSE SpMV takes in a stream of calls: its
                               * host API and launches, which small matrices wait on (0: none) */
  int64_t memory_bytes;       /* device memory for the matrix (0: unknown, no limit) */
  int calibrated;             /* 1 when measured on this device, 0 for the defaults */
  /* Per format (registry index), measured by the calibration on a 3-D Poisson matrix several times
   * the cache: the kernel's time / the model's streaming time (how far each kernel is from the
   * bandwidth the model assumes), and its host conversion in ns per byte of the result. 0: not
   * measured (factor 1, convert_ns_per_byte). Stored as "factor_NAME" and "convert_NAME". */
  double format_factor[SPX_FORMAT_MAX];
  double format_convert_ns[SPX_FORMAT_MAX];
  /* The device-converted formats (SELL, SELL16, SDIA, BSR) from a CSR already on the device, as a
   * deferred plan's spx_plan_upgrade converts: ns per byte of the result, kernels compiled.
   * Stored as "staged_convert_NAME"; 0: not measured. */
  double format_staged_convert_ns[SPX_FORMAT_MAX];
  /* The factor of the block formats (BSR, RBP-*) measured on a 3-unknowns-per-node elasticity
   * matrix, used where the matrix has blocks (BSR's best block > 1, RBP's mean run >= 4): on the
   * Poisson matrix those kernels run 1x1 blocks and runs of 3, another kernel regime, so the
   * Poisson factor mispredicts real blocks (docs/performance.md).
   * Stored as "blockfactor_NAME"; 0: use format_factor. */
  double format_factor_block[SPX_FORMAT_MAX];
  /* Random x gathers. The streaming model charges x once; a matrix whose 32-row slices read many
   * distinct x sectors spread over a span comparable to the cache (power-law rows, unordered
   * graphs) gathers a sector per nonzero instead. Its "gather bytes" are nnz x 32 x (distinct x
   * sectors per nonzero) x min(1, mean column span of 256-row windows x value size / cache_bytes);
   * each format (and cuSPARSE) costs gather_NAME microseconds per microsecond those bytes take at
   * bandwidth_gbs, measured on a power-law matrix with random columns (its time beyond the
   * streaming prediction). 0 everywhere: no term (the defaults, the host). Stored as
   * "gather_NAME"; gather_default for a format the calibration matrix declined. */
  double format_gather[SPX_FORMAT_MAX];
  /* The least time one SpMV of the format takes (its launches and the fixed work of its kernels),
   * measured on a matrix too small to move bytes worth counting: each prediction is at least
   * that. Stored as "floor_NAME"; 0: not measured (the launches at launch_us). */
  double format_floor_us[SPX_FORMAT_MAX];
  double gather_cusparse;
  double gather_default;
  /* Latency. A format that gives a whole row (or a slice's widest row) to one thread walks it in
   * dependent steps of about chain_ns each however idle the device is; the long rows' blocks take
   * the device's block slots (sms x 8 blocks of 256 threads) in rounds. The walk takes rounds x (the
   * format's steps) x its factor x chain_ns, after the launch: the prediction is at least the
   * format's floor plus the walk beyond the floor probe's own (without a floor: launches x
   * launch_us plus the walk). 0: the default (chain_ns) or the context's count. */
  double chain_ns;
  int sms;
  /* A kernel that adds a remainder into y with atomics (HYB's COO part: one atomicAdd per row run
   * a warp holds) pays for each beyond the bytes it moves: nanoseconds per such row, measured on a
   * banded matrix whose rows past HYB's K are 30% of all. 0: no term (the defaults, the host). */
  double atomic_row_ns;
} spx_plan_device;

typedef struct spx_plan_options {
  spx_plan_strategy strategy; /* AUTO */
  int64_t expected_calls;     /* SpMVs the plan will serve [1000] */
  int64_t memory_limit;       /* bytes the matrix (+ x, y) may take; 0: the device's free memory
                               * (CUDA), no limit (host) */
  int eager;                  /* 1: convert, upload and compile in spx_plan_create; 0: at the first
                               * spx_plan_spmv (trial plans are always built). A racing plan builds
                               * its start then, its candidates in the race (RACE above). Lazy, the
                               * plan keeps what it builds from: the staged arrays, their values
                               * uploaded in spx_plan_create, where the choice builds from them (a
                               * wrap or a device conversion), else a copy of the matrix */
  spx_backend backend;        /* AUTO: the context's; HOST or CUDA must match a given context */
  int dtype;                  /* -1: the matrix's; else SPX_DOUBLE or SPX_FLOAT */
  int trial_reps;             /* timed SpMVs per candidate in a trial [20] */
  double trial_share;         /* auto: trial when it costs at most this share of the expected
                               * work [0.02] */
  double trial_gap;           /* auto: and only when the runner-up's predicted time is within this
                               * factor of the best's [1.1]: past it the model's ranking stands
                               * (its error is smaller than that gap); <= 1: never a trial of the
                               * best two (latency-bound kernels' quick trial ignores it) */
  double convert_margin;      /* auto and model: a format that converts the matrix must score at
                               * least this share below the best CSR baseline (spx's CSR kernel
                               * or cuSPARSE) to be chosen: the model's error on small kernels is
                               * of that order [0.05, chosen on the fit half of the corpus] */
  const spx_plan_device *device; /* the model's constants; NULL: calibrated (CUDA) or defaults */
  int no_calibrate;           /* 1: never run or read a calibration (defaults instead) */
  const char *force;          /* NULL: the strategy chooses; else that candidate by name ("ell",
                               * "sell", "csr", ... or "cusparse"): SPX_INVALID_ARGUMENT when it is
                               * not a candidate, SPX_DEVICE_OUT_OF_MEMORY when it does not fit */
  int no_diagonal;            /* 1: keep no copy of the diagonal (spx_plan_diagonal and Jacobi PCG
                               * then fail); saves a pass and n doubles when no solver needs it */
  int defer;                  /* 1: when the choice converts the matrix (a format other than CSR),
                               * the plan starts on the CSR as it is (spx's CSR kernel or cuSPARSE,
                               * the faster the model predicts; on a GPU the arrays staged for the
                               * device profile, so nothing is converted) and keeps the choice
                               * pending: spx_plan_upgrade builds it, and the solvers call it once
                               * the residual says enough iterations remain to repay it. The
                               * matrix given to spx_plan_create must then stay alive and unchanged
                               * until spx_plan_upgrade or spx_plan_destroy. */
  int no_race;                /* 1: auto times its candidates in spx_plan_create (a trial, as before
                               * the race); 0 (default): over the first SpMVs (RACE above). A
                               * deferred plan (defer) always takes the trial. */
  int no_tiered_jit;          /* 1: the build waits for NVRTC when the JIT caches lack the chosen
                               * kernel. 0 (default): it never does: SpMVs run the format's generic
                               * kernel, or cuSPARSE on the CSR staged for the choice, while the
                               * kernel compiles on a background thread, and move to it at the
                               * first SpMV after (results may differ in rounding; spx_plan_wait
                               * ends this early, and the solvers call it). */
} spx_plan_options;

void spx_plan_options_default(spx_plan_options *o);

/* One candidate as the planner saw it. Times in microseconds (SpMV) and milliseconds (conversion);
 * negative when not known. */
typedef struct spx_plan_candidate {
  spx_format format;          /* the spx format (CSR for cuSPARSE) */
  spx_plan_engine engine;
  int64_t bytes;              /* device bytes of the matrix arrays (exact when bytes_exact) */
  int bytes_exact;            /* 1: measured by converting; 0: predicted from the row structure */
  int fits;                   /* 0: over the memory limit, excluded */
  double padding;             /* stored slots / nnz */
  double idle;                /* idle lane-slots / nnz (row imbalance inside a warp) */
  double predicted_us;        /* the model's time per SpMV */
  double convert_ms;          /* the model's conversion (+ upload + compile) time */
  double score_us;            /* predicted_us + convert / expected_calls */
  double measured_us;         /* a trial's time per SpMV (-1: not timed) */
  double chain_us;            /* the longest serial walk of one thread, after the floor (see chain_ns) */
  double stream_us;           /* the streaming part (launches, bytes, idle lanes, gather) */
  char note[96];              /* why excluded, or what was notable */
} spx_plan_candidate;

typedef struct spx_plan spx_plan;

/* Chooses and (eagerly or later) builds a plan for a on ctx (NULL: the plan makes and owns a
 * context of options->backend; a program making several plans passes one context: what a context
 * keeps for the device, such as the pinned upload pool, goes with the last one, and each plan of
 * its own would make it again). a is not kept after the call returns. options NULL: defaults.
 * SPX_INVALID_ARGUMENT for NULL or bad arguments; SPX_DEVICE_OUT_OF_MEMORY when no candidate fits
 * the memory limit; *out = NULL on failure. */
spx_status spx_plan_create(spx_context *ctx, const spx_csr *a, const spx_plan_options *options,
                           spx_plan **out);
/* A plan for a CSR that already lives on ctx's device (spx_dcsr, spx/cuda.h: the caller's arrays,
 * 32-bit row pointers, nnz < 2^31), made as spx_plan_create makes one for a matrix it stages on the
 * device, without the download and upload: the CSR is checked on the device (row pointers in order,
 * row_ptr[0] 0, row_ptr[nrows] nnz, columns strictly increasing in [0, ncols): else
 * SPX_INVALID_ARGUMENT naming the first bad row), its rows are profiled there, and the plan runs
 *   csr, cuSPARSE csr             the arrays as they are, wrapped: nothing copied;
 *   ell, ell_r, jds; sell, sell16, sdia, bsr (the registry's device converters)
 *                                 converted on the device from them.
 * The model chooses among the formats it prices from the row profile alone (ell, ell_r, jds, csr,
 * cuSPARSE csr). A format whose model reads the column counts (sell, sell16, sdia, bsr) would need
 * the host's pass over the columns: not modelled (its candidate's note says so), but options.force
 * builds it. A format converted only on the host (coo, hyb, ss, rbp_*, registered formats) is no
 * candidate: forced, SPX_UNSUPPORTED. A matrix without nonzeros runs csr or cusparse only.
 * options as for spx_plan_create, strategies, force, eager and lazy, race, defer and tiered JIT
 * included, but dtype must be -1 or a->dtype (SPX_INVALID_ARGUMENT: no conversion of the values)
 * and backend AUTO or CUDA. The diagonal (spx_plan_diagonal, Jacobi) is taken on the device.
 * OWNERSHIP  The plan never frees, writes or downloads the arrays; spx_plan_destroy leaves them.
 *   It reads them while spx_plan_holds_dcsr(p) is 1: all its life where it runs them as they are
 *   (csr, cusparse), else until what converts them is built and done with them: a lazy plan's
 *   build (its first SpMV, or spx_plan_build), a race and the cuSPARSE stand-in of a compiling
 *   kernel (spx_plan_wait ends both), a deferred choice (spx_plan_upgrade). From then on (0) the
 *   caller may free or overwrite them. Until then they must hold the matrix, unchanged; at the
 *   call their contents must be complete on ctx's stream (work on other streams synchronized).
 * SPX_INVALID_ARGUMENT for NULL arguments (ctx included), negative sizes or sizes past 2^31 - 1, a
 * zero pointer or a dtype other than double or float; SPX_NOT_AVAILABLE on a host-backend context
 * (no device memory); *out = NULL on failure. */
spx_status spx_plan_create_device(spx_context *ctx, const spx_dcsr *a, const spx_plan_options *options,
                                  spx_plan **out);
/* 1 while a plan made by spx_plan_create_device may still read the caller's arrays (OWNERSHIP
 * above), else 0 (and for any other plan). */
int spx_plan_holds_dcsr(const spx_plan *p);
/* y = alpha*A*x + beta*y: host arrays on the host backend, device pointers (cast to void *) on
 * the CUDA backend, queued on the context's stream. beta == 0 does not read y. */
spx_status spx_plan_spmv(spx_plan *p, double alpha, const void *x, double beta, void *y);
/* Converts, uploads and compiles now if that has not happened yet (what eager does). */
spx_status spx_plan_build(spx_plan *p);
void spx_plan_destroy(spx_plan *p);

spx_format spx_plan_format(const spx_plan *p);
spx_plan_engine spx_plan_engine_of(const spx_plan *p);
spx_plan_strategy spx_plan_strategy_of(const spx_plan *p);
spx_backend spx_plan_backend(const spx_plan *p);
spx_dtype spx_plan_dtype(const spx_plan *p);
/* The conversion parameters the plan uses (SPX_AUTO where the format decides). */
const spx_format_params *spx_plan_params(const spx_plan *p);
double spx_plan_predicted_us(const spx_plan *p);   /* per SpMV */
double spx_plan_convert_ms(const spx_plan *p);     /* predicted conversion + upload + compile */
/* What the choice itself took (wall): the selection in spx_plan_create (the device profile and
 * validation, the model, a trial; not the upload of the arrays staged for the profile, which are
 * the build's input), plus a race's candidate builds (the model's choice's too where the plan
 * started on the CSR as it is), timings and bookkeeping inside spx_plan_spmv and spx_plan_wait
 * (not the SpMVs it served), so it grows until the race ends. Never the diagonal (no_diagonal). */
double spx_plan_select_ms(const spx_plan *p);
/* "kubota: B = 1.03 < 2.0 and R = 0.045 % < 0.048 % -> ell (...)". */
const char *spx_plan_reason(const spx_plan *p);
/* The candidates in registry order, cuSPARSE last; *n receives their number. */
const spx_plan_candidate *spx_plan_candidates(const spx_plan *p, int *n);
/* The row statistics the plan was made from (nrows .. row_stddev, B, R; the column, symmetry and
 * run fields are 0: spx_analyze computes those). */
const spx_analysis *spx_plan_analysis(const spx_plan *p);
/* The context the plan runs in (its own or the caller's), and the matrix's size. */
spx_context *spx_plan_context(const spx_plan *p);
int64_t spx_plan_nrows(const spx_plan *p);
int64_t spx_plan_ncols(const spx_plan *p);
/* The matrix's diagonal a_ii, i < min(nrows, ncols), kept with the plan (0 where a row has none),
 * in double whatever the dtype: what Jacobi preconditioning (spx_solve_pcg_jacobi) divides by. A
 * plan that staged the matrix on the device takes it from there when first asked for (a kernel,
 * into out), or before it lets those arrays go; any other plan at creation. */
spx_status spx_plan_diagonal(const spx_plan *p, double *out);
/* Device (host) bytes of the matrix arrays: exact once built, the prediction before. */
int64_t spx_plan_bytes(const spx_plan *p);
/* A deferred plan's pending choice (spx_plan_options.defer): 1 and *info filled while one is
 * pending, else 0. */
typedef struct spx_plan_pending_info {
  spx_format format;          /* the pending format */
  double current_us;          /* the running plan's predicted time per SpMV */
  double pending_us;          /* the pending one's */
  double convert_ms;          /* the pending one's predicted conversion (+ upload + compile) */
} spx_plan_pending_info;
int spx_plan_pending(const spx_plan *p, spx_plan_pending_info *info);
/* Builds a deferred plan's pending choice and runs it from now on (SpMVs queued before it finish
 * first); SPX_OK and nothing done when nothing is pending. On failure the plan keeps running what
 * it ran, and the choice stays pending. */
spx_status spx_plan_upgrade(spx_plan *p);
/* Tiered JIT (options.no_tiered_jit 0): 1 while the plan's chosen kernel is compiling in the
 * background and SpMVs run on a stand-in (the generic kernel, or cuSPARSE), else 0. */
int spx_plan_compiling(const spx_plan *p);
/* The device matrix a built plan runs on spx's kernels (NULL for cuSPARSE, the host backend, or
 * before the build; during a race, what runs between its timed calls): its kernels
 * (spx_dmatrix_describe), bytes and JIT time. */
const spx_dmatrix *spx_plan_dmatrix(const spx_plan *p);
/* Ends a race (RACE above: builds a lazy plan first, times what is left at once, keeps the fastest),
 * then waits for that compile and runs the chosen kernel from now on (SpMVs queued before finish
 * first); SPX_OK at once when nothing compiles or races. spx_plan_time and the solvers call it, so
 * timings and bit-for-bit reproducible solves always see the chosen kernel. A failure of the race's
 * own timing only ends it (the model's choice stands; the reason says so). */
spx_status spx_plan_wait(spx_plan *p);
/* auto's race: 1 while it runs (info, when not NULL, says how far it got), else 0 (info zeroed). */
typedef struct spx_plan_race_info {
  int candidates;             /* raced, the model's choice included */
  int built;                  /* built so far, the model's choice included once built */
  int started;                /* 1: the plan runs the CSR as it is between timed calls (the staged
                               * arrays on a GPU, the race's copy on the host), the model's choice
                               * built at its turn; 0: it runs the model's choice (RACE above) */
  int measured;               /* timed so far (their measured_us set) */
  int dropped;                /* left the race: a failed build or SpMV, or still compiling at half
                               * expected_calls (the candidate's note says which) */
  int64_t calls;              /* spx_plan_spmv calls served since the race began */
} spx_plan_race_info;
int spx_plan_racing(const spx_plan *p, spx_plan_race_info *info);
/* Wall milliseconds spx_plan_build took (conversion, upload, kernel compile or cache), plus the
 * allocation and upload of the CSR arrays staged on the device while choosing (the build's input);
 * 0 before it ran, and for trial plans, which are built during the choice (spx_plan_select_ms). A
 * racing plan's is the build of what it runs first: its start (the staged values' upload and a
 * wrap; nothing on the host), else the model's choice; every candidate's build in the race is
 * selection. Never the diagonal (spx_plan_diagonal). */
double spx_plan_build_ms(const spx_plan *p);
/* Median microseconds per spx_plan_spmv (alpha 1, beta 0) over reps timed runs after a warm-up,
 * on vectors the plan allocates: device events on CUDA, the wall clock on the host. */
spx_status spx_plan_time(spx_plan *p, int reps, double *us);
/* The plan as one JSON object on one line (unknown numbers, such as an untimed candidate's
 * measured_us, are null), or as text lines (json == 0). */
spx_status spx_plan_print(const spx_plan *p, FILE *f, int json);

/* ---- The cost model ------------------------------------------------------------------------ */
/* Unmeasured defaults: a host description (ctx NULL or host) or one derived from the device's
 * properties (peak bandwidth, L2, memory). */
spx_status spx_plan_device_default(spx_context *ctx, spx_plan_device *out);
/* The calibrated description of ctx's device: read from the cache file, else measured now (a few
 * hundred ms on a GPU) and written there (force: measure again). Host contexts measure the host. */
spx_status spx_plan_calibrate(spx_context *ctx, int force, spx_plan_device *out);
/* The calibration file for a device name (NULL when the cache is off); thread-local storage. */
const char *spx_plan_device_path(const char *device_name);
/* Reads / writes a description as a small JSON object. */
spx_status spx_plan_device_load(const char *path, spx_plan_device *out);
/* The same from text (NUL-terminated; `what` names it in messages): SPX_PARSE for a missing field
 * or a number out of its field's range. */
spx_status spx_plan_device_parse(const char *text, const char *what, spx_plan_device *out);
spx_status spx_plan_device_save(const char *path, const spx_plan_device *d);
/* The model's candidates for a without building anything (no GPU needed): what the model strategy
 * decides from. out receives up to max candidates; *n their number. dtype as in the options. */
spx_status spx_plan_model(const spx_csr *a, const spx_plan_device *dev, int64_t expected_calls,
                          int64_t memory_limit, int with_cusparse, spx_plan_candidate *out, int max,
                          int *n);

/* ---- A registered format's model -------------------------------------------------------------
 * The tuner knows an in-tree format by the model on its SPX_FORMATS line (formats.h): a byte
 * predictor, how the kernel's lanes meet rows, its launches, whether the prediction reads columns,
 * the longest serial walk of one thread with a step factor, and why the converter may decline. A
 * registered format (spx_format_register) with a kernel (spx_format_set_kernel) gives the same with
 * spx_format_set_model, and the tuner prices it by the same formulas: bytes, idle lanes and
 * launches at the device's bandwidth (times the calibrated factor of the format, where the
 * calibration measured one), at least the walk, plus conversion / expected_calls. Without a model
 * the tuner converts the matrix once to learn the format's bytes, counts its lanes as flat, one
 * launch, and a thread walking the longest row: the safe guess. */

/* How the kernel's lanes meet rows, which picks the idle-lane term. */
typedef enum spx_format_lanes {
  SPX_LANES_FLAT,   /* nonzeros spread evenly over the lanes: none idle */
  SPX_LANES_PADDED, /* padding stored, so already in the bytes (ELL, SELL): none idle besides */
  SPX_LANES_ROW,    /* a thread per row, warps of consecutive rows: shorter rows idle their lanes */
  SPX_LANES_SORTED, /* a thread per row, rows sorted by length (JDS) */
  SPX_LANES_CSR     /* the CSR vector kernel's lanes per row */
} spx_format_lanes;

/* The longest serial walk of one thread (its steps cost spx_plan_device.chain_ns x factor each):
 * the prediction is at least that, which rules small matrices where latency, not bytes, decides. */
typedef enum spx_format_walk {
  SPX_WALK_NONE,  /* none: nonzeros spread evenly over the threads */
  SPX_WALK_ROW,   /* the longest row */
  SPX_WALK_HYB,   /* the width of an ELL part: the format's parameter "k", else Bell and Garland's rule */
  SPX_WALK_CSR,   /* the CSR vector kernel's steps */
  SPX_WALK_STEPS  /* the predictor's spx_format_estimate.steps (e.g. DIA's diagonals) */
} spx_format_walk;

/* The row structure the tuner read, as a predictor gets it. */
typedef struct spx_format_profile {
  int64_t nrows, ncols, nnz;
  int64_t row_max;         /* the longest row */
  const int64_t *row_hist; /* row_hist[len]: rows of length len, len = 0 .. row_max */
  int warp;                /* lanes in lock step on the device priced (32 on NVIDIA GPUs, 1 on the host) */
} spx_format_profile;

/* A predictor's answer for one matrix (zeroed before the call). */
typedef struct spx_format_estimate {
  int64_t bytes; /* device bytes of the arrays: spx_fmt_bytes after spx_fmt_from_csr with default
                  * parameters (exact where it can be; tests should check it); < 0: not known here,
                  * the tuner converts to learn them */
  int64_t slots; /* value slots stored, padding included: the candidate's padding is slots / nnz;
                  * 0: from the bytes, as for ELL-like slots of (4 + value size) bytes */
  int64_t steps; /* SPX_WALK_STEPS: the longest serial walk of one thread, in steps */
} spx_format_estimate;

/* The format's bytes (and slots, steps) for a, without converting it: SPX_OK with *out filled;
 * SPX_UNSUPPORTED when the converter would decline (the model's note says why, else the
 * predictor's spx_format_fail message); another status fails the selection. p is the profile the
 * tuner read (row lengths); a (valid, host) is there for what the profile does not count, at a cost
 * of at most a pass over it. value_bytes: 8 (double) or 4 (float). */
typedef spx_status (*spx_format_predict_fn)(const spx_csr *a, const spx_format_profile *p, int64_t value_bytes,
                                            spx_format_estimate *out);

/* A registry line's model, field for field: (predictor, lanes, launches, cols, walk, factor, note). */
typedef struct spx_format_model {
  spx_format_predict_fn predict; /* NULL: the tuner converts the matrix to learn the bytes */
  spx_format_lanes lanes;
  int launches;                  /* kernel launches per SpMV, >= 1 */
  int cols;                      /* 1: predict reads the columns, so the format is not modelled where
                                  * the tuner's column profile does not pay (plan.h, CANDIDATES) */
  spx_format_walk walk;
  double factor;                 /* a walk step's cost against ELL-R's (1: as a step of ELL) */
  const char *note;              /* why the converter declines when predict says so, or NULL (copied) */
} spx_format_model;

/* Gives registered format f its model (copied); m NULL takes it back (the safe guess again).
 * SPX_INVALID_ARGUMENT for an unknown or in-tree format (its model is its registry line) or a
 * field out of range (SPX_WALK_STEPS needs a predictor). Call it at start-up, as
 * spx_format_register: not while a selection runs. */
spx_status spx_format_set_model(spx_format f, const spx_format_model *m);

/* ---- Re-selection for time-stepping codes ---------------------------------------------------- */
typedef struct spx_reselect spx_reselect;

typedef struct spx_reselect_step {
  int64_t step;           /* 0 for the first matrix submitted */
  spx_format format;
  spx_plan_engine engine;
  int switched;           /* 1 when format or engine differ from the previous step's */
  double select_ms;       /* analysis + choice + host conversion, on the worker thread */
  double hidden_ms;       /* the part of select_ms that ran while the caller worked */
  double exposed_ms;      /* what spx_reselect_next waited for, plus the upload/compile it ran */
} spx_reselect_step;

/* Options as for plans (strategy TRIAL is refused: it would compete for the device). ctx may be NULL
 * (a host-backend context is made for the plans). */
spx_status spx_reselect_create(spx_context *ctx, const spx_plan_options *options, spx_reselect **out);
/* Starts selecting for the next step's matrix on the worker thread and returns at once. a must stay
 * valid and unchanged until spx_reselect_next returns. SPX_INVALID_ARGUMENT while one is pending. */
spx_status spx_reselect_submit(spx_reselect *r, const spx_csr *a);
/* Waits for the pending selection, builds its plan and gives it (the caller owns and destroys it).
 * SPX_INVALID_ARGUMENT when nothing was submitted. */
spx_status spx_reselect_next(spx_reselect *r, spx_plan **plan, spx_reselect_step *info);
/* Waits for a pending selection (discarding it) and frees everything. NULL is a no-op. */
void spx_reselect_destroy(spx_reselect *r);

#ifdef __cplusplus
}
#endif
#endif /* SPX_PLAN_H */
