/* SPDX-License-Identifier: BSD-3-Clause */
/* auto's race (tuner.h: the plan room's second file). Where auto would time candidates, a trial in
 * spx_plan_create makes the caller wait for every candidate's build and timing before its first
 * SpMV; the race builds only what the plan runs first there (its start, below, or the model's
 * choice) and lets the caller's own first SpMVs time the candidates instead: one candidate at a
 * time, in blocks of calls (a warm-up, then `reps` timed calls), each candidate built when its turn
 * comes. CUDA times each call with a pair of events on the context stream, read only once they have
 * completed (a block's events are read at a later call; the calls between run untimed on what the
 * plan runs first); the host times it with the clock.
 * A candidate whose kernel still compiles in the background waits for a later turn, and is dropped
 * once the race has served half the plan's expected calls. When every candidate is measured or
 * dropped, the fastest by median (ties to the model's choice) becomes the plan's build and the
 * others are freed: every call computes y = alpha A x + beta y on some candidate, in the stream's
 * order. A leader other than the model's choice gets a second look first: both time another
 * block, and each keeps the lesser of its two medians. Noise only ever makes a block slower (a
 * busy GPU or CPU, another process), so one slow block of the model's choice cannot switch the
 * plan to a candidate that is not faster; slot 0's build stays until the end for it.
 * spx_plan_wait ends a race at once, timing what is left as the trial does. The race's builds and
 * its bookkeeping count as selection time (select_ms), not the SpMVs it serves.
 * Where the CSR as it is can run with nothing converted (the staged arrays on a GPU, the race's
 * copy on the host), spx_plan_create does not build the model's choice either: the plan starts on
 * that CSR, and the model's choice builds at its turn like the other candidates (same candidates,
 * same order, same rule, so the same winner). */
#include "common.h"
#include "cuda_types.h"
#include "dmatrix.h"
#include "tuner.h"
#include "../plan.h"

/* ---- Its start and its matrix ------------------------------------------------------------------ */
spx_status spx__race_begin(spx_plan *p, const int *idx, int k, int reps, double sample_ms, int two, const char *head,
                           const char *what) {
  spx__race *r = (spx__race *)spx__calloc(1, sizeof *r);
  int i;
  if (!r) return SPX_OUT_OF_MEMORY;
  r->n = k;
  for (i = 0; i < k; i++) r->slot[i].cand = idx[i];
  r->reps = reps < SPX__RACE_REPS_MAX ? reps : SPX__RACE_REPS_MAX;
  r->two = two;
  r->cur = r->pending = r->lead = -1;
  r->start_cand = -2;
  /* a kernel still compiling at half the expected calls could only pay back over the fewer calls
   * left: the race stops waiting for it there */
  r->drop_after = p->calls / 2;
  r->sample_ms = sample_ms;
  snprintf(r->head, sizeof r->head, "%s", head);
  snprintf(r->what, sizeof r->what, "%s", what);
  p->chosen = idx[0];
  p->race = r;
  snprintf(p->reason, sizeof p->reason, "%.420srace %.120s over the first SpMVs: running, on the model's choice meanwhile", r->head,
           r->what);
  return SPX_OK;
}

spx_status spx__race_keep(spx_plan *p, spx_csr **own, const spx_csr *a) {
  spx__race *r = p->race;
  spx_status s;
  if (!r || r->a) return SPX_OK;
  if (p->dc.ci && p->dc.has_values && !spx__dcsr_values_wait(&p->dc)) return SPX_OK; /* the staged arrays hold it */
  spx_clear_error();
  if (own && *own) {
    r->own = *own;
    *own = NULL;
  } else if ((s = spx_csr_copy(a, p->dtype, &r->own))) {
    return s;
  }
  r->a = r->own;
  return SPX_OK;
}

void spx__race_share(spx_plan *p, const spx_csr *m) {
  if (p->race && !p->race->a) p->race->a = m;
}

int spx__race_adopt(spx_plan *p, spx_csr *m) {
  if (!p->race || !m || p->race->a != m) return 0;
  p->race->own = m;
  return 1;
}

/* ---- Its start -----------------------------------------------------------------------------------
 * The model's choice built in spx_plan_create is a conversion the caller waits for and the race may
 * throw away. Where the CSR as it is runs with nothing converted (the staged arrays, wrapped; on the
 * host the race's copy) the plan runs that until the race ends, and the model's choice is slot 0's
 * own plan, built at its turn. Not where the model's choice runs on the staged arrays as they are
 * already. The start serves only the calls no block times, so what counts is its setup: cuSPARSE
 * first (its descriptor is what a cuSPARSE plan pays anyway), spx's CSR kernel where cuSPARSE is
 * not a candidate (its kernel may cost a module load, or a compile in the background). */
