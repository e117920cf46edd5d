/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/dist.h, its file room: spx_dist_read_mm, a Matrix Market file read by every
 * rank. Rank 0 reads the header (mm_input_impl.h's spx__mm_head, the serial reader's checks and
 * messages) and tells the others what the file is. A plain coordinate file is then read in
 * parallel:
 *   1. each rank reads its share of the bytes after the size line, from the first line that starts
 *      in it to the first line that starts in the next rank's share (so every line is read by the
 *      rank whose share holds its first byte, and by no other);
 *   2. the ranks count their lines and entries (MPI_Allgather), so that each knows the file's line
 *      number of its first line and how many entries come before it: errors name the file's line,
 *      as spx_mm_read's do, and an entry past the size line's count is found where it is;
 *   3. each rank parses its lines (mm_parse_impl.h's slice parser; symmetric files mirrored);
 *   4. the row split: rank 0's options.row_start, else spx__dist_balance's split of the global CSR,
 *      found from two reductions of per-row entry counts (below), never from an n-sized one;
 *   5. the entries go to their rows' owners (MPI_Alltoallv), listed ones before mirrored ones, each
 *      in file order, which is the order spx__mm_read_text gives spx_csr_from_coo: so duplicates
 *      sum in the same order, and each rank's rows are the serial read's rows, bit for bit.
 * Anything else (gzip, which cannot be read from the middle; a pipe; an array file, whose entries
 * are placed by their position; options.partition = metis, which needs the whole graph on one
 * rank) is read by rank 0 and scattered. */
#include <errno.h>
#include <limits.h>
#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>
#define SPX__DIST_MM_POSIX 1
#else
#define SPX__DIST_MM_POSIX 0
#endif
#include "common.h"
#include "mm_text.h"
#include "../csr.h"
#include "../mm.h"
#include "../dist.h"
#include "dist_matrix.h"

/* What rank 0 tells the others about the file. */
typedef struct spx__dist_mm_file {
  spx__mm_hdr h;
  uint64_t size;  /* bytes */
  int plain;      /* a plain regular file, read in parallel; else rank 0 reads it */
} spx__dist_mm_file;

/* ---- 1. This rank's lines --------------------------------------------------------------------- */
#if SPX__DIST_MM_POSIX
/* bytes [at, at + n) of the file: all of them, or SPX_IO (a file that shrank while it was read). */
static spx_status spx__dist_mm_pread(int fd, char *b, size_t n, uint64_t at, const char *path) {
  while (n) {
    ssize_t got = pread(fd, b, SPX__MIN(n, (size_t)1 << 30), (off_t)at);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return spx__fail(SPX_IO, "%s: read error: %s", path, strerror(errno));
    if (got == 0) return spx__fail(SPX_IO, "%s: the file shrank while it was being read", path);
    b += got;
    n -= (size_t)got;
    at += (uint64_t)got;
  }
  return SPX_OK;
}

/* The first line start at or after from (from >= 1: the byte before it is looked at), or size. */
static spx_status spx__dist_mm_line_start(int fd, uint64_t from, uint64_t size, const char *path, uint64_t *at) {
  char buf[1 << 14];
  uint64_t p = from - 1;
  spx_status st;
  while (p < size) {
    size_t n = (size_t)SPX__MIN((uint64_t)sizeof buf, size - p);
    const char *nl;
    if ((st = spx__dist_mm_pread(fd, buf, n, p, path))) return st;
    if ((nl = (const char *)memchr(buf, '\n', n))) {
      *at = p + (uint64_t)(nl - buf) + 1;
      return SPX_OK;
    }
    p += n;
  }
  *at = size;
  return SPX_OK;
}

/* Rank r's share of the data bytes [data, size) is [data + len r / P, data + len (r + 1) / P); its
 * lines run from the first line start in its share to the first in the next share. The text ends
 * in '\n' (one is added after a last line without it) or is empty. */
static spx_status spx__dist_mm_lines(const char *path, const spx__dist_mm_file *f, int r, int P, char **text,
                                     size_t *n) {
  const uint64_t data = (uint64_t)f->h.data, len = f->size > data ? f->size - data : 0;
  const uint64_t b = data + len / (uint64_t)P * (uint64_t)r + len % (uint64_t)P * (uint64_t)r / (uint64_t)P;
  const uint64_t e = data + len / (uint64_t)P * (uint64_t)(r + 1) + len % (uint64_t)P * (uint64_t)(r + 1) / (uint64_t)P;
  uint64_t s = 0, t = 0;
  spx_status st;
  int fd;
  *text = NULL;
  *n = 0;
  if (!len) return SPX_OK;
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return spx__fail(SPX_IO, "%s: cannot open: %s", path, strerror(errno));
  t = f->size; /* the last rank reads to the end */
  st = spx__dist_mm_line_start(fd, b, f->size, path, &s);
  if (!st && r < P - 1) st = spx__dist_mm_line_start(fd, e, f->size, path, &t);
  if (!st && s < t) {
    if (!(*text = (char *)spx__alloc((size_t)(t - s) + 1, 1))) st = SPX_OUT_OF_MEMORY;
    else if (!(st = spx__dist_mm_pread(fd, *text, (size_t)(t - s), s, path))) {
      *n = (size_t)(t - s);
      if ((*text)[*n - 1] != '\n') (*text)[(*n)++] = '\n';
    }
  }
  close(fd);
  if (st) {
    SPX_FREE(*text);
    *n = 0;
  }
  return st;
}
#else
static spx_status spx__dist_mm_lines(const char *path, const spx__dist_mm_file *f, int r, int P, char **text,
                                     size_t *n) {
  (void)f; (void)r; (void)P; (void)text; (void)n; /* spx__mm_head never says plain here */
  return spx__fail(SPX_INTERNAL, "%s: no parallel read on this system", path);
}
#endif

/* ---- 2, 3. Counted, placed, parsed ------------------------------------------------------------- */
/* As spx__dist_agree, but every rank, a failing one too, ends with the first failing rank's status
 * and sentence: the file's first error is the one to report, and a later one may be its consequence
 * (every entry past the size line's count is one too many). */
static spx_status spx__dist_mm_agree(const spx_dist_matrix *d, spx_status st) {
  int mine = st ? d->rank : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, d->comm);
  if (first == INT_MAX) return SPX_OK;
  return spx__dist_spread(d->comm, d->rank, first, d->rank == first ? st : SPX_OK, spx_last_error());
}

