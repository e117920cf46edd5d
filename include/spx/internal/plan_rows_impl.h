/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan's matrix before the model (tuner.h): where it is profiled (the staging sizes), staged on
 * the device and profiled there (the row kernel, the column counts on a thread beside the upload),
 * staged while the host validates and profiles it beside the upload, or profiled on the host; the
 * share of the work the column counts may cost. It calls the staged arrays (stage_impl.h), the row
 * profile (plan_profile_impl.h), the model's column price (plan_model_impl.h) and the CSR checks. */
#include <pthread.h>
#include <stdatomic.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "config.h"
#include "dmatrix.h"
#include "host.h"
#include "tuner.h"
#include "../plan.h"

/* ---- Where the rows are profiled ------------------------------------------------------------- */
/* From this many nonzeros a CUDA plan profiles the rows and validates the CSR on the device: the
 * upload is one every plan of that matrix pays anyway (cuSPARSE's arrays too), and there the host
 * passes (validation, row statistics: a few ns a nonzero on a server's core) cost more than the
 * staged profile's kernels, its synchronization and its upload in two parts; below it they do not
 * (docs/performance.md: the crossover on the eval corpus's fit half). SPX_PLAN_DEVICE_PROFILE=0
 * keeps it all on the host. */
#define SPX__PLAN_STAGE_NNZ ((int64_t)1 << 17)
/* The staging size: SPX_PLAN_DEVICE_PROFILE=N (a whole number) moves it to N nonzeros, 0 turns the
 * device profile off (-1); unset or malformed leaves the default (measuring the crossover needs both). */
static int64_t spx__plan_stage_nnz(void) {
  const spx__env_num *e = &spx__cfg()->plan_device_profile;
  if (e->set != 1) return SPX__PLAN_STAGE_NNZ;
  return e->n == 0 ? -1 : (int64_t)e->n;
}
/* Below the staging size the host validates and profiles; from this many nonzeros a second thread
 * makes those passes while this one uploads the matrix (the upload every plan pays): under it
 * handing them over costs more than they do (docs/performance.md, "Host passes beside the
 * upload"). SPX_PLAN_UPLOAD_BESIDE=N moves it, 0 uploads after the passes (-1), in the build. */
#define SPX__PLAN_BESIDE_NNZ ((int64_t)1 << 14)
static int64_t spx__plan_beside_nnz(void) {
  const spx__env_num *e = &spx__cfg()->plan_upload_beside;
  if (e->set != 1) return SPX__PLAN_BESIDE_NNZ;
  return e->n == 0 ? -1 : (int64_t)e->n;
}
/* Whether a is profiled on the host beside its upload rather than on the device after it. */
int spx__plan_beside(const spx_csr *a) {
  const int64_t from = spx__plan_stage_nnz(), lo = spx__plan_beside_nnz();
  return lo >= 0 && a->nnz >= lo && (from < 0 || a->nnz < from);
}
/* Whether a plan of a stages it on the device before choosing (the device profile, or the host's
 * beside the upload); the CUDA backend and the staging's own needs are spx__plan_rows's to check. */
int spx__plan_stage_wanted(const spx_csr *a, const spx_plan_options *o) {
  const int64_t from = spx__plan_stage_nnz();
  return a && ((from >= 0 && a->nnz >= from) || spx__plan_beside(a)) && o->backend != SPX_BACKEND_HOST && !o->device &&
         o->strategy != SPX_PLAN_TRIAL;
}


/* ---- The matrix staged and profiled on the device -------------------------------------------- */
/* The column counts on a thread of their own, beside the staging upload, into a profile of their
 * own (the plan takes it only when complete). */
typedef struct spx__plan_cols_job {
  const spx_csr *a;
  spx__pprof p;
  spx_status s;
  double seconds;
  atomic_int stop, done;
} spx__plan_cols_job;

static void *spx__plan_cols_thread(void *arg) {
  spx__plan_cols_job *j = (spx__plan_cols_job *)arg;
  double t0 = spx__now();
  j->s = spx__pprof_columns(j->a, 1, &j->p, &j->stop);
  j->seconds = spx__now() - t0;
  atomic_store(&j->done, 1);
  return NULL;
}

/* Waits for the column job at most wait_ms past now (< 0: for as long as it takes), then stops it
 * and joins. The wait is what the column counts may cost once the upload is done. */
