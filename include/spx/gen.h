/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/gen.h: matrix generators for tests, benchmarks and examples.
 *
 * Every generator writes the CSR directly (row pointers first, then rows in parallel with OpenMP),
 * so matrices of tens of millions of nonzeros take a second or so. The results are valid CSR
 * (sorted unique columns) of the requested dtype. Bad sizes are SPX_INVALID_ARGUMENT; a result
 * whose dimension would pass 2^31-1 is SPX_RANGE. */
#ifndef SPX_GEN_H
#define SPX_GEN_H

#include "status.h"
#include "types.h"
#include "csr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Finite-difference Laplacian on an nx x ny x nz grid, Dirichlet boundary eliminated (boundary
 * rows simply lack the outside neighbours). points = 7: 6 on the diagonal, -1 to the 6 face
 * neighbours; points = 27: 26 on the diagonal, -1 to all 26 neighbours. Row (x,y,z) is
 * x + nx*(y + ny*z) (x fastest). SPD, weakly diagonally dominant (strictly on boundary rows). */
spx_status spx_gen_poisson3d(int64_t nx, int64_t ny, int64_t nz, int points, spx_dtype dtype,
                             spx_csr **out);

/* Anisotropic diffusion: the 7-point pattern of spx_gen_poisson3d with coefficient cx on the x
 * couplings (-cx to the x neighbours), cy on y, cz on z, and 2 (cx + cy + cz) on the diagonal
 * (Dirichlet boundary eliminated, so boundary rows keep the full diagonal and are strictly
 * dominant). cx = cy = cz = 1 is spx_gen_poisson3d's 7-point matrix; cx = cy = 1, cz = 1e-4 is the
 * anisotropic problem of papers/003 (z coupling 0.01% of x and y), whose strong couplings run in
 * xy planes. SPD for positive finite coefficients; others are SPX_INVALID_ARGUMENT. */
spx_status spx_gen_poisson3d_aniso(int64_t nx, int64_t ny, int64_t nz, double cx, double cy, double cz,
                                   spx_dtype dtype, spx_csr **out);

/* 3-D linear elasticity stiffness matrix: nx x ny x nz unit-cube trilinear (Q1) hexahedra,
 * isotropic material E = 1, nu = 0.3, element stiffness by 2x2x2 Gauss quadrature.
 * Nodes (ix, iy, iz), 0 <= ix <= nx etc. The face x = 0 is clamped and its nodes are REMOVED (no
 * identity rows): free node f = (ix-1) + nx*(iy + (ny+1)*iz) for ix >= 1, unknowns interleaved per
 * node, row 3*f + c for component c (0 = x, 1 = y, 2 = z). Size 3*nx*(ny+1)*(nz+1), SPD.
 * A row couples its node to the up to 27 neighbouring nodes, 3 columns each; because x-neighbours
 * are consecutive free nodes, an interior row has 81 nonzeros in 9 runs of 9 contiguous columns
 * (for nx >= 3; with nx <= 2 a row spans whole x lines, which join into longer runs).
 * Assembly is exactly symmetric (bitwise, also in float). */
spx_status spx_gen_elasticity3d(int64_t nx, int64_t ny, int64_t nz, spx_dtype dtype, spx_csr **out);

/* n x n matrix with power-law row lengths: length k (diagonal included) drawn from
 * P(k) ~ k^-alpha on [min_row, max_row] (1 <= min_row <= max_row <= n, alpha finite; alpha = 0 is
 * uniform, negative alpha favours long rows). The k-1 off-diagonal columns are distinct and
 * uniform; their values are uniform in [-1, 1] and never 0. The diagonal is 1 + sum_j |a_ij|
 * (strictly dominant, so Jacobi and BiCGSTAB converge). Not symmetric. Deterministic for a seed
 * whatever the thread count (every row has its own xorshift stream). */
spx_status spx_gen_powerlaw(int64_t n, double alpha, int64_t min_row, int64_t max_row, uint64_t seed,
                            spx_dtype dtype, spx_csr **out);

/* Block-diagonal matrix with `copies` (>= 1) copies of a on the diagonal: keeps a's row-length
 * distribution and column runs while scaling it up. Same dtype as a. */
spx_status spx_gen_replicate(const spx_csr *a, int64_t copies, spx_csr **out);

#ifdef __cplusplus
}
#endif
#endif /* SPX_GEN_H */