/* This rank's entries; *total the file's (every rank gets the same). Collective; agreed. */
static spx_status spx__dist_mm_parse(spx_dist_matrix *d, const char *path, spx_dtype dtype, const spx__dist_mm_file *f,
                                     spx__mm_slice *sl, int64_t *total, int64_t *lines) {
  char *text = NULL;
  const char *tb;
  size_t n = 0;
  int64_t mine[2] = {0, 0}, *all, line0 = f->h.data_line, k0 = 0;
  spx_status st = spx__dist_mm_lines(path, f, d->rank, d->size, &text, &n);
  int q;
  tb = text ? text : ""; /* no lines: an empty text, not a null pointer */
  *total = *lines = 0;
  all = (int64_t *)spx__alloc(2 * (size_t)d->size, sizeof(int64_t));
  if (!all && !st) st = SPX_OUT_OF_MEMORY;
  if (!st) spx__mm_slice_count(tb, tb + n, &mine[0], &mine[1]);
  if (!(st = spx__dist_agree(d, st))) {
    MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, d->comm);
    for (q = 0; q < d->size; q++) {
      if (q < d->rank) {
        line0 += all[2 * q];
        k0 += all[2 * q + 1];
      }
      *lines += all[2 * q];
      *total += all[2 * q + 1];
    }
    st = spx__mm_slice_parse(&f->h, path, tb, tb + n, line0, k0, mine[1], dtype, sl);
    st = spx__dist_mm_agree(d, st); /* the lowest rank's error: the first in the file */
  }
  SPX_FREE(text);
  SPX_FREE(all);
  return st;
}

