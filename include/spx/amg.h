/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/amg.h: algebraic multigrid (smoothed aggregation, or classical Ruge-Stueben), standalone or as the preconditioner of the
 * Krylov solvers, with every level's operators on plans (papers/003: the GPU AMG solve phase).
 *
 *   spx_amg_options o;  spx_amg_options_default(&o);  o.smoother = SPX_AMG_GS;
 *   spx_amg *m;
 *   spx_amg_create(ctx, a, &o, &m);             ctx NULL: a context of o.plan's backend (AUTO)
 *   spx_solve_options so;  spx_solve_options_default(&so);
 *   so.precond = spx_amg_precond;  so.precond_data = m;
 *   spx_solve_cg(spx_amg_plan(m), b, x, &so, &rep);   the fine level's plan of A, tuned once
 *   spx_amg_report_print(spx_amg_report_of(m), stdout, 0);  spx_amg_destroy(m);
 *
 * SETUP (in double; each step O(nnz) of its level, RAP O(its products); on the GPU for large levels
 * on CUDA, else on the host: see WHERE)
 *   strength      j is a strong neighbour of i when |a_ij| >= theta sqrt(|a_ii a_jj|) (symmetric
 *                 criterion of smoothed aggregation; theta [0.08] on the fine level, times
 *                 theta_decay [0.5] on each coarser one: a Galerkin operator spreads its couplings
 *                 over more, weaker entries, and a fixed theta finds few strong ones there)
 *   aggregation   pass 1 picks roots, each leading an aggregate of itself and its strong
 *                 neighbours; pass 2 puts each row left into the aggregate of a strong neighbour
 *                 that pass 1 placed; pass 3 makes every row still left an aggregate of its own.
 *                 Every row ends in exactly one aggregate, each aggregate connected. The roots
 *                 (options.aggregation):
 *                   greedy  standard SA: rows in order, a row whose strong neighbours are all free
 *                           (serial); pass 2 takes the first such neighbour in column order
 *                   mis2    a maximal set of rows no two within two strong steps, found in parallel
 *                           rounds (each undecided row against those two steps away, priorities a
 *                           fixed hash of the row: the same set for any thread count), then such a
 *                           pass over the rows left where a root has at least 6 free neighbours;
 *                           pass 2 takes the smallest neighbouring aggregate (the first of those)
 *                   auto    [default] mis2 on the levels set up on the GPU, greedy on the host's
 *                 mis2's roots do not line up plane by plane as the row order's do, so strongly
 *                 anisotropic problems converge slower with it: prefer greedy there
 *                 (docs/solvers.md compares the two).
 *   tentative P   piecewise constant on the aggregates (near null space: the constant vector),
 *                 each column scaled to unit 2-norm: T^T T = I
 *   smoothed P    P = (I - omega D_F^-1 A_F) T. A_F is A with its weak off-diagonal entries lumped
 *                 onto the diagonal (A_F 1 = A 1), D_F its diagonal; omega = prolong_omega / rho,
 *                 prolong_omega [4/3], rho an upper estimate of the spectral radius of D_F^-1 A_F:
 *                 power_iters [15] power iterations from a fixed pseudo-random start, the last
 *                 Rayleigh quotient (x.A x / x.D x, a lower bound for symmetric A) times 1.1, capped
 *                 by the Gershgorin bound max_i sum_j |a_ij| / |a_ii| (power_iters 0: the bound
 *                 alone). prolong_omega 0 keeps T (plain aggregation). T has one entry a row, so row
 *                 i of P is row i of A_F with its columns mapped through the aggregates and merged
 *                 (each aggregate's entries summed in A's column order): no general product.
 *   R, A_c        R = P^T (transpose), A_c = R (A P) by two sparse products (Gustavson, two passes:
 *                 row sizes, then values; columns sorted)
 *   classical     options.coarsening SPX_AMG_RS replaces strength, aggregation and P above (the
 *                 default SPX_AMG_SA is the smoothed aggregation above); on the host only, every
 *                 level (gpu_setup_rows does not apply):
 *     strength    j strongly influences i when -s a_ij >= rs_theta max_{k != i} (-s a_ik), s the
 *                 sign of a_ii (the couplings of the sign opposite the diagonal's), rs_theta [0.25]
 *                 on every level (theta and theta_decay are SA's); a row with no such coupling
 *                 (every off-diagonal of the diagonal's sign, e.g. positive on an SPD row) takes
 *                 |a_ij| >= rs_theta max_{k != i} |a_ik| instead
 *     C/F split   PMIS: measure |S^T_i| (the rows i strongly influences) plus a fixed hash of i
 *                 in [0, 1); a row influencing none starts F; in rounds, each computed from the
 *                 last round's states only (the same split for any thread count), an undecided
 *                 row above every undecided strong neighbour (either direction; ties by index)
 *                 becomes C, then each undecided row depending on a new C point becomes F. After
 *                 the rounds an F row with strong dependencies but no C point among them becomes
 *                 C, so every F row with a strong dependency has a strong C neighbour; an F row
 *                 with none (a decoupled row) interpolates from nothing (an empty row of P: the
 *                 smoother alone corrects it)
 *     P           direct interpolation from the strong C neighbours: P's columns are the C points
 *                 in increasing row order, a C row is an identity row, an F row
 *                 w_ij = -alpha a_ij / a_ii' with couplings of each sign scaled separately
 *                 (alpha = sum_{k != i} a_ik / sum_{k in the set} a_ik over that sign's couplings;
 *                 a sign with none in the set is lumped onto the diagonal, giving a_ii'), so a row
 *                 of A summing to zero interpolates with weights summing to one. Truncation: a
 *                 weight below rs_trunc [0.2] times the row's largest |weight| is dropped and the
 *                 kept ones are computed again over the kept set (each sign's sum, so the row's
 *                 sum, as before); rs_trunc 0 keeps them all. R = P^T and A_c as below. A
 *                 level's C points are its P's columns (the report's p_cols; the level view's
 *                 aggregate gives a C row's coarse row and -1 for an F row). The stall test
 *                 counts C points, and a level that makes none stops coarsening. That is
 *                 rs_interp SPX_AMG_RS_DIRECT [default]; SPX_AMG_RS_EXTENDED_I instead:
 *     ext+i P     extended+i (De Sterck, Falgout, Nolting, Yang, Numer. Linear Algebra Appl. 15
 *                 (2008) 115-139; BoomerAMG's interp_type 6): F row i interpolates from
 *                 C^_i = C^s_i U (U_{k in F^s_i} C^s_k), its strong C neighbours and those of its
 *                 strong F neighbours F^s_i, with
 *                   w_ij  = -(a_ij + sum_{k in F^s_i} a_ik abar_kj / d_k) / a~_ii,
 *                   d_k   = sum_{l in C^_i U {i}} abar_kl,
 *                   a~_ii = a_ii + sum_{n not in C^_i U F^s_i U {i}} a_in
 *                           + sum_{k in F^s_i} a_ik abar_ki / d_k,
 *                 abar_kl = a_kl where its sign is opposite a_kk's, else 0 (a_ij = 0 for a j at
 *                 distance two): each strong F neighbour's coupling is spread over C^_i and i
 *                 itself (the "+i"), the weak couplings outside C^_i are lumped onto the
 *                 diagonal, so a row of A summing to zero interpolates with weights summing to
 *                 one. A strong F neighbour with d_k = 0 is lumped onto the diagonal; an a~_ii
 *                 of a sign other than a_ii's is replaced by a_ii. Truncation: weights below
 *                 rs_trunc times the row's largest |weight| dropped, then of the rest only the
 *                 rs_pmax [4] largest |weight|s kept (ties to the smaller column; 0: no cap);
 *                 the kept positive weights are scaled by the sum of all positive weights over
 *                 theirs and the negative ones likewise (each sign's sum, so a row's sum where
 *                 the weights have one sign, as before). Columns ascending, sums in A's column
 *                 orders: the same P for any thread count.
 *                 docs/solvers.md compares the coarsenings and interpolations.
 *   levels        coarsening stops at max_levels [10], when a level has at most coarse_size [500]
 *                 rows, or when it stalls (aggregates > 0.9 of the rows); the report says which
 *   coarsest      dense LU with partial pivoting on the host when it has at most dense_max [2000]
 *                 rows, else coarse_sweeps [20] sweeps of its smoother. A pivot at most
 *                 16 n eps max|a_ij| counts as zero and its unknown is set to 0 in the solve (a
 *                 generalized inverse): the coarsest operator of a singular problem (pure Neumann,
 *                 rows summing to 0) is singular to rounding, and a consistent system still
 *                 converges; the report counts such pivots.
 * Every level's A, P and R then goes through spx_plan_create with options.plan (NULL: the defaults,
 * eager), so on the CUDA backend the tuner picks each one's format and its SpMVs run on the GPU.
 * A strategy that times candidates (auto, trial) runs as model there unless options.plan_trials:
 * a timed choice per level and operator costs more than the rest of the setup. A model's choice
 * whose converter declines the operator (a SELL16 slice too wide) falls back to CSR.
 * The input may be float (it is copied to double): AMG runs in double, and plans of options.plan
 * with dtype SPX_FLOAT are refused.
 *
 * SMOOTHERS (options.smoother for every level; options.level[k] overrides level k)
 *   jacobi     x += w D^-1 (b - A x), w = damping [2/3]
 *   l1jacobi   the same with D_ii = sum_j |a_ij| (convergent without damping), w [1]
 *   chebyshev  Chebyshev polynomial of D^-1 A of degree cheb_degree [2] on
 *              [cheb_ratio rho, rho] (cheb_ratio [0.3]; rho as for P, of D^-1 A); damping unused
 *   gs         multicolor Gauss-Seidel: rows colored greedily (coloring: rows in order, or
 *              Welsh-Powell: by degree, highest first) so that rows of one color are not coupled;
 *              a sweep relaxes the colors forward then backward (symmetric: it preconditions CG),
 *              x_i += w (b - A x)_i / a_ii, w = damping [1]. relaxed_coloring 1 ignores the weak
 *              couplings, |a_ij| < relaxed_fraction [0.9] times the row's largest off-diagonal,
 *              for fewer colors (papers/003); rows of one color are then updated together from
 *              the values before that color's update (deterministic, not chaotic).
 * A "sweep" is one application (gs: forward and backward). The cycle smooths pre_sweeps [1]
 * times before the coarse correction and post_sweeps [1] after; equal counts and a symmetric
 * smoother make the V- and W-cycles symmetric operators, what CG needs.
 *
 * CYCLES (options.cycle)
 *   V  [default] the coarse correction is one cycle of the next level
 *   W  two: the second from the first's result (the coarsest level's LU is applied once, as a
 *      second exact solve would change nothing). Symmetric; about twice the V-cycle's coarse work
 *      per level, so it pays where the coarse levels are cheap and the V-cycle's factor is poor.
 *   F  an F-cycle of the next level, then a V-cycle of it from that result. Between V and W in
 *      cost and strength; not a symmetric operator (its two coarse visits differ): precondition
 *      BiCGSTAB with it, or CG knowing that its theory assumes symmetry.
 *
 * REUSE (time stepping)  spx_amg_update(m, a_new) takes a matrix of the same pattern (the same
 * nrows, nnz, row pointers and columns as the one set up) and keeps the strength graph's outcome:
 * the aggregates, P and R (so the levels' sizes and patterns), the colorings (the relaxed one's
 * weak couplings are those of the first matrix) and every plan of P and R. It recomputes the
 * Galerkin operators' values R (A P) into their existing patterns (a numeric pass over the
 * symbolic pass's row pointers and columns, kept from the setup: A P is stored per level for it;
 * a level whose products ran on the GPU repeats only their numeric phase there, cuSPARSE's
 * SpGEMMreuse_compute over the kept descriptors and buffers, and brings A_c's values down),
 * the smoothers' data (diagonals, rho (on the GPU for those levels), the gs slices' values), the
 * coarse LU, and each level's plan
 * of A: plan.h has no update of a plan's values, so those plans are created again, each forced to
 * the format (or cuSPARSE) its first setup chose, which skips the tuner's choice. The fine level's
 * plan is then a new object: call spx_amg_plan again after an update. The result is the hierarchy a
 * fresh setup with the same P would give, bit for bit (the products sum in the same order; on the
 * GPU, cuSPARSE's deterministic algorithm sums the same way each run); a fresh setup of a_new
 * itself may aggregate differently (the strength test reads the values). The report
 * then describes the update (its strength, aggregation and prolongation times 0, updates counted).
 * With SPX_AMG_RS the update keeps each level's C/F split and P's pattern and computes P's values
 * again (the direct interpolation of the new values over the same C points, the truncation's
 * choice kept), R's values, and the plans of P and R too (forced to their first formats); the
 * result is the hierarchy a fresh setup gives where that split and pattern come out again (an
 * exact scaling of the matrix, say), bit for bit. Extended+i's pattern reads the values (the
 * strength, so C^_i, and the truncation); the update does not remake it (the Galerkin products'
 * patterns are kept) but keeps it: the strength of the new values gives C^_i and the untruncated
 * weights, each kept column takes its weight (0 where it left C^_i) and each sign is scaled over
 * the kept columns as in a setup, the same computation, so bit for bit a fresh setup's where
 * strength, split and truncation come out the same.
 *
 * SOLVE
 *   spx_amg_cycle     one cycle (options.cycle: V, W or F) on A x = b from the x given
 *   spx_amg_precond   an spx_precond_fn: z = one cycle from z = 0 (plug into spx_solve_cg and
 *                     spx_solve_bicgstab through spx_solve_options.precond)
 *   spx_amg_solve     AMG iteration: cycles until ||b - A x|| <= max(rtol ||b||, atol) (checked
 *                     after every cycle), reported as a Krylov solve is (method "amg")
 * Vectors are double arrays of the fine level's length: host arrays on the host backend, device
 * pointers on CUDA (spx_amg_solve takes host arrays on either with solve options.host_vectors).
 * WHERE  On CUDA a level of at least gpu_setup_rows [20000] rows runs its setup on the GPU, its A
 * kept there from its diagonal to its smoother (level 0 goes up once, a level below is the product
 * of the one above): the diagonal, the strength, the mis2 aggregation, rho of D_F^-1 A_F, P and the
 * smoother's rho by the kernels of templates/amg_setup.cu (each the twin of a host step here: the
 * same integers, P's values bit for bit for the same omega, rho's to rounding), R = P^T by spx's
 * own transpose kernels, A_c = R (A P) by cuSPARSE SpGEMM's reuse API (32-bit indices; A_c stays on the device as
 * the next level's A). What comes down: the diagonal (the smoothers'), the aggregates, P, R and A_c
 * (the plans and the level view read host copies), and the counts that size the next step's
 * arrays. The greedy rule's pass runs on the host between the GPU's strength and P. Other levels,
 * the host backend and gpu_setup_rows 0 run the host steps (OpenMP where a step is row-parallel);
 * a cuSPARSE without those entry points, or a failure of cuSPARSE or of device memory, makes that
 * level again on the host and sends the levels left there, and the report's gpu_note says why.
 * spx_amg_update repeats only the products' numeric phase on such levels. The report gives each
 * level's side (agg_gpu, p_gpu, rap_gpu, rho_gpu) and the GPU's share of the phases' times. The
 * device keeps each such level's P, R, A P, A_c and the products' buffers for spx_amg_update
 * (about the host's AP, P and R again, in 32-bit indices). SPX_PLAN_TRACE=1 prints each GPU step's
 * time (the stream drained at each mark, while tracing only) and each plan's choice and time.
 * The V-cycle's SpMVs are the plans' (on CUDA the tuner's kernels or cuSPARSE on the device); its
 * vector passes run on the host with OpenMP, or on CUDA as kernels of templates/amg.cu (gs: each
 * color's rows in slices of 32 rows stored column major, papers/003 section 3.2); the coarsest
 * level's vector goes to the host, through the LU, and back (papers/003). gs launches two kernels
 * per color and sweep, so levels with many colors are bound by launches on a GPU: relaxed
 * coloring, or gs on the fine level and another smoother below (options.level), keep that down.
 * DETERMINISM  The cycle's own passes have a fixed order (the same x bit for bit run to run) on
 * either backend; on CUDA that holds for the whole cycle when every level's plan runs a
 * deterministic kernel (COO, HYB and the load-balanced CSR, which the tuner may choose, add with
 * atomics: force a format through options.plan to rule them out).
 * An spx_amg is not reentrant: one cycle at a time.
 *
 * ERRORS  SPX_INVALID_ARGUMENT for a non-square or empty matrix, a zero or non-finite diagonal entry
 *   (the row is named), bad options (each named: rs_theta outside (0, 1), rs_trunc outside [0, 1),
 *   a coarsening or rs_interp not in its enum, rs_pmax outside 0..SPX_AMG_RS_PMAX_MAX, ...); SPX_BREAKDOWN for a NaN or Inf in the coarsest LU; plan and
 *   device failures pass through. Nothing is kept and nothing leaks on failure. spx_amg_update
 *   refuses a matrix of another pattern, or with a non-finite entry, with SPX_INVALID_ARGUMENT and
 *   leaves the hierarchy as it was; a failure after that check (a zero coarse diagonal, memory, a
 *   plan, the device) leaves it unusable: its cycles fail with SPX_INVALID_ARGUMENT until an update
 *   succeeds (nothing leaks either way). */
#ifndef SPX_AMG_H
#define SPX_AMG_H

#include <stdio.h>
#include "status.h"
#include "types.h"
#include "csr.h"
#include "plan.h"
#include "solve.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most levels a hierarchy has. */
#define SPX_AMG_MAX_LEVELS 16

/* Smoothers. ORDER: the enum values; names are what spx_amg_smoother_parse reads.
 *  _(ENUM_SUFFIX, "name",      "what it does") */
#define SPX_AMG_SMOOTHERS(_)                                                                    \
  _(JACOBI,    "jacobi",    "damped Jacobi, x += w D^-1 (b - A x), w 2/3")                      \
  _(L1_JACOBI, "l1jacobi",  "l1-Jacobi, D_ii = sum_j |a_ij|, w 1")                               \
  _(CHEBYSHEV, "chebyshev", "Chebyshev polynomial of D^-1 A, degree 2, on [0.3 rho, rho]")      \
  _(GS,        "gs",        "multicolor Gauss-Seidel, symmetric sweep (colors forward, backward)")

typedef enum spx_amg_smoother {
#define SPX__AMG_SMOOTHER_ENUM(e, name, what) SPX_AMG_##e,
  SPX_AMG_SMOOTHERS(SPX__AMG_SMOOTHER_ENUM)
#undef SPX__AMG_SMOOTHER_ENUM
  SPX_AMG_SMOOTHER_COUNT
} spx_amg_smoother;

/* "jacobi"; "unknown" outside the table. */
const char *spx_amg_smoother_name(spx_amg_smoother s);
const char *spx_amg_smoother_description(spx_amg_smoother s);
/* By name (case ignored); SPX_INVALID_ARGUMENT listing the names otherwise. */
spx_status spx_amg_smoother_parse(const char *name, spx_amg_smoother *out);

/* Cycles. ORDER: the enum values; names are what spx_amg_cycle_type_parse reads.
 *  _(ENUM_SUFFIX, "name", "what it does") */
#define SPX_AMG_CYCLES(_)                                                        \
  _(V, "v", "V-cycle: one coarse cycle per level")                             \
  _(W, "w", "W-cycle: two coarse cycles per level (symmetric)")                \
  _(F, "f", "F-cycle: an F-cycle then a V-cycle of the next level (not symmetric)")

typedef enum spx_amg_cycle_type {
#define SPX__AMG_CYCLE_ENUM(e, name, what) SPX_AMG_CYCLE_##e,
  SPX_AMG_CYCLES(SPX__AMG_CYCLE_ENUM)
#undef SPX__AMG_CYCLE_ENUM
  SPX_AMG_CYCLE_COUNT
} spx_amg_cycle_type;

/* "v", "w", "f"; "unknown" outside the table. */
const char *spx_amg_cycle_type_name(spx_amg_cycle_type c);
/* By name (case ignored; "V" too); SPX_INVALID_ARGUMENT listing the names otherwise. */
spx_status spx_amg_cycle_type_parse(const char *name, spx_amg_cycle_type *out);

/* Coloring orders of the gs smoother. */
typedef enum spx_amg_coloring {
  SPX_AMG_COLOR_GREEDY = 0,      /* rows in order, each the smallest color its neighbours lack */
  SPX_AMG_COLOR_WELSH_POWELL = 1 /* the same, rows by degree (highest first, ties in order) */
} spx_amg_coloring;

/* Aggregation rules (the header's SETUP). */
typedef enum spx_amg_aggregation {
  SPX_AMG_AGG_AUTO = 0,   /* MIS(2) on the levels set up on the GPU, greedy on the host's */
  SPX_AMG_AGG_GREEDY = 1, /* rows in order (standard SA; serial, on the host) */
  SPX_AMG_AGG_MIS2 = 2    /* roots a maximal set no two within two strong steps (parallel) */
} spx_amg_aggregation;

/* "auto", "greedy", "mis2"; "unknown" outside the enum. */
const char *spx_amg_aggregation_name(spx_amg_aggregation a);
/* By name (case ignored); SPX_INVALID_ARGUMENT listing the names otherwise. */
spx_status spx_amg_aggregation_parse(const char *name, spx_amg_aggregation *out);

/* Coarsenings (the header's SETUP). */
typedef enum spx_amg_coarsening {
  SPX_AMG_SA = 0, /* smoothed aggregation [default] */
  SPX_AMG_RS = 1  /* classical Ruge-Stueben: PMIS C/F split, direct or extended+i interpolation
                     (on the host) */
} spx_amg_coarsening;

/* "sa", "rs"; "unknown" outside the enum. */
const char *spx_amg_coarsening_name(spx_amg_coarsening c);
/* By name (case ignored); SPX_INVALID_ARGUMENT listing the names otherwise. */
spx_status spx_amg_coarsening_parse(const char *name, spx_amg_coarsening *out);

/* Classical coarsening's interpolations (the header's SETUP, P). */
typedef enum spx_amg_rs_interp {
  SPX_AMG_RS_DIRECT = 0,    /* from the strong C neighbours */
  SPX_AMG_RS_EXTENDED_I = 1 /* extended+i: also from the strong C neighbours of strong F neighbours */
} spx_amg_rs_interp;

/* The most entries options.rs_pmax may keep in a row of P. */
#define SPX_AMG_RS_PMAX_MAX 32

/* "direct", "ext+i"; "unknown" outside the enum. */
const char *spx_amg_rs_interp_name(spx_amg_rs_interp i);
/* By name (case ignored; "extended" and "extended+i" too); SPX_INVALID_ARGUMENT listing the names
 * otherwise. */
spx_status spx_amg_rs_interp_parse(const char *name, spx_amg_rs_interp *out);

/* One level's overrides: -1 (or 0 for damping) takes the global option. */
typedef struct spx_amg_level_options {
  int smoother;    /* an spx_amg_smoother, or -1 */
  int pre_sweeps;  /* -1: options.pre_sweeps */
  int post_sweeps; /* -1: options.post_sweeps */
  double damping;  /* 0: options.damping */
} spx_amg_level_options;

typedef struct spx_amg_options {
  /* setup */
  double theta;             /* strength threshold of the fine level [0.08]; 0: every nonzero is strong */
  double theta_decay;       /* level l uses theta * theta_decay^l, (0, 1] [0.5] */
  int max_levels;           /* levels at most, the coarsest included, 1..SPX_AMG_MAX_LEVELS [10] */
  int64_t coarse_size;      /* a level of at most this many rows is the coarsest [500] */
  int64_t dense_max;        /* the coarsest level by dense LU up to this many rows [2000] */
  int coarse_sweeps;        /* else this many sweeps of its smoother [20] */
  double prolong_omega;     /* P = (I - omega/rho D_F^-1 A_F) T with omega this [4/3]; 0: P = T */
  int power_iters;          /* power iterations for rho [15]; 0: the Gershgorin bound */
  int64_t gpu_setup_rows;   /* CUDA: a level of at least this many rows runs its setup on the GPU
                               (WHERE) [20000]; 0: every level on the host */
  spx_amg_aggregation aggregation; /* [SPX_AMG_AGG_AUTO] */
  spx_amg_coarsening coarsening; /* [SPX_AMG_SA]; SPX_AMG_RS: the classical coarsening below */
  double rs_theta;          /* RS: strength threshold of every level, (0, 1) [0.25] */
  double rs_trunc;          /* RS: drop interpolation weights below this times the row's largest,
                               [0, 1) [0.2]; 0 keeps them all */
  spx_amg_rs_interp rs_interp; /* RS: P's interpolation [SPX_AMG_RS_DIRECT] */
  int rs_pmax;              /* RS extended+i: the most entries a row of P keeps after rs_trunc, the
                               largest |weight|s, 0..SPX_AMG_RS_PMAX_MAX [4]; 0: no cap (direct
                               interpolation's rows, strong C neighbours only, have none) */
  /* smoothing */
  spx_amg_smoother smoother; /* every level's [SPX_AMG_CHEBYSHEV] */
  int pre_sweeps, post_sweeps; /* [1, 1] */
  double damping;           /* 0: the smoother's own (jacobi 2/3, l1jacobi 1, gs 1) */
  int cheb_degree;          /* 1..8 [2] */
  double cheb_ratio;        /* the interval's lower end over its upper, (0, 1) [0.3] */
  spx_amg_coloring coloring; /* gs [GREEDY] */
  int relaxed_coloring;     /* gs: 1 ignores weak couplings when coloring [0] */
  double relaxed_fraction;  /* weak: |a_ij| < this times the row's largest off-diagonal [0.9] */
  spx_amg_level_options level[SPX_AMG_MAX_LEVELS]; /* per-level overrides [none] */
  spx_amg_cycle_type cycle; /* V, W or F [SPX_AMG_CYCLE_V] */
  /* plans */
  const spx_plan_options *plan; /* every level's A, P and R plans; NULL: defaults with eager 1 */
  int plan_trials;          /* 0 [default]: a plan strategy that times candidates (auto, trial) runs as
                               model for the hierarchy's operators (no timed trial or race); 1: the
                               plan options' strategy as given */
} spx_amg_options;

void spx_amg_options_default(spx_amg_options *o);

/* One level as set up. */
typedef struct spx_amg_level_info {
  int64_t rows, nnz;        /* of A on this level */
  int64_t p_cols, p_nnz;    /* of P to the next level (0 on the coarsest) */
  int64_t weak;             /* off-diagonal entries the strength test found weak (lumped in A_F) */
  spx_amg_smoother smoother;
  int pre_sweeps, post_sweeps;
  double damping;           /* what the smoother uses (after defaults) */
  int colors;               /* gs: colors of this level (0 for the other smoothers) */
  double rho;               /* the upper estimate of rho(D^-1 A) used by chebyshev */
  double omega;             /* P's smoothing weight (prolong_omega / rho(D_F^-1 A_F); 0 on the coarsest) */
  int agg_gpu;              /* 1: the strength, and the aggregates but for the greedy rule's pass, were
                               formed on the GPU */
  int mis2;                 /* 1: the aggregates by the MIS(2) rule, 0: by the greedy one */
  int p_gpu, rap_gpu;       /* 1: rho_F, P and R, and the next level's A = R A P, were formed on the GPU */
  int rho_gpu;              /* 1: the smoother's rho came from a power iteration on the GPU */
  char format[24], p_format[24], r_format[24]; /* the plans' formats ("sell", "cusparse_csr"; "" none) */
} spx_amg_level_info;

typedef struct spx_amg_report {
  int levels;
  spx_amg_level_info level[SPX_AMG_MAX_LEVELS];
  double operator_complexity; /* sum of the levels' nnz / the fine level's */
  double grid_complexity;     /* sum of the levels' rows / the fine level's */
  int coarse_direct;          /* 1: the coarsest level by dense LU; 0: by coarse_sweeps sweeps */
  int64_t coarse_zero_pivots; /* pivots of that LU taken as zero (a singular problem, e.g. Neumann) */
  char stop[160];             /* why coarsening stopped */
  /* setup wall time, milliseconds, by phase */
  double setup_ms;            /* all of spx_amg_create */
  double input_ms;            /* the input's checks and its copy in double */
  double strength_ms, aggregate_ms, prolong_ms; /* strength: on a GPU level with its start (A up, the
                                 device arrays, the diagonal); prolong: rho of D_F^-1 A_F, P, R = P^T */
  double rap_ms;              /* the Galerkin products */
  double smoother_ms;         /* diagonals (the host levels'), rho for chebyshev, colorings */
  double coarse_ms;           /* the dense LU */
  double plan_ms;             /* spx_plan_create of every operator (analysis, choice, build) */
  double device_ms;           /* CUDA: kernels, vectors and smoother arrays on the device */
  double strength_gpu_ms, aggregate_gpu_ms, prolong_gpu_ms, rap_gpu_ms; /* of those phases, the GPU
                                 levels' (copies included) */
  char gpu_note[200];         /* why levels gpu_setup_rows sent to the GPU ran on the host ("" none) */
  spx_amg_aggregation aggregation; /* the option (AUTO: each level's agg_gpu says which rule) */
  spx_amg_coarsening coarsening; /* the option (RS: the levels' p_cols are their C points) */
  spx_amg_rs_interp rs_interp; /* the option (with SPX_AMG_RS) */
  int64_t cycles;             /* cycles run so far (spx_amg_cycle, spx_amg_precond, spx_amg_solve) */
  spx_amg_cycle_type cycle;
  /* The setup fields above describe the last setup: spx_amg_create's, or the last successful
   * spx_amg_update's (strength, aggregation and prolongation 0: kept; plan_ms the plans of A made
   * again; device_ms the values uploaded). Keep a copy after create to compare the two. */
  int64_t updates;            /* successful spx_amg_update calls */
} spx_amg_report;

typedef struct spx_amg spx_amg;

/* Sets up the hierarchy of a (square, nonzero diagonal) on ctx (NULL: a context of
 * options->plan's backend, owned by the hierarchy). a is not kept. options NULL: defaults.
 * *out = NULL on failure. */
spx_status spx_amg_create(spx_context *ctx, const spx_csr *a, const spx_amg_options *options, spx_amg **out);
void spx_amg_destroy(spx_amg *m);
/* Setup reuse (the header's REUSE): the hierarchy of m for a, a matrix of the pattern m was set up
 * with and new values (float or double). */
spx_status spx_amg_update(spx_amg *m, const spx_csr *a);

/* One cycle (options.cycle): x (in: the guess, out: improved) for A x = b, vectors as said above. */
spx_status spx_amg_cycle(spx_amg *m, const void *b, void *x);
/* spx_precond_fn: z = M^-1 r, one cycle from z = 0; data is the spx_amg. */
spx_status spx_amg_precond(void *data, const void *r, void *z);
/* AMG as the solver: cycles until the tolerance or options->maxit cycles (options NULL: defaults);
 * options->precond must be NULL. The report's method is "amg", its iterations the cycles. */
spx_status spx_amg_solve(spx_amg *m, const void *b, void *x, const spx_solve_options *options,
                         spx_solve_report *report);

/* The fine level's plan of A (owned by the hierarchy): what the Krylov solver multiplies by. */
spx_plan *spx_amg_plan(const spx_amg *m);
spx_context *spx_amg_context(const spx_amg *m);
const spx_amg_report *spx_amg_report_of(const spx_amg *m);

/* One level's host matrices and setup data (owned by the hierarchy, valid until destroy). */
typedef struct spx_amg_level_view {
  const spx_csr *A;         /* the level's operator (level 0: the input, in double) */
  const spx_csr *P, *R;     /* to and from the next level (NULL on the coarsest) */
  const int32_t *aggregate; /* rows -> aggregate (the next level's row; NULL on the coarsest); RS: a
                               C point's coarse row, -1 for an F point */
  const int32_t *color;     /* gs: rows -> color (NULL for the other smoothers) */
  int colors;
  spx_plan *plan_A, *plan_P, *plan_R;
} spx_amg_level_view;
/* SPX_INVALID_ARGUMENT for a level outside 0..levels-1. */
spx_status spx_amg_level(const spx_amg *m, int level, spx_amg_level_view *out);

/* The report as one JSON object, or as text lines (json == 0). */
spx_status spx_amg_report_print(const spx_amg_report *r, FILE *f, int json);

#ifdef __cplusplus
}
#endif
#endif /* SPX_AMG_H */
