/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan object (struct spx_plan, tuner.h): the strategies' names and the options' defaults,
 * the build of a chosen candidate (from the host CSR or the arrays staged on the device, with
 * cuSPARSE as the stand-in while a tiered kernel compiles) and of any other candidate, SpMV, wait,
 * destroy, the timing the trial and calibration use, the getters and print. It calls the model
 * (plan_model_impl.h), the device matrices and converters (cuda.h, dmatrix.h), the staged arrays
 * (stage_impl.h), cuSPARSE (baseline.h) and the race, this room's other file (plan_race_impl.h);
 * no strategy: what a plan runs was chosen above it. */
#include "common.h"
#include "dmatrix.h"
#include "tuner.h"
#include "../baseline.h"
#include "../cuda.h"
#include "../device.h"
#include "../loader.h"
#include "../plan.h"

/* ---- Strategy names, options ----------------------------------------------------------------- */
static const char *const spx__plan_snames[] = {
#define SPX__PS_NAME(e, name, what) name,
    SPX_PLAN_STRATEGIES(SPX__PS_NAME)
#undef SPX__PS_NAME
};
static const char *const spx__plan_sdescs[] = {
#define SPX__PS_DESC(e, name, what) what,
    SPX_PLAN_STRATEGIES(SPX__PS_DESC)
#undef SPX__PS_DESC
};

const char *spx_plan_strategy_name(spx_plan_strategy s) {
  return (int)s >= 0 && s < SPX_PLAN_STRATEGY_COUNT ? spx__plan_snames[s] : "unknown";
}
const char *spx_plan_strategy_description(spx_plan_strategy s) {
  return (int)s >= 0 && s < SPX_PLAN_STRATEGY_COUNT ? spx__plan_sdescs[s] : "";
}

int spx__plan_ieq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, y = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
    if (x != y) return 0;
  }
  return *a == *b;
}

/* A forced name that means the cuSPARSE engine (NULL: none forced). */
int spx__plan_names_cusparse(const char *name) {
  return name && (spx__plan_ieq(name, "cusparse") || spx__plan_ieq(name, "cusparse_csr"));
}

spx_status spx_plan_strategy_parse(const char *name, spx_plan_strategy *out) {
  int i;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_strategy_parse: NULL argument");
  for (i = 0; i < SPX_PLAN_STRATEGY_COUNT; i++)
    if (spx__plan_ieq(name, spx__plan_snames[i])) { *out = (spx_plan_strategy)i; return SPX_OK; }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown strategy \"%s\" (auto, kubota, mps, trial, model)", name);
}

void spx_plan_options_default(spx_plan_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->strategy = SPX_PLAN_AUTO;
  o->expected_calls = 1000;
  o->backend = SPX_BACKEND_AUTO;
  o->dtype = -1;
  o->trial_reps = 20;
  o->trial_share = 0.02;
  /* a trial only where the runner-up is predicted within 10% of the best: where the top two lie
   * further apart the model's choice has been the oracle's, and a trial there only costs
   * (docs/performance.md, "A trial inside a short solve") */
  o->trial_gap = 1.1;
  o->convert_margin = 0.05;
}

/* ---- Plans --------------------------------------------------------------------------------------- */
/* Lets go of the staged arrays: frees them, or forgets them where they are the parent plan's. While
 * a race runs its candidates still build from them: the race's end frees them then. A diagonal
 * still owed is taken from them first (they may be the last thing that can give it). */
static void spx__plan_drop_dc(spx_plan *p) {
  if (p->race) { p->dc_let_go = p->dc.ci != 0; return; }
  spx__plan_diag_take(p, NULL);
  if (p->dc_borrowed) memset(&p->dc, 0, sizeof p->dc);
  else spx__dcsr_free(&p->dc);
  p->dc_borrowed = 0;
}

/* Destroys what runs (the host start's kept copy included); the staged arrays stay. */
static void spx__plan_unrun(spx_plan *p) {
  spx_cusparse_plan_destroy(p->start); p->start = NULL;
  spx_dmatrix_destroy(p->dm); p->dm = NULL;
  spx_cusparse_plan_destroy(p->cs); p->cs = NULL;
  spx_fmt_destroy(p->fmt); p->fmt = NULL;
  p->race_csr = NULL;
  spx_csr_destroy(p->race_csr_own); p->race_csr_own = NULL;
}

void spx__plan_unbuild(spx_plan *p) {
  spx__plan_unrun(p);
  spx__plan_drop_dc(p);
  p->built = 0;
}

void spx__plan_release_dc(spx_plan *p) {
  if (!p->dc_let_go || p->race) return;
  p->dc_let_go = 0;
  spx__plan_drop_dc(p);
}

