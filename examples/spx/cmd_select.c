/* SPDX-License-Identifier: BSD-3-Clause */
/* spx select FILE: the plan and its reason for each strategy (or one, --strategy).
 * spx select --eval MATRIX...: the selection paper's protocol on the GPU. Per matrix: the oracle
 * (fastest measured over every candidate format and cuSPARSE CSR, by a full trial), each strategy's
 * choice for the steady state (planned for 10^6 SpMVs) and its slowdown against the oracle, and
 * the end-to-end time of 100 and 500 BiCGSTAB-style iterations (2 SpMVs each, the plan made for
 * that many) including analysis + conversion + compile, against cuSPARSE CSR alone (its setup +
 * the same SpMVs; each setup the median of SEL_SETUP_REPS creations, on both sides; for model and
 * auto, SEL_PAIR_REPS creations each right after a cuSPARSE one, compared with those). Unless
 * --no-solve, also the real thing: BiCGSTAB for 100 and 500 iterations on auto's plan and on
 * cuSPARSE CSR, plan creation included (papers/001 Figures 10-11). With --cold, also plan creation +
 * the SpMVs for real, auto with warm JIT caches and with its kernels removed from them first (the
 * tiered JIT's case), against cuSPARSE CSR. Summary:
 * share within 5 % of the oracle (every choice and the oracle timed again in turns, SEL_RETIME_ROUNDS
 * rounds, by their medians), geometric-mean slowdown,
 * worst case; --json F and --svg F write the rows and a slowdown plot. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const int sel_iters[2] = {100, 500};

/* --no-solve: the SpMV proxy alone, without the BiCGSTAB runs. */
static int sel_solve = 1;
/* --cold: also end to end for real with the JIT caches cold for auto's kernels (sel_real_row). */
static int sel_cold = 0;

/* Strategies the eval runs (--strategies); the trial always runs: it is the oracle. */
static int sel_want[SPX_PLAN_STRATEGY_COUNT] = {1, 1, 1, 1, 1};

/* Runs of each real end to end (the fastest kept, and each run paired with its base's run of the
 * same turn): a run on a small matrix lasts about a millisecond, which one preempted host thread
 * or a clock change moves by tens of per cent. */
#define SEL_REAL_REPS 5

typedef struct sel_row {
  char matrix[96];
  int64_t nnz;
  double oracle_us;
  char oracle[24];
  char choice[SPX_PLAN_STRATEGY_COUNT][24];    /* planned for 10^6 calls (the steady state) */
  char choice100[SPX_PLAN_STRATEGY_COUNT][24]; /* planned for 100 iterations (200 calls) */
  double us[SPX_PLAN_STRATEGY_COUNT], slowdown[SPX_PLAN_STRATEGY_COUNT];
  /* the choice's time in the oracle's own table / the oracle's: the choice's quality without the
   * noise of timing it again in another session (0: the choice was not timed there) */
  double choice_slowdown[SPX_PLAN_STRATEGY_COUNT];
  double e2e_ms[SPX_PLAN_STRATEGY_COUNT][2], cs_e2e_ms[2];
  /* cuSPARSE's end to end from setups timed in turn with this strategy's (model, auto); 0: not
   * paired (cs_e2e_ms applies) */
  double cs_pair_e2e_ms[SPX_PLAN_STRATEGY_COUNT][2];
  double select_ms[SPX_PLAN_STRATEGY_COUNT]; /* the choice itself (analysis + model, or + trial) */
  /* papers/001's protocol for real: BiCGSTAB (b = A 1, x0 = 0, no tolerance) for 100 and 500
   * iterations, plan creation through the solve's return, auto's plan [0] and cuSPARSE CSR's [1]
   * (the faster of two runs each, alternating); iterations done (fewer on a breakdown) */
  double bicg_ms[2][2];
  int64_t bicg_it[2][2];
  /* --cold: plan creation + 2 x iterations real SpMVs, synchronized, ms (the fastest of SEL_REAL_REPS runs;
   * real_rep_ms every run, for the turns' pairs: sel_real_ratio):
   * [0] cuSPARSE CSR, [1] auto with warm JIT caches, [2] auto with its kernels (specialized and
   * generic) removed from the caches first, [3] cuSPARSE CSR in the cold runs' conditions (right
   * after a removal, as [2] is: the GPU idled meanwhile); cold_standin: the cold plan started on a
   * stand-in */
  double real_ms[4][2];
  double real_setup_ms[4][2]; /* of the run kept in real_ms: plan creation until it returned */
  double real_rep_ms[4][2][SEL_REAL_REPS]; /* every run, in order: rep k of a side and of its base pair up */
  int cold_standin[2];
  /* --cold: the kept run's plan (auto's sides 1 and 2): its name and reason, for reading what a
   * slow end to end did */
  char real_plan[4][2][24];
  char real_reason[4][2][512];
  int ncand;                                 /* candidates the oracle's trial timed */
  char cand[SPX_FORMAT_MAX + 1][24];
  double cand_pred_us[SPX_FORMAT_MAX + 1], cand_meas_us[SPX_FORMAT_MAX + 1];
  /* the model's parts of each prediction, for fitting its constants offline on the fit half */
  double cand_stream_us[SPX_FORMAT_MAX + 1], cand_chain_us[SPX_FORMAT_MAX + 1], cand_conv_ms[SPX_FORMAT_MAX + 1];
  int64_t nrows, row_max;
} sel_row;

/* A candidate's name as the eval and the plans print it. */
static const char *sel_cand_name(const spx_plan_candidate *c) {
  return c->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(c->format);
}

static const char *sel_cname(const spx_plan *p) {
  return spx_plan_engine_of(p) == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse_csr" : spx_format_name(spx_plan_format(p));
}

/* The plans each strategy makes for the matrix at path, in ctx: one context for the whole run, as a
 * program has one (a plan without one makes its own and lets it go with it, and the device's upload
 * pool, which lives while a context on the device does, would be made again for every plan). */
static int sel_one(spx_context *ctx, const char *path, int has_strategy, spx_plan_strategy only, int json, int64_t calls) {
  spx_csr *a = NULL;
  int st, first = 1;
  char name[128];
  if (spx_cli_load_matrix(path, &a, name, sizeof name)) return spx_cli_fail("select");
  if (json) {
    printf("{\"file\": ");
    spx_cli_json_str(stdout, path);
    printf(", \"plans\": [");
  }
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    spx_plan_options o;
    spx_plan *p;
    if (has_strategy && st != (int)only) continue;
    spx_plan_options_default(&o);
    o.strategy = (spx_plan_strategy)st;
    o.expected_calls = calls;
    spx_cli_progress("%s: %s", path, spx_plan_strategy_name(o.strategy));
    /* auto's race would run over the first SpMVs: it ends here, so the plan shown is the one kept */
    if (spx_plan_create(ctx, a, &o, &p) || spx_plan_wait(p)) {
      spx_cli_progress_done();
      spx_plan_destroy(p);
      spx_csr_destroy(a);
      return spx_cli_fail("select");
    }
    spx_cli_progress_done();
    if (json && !first) printf(", ");
    first = 0;
    if (!json) printf("%s-- %s\n", st && !has_strategy ? "\n" : "", spx_plan_strategy_name(o.strategy));
    if (json) { /* the plan's one line, without its newline: one line per FILE (JSON Lines) */
      char *line = NULL;
      size_t len = 0;
      FILE *m = open_memstream(&line, &len);
      int bad = !m;
      if (m) {
        bad = spx_plan_print(p, m, 1) != SPX_OK;
        bad |= fclose(m) != 0;
      }
      if (bad || !line) {
        free(line);
        spx_plan_destroy(p);
        spx_csr_destroy(a);
        return spx_cli_fail("select");
      }
      while (len > 0 && line[len - 1] == '\n') line[--len] = 0;
      fputs(line, stdout);
      free(line);
    } else spx_plan_print(p, stdout, 0);
    spx_plan_destroy(p);
  }
  if (json) printf("]}\n");
  spx_csr_destroy(a);
  return 0;
}