static void spx__plan_cols_join(pthread_t th, spx__plan_cols_job *j, double wait_ms) {
  const double end = spx__now() + 1e-3 * wait_ms;
  while (wait_ms >= 0 && !atomic_load(&j->done) && spx__now() < end) {
    struct timespec ts = {0, 20000L};
    nanosleep(&ts, NULL);
  }
  if (wait_ms >= 0) atomic_store(&j->stop, 1);
  pthread_join(th, NULL);
}

/* The row-length profile (rows: the column counts there stay) and p->an from analyze.cu's counters
 * r[9] and histogram hist (rows takes it) of the matrix of a's sizes (a's arrays are not read). */
void spx__plan_rows_of(spx_plan *p, const spx_csr *a, const uint64_t r[9], int64_t *hist, spx__pprof *rows) {
  rows->n = a->nrows; rows->ncols = a->ncols; rows->nnz = a->nnz;
  rows->row_max = (int64_t)r[1];
  rows->hist = hist;
  rows->ss_runs = (int64_t)r[4];
  rows->sorted_kept = (int64_t)r[5];
  rows->idle_row = (double)r[7];
  rows->idle_csr = (double)r[8];
  rows->tpr = spx__plan_tpr(a);
  memset(&p->an, 0, sizeof p->an);
  p->an.nrows = a->nrows; p->an.ncols = a->ncols; p->an.nnz = a->nnz;
  p->an.row_min = a->nrows ? (int64_t)r[2] : 0;
  p->an.row_max = (int64_t)r[1];
  p->an.empty_rows = (int64_t)r[3];
  spx__plan_rowstats_finish(a, (double)r[6], &p->an);
}

/* Stages a on the device (p->dc) and fills the row-length profile and p->an from analyze.cu's
 * counters. SPX_OK with *done 0: not staged (the caller profiles on the host). A malformed CSR
 * fails with spx_csr_validate's message. values: the values go up beside the pattern (a wrap
 * follows whatever the profile says). cols_wait_ms: the column counts are read beside the upload
 * and may take that long past it (< 0: as long as they take); what they cannot finish in that
 * time they leave undone (rows->cols_done 0, p->cols_stopped 1). */
static spx_status spx__plan_stage(spx_plan *p, const spx_csr *a, int columns, double cols_wait_ms, int values,
                                  spx__pprof *rows, int *done) {
  uint64_t r[9] = {0};
  int64_t *hist = NULL;
  double t0 = spx__now(), tj;
  const int tr = spx__plan_tracing();
  spx__plan_cols_job *job = NULL;
  pthread_t th;
  int threaded = 0;
  spx_status s;
  *done = 0;
  p->cols_stopped = 0;
  memset(rows, 0, sizeof *rows);
  /* The sampled column counts read only the host arrays: on a thread of their own (and the CPUs the
   * upload's pool leaves) while this one uploads. A plan forced to cuSPARSE reads no columns
   * (columns 0): the baseline pays what a cuSPARSE user pays. */
  if (columns && (job = (spx__plan_cols_job *)calloc(1, sizeof *job)) != NULL) {
    job->a = a;
    atomic_init(&job->stop, 0);
    atomic_init(&job->done, 0);
    threaded = pthread_create(&th, NULL, spx__plan_cols_thread, job) == 0;
  }
  s = spx__dcsr_stage(p->ctx, a, spx__plan_tpr(a), values, &p->dc, r, &hist, &p->stage_upload_s);
  tj = spx__now();
  if (threaded) spx__plan_cols_join(th, job, cols_wait_ms);
  else if (job) spx__plan_cols_thread(job);
  if (job && !job->s && !job->p.cols_done) p->cols_stopped = 1;
  if (tr)
    fprintf(stderr, "spx plan:   stage: alloc %.3f upload %.3f rows %.3f hist %.3f, columns (thread) %.3f%s, join wait %.3f ms\n",
            1e3 * p->dc.stage_s[0], 1e3 * p->dc.stage_s[1], 1e3 * p->dc.stage_s[2], 1e3 * p->dc.stage_s[3],
            job ? 1e3 * job->seconds : 0.0, p->cols_stopped ? " (stopped)" : "", 1e3 * (spx__now() - tj));
  if (job && !job->s && job->p.cols_done) *rows = job->p; /* the row fields follow */
  if (s || (job && job->s)) {
    spx__dcsr_free(&p->dc);
    SPX_FREE(hist);
    SPX_FREE(job);
    memset(rows, 0, sizeof *rows);
    p->stage_upload_s = 0;
    p->cols_stopped = 0;
    spx_clear_error(); /* no memory for the staging, say: the host path does the same job */
    return SPX_OK;
  }
  SPX_FREE(job);
  if (r[0] != ~0ull) {
    spx__dcsr_free(&p->dc);
    if ((s = spx_csr_validate(a))) return s;
    return spx__fail(SPX_INTERNAL, "the device profile found row %llu malformed and the host validation did not",
                     (unsigned long long)r[0]);
  }
  spx__plan_rows_of(p, a, r, hist, rows);
  p->an.seconds = spx__now() - t0;
  *done = 1;
  return SPX_OK;
}