void spx__plan_take_build(spx_plan *p, spx_plan *q) {
  const int wraps = q->dc.ci != 0; /* q kept its loan of the staged arrays: it runs on them */
  spx__plan_unrun(p);
  p->dm = q->dm; p->cs = q->cs; p->fmt = q->fmt;
  q->dm = NULL; q->cs = NULL; q->fmt = NULL;
  p->start_keeps_dc = wraps;
  p->dc_let_go = !wraps && p->dc.ci;
  if (wraps) memset(&q->dc, 0, sizeof q->dc);
  p->built = 1;
}

/* Whether the plan builds from its staged device arrays (p->dc): cuSPARSE and spx's CSR kernel wrap
 * them, the device converters convert from them; every other build starts from the host CSR. The
 * one test for spx__plan_build_from's path and for a candidate's loan of its parent's arrays. */
int spx__plan_staged_as(const spx_plan *p, spx_format f, spx_plan_engine e) {
  if (p->backend != SPX_BACKEND_CUDA || !p->dc.ci || p->fmt) return 0;
  if (e == SPX_PLAN_ENGINE_CUSPARSE || (f == SPX_FORMAT_CSR && p->csr_staged)) return p->dc.rp32 != 0;
  return spx__plan_on_device(1, (int)f);
}

int spx__plan_staged(const spx_plan *p) { return spx__plan_staged_as(p, p->format, p->engine); }

/* Whether the plan keeps a host copy of the matrix (a lazy plan's, a race's): a test hook. */
int spx__plan_keeps_copy(const spx_plan *p) { return p && (p->a || (p->race && p->race->own)); }

/* ---- The diagonal ------------------------------------------------------------------------------
 * The solvers' Jacobi divides by it, most plans never read it: a staged plan owes it (want_ddiag)
 * and takes it when it is first asked for, or before the last thing that can give it goes, so that
 * spx_plan_create waits for neither a kernel nor a pass. It comes from the staged arrays once their
 * values are up (a kernel and an 8-byte-a-row download), else from a host copy (a pass). */
void spx__csr_diag_into(const spx_csr *a, double *out) {
  const int64_t n = SPX__MIN(a->nrows, a->ncols);
  int64_t i, k;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 8192) private(k) \
    num_threads(spx__host_threads_for(n, SPX__HOST_GRAIN)) if (n > 65536)
#endif
  for (i = 0; i < n; i++) {
    double d = 0;
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++)
      if (a->col_idx[k] >= i) {
        if (a->col_idx[k] == i) d = a->dtype == SPX_FLOAT ? (double)a->val.f[k] : a->val.d[k];
        break;
      }
    out[i] = d; /* every element written by its thread: first touch in parallel */
  }
}

int spx__plan_diag_staged(const spx_plan *p) { return p->dc.ci && p->dc.has_values && !p->dc.va_up; }

/* The host copy the plan keeps that can give the diagonal (the lazy copy, the race's), or NULL. */
static const spx_csr *spx__plan_diag_host(const spx_plan *p) {
  if (p->a) return p->a;
  if (p->race && p->race->a) return p->race->a;
  return p->race_csr;
}

int spx__plan_diag_can(const spx_plan *p) { return spx__plan_diag_staged(p) || spx__plan_diag_host(p); }

/* The diagonal into out from the staged arrays, else host: the kernel; where it fails (a compile, the
 * memory), the pass over host, or over the staged arrays downloaded. */
static spx_status spx__plan_diag_fill(const spx_plan *p, const spx_csr *host, double *out) {
  spx_csr *down = NULL;
  spx_status s;
  if (spx__plan_diag_staged(p)) {
    if (!spx__dcsr_diag(&p->dc, out)) return SPX_OK;
    spx_clear_error();
    if (!host) {
      if ((s = spx__dcsr_download(&p->dc, &down))) return s;
      host = down;
    }
  }
  if (!host) return spx__fail(SPX_INTERNAL, "the plan's diagonal was owed and nothing it kept can give it");
  spx__csr_diag_into(host, out);
  spx_csr_destroy(down);
  return SPX_OK;
}

void spx__plan_diag_take(spx_plan *p, const spx_csr *host) {
  const int64_t n = SPX__MIN(p->nrows, p->ncols);
  double t0 = spx__now();
  double *d;
  if (!p->want_ddiag || p->diag) { p->want_ddiag = 0; return; }
  if (p->dc.va_up && spx__dcsr_values_wait(&p->dc)) spx_clear_error(); /* then not from them */
  if (!host) host = spx__plan_diag_host(p);
  if (!spx__plan_diag_staged(p) && !host) return; /* a later source: the build's upload, say */
  if (!(d = (double *)spx__alloc((size_t)n + 1, sizeof *d))) return; /* stays owed */
  spx__advise_huge(d, ((size_t)n + 1) * sizeof *d); /* 2 MiB faults: most of a pass on 4 KiB pages */
  d[n] = 0;
  if (spx__plan_diag_fill(p, host, d)) {
    spx_clear_error();
    SPX_FREE(d);
    return;
  }
  p->diag = d;
  p->want_ddiag = 0;
  p->diag_ms += 1e3 * (spx__now() - t0);
  spx__conv_mark(spx__plan_tracing(), "plan", "diagonal", &t0);
}