/* --device-file: the model's candidates for the matrix at path as they would be on the device the
 * file describes (a calibration file, spx_plan_device_load), computed here without that device: a
 * JSON line each, named as the eval names its rows, so that an eval's measured times (--json-file)
 * can be set against another model's predictions offline (bench/model_replay.py). lowest: the
 * fitting candidate of least score at `calls` (the model's ranking; the strategy's margin and
 * trial rules are not applied). */
static int sel_model_line(const char *path, const spx_plan_device *dev, int64_t calls) {
  spx_plan_candidate c[SPX_FORMAT_MAX + 1];
  spx_csr *a = NULL;
  char name[128];
  int n = 0, k, low = -1;
  if (spx_cli_load_matrix(path, &a, name, sizeof name)) { /* as the eval does: the others go on */
    fprintf(stderr, "spx: select: %s: %s (skipped)\n", path, spx_last_error());
    return 0;
  }
  spx_cli_progress("%s: the model", path);
  if (spx_plan_model(a, dev, calls, 0, 1, c, SPX_FORMAT_MAX + 1, &n)) {
    spx_cli_progress_done();
    spx_csr_destroy(a);
    return spx_cli_fail("select");
  }
  spx_cli_progress_done();
  printf("{\"matrix\": ");
  spx_cli_json_str(stdout, name);
  spx_cli_json_printf(stdout, ", \"nnz\": %lld, \"calls\": %lld, \"device\": ", (long long)a->nnz, (long long)calls);
  spx_cli_json_str(stdout, dev->name);
  printf(", \"candidates\": [");
  for (k = 0; k < n; k++) {
    if (c[k].fits && c[k].score_us > 0 && (low < 0 || c[k].score_us < c[low].score_us)) low = k;
    spx_cli_json_printf(stdout, "%s{\"format\": \"%s\", \"fits\": %d, \"predicted_us\": %.6g, \"stream_us\": %.6g, "
                        "\"chain_us\": %.6g, \"convert_ms\": %.6g, \"score_us\": %.6g, \"note\": ", k ? ", " : "",
                        sel_cand_name(&c[k]), c[k].fits, c[k].predicted_us, c[k].stream_us, c[k].chain_us,
                        c[k].convert_ms, c[k].score_us);
    spx_cli_json_str(stdout, c[k].note);
    printf("}");
  }
  printf("], \"lowest\": ");
  spx_cli_json_str(stdout, low >= 0 ? sel_cand_name(&c[low]) : NULL);
  printf("}\n");
  spx_csr_destroy(a);
  return 0;
}

/* cuSPARSE CSR alone: setup wall time and median us per SpMV. */
/* Setups (plan creation, wall) are timed SEL_SETUP_REPS times on both sides and the median kept:
 * one sample moved end-to-end ratios by +-0.2 on the H100 host (uploads from pageable memory). */
#define SEL_SETUP_REPS 3
/* The steady-state plans of every strategy, the oracle's (the trial's) among them, are timed again
 * in turns, this many rounds, and compared by their medians: the trial's table keeps the least of
 * many noisy samples (biased low), against which an equally fast choice timed once reads several
 * per cent slower on latency-bound matrices. */
#define SEL_RETIME_ROUNDS 5
/* model and auto, whose plans depend on the iteration count: SEL_PAIR_REPS setups each, every one
 * right after a cuSPARSE setup, both sides' medians. The H100 host's uploads from pageable memory
 * have slow spells: at d482977, bayer10's model and auto made the same plan and their medians of
 * three read 71.9 and 84.1 ms against one cuSPARSE median taken earlier (0.96x and 0.82x). */
#define SEL_PAIR_REPS 5

/* One cuSPARSE CSR plan creation, wall ms; the plan goes to *keep, or is destroyed outside the
 * timed window when keep is NULL. */
static spx_status sel_cusparse_setup(spx_context *ctx, const spx_csr *a, double *ms, spx_cusparse_plan **keep) {
  spx_cusparse_plan *cp = NULL;
  double t0 = spx_cli_now();
  spx_status s = spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &cp);
  if (!s) s = spx_context_synchronize(ctx);
  *ms = 1e3 * (spx_cli_now() - t0);
  if (keep) *keep = cp;
  else spx_cusparse_plan_destroy(cp);
  return s;
}

/* cuSPARSE's end to end for row r, strategy st, iteration count it: paired where measured. */
static double sel_cs_e2e(const sel_row *r, int st, int it) {
  return r->cs_pair_e2e_ms[st][it] > 0 ? r->cs_pair_e2e_ms[st][it] : r->cs_e2e_ms[it];
}

static spx_status sel_cusparse(spx_context *ctx, const spx_csr *a, double *setup_ms, double *us) {
  spx_cusparse_plan *cp = NULL;
  spx_timer *t = NULL;
  spx_devptr x = 0, y = 0;
  double ms, best = -1, setups[SEL_SETUP_REPS];
  int k, i;
  spx_status s = SPX_OK;
  for (k = 0; k < SEL_SETUP_REPS; k++) {
    spx_cusparse_plan_destroy(cp); /* the previous sample's, outside the timed window */
    cp = NULL;
    if ((s = sel_cusparse_setup(ctx, a, &setups[k], &cp))) goto done;
  }
  *setup_ms = spx_cli_median(setups, SEL_SETUP_REPS);
  if ((s = spx_device_alloc(ctx, (size_t)(a->ncols + 1) * 8, &x)) || (s = spx_device_alloc(ctx, (size_t)(a->nrows + 1) * 8, &y)) ||
      (s = spx_device_memset(ctx, x, 0x3f, (size_t)a->ncols * 8)) || (s = spx_timer_create(ctx, &t)))
    goto done;
  for (k = 0; k < 3; k++) if ((s = spx_cusparse_spmv(cp, 1.0, x, 0.0, y))) goto done;
  for (k = 0; k < 9; k++) { /* best of 9 samples of 20 */
    if ((s = spx_timer_start(t))) goto done;
    for (i = 0; i < 20; i++) if ((s = spx_cusparse_spmv(cp, 1.0, x, 0.0, y))) goto done;
    if ((s = spx_timer_stop(t, &ms))) goto done;
    if (best < 0 || ms < best) best = ms;
  }
  *us = 1e3 * best / 20;
done:
  spx_timer_destroy(t);
  spx_device_free(ctx, x);
  spx_device_free(ctx, y);
  spx_cusparse_plan_destroy(cp);
  return s;
}

/* BiCGSTAB for `iters` iterations on a plan made for them (force NULL: auto; "cusparse"), setup
 * included: wall ms from spx_plan_create to the solve's return, and the iterations done. */
