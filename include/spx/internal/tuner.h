/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/tuner.h: what the tuner's rooms (plan_*_impl.h, listed bottom up in spx.h) give the
 * rooms above them: the row profile, the device description's constants and file cache, the
 * model's prices and candidates, the plan object with its build, the strategies and the selection.
 * Each section names the file that defines it; a room calls only the sections before its own.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_TUNER_H
#define SPX_INTERNAL_TUNER_H

#include <stdatomic.h>

#include "common.h"
#include "dmatrix.h"
#include "../baseline.h"
#include "../cuda.h"
#include "../formats.h"
#include "../plan.h"

/* ---- plan_profile_impl.h: the row structure the predictors read ------------------------------ */
typedef struct spx__pprof {
  int64_t n, ncols, nnz, row_max;
  int64_t *hist;       /* hist[len]: rows of length len, 0 .. row_max */
  int64_t nblocks, nval, nnon, max_blocks, max_bval, max_iso; /* column runs (RBP): totals, most in a row */
  int64_t ss_runs;     /* row pieces of SS with its default segment */
  double idle_row;     /* idle lane-slots of one thread per row, warps of consecutive rows */
  double idle_sorted;  /* the same with rows sorted by length (JDS) */
  double idle_csr;     /* the CSR vector kernel's groups (tpr lanes per row) */
  int tpr;
  int64_t bsr_blocks[9];  /* [b]: blocks of b x b (BSR) */
  int64_t sell_slots[2];  /* SELL with C = 32: slots with sigma 1, sigma 256 */
  int sell16_wide[2];     /* some slice spans more than 65536 columns (sigma 1); some window (256) */
  int64_t sdia_diags;     /* SDIA with C = 32: diagonals summed over the slices */
  int64_t sdia_slots;     /* ... times each slice's real rows */
  int sdia_capped;        /* some slice has over SPX__SDIA_COUNT_MAX offsets (counts are lower bounds) */
  int sampled;            /* the column counts above are a sample scaled up (estimates) */
  int64_t sorted_kept;    /* rows i with len(i + 1) == len(i): still neighbours once sorted by length */
  int64_t x_sectors;      /* distinct 32-byte sectors of x each 32-row slice reads, summed ... */
  int64_t x_nnz;          /* ... over slices holding this many nonzeros (their ratio: x locality) */
  int64_t x_span;         /* columns from the first to the last one of each 256-row window, summed ... */
  int64_t x_windows;      /* ... over this many windows */
  int cols_done;          /* the column counts above are filled (spx__pprof_columns) */
} spx__pprof;

/* Distinct 32-byte sectors of x per nonzero over 32-row slices (1: every nonzero its own). */
double spx__pprof_xsec(const spx__pprof *p);
void spx__pprof_free(spx__pprof *p);
/* Whether the column counts of a come from a sample of windows, and how many windows it reads. */
int spx__plan_sampled(const spx_csr *a);
int spx__plan_sample_windows(const spx_csr *a);
/* The column counts of p (every window, or a sample scaled up); beside_upload: on a thread beside
 * the device profile's upload, checking the rows it reads first. stop (NULL: never): set by another
 * thread, the windows left are skipped and p->cols_done stays 0 (its counts partial). */
spx_status spx__pprof_columns(const spx_csr *a, int beside_upload, spx__pprof *p, atomic_int *stop);
/* The threads spx__pprof_columns takes beside the upload. */
int spx__pprof_beside_threads(void);
/* The CSR vector kernel's threads per row: a power of two near a fifth of the mean row. */
int spx__plan_tpr(const spx_csr *a);
/* full 0: row lengths; 1: everything; 2: all but the column counts. given: the device's part. */
spx_status spx__pprof_make(const spx_csr *a, int warp, int full, const spx__pprof *given, spx__pprof *p);
/* spx_analysis's row statistics (sizes, row lengths, B, R) from row_ptr alone, of a validated CSR;
 * _finish completes them from the sum of squared row lengths sq (the device profile's counters
 * give it too). */
