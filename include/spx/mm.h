/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/mm.h: Matrix Market files, read into CSR and written from CSR.
 *
 * READING  spx_mm_read(path, SPX_DOUBLE, &a, &info)
 *   Formats: coordinate (sparse) and array (dense, column-major), fields real, integer and pattern,
 *   symmetries general, symmetric and skew-symmetric. Complex and hermitian files give
 *   SPX_UNSUPPORTED. Header keywords are case-insensitive; comment lines ('%') and blank lines may
 *   appear anywhere after the header line.
 *   - gzip input is recognized by its magic bytes (not the file name) and inflated in memory.
 *   - files are opened once and read (FIFOs, pipes and devices too), never mapped: a mapping of a
 *     file that another process truncates would kill the reader with SIGBUS. A file that changes
 *     while it is read gives the matrix or a status (SPX_IO when it shrank under the reader).
 *   - what the text may hold is bounded as it arrives, so no input fills memory: the header line,
 *     comments and blank lines before the size line at most 64 MiB, then at most 256 bytes per
 *     entry the size line announces plus 16 MiB for comments and blank lines among the entries.
 *     Past that (a gzip bomb, an endless stream) the read stops with SPX_PARSE; a first line that
 *     cannot be a Matrix Market header stops it at once (spx_mm_read("/dev/zero") included).
 *   - sizes whose CSR cannot fit in the memory the process can get (2^31 rows need 32 GiB of row
 *     pointers while the CSR is built) are SPX_OUT_OF_MEMORY, naming the sizes, before anything
 *     proportional to them is allocated.
 *   - symmetric: each off-diagonal entry (i,j) also gives (j,i); skew-symmetric gives (j,i) = -a_ij,
 *     and a diagonal entry in a skew-symmetric file is a parse error. Entries above the diagonal
 *     (the spec wants the lower triangle; some files differ) are mirrored the same way.
 *   - pattern: every value is 1 (a third field, as some SuiteSparse pattern files have, must be a
 *     number and is ignored). integer: values are read as 64-bit integers, stored as dtype.
 *   - array: every listed entry is kept, zeros included, so the CSR is dense (rows*cols entries, or
 *     the mirrored triangle for symmetric / skew-symmetric arrays).
 *   - duplicates are summed (info.duplicates counts them); columns come out sorted.
 *   - NaN and Inf ("nan", "inf", "infinity", any case, signed) are accepted and counted; decimals
 *     beyond the range of dtype become +-Inf or 0 as IEEE rounding says. Every value is correctly
 *     rounded to dtype (the same bits strtod / strtof give).
 *   - errors name the file and line: "m.mtx:17: expected 3 fields (row col value), got 2". Bad
 *     text is SPX_PARSE, indices outside the size line's bounds and sizes past the 32-bit index
 *     limit are SPX_RANGE, unreadable files SPX_IO. Entry counts the file cannot hold are
 *     rejected before anything proportional to them is allocated.
 *   Parsing is in memory and OpenMP-parallel (chunks split at line boundaries) when compiled with
 *   OpenMP; results and messages do not depend on the thread count. Numbers are parsed by hand;
 *   strtod/strtof decide only the rare values the exact fast paths cannot (more than 19 digits,
 *   exponents past +-27, exact ties). strtod follows the locale's decimal point: a program that
 *   calls setlocale() must keep LC_NUMERIC "C". Memory: the text (the file's bytes, or the
 *   inflated gzip data; a large file is read in parallel slices), triplets of 16 bytes per entry (8
 *   for pattern; twice that for symmetric files, for the mirrored half), then the CSR build
 *   (spx_csr_from_coo) after the text is freed.
 *
 * WRITING  spx_mm_write(path, a, SPX_MM_GENERAL)
 *   Coordinate real, 1-based, general (every entry), symmetric (the lower triangle; the matrix must
 *   be symmetric, pattern and values) or skew-symmetric (the strict lower triangle; A = -A^T with a
 *   zero diagonal). Values are printed with %.15g, or %.17g where that does not read back to the
 *   same bits (float: %.6g / %.9g), so write -> read is exact. A path ending in ".gz" is written
 *   gzip-compressed. A regular file that could not be written completely is removed. */
#ifndef SPX_MM_H
#define SPX_MM_H

#include "status.h"
#include "types.h"
#include "csr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Header keyword tables: ORDER matters (enum value = position).
 *  _(ENUM_SUFFIX,     "header keyword") */
#define SPX_MM_FORMAT_LIST(_) \
  _(COORDINATE,       "coordinate")   \
  _(ARRAY,            "array")
#define SPX_MM_FIELD_LIST(_) \
  _(REAL,             "real")         \
  _(INTEGER,          "integer")      \
  _(PATTERN,          "pattern")
#define SPX_MM_SYMMETRY_LIST(_) \
  _(GENERAL,          "general")      \
  _(SYMMETRIC,        "symmetric")    \
  _(SKEW_SYMMETRIC,   "skew-symmetric")

#define SPX__MM_ENUM(e, kw) SPX_MM_##e,
typedef enum spx_mm_format { SPX_MM_FORMAT_LIST(SPX__MM_ENUM) } spx_mm_format;
typedef enum spx_mm_field { SPX_MM_FIELD_LIST(SPX__MM_ENUM) } spx_mm_field;
typedef enum spx_mm_symmetry { SPX_MM_SYMMETRY_LIST(SPX__MM_ENUM) } spx_mm_symmetry;
#undef SPX__MM_ENUM

/* What a read found. On failure the fields the reader got to (the header, the sizes) are set and
 * the rest are zero. Counts of values refer to the entries listed in the file, before mirroring. */
typedef struct spx_mm_info {
  spx_mm_format format;
  spx_mm_field field;
  spx_mm_symmetry symmetry;
  int64_t nrows, ncols;
  int64_t entries;        /* entries listed in the file (coordinate: the size line's count) */
  int64_t duplicates;     /* entries summed into an earlier one at the same position */
  int64_t nan_count, inf_count; /* NaN / Inf values (in dtype) accepted */
  int64_t explicit_zeros; /* listed values that are zero in dtype */
  int64_t lines;          /* lines in the file */
  double seconds;         /* wall time of the read, decompression and CSR build included */
} spx_mm_info;

/* Reads a Matrix Market file (plain or gzip) into a new CSR of dtype. info may be NULL.
 * *out is NULL on failure. */
spx_status spx_mm_read(const char *path, spx_dtype dtype, spx_csr **out, spx_mm_info *info);

/* Same, from len bytes in memory (plain or gzip; need not be NUL-terminated). name is used in
 * messages in place of a path (NULL: "<buffer>"). */
spx_status spx_mm_read_buffer(const char *data, size_t len, const char *name, spx_dtype dtype,
                              spx_csr **out, spx_mm_info *info);

/* Writes a as coordinate real with the given symmetry (see WRITING above); gzip if path ends in
 * ".gz". SPX_INVALID_ARGUMENT if a is not symmetric / skew-symmetric as asked, SPX_IO on a
 * failed open, write or close. */
spx_status spx_mm_write(const char *path, const spx_csr *a, spx_mm_symmetry symmetry);

/* Header keywords ("coordinate", "real", "skew-symmetric"); "unknown" outside the tables. */
const char *spx_mm_format_name(spx_mm_format f);
const char *spx_mm_field_name(spx_mm_field f);
const char *spx_mm_symmetry_name(spx_mm_symmetry s);

#ifdef __cplusplus
}
#endif
#endif /* SPX_MM_H */