static spx_status sel_bicgstab(spx_context *ctx, const spx_csr *a, const double *b, const char *force, int iters,
                               double *ms, int64_t *done) {
  spx_plan_options po;
  spx_solve_options so;
  spx_solve_report rep;
  spx_plan *p = NULL;
  double *x = (double *)calloc((size_t)a->ncols + 1, sizeof *x), t0;
  spx_status s;
  if (!x) return SPX_OUT_OF_MEMORY;
  spx_plan_options_default(&po);
  po.force = force;
  po.expected_calls = 2 * (int64_t)iters + 2;
  po.eager = 1;
  po.no_diagonal = 1;
  spx_solve_options_default(&so);
  so.rtol = 1e-300; /* no tolerance (its square is 0): the paper's fixed iteration counts */
  so.maxit = iters;
  so.host_vectors = 1;
  memset(&rep, 0, sizeof rep);
  t0 = spx_cli_now();
  s = spx_plan_create(ctx, a, &po, &p);
  if (!s) s = spx_solve_bicgstab(p, b, x, &so, &rep);
  *ms = 1e3 * (spx_cli_now() - t0);
  *done = rep.iterations;
  if (s == SPX_NOT_CONVERGED || s == SPX_BREAKDOWN) {
    s = SPX_OK;
    spx_clear_error();
  }
  spx_plan_destroy(p);
  free(x);
  return s;
}

/* The BiCGSTAB protocol for row r: each side twice, alternating, the faster kept. */
static spx_status sel_bicgstab_row(spx_context *ctx, const spx_csr *a, sel_row *r) {
  double *b = (double *)malloc(sizeof(double) * (size_t)(a->nrows + 1));
  int it, rep, side;
  spx_status s = SPX_OK;
  int64_t i;
  if (!b) return SPX_OUT_OF_MEMORY;
  for (i = 0; i < a->nrows; i++) {
    int64_t k;
    double v = 0;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) v += a->val.d[k];
    b[i] = v;
  }
  for (it = 0; it < 2 && !s; it++)
    for (rep = 0; rep < 2 && !s; rep++)
      for (side = 1; side >= 0 && !s; side--) {
        double ms;
        int64_t done;
        if ((s = sel_bicgstab(ctx, a, b, side ? "cusparse" : NULL, sel_iters[it], &ms, &done))) break;
        if (rep == 0 || ms < r->bicg_ms[side][it]) { r->bicg_ms[side][it] = ms; r->bicg_it[side][it] = done; }
      }
  free(b);
  return s;
}

/* calls SpMVs on p (or on cp when p is NULL) into y, then a synchronize. */
static spx_status sel_spmvs(spx_context *ctx, spx_plan *p, spx_cusparse_plan *cp, int64_t calls, spx_devptr x,
                            spx_devptr y) {
  int64_t k;
  spx_status s = SPX_OK;
  for (k = 0; k < calls && !s; k++)
    s = p ? spx_plan_spmv(p, 1.0, (const void *)(uintptr_t)x, 0.0, (void *)(uintptr_t)y)
          : spx_cusparse_spmv(cp, 1.0, x, 0.0, y);
  return s ? s : spx_context_synchronize(ctx);
}

/* The eval's plan options: strategy st for calls SpMVs, built in spx_plan_create (eager), without
 * the diagonal (BiCGSTAB without a preconditioner reads none). */
static void sel_options(spx_plan_options *o, spx_plan_strategy st, int64_t calls) {
  spx_plan_options_default(o);
  o->strategy = st;
  o->expected_calls = calls;
  o->eager = 1;
  o->no_diagonal = 1;
}

/* One timed run of sel_real_row: plan creation (cuSPARSE CSR for side 0, auto for 1 and 2) and
 * 2 x iterations SpMVs into real_ms / real_setup_ms (the faster run kept); afterwards, untimed,
 * the plan's background compile is waited for, so every run starts from the caches it expects. */
static spx_status sel_real_run(spx_context *ctx, const spx_csr *a, sel_row *r, int it, int rep, int side, spx_devptr x,
                               spx_devptr y) {
  const int64_t calls = 2 * (int64_t)sel_iters[it];
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_cusparse_plan *cp = NULL;
  double t0, ms, setup;
  spx_status s;
  sel_options(&o, SPX_PLAN_AUTO, calls);
  t0 = spx_cli_now();
  if (side == 0 || side == 3) s = spx_cusparse_plan_create(ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &cp);
  else s = spx_plan_create(ctx, a, &o, &p);
  setup = 1e3 * (spx_cli_now() - t0);
  if (!s && side == 2 && rep == 0) r->cold_standin[it] = spx_plan_compiling(p);
  if (!s) s = sel_spmvs(ctx, p, cp, calls, x, y);
  ms = 1e3 * (spx_cli_now() - t0);
  if (!s) r->real_rep_ms[side][it][rep] = ms;
  if (!s && (rep == 0 || ms < r->real_ms[side][it])) {
    r->real_ms[side][it] = ms;
    r->real_setup_ms[side][it] = setup;
    if (p) {
      snprintf(r->real_plan[side][it], sizeof r->real_plan[side][it], "%s", sel_cname(p));
      snprintf(r->real_reason[side][it], sizeof r->real_reason[side][it], "%s", spx_plan_reason(p));
    }
  }
  if (!s && p) s = spx_plan_wait(p);
  spx_plan_destroy(p);
  spx_cusparse_plan_destroy(cp);
  return s;
}

/* Removes from the JIT caches the kernels (specialized and generic) auto's plan for 2 x iterations
 * calls binds with the caches as they are: a plan made for that, untimed. */
static spx_status sel_forget_auto(spx_context *ctx, const spx_csr *a, int it) {
  spx_plan_options o;
  spx_plan *p = NULL;
  spx_status s;
  sel_options(&o, SPX_PLAN_AUTO, 2 * (int64_t)sel_iters[it]);
  if (!(s = spx_plan_create(ctx, a, &o, &p)) && !(s = spx_plan_wait(p)) && spx_plan_dmatrix(p))
    s = spx_dmatrix_forget_kernels(spx_plan_dmatrix(p), SPX_KERNELS_SPECIALIZED | SPX_KERNELS_GENERIC);
  spx_plan_destroy(p);
  return s;
}

/* cuSPARSE's time over auto's (side 1: warm, against the warm phase's cuSPARSE; 2: cold, against
 * cuSPARSE after a removal): of the fastest runs, or (paired) the median over the turns of each
 * turn's pair; 0 where a side did not run. */
static double sel_real_ratio(const sel_row *r, int side, int it, int paired) {
  const int base = side == 2 ? 3 : 0;
  double q[SEL_REAL_REPS];
  int k, n = 0;
  if (!paired) return r->real_ms[base][it] > 0 && r->real_ms[side][it] > 0 ? r->real_ms[base][it] / r->real_ms[side][it] : 0;
  for (k = 0; k < SEL_REAL_REPS; k++)
    if (r->real_rep_ms[base][it][k] > 0 && r->real_rep_ms[side][it][k] > 0)
      q[n++] = r->real_rep_ms[base][it][k] / r->real_rep_ms[side][it][k];
  return n ? spx_cli_median(q, n) : 0;
}

/* --cold: end to end for real, plan creation through the last of 2 x iterations SpMVs: cuSPARSE
 * CSR, auto with warm JIT caches, and auto on a shape the machine has not run (its kernels,
 * specialized and generic, removed from the memory and disk caches first: what the tiered JIT
 * hides). The fastest of SEL_REAL_REPS runs each. Every warm run comes before the first removal: a cold plan
 * that starts on cuSPARSE and compiles nothing must not leave the next warm run cold. */
