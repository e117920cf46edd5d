/* SPDX-License-Identifier: BSD-3-Clause */
/* The tuner's strategies (tuner.h: spx__plan_strategy): the papers' B/R rules (kubota, mps), the
 * model's choice, the trial (build and time candidates), auto (the model, then a race or trial of
 * the best two when it is cheap and could change the choice) and options.force. Each picks among a
 * plan's candidates and sets its reason. It calls the plan object (plan_object_impl.h: builds,
 * timings; plan_race_impl.h: the race) and the model's names and prices (plan_model_impl.h). */
#include "common.h"
#include "tuner.h"
#include "../plan.h"

/* ---- The papers' heuristics ------------------------------------------------------------------
 * papers/001 (Kubota), section 5, formula (2), R printed in %:
 *   ELL if B < 2.0 and R < 0.048 %;  cuSPARSE CSR if B > 8.0 or R >= 0.048 %;  else JDS.
 * papers/002 (MPS thesis), section 5.2.2, formula (5-1), R as a FRACTION (its Figure 5-4 gives R
 * from 0.0053 to 0.0078 on 5824-row matrices, i.e. 30-45 nonzeros a row; read as % it would be
 * under one nonzero a row). The thesis prints the CSR line as "B < 2.7 or R >= 0.005455", the other
 * way round from its text ("CSR for matrices of large variation and high density"; 2.7 is "0.1
 * below the largest B observed") and from Kubota's rule, which it also copies as "B < 8.0" in
 * (4-3). Taken literally, JDS could only follow B >= 2.7 and CSR would take every matrix with
 * B < 2.7 that misses ELL. We implement what the text means:
 *   ELL if B < 2.3 and R < 0.005455;  CSR if B > 2.7 or R >= 0.005455;  else JDS.
 * spx_analysis.R is a fraction, so Kubota's 0.048 % is 0.00048 here. */
typedef struct spx__plan_rule {
  double ell_b, csr_b, r; /* thresholds, R as a fraction */
  const char *r_text;     /* R as the paper prints it */
  double r_scale;         /* to print R in the paper's unit */
  const char *r_unit;
} spx__plan_rule;

static const spx__plan_rule spx__plan_kubota = {2.0, 8.0, 0.00048, "0.048 %", 100.0, " %"};
static const spx__plan_rule spx__plan_mps = {2.3, 2.7, 0.005455, "0.005455", 1.0, ""};

/* The rule's choice: SPX_FORMAT_ELL, SPX_FORMAT_JDS, or CSR with *cusparse = 1. */
static spx_format spx__plan_rule_apply(const spx__plan_rule *r, const spx_analysis *an, int *cusparse,
                                       char *why, size_t len) {
  double B = an->B, R = an->R, Rp = an->R * r->r_scale;
  *cusparse = 0;
  if (B < r->ell_b && R < r->r) {
    snprintf(why, len, "B = %.3g < %.3g and R = %.4g%s < %s -> ell", B, r->ell_b, Rp, r->r_unit, r->r_text);
    return SPX_FORMAT_ELL;
  }
  if (B > r->csr_b || R >= r->r) {
    *cusparse = 1;
    if (B > r->csr_b) snprintf(why, len, "B = %.3g > %.3g -> cuSPARSE csr", B, r->csr_b);
    else snprintf(why, len, "R = %.4g%s >= %s -> cuSPARSE csr", Rp, r->r_unit, r->r_text);
    return SPX_FORMAT_CSR;
  }
  snprintf(why, len, "%.3g <= B = %.3g <= %.3g%s, R = %.4g%s -> jds", r->ell_b, B, r->csr_b,
           B < r->ell_b ? " (R rules ELL out)" : "", Rp, r->r_unit);
  return SPX_FORMAT_JDS;
}

