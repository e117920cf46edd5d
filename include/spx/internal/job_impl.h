/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/job_impl.h: a function run once on a detached background thread, and the tier
 * switch built on it (declared in common.h).
 *
 * The tiered JIT compiles a specialized kernel on a job while the caller runs what it already has.
 * The owner polls without blocking (spx__job_done), waits when it must (spx__job_wait: the job's
 * status, its message re-raised on the waiting thread, since messages are thread-local) and lets go
 * whenever it likes (spx__job_release): a job still running finishes on its own (its result goes
 * into the JIT cache) and the last of owner and thread frees it, so dropping a matrix never waits
 * for a compile. The job's inputs live in its own allocation (data), never in the owner's. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"

static atomic_int spx__jobs_running; /* job threads started and not yet returned */

int spx__jobs_busy(void) { return atomic_load(&spx__jobs_running); }

int spx__host_threads(void) {
#if defined(_OPENMP)
  const int n = omp_get_max_threads() - atomic_load(&spx__jobs_running);
  return n > 1 ? n : 1;
#else
  return 1;
#endif
}

long spx__cpus(void) {
  static atomic_long n; /* 0 until read: a race reads the same number twice */
  long c = atomic_load(&n);
  if (c > 0) return c;
  c = sysconf(_SC_NPROCESSORS_ONLN);
  if (c < 1) c = 1;
  atomic_store(&n, c);
  return c;
}

int spx__host_threads_for(int64_t work, int64_t grain) {
  const int n = spx__host_threads();
  const int64_t w = grain > 0 ? work / grain : n;
  return w < 1 ? 1 : w < n ? (int)w : n;
}

struct spx__job {
  spx_status (*fn)(spx__job *j, void *data);
  void *data;             /* freed with the job (SPX_FREE) */
  atomic_int refs;        /* the owner and, while it runs, the thread */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;               /* under mu */
  spx_status status;      /* fn's result, valid once done */
  char msg[1024];         /* its message (spx_last_error on the job's thread) */
};

static void spx__job_unref_(spx__job *j) {
  if (atomic_fetch_sub(&j->refs, 1) != 1) return;
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  SPX_FREE(j->data);
  SPX_FREE(j);
}

void spx__job_publish(spx__job *j, spx_status s) {
  pthread_mutex_lock(&j->mu);
  if (!j->done) {
    j->status = s;
    if (s) snprintf(j->msg, sizeof j->msg, "%s", spx_last_error());
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
  }
  pthread_mutex_unlock(&j->mu);
}

static void spx__job_run(spx__job *j) {
  spx__job_publish(j, j->fn(j, j->data)); /* no-op when fn published already */
}

static void *spx__job_main(void *v) {
  spx__job *j = (spx__job *)v;
  spx__job_run(j);
  spx__job_unref_(j);
  atomic_fetch_sub(&spx__jobs_running, 1);
  return NULL;
}

/* Starts fn(data) on a new thread; data (heap, SPX_MALLOC'd) belongs to the job from here on, also
 * when this fails. Where no thread can be made, fn runs here and now: the caller waits, but gets
 * its result. NULL only when memory ran out (data freed). */
spx__job *spx__job_start(spx_status (*fn)(spx__job *j, void *data), void *data) {
  spx__job *j = (spx__job *)spx__calloc(1, sizeof *j);
  pthread_attr_t at;
  pthread_t th;
  int started = 0;
  if (!j) { SPX_FREE(data); return NULL; }
  j->fn = fn;
  j->data = data;
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  atomic_init(&j->refs, 2);
  if (pthread_attr_init(&at) == 0) {
    if (pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0) {
      atomic_fetch_add(&spx__jobs_running, 1);
      started = pthread_create(&th, &at, spx__job_main, j) == 0;
      if (!started) atomic_fetch_sub(&spx__jobs_running, 1);
    }
    pthread_attr_destroy(&at);
  }
  if (!started) {
    spx__job_run(j);
    atomic_fetch_sub(&j->refs, 1); /* the thread's reference, never taken */
  }
  return j;
}

/* 1 once fn has returned. */
int spx__job_done(spx__job *j) {
  int d;
  pthread_mutex_lock(&j->mu);
  d = j->done;
  pthread_mutex_unlock(&j->mu);
  return d;
}

/* Waits until fn has returned; its status, with its message raised on this thread. */
spx_status spx__job_wait(spx__job *j) {
  spx_status s;
  pthread_mutex_lock(&j->mu);
  while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
  s = j->status;
  pthread_mutex_unlock(&j->mu);
  return s ? spx__fail(s, "%s", j->msg) : SPX_OK;
}

/* The owner lets go (NULL: nothing); a running job finishes on its own. */
void spx__job_release(spx__job *j) {
  if (j) spx__job_unref_(j);
}

/* ---- The tier switch ------------------------------------------------------------------------- */
int spx__tier_runnable(const spx__tier *t) {
  return t->state != SPX__TIER_NONE || spx__job_done(t->job);
}

spx_status spx__tier_settle(spx__tier *t, int wait, spx__tier_bind_fn bind, void *owner, const char *what) {
  spx_status s;
  if (t->state == SPX__TIER_FINAL || (!wait && !spx__job_done(t->job))) return SPX_OK;
  s = spx__job_wait(t->job);
  spx__job_release(t->job);
  t->job = NULL;
  if (!s) s = bind(owner, 1);
  if (s) {
    spx__warn("%s; keeping the generic %s kernel", spx_last_error(), what);
    spx_clear_error();
    s = t->state == SPX__TIER_NONE ? bind(owner, 0) : SPX_OK;
    t->fell_back = 1;
  }
  t->state = SPX__TIER_FINAL;
  return s;
}