void spx__plan_rowstats(const spx_csr *a, spx_analysis *an);
void spx__plan_rowstats_of(const spx_csr *a, const spx__pprof *p, spx_analysis *an);
void spx__plan_rowstats_finish(const spx_csr *a, double sq, spx_analysis *an);

/* ---- plan_device_impl.h: the device description and its file --------------------------------- */
/* The step of a serial walk in ns where the description leaves chain_ns 0 (a thread walking a row
 * of L nonzeros adds about L steps): the unit of the formats' walk factors (formats.h), which are
 * fitted in it. */
#define SPX__PLAN_CHAIN_NS 90.0
/* The floor probe: a 3-D Poisson (7-point) matrix of this many rows a side. Its floor holds its
 * own walk (rows of up to 7 nonzeros), so a walk adds to a floor only what it takes beyond. */
#define SPX__PLAN_FLOOR_PROBE_SIDE 8
/* This process's copy of the calibration file: 1 with *d when the file at path was last read or
 * written here and describes the device named name; _keep records d as path's contents. */
int spx__calib_get(const char *path, const char *name, spx_plan_device *d);
void spx__calib_keep(const char *path, const spx_plan_device *d);
/* mkdir -p of the directory part of path. */
void spx__plan_mkdirs(const char *path);
/* spx_plan_device_default and spx_plan_calibrate with the free memory read from the driver now
 * (fresh 1, as the public calls do) or as last read (fresh 0: spx__free_seen, no driver call; a
 * plan reads again where it could come near it, spx__plan_limit_check). */
spx_status spx__plan_device_base(spx_context *ctx, spx_plan_device *d, int fresh);
spx_status spx__plan_calibrated(spx_context *ctx, int force, int fresh, spx_plan_device *out);

/* ---- plan_model_impl.h: byte predictors and the cost model ----------------------------------- */
/* CSR's bytes from the profile (vt unused; the calibration's reference). */
int64_t spx__pb_csr(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb);
/* Predicted microseconds per SpMV for a format storing `bytes`, with `idle` idle lane-slots. */
double spx__plan_time_us(const spx_plan_device *d, const spx__pprof *p, int64_t vb, int64_t bytes, double idle,
                         int launches);
typedef int64_t (*spx__plan_pred_fn)(const spx__pprof *p, const spx_format_vtable *vt, int64_t vb);
/* The bytes ELL-R's kernel moves on p: its warps' slots, not its stored padding. */
int64_t spx__pr_ell_r(const spx__pprof *p, int64_t vb);
/* HYB's atomic adds into y on p (rows past its K, and runs crossing a warp's edge). */
double spx__plan_hyb_atomics(const spx__pprof *p, const spx_format_vtable *vt);
/* Random-gather microseconds of p at d's bandwidth (0 on the host and within the cache). */
double spx__plan_gather_us(const spx_plan_device *d, const spx__pprof *p, int64_t vb);
/* Whether format f converts on the device (cuda: the plan's backend is CUDA). */
int spx__plan_on_device(int cuda, int f);
/* A candidate's name as reasons and `spx select` print it ("cusparse_csr" for cuSPARSE). */
const char *spx__plan_cname(const spx_plan_candidate *c);
/* c->fits: its bytes (known) and the vectors' vec within limit (0: none); the note says when not. */
void spx__plan_fit(spx_plan_candidate *c, int64_t vec, int64_t limit);
/* cuSPARSE CSR as a candidate, from the row sizes alone. */
void spx__plan_cusparse_cand(const spx_plan_device *d, const spx__pprof *p, int64_t vb, double gather, int64_t limit,
                             int64_t vec, int64_t calls, spx_plan_candidate *c);
/* The candidates of a, scored (rows: the device's row profile, or NULL; cols_share >= 0: the column
 * counts read only where they cost at most that share of the work and can save their price;
 * plan_model_impl.h says the rest). */
