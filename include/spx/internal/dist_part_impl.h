/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/dist.h, its partition room: the partition table's names, and for
 * SPX_DIST_PART_METIS the graph of A + A^T handed to METIS and the symmetric permutation that makes
 * each part's rows contiguous. It runs on the root, on the global CSR, and calls no MPI (so it sits
 * below dist_impl.h, which sends what it makes). METIS is optional: it is compiled in where the
 * implementation file is compiled with SPX_WITH_METIS (and linked with -lmetis); without it, asking
 * for it is SPX_UNSUPPORTED, a sentence saying how to get it. */
#include <limits.h>
#include "common.h"
#include "../dist.h"
#include "dist_matrix.h"
#if defined(SPX_WITH_METIS)
#include <metis.h>
#endif

#define SPX__DIST_PART_NAME(e, name) name,
static const char *const spx__dist_parts[] = {SPX_DIST_PARTITION_LIST(SPX__DIST_PART_NAME)};
#undef SPX__DIST_PART_NAME
#define SPX__DIST_NPART ((int)(sizeof spx__dist_parts / sizeof spx__dist_parts[0]))

const char *spx_dist_partition_name(spx_dist_partition p) {
  return (unsigned)p < (unsigned)SPX__DIST_NPART ? spx__dist_parts[p] : "unknown";
}