static int spx__race_wraps(const spx_plan *p, const spx_plan_candidate *c) {
  return c->engine == SPX_PLAN_ENGINE_CUSPARSE || (c->format == SPX_FORMAT_CSR && p->csr_staged);
}

int spx__race_start_cand(const spx_plan *p) {
  const spx__race *r = p->race;
  int i, best = -2;
  if (!r || r->started || r->sync) return -2;
  if (p->backend != SPX_BACKEND_CUDA) return r->a ? -1 : -2;
  if (!p->dc.ci || !p->dc.rp32 || spx__race_wraps(p, &p->cand[p->chosen])) return -2;
  for (i = 0; i < p->ncand; i++)
    if (spx__race_wraps(p, &p->cand[i]) && spx__plan_usable(p, i) &&
        (best < 0 || p->cand[i].engine == SPX_PLAN_ENGINE_CUSPARSE))
      best = i;
  return best;
}

/* What the start runs, in reasons. */
static void spx__race_start_name(const spx_plan *p, char *buf, size_t len) {
  const int j = p->race->start_cand;
  if (j >= 0) snprintf(buf, len, "%s over the staged CSR", spx__plan_cname(&p->cand[j]));
  else snprintf(buf, len, "the CSR as it is");
}

spx_status spx__race_start(spx_plan *p, const spx_csr *a, int j) {
  spx__race *r = p->race;
  char name[64];
  spx_status s;
  if (j < 0) {
    p->race_csr = r->a; /* spx_csr_spmv on it: nothing to build */
  } else if ((s = spx__plan_wrap(p, a, p->cand[j].engine == SPX_PLAN_ENGINE_CUSPARSE, p->tiered ? 2 : 0))) {
    return s;
  }
  p->built = 1;
  r->started = 1;
  r->start_cand = j;
  spx__race_start_name(p, name, sizeof name);
  snprintf(p->reason, sizeof p->reason, "%.420srace %.120s over the first SpMVs: running, on %s meanwhile", r->head,
           r->what, name);
  return SPX_OK;
}

/* ---- Events (CUDA) ------------------------------------------------------------------------------ */
/* The block's events, made at the first block: a pair per timed call, reused by every block. */
static spx_status spx__race_events(spx_plan *p) {
  spx__race *r = p->race;
  const spx__cuda_api *cu = spx__cuda();
  spx_status s;
  if (p->backend != SPX_BACKEND_CUDA || r->nev) return SPX_OK;
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "the race: no CUDA driver");
  if ((s = spx__ctx_push(p->ctx))) return s;
  while (!s && r->nev < 2 * r->reps)
    if (!(s = spx__event_new(cu, &r->ev[r->nev], 1))) r->nev++;
  spx__ctx_pop(p->ctx);
  return s;
}

/* Event k of the block on the context stream, where the caller's work is queued. */
static spx_status spx__race_record(spx_plan *p, int k) {
  const spx__cuda_api *cu = spx__cuda();
  spx_status s;
  if (!cu) return spx__fail(SPX_NOT_AVAILABLE, "the race: no CUDA driver");
  if ((s = spx__ctx_push(p->ctx))) return s;
  s = spx__event_record(cu, p->race->ev[k], p->ctx->stream);
  spx__ctx_pop(p->ctx);
  return s;
}

/* The block's samples from its events: 1 when read; 0 while the last is not done (wait: waits for
 * it, spx_plan_wait only); < 0 on a failure. Events on one stream complete in order. */
static int spx__race_read(spx_plan *p, int wait) {
  spx__race *r = p->race;
  const spx__cuda_api *cu = spx__cuda();
  spx__CUevent last;
  int j, done;
  if (!cu || spx__ctx_push(p->ctx)) return -1;
  last = r->ev[2 * r->reps - 1];
  done = wait ? (spx__event_sync(cu, last) ? -1 : 1) : spx__event_done(cu, last);
  for (j = 0; done > 0 && j < r->reps; j++) {
    float ms = 0;
    if (spx__event_ms(cu, &ms, r->ev[2 * j], r->ev[2 * j + 1])) done = -1;
    r->us[j] = 1e3 * (double)ms;
  }
  spx__ctx_pop(p->ctx);
  return done;
}