#if defined(_OPENMP)
/* The host's passes of spx__plan_stage_beside: validation, then the row profile (the idle lanes
 * with idle); the status only, since a message would be the calling thread's. */
static spx_status spx__plan_beside_passes(const spx_csr *a, int warp, int idle, spx__pprof *rows, double *seconds) {
  double t0 = spx__now();
  spx_status s = spx_csr_validate(a);
  if (!s) s = spx__pprof_make(a, warp, idle ? 2 : 0, NULL, rows);
  if (s) spx_clear_error();
  *seconds = spx__now() - t0;
  return s;
}
#endif

/* Stages a (p->dc) while another thread validates it and profiles its rows on the host: the passes
 * a host-profiled plan makes, hidden behind the upload its build would make after them. Two of
 * OpenMP's threads, whose pool outlives the call (a thread started per plan takes longer to come
 * up than the passes take); the upload stays on this thread, whose CUDA context is set up, and the
 * passes' own loops run on their one thread (no nested team). A malformed CSR fails with
 * spx_csr_validate's message, nothing staged. SPX_OK with *done 0: not staged (no second thread, or
 * the staging failed: the caller profiles on the host, as without it). */
static spx_status spx__plan_stage_beside(spx_plan *p, const spx_csr *a, int warp, int idle, int values,
                                         spx__pprof *rows, int *done) {
  spx_status s = SPX_OK, sp = SPX_OK;
  double t0 = spx__now(), tu = 0, tp = 0;
  int two = 0;
  *done = 0;
  memset(rows, 0, sizeof *rows);
#if defined(_OPENMP)
  if (!omp_in_parallel() && omp_get_max_threads() >= 2) {
#pragma omp parallel num_threads(2)
    {
      if (omp_get_num_threads() == 2) {
        if (omp_get_thread_num() == 0) {
          two = 1;
          s = spx__dcsr_stage(p->ctx, a, spx__plan_tpr(a), values, &p->dc, NULL, NULL, &p->stage_upload_s);
          if (s) spx_clear_error(); /* no memory for the staging, say: the host path does the same job */
          tu = spx__now() - t0;
        } else {
          sp = spx__plan_beside_passes(a, warp, idle, rows, &tp);
        }
      }
    }
  }
#else
  (void)a; (void)warp; (void)idle; (void)values;
#endif
  if (!two) return SPX_OK;
  if (spx__plan_tracing())
    fprintf(stderr, "spx plan:   beside: upload %.3f ms, validate + rows (other thread) %.3f ms, both %.3f ms\n",
            1e3 * tu, 1e3 * tp, 1e3 * (spx__now() - t0));
  if (s || sp) {
    spx__dcsr_free(&p->dc);
    p->stage_upload_s = 0;
    spx__pprof_free(rows);
    memset(rows, 0, sizeof *rows);
    /* malformed: the message, made on this thread (else no memory for the profile: the host path) */
    return sp ? spx_csr_validate(a) : SPX_OK;
  }
  spx__plan_rowstats_of(a, rows, &p->an);
  p->an.seconds = tp;
  *done = 1;
  return SPX_OK;
}

/* Whether a staged plan's values go up beside its pattern: unless it is forced to a format converted
 * on the host, its build (a wrap, a device conversion), a race's start and its candidates read them
 * from the staged arrays, and one upload beside the pattern's (the profile's kernel runs while it
 * goes on) costs the caller what cuSPARSE's own upload does, where two in turn cost a pageable
 * upload's fixed part twice and the kernel's wait. Only while the pattern's arrays are small enough
 * for the context's pinned buffer: larger ones take the upload pool, which the values would hold,
 * and beside it they crawl through that buffer (docs/performance.md). A host-converted choice that
 * auto makes lets the arrays go before its upload, having paid one more. */
static int spx__plan_stage_values(const spx_plan_options *o, const spx_csr *a) {
  spx_format f;
  if ((size_t)a->nnz * 4 >= spx__h2d_min() || (size_t)(a->nrows + 1) * 8 >= spx__h2d_min()) return 0;
  if (!o->force || spx__plan_names_cusparse(o->force)) return 1;
  if (spx_format_from_name(o->force, &f) != SPX_OK) {
    spx_clear_error();
    return 0; /* not a format: spx__plan_forced names the problem */
  }
  return f == SPX_FORMAT_CSR || spx__plan_on_device(1, (int)f);
}

