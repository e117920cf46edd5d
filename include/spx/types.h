/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/types.h: value types shared by every header. */
#ifndef SPX_TYPES_H
#define SPX_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element type of matrix values and vectors. */
typedef enum spx_dtype {
  SPX_DOUBLE = 0,
  SPX_FLOAT = 1
} spx_dtype;

/* Bytes of one element of dtype t. */
#define SPX_DTYPE_SIZE(t) ((t) == SPX_FLOAT ? sizeof(float) : sizeof(double))

/* "double" / "float"; "unknown" otherwise. */
const char *spx_dtype_name(spx_dtype t);

#ifdef __cplusplus
}
#endif
#endif /* SPX_TYPES_H */