/* ---- The slots ----------------------------------------------------------------------------------- */
/* Whether slot i's build is the plan's own: the model's choice, where the plan did not start. */
static int spx__race_own(const spx__race *r, int i) { return i == 0 && !r->started; }

static spx_plan *spx__race_plan(spx_plan *p, int i) { return spx__race_own(p->race, i) ? p : p->race->slot[i].q; }

/* Frees slot i's build (the plan's own: never here). */
static void spx__race_unbuild(spx_plan *p, int i) {
  if (spx__race_own(p->race, i)) return;
  spx_plan_destroy(p->race->slot[i].q);
  p->race->slot[i].q = NULL;
}

/* Slot i leaves the race; why goes to its candidate's note. */
static void spx__race_drop(spx_plan *p, int i, const char *why) {
  snprintf(p->cand[p->race->slot[i].cand].note, sizeof p->cand[0].note, "race: %.80s", why);
  p->race->slot[i].state = SPX__RACE_DROPPED;
  spx__race_unbuild(p, i);
}

/* Tests only: microseconds added to slot i's median (look: 0 the first block, 1 the second look's),
 * to make a block look slow as noise would. NULL: none. */
double (*spx__race_test_noise)(int slot, int look) = NULL;

/* Slot i measured us per SpMV: it leads, or its build goes (the leader's goes when it leads; slot
 * 0's stays for the second look). In the second look it keeps the lesser of its two medians. */
static void spx__race_result(spx_plan *p, int i, double us) {
  spx__race *r = p->race;
  const int l = r->lead;
  const double lead_us = l >= 0 ? p->cand[r->slot[l].cand].measured_us : 0;
  double *m = &p->cand[r->slot[i].cand].measured_us;
  if (spx__race_test_noise) us += spx__race_test_noise(i, r->looked);
  r->slot[i].state = SPX__RACE_DONE;
  if (r->looked) {
    *m = SPX__MIN(*m, us);
    return;
  }
  *m = us;
  if (l < 0 || us < lead_us || (i == 0 && us <= lead_us)) { /* ties go to the model's choice */
    if (l > 0) spx__race_unbuild(p, l);
    r->lead = i;
  } else if (i > 0) {
    spx__race_unbuild(p, i);
  }
}

/* Where the leader is not the model's choice (both measured, slot 0 still built): both to be timed
 * again; 1 when that starts. */
static int spx__race_second_look(spx_plan *p) {
  spx__race *r = p->race;
  if (r->looked || r->lead <= 0 || r->slot[0].state != SPX__RACE_DONE || !spx__race_plan(p, 0)) return 0;
  r->looked = 1;
  r->slot[0].state = r->slot[r->lead].state = SPX__RACE_WAIT;
  return 1;
}

/* After the second look: the lesser time of the two leads (ties to the model's choice); one that
 * failed in it left the race, and the other leads (neither: none). */
static void spx__race_settle(spx_plan *p) {
  spx__race *r = p->race;
  const int l = r->lead, ok0 = r->slot[0].state == SPX__RACE_DONE;
  if (!r->looked || l <= 0) return;
  if (r->slot[l].state != SPX__RACE_DONE) {
    r->lead = ok0 ? 0 : -1;
  } else if (ok0 && p->cand[r->slot[0].cand].measured_us <= p->cand[r->slot[l].cand].measured_us) {
    spx__race_unbuild(p, l);
    r->lead = 0;
  }
}

/* The median of a block's samples. */
static void spx__race_measured(spx_plan *p, int i) {
  spx__race *r = p->race;
  qsort(r->us, (size_t)r->reps, sizeof *r->us, spx__plan_cmp);
  spx__race_result(p, i, r->us[r->reps / 2]);
}

/* Builds slot i's candidate; 1 when that failed and the slot left the race. One converted on the
 * host where the race has no host copy takes the staged arrays down first, kept for the others. */
static int spx__race_build(spx_plan *p, int i) {
  spx__race *r = p->race;
  const spx_plan_candidate *c = &p->cand[r->slot[i].cand];
  const int tr = spx__plan_tracing();
  double t0 = spx__now(), tm = t0;
  spx_status s = SPX_OK;
  if (!r->a && !spx__plan_staged_as(p, c->format, c->engine) && !(s = spx__dcsr_download(&p->dc, &r->own))) {
    r->a = r->own;
    spx__conv_mark(tr, "race", "download", &tm);
  }
  if (s || spx__plan_candidate(p, r->a, r->slot[i].cand, 1, &r->slot[i].q)) {
    char why[128];
    snprintf(why, sizeof why, "failed: %.100s", spx_last_error());
    spx_clear_error();
    r->slot[i].q = NULL;
    spx__race_drop(p, i, why);
    return 1;
  }
  r->nbuilt++;
  if (tr) fprintf(stderr, "spx plan: race: %s built in %.3f ms\n", spx__plan_cname(c), 1e3 * (spx__now() - t0));
  return 0;
}