static spx_status sel_real_row(spx_context *ctx, const spx_csr *a, sel_row *r) {
  const size_t vb = SPX_DTYPE_SIZE(a->dtype);
  spx_devptr x = 0, y = 0;
  spx_status s;
  int it, rep, side;
  if ((s = spx_device_alloc(ctx, (size_t)a->ncols * vb + vb, &x)) || (s = spx_device_alloc(ctx, (size_t)a->nrows * vb + vb, &y)) ||
      (s = spx_device_memset(ctx, x, 0x3f, (size_t)a->ncols * vb)))
    goto done;
  for (it = 0; it < 2 && !s; it++)
    for (rep = 0; rep < SEL_REAL_REPS && !s; rep++)
      for (side = 0; side < 2 && !s; side++) s = sel_real_run(ctx, a, r, it, rep, side, x, y);
  for (it = 0; it < 2 && !s; it++)
    for (rep = 0; rep < SEL_REAL_REPS && !s; rep++)
      for (side = 3; side >= 2 && !s; side--)
        if (!(s = sel_forget_auto(ctx, a, it))) s = sel_real_run(ctx, a, r, it, rep, side, x, y);
done:
  spx_device_free(ctx, x);
  spx_device_free(ctx, y);
  return s;
}

/* --cold: what a caller waits for before its first SpMV beyond cuSPARSE's own setup (auto's plan
 * creation less cuSPARSE's, of the kept runs: warm against the warm phase's cuSPARSE, cold against
 * the cold one's), the target: under 50 us below 1M nonzeros, under one SpMV (the oracle's)
 * from 1M. */
static void sel_exposed_summary(const sel_row *rows, int nr) {
  double *q = (double *)malloc((size_t)(nr > 0 ? nr : 1) * sizeof *q);
  int side, it, big;
  if (!q) return;
  printf("exposed selection cost (auto's plan creation less cuSPARSE's, the kept runs):");
  for (side = 1; side <= 2; side++)
    for (it = 0; it < 2; it++)
      for (big = 0; big < 2; big++) {
        const int base = side == 2 ? 3 : 0;
        int i, n = 0, over = 0;
        for (i = 0; i < nr; i++) {
          const sel_row *r = &rows[i];
          double e;
          if ((r->nnz >= 1000000) != big || !(r->real_setup_ms[side][it] > 0) || !(r->real_setup_ms[base][it] > 0))
            continue;
          e = r->real_setup_ms[side][it] - r->real_setup_ms[base][it]; /* ms */
          q[n] = big ? 1e3 * e / r->oracle_us : 1e3 * e;              /* SpMVs, or us */
          over += q[n] > (big ? 1.0 : 50.0);
          n++;
        }
        if (!n) continue;
        spx_cli_sort(q, n);
        printf("\n  %s JIT @%d, %s: median %.3g, 90th pct %.3g, max %.3g %s; %d of %d over %s",
               side == 1 ? "warm" : "cold", sel_iters[it], big ? ">= 1M nonzeros" : "< 1M nonzeros", q[n / 2],
               q[(9 * (n - 1)) / 10], q[n - 1], big ? "SpMVs" : "us", over, n, big ? "one SpMV" : "50 us");
      }
  printf("\n");
  free(q);
}

/* One matrix of the eval. The oracle is a full trial (every candidate converted and timed); its
 * plan is also the trial strategy's (a trial does not depend on expected_calls), timed again like
 * every other plan. kubota and mps do not depend on expected_calls either: one plan serves both
 * iteration counts. model and auto are planned once per count. */
/* The SEL_RETIME_ROUNDS rounds over the kept plans: r->us[st] their medians, the oracle's time the
 * trial plan's. */
static spx_status sel_retime(spx_plan *const *kept, sel_row *r) {
  double t[SPX_PLAN_STRATEGY_COUNT][SEL_RETIME_ROUNDS];
  spx_status s = SPX_OK;
  int st, k;
  for (k = 0; k < SEL_RETIME_ROUNDS && !s; k++)
    for (st = 0; st < SPX_PLAN_STRATEGY_COUNT && !s; st++)
      if (kept[st]) s = spx_plan_time(kept[st], 20, &t[st][k]);
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT && !s; st++)
    if (kept[st]) r->us[st] = spx_cli_median(t[st], SEL_RETIME_ROUNDS);
  if (!s) r->oracle_us = r->us[SPX_PLAN_TRIAL];
  return s;
}

static spx_status sel_eval_matrix(spx_context *ctx, const char *spec, sel_row *r) {
  spx_csr *a = NULL;
  spx_plan_options o;
  spx_plan *p = NULL, *kept[SPX_PLAN_STRATEGY_COUNT] = {NULL};
  const spx_plan_candidate *c;
  double cs_setup = 0, cs_us = 0, table_us = 0;
  int n, k, st, it;
  spx_status s;
  memset(r, 0, sizeof *r);
  if ((s = spx_cli_load_matrix(spec, &a, r->matrix, sizeof r->matrix))) return s;
  r->nnz = a->nnz;
  r->nrows = a->nrows;
  for (k = 0, r->row_max = 0; k < a->nrows; k++) {
    const int64_t len = a->row_ptr[k + 1] - a->row_ptr[k];
    if (len > r->row_max) r->row_max = len;
  }
  if ((s = sel_cusparse(ctx, a, &cs_setup, &cs_us))) goto done;
  for (it = 0; it < 2; it++) r->cs_e2e_ms[it] = cs_setup + 2.0 * sel_iters[it] * cs_us * 1e-3;
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    int same = st == SPX_PLAN_TRIAL || st == SPX_PLAN_KUBOTA || st == SPX_PLAN_MPS;
    if (!sel_want[st]) continue;
    for (it = 0; it < 3; it++) { /* 100 and 500 iterations end to end, then the steady state */
      double setup, us, race_ms, setups[SEL_PAIR_REPS], sels[SEL_PAIR_REPS], cs_setups[SEL_PAIR_REPS];
      /* a trial plan takes seconds: one sample; the steady state (it 2) times no setup but gives
       * the selection cost, a fraction of a millisecond that one host hiccup can multiply (one
       * sample read 3.7 ms where its neighbours read 0.3): the median of three as well */
      int rep, pair = !same && it < 2, nrep = st == SPX_PLAN_TRIAL ? 1 : pair ? SEL_PAIR_REPS : SEL_SETUP_REPS;
      if (it >= 1 && same) {
        if (it == 1)
          r->e2e_ms[st][1] = r->e2e_ms[st][0] - 2.0 * sel_iters[0] * r->us[st] * 1e-3 + 2.0 * sel_iters[1] * r->us[st] * 1e-3;
        continue;
      }
      sel_options(&o, (spx_plan_strategy)st, it < 2 ? 2 * sel_iters[it] : 1000000);
      for (rep = 0; rep < nrep; rep++) {
        double t0;
        spx_plan_destroy(p); /* the previous sample's, outside the timed window */
        p = NULL;
        if (pair && (s = sel_cusparse_setup(ctx, a, &cs_setups[rep], NULL))) goto done;
        t0 = spx_cli_now();
        if ((s = spx_plan_create(ctx, a, &o, &p)) || (s = spx_context_synchronize(ctx))) goto done;
        setups[rep] = 1e3 * (spx_cli_now() - t0);
        sels[rep] = spx_plan_select_ms(p);
      }
      setup = spx_cli_median(setups, nrep);
      if (pair) r->cs_pair_e2e_ms[st][it] = spx_cli_median(cs_setups, nrep) + 2.0 * sel_iters[it] * cs_us * 1e-3;
      if ((s = spx_plan_time(p, 20, &us))) goto done;
      /* auto's race ended in spx_plan_time (spx_plan_wait), timing what was left at once: its
       * builds and timings count as setup and selection, as a trial's did in spx_plan_create (more
       * than a race over real SpMVs costs; --cold's end to end runs the SpMVs for real) */
      race_ms = spx_plan_select_ms(p) - sels[nrep - 1];
      setup += race_ms;
      if (it < 2) r->e2e_ms[st][it] = setup + 2.0 * sel_iters[it] * us * 1e-3;
      if (it == 0) snprintf(r->choice100[st], sizeof r->choice100[st], "%s", sel_cname(p));
      if (it == 2 || same) {
        r->us[st] = us;
        r->select_ms[st] = spx_cli_median(sels, nrep) + race_ms;
        snprintf(r->choice[st], sizeof r->choice[st], "%s", sel_cname(p));
      }
      if (st == SPX_PLAN_TRIAL) { /* the oracle: the fastest of every candidate measured */
        c = spx_plan_candidates(p, &n);
        r->oracle_us = -1;
        for (k = 0; k < n; k++) {
          if (c[k].measured_us <= 0) continue;
          if (r->oracle_us < 0 || c[k].measured_us < r->oracle_us) {
            r->oracle_us = c[k].measured_us;
            snprintf(r->oracle, sizeof r->oracle, "%s", sel_cand_name(&c[k]));
          }
          if (r->ncand <= SPX_FORMAT_MAX) {
            snprintf(r->cand[r->ncand], sizeof r->cand[0], "%s", sel_cand_name(&c[k]));
            r->cand_pred_us[r->ncand] = c[k].predicted_us;
            r->cand_stream_us[r->ncand] = c[k].stream_us;
            r->cand_chain_us[r->ncand] = c[k].chain_us;
            r->cand_conv_ms[r->ncand] = c[k].convert_ms;
            r->cand_meas_us[r->ncand++] = c[k].measured_us;
          }
        }
      }
      if (it == 2 || same) {
        kept[st] = p; /* for sel_retime */
        p = NULL;
      }
      spx_plan_destroy(p);
      p = NULL;
    }
  }
  table_us = r->oracle_us; /* the least in the trial's table, for choice_slowdown */
  if ((s = sel_retime(kept, r))) goto done;
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    spx_plan_destroy(kept[st]);
    kept[st] = NULL;
  }
  /* the solvers need a square matrix: the others keep their SpMV rows without the solve */
  if (sel_solve && a->dtype == SPX_DOUBLE && a->nrows == a->ncols && (s = sel_bicgstab_row(ctx, a, r))) goto done;
  if (sel_cold && (s = sel_real_row(ctx, a, r))) goto done;
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    r->slowdown[st] = sel_want[st] ? r->us[st] / r->oracle_us : 0;
    for (k = 0; k < r->ncand && sel_want[st]; k++)
      if (!strcmp(r->cand[k], r->choice[st]) && r->cand_meas_us[k] > 0) r->choice_slowdown[st] = r->cand_meas_us[k] / table_us;
  }