/* ---- 4. The row split ---------------------------------------------------------------------------
 * spx__dist_balance's rule: rank r starts at the first row i whose preceding weight W(i) (entries
 * in rows before i, plus i) reaches r/P of the total. W is known here only as each rank's parsed
 * entries, so it is found in two reductions: entry counts per bucket of s rows (n/s buckets) give
 * W at every bucket's start, hence the bucket each rank's first row lies in; then entry counts per
 * row of those buckets only ((P - 1) s rows) give the row. With s = sqrt(n/P) both reductions are
 * about sqrt(n P) numbers. W counts the entries the file lists: duplicates (which the CSR sums)
 * weigh twice here, the only way the split can differ from the scatter's. */
static int64_t spx__dist_mm_find(const int64_t *u, int64_t nu, int64_t b) { /* b's index in ascending u, or -1 */
  int64_t lo = 0, hi = nu;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (u[mid] < b) lo = mid + 1;
    else hi = mid;
  }
  return lo < nu && u[lo] == b ? lo : -1;
}

static spx_status spx__dist_mm_balance(spx_dist_matrix *d, const spx__mm_slice *sl) {
  const int P = d->size;
  const int64_t n = d->n, m = sl->listed + sl->mirrored;
  const int64_t s = SPX__MAX((int64_t)1, (int64_t)spx__sqrt((double)n / P)), nb = (n + s - 1) / s;
  int64_t *pre = (int64_t *)spx__calloc((size_t)nb + 1, sizeof(int64_t)), *u = NULL, *c2 = NULL;
  int64_t nu = 0, k, b;
  double total;
  int r;
  spx_status st = pre ? SPX_OK : SPX_OUT_OF_MEMORY;
  if (!st && !(u = (int64_t *)spx__alloc((size_t)P, sizeof(int64_t)))) st = SPX_OUT_OF_MEMORY;
  if (!st && !(c2 = (int64_t *)spx__calloc((size_t)(P - 1) * (size_t)s + 1, sizeof(int64_t)))) st = SPX_OUT_OF_MEMORY;
  if ((st = spx__dist_agree(d, st))) goto done;
  for (k = 0; k < m; k++) pre[sl->ri[k] / s + 1]++;
  MPI_Allreduce(MPI_IN_PLACE, pre + 1, (int)nb, MPI_INT64_T, MPI_SUM, d->comm);
  for (b = 0; b < nb; b++) pre[b + 1] += pre[b]; /* pre[b]: entries in the rows before bucket b */
  total = (double)(pre[nb] + n);
  d->row_start[0] = 0;
  d->row_start[P] = n;
  for (r = 1; r < P; r++) { /* the first bucket start with W >= target; the row lies in the bucket before */
    const double target = total * r / P;
    int64_t lo = 0, hi = nb;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if ((double)(pre[mid] + mid * s) < target) lo = mid + 1;
      else hi = mid;
    }
    d->row_start[r] = lo; /* a bucket for now */
    if (lo > 0 && (nu == 0 || u[nu - 1] != lo - 1)) u[nu++] = lo - 1;
  }
  for (k = 0; k < m; k++) {
    int64_t j = spx__dist_mm_find(u, nu, sl->ri[k] / s);
    if (j >= 0) c2[j * s + sl->ri[k] % s]++;
  }
  MPI_Allreduce(MPI_IN_PLACE, c2, (int)(nu * s), MPI_INT64_T, MPI_SUM, d->comm);
  for (r = 1; r < P; r++) {
    const double target = total * r / P;
    int64_t bk = d->row_start[r], i, w, j, end;
    if (bk == 0) { /* W(0) = 0 already reaches the target (an empty matrix) */
      d->row_start[r] = d->row_start[r - 1];
      continue;
    }
    j = spx__dist_mm_find(u, nu, bk - 1);
    i = (bk - 1) * s;
    w = pre[bk - 1] + i;
    end = SPX__MIN(bk * s, n);
    while (i < end && (double)w < target) w += c2[j * s + (i - (bk - 1) * s)] + 1, i++;
    d->row_start[r] = SPX__MAX(i, d->row_start[r - 1]);
  }
done:
  SPX_FREE(pre);
  SPX_FREE(u);
  SPX_FREE(c2);
  return st;
}