spx_status spx_dist_partition_parse(const char *name, spx_dist_partition *out) {
  char list[128] = "";
  int i;
  if (!name || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_dist_partition_parse: NULL argument");
  for (i = 0; i < SPX__DIST_NPART; i++) {
    if (!strcmp(name, spx__dist_parts[i])) {
      *out = (spx_dist_partition)i;
      return SPX_OK;
    }
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", spx__dist_parts[i]);
  }
  return spx__fail(SPX_INVALID_ARGUMENT, "unknown partition '%s' (one of: %s)", name, list);
}

int spx_dist_partition_available(spx_dist_partition p) {
#if defined(SPX_WITH_METIS)
  return p == SPX_DIST_PART_CONTIGUOUS || p == SPX_DIST_PART_METIS;
#else
  return p == SPX_DIST_PART_CONTIGUOUS;
#endif
}

/* ---- P A P^T ------------------------------------------------------------------------------------
 * Two counting passes, no sort: the first writes the transpose of the permuted matrix (scanning
 * the new rows in order, so each of its rows comes out ascending), the second transposes that
 * back (ascending again). O(nnz + n), the same bits as the entries of a. */
spx_status spx__dist_permute(const spx_csr *a, const int64_t *perm, spx_csr **out) {
  const int64_t n = a->nrows;
  const size_t vs = SPX_DTYPE_SIZE(a->dtype);
  int64_t *inv = NULL, *cur = NULL, r, k;
  spx_csr *t = NULL;
  spx_status st;
  *out = NULL;
  if ((st = spx_csr_create(n, n, a->nnz, a->dtype, &t))) return st;
  inv = (int64_t *)spx__alloc((size_t)n + 1, sizeof *inv);
  cur = (int64_t *)spx__alloc((size_t)n + 1, sizeof *cur);
  if (!inv || !cur) {
    st = SPX_OUT_OF_MEMORY;
    goto done;
  }
  for (r = 0; r < n; r++) inv[perm[r]] = r;
  for (k = 0; k < a->nnz; k++) t->row_ptr[inv[a->col_idx[k]] + 1]++;
  for (r = 0; r < n; r++) t->row_ptr[r + 1] += t->row_ptr[r];
  memcpy(cur, t->row_ptr, (size_t)n * sizeof *cur);
  for (r = 0; r < n; r++)
    for (k = a->row_ptr[perm[r]]; k < a->row_ptr[perm[r] + 1]; k++) {
      int64_t at = cur[inv[a->col_idx[k]]]++;
      t->col_idx[at] = (int32_t)r;
      memcpy((char *)t->val.p + (size_t)at * vs, (const char *)a->val.p + (size_t)k * vs, vs);
    }
  st = spx_csr_transpose(t, out);
done:
  spx_csr_destroy(t);
  SPX_FREE(inv);
  SPX_FREE(cur);
  return st;
}

#if defined(SPX_WITH_METIS)
/* Rows grouped by part, each part's in their order: perm[rs[p] ...] are part p's rows; a counting
 * sort, so the same parts give the same permutation. part values are in 0..P-1. */
static void spx__dist_group(int64_t n, const int *part, int P, int64_t *perm, int64_t *rs) {
  int64_t i;
  int q;
  memset(rs, 0, ((size_t)P + 1) * sizeof *rs);
  for (i = 0; i < n; i++) rs[part[i] + 1]++;
  for (q = 0; q < P; q++) rs[q + 1] += rs[q];
  for (i = 0; i < n; i++) perm[rs[part[i]]++] = i; /* rs[p] walks to part p's end ... */
  for (q = P; q > 0; q--) rs[q] = rs[q - 1];      /* ... which is where part p + 1 starts */
  rs[0] = 0;
}

/* The graph METIS partitions: the pattern of a + a^T without the diagonal (the halo is symmetric
 * in what it costs: rank p reading x_j of rank q is one entry sent, whichever triangle holds the
 * coupling), each vertex's neighbours ascending, and the vertex weights spx__dist_balance uses
 * (nonzeros + 1). The transpose's pattern comes from a counting pass; each row is then the merge
 * of two ascending lists. METIS's idx_t is 32 bits in Debian's build: larger graphs are
 * SPX_UNSUPPORTED. */
static spx_status spx__dist_graph(const spx_csr *a, idx_t **xadj, idx_t **adj, idx_t **vwgt) {
  const int64_t n = a->nrows;
  int64_t *tp = NULL, *cur = NULL, i, k, e = 0;
  int32_t *ti = NULL;
  spx_status st = SPX_OK;
  *xadj = *adj = *vwgt = NULL;
  if ((double)a->nnz * 2 > (double)IDX_MAX || (double)(a->nnz + n) > (double)IDX_MAX)
    return spx__fail(SPX_UNSUPPORTED, "partition metis: the graph of a %lld-row matrix with %lld nonzeros "
                     "passes METIS's %d-bit indices (idx_t); use the contiguous partition", (long long)n,
                     (long long)a->nnz, IDXTYPEWIDTH);
  tp = (int64_t *)spx__calloc((size_t)n + 2, sizeof *tp);
  cur = (int64_t *)spx__alloc((size_t)n + 1, sizeof *cur);
  ti = (int32_t *)spx__alloc((size_t)a->nnz + 1, sizeof *ti);
  *xadj = (idx_t *)spx__alloc((size_t)n + 1, sizeof(idx_t));
  *adj = (idx_t *)spx__alloc(2 * (size_t)a->nnz + 1, sizeof(idx_t));
  *vwgt = (idx_t *)spx__alloc((size_t)n + 1, sizeof(idx_t));
  if (!tp || !cur || !ti || !*xadj || !*adj || !*vwgt) {
    st = SPX_OUT_OF_MEMORY;
    goto done;
  }
  for (k = 0; k < a->nnz; k++) tp[a->col_idx[k] + 1]++;
  for (i = 0; i < n; i++) tp[i + 1] += tp[i];
  memcpy(cur, tp, (size_t)n * sizeof *cur);
  for (i = 0; i < n; i++)
    for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) ti[cur[a->col_idx[k]]++] = (int32_t)i;
  (*xadj)[0] = 0;
  for (i = 0; i < n; i++) {
    int64_t p = a->row_ptr[i], pe = a->row_ptr[i + 1], q = tp[i], qe = tp[i + 1];
    while (p < pe || q < qe) {
      int32_t x = p < pe ? a->col_idx[p] : INT32_MAX, y = q < qe ? ti[q] : INT32_MAX, c = x < y ? x : y;
      p += x == c;
      q += y == c;
      if (c != i) (*adj)[e++] = (idx_t)c;
    }
    (*xadj)[i + 1] = (idx_t)e;
    (*vwgt)[i] = (idx_t)(pe - a->row_ptr[i] + 1);
  }
done:
  SPX_FREE(tp);
  SPX_FREE(cur);
  SPX_FREE(ti);
  if (st) {
    SPX_FREE(*xadj);
    SPX_FREE(*adj);
    SPX_FREE(*vwgt);
  }
  return st;
}