/* Whether the context has cuSPARSE. */
int spx__plan_has_cusparse(const spx_plan *p) {
  spx_lib_status ls;
  if (p->backend != SPX_BACKEND_CUDA) return 0;
  spx_lib_status_get(SPX_LIB_CUSPARSE, &ls);
  return ls.loaded;
}

/* ---- Tiered JIT at the plan: nothing waits for NVRTC -----------------------------------------------
 * A tiered build (spx_dmatrix_options.tiered) never compiles in the caller's way: the dmatrix runs
 * its format's generic kernel while the specialized one compiles, or, with neither in the JIT
 * caches, has nothing to run. Then SpMVs go to cuSPARSE on the CSR staged for the device profile
 * (no compile, nothing copied: the values go up if they are not yet), and the first SpMV after the
 * compile ended moves to the chosen kernel. The staged CSR and the chosen format live side by side
 * meanwhile, so this start is taken only where both fit the memory limit. */
static int spx__plan_start_fits(const spx_plan *p, int64_t nnz) {
  const spx_plan_candidate *c = &p->cand[p->chosen];
  int64_t vb = (int64_t)SPX_DTYPE_SIZE(p->dtype);
  int64_t csr = 4 * (p->nrows + 1) + nnz * (4 + vb), vec = vb * (p->nrows + p->ncols);
  return p->limit <= 0 || c->bytes + csr + vec <= p->limit;
}

/* cuSPARSE on the staged arrays, wrapped (cuSPARSE does not copy them; their values up). */
static spx_status spx__plan_cusparse_dc(spx_plan *p, spx_cusparse_plan **out) {
  spx_cusparse_device_csr w;
  memset(&w, 0, sizeof w);
  w.nrows = p->dc.nrows; w.ncols = p->dc.ncols; w.nnz = p->dc.nnz; w.dtype = p->dc.dtype;
  w.row_ptr = p->dc.rp32; w.col_idx = p->dc.ci; w.val = p->dc.va;
  return spx_cusparse_plan_create_device_csr(p->ctx, &w, SPX_CUSPARSE_CSR_ALG1, NULL, out);
}

/* Starts SpMVs on cuSPARSE when the built dmatrix has no kernel yet: over the staged arrays, or,
 * where the matrix was not staged, over a CSR of its own uploaded from a (a second copy of the
 * pattern for the compile's duration, against a first SpMV that waits tens to hundreds of ms).
 * 1 when it did; any failure here only means no start (the first SpMV waits for the compile). */
static int spx__plan_start(spx_plan *p, const spx_csr *a) {
  const int staged = p->dc.ci && p->dc.rp32;
  size_t n;
  if (!p->tiered || p->race_cand || !p->dm || spx__dmatrix_runnable(p->dm) || (!staged && !a) || !spx__plan_has_cusparse(p) ||
      !spx__plan_start_fits(p, staged ? p->dc.nnz : a->nnz))
    return 0;
  if (staged) {
    if (spx__dcsr_values(&p->dc, a) || spx__plan_cusparse_dc(p, &p->start)) p->start = NULL;
  } else if (spx_cusparse_plan_create(p->ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &p->start)) {
    p->start = NULL;
  }
  if (!p->start) {
    spx_clear_error();
    return 0;
  }
  n = strlen(p->reason);
  snprintf(p->reason + n, sizeof p->reason - n, "; its kernel compiles in the background: cuSPARSE runs until then");
  return 1;
}

/* Ends the start once the dmatrix can run (wait: waits for its compile): SpMVs already queued on
 * cuSPARSE finish before its buffer and the staged arrays go. */
static spx_status spx__plan_start_end(spx_plan *p, int wait) {
  spx_status s;
  if (!p->start || (!wait && !spx__dmatrix_runnable(p->dm))) return SPX_OK;
  if ((s = spx_dmatrix_wait(p->dm)) || (s = spx_context_synchronize(p->ctx))) return s;
  spx_cusparse_plan_destroy(p->start);
  p->start = NULL;
  if (!p->start_keeps_dc) spx__plan_drop_dc(p);
  return SPX_OK;
}

spx_status spx__plan_wrap(spx_plan *p, const spx_csr *a, int cusparse, int tiered) {
  const int tr = spx__plan_tracing();
  double tm = spx__now();
  spx_status s;
  if ((s = spx__dcsr_values(&p->dc, a))) return s;
  spx__conv_mark(tr, "plan", "values", &tm);
  if (cusparse) {
    if ((s = spx__plan_cusparse_dc(p, &p->cs))) return s;
    spx__conv_mark(tr, "plan", "cusparse", &tm);
  } else {
    /* the staged arrays are a CSR already: spx's kernel wraps them, with the kernel the host rule
     * would pick */
    spx_dmatrix_options o = p->csr_opt;
    o.tiered = tiered;
    if ((s = spx_dmatrix_wrap_csr(p->ctx, p->dc.nrows, p->dc.ncols, p->dc.nnz, p->dc.rp32, p->dc.ci, p->dc.va,
                                  p->dc.dtype, &o, &p->dm)))
      return s;
    p->start_keeps_dc = 1;
    (void)spx__plan_start(p, a);
    spx__conv_mark(tr, "plan", "csr kernel", &tm);
  }
  p->built = 1;
  return SPX_OK;
}