spx_status spx__plan_candidates(const spx_csr *a, const spx__pprof *rows, const spx_plan_device *d, int64_t calls,
                                int64_t limit, int with_cusparse, int cuda, spx_plan_candidate *out, int max, int *n,
                                spx_format_params *params, double cols_share);
/* The milliseconds the column profile of a may cost over calls SpMVs: share of the CSR baseline's
 * work. */
double spx__plan_columns_budget_ms(const spx_csr *a, const spx_plan_device *d, int64_t calls, double share);
/* The column profile's price on `threads` threads, ms (the windows it reads). */
double spx__plan_columns_ms(const spx_csr *a, int threads);
/* c's score: its predicted time plus its conversion spread over calls SpMVs. */
void spx__plan_score(spx_plan_candidate *c, int64_t calls);
/* Whether no conversion can pay back on a against cuSPARSE's prediction cs_us, a kernel costing
 * kernel_ms. */
int spx__plan_nothing_pays(const spx_csr *a, const spx_plan_device *d, int64_t calls, double share, double cs_us,
                           double kernel_ms);

/* ---- plan_object_impl.h and plan_race_impl.h: the plan --------------------------------------
 * One room in two files: the race is a state of the plan, as the tiered start is, so spx_plan_spmv,
 * spx_plan_wait and spx_plan_destroy call into the race and the race builds and runs candidates
 * through the plan's build. */
/* The plan's life, in its fields (those not named here are options, the choice and its record):
 *   selected, not built  built 0, a: the matrix copy the build converts (a lazy plan builds at its
 *                        first SpMV or spx_plan_build); fmt may already hold a host conversion (the
 *                        re-selection worker's), which the build uploads.
 *   built                built 1, a NULL; fmt (host backend), dm (spx's kernel) or cs (cuSPARSE)
 *                        runs; spx_plan_spmv asks start, cs, dm, fmt in that order.
 *   starting             built 1 and start: dm's kernel compiles in the background (tiered) and
 *                        cuSPARSE runs meanwhile; the first SpMV after the compile (or
 *                        spx_plan_wait) destroys start.
 *   deferred             pending 1, beside either state above: cand[chosen] is a CSR start that
 *                        converts nothing, cand[pend_idx] the choice spx_plan_upgrade builds from
 *                        src (own_src: the plan's copy), then unbuilds the start and clears pending.
 *   racing               race non-NULL, beside the states above (auto, plan_race_impl.h):
 *                        cand[chosen] is the model's choice; spx_plan_spmv times the candidates of
 *                        race in turn on the caller's calls (each built when its turn comes, a plan
 *                        of its own), then moves the fastest into this plan (spx__plan_take_build)
 *                        and frees race. What this plan runs meanwhile (untimed calls) is its
 *                        start where race->started: the CSR as it is (cuSPARSE or spx's CSR kernel
 *                        wrapping dc; on the host, race_csr: the race's copy), the model's choice
 *                        then a candidate like the others; else the model's choice, built as
 *                        above (it runs on dc as it is, or nothing could start). The race holds dc
 *                        meanwhile (its candidates build from it): a build that lets go of it sets
 *                        dc_let_go, and the race's end frees it.
 * The staged arrays dc (the device profile's upload) are the build's input and stay after it only
 * while something reads them: cs or dm wraps them (cuSPARSE; csr_staged: spx's CSR kernel), or
 * start runs on them (start_keeps_dc: dm wraps them too, so they outlive start). dc_borrowed: a
 * trial candidate's dc is its parent's, never freed by it. want_ddiag: a staged plan's diagonal is
 * owed, taken (spx__plan_diag_take) when first asked for or before the last thing that can give it
 * goes (dc with its values up, the lazy copy a, the race's copy). race_cand: a race candidate, timed
 * only on its own kernel (tiered, but with no stand-in: the race tries it once its compile is done).
 * A plan on the caller's device arrays (spx_plan_create_device) has no host matrix at all: a stays
 * NULL and dc (dc.caller: never freed here) is the matrix of every build, of a trial's and a race's
 * candidates and of a deferred upgrade (src: its sizes alone); a build that would need the matrix
 * on the host is refused (spx__dcsr_download), and its diagonal is owed from the selection on. */