const char *spx_plan_rule_choice(spx_plan_strategy s, double B, double R) {
  spx_analysis an;
  char why[200];
  int cus;
  spx_format f;
  if (s != SPX_PLAN_KUBOTA && s != SPX_PLAN_MPS) return NULL;
  memset(&an, 0, sizeof an);
  an.B = B;
  an.R = R;
  f = spx__plan_rule_apply(s == SPX_PLAN_KUBOTA ? &spx__plan_kubota : &spx__plan_mps, &an, &cus, why, sizeof why);
  return cus ? "cusparse" : spx_format_name(f);
}

static int spx__plan_find(const spx_plan *p, spx_format f, spx_plan_engine e) {
  int i;
  for (i = 0; i < p->ncand; i++)
    if (p->cand[i].format == f && p->cand[i].engine == e) return i;
  return -1;
}

int spx__plan_usable(const spx_plan *p, int i) { return i >= 0 && p->cand[i].fits && p->cand[i].predicted_us >= 0; }

/* Heuristic choice with the fallbacks: a choice that does not fit (the paper's out-of-memory ELL
 * cases) goes to JDS, then CSR; cuSPARSE that is not there goes to spx's CSR. */
static spx_status spx__plan_heuristic(spx_plan *p, const spx__plan_rule *r) {
  char why[300];
  int cus, i;
  spx_format f = spx__plan_rule_apply(r, &p->an, &cus, why, sizeof why);
  size_t n = (size_t)snprintf(p->reason, sizeof p->reason, "%s: %s", spx_plan_strategy_name(p->strategy), why);
  i = spx__plan_find(p, f, cus ? SPX_PLAN_ENGINE_CUSPARSE : SPX_PLAN_ENGINE_SPX);
  if (i < 0 && cus) {
    n += (size_t)snprintf(p->reason + n, sizeof p->reason - n, "; cuSPARSE is not available (%s backend): spx csr",
                          p->backend == SPX_BACKEND_CUDA ? "no library on the" : "host");
    i = spx__plan_find(p, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_SPX);
  }
  if (!spx__plan_usable(p, i)) {
    static const spx_format order[] = {SPX_FORMAT_JDS, SPX_FORMAT_CSR};
    int k, j = -1;
    for (k = 0; k < 2 && j < 0; k++) {
      j = spx__plan_find(p, order[k], SPX_PLAN_ENGINE_SPX);
      if (!spx__plan_usable(p, j)) j = -1;
    }
    if (j < 0) {
      j = spx__plan_find(p, SPX_FORMAT_CSR, SPX_PLAN_ENGINE_CUSPARSE);
      if (!spx__plan_usable(p, j)) j = -1;
    }
    if (j < 0) return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "%s; neither it nor jds nor csr fits the memory limit", p->reason);
    n += (size_t)snprintf(p->reason + n, sizeof p->reason - n, "; %s does not fit (%s): %s%s",
                          i >= 0 ? spx_format_name(p->cand[i].format) : "it", i >= 0 ? p->cand[i].note : "not a candidate",
                          p->cand[j].engine == SPX_PLAN_ENGINE_CUSPARSE ? "cuSPARSE " : "", spx_format_name(p->cand[j].format));
    i = j;
  }
  (void)n;
  p->chosen = i;
  return SPX_OK;
}

/* A candidate's rank key: its score, a CSR baseline's (spx's CSR kernel, cuSPARSE) less the
 * margin a conversion has to beat it by (options.convert_margin). */
static double spx__plan_key(const spx_plan *p, int i) {
  const spx_plan_candidate *c = &p->cand[i];
  int baseline = c->engine == SPX_PLAN_ENGINE_CUSPARSE || c->format == SPX_FORMAT_CSR;
  return baseline ? c->score_us * (1.0 - p->margin) : c->score_us;
}

/* Candidate indices usable, sorted by rank key (best first). */
static int spx__plan_ranked(const spx_plan *p, int *idx) {
  int i, j, k = 0;
  for (i = 0; i < p->ncand; i++)
    if (spx__plan_usable(p, i)) idx[k++] = i;
  for (i = 1; i < k; i++) { /* insertion sort: a dozen entries */
    int v = idx[i];
    for (j = i; j > 0 && spx__plan_key(p, idx[j - 1]) > spx__plan_key(p, v); j--) idx[j] = idx[j - 1];
    idx[j] = v;
  }
  return k;
}