/* The staged matrix's sizes as a CSR without arrays: what the device converters read of their host
 * argument when they take the staged arrays (cuda_impl.h), for a build with no host copy. */
static void spx__plan_sizes_of(const spx__dcsr *d, spx_csr *out) {
  memset(out, 0, sizeof *out);
  out->nrows = d->nrows; out->ncols = d->ncols; out->nnz = d->nnz; out->dtype = d->dtype;
}

/* The host CSR a host build reads: a, else the staged arrays downloaded into *tmp (the caller frees it). */
static spx_status spx__plan_host_src(spx_plan *p, const spx_csr *a, spx_csr **tmp, const spx_csr **out) {
  spx_status s;
  const int tr = spx__plan_tracing();
  double tm = spx__now();
  *out = a;
  if (a) return SPX_OK;
  if ((s = spx__dcsr_download(&p->dc, tmp))) return spx__wrap(s, "%s", spx_format_name(p->format));
  spx__conv_mark(tr, "plan", "download", &tm);
  *out = *tmp;
  return SPX_OK;
}

/* Converts the staged arrays to the plan's format on the device: no second upload (BSR with the
 * profile's block size). *done 0 with SPX_OK: the converter has no path for it (the host's job). */
static spx_status spx__plan_convert_staged(spx_plan *p, const spx_csr *a, const spx_dmatrix_options *dmo, int *done) {
  const int tr = spx__plan_tracing();
  double tm = spx__now();
  spx_csr sizes;
  spx_status s;
  *done = 0;
  /* first: it allocates va. The conversion reads the pattern while the values go up (it waits for
   * them before its fill). */
  if ((s = spx__dcsr_values_begin(&p->dc, a))) return s;
  spx__conv_mark(tr, "plan", "values start", &tm);
  spx__plan_sizes_of(&p->dc, &sizes);
  s = spx__dmatrix_convert_device(p->ctx, a ? a : &sizes, p->format, &p->params, dmo, &p->dc, &p->dm);
  spx__conv_mark(tr, "plan", "convert", &tm);
  if (!s && !p->dm) return SPX_OK;
  if (s || !spx__plan_start(p, a)) spx__plan_drop_dc(p); /* the diagonal first, when owed */
  spx__conv_mark(tr, "plan", "free staged", &tm);
  if (s) return s;
  p->built = *done = 1;
  return SPX_OK;
}

/* The choice from the host CSR a: cuSPARSE's own upload, a device converter's, or a host
 * conversion (uploaded on a GPU; the re-selection worker's may be done already). The staged arrays
 * stay only for a tiered build's start. */
static spx_status spx__plan_build_host(spx_plan *p, const spx_csr *a, const spx_dmatrix_options *dmo) {
  spx_status s;
  if (!p->tiered || p->engine == SPX_PLAN_ENGINE_CUSPARSE || !spx__plan_start_fits(p, p->dc.nnz)) spx__plan_drop_dc(p);
  if (p->engine == SPX_PLAN_ENGINE_CUSPARSE) {
    if ((s = spx_cusparse_plan_create(p->ctx, a, SPX_CUSPARSE_CSR_ALG1, NULL, &p->cs))) return s;
  } else {
    if (p->backend == SPX_BACKEND_CUDA && !p->fmt) {
      s = spx_dmatrix_convert(p->ctx, a, p->format, &p->params, dmo, &p->dm);
    } else {
      if (!p->fmt && (s = spx_fmt_from_csr(a, p->format, &p->params, &p->fmt))) return s;
      if (p->backend == SPX_BACKEND_CUDA) {
        s = spx_dmatrix_create(p->ctx, p->fmt, dmo, &p->dm);
        spx_fmt_destroy(p->fmt);
        p->fmt = NULL;
      }
    }
    if (s || !p->dm || !spx__plan_start(p, a)) spx__plan_drop_dc(p);
    if (s) return s;
  }
  p->built = 1;
  return SPX_OK;
}