typedef struct spx__race spx__race;
struct spx_plan {
  spx_context *ctx;
  int own_ctx;
  spx_backend backend;
  spx_plan_strategy strategy;
  spx_dtype dtype;
  int64_t nrows, ncols;
  spx_format format;
  spx_plan_engine engine;
  spx_format_params params;
  double margin;           /* options.convert_margin */
  spx_csr *a;              /* a copy, kept until built (lazy plans) */
  spx_fmt *fmt;            /* the converted matrix (host backend: what runs) */
  spx_dmatrix *dm;
  spx_cusparse_plan *cs;
  int built;
  spx_analysis an;
  spx_plan_candidate cand[SPX_FORMAT_MAX + 1];
  int ncand, chosen;       /* chosen: index into cand */
  int64_t calls;           /* expected_calls */
  double select_ms, build_ms;
  double *diag;            /* a_ii, min(nrows, ncols) entries (Jacobi) */
  int stage;               /* spx_plan_create may profile on the device (not the re-selection worker) */
  double stage_upload_s;   /* of which the CSR's device arrays: allocation and upload, seconds */
  spx__dcsr dc;            /* the CSR as staged for the device profile: the build's input, then
                            * cuSPARSE's arrays (freed after cs) or spx's CSR kernel's (after dm) */
  int pending, pend_idx;   /* defer: the choice (cand[pend_idx]) waits for spx_plan_upgrade */
  const spx_csr *src;      /* defer: the matrix to convert then (the caller's, or own_src) */
  spx_csr *own_src;        /* defer: the plan's copy when the value type changed */
  double upgrade_ms;       /* defer: what spx_plan_upgrade took */
  double pend_staged_ns;   /* defer: the pending format's calibrated conversion from staged arrays, ns/byte (0: none) */
  spx_dmatrix_options csr_opt; /* the CSR kernel the host rule would pick, from the profile (staged) */
  int csr_staged;          /* 1: a CSR plan wraps the staged arrays (csr_opt set) */
  int cols_stopped;        /* 1: the column counts beside the staging upload outlasted their budget */
  int want_ddiag;          /* 1: the diagonal is owed (spx__plan_diag_take) */
  double diag_ms;          /* wall ms taking the diagonal took (in neither select_ms nor build_ms) */
  double copy_ms;          /* wall ms spx_plan_create spent on a lazy plan's copy of the matrix (trace) */
  int dc_borrowed;         /* 1: dc is the parent plan's (a trial candidate): never freed here */
  int tiered;              /* the build's dmatrix is tiered (options.no_tiered_jit 0, CUDA; not a
                            * trial's candidate, a race's is) */
  int64_t limit;           /* the selection's memory limit in bytes (0: none) */
  int limit_seen;          /* 1: limit is the free memory as last read (spx__plan_limit_check) */
  double launch_us;        /* the device description's kernel launch latency (auto's latency regime) */
  spx_cusparse_plan *start; /* tiered: cuSPARSE on the staged CSR while dm has no kernel to run */
  int start_keeps_dc;      /* 1: dm runs on dc's arrays (spx's CSR kernel): they stay when start goes */
  spx__race *race;         /* auto's race while it runs (plan_race_impl.h), else NULL */
  int race_cand;           /* 1: a candidate of a race (see above) */
  int dc_let_go;           /* 1: the build let go of dc while a race held it: freed at the race's end */
  const spx_csr *race_csr; /* host backend, racing: the race's copy, run as it is (spx_csr_spmv) */
  spx_csr *race_csr_own;   /* race_csr, kept past its race when nothing else could be built */
  char reason[768];
};