static spx_status spx__plan_model_choice(spx_plan *p) {
  int idx[SPX_FORMAT_MAX + 1], k = spx__plan_ranked(p, idx);
  const spx_plan_candidate *b;
  if (!k) return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "no candidate format fits the memory limit");
  p->chosen = idx[0];
  b = &p->cand[idx[0]];
  snprintf(p->reason, sizeof p->reason,
           "%s: %s predicted %.3g us/SpMV + %.3g ms conversion / %lld calls = %.3g us (next: %s %.3g us)",
           spx_plan_strategy_name(p->strategy), spx__plan_cname(b), b->predicted_us, b->convert_ms,
           (long long)p->calls, b->score_us,
           k > 1 ? spx__plan_cname(&p->cand[idx[1]]) : "none", k > 1 ? p->cand[idx[1]].score_us : 0.0);
  if (k > 1 && p->cand[idx[1]].score_us < b->score_us) {
    size_t n = strlen(p->reason);
    snprintf(p->reason + n, sizeof p->reason - n, "; a conversion must score %.0f%% below the CSR baseline", 100 * p->margin);
  }
  return SPX_OK;
}

/* Times the candidates in idx[0..k) (reps samples of about sample_ms) and keeps the fastest built
 * in p (at most two built at once). */
static spx_status spx__plan_trial(spx_plan *p, const spx_csr *a, const int *idx, int k, int reps, double sample_ms) {
  spx_plan *best = NULL;
  double best_us = 0;
  int i, bi = -1;
  spx_status s;
  for (i = 0; i < k; i++) {
    spx_plan *q = NULL;
    double us;
    spx_plan_candidate *c = &p->cand[idx[i]];
    if ((s = spx__plan_fixed(p, a, idx[i], &q)) || (s = spx__plan_time_sampled(q, reps, sample_ms, &us))) {
      if (s == SPX_OUT_OF_MEMORY) { spx_plan_destroy(q); spx_plan_destroy(best); return s; }
      snprintf(c->note, sizeof c->note, "trial failed: %.80s", spx_last_error());
      spx_clear_error();
      spx_plan_destroy(q);
      continue;
    }
    c->measured_us = us;
    if (!best || us < best_us) { spx_plan_destroy(best); best = q; best_us = us; bi = idx[i]; }
    else spx_plan_destroy(q);
  }
  if (!best) return spx__fail(SPX_UNSUPPORTED, "trial: no candidate could be built and timed");
  p->chosen = bi;
  p->fmt = best->fmt; p->dm = best->dm; p->cs = best->cs; p->built = 1;
  /* A winner that wraps the staged arrays (CSR, cuSPARSE) keeps them for the plan's life; one
   * converted from them (its build let go of its borrowed copy) or from the host is done with them. */
  if (!best->dc.ci) { /* an owed diagonal first (a plan on device arrays owes it already here) */
    spx__plan_diag_take(p, NULL);
    spx__dcsr_free(&p->dc);
  }
  best->fmt = NULL; best->dm = NULL; best->cs = NULL;
  spx_plan_destroy(best);
  return SPX_OK;
}