spx_status spx__plan_build_from(spx_plan *p, const spx_csr *a) {
  spx_dmatrix_options dmo;
  spx_csr *tmp = NULL;
  const spx_csr *src;
  spx_status s;
  int j, done = 0;
  if (p->built) return SPX_OK;
  if ((j = spx__race_start_cand(p)) > -2) {
    if (!(s = spx__race_start(p, a, j))) return SPX_OK;
    /* no start (cuSPARSE's descriptor failed, say): the model's choice, as where none could start */
    spx__plan_unrun(p);
    p->start_keeps_dc = 0;
    spx_clear_error();
  }
  memset(&dmo, 0, sizeof dmo);
  dmo.tiered = p->tiered;
  /* where the plan has cuSPARSE on the staged arrays to start on, the generic CSR kernel (one
   * thread a row) would be the slower stand-in; a race candidate is timed on its own kernel only */
  if (p->tiered && (p->format == SPX_FORMAT_CSR || p->race_cand)) dmo.tiered = 2;
  if (spx__plan_staged(p)) {
    /* the staged arrays wrapped (they live as long as the plan), or converted on the device */
    if (p->engine == SPX_PLAN_ENGINE_CUSPARSE) return spx__plan_wrap(p, a, 1, 0);
    if (p->format == SPX_FORMAT_CSR && p->csr_staged) return spx__plan_wrap(p, a, 0, dmo.tiered);
    /* declined (done 0): the staged arrays stay until the host build has its matrix */
    if ((s = spx__plan_convert_staged(p, a, &dmo, &done)) || done) return s;
  }
  if ((s = spx__plan_host_src(p, a, &tmp, &src))) return s;
  s = spx__plan_build_host(p, src, &dmo);
  spx_csr_destroy(tmp);
  return s;
}

/* A plan for candidate i, built, in p's context (a NULL: from p's staged arrays, downloaded for a
 * host build). */
spx_status spx__plan_candidate(spx_plan *p, const spx_csr *a, int i, int race, spx_plan **out) {
  spx_plan *q = (spx_plan *)spx__calloc(1, sizeof *q);
  spx_csr *tmp = NULL;
  spx_status s;
  if (!q) return SPX_OUT_OF_MEMORY;
  q->ctx = p->ctx; q->backend = p->backend; q->dtype = p->dtype; q->nrows = p->nrows; q->ncols = p->ncols;
  q->format = p->cand[i].format; q->engine = p->cand[i].engine;
  q->params = p->params; /* the profile's choices (BSR's block) */
  q->tiered = race && p->tiered; /* a race's build never waits for NVRTC: it is timed once compiled */
  q->race_cand = race;
  q->dc = p->dc; /* on loan: the candidate builds from the staged arrays as the chosen plan would (a
                  * conversion there, or a wrap), so the trial costs what the model priced */
  q->csr_staged = p->csr_staged;
  q->csr_opt = p->csr_opt;
  if (spx__plan_staged(q)) {
    /* the values go up into p's arrays before the loan (build_from would allocate them in q's copy) */
    if ((s = spx__dcsr_values(&p->dc, a))) { memset(&q->dc, 0, sizeof q->dc); spx_plan_destroy(q); return s; }
    q->dc = p->dc;
    q->dc_borrowed = 1;
  } else {
    memset(&q->dc, 0, sizeof q->dc); /* a host build: nothing borrowed */
    if (!a && (s = spx__plan_host_src(p, a, &tmp, &a))) { spx_plan_destroy(q); return s; }
  }
  s = spx__plan_build_from(q, a);
  spx_csr_destroy(tmp);
  if (s) { spx_plan_destroy(q); return s; }
  *out = q;
  return SPX_OK;
}

spx_status spx__plan_fixed(spx_plan *p, const spx_csr *a, int i, spx_plan **out) {
  return spx__plan_candidate(p, a, i, 0, out);
}

/* A race ends first (synchronously), then the compile the plan waits for. */
spx_status spx_plan_wait(spx_plan *p) {
  spx_status s;
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_wait: NULL plan");
  if (p->race && !p->race->sync && (s = spx__race_end(p))) return s;
  if (!p->built) return SPX_OK;
  if (p->start) return spx__plan_start_end(p, 1);
  return p->dm ? spx_dmatrix_wait(p->dm) : SPX_OK;
}

const spx_dmatrix *spx_plan_dmatrix(const spx_plan *p) { return p && p->built ? p->dm : NULL; }

int spx_plan_compiling(const spx_plan *p) { return p && (p->start || spx_dmatrix_compiling(p->dm)); }

spx_status spx_plan_build(spx_plan *p) {
  spx_status s;
  double t0, d0;
  if (!p) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_build: NULL plan");
  if (p->built) return SPX_OK;
  /* a plan whose staged arrays hold the values (the caller's device arrays, or a lazy plan's
   * upload) builds from them (dc), with no host copy */
  if (!p->a && !(p->dc.ci && p->dc.has_values))
    return spx__fail(SPX_INTERNAL, "spx_plan_build: the plan lost its matrix");
  t0 = spx__now();
  d0 = p->diag_ms;
  if ((s = spx__plan_build_from(p, p->a))) { spx__plan_unbuild(p); return s; }
  p->build_ms = 1e3 * (spx__now() - t0) - (p->diag_ms - d0); /* the diagonal is neither's */
  if (!spx__race_adopt(p, p->a)) { /* a race's candidates build from it later */
    /* the copy goes: an owed diagonal from it first, unless the staged arrays stay to give it */
    if (!spx__plan_diag_staged(p)) spx__plan_diag_take(p, p->a);
    spx_csr_destroy(p->a);
  }
  p->a = NULL;
  return SPX_OK;
}

