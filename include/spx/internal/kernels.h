/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/internal/kernels.h: the kernel specs (kernels_impl.h) as the device matrices (cuda_impl.h)
 * take them. A spec is a host-side decision (template, kernels, specialization constants, launch
 * shape) and needs no GPU: the registry sits below everything that touches the driver.
 * Internal: names carry the spx__ prefix and may change without notice. */
#ifndef SPX_INTERNAL_KERNELS_H
#define SPX_INTERNAL_KERNELS_H

#include "common.h"
#include "../cuda.h"

/* Below this many nonzeros an SpMV is launch- and latency-bound (the small set of `spx bench`): the
 * CSR kernel's choice changes there (kernels_impl.h), and the tuner's model follows it. */
#define SPX__CSR_SMALL_NNZ 100000

/* Format f's kernel spec (in-tree, or set by spx_format_set_kernel); NULL when it has none. */
spx_kernel_spec_fn spx__kernel_spec(spx_format f);
/* printf into the next define slot of a launch (ignored past SPX_KERNEL_DEFINES_MAX). */
void spx__kdef(spx_kernel_launch *l, const char *fmt, ...) SPX__PRINTF(2, 3);
/* The power of two within 1..32 nearest a mean amount of work per row (RBP-CSR's lanes per row from
 * its blocks and isolated nonzeros per row), or `want` when it is one. */
int spx__tpr_of(double mean, int want);
/* Threads per row of the CSR vector kernel for m (`want` when it is a power of two within 1..32). */
int spx__tpr(const spx_fmt *m, int want);
/* The steps of the longest row's walk in the CSR vector kernel on a small matrix (below
 * SPX__CSR_SMALL_NNZ) whose rows decide its lanes per row, from n rows, nnz nonzeros, the longest
 * row and the sum of the squared row lengths: what the tuner's model prices. */
double spx__csr_small_steps(int64_t n, int64_t nnz, int64_t longest, int64_t sq);

#endif /* SPX_INTERNAL_KERNELS_H */
