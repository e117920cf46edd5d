/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/host.h: what the host layer's implementation files give the files above them beyond
 * the public headers: the CSR checks (csr_impl.h) the converters and the reader share, and the
 * converters' helpers (formats_impl.h, formats/) the device converters (cuda_impl.h) reuse so that
 * both paths decline and fail in the same words.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_HOST_H
#define SPX_INTERNAL_HOST_H

#include <stddef.h>
#include <stdint.h>
#include "../csr.h"
#include "../formats.h"

/* ---- csr_impl.h ----------------------------------------------------------------------------- */
/* What spx__csr_verify checks: row pointers, then column bounds, then column order. */
enum { SPX__CSR_PTRS = 0, SPX__CSR_BOUNDS = 1, SPX__CSR_SORTED = 2 };
/* spx_csr_validate's checks up to level (SPX__CSR_*); the message names the first violation. */
spx_status spx__csr_verify(const spx_csr *a, int level);
/* What reading a CSR through its row pointers and columns needs: spx_csr_validate less the column
 * order (the converters take rows unsorted and with duplicates). */
spx_status spx__csr_in_bounds(const spx_csr *a);
/* spx_fmt_from_csr's checks of a for format f, in its words (a converter that reads a's arrays
 * without it, as the device's CSR upload does, fails as it would). */
spx_status spx__fmt_from_csr_check(const spx_csr *a, spx_format f);
/* 1 when building a CSR of nrows rows from nnz triplets (extra: bytes the caller holds on top)
 * needs more memory than the machine has available, with the sentence saying so in msg. */
int spx__coo_short(int64_t nrows, int64_t nnz, spx_dtype dtype, double extra, char *msg, size_t len);
/* spx_csr_validate's O(1) part: sizes, arrays, row_ptr's ends (the device profile checks the rest). */
spx_status spx__csr_validate_head(const spx_csr *a);
/* 1 when rows [r0, r1) are well formed (spx_csr_validate's per-row test; the planner's sample). */
int spx__csr_rows_ok(const spx_csr *a, int64_t r0, int64_t r1);

/* ---- formats_impl.h ------------------------------------------------------------------------- */
/* SPX_RANGE unless v fits a 32-bit index (what every format's offsets are). */
spx_status spx__fits32(int64_t v, const char *what);
/* A converter's failure as spx_fmt_from_csr reports it (the device converters too). */
spx_status spx__fmt_wrap(spx_status s, const spx_csr *a, const char *fmt);
/* Byte offset of parameter j of format f in spx_format_params. */
size_t spx__param_off(int f, int j);
/* BSR's bytes for r x c blocks, nblocks of them (formats/bsr_impl.h). */
int64_t spx__bsr_bytes(const spx_csr *a, int64_t r, int64_t c, int64_t nblocks);
/* BSR's refusal of rows whose columns are not strictly increasing. */
spx_status spx__bsr_unsorted(void);
/* SDIA's decline past max_fill (formats/sdia_impl.h): real slots in real rows, over when the counts
 * stopped early. */
spx_status spx__sdia_overfill(int64_t real, int over, int64_t nnz, int64_t max_fill);
/* SDIA's distinct offsets (column - row) of rows [r0, r1), increasing, into u: how many, or cap + 1
 * past cap (formats/sdia_impl.h; the tuner's profile counts with it too). */
int64_t spx__sdia_offsets(const spx_csr *a, int64_t r0, int64_t r1, int32_t *u, int64_t cap);

#endif /* SPX_INTERNAL_HOST_H */