spx_status spx__plan_run(spx_plan *p, double alpha, const void *x, double beta, void *y) {
  spx_status s;
  if (p->race_csr) return spx_csr_spmv(p->race_csr, alpha, x, beta, y);
  if (p->start && (s = spx__plan_start_end(p, 0))) return s;
  if (p->start) return spx_cusparse_spmv(p->start, alpha, (spx_devptr)(uintptr_t)x, beta, (spx_devptr)(uintptr_t)y);
  if (p->cs) return spx_cusparse_spmv(p->cs, alpha, (spx_devptr)(uintptr_t)x, beta, (spx_devptr)(uintptr_t)y);
  if (p->dm) return spx_dmatrix_spmv(p->dm, alpha, (spx_devptr)(uintptr_t)x, beta, (spx_devptr)(uintptr_t)y);
  if (p->fmt) return spx_fmt_spmv(p->fmt, alpha, x, beta, y);
  return spx__fail(SPX_INTERNAL, "spx_plan_spmv: a built plan holds no matrix");
}

/* During a race the call runs on the candidate whose turn it is (plan_race_impl.h). */
spx_status spx_plan_spmv(spx_plan *p, double alpha, const void *x, double beta, void *y) {
  spx_status s;
  if (!p || !x || !y) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_spmv: NULL argument");
  if (!p->built && (s = spx_plan_build(p))) return s;
  return p->race ? spx__race_spmv(p, alpha, x, beta, y) : spx__plan_run(p, alpha, x, beta, y);
}

void spx_plan_destroy(spx_plan *p) {
  if (!p) return;
  p->want_ddiag = 0; /* nothing to take on the way out */
  spx__race_free(p); /* its candidates first: they borrow the staged arrays unbuild frees */
  spx__plan_unbuild(p);
  spx_csr_destroy(p->a);
  spx_csr_destroy(p->own_src);
  SPX_FREE(p->diag);
  if (p->own_ctx) spx_context_destroy(p->ctx);
  SPX_FREE(p);
}

int spx__plan_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* What a timing of `reps` samples of about sample_ms each takes, in ms, for a plan of `us` per
 * SpMV. On a GPU 4 SpMVs warm up and size the samples, then min(reps, 64) samples, each at least one
 * SpMV (so a fast kernel's timing costs far more than reps + 4 of its SpMVs, and auto must price
 * it so); on the host one warm-up and one SpMV a sample. */
double spx__plan_time_ms(int cuda, double us, int reps, double sample_ms) {
  const int ns = reps < 64 ? reps : 64;
  const double sample_us = 1e3 * sample_ms;
  return cuda ? 1e-3 * (4 * us + ns * (us > sample_us ? us : sample_us)) : 1e-3 * (1 + ns) * us;
}

spx_status spx_plan_time(spx_plan *p, int reps, double *us) {
  return spx__plan_time_sampled(p, reps, SPX__PLAN_SAMPLE_MS, us);
}

