/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/status.h: status codes, their names, and the per-thread last-error message.
 *
 * Every spx function that can fail returns an spx_status. On failure a sentence saying what went
 * wrong and where (for a file: "path:line: ...") is kept per thread; spx_last_error() returns it. */
#ifndef SPX_STATUS_H
#define SPX_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status table. ORDER matters only in that SPX_OK is first and equals 0.
 *  _(ENUM_SUFFIX,        "short name",       "what it means") */
#define SPX_STATUS_LIST(_)                                                              \
  _(OK,                  "ok",               "success")                                 \
  _(INVALID_ARGUMENT,    "invalid-argument", "an argument is NULL, negative or inconsistent") \
  _(OUT_OF_MEMORY,       "out-of-memory",    "host memory allocation failed")           \
  _(IO,                  "io",               "a file could not be opened, read or written") \
  _(PARSE,               "parse",            "input text is malformed")                 \
  _(UNSUPPORTED,         "unsupported",      "valid input that spx does not handle")    \
  _(RANGE,               "range",            "an index or size is out of range")        \
  _(DIMENSION_MISMATCH,  "dimension-mismatch", "operand sizes do not agree")            \
  _(NOT_AVAILABLE,       "not-available",    "a library, driver or device is missing")  \
  _(CUDA,                "cuda",             "a CUDA driver call failed")               \
  _(NVRTC,               "nvrtc",            "run-time compilation failed")             \
  _(CUSPARSE,            "cusparse",         "a cuSPARSE call failed")                  \
  _(DEVICE_OUT_OF_MEMORY, "device-out-of-memory", "device memory allocation failed")    \
  _(INTERNAL,            "internal",         "an spx invariant broke (a bug: please report)") \
  _(BREAKDOWN,           "breakdown",        "an iterative method broke down (a divisor ~0, or CG on a non-SPD matrix)") \
  _(NOT_CONVERGED,       "not-converged",    "an iterative method reached its iteration limit")

typedef enum spx_status {
#define SPX__STATUS_ENUM(e, name, what) SPX_##e,
  SPX_STATUS_LIST(SPX__STATUS_ENUM)
#undef SPX__STATUS_ENUM
  SPX_STATUS_COUNT
} spx_status;

/* Short stable name of a status ("parse"); "unknown" for values outside the table. */
const char *spx_status_string(spx_status s);
/* One-line description of what a status means in general. */
const char *spx_status_description(spx_status s);
/* The message of the last failure on this thread ("" when none); valid until the next failure. */
const char *spx_last_error(void);
/* The status of that last failure (SPX_OK when none). */
spx_status spx_last_status(void);
/* Forget the last failure on this thread. */
void spx_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif /* SPX_STATUS_H */
