/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/mm_text.h: what the Matrix Market rooms (mm_parse_impl.h, mm_input_impl.h,
 * mm_impl.h, bottom up in spx.h) give the rooms above them: the text and its header, the bounds a
 * header sets on the text, then each room's functions. Each section names the file that defines
 * it; a room calls only the sections before its own.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_MM_TEXT_H
#define SPX_INTERNAL_MM_TEXT_H

#include "common.h"
#include "../mm.h"

/* The text to parse. It is empty or ends in '\n', so every scan stops at a '\n' without bounds
 * checks and nothing reads past the end. It lives in the caller's buffer or on the heap (the
 * loader's, after the header parser: mm_input_impl.h). */
typedef struct spx__mm_src {
  const char *p;
  size_t n;
  char *heap; /* SPX_FREE'd on release */
} spx__mm_src;

/* A header: the banner's words and the size line. */
typedef struct spx__mm_hdr {
  int format, field, sym;
  int64_t nrows, ncols, nnz; /* nnz: entries the file lists */
  size_t data;               /* offset of the first line after the size line */
  int64_t data_line;         /* its line number */
} spx__mm_hdr;

#define SPX__MM_BANNER "%%%%MatrixMarket matrix coordinate real general"

/* What a text may hold, so that no input makes the reader take more memory than its size line
 * can use: the lines up to the size line within SPX__MM_HEAD_MAX bytes, then SPX__MM_ENTRY_BYTES
 * per announced entry and SPX__MM_SLACK for comments and blank lines among the entries. A gzip
 * bomb or an endless stream (a pipe, /dev/zero) stops there with SPX_PARSE rather than filling
 * memory, and a plain file or buffer past the bound fails alike: a result never depends on where
 * the text came from. */
#define SPX__MM_HEAD_MAX ((size_t)64 << 20)
#define SPX__MM_ENTRY_BYTES 256
#define SPX__MM_SLACK ((size_t)16 << 20)

/* ---------------------------------------------------------------- mm_parse_impl.h: the text */
/* The symmetry keywords, "hermitian" (refused) after the valid ones. */
extern const char *const spx__mm_syms[];
#define SPX__MM_NFORMAT 2 /* entries of each table that are valid enum values */
#define SPX__MM_NFIELD 3
#define SPX__MM_NSYM 3
/* A blank within a line: space, tab, CR, VT, FF (not '\n'). */
int spx__mm_blank(char c);
/* A token fit for a message: at most 40 printable characters, "..." when cut. */
const char *spx__mm_show(const char *s, size_t n, char buf[48]);
/* Line 1 (b holds it, '\n' included): "%%MatrixMarket matrix <format> <field> <symmetry>". */
spx_status spx__mm_banner(const char *b, size_t n, const char *name, spx__mm_hdr *h);
/* Line 1, comments and blank lines, the size line (b holds at least up to its '\n'). */
spx_status spx__mm_header(const char *b, size_t n, const char *name, spx__mm_hdr *h);
/* The most a text with header h may hold, and the error for a text that ran past limit. */
size_t spx__mm_limit(const spx__mm_hdr *h);
spx_status spx__mm_too_long(const char *name, int64_t size_line, int64_t nnz, size_t limit, int gz);
/* Parses the text into *out (src released here, before the CSR build). */
spx_status spx__mm_read_text(spx__mm_src *src, const char *name, spx_dtype dtype, spx_csr **out, spx_mm_info *info);
/* A text of n bytes against its header h: the entries it announces fit, and it is within
 * spx__mm_limit (the checks spx__mm_read_text makes before it parses). */
spx_status spx__mm_fits(const spx__mm_hdr *h, size_t n, const char *name);
/* A slice of a coordinate file's entry lines, parsed on its own (spx_dist_read_mm: each rank
 * parses its part of the file): whole lines [b, e), e[-1] == '\n' unless the slice is empty. */
typedef struct spx__mm_slice {
  int32_t *ri, *ci;      /* the listed entries, then (symmetric files) the mirrored ones */
  double *v;             /* their values (pattern: 1) */
  int64_t listed, mirrored;
} spx__mm_slice;
/* Its lines and entry lines (neither blank nor comment). */
void spx__mm_slice_count(const char *b, const char *e, int64_t *lines, int64_t *entries);
/* Its entries (entries of them, as counted) into out, line0 the file's number of its first line
 * and k0 the entries of the file before it (what the size line allows is h->nnz - k0): errors say
 * "name:line: ..." as spx_mm_read's do. out is freed on failure; spx__mm_slice_free frees it. */
spx_status spx__mm_slice_parse(const spx__mm_hdr *h, const char *name, const char *b, const char *e, int64_t line0,
                               int64_t k0, int64_t entries, spx_dtype dtype, spx__mm_slice *out);
void spx__mm_slice_free(spx__mm_slice *s);

/* ---------------------------------------------------------------- mm_input_impl.h: into memory */
/* The text of n bytes in memory (data itself when it ends in '\n'), or of the file at path. */
spx_status spx__mm_text(const char *data, size_t n, const char *name, spx__mm_src *src);
spx_status spx__mm_load(const char *path, spx__mm_src *src);
/* The header of the file at path, read until its size line (at most SPX__MM_HEAD_MAX bytes), and
 * spx__mm_fits on the whole file, when it is plain text in a regular file of *size bytes (*plain
 * 1); *plain 0 (h unset) for gzip and for anything but a regular file, which cannot be read from
 * the middle. Errors as spx_mm_read gives them (a missing file, a bad header). */
spx_status spx__mm_head(const char *path, spx__mm_hdr *h, uint64_t *size, int *plain);

#endif /* SPX_INTERNAL_MM_TEXT_H */