spx_status spx__plan_time_sampled(spx_plan *p, int reps, double sample_ms, double *us) {
  double samples[64], ms = 0, t0;
  int64_t vs, i;
  int k, inner = 1, ns;
  spx_status s;
  if (!p || !us || reps < 1) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_time: NULL argument or reps < 1");
  if ((!p->built && (s = spx_plan_build(p))) || (s = spx_plan_wait(p))) return s;
  ns = reps < 64 ? reps : 64;
  vs = (int64_t)SPX_DTYPE_SIZE(p->dtype);
  if (p->backend == SPX_BACKEND_CUDA) {
    spx_devptr x = 0, y = 0;
    spx_timer *t = NULL;
    /* x: every byte 0x3f, a finite normal value in float (0.747) and double (3.0e-4), set on the
     * device: a host fill and upload of x cost a trial more than its SpMVs on large matrices */
    if (!(s = spx_device_alloc(p->ctx, (size_t)((p->ncols + 1) * vs), &x)) &&
        !(s = spx_device_alloc(p->ctx, (size_t)((p->nrows + 1) * vs), &y)) &&
        !(s = spx_device_memset(p->ctx, x, 0x3f, (size_t)(p->ncols * vs))) && !(s = spx_timer_create(p->ctx, &t))) {
      const void *vx = (const void *)(uintptr_t)x;
      void *vy = (void *)(uintptr_t)y;
      for (k = 0; k < 3 && !s; k++) s = spx_plan_spmv(p, 1.0, vx, 0.0, vy);
      if (!s && !(s = spx_timer_start(t)) && !(s = spx_plan_spmv(p, 1.0, vx, 0.0, vy)) && !(s = spx_timer_stop(t, &ms))) {
        inner = ms > 0 ? (int)(sample_ms / ms) : 1000; /* samples of about sample_ms */
        inner = inner < 1 ? 1 : inner > 1000 ? 1000 : inner;
        for (k = 0; k < ns && !s; k++) {
          if ((s = spx_timer_start(t))) break;
          for (i = 0; i < inner && !s; i++) s = spx_plan_spmv(p, 1.0, vx, 0.0, vy);
          if (!s && !(s = spx_timer_stop(t, &ms))) samples[k] = 1e3 * ms / inner;
        }
      }
    }
    spx_timer_destroy(t);
    spx_device_free(p->ctx, x);
    spx_device_free(p->ctx, y);
  } else {
    void *hx = spx__alloc((size_t)p->ncols + 1, (size_t)vs), *hy = spx__alloc((size_t)p->nrows + 1, (size_t)vs);
    s = hx && hy ? SPX_OK : SPX_OUT_OF_MEMORY;
    for (i = 0; !s && i < p->ncols; i++) {
      if (p->dtype == SPX_FLOAT) ((float *)hx)[i] = 0.5f + (float)(i % 7) * 0.1f;
      else ((double *)hx)[i] = 0.5 + (double)(i % 7) * 0.1;
    }
    if (!s) s = spx_plan_spmv(p, 1.0, hx, 0.0, hy); /* warm-up */
    for (k = 0; k < ns && !s; k++) {
      t0 = spx__now();
      s = spx_plan_spmv(p, 1.0, hx, 0.0, hy);
      samples[k] = 1e6 * (spx__now() - t0);
    }
    SPX_FREE(hx);
    SPX_FREE(hy);
  }
  if (s) return s;
  qsort(samples, (size_t)ns, sizeof *samples, spx__plan_cmp);
  *us = samples[ns / 2];
  return SPX_OK;
}

spx_format spx_plan_format(const spx_plan *p) { return p ? p->format : SPX_FORMAT_COUNT; }
spx_plan_engine spx_plan_engine_of(const spx_plan *p) { return p ? p->engine : SPX_PLAN_ENGINE_SPX; }
spx_plan_strategy spx_plan_strategy_of(const spx_plan *p) { return p ? p->strategy : SPX_PLAN_STRATEGY_COUNT; }
spx_backend spx_plan_backend(const spx_plan *p) { return p ? p->backend : SPX_BACKEND_HOST; }
spx_dtype spx_plan_dtype(const spx_plan *p) { return p ? p->dtype : SPX_DOUBLE; }
const spx_format_params *spx_plan_params(const spx_plan *p) { return p ? &p->params : NULL; }
double spx_plan_predicted_us(const spx_plan *p) { return p ? p->cand[p->chosen].predicted_us : -1; }
double spx_plan_convert_ms(const spx_plan *p) { return p ? p->cand[p->chosen].convert_ms : -1; }
double spx_plan_select_ms(const spx_plan *p) { return p ? p->select_ms : -1; }
const char *spx_plan_reason(const spx_plan *p) { return p ? p->reason : ""; }
const spx_analysis *spx_plan_analysis(const spx_plan *p) { return p ? &p->an : NULL; }
spx_context *spx_plan_context(const spx_plan *p) { return p ? p->ctx : NULL; }
int64_t spx_plan_nrows(const spx_plan *p) { return p ? p->nrows : 0; }
/* The caller's arrays stay in dc while anything may read them (a wrap, a build, a race, a start, a
 * pending upgrade); letting go of them zeroes dc. */
int spx_plan_holds_dcsr(const spx_plan *p) { return p && p->dc.caller && p->dc.ci; }
int64_t spx_plan_ncols(const spx_plan *p) { return p ? p->ncols : 0; }
/* The matrix arrays staged on the device during the choice are the build's input (a cuSPARSE
 * plan's own arrays, the device converters'): their allocation and upload count here. */
double spx_plan_build_ms(const spx_plan *p) { return p && p->built && p->build_ms > 0 ? p->build_ms + 1e3 * p->stage_upload_s : 0; }
/* The plan's diagonal without a copy (the GPU solver uploads it as it is); NULL: none kept. */
const double *spx__plan_diag_kept(spx_plan *p) {
  if (!p) return NULL;
  spx__plan_diag_take(p, NULL);
  return p->diag;
}