/* Case-insensitive string equality; whether a forced name means the cuSPARSE engine. */
int spx__plan_ieq(const char *a, const char *b);
int spx__plan_names_cusparse(const char *name);
/* Destroys what the build made (start, dm, cs, fmt, the staged arrays); built 0. */
void spx__plan_unbuild(spx_plan *p);
/* Whether the plan builds from its staged device arrays (p->dc). */
int spx__plan_staged(const spx_plan *p);
/* Whether the plan keeps a host copy of the matrix (a lazy plan's, a race's): a test hook. */
int spx__plan_keeps_copy(const spx_plan *p);
/* Tests only (plan_race_impl.h): microseconds added to race slot `slot`'s block median in look
 * `look` (0: its first block, 1: the second look), as noise would; NULL: none. */
extern double (*spx__race_test_noise)(int slot, int look);
/* Tests only (plan_calibrate_impl.h): microseconds added to format f's floor probe in round
 * `round`, as a transient would; NULL: none. */
extern double (*spx__cal_test_noise)(int f, int round);
/* Whether the plan's context has cuSPARSE. */
int spx__plan_has_cusparse(const spx_plan *p);
/* Converts a to the plan's choice and makes it runnable on the backend; a NULL: the staged arrays
 * (values up) are the matrix, downloaded where a host converter needs it. A racing plan builds its
 * start instead where it has one (spx__race_start_cand). */
spx_status spx__plan_build_from(spx_plan *p, const spx_csr *a);
/* Whether the plan builds format f on engine e from its staged arrays (spx__plan_staged's test for
 * a candidate). */
int spx__plan_staged_as(const spx_plan *p, spx_format f, spx_plan_engine e);
/* The staged arrays wrapped as they are (values from a where they are not up): cuSPARSE (cusparse
 * 1) or spx's CSR kernel (tiered as spx_dmatrix_options.tiered); the plan is built. */
spx_status spx__plan_wrap(spx_plan *p, const spx_csr *a, int cusparse, int tiered);
/* The owed diagonal (want_ddiag) into p->diag from the staged arrays (values up) or host (a copy of
 * the matrix; NULL: none); it stays owed where neither can give it. */
void spx__plan_diag_take(spx_plan *p, const spx_csr *host);
/* Whether what the plan keeps can give its owed diagonal later: the staged arrays with their
 * values up (_staged), or those or a host copy (_can). */
int spx__plan_diag_staged(const spx_plan *p);
int spx__plan_diag_can(const spx_plan *p);
/* The diagonal of a (min(nrows, ncols) entries, 0 where a row has none) into out: the host pass. */
void spx__csr_diag_into(const spx_csr *a, double *out);
/* A plan for candidate i, built in p's context from a (the trial's and calibration's; race: a race
 * candidate's, which never waits for NVRTC). */
spx_status spx__plan_candidate(spx_plan *p, const spx_csr *a, int i, int race, spx_plan **out);
spx_status spx__plan_fixed(spx_plan *p, const spx_csr *a, int i, spx_plan **out);
/* One SpMV on what the built plan runs now (race_csr, start, cs, dm or fmt), past any race. */
spx_status spx__plan_run(spx_plan *p, double alpha, const void *x, double beta, void *y);
/* p runs q's build from now on (the race's winner, whose queued SpMVs are done): p's own build goes
 * (device frees are ordered after the stream's queued work by the device layer), q's moves in, and
 * the staged arrays stay only where the new build wraps them. */
void spx__plan_take_build(spx_plan *p, spx_plan *q);
/* Frees the staged arrays a build let go of while a race held them (dc_let_go). */
void spx__plan_release_dc(spx_plan *p);
/* qsort's order of doubles, ascending. */
int spx__plan_cmp(const void *a, const void *b);
/* spx_plan_time's samples last about this long on a GPU: long enough that launch jitter and the
 * events' resolution stay a small share of one. */