/* Whether slot i runs its own kernel now: built, no stand-in, no compile left to wait for (a
 * candidate's kernel, which nothing stands in for, moves in at its block's warm-up call). */
static int spx__race_ready(spx_plan *p, int i) {
  spx_plan *q = spx__race_plan(p, i);
  if (!q || !q->built || q->start) return 0;
  if (!q->dm || !spx_dmatrix_compiling(q->dm)) return 1;
  return !spx__race_own(p->race, i) && spx__dmatrix_runnable(q->dm);
}

/* ---- Its end ------------------------------------------------------------------------------------- */
void spx__plan_verdict(const spx_plan *p, const int *idx, int two, char *buf, size_t len) {
  const spx_plan_candidate *c[2];
  size_t n = 0;
  int k;
  c[0] = two ? &p->cand[idx[0]] : &p->cand[p->chosen];
  c[1] = &p->cand[idx[1]];
  for (k = 0; k < 1 + (two != 0) && n < len; k++) {
    if (c[k]->measured_us >= 0)
      n += (size_t)snprintf(buf + n, len - n, "%s%s %.3g us", k ? " vs " : "", spx__plan_cname(c[k]), c[k]->measured_us);
    else
      n += (size_t)snprintf(buf + n, len - n, "%s%s not timed", k ? " vs " : "", spx__plan_cname(c[k]));
  }
}

void spx__race_free(spx_plan *p) {
  spx__race *r = p->race;
  const spx__cuda_api *cu = spx__cuda();
  int i;
  if (!r) return;
  for (i = 0; i < r->n; i++) spx__race_unbuild(p, i);
  if (r->nev && cu && !spx__ctx_push(p->ctx)) {
    for (i = 0; i < r->nev; i++) spx__event_free(cu, r->ev[i]);
    spx__ctx_pop(p->ctx);
  }
  spx_csr_destroy(r->own);
  SPX_FREE(r);
  p->race = NULL;
}

/* Nothing timed on a plan that started: the model's choice stands, slot 0's build or one made now
 * (waiting for its compile: nothing is left to time it against). 0 when it is there, -1 when it
 * could not be built (why: the error). */
static int spx__race_fallback(spx_plan *p, char *why, size_t len) {
  spx__race_slot *z = &p->race->slot[0];
  if (z->q && z->q->built) return 0;
  spx_plan_destroy(z->q);
  z->q = NULL;
  if (!spx__plan_candidate(p, p->race->a, z->cand, 0, &z->q)) return 0;
  snprintf(why, len, "%.150s", spx_last_error());
  spx_clear_error();
  z->q = NULL;
  return -1;
}

/* The start stays the plan (nothing timed, the model's choice could not be built): the getters say
 * what runs; on the host the plan keeps the race's copy it runs on. */
static void spx__race_keep_start(spx_plan *p) {
  spx__race *r = p->race;
  int i;
  if (r->start_cand < 0) {
    if (r->own == p->race_csr) { p->race_csr_own = r->own; r->own = NULL; r->a = NULL; }
    for (i = 0; i < p->ncand; i++)
      if (p->cand[i].format == SPX_FORMAT_CSR && p->cand[i].engine == SPX_PLAN_ENGINE_SPX) p->chosen = i;
    p->format = SPX_FORMAT_CSR;
    p->engine = SPX_PLAN_ENGINE_SPX;
    return;
  }
  p->chosen = r->start_cand;
  p->format = p->cand[p->chosen].format;
  p->engine = p->cand[p->chosen].engine;
}

/* The plan keeps the leader (none measured: the model's choice), and the reason says so (tail:
 * why it stopped early, or NULL). The owed diagonal is taken before the race's matrix goes. */