/* An owed diagonal is filled into out from what the plan keeps, and stays owed: the plan is const. */
spx_status spx_plan_diagonal(const spx_plan *p, double *out) {
  spx_status s;
  if (!p || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_diagonal: NULL argument");
  if (!p->diag && p->want_ddiag) {
    if ((s = spx__plan_diag_fill(p, spx__plan_diag_host(p), out))) return spx__wrap(s, "spx_plan_diagonal");
    return SPX_OK;
  }
  if (!p->diag)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_diagonal: the plan kept no diagonal (made with options.no_diagonal)");
  memcpy(out, p->diag, (size_t)SPX__MIN(p->nrows, p->ncols) * sizeof *out);
  return SPX_OK;
}
int64_t spx_plan_bytes(const spx_plan *p) {
  if (!p) return 0;
  if (p->dm) return spx_dmatrix_bytes(p->dm);
  if (p->cs) { /* a cuSPARSE plan wrapping the staged CSR owns none of its arrays: count what it reads */
    int64_t b = spx_cusparse_plan_device_bytes(p->cs);
    if (p->dc.rp32 && p->dc.ci && p->dc.va)
      b += 4 * (p->dc.nrows + 1) + p->dc.nnz * (4 + (int64_t)SPX_DTYPE_SIZE(p->dc.dtype));
    return b;
  }
  if (p->fmt) return spx_fmt_bytes(p->fmt);
  return p->cand[p->chosen].bytes;
}
const spx_plan_candidate *spx_plan_candidates(const spx_plan *p, int *n) {
  if (n) *n = p ? p->ncand : 0;
  return p ? p->cand : NULL;
}

static void spx__plan_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

/* `, "key": v`, or null where v is not a time (negative: not modelled, not timed). */
static void spx__plan_json_time(FILE *f, const char *key, double v) {
  if (v >= 0 && v <= 1e300) fprintf(f, ", \"%s\": %.6g", key, v);
  else fprintf(f, ", \"%s\": null", key);
}

spx_status spx_plan_print(const spx_plan *p, FILE *f, int json) {
  int i;
  if (!p || !f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_plan_print: NULL argument");
  if (json) {
    fprintf(f, "{\"strategy\": \"%s\", \"backend\": \"%s\", \"format\": \"%s\", \"engine\": \"%s\", \"dtype\": \"%s\", "
               "\"predicted_us\": %.6g, \"convert_ms\": %.6g, \"select_ms\": %.6g, \"B\": %.6g, \"R\": %.6g, \"reason\": ",
            spx_plan_strategy_name(p->strategy), p->backend == SPX_BACKEND_CUDA ? "cuda" : "host",
            spx_format_name(p->format), p->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cusparse" : "spx",
            spx_dtype_name(p->dtype), spx_plan_predicted_us(p), spx_plan_convert_ms(p), p->select_ms, p->an.B, p->an.R);
    spx__plan_json_str(f, p->reason);
    fprintf(f, ", \"racing\": %d, \"candidates\": [", spx_plan_racing(p, NULL));
    for (i = 0; i < p->ncand; i++) {
      const spx_plan_candidate *c = &p->cand[i];
      /* what is not known (a declined format's bytes and times, an untimed candidate) is null */
      fprintf(f, "%s{\"name\": \"%s\", \"bytes\": ", i ? ", " : "", spx__plan_cname(c));
      if (c->bytes >= 0) fprintf(f, "%lld", (long long)c->bytes);
      else fputs("null", f);
      fprintf(f, ", \"bytes_exact\": %d, \"fits\": %d, \"padding\": %.4g, \"idle\": %.4g", c->bytes_exact, c->fits,
              c->padding, c->idle);
      spx__plan_json_time(f, "predicted_us", c->predicted_us);
      spx__plan_json_time(f, "stream_us", c->stream_us);
      spx__plan_json_time(f, "chain_us", c->chain_us);
      spx__plan_json_time(f, "convert_ms", c->convert_ms);
      spx__plan_json_time(f, "score_us", c->score_us);
      spx__plan_json_time(f, "measured_us", c->measured_us);
      fputs(", \"note\": ", f);
      spx__plan_json_str(f, c->note);
      fputc('}', f);
    }
    fprintf(f, "]}\n");
  } else {
    fprintf(f, "strategy    %s\nbackend     %s\nformat      %s%s (%s)\npredicted   %.4g us/SpMV, conversion %.4g ms, selection %.4g ms\nreason      %s\n",
            spx_plan_strategy_name(p->strategy), p->backend == SPX_BACKEND_CUDA ? "cuda" : "host",
            p->engine == SPX_PLAN_ENGINE_CUSPARSE ? "cuSPARSE " : "", spx_format_name(p->format), spx_dtype_name(p->dtype),
            spx_plan_predicted_us(p), spx_plan_convert_ms(p), p->select_ms, p->reason);
    if (p->race) {
      spx_plan_race_info ri;
      (void)spx_plan_racing(p, &ri);
      fprintf(f, "race        running on the SpMVs: %d of %d candidates timed, %d dropped, %lld SpMVs so far\n",
              ri.measured, ri.candidates, ri.dropped, (long long)ri.calls);
    }
  }
  return ferror(f) ? spx__fail(SPX_IO, "spx_plan_print: write failed") : SPX_OK;
}