/* The share of the work the column counts may cost (< 0: read them always). The trial times every
 * candidate, so it reads them; a forced format whose prediction needs them reads them; the papers'
 * rules (ELL, JDS, CSR: row lengths alone) and a forced format that needs none read them only where
 * they pay, as auto does: a per-step plan (MPS) then skips a pass its choice never uses. A staged
 * plan has its sample from beside the upload. */
double spx__plan_cols_share(const spx_plan_options *o) {
  spx_format f;
  if (o->strategy == SPX_PLAN_TRIAL && !o->force) return -1.0;
  if (o->force && !spx__plan_names_cusparse(o->force)) {
    if (spx_format_from_name(o->force, &f) != SPX_OK) {
      spx_clear_error();
      return -1.0; /* not a format: spx__plan_forced names the problem */
    }
    if (spx__plan_reads_columns(f)) return -1.0;
  }
  return o->trial_share;
}

/* The row profile, staged on the device where the plan wants that (the device validates the CSR
 * there), else on the host (with the full validation spx__plan_check left to the device profile).
 * *profiled (when not NULL): rows, the model's row-length part (the device's, or the host's, with
 * p->an from its histogram: one pass over the rows for both); NULL: the row statistics alone. */
spx_status spx__plan_rows(spx_plan *p, const spx_csr *a0, const spx_csr *use, const spx_plan_options *o,
                          const spx_plan_device *dev, int columns, int values, spx__pprof *rows, spx__pprof **profiled) {
  const int want = spx__plan_stage_wanted(a0, o);
  int done = 0;
  spx_status s;
  if (profiled) *profiled = NULL;
  if (p->stage && p->backend == SPX_BACKEND_CUDA && dev->warp == 32 && want && spx__plan_beside(use)) {
    /* the idle lanes only where the model will price formats, as on the host below */
    if ((s = spx__plan_stage_beside(p, use, dev->warp, columns, values, rows, &done))) return s;
  } else if (p->stage && p->backend == SPX_BACKEND_CUDA && dev->warp == 32 && want) {
    /* the column counts may outlast the upload by what they may cost: beside a long upload they
     * come free, beside a short one they take at most that share of the work */
    const double share = spx__plan_cols_share(o);
    double wait_ms = -1;
    if (columns && share >= 0) {
      wait_ms = spx__plan_columns_budget_ms(use, dev, o->expected_calls, share);
      /* not started where even its price on every thread beside outlasts the pattern's upload and
       * the wait: stopping it late costs more than not starting */
      if (dev->h2d_gbs > 0 &&
          spx__plan_columns_ms(use, spx__pprof_beside_threads()) > 4.0 * (double)(use->nrows + 1 + use->nnz) / (dev->h2d_gbs * 1e6) + wait_ms)
        columns = 0;
    }
    if ((s = spx__plan_stage(p, use, columns, wait_ms, values, rows, &done))) return s;
  }
  if (done) {
    if (profiled) *profiled = rows;
    return SPX_OK;
  }
  if (want && (s = spx_csr_validate(a0))) return s;
  if (!profiled) {
    spx__plan_rowstats(use, &p->an);
    return SPX_OK;
  }
  /* the idle lanes only where the model will price formats (forced cuSPARSE reads the rows alone) */
  if ((s = spx__pprof_make(use, dev->warp, columns ? 2 : 0, NULL, rows))) return s;
  spx__plan_rowstats_of(use, rows, &p->an);
  *profiled = rows;
  return SPX_OK;
}

/* The row profile the model prices from (spx__plan_rows with the columns where it prices formats
 * and the values staged where the build will read them), and, on staged arrays, spx's CSR kernel
 * chosen from its histogram. */
spx_status spx__plan_profile(spx_plan *p, const spx_csr *a0, const spx_csr *use, const spx_plan_options *o,
                             const spx_plan_device *dev, spx__pprof *rows, spx__pprof **profiled) {
  spx_status s = spx__plan_rows(p, a0, use, o, dev, !spx__plan_names_cusparse(o->force), spx__plan_stage_values(o, use),
                                rows, profiled);
  if (!s && *profiled && rows->hist && p->dc.rp32)
    p->csr_staged = spx_csr_kernel_options(use->nrows, use->nnz, rows->hist, rows->row_max, &p->csr_opt) == SPX_OK;
  return s;
}