static void spx__race_finish(spx_plan *p, const char *tail) {
  spx__race *r = p->race;
  int idx[2], w = r->lead;
  char v[200], why[160];
  idx[0] = r->slot[0].cand;
  idx[1] = r->slot[r->n > 1 ? 1 : 0].cand;
  why[0] = 0;
  if (w < 0 && r->started) w = spx__race_fallback(p, why, sizeof why);
  if (w >= 0 && !spx__race_own(r, w)) {
    spx__plan_take_build(p, r->slot[w].q);
    p->chosen = r->slot[w].cand;
    p->format = p->cand[p->chosen].format;
    p->engine = p->cand[p->chosen].engine;
  } else if (w < 0 && r->started) {
    spx__race_keep_start(p);
  }
  /* the race's copy goes: the owed diagonal from it first, unless the staged arrays can give it
   * (they stay with a build that wraps them, and their release takes it otherwise) */
  if (r->a && !spx__plan_diag_staged(p)) spx__plan_diag_take(p, r->a);
  spx__plan_verdict(p, idx, r->two, v, sizeof v);
  if (w < 0 && r->started) {
    char name[64];
    spx__race_start_name(p, name, sizeof name);
    snprintf(v, sizeof v, "nothing timed; the model's choice failed (%.40s): %.40s stays", why, name);
  }
  if (w < 0 && r->started) tail = NULL; /* not the model's choice: what stays says why */
  snprintf(p->reason, sizeof p->reason, "%.360srace %.120s over the first SpMVs: %.120s%s%s%s", r->head, r->what,
           tail ? tail : v, r->looked && !tail ? " (a second look at the model's choice and the leader)" : "",
           r->by_wait && !tail ? " (ended by spx_plan_wait)" : "",
           r->lead < 0 && !tail && w >= 0 ? "; nothing timed, the model's choice stands" : "");
  if (spx__plan_tracing())
    fprintf(stderr, "spx plan: race ended after %lld calls, %d of %d built: %s; select_ms %.3f so far\n",
            (long long)r->served, r->nbuilt, r->n, spx__plan_cname(&p->cand[p->chosen]), p->select_ms);
  spx__race_free(p);
  spx__plan_release_dc(p);
}

/* A failure of the race's own timing (not of an SpMV) ends it: the model's choice stands. */
static void spx__race_abort(spx_plan *p) {
  char tail[200];
  snprintf(tail, sizeof tail, "stopped (%.80s), the model's choice stands", spx_last_error());
  spx_clear_error();
  p->race->lead = -1;
  spx__race_finish(p, tail);
}

/* ---- The SpMVs ----------------------------------------------------------------------------------- */
/* Starts the next block on the first slot still to be timed that runs its own kernel now (building
 * at most one candidate per call, when its turn comes); ends the race when none is left. */
static void spx__race_next(spx_plan *p) {
  spx__race *r = p->race;
  int i, left = 0, built = 0;
  for (i = 0; i < r->n; i++) {
    if (r->slot[i].state != SPX__RACE_WAIT) continue;
    if (!spx__race_own(r, i) && !r->slot[i].q) {
      if (built++) { left++; continue; }
      if (spx__race_build(p, i)) continue;
    }
    if (spx__race_ready(p, i)) {
      if (spx__race_events(p)) { spx__race_abort(p); return; }
      r->cur = i;
      r->calls = 0;
      return;
    }
    if (i && r->served > r->drop_after) { spx__race_drop(p, i, "dropped: still compiling at half the expected calls"); continue; }
    left++;
  }
  if (left) return;
  if (spx__race_second_look(p)) {
    spx__race_next(p); /* slot 0 and the leader are built and run their own kernels */
    return;
  }
  spx__race_settle(p);
  spx__race_finish(p, NULL);
}

/* Reads a finished block's samples, then starts the next block (or ends the race). */
static void spx__race_step(spx_plan *p) {
  spx__race *r = p->race;
  if (r->pending >= 0) {
    const int got = spx__race_read(p, 0);
    if (got < 0) { spx__race_abort(p); return; }
    if (!got) return;
    spx__race_measured(p, r->pending);
    r->pending = -1;
  }
  if (r->cur < 0) spx__race_next(p);
}

/* The call on the plan's own build, untimed; *run: its wall seconds. */
static spx_status spx__race_plain(spx_plan *p, double alpha, const void *x, double beta, void *y, double *run) {
  const double t = spx__now();
  const spx_status s = spx__plan_run(p, alpha, x, beta, y);
  *run += spx__now() - t;
  return s;
}

/* The call on the block's slot: call calls - 1 of its samples (the first call, untimed, warms up).
 * A candidate that fails leaves the race and the call runs on the plan's own build. */