done:
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) spx_plan_destroy(kept[st]);
  spx_plan_destroy(p);
  spx_csr_destroy(a);
  return s;
}

/* The model's error over the timed candidates of rows with nnz >= min_nnz: |predicted/measured - 1|
 * quantiles and the share within 20 %; also for the candidate each row's model strategy chose. */
static void sel_model_error(const sel_row *rows, int nr, int64_t min_nnz, const char *label, FILE *f, int json) {
  double *e = (double *)malloc(sizeof(double) * (size_t)(nr * (SPX_FORMAT_MAX + 1) + 1)), *ec = (double *)malloc(sizeof(double) * (size_t)(nr + 1));
  int i, k, n = 0, nc = 0, in = 0, inc = 0;
  if (!e || !ec) { free(e); free(ec); return; }
  for (i = 0; i < nr; i++) {
    if (rows[i].nnz < min_nnz) continue;
    for (k = 0; k < rows[i].ncand; k++) {
      double v;
      if (rows[i].cand_pred_us[k] <= 0 || rows[i].cand_meas_us[k] <= 0) continue;
      v = fabs(rows[i].cand_pred_us[k] / rows[i].cand_meas_us[k] - 1);
      e[n++] = v;
      in += v <= 0.2;
      if (!strcmp(rows[i].cand[k], rows[i].choice[sel_want[SPX_PLAN_MODEL] ? SPX_PLAN_MODEL : SPX_PLAN_AUTO])) { ec[nc++] = v; inc += v <= 0.2; }
    }
  }
  spx_cli_sort(e, n);
  spx_cli_sort(ec, nc);
#define SEL_Q(a, m, q) ((m) ? (a)[(int)((q) * ((m) - 1) + 0.5)] : 0.0)
  if (json)
    spx_cli_json_printf(f, "\"%s\": {\"candidates\": %d, \"within_20pct\": %d, \"median\": %.4g, \"p90\": %.4g, \"max\": %.4g, "
               "\"chosen\": %d, \"chosen_within_20pct\": %d, \"chosen_median\": %.4g, \"chosen_max\": %.4g}",
                        label, n, in, SEL_Q(e, n, 0.5), SEL_Q(e, n, 0.9), n ? e[n - 1] : 0, nc, inc, SEL_Q(ec, nc, 0.5), nc ? ec[nc - 1] : 0);
  else
    fprintf(f, "model error |predicted/measured - 1| (%s): all %d timed candidates: %.0f%% within 20%%, median %.1f%%, "
               "90th pct %.1f%%, max %.1f%%; the model's choices (%d): %.0f%% within 20%%, median %.1f%%, max %.1f%%\n",
            label, n, n ? 100.0 * in / n : 0, 100 * SEL_Q(e, n, 0.5), 100 * SEL_Q(e, n, 0.9), n ? 100 * e[n - 1] : 0, nc,
            nc ? 100.0 * inc / nc : 0, 100 * SEL_Q(ec, nc, 0.5), nc ? 100 * ec[nc - 1] : 0);
#undef SEL_Q
  free(e);
  free(ec);
}

/* The --json-file dataset (rewritten whole after every matrix, so that a run cut short keeps what
 * it measured). */