#define SPX__PLAN_SAMPLE_MS 0.5
/* What a timing of reps samples of about sample_ms takes, in ms, for a plan of `us` per SpMV. */
double spx__plan_time_ms(int cuda, double us, int reps, double sample_ms);
/* spx_plan_time with samples of about sample_ms (GPU) instead of SPX__PLAN_SAMPLE_MS. */
spx_status spx__plan_time_sampled(spx_plan *p, int reps, double sample_ms, double *us);
/* The plan's diagonal without a copy (NULL: none kept), taken now where it was owed; the solvers'
 * Jacobi. */
const double *spx__plan_diag_kept(spx_plan *p);

/* Whether format f's prediction needs the column counts (its model's cols). */
int spx__plan_reads_columns(spx_format f);

/* The race (plan_race_impl.h). Its candidates, in the model's order: slot 0 the model's choice,
 * which the plan itself runs unless it started on the CSR as it is (started: then slot 0 is a
 * candidate like the others); each other slot a plan of its own, built when its turn comes and
 * freed once it cannot win. */
#define SPX__RACE_REPS_MAX 64 /* timed calls per candidate at most (as spx_plan_time's samples) */
enum { SPX__RACE_WAIT, SPX__RACE_DONE, SPX__RACE_DROPPED };
typedef struct spx__race_slot {
  int cand;                 /* index into the plan's cand[] */
  int state;                /* SPX__RACE_WAIT: to be timed; DONE: measured (cand's measured_us); DROPPED */
  spx_plan *q;              /* its build (slot 0's only where started), NULL before its turn and once it lost
                             * (slot 0's kept to the end, for the second look) */
} spx__race_slot;
struct spx__race {
  spx__race_slot slot[SPX_FORMAT_MAX + 1];
  int n, reps;              /* candidates; timed calls each, after one warm-up call */
  int two;                  /* the best two (the reason gives both times), else the ranked ones */
  int cur, calls;           /* the slot whose block of calls runs (-1: none), and its calls so far */
  int pending;              /* CUDA: the slot whose block's events are not read yet (-1: none) */
  int lead;                 /* the fastest slot measured so far (-1: none) */
  int nbuilt;               /* slots with a plan of their own built so far */
  int started;              /* the plan runs its start (start_cand) until the end, not the model's choice */
  int start_cand;           /* the start's candidate (cuSPARSE or spx's CSR; -1 on the host: race_csr) */
  int sync;                 /* spx_plan_wait is ending it: the plan runs as if there were none */
  int by_wait;              /* spx_plan_wait ended it */
  int looked;               /* the second look: 1 once the model's choice and the leader are timed again */
  int64_t served, drop_after; /* calls served; a slot still compiling past drop_after is dropped */
  double sample_ms;         /* spx_plan_wait's timings' samples, as the trial's */
  double us[SPX__RACE_REPS_MAX];           /* the block's samples, us */
  spx__CUevent ev[2 * SPX__RACE_REPS_MAX]; /* CUDA: a pair around each timed call, reused per block */
  int nev;
  const spx_csr *a;         /* the host matrix the candidates build from (the plan's lazy copy, or
                             * own); NULL: the staged arrays (dc, values up), downloaded into own
                             * at the turn of the first candidate converted on the host */
  spx_csr *own;
  char head[448], what[160]; /* the reason: "<head>race <what> over the first SpMVs: <result>" */
};
/* Starts a race of idx[0..k) (idx[0] the model's choice, p->chosen) with the reasons' head and
 * what; the matrix comes after (spx__race_keep, spx__race_share). */
spx_status spx__race_begin(spx_plan *p, const int *idx, int k, int reps, double sample_ms, int two, const char *head,
                           const char *what);
/* The race's matrix: none where the staged arrays hold it (their values up), else *own moved in
 * (when not NULL), else a copy of a (an eager plan's). */
spx_status spx__race_keep(spx_plan *p, spx_csr **own, const spx_csr *a);
/* The candidate a racing plan starts on (its build runs the CSR as it is while the model's choice
 * waits for its turn); -1 on the host (race_csr); -2: none (the plan builds the model's choice). */