static spx_status spx__race_timed(spx_plan *p, double alpha, const void *x, double beta, void *y, double *run) {
  spx__race *r = p->race;
  const int i = r->cur, k = r->calls - 1, cuda = p->backend == SPX_BACKEND_CUDA;
  double t;
  spx_status s;
  if (cuda && k >= 0 && spx__race_record(p, 2 * k)) {
    spx__race_abort(p);
    return spx__race_plain(p, alpha, x, beta, y, run);
  }
  t = spx__now();
  s = spx__plan_run(spx__race_plan(p, i), alpha, x, beta, y);
  *run = spx__now() - t;
  if (s && !spx__race_own(r, i)) {
    char why[128];
    snprintf(why, sizeof why, "failed: %.100s", spx_last_error());
    spx_clear_error();
    spx__race_drop(p, i, why);
    r->cur = -1;
    return spx__race_plain(p, alpha, x, beta, y, run);
  }
  if (s) return s; /* the plan's own SpMV: the caller's failure, as without a race */
  if (k >= 0 && !cuda) r->us[k] = 1e6 * *run;
  if (k >= 0 && cuda && spx__race_record(p, 2 * k + 1)) {
    spx__race_abort(p);
    return SPX_OK;
  }
  if (++r->calls > r->reps) { /* the block is done: CUDA reads its events at a later call */
    r->cur = -1;
    if (cuda) r->pending = i;
    else spx__race_measured(p, i);
  }
  return SPX_OK;
}

spx_status spx__race_spmv(spx_plan *p, double alpha, const void *x, double beta, void *y) {
  const double t0 = spx__now(), d0 = p->diag_ms;
  double run = 0;
  spx_status s;
  if (p->race->sync) return spx__plan_run(p, alpha, x, beta, y);
  p->race->served++;
  spx__race_step(p);
  if (p->race && p->race->cur >= 0) s = spx__race_timed(p, alpha, x, beta, y, &run);
  else s = spx__race_plain(p, alpha, x, beta, y, &run);
  /* the race's builds and bookkeeping: selection (the diagonal taken at its end is neither's) */
  p->select_ms += 1e3 * (spx__now() - t0 - run) - (p->diag_ms - d0);
  return s;
}

/* spx_plan_wait: a block's events waited for, what is left timed at once as the trial times (a
 * compile waited for), the choice fixed. The plan is built first (a lazy plan's race has not run). */
spx_status spx__race_end(spx_plan *p) {
  spx__race *r = p->race;
  const double t0 = spx__now(), d0 = p->diag_ms;
  const int was_built = p->built;
  spx_status s;
  int i;
  /* sync first: a lazy plan built here builds the model's choice, not a start it would drop at once */
  r->sync = r->by_wait = 1;
  if (!p->built && (s = spx_plan_build(p))) {
    r->sync = r->by_wait = 0;
    return s;
  }
  if (r->pending >= 0) {
    if (spx__race_read(p, 1) < 0) { spx__race_abort(p); goto done; }
    spx__race_measured(p, r->pending);
    r->pending = -1;
  }
  r->cur = -1; /* a block under way is timed again below */
  do
    for (i = 0; i < r->n; i++) {
      double us;
      if (r->slot[i].state != SPX__RACE_WAIT || (!spx__race_own(r, i) && !r->slot[i].q && spx__race_build(p, i)))
        continue;
      if (spx__plan_time_sampled(spx__race_plan(p, i), r->reps, r->sample_ms, &us)) {
        char why[128];
        snprintf(why, sizeof why, "failed: %.100s", spx_last_error());
        spx_clear_error();
        spx__race_drop(p, i, why);
        continue;
      }
      spx__race_result(p, i, us);
    }
  while (spx__race_second_look(p));
  spx__race_settle(p);
  spx__race_finish(p, NULL);
done:
  /* the timings and builds: selection; a lazy plan's own build and the diagonal: neither */
  p->select_ms += 1e3 * (spx__now() - t0) - (was_built ? 0 : p->build_ms) - (p->diag_ms - d0);
  return SPX_OK;
}

int spx_plan_racing(const spx_plan *p, spx_plan_race_info *info) {
  const spx__race *r = p ? p->race : NULL;
  int i;
  if (info) memset(info, 0, sizeof *info);
  if (!r) return 0;
  if (info) {
    info->candidates = r->n;
    info->built = r->nbuilt + (p->built && !r->started);
    info->started = r->started;
    info->calls = r->served;
    for (i = 0; i < r->n; i++) {
      info->measured += r->slot[i].state == SPX__RACE_DONE;
      info->dropped += r->slot[i].state == SPX__RACE_DROPPED;
    }
  }
  return 1;
}