static void sel_json(FILE *f, const sel_row *rows, int nr) {
  int i, st;
  fprintf(f, "{\"model_error\": {");
  sel_model_error(rows, nr, 0, "all", f, 1);
  fprintf(f, ", ");
  sel_model_error(rows, nr, 1000000, "nnz_ge_1M", f, 1);
  fprintf(f, "},\n\"rows\": [");
  for (i = 0; i < nr; i++) {
    const sel_row *r = &rows[i];
    int k;
    fprintf(f, "%s\n {\"matrix\": ", i ? "," : "");
    spx_cli_json_str(f, r->matrix);
    fprintf(f, ", \"nnz\": %lld, \"rows\": %lld, \"row_max\": %lld, \"oracle\": ", (long long)r->nnz,
            (long long)r->nrows, (long long)r->row_max);
    spx_cli_json_str(f, r->oracle);
    spx_cli_json_printf(f, ", \"oracle_us\": %.6g, \"cusparse_e2e_ms\": [%.6g, %.6g], \"strategies\": {", r->oracle_us,
                        r->cs_e2e_ms[0], r->cs_e2e_ms[1]);
    for (st = 0, k = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
      if (!sel_want[st]) continue;
      spx_cli_json_printf(f, "%s\"%s\": {\"choice_at_100\": \"%s\", \"choice\": \"%s\", \"us\": %.6g, \"slowdown\": %.6g, \"choice_slowdown\": %.6g, \"select_ms\": %.6g, \"e2e_ms\": [%.6g, %.6g], \"cusparse_e2e_ms\": [%.6g, %.6g]}",
                          k++ ? ", " : "", spx_plan_strategy_name((spx_plan_strategy)st), r->choice100[st], r->choice[st], r->us[st],
                          r->slowdown[st], r->choice_slowdown[st], r->select_ms[st], r->e2e_ms[st][0], r->e2e_ms[st][1], sel_cs_e2e(r, st, 0), sel_cs_e2e(r, st, 1));
    }
    spx_cli_json_printf(f, "}, \"bicgstab\": {\"iterations\": [%d, %d], \"auto_ms\": [%.6g, %.6g], \"cusparse_ms\": [%.6g, %.6g], "
               "\"auto_done\": [%lld, %lld], \"cusparse_done\": [%lld, %lld]}",
                        sel_iters[0], sel_iters[1], r->bicg_ms[0][0], r->bicg_ms[0][1], r->bicg_ms[1][0], r->bicg_ms[1][1],
                        (long long)r->bicg_it[0][0], (long long)r->bicg_it[0][1], (long long)r->bicg_it[1][0], (long long)r->bicg_it[1][1]);
    if (sel_cold)
      spx_cli_json_printf(f, ", \"real_e2e_ms\": {\"calls\": [%d, %d], \"cusparse\": [%.6g, %.6g], \"auto_warm\": [%.6g, %.6g], "
                 "\"auto_cold\": [%.6g, %.6g], \"cusparse_cold\": [%.6g, %.6g], \"cold_started_on_standin\": [%d, %d], "
                 "\"setup\": {\"cusparse\": [%.6g, %.6g], \"auto_warm\": [%.6g, %.6g], \"auto_cold\": [%.6g, %.6g], "
                 "\"cusparse_cold\": [%.6g, %.6g]}}",
                          2 * sel_iters[0], 2 * sel_iters[1], r->real_ms[0][0], r->real_ms[0][1], r->real_ms[1][0], r->real_ms[1][1],
                          r->real_ms[2][0], r->real_ms[2][1], r->real_ms[3][0], r->real_ms[3][1], r->cold_standin[0],
                          r->cold_standin[1], r->real_setup_ms[0][0], r->real_setup_ms[0][1], r->real_setup_ms[1][0],
                          r->real_setup_ms[1][1], r->real_setup_ms[2][0], r->real_setup_ms[2][1], r->real_setup_ms[3][0],
                          r->real_setup_ms[3][1]);
    if (sel_cold)
      spx_cli_json_printf(f, ", \"paired_ratio\": {\"warm\": [%.6g, %.6g], \"cold\": [%.6g, %.6g]}", sel_real_ratio(r, 1, 0, 1),
                          sel_real_ratio(r, 1, 1, 1), sel_real_ratio(r, 2, 0, 1), sel_real_ratio(r, 2, 1, 1));
    if (sel_cold) {
      int side, it;
      fprintf(f, ", \"real_plans\": {");
      for (side = 1; side < 3; side++)
        for (it = 0; it < 2; it++) {
          fprintf(f, "%s\"%s@%d\": [", side + it > 1 ? ", " : "", side == 1 ? "auto_warm" : "auto_cold", 2 * sel_iters[it]);
          spx_cli_json_str(f, r->real_plan[side][it]);
          fprintf(f, ", ");
          spx_cli_json_str(f, r->real_reason[side][it]);
          fprintf(f, "]");
        }
      fprintf(f, "}");
    }
    fprintf(f, ", \"candidates\": [");
    for (k = 0; k < r->ncand; k++)
      spx_cli_json_printf(f, "%s{\"format\": \"%s\", \"predicted_us\": %.6g, \"measured_us\": %.6g, \"stream_us\": %.6g, "
                          "\"chain_us\": %.6g, \"convert_ms\": %.6g}", k ? ", " : "", r->cand[k], r->cand_pred_us[k],
                          r->cand_meas_us[k], r->cand_stream_us[k], r->cand_chain_us[k], r->cand_conv_ms[k]);
    fprintf(f, "]}");
  }
  fprintf(f, "\n]}\n");
}

static void sel_svg(FILE *f, const sel_row *rows, int nr) {
  int i, st, W = 60 + 40 * nr * 1, H = 320;
  double ymax = 2.0;
  static const char *col[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"};
  if (W < 400) W = 400;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-size=\"10\">\n", W, H + 120);
  fprintf(f, "<text x=\"10\" y=\"14\">slowdown vs oracle per strategy (1.0 = oracle; clipped at %.1f)</text>\n", ymax);
  fprintf(f, "<line x1=\"50\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"gray\" stroke-dasharray=\"4\"/>\n",
          H - (int)(H * 1.05 / ymax) + 20, W, H - (int)(H * 1.05 / ymax) + 20);
  for (i = 0; i < nr; i++) {
    for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
      double v = rows[i].slowdown[st] > ymax ? ymax : rows[i].slowdown[st];
      int h = (int)(H * v / ymax), x = 55 + 40 * i + 7 * st;
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"6\" height=\"%d\" fill=\"%s\"/>\n", x, H - h + 20, h, col[st % 5]);
    }
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(60)\">%s</text>\n", 60 + 40 * i, H + 26, rows[i].matrix);
  }
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++)
    fprintf(f, "<text x=\"%d\" y=\"30\" fill=\"%s\">%s</text>\n", 60 + 60 * st, col[st % 5],
            spx_plan_strategy_name((spx_plan_strategy)st));
  fprintf(f, "</svg>\n");
}

/* file written whole by write, or left as it was: 0, or 1 with the message printed. */
static int sel_write(const char *file, void (*write)(FILE *, const sel_row *, int), const sel_row *rows, int nr) {
  spx_file *f;
  if (spx_file_create(file, 0, &f)) return spx_cli_fail("select --eval");
  write(spx_file_stream(f), rows, nr);
  return spx_cli_out_commit("select --eval", f);
}