/* options.force: that candidate by name, when it is one and fits. */
static spx_status spx__plan_forced(spx_plan *p, const char *name) {
  char list[256];
  size_t n = 0;
  int i, cus = spx__plan_names_cusparse(name);
  list[0] = 0;
  for (i = 0; i < p->ncand; i++) {
    const spx_plan_candidate *c = &p->cand[i];
    if (cus ? c->engine == SPX_PLAN_ENGINE_CUSPARSE
            : c->engine == SPX_PLAN_ENGINE_SPX && spx__plan_ieq(name, spx_format_name(c->format))) {
      if (!c->fits) return spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "forced %s does not fit: %s", name, c->note);
      if (c->predicted_us < 0) return spx__fail(SPX_UNSUPPORTED, "forced %s: %s", name, c->note);
      p->chosen = i;
      /* forced to cuSPARSE the plan reads no columns: no x-gather term in that prediction */
      snprintf(p->reason, sizeof p->reason, "forced: %s (predicted %.3g us/SpMV%s)", spx__plan_cname(c), c->predicted_us,
               cus ? " from the row lengths alone" : "");
      return SPX_OK;
    }
    if (n < sizeof list) n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", spx__plan_cname(c));
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "forced plan \"%s\" is not a candidate on the %s backend (candidates: %s)", name,
                   p->backend == SPX_BACKEND_CUDA ? "cuda" : "host", list);
}

/* auto's timing of idx[0..k), where its price passed: a race over the caller's first SpMVs
 * (plan_race_impl.h), which the caller does not wait for; with options.no_race, or for a deferred
 * plan (whose choice must be built before its start), the trial here. The reason is
 * "<head>race|trial <what>: <result>" (two: the best two's times, else the winner's). */
static spx_status spx__plan_contest(spx_plan *p, const spx_csr *use, const int *idx, int k, int two, double sample_ms,
                                    const spx_plan_options *o, const char *head, const char *what) {
  char v[200];
  spx_status s;
  if (!o->no_race && !o->defer) return spx__race_begin(p, idx, k, o->trial_reps, sample_ms, two, head, what);
  if ((s = spx__plan_trial(p, use, idx, k, o->trial_reps, sample_ms))) return s;
  spx__plan_verdict(p, idx, two, v, sizeof v);
  snprintf(p->reason, sizeof p->reason, "%.420strial %.120s: %.180s", head, what, v);
  return SPX_OK;
}

/* Kernels predicted within this many launch latencies are latency-bound: what separates the formats
 * there (a launch, a dependent load, a reduction) is a fraction of a microsecond, below the model's
 * error, so its ranking beyond the first few is weak and auto measures instead. */
#define SPX__PLAN_LATENCY_LAUNCHES 8
/* The samples of auto's trial in that regime: tens of SpMVs each, enough for the events' resolution. */
#define SPX__PLAN_QUICK_SAMPLE_MS 0.05

/* auto on latency-bound kernels: times the ranked candidates (the model's order) as far as the trial's
 * priced cost (each conversion and its timing) stays within trial_share of the expected work, and
 * keeps the fastest; when fewer than two fit that budget, the model's choice stands. */
static spx_status spx__plan_quick_trial(spx_plan *p, const spx_csr *use, const int *idx, int k,
                                        const spx_plan_options *o) {
  const int cuda = p->backend == SPX_BACKEND_CUDA;
  const double work_ms = 1e-3 * (double)o->expected_calls * p->cand[idx[0]].predicted_us;
  double cost = 0;
  int n = 0;
  size_t len;
  char head[448], what[160];
  for (; n < k; n++) {
    const spx_plan_candidate *c = &p->cand[idx[n]];
    const double ci = (n ? c->convert_ms : 0) + spx__plan_time_ms(cuda, c->predicted_us, o->trial_reps, SPX__PLAN_QUICK_SAMPLE_MS);
    if (cost + ci > o->trial_share * work_ms) break;
    cost += ci;
  }
  if (n < 2) {
    len = strlen(p->reason);
    snprintf(p->reason + len, sizeof p->reason - len, "; latency-bound, no trial (two candidates' %.3g ms > %.3g x %.3g ms of work)",
             cost + (n ? p->cand[idx[1]].convert_ms : 0), o->trial_share, work_ms);
    return SPX_OK;
  }
  snprintf(head, sizeof head, "%.399s; latency-bound: ", p->reason);
  snprintf(what, sizeof what, "of the best %d of %d (%.3g ms <= %.3g x %.3g ms of work)", n, k, cost, o->trial_share, work_ms);
  return spx__plan_contest(p, use, idx, n, 0, SPX__PLAN_QUICK_SAMPLE_MS, o, head, what);
}

