/* SPDX-License-Identifier: BSD-3-Clause */
/* spmv_loads.cuh: how SpMV templates read their matrix arrays. Included by every SpMV template;
 * gen/embed inlines it, so the embedded sources stay self-contained for NVRTC.
 *
 * SPX_LDS(p): a load of a matrix array element, read once per SpMV: cache-streaming (__ldcs,
 * evict first) so the stream does not push x out of L2 (H100 large set: geometric mean over best
 * cuSPARSE 1.174x -> 1.222x; power-law rows 1.26x faster, Poisson float 1.16x). SPX_PLAIN_LOADS=1
 * (spx_dmatrix_options.plain_loads) gives plain loads, for comparison. */
#ifndef SPX_LDS
#if defined(SPX_PLAIN_LOADS) && SPX_PLAIN_LOADS
#define SPX_LDS(p) (*(p))
#else
#define SPX_LDS(p) __ldcs(p)
#endif
#endif