static int sel_eval(int nfiles, char **files, const char *json, const char *svg) {
  spx_context *ctx = NULL;
  spx_context_options co = {SPX_BACKEND_CUDA, 0};
  sel_row *rows = (sel_row *)calloc((size_t)nfiles + 1, sizeof *rows);
  int i, st, nr = 0, bad_file = 0;
  if (!rows) { fprintf(stderr, "spx: select: out of memory\n"); return 1; }
  /* a file that cannot be written fails now, not after the measurements */
  if ((json && spx_cli_out_check("select --eval", json)) || (svg && spx_cli_out_check("select --eval", svg))) {
    free(rows);
    return 1;
  }
  if (spx_device_count() < 1 || spx_context_create(&co, &ctx)) {
    fprintf(stderr, "spx: select --eval needs a GPU (it times every format and cuSPARSE): %s\n",
            spx_last_error()[0] ? spx_last_error() : "no CUDA device");
    free(rows);
    return 1;
  }
  printf("%-24s %-13s %9s", "matrix", "oracle", "us");
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++)
    if (sel_want[st]) printf("  %-13s %6s", spx_plan_strategy_name((spx_plan_strategy)st), "slow");
  printf("  %s\n", "auto e2e vs cusparse @100/@500 (SpMV proxy; then BiCGSTAB)");
  for (i = 0; i < nfiles; i++) {
    sel_row *r = &rows[nr];
    spx_cli_progress("%s", files[i]);
    if (sel_eval_matrix(ctx, files[i], r)) {
      spx_cli_progress_done();
      fprintf(stderr, "spx: select: %s: %s (skipped)\n", files[i], spx_last_error());
      continue;
    }
    spx_cli_progress_done();
    printf("%-24.24s %-13s %9.2f", r->matrix, r->oracle, r->oracle_us);
    for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++)
      if (sel_want[st]) printf("  %-13s %5.2fx", r->choice[st], r->slowdown[st]);
    printf("  %.2fx %.2fx", sel_cs_e2e(r, SPX_PLAN_AUTO, 0) / r->e2e_ms[SPX_PLAN_AUTO][0],
           sel_cs_e2e(r, SPX_PLAN_AUTO, 1) / r->e2e_ms[SPX_PLAN_AUTO][1]);
    for (st = 0; st < 2; st++) /* "-": not run (not square), or a side ended early */
      if (r->bicg_ms[0][st] > 0 && r->bicg_it[0][st] == sel_iters[st] && r->bicg_it[1][st] == sel_iters[st])
        printf("%s%.2fx", st ? " " : "  bicgstab ", r->bicg_ms[1][st] / r->bicg_ms[0][st]);
      else
        printf("%s-", st ? " " : "  bicgstab ");
    printf("\n");
    fflush(stdout);
    nr++;
    if (json) bad_file |= sel_write(json, sel_json, rows, nr);
  }
  printf("\nsummary over %d matrices: strategy, within 5%% of oracle, geomean slowdown, worst (the choices and the oracle re-timed in turns, medians of %d rounds); "
         "the same from the oracle's table (the choice's own time there); min speedup vs cuSPARSE end to end @100, @500\n", nr, SEL_RETIME_ROUNDS);
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    int within = 0, twithin = 0, tn = 0;
    double lg = 0, worst = 0, e100 = 1e30, e500 = 1e30, tlg = 0, tworst = 0;
    if (!sel_want[st]) continue;
    for (i = 0; i < nr; i++) {
      within += rows[i].slowdown[st] <= 1.05;
      lg += log(rows[i].slowdown[st]);
      if (rows[i].slowdown[st] > worst) worst = rows[i].slowdown[st];
      if (rows[i].choice_slowdown[st] > 0) {
        double t = rows[i].choice_slowdown[st];
        tn++;
        twithin += t <= 1.05;
        tlg += log(t);
        if (t > tworst) tworst = t;
      }
      double q100 = sel_cs_e2e(&rows[i], st, 0) / rows[i].e2e_ms[st][0], q500 = sel_cs_e2e(&rows[i], st, 1) / rows[i].e2e_ms[st][1];
      if (q100 < e100) e100 = q100;
      if (q500 < e500) e500 = q500;
    }
    printf("  %-7s %5.1f%%  %.3fx  %.3fx;  %5.1f%%  %.3fx  %.3fx (%d);  %.3fx  %.3fx\n", spx_plan_strategy_name((spx_plan_strategy)st),
           nr ? 100.0 * within / nr : 0, nr ? exp(lg / nr) : 0, worst, tn ? 100.0 * twithin / tn : 0, tn ? exp(tlg / tn) : 0,
           tworst, tn, nr ? e100 : 0, nr ? e500 : 0);
  }
  if (sel_solve && nr) { /* the BiCGSTAB runs: cuSPARSE's wall time / auto's, plan creation included */
    int it;
    printf("BiCGSTAB end to end (plan + solve, b = A 1, no tolerance), cuSPARSE CSR time / auto's:");
    for (it = 0; it < 2; it++) {
      double lg = 0, mn = 1e30;
      int m = 0;
      for (i = 0; i < nr; i++) {
        double q;
        /* both sides ran every iteration asked (without a tolerance a solve can still end early on
         * a breakdown, and the two sides' roundings differ: such a pair compares unequal work) */
        if (!(rows[i].bicg_ms[0][it] > 0) || !(rows[i].bicg_ms[1][it] > 0) || rows[i].bicg_it[0][it] != sel_iters[it] ||
            rows[i].bicg_it[1][it] != sel_iters[it])
          continue;
        q = rows[i].bicg_ms[1][it] / rows[i].bicg_ms[0][it];
        lg += log(q);
        if (q < mn) mn = q;
        m++;
      }
      printf("  @%d: geomean %.3fx, min %.3fx (%d matrices where both ran all %d iterations)", sel_iters[it],
             m ? exp(lg / m) : 0, m ? mn : 0, m, sel_iters[it]);
    }
    printf("\n");
  }
  if (sel_cold && nr) { /* real end to end: cuSPARSE's wall time / auto's, warm and cold JIT caches,
                         * each against cuSPARSE run in the same conditions; the fastest runs, then
                         * the turns' pairs */
    int it, side, paired;
    for (paired = 0; paired < 2; paired++) {
      if (!paired)
        printf("end to end for real (plan + SpMVs, synchronized), cuSPARSE CSR time / auto's (cold: both timed right "
               "after a removal of auto's kernels):");
      else
        printf("the same, each turn's pair (cuSPARSE's run over auto's run of the turn), the median of %d turns:",
               SEL_REAL_REPS);
      for (side = 1; side <= 2; side++)
        for (it = 0; it < 2; it++) {
          double lg = 0, mn = 1e30;
          int m = 0, standin = 0, below = 0;
          for (i = 0; i < nr; i++) {
            const double q = sel_real_ratio(&rows[i], side, it, paired);
            if (!(q > 0)) continue;
            lg += log(q);
            if (q < mn) mn = q;
            below += q < 0.95;
            standin += rows[i].cold_standin[it];
            m++;
          }
          printf("%s%s JIT @%d: geomean %.3fx, min %.3fx, %d of %d below 0.95x", it ? "; " : "\n  ",
                 side == 1 ? "warm" : "cold", sel_iters[it], m ? exp(lg / m) : 0, m ? mn : 0, below, m);
          if (side == 2 && !paired) printf(" (%d started on a stand-in)", standin);
        }
      printf("\n");
    }
    sel_exposed_summary(rows, nr);
  }
  /* The choice's own cost (model: analysis + model) and auto's (the same, plus a trial where it pays
   * at 10^6 calls), in SpMVs of the oracle's time, on the large matrices */
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) {
    double worst = 0, sum = 0;
    int big = 0, below = 0;
    if ((st != SPX_PLAN_MODEL && st != SPX_PLAN_AUTO) || !sel_want[st]) continue;
    for (i = 0; i < nr; i++) {
      double sel;
      if (rows[i].nnz < 1000000) continue;
      sel = 1e3 * rows[i].select_ms[st] / rows[i].oracle_us;
      big++;
      sum += sel;
      below += sel < 1;
      if (sel > worst) worst = sel;
    }
    if (big)
      printf("%s's selection cost (planned for 10^6 calls) on the %d matrices with >= 1M nonzeros: %d below one SpMV; "
             "mean %.2f, worst %.2f SpMVs\n", spx_plan_strategy_name((spx_plan_strategy)st), big, below, sum / big, worst);
  }
  sel_model_error(rows, nr, 0, "all matrices", stdout, 0);
  sel_model_error(rows, nr, 1000000, ">= 1M nonzeros", stdout, 0);
  if (svg) bad_file |= sel_write(svg, sel_svg, rows, nr);
  free(rows);
  spx_context_destroy(ctx);
  return nr == nfiles && !bad_file ? 0 : 1;
}

/* --strategies a,b: the eval's strategies besides auto and the trial (the oracle), which always run. */
static int sel_parse_strategies(const char *v) {
  int st;
  for (st = 0; st < SPX_PLAN_STRATEGY_COUNT; st++) sel_want[st] = st == SPX_PLAN_AUTO || st == SPX_PLAN_TRIAL;
  while (*v) {
    char tok[64];
    const char *e = strchr(v, ',');
    size_t l = e ? (size_t)(e - v) : strlen(v);
    spx_plan_strategy s;
    snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok ? l : sizeof tok - 1), v);
    if (spx_plan_strategy_parse(tok, &s)) return spx_cli_usage("select", "--strategies: %s", spx_last_error());
    sel_want[s] = 1;
    v += l + (e != NULL);
  }
  return 0;
}