/* The choice among p's candidates (the options' forced name, else p->strategy's), with its reason;
 * use is the matrix a trial builds its candidates from. The trial strategy and auto's trial leave
 * the winner built in p; auto's race leaves the model's choice chosen and the race in p. */
spx_status spx__plan_strategy(spx_plan *p, const spx_csr *use, const spx_plan_options *o) {
  spx_status s;
  if (o->force) s = spx__plan_forced(p, o->force);
  else switch (p->strategy) {
  case SPX_PLAN_KUBOTA: s = spx__plan_heuristic(p, &spx__plan_kubota); break;
  case SPX_PLAN_MPS: s = spx__plan_heuristic(p, &spx__plan_mps); break;
  case SPX_PLAN_MODEL: s = spx__plan_model_choice(p); break;
  case SPX_PLAN_TRIAL: {
    int idx[SPX_FORMAT_MAX + 1], k = spx__plan_ranked(p, idx);
    if (!k) { s = spx__fail(SPX_DEVICE_OUT_OF_MEMORY, "no candidate format fits the memory limit"); break; }
    if (!(s = spx__plan_trial(p, use, idx, k, o->trial_reps, SPX__PLAN_SAMPLE_MS)))
      snprintf(p->reason, sizeof p->reason, "trial: %s measured %.3g us/SpMV, fastest of %d candidates timed",
               spx__plan_cname(&p->cand[p->chosen]), p->cand[p->chosen].measured_us, k);
    break;
  }
  default: { /* AUTO */
    const int cuda = p->backend == SPX_BACKEND_CUDA;
    int idx[SPX_FORMAT_MAX + 1], k;
    double trial_ms, work_ms, gap;
    if ((s = spx__plan_model_choice(p))) break;
    k = spx__plan_ranked(p, idx);
    /* A trial of the best two converts the runner-up too, and times each as spx_plan_time does. */
    if (k > 1 && p->cand[idx[0]].predicted_us < SPX__PLAN_LATENCY_LAUNCHES * p->launch_us) {
      s = spx__plan_quick_trial(p, use, idx, k, o);
      break;
    }
    trial_ms = k > 1 ? p->cand[idx[1]].convert_ms +
                           spx__plan_time_ms(cuda, p->cand[idx[0]].predicted_us, o->trial_reps, SPX__PLAN_SAMPLE_MS) +
                           spx__plan_time_ms(cuda, p->cand[idx[1]].predicted_us, o->trial_reps, SPX__PLAN_SAMPLE_MS)
                     : 0;
    work_ms = 1e-3 * (double)o->expected_calls * p->cand[idx[0]].predicted_us;
    gap = k > 1 ? p->cand[idx[1]].predicted_us / p->cand[idx[0]].predicted_us : 0;
    if (k > 1 && gap > o->trial_gap) {
      size_t n = strlen(p->reason);
      snprintf(p->reason + n, sizeof p->reason - n, "; no trial (the runner-up predicted %.0f%% slower)", 100 * (gap - 1));
    } else if (k > 1 && trial_ms <= o->trial_share * work_ms) {
      char head[448], what[160]; /* the model's sentence, bounded so the trial's fits after it */
      snprintf(head, sizeof head, "%.399s; ", p->reason);
      snprintf(what, sizeof what, "of the best two (%.3g ms <= %.3g x %.3g ms of work)", trial_ms, o->trial_share, work_ms);
      s = spx__plan_contest(p, use, idx, 2, 1, SPX__PLAN_SAMPLE_MS, o, head, what);
    } else if (k > 1) {
      size_t n = strlen(p->reason);
      snprintf(p->reason + n, sizeof p->reason - n, "; no trial (%.3g ms > %.3g x %.3g ms of work)", trial_ms,
               o->trial_share, work_ms);
    }
  }
  }
  return s;
}