/* d->row_start: rank 0's options.row_start (checked there, then broadcast), else the balance. */
static spx_status spx__dist_mm_rows(spx_dist_matrix *d, const spx_dist_options *o, const spx__mm_slice *sl) {
  int64_t given = 0;
  spx_status st = SPX_OK;
  if (!(d->row_start = (int64_t *)spx__calloc((size_t)d->size + 1, sizeof(int64_t)))) st = SPX_OUT_OF_MEMORY;
  if (!st && d->rank == 0 && o->row_start) {
    given = 1;
    if (!(st = spx__dist_check_row_start(o->row_start, d->size, d->n, "spx_dist_read_mm")))
      memcpy(d->row_start, o->row_start, ((size_t)d->size + 1) * sizeof(int64_t));
  }
  if ((st = spx__dist_agree(d, st))) return st;
  MPI_Bcast(&given, 1, MPI_INT64_T, 0, d->comm);
  if (!given) return spx__dist_mm_balance(d, sl);
  MPI_Bcast(d->row_start, d->size + 1, MPI_INT64_T, 0, d->comm);
  return SPX_OK;
}

/* ---- 5. The entries to their owners ------------------------------------------------------------ */
static int spx__dist_mm_owner(const spx_dist_matrix *d, int32_t row) { /* the last q with row_start[q] <= row */
  int lo = 0, hi = d->size - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (d->row_start[mid] <= row) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* The MPI_Alltoallv tables of both phases (0: listed entries, 1: mirrored ones): counts and
 * offsets to send (sc, sd) and to receive (rc, rd), each 2 P (phase ph's at ph P). Sent entries are
 * grouped by phase, then by rank; received ones likewise, so that all listed entries come first.
 * MPI's counts and offsets are int: a rank sending or receiving 2^31 entries or more is refused. */
static spx_status spx__dist_mm_tables(spx_dist_matrix *d, const spx__mm_slice *sl, int *sc, int *sd, int *rc, int *rd) {
  const int P = d->size;
  int *t = (int *)spx__calloc(4 * (size_t)P, sizeof(int)), q, ph;
  int64_t k, at = 0, rt = 0;
  spx_status st = t ? SPX_OK : SPX_OUT_OF_MEMORY;
  if (!st && sl->listed + sl->mirrored > INT_MAX)
    st = spx__fail(SPX_UNSUPPORTED, "spx_dist_read_mm: rank %d parsed %lld entries, more than MPI's counts reach "
                   "(2^31 - 1): use more ranks", d->rank, (long long)(sl->listed + sl->mirrored));
  for (k = 0; !st && k < sl->listed + sl->mirrored; k++) t[2 * spx__dist_mm_owner(d, sl->ri[k]) + (k >= sl->listed)]++;
  if ((st = spx__dist_agree(d, st))) {
    SPX_FREE(t);
    return st;
  }
  MPI_Alltoall(t, 2, MPI_INT, t + 2 * P, 2, MPI_INT, d->comm);
  for (ph = 0; ph < 2; ph++)
    for (q = 0; q < P; q++) {
      sc[ph * P + q] = t[2 * q + ph];
      rc[ph * P + q] = t[2 * P + 2 * q + ph];
      sd[ph * P + q] = (int)at;
      rd[ph * P + q] = (int)SPX__MIN(rt, (int64_t)INT_MAX);
      at += sc[ph * P + q];
      rt += rc[ph * P + q];
    }
  SPX_FREE(t);
  if (rt > INT_MAX)
    st = spx__fail(SPX_UNSUPPORTED, "spx_dist_read_mm: rank %d's rows hold %lld entries, more than MPI's counts "
                   "reach (2^31 - 1): use more ranks", d->rank, (long long)rt);
  return spx__dist_agree(d, st);
}

/* This rank's rows (global columns) from every rank's entries; sl is freed once packed (so the
 * entries are held twice at most, not three times). Collective; agreed. */
static spx_status spx__dist_mm_exchange(spx_dist_matrix *d, spx__mm_slice *sl, spx_csr **rows) {
  const int P = d->size;
  const int64_t m = sl->listed + sl->mirrored;
  int *sc = (int *)spx__alloc(8 * (size_t)P, sizeof(int)), *sd, *rc, *rd;
  int32_t *si = NULL, *sj = NULL, *ri = NULL, *rj = NULL;
  double *sv = NULL, *rv = NULL;
  int64_t k, nr = 0, *cur = NULL;
  int ph, q;
  spx_status st;
  *rows = NULL;
  if (P == 1) { /* the entries are this rank's, in order already: no copies */
    SPX_FREE(sc);
    st = spx_csr_from_coo(d->nlocal, d->n, m, sl->ri, sl->ci, sl->v, d->dtype, rows);
    spx__mm_slice_free(sl);
    return spx__dist_agree(d, st);
  }
  if ((st = spx__dist_agree(d, sc ? SPX_OK : SPX_OUT_OF_MEMORY))) return st;
  sd = sc + 2 * P;
  rc = sc + 4 * P;
  rd = sc + 6 * P;
  if ((st = spx__dist_mm_tables(d, sl, sc, sd, rc, rd))) {
    SPX_FREE(sc);
    return st;
  }
  for (q = 0; q < 2 * P; q++) nr += rc[q];
  si = (int32_t *)spx__alloc((size_t)m + 1, sizeof *si);
  sj = (int32_t *)spx__alloc((size_t)m + 1, sizeof *sj);
  sv = (double *)spx__alloc((size_t)m + 1, sizeof *sv);
  ri = (int32_t *)spx__alloc((size_t)nr + 1, sizeof *ri);
  rj = (int32_t *)spx__alloc((size_t)nr + 1, sizeof *rj);
  rv = (double *)spx__alloc((size_t)nr + 1, sizeof *rv);
  cur = (int64_t *)spx__alloc(2 * (size_t)P, sizeof *cur);
  st = si && sj && sv && ri && rj && rv && cur ? SPX_OK : SPX_OUT_OF_MEMORY;
  if ((st = spx__dist_agree(d, st))) goto done;
  for (q = 0; q < 2 * P; q++) cur[q] = sd[q];
  for (k = 0; k < m; k++) { /* grouped by phase and owner, in file order within each group */
    int64_t at = cur[(k >= sl->listed) * P + spx__dist_mm_owner(d, sl->ri[k])]++;
    si[at] = sl->ri[k];
    sj[at] = sl->ci[k];
    sv[at] = sl->v[k];
  }
  spx__mm_slice_free(sl);
  for (ph = 0; ph < 2; ph++) {
    MPI_Alltoallv(si, sc + ph * P, sd + ph * P, MPI_INT32_T, ri, rc + ph * P, rd + ph * P, MPI_INT32_T, d->comm);
    MPI_Alltoallv(sj, sc + ph * P, sd + ph * P, MPI_INT32_T, rj, rc + ph * P, rd + ph * P, MPI_INT32_T, d->comm);
    MPI_Alltoallv(sv, sc + ph * P, sd + ph * P, MPI_DOUBLE, rv, rc + ph * P, rd + ph * P, MPI_DOUBLE, d->comm);
  }
  SPX_FREE(si); /* before the CSR build, which needs as much again */
  SPX_FREE(sj);
  SPX_FREE(sv);
  si = sj = NULL;
  sv = NULL;
  for (k = 0; k < nr; k++) ri[k] = (int32_t)(ri[k] - d->row_start[d->rank]);
  st = spx__dist_agree(d, spx_csr_from_coo(d->nlocal, d->n, nr, ri, rj, rv, d->dtype, rows));
done:
  SPX_FREE(sc);
  SPX_FREE(si);
  SPX_FREE(sj);
  SPX_FREE(sv);
  SPX_FREE(ri);
  SPX_FREE(rj);
  SPX_FREE(rv);
  SPX_FREE(cur);
  if (st) {
    spx_csr_destroy(*rows);
    *rows = NULL;
  }
  return st;
}

/* ---- The two ways ------------------------------------------------------------------------------- */
/* Plain coordinate text: 1 to 5 above, then the matrix from each rank's rows. d freed on failure. */
static spx_status spx__dist_mm_parallel(spx_dist_matrix *d, const char *path, spx_dtype dtype,
                                        const spx__dist_mm_file *f, const spx_dist_options *o, spx_dist_matrix **out) {
  spx__mm_slice sl;
  spx_csr *rows = NULL;
  int64_t total = 0, lines = 0;
  spx_status st;
  memset(&sl, 0, sizeof sl);
  d->n = f->h.nrows;
  d->dtype = dtype;
  d->part = SPX_DIST_PART_CONTIGUOUS;
  if ((st = spx__dist_mm_parse(d, path, dtype, f, &sl, &total, &lines))) goto fail;
  if (total < f->h.nnz) { /* every rank has the same counts: the same sentence, nothing to agree on */
    st = spx__fail_at(SPX_PARSE, path, f->h.data_line - 1 + lines, "file ends after %lld of %lld entries",
                      (long long)total, (long long)f->h.nnz);
    goto fail;
  }
  if ((st = spx__dist_mm_rows(d, o, &sl))) goto fail;
  d->nlocal = d->row_start[d->rank + 1] - d->row_start[d->rank];
  st = spx__dist_mm_exchange(d, &sl, &rows);
  spx__mm_slice_free(&sl);
  if (st) goto fail;
  st = spx__dist_build(d, rows, o, out);
  spx_csr_destroy(rows);
  return st;
fail:
  spx__mm_slice_free(&sl);
  spx_dist_destroy(d);
  return st;
}

/* Anything else: rank 0 reads the file, then scatters it. d freed on failure. */
static spx_status spx__dist_mm_serial(spx_dist_matrix *d, const char *path, spx_dtype dtype, const spx_dist_options *o,
                                      spx_dist_matrix **out) {
  spx_csr *a = NULL;
  spx_status st = SPX_OK;
  if (d->rank == 0) st = spx_mm_read(path, dtype, &a, NULL);
  if ((st = spx__dist_agree(d, st))) {
    spx_dist_destroy(d);
    return st;
  }
  st = spx__dist_scatter_on(d, 0, a, o, out);
  spx_csr_destroy(a);
  return st;
}

/* Rank 0's look at the file and at the options it reads: f->plain 1 for the parallel way. */
static spx_status spx__dist_mm_look(const char *path, const spx_dist_options *o, spx__dist_mm_file *f) {
  spx_status st = spx__mm_head(path, &f->h, &f->size, &f->plain);
  if (!st && f->plain && f->h.nrows != f->h.ncols)
    st = spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_read_mm: %s is %lld x %lld; a distributed matrix is square", path,
                   (long long)f->h.nrows, (long long)f->h.ncols);
  if (!st && (f->h.format == SPX_MM_ARRAY || o->partition != SPX_DIST_PART_CONTIGUOUS)) f->plain = 0;
  return st;
}

spx_status spx_dist_read_mm(MPI_Comm comm, const char *path, spx_dtype dtype, const spx_dist_options *options,
                            spx_dist_matrix **out) {
  const char *fn = "spx_dist_read_mm";
  spx_dist_options od;
  spx_dist_matrix *d = NULL;
  spx__dist_mm_file f;
  double dt[1];
  spx_status st = SPX_OK;
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: NULL out", fn); /* no handle: cannot take part */
  *out = NULL;
  if (options) od = *options;
  else spx_dist_options_default(&od);
  if ((st = spx__dist_open(comm, &od, fn, &d))) return st;
  memset(&f, 0, sizeof f);
  if (!path) st = spx__fail(SPX_INVALID_ARGUMENT, "%s: path is NULL", fn);
  else if (dtype != SPX_DOUBLE && dtype != SPX_FLOAT) st = spx__fail(SPX_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
  else if (d->rank == 0) st = spx__dist_mm_look(path, &od, &f);
  if ((st = spx__dist_agree(d, st))) goto fail;
  dt[0] = dtype;
  if (!spx__dist_same(d->comm, dt, 1)) { /* every rank sees the same answer: no sentence to spread */
    st = spx__fail(SPX_INVALID_ARGUMENT, "%s: the ranks passed different dtypes; every rank must pass the same", fn);
    goto fail;
  }
  MPI_Bcast(&f, (int)sizeof f, MPI_BYTE, 0, d->comm);
  d->vs = SPX_DTYPE_SIZE(dtype);
  d->mt = dtype == SPX_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  if (f.plain) return spx__dist_mm_parallel(d, path, dtype, &f, &od, out);
  return spx__dist_mm_serial(d, path, dtype, &od, out);
fail:
  spx_dist_destroy(d);
  return st;
}