/* --list: the specs of the sets asked for, a line each: half (fit, validation, -), name, spec. */
static void sel_list(const spx_cli_corpus_entry *v, int n) {
  int i;
  for (i = 0; i < n; i++)
    printf("%s\t%s\t%s\n", v[i].half == 0 ? "fit" : v[i].half == 1 ? "validation" : "-", v[i].name, v[i].spec);
}

/* `spx help select` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_select_help[] = {
    "select FILE...: the plan each strategy (auto, kubota, mps, trial, model) makes for each matrix, "
    "and why. select --eval: the selection paper's protocol on the GPU: per matrix the oracle "
    "(fastest measured format), each strategy's choice and slowdown against it, end-to-end times of "
    "100 and 500 BiCGSTAB iterations against cuSPARSE CSR, and a summary. select --list: the specs "
    "of the sets asked for, one line each (half, name, spec). FILE and MATRIX are Matrix Market files "
    "or generator specs (poisson7:N, rep:FILE:NNZ ...).",
    "--strategy S\tplans: only strategy S (default: every strategy)",
    "--calls N\tplans: SpMV calls the plan is made for (default 1000)",
    "--json\tplans: print JSON instead of text, one object per FILE on a line of its own (JSON Lines; "
    "default: text)",
    "--eval\tmeasure against the oracle (needs a GPU)",
    "--list\tprint the matrices of the --set sets instead of running anything",
    "--set S\tadd a corpus set: shared, replicated, generated or large (up to 4; default: none)",
    "--half H\twith --set: fit, validation or all (default all)",
    "--nnz N\tthe replicated set's nonzeros per matrix (default 20000000)",
    "--strategies a,b\t--eval: the strategies to run besides auto and trial, which always run "
    "(default: every strategy)",
    "--no-solve\t--eval: skip the real BiCGSTAB runs, keep the SpMV proxy (default: run them)",
    "--cold\t--eval: also plan creation + SpMVs with auto's kernels removed from the JIT caches first "
    "(default off)",
    "--json-file F\t--eval: write the rows as JSON to file F (default: none)",
    "--device-file F\tprint the model's candidates for each matrix (JSON lines) as on the device calibration "
    "file F describes, without that device (bench/model_replay.py sets them against an eval's times)",
    "--svg F\t--eval: write a slowdown plot to file F (default: none)",
    "$ spx select bcsstk16.mtx.gz --strategy model --calls 100",
    NULL};

int spx_cli_select(int argc, char **argv) {
  const char *json_file = NULL, *svg = NULL, *v, *sets[4], *device_file = NULL;
  spx_plan_device dev;
  int nsets = 0, half = -1, list = 0;
  int64_t rep_nnz = 20000000;
  char **files = (char **)calloc((size_t)argc + 1, sizeof *files);
  spx_cli_corpus_entry *corpus = NULL;
  int json = 0, eval = 0, has_strategy = 0, nf = 0, i, rc = 0, ncorpus = 0;
  int64_t calls = 1000;
  spx_plan_strategy only = SPX_PLAN_AUTO;
  if (!files) return 1;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--eval")) eval = 1;
    else if (!strcmp(argv[i], "--list")) list = 1;
    else if (!strcmp(argv[i], "--no-solve")) sel_solve = 0;
    else if (!strcmp(argv[i], "--cold")) sel_cold = 1;
    else if ((v = spx_cli_opt(argc, argv, &i, "--strategy"))) {
      if (spx_plan_strategy_parse(v, &only)) { free(files); return spx_cli_usage("select", "%s", spx_last_error()); }
      has_strategy = 1;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--strategies"))) {
      if (sel_parse_strategies(v)) { free(files); return 2; }
    } else if ((v = spx_cli_opt(argc, argv, &i, "--calls"))) {
      if (!spx_cli_int("select", "--calls", v, &calls)) { free(files); return 2; }
    } else if ((v = spx_cli_opt(argc, argv, &i, "--nnz"))) {
      if (!spx_cli_int("select", "--nnz", v, &rep_nnz)) { free(files); return 2; }
    } else if ((v = spx_cli_opt(argc, argv, &i, "--svg"))) svg = v;
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if ((v = spx_cli_opt(argc, argv, &i, "--set"))) {
      if (nsets == 4) { free(files); return spx_cli_usage("select", "at most 4 --set options"); }
      sets[nsets++] = v;
    } else if ((v = spx_cli_opt(argc, argv, &i, "--half"))) {
      if (!strcmp(v, "fit")) half = 0;
      else if (!strcmp(v, "validation")) half = 1;
      else if (!strcmp(v, "all")) half = -1;
      else { free(files); return spx_cli_usage("select", "--half fit|validation|all, not '%s'", v); }
    }
    else if ((v = spx_cli_opt(argc, argv, &i, "--json-file"))) json_file = v;
    else if ((v = spx_cli_opt(argc, argv, &i, "--device-file"))) device_file = v;
    else if (argv[i][0] == '-') { free(files); return spx_cli_usage("select", "unknown option '%s'", argv[i]); }
    else files[nf++] = argv[i];
  }
  if (!eval && (json_file || svg)) {
    free(files);
    return spx_cli_usage("select", "--json-file and --svg are for --eval; the plans print --json");
  }
  if (device_file && (eval || list || has_strategy || json)) {
    free(files);
    return spx_cli_usage("select", "--device-file prints the model's candidates as JSON lines: not with --eval, "
                         "--list, --strategy or --json");
  }
  if (device_file && spx_plan_device_load(device_file, &dev)) {
    free(files);
    return spx_cli_fail("select --device-file");
  }
  for (i = 0; i < nsets; i++) {
    spx_cli_corpus_entry *c = NULL, *w;
    int n = 0, k;
    if (spx_cli_corpus(sets[i], half, rep_nnz, &c, &n)) {
      spx_cli_corpus_free(corpus, ncorpus);
      free(files);
      return strstr(spx_last_error(), "unknown set") ? spx_cli_usage("select", "%s", spx_last_error()) : spx_cli_fail("select");
    }
    w = (spx_cli_corpus_entry *)realloc(corpus, sizeof *w * (size_t)(ncorpus + n + 1));
    if (!w) { spx_cli_corpus_free(c, n); rc = 1; break; }
    corpus = w;
    for (k = 0; k < n; k++) corpus[ncorpus++] = c[k];
    free(c); /* the entries moved into corpus */
  }
  if (!rc && list) sel_list(corpus, ncorpus);
  else if (!rc) {
    char **all = (char **)calloc((size_t)(nf + ncorpus) + 1, sizeof *all);
    if (!all) rc = 1;
    else {
      for (i = 0; i < nf; i++) all[i] = files[i];
      for (i = 0; i < ncorpus; i++) all[nf + i] = corpus[i].spec;
      if (!nf && !ncorpus) rc = spx_cli_usage("select", "FILE is missing");
      else if (eval) rc = sel_eval(nf + ncorpus, all, json_file, svg);
      else if (device_file)
        for (i = 0; i < nf + ncorpus && !rc; i++) rc = sel_model_line(all[i], &dev, calls);
      else {
        spx_context *ctx = NULL;
        if (spx_context_create(NULL, &ctx)) rc = spx_cli_fail("select");
        for (i = 0; i < nf + ncorpus && !rc; i++) rc = sel_one(ctx, all[i], has_strategy, only, json, calls);
        spx_context_destroy(ctx);
      }
      free(all);
    }
  }
  spx_cli_corpus_free(corpus, ncorpus);
  free(files);
  return rc;
}