int spx__race_start_cand(const spx_plan *p);
/* Builds that start (spx__race_start_cand's j) as the plan's own build. */
spx_status spx__race_start(spx_plan *p, const spx_csr *a, int j);
/* The race's matrix is the lazy plan's copy m, which spx_plan_build hands over (spx__race_adopt:
 * 1 when the race took m). */
void spx__race_share(spx_plan *p, const spx_csr *m);
int spx__race_adopt(spx_plan *p, spx_csr *m);
/* spx_plan_spmv during a race; spx_plan_wait's end of it (the rest timed at once, as the trial
 * does); spx_plan_destroy's (every candidate and event freed). */
spx_status spx__race_spmv(spx_plan *p, double alpha, const void *x, double beta, void *y);
spx_status spx__race_end(spx_plan *p);
void spx__race_free(spx_plan *p);
/* The contest's result as reasons give it: "A 3.1 us vs B 3.4 us" for the best two (idx[0], idx[1]),
 * else the chosen candidate's time. */
void spx__plan_verdict(const spx_plan *p, const int *idx, int two, char *buf, size_t len);

/* ---- plan_strategy_impl.h: the strategies ---------------------------------------------------- */
/* Whether candidate i exists, fits and has a prediction. */
int spx__plan_usable(const spx_plan *p, int i);
/* The choice among p's candidates (options.force, else the strategy), with its reason. */
spx_status spx__plan_strategy(spx_plan *p, const spx_csr *use, const spx_plan_options *o);

/* ---- plan_rows_impl.h: the plan's matrix before the model ------------------------------------- */
/* Whether a is profiled on the host beside its upload rather than on the device after it. */
int spx__plan_beside(const spx_csr *a);
/* Whether a plan of a stages it on the device before choosing (the device profile, or the host's
 * beside the upload); the CUDA backend and the staging's own needs are spx__plan_rows's to check. */
int spx__plan_stage_wanted(const spx_csr *a, const spx_plan_options *o);
/* The row profile (rows) and p->an from analyze.cu's counters r and histogram hist (rows takes
 * it) of a matrix of a's sizes (its arrays are not read). */
void spx__plan_rows_of(spx_plan *p, const spx_csr *a, const uint64_t r[9], int64_t *hist, spx__pprof *rows);
/* The share of the work the column counts may cost (< 0: read them always). */
double spx__plan_cols_share(const spx_plan_options *o);
/* The row profile, staged on the device where the plan wants that, else on the host; *profiled
 * (when not NULL): rows, the model's row-length part; NULL: the row statistics alone. */
spx_status spx__plan_rows(spx_plan *p, const spx_csr *a0, const spx_csr *use, const spx_plan_options *o,
                          const spx_plan_device *dev, int columns, int values, spx__pprof *rows, spx__pprof **profiled);
/* The row profile the model prices from (spx__plan_rows as the model and the build need it) and,
 * on staged arrays, spx's CSR kernel chosen from its histogram. */
spx_status spx__plan_profile(spx_plan *p, const spx_csr *a0, const spx_csr *use, const spx_plan_options *o,
                             const spx_plan_device *dev, spx__pprof *rows, spx__pprof **profiled);

/* ---- plan_impl.h: the selection -------------------------------------------------------------- */
/* The plan's context: the caller's, checked against the options, or one of its own. */
spx_status spx__plan_context(spx_plan *p, spx_context *ctx, const spx_plan_options *o);
/* The calibration's per-format floors (format_floor_us) measured into d on ctx: a test hook. */
spx_status spx__plan_cal_floors(spx_context *ctx, spx_plan_device *d);
/* The model's constants: given, calibrated, or defaults. */
spx_status spx__plan_devdesc(spx_plan *p, const spx_plan_options *o, spx_plan_device *d);
/* Selection proper (spx_plan_create's, and the re-selection worker's). */
spx_status spx__plan_select(spx_plan *p, const spx_csr *a0, const spx_plan_options *o);

#endif /* SPX_INTERNAL_TUNER_H */