/* METIS's k-way partition into P parts. The objective is the total communication volume (each
 * vertex counted once per other part among its neighbours): exactly the entries the halo sends per
 * SpMV, where the edge cut would count a vertex once per edge. A fixed seed: the same parts every
 * run (METIS is sequential and deterministic for a given seed). */
static spx_status spx__dist_kway(int64_t n, idx_t *xadj, idx_t *adj, idx_t *vwgt, int P, int *part) {
  idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)P, vol = 0, opt[METIS_NOPTIONS], *pt;
  int64_t i;
  int r;
  if (!(pt = (idx_t *)spx__alloc((size_t)n + 1, sizeof *pt))) return SPX_OUT_OF_MEMORY;
  METIS_SetDefaultOptions(opt);
  opt[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_VOL;
  opt[METIS_OPTION_SEED] = 1;
  opt[METIS_OPTION_NUMBERING] = 0;
  r = METIS_PartGraphKway(&nv, &ncon, xadj, adj, vwgt, NULL, NULL, &np, NULL, NULL, opt, &vol, pt);
  for (i = 0; r == METIS_OK && i < n; i++) {
    if (pt[i] < 0 || pt[i] >= np) r = METIS_ERROR; /* never seen; a part outside 0..P-1 would index past rs */
    part[i] = (int)pt[i];
  }
  SPX_FREE(pt);
  if (r == METIS_OK) return SPX_OK;
  return spx__fail(r == METIS_ERROR_MEMORY ? SPX_OUT_OF_MEMORY : SPX_INTERNAL,
                   "partition metis: METIS_PartGraphKway failed (%s) on a graph of %lld vertices and %lld edges "
                   "into %d parts", r == METIS_ERROR_MEMORY ? "out of memory" : r == METIS_ERROR_INPUT ? "input error"
                   : "error", (long long)n, (long long)xadj[n] / 2, P);
}
#endif

/* The METIS partition: perm and rs (spx__dist_group's). One part (or no rows) is the identity:
 * there is nothing to cut, and METIS is not asked. */
spx_status spx__dist_metis(const spx_csr *a, int P, int64_t *perm, int64_t *rs) {
#if defined(SPX_WITH_METIS)
  const int64_t n = a->nrows;
  idx_t *xadj = NULL, *adj = NULL, *vwgt = NULL;
  int *part = NULL;
  int64_t i;
  spx_status st;
  if (P == 1 || n == 0) {
    for (i = 0; i < n; i++) perm[i] = i;
    for (i = 0; i <= P; i++) rs[i] = i == P ? n : 0;
    return SPX_OK;
  }
  if ((st = spx__dist_graph(a, &xadj, &adj, &vwgt))) return st;
  if (!(part = (int *)spx__alloc((size_t)n + 1, sizeof *part))) st = SPX_OUT_OF_MEMORY;
  if (!st) st = spx__dist_kway(n, xadj, adj, vwgt, P, part);
  if (!st) spx__dist_group(n, part, P, perm, rs);
  SPX_FREE(xadj);
  SPX_FREE(adj);
  SPX_FREE(vwgt);
  SPX_FREE(part);
  return st;
#else
  (void)a;
  (void)P;
  (void)perm;
  (void)rs;
  return spx__fail(SPX_UNSUPPORTED, "partition metis: this spx was built without METIS (compile the file that "
                   "defines SPX_IMPLEMENTATION with -DSPX_WITH_METIS and link -lmetis; Debian: libmetis-dev)");
#endif
}
