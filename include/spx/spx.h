/* SPDX-License-Identifier: BSD-3-Clause */
/* spx: sparse-matrix and stencil computing on NVIDIA GPUs, as a header-only C library.
 *
 * USE
 *   In every file that calls spx:        #include <spx/spx.h>
 *   In exactly one C file of the program: #define SPX_IMPLEMENTATION
 *                                        #include <spx/spx.h>      (put it first in that file)
 *   Build:  cc app.c -I<spx>/include -ldl -lz      (add -fopenmp for parallel host kernels)
 *
 *   The headers compile as C11 and as C++17; the implementation file must be C (C11 or later).
 *   CUDA (driver API, NVRTC, cuSPARSE) is opened at run time with dlopen, so the program needs no
 *   CUDA at build time and runs on machines without a GPU (spx then uses its host backend).
 *
 * OPTIONS (define before including spx.h in the implementation file)
 *   SPX_MALLOC(sz), SPX_REALLOC(p, sz), SPX_CALLOC(n, sz), SPX_FREE(p): the host allocator.
 * ENVIRONMENT (one table: SPX__ENV in internal/config.h)
 *   SPX_QUIET             no notices or warnings on stderr
 *   SPX_BACKEND           auto | host | cuda: what an AUTO context picks (invalid: SPX_INVALID_ARGUMENT)
 *   SPX_LIBCUDA, SPX_LIBNVRTC, SPX_LIBCUSPARSE
 *                         full paths of the driver, NVRTC and cuSPARSE libraries (else the usual
 *                         sonames, then $CUDA_HOME/lib64, /usr/local/cuda/lib64 and
 *                         /usr/local/cuda/targets/<arch>-linux/lib)
 *   SPX_CACHE=off         no JIT disk cache (kernels are still cached in memory)
 *   SPX_CACHE_DIR         JIT disk cache directory (else $XDG_CACHE_HOME/spx, else ~/.cache/spx)
 *   SPX_CACHE_MAX_MB      disk cache size cap, least recently used entries go first (default 512)
 *   SPX_SHARED_MATRICES   where the tests and the spx command find the shared SuiteSparse matrices
 *   Tuning and diagnosis (defaults are what spx measured best; set these to compare or to look):
 *   SPX_DEVICE_CACHE_MB   device blocks spx_device_free keeps for reuse (default 1/16 of memory,
 *                         at most 2 GiB; 0: none)
 *   SPX_UPLOAD_THREADS    workers of the pinned upload pool (0: the driver's pageable path)
 *   SPX_DEVICE_CONVERT=0  convert SELL, SELL16, SDIA, BSR, ELL, ELL-R and JDS on the host, not the device
 *   SPX_PLAN_DEVICE_PROFILE=0|N  profile a plan's matrix on the host (0), or on the device from N
 *                         nonzeros (default 2^17)
 *   SPX_PLAN_UPLOAD_BESIDE=0|N  below that size, upload a plan's matrix after the host's validation
 *                         and profile (0), or from N nonzeros on a thread beside them (default 2^14)
 *   SPX_PLAN_TRACE=1      the time of every selection stage and build step on stderr
 *   SPX_STENCIL_XV=1|2    x cells per thread of the one-step stencil kernel
 *   SPX_STENCIL_TB_PF=0..8  prefetch distance of the temporal-blocking stencil kernel
 *   SPX_STENCIL_CHUNK, SPX_STENCIL_CHUNK_MAX, SPX_STENCIL_SLOTS
 *                         temporal-blocking stencil: shortest and longest z-chunk of a launch,
 *                         blocks of its kernel the GPU runs at once
 *   SPX_STENCIL_TRACE=F   the out-of-core stencil's per-step timeline, written to F
 *   The library reads these (SPX_SHARED_MATRICES aside), CUDA_HOME, XDG_CACHE_HOME and HOME once
 *   per process, at its first look: setting them after that changes nothing.
 *
 * ERRORS
 *   Functions return spx_status (SPX_OK == 0); spx_last_error() gives the sentence that explains a
 *   failure, with "file:line:" for bad input files. The library never exits or aborts. */
#ifndef SPX_SPX_H
#define SPX_SPX_H

/* The implementation uses POSIX calls (clock_gettime, dlopen, fileno); ask for them when this is
 * the first include of the implementation file and the compiler runs in strict ISO mode. */
#if defined(SPX_IMPLEMENTATION) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && \
    !defined(__cplusplus)
#define _POSIX_C_SOURCE 200809L
#endif

#include "version.h"

#include "status.h"
#include "io.h"
#include "types.h"
#include "csr.h"
#include "mm.h"
#include "analyze.h"
#include "gen.h"
#include "formats.h"
#include "loader.h"
#include "device.h"
#include "jit.h"
#include "baseline.h"
#include "cuda.h"
#include "plan.h"
#include "stencil.h"
#include "solve.h"
#include "amg.h"

#endif /* SPX_SPX_H */

/* ---- The implementation, bottom up --------------------------------------------------------------
 * One translation unit, in this order. Each file calls only files listed before it (no two files
 * use each other), includes the headers that declare what it uses, and compiles after them alone.
 * An internal header without _impl (named in parentheses) declares what its file gives the files
 * after it beyond the public headers; a name only its own file uses stays static.
 *   file             what it is                                   what it calls
 *   config_impl.h    the environment, read once (config.h)        nothing of spx
 *   status_impl.h    errors, allocation, clock, warnings          config
 *   job_impl.h       background jobs, tier switches               status
 *   io_impl.h        files written whole or not at all            status
 *   csr_impl.h       CSR and its checks (host.h)                  status
 *   formats_impl.h   format registry, host converters, host SpMV  csr
 *   mm_parse_impl.h  Matrix Market text: header, entries, CSR
 *                    (mm_text.h)                                  csr
 *   mm_input_impl.h  Matrix Market files and buffers into memory,
 *                    gzip                                         mm_parse
 *   mm_impl.h        Matrix Market reading and writing            mm_input, mm_parse, csr, io
 *   analyze_impl.h   matrix profile                               status
 *   gen_impl.h       generated matrices                           csr
 *   loader_impl.h    dlopen, symbol tables, driver checks, device
 *                    queries, NVRTC, context push/pop
 *                    (cuda_types.h, with device_impl.h's)         config
 *   device_impl.h    device memory, block cache, pinned buffers,
 *                    upload pool, timers; streams, events, async
 *                    copies and the link's bandwidth for code
 *                    that schedules its own work                  loader
 *   context_impl.h   spx_context: create, destroy, info, print    loader, device
 *   jit_key_impl.h   templates, defines, keys, architectures; the
 *                    JIT's state (jit_cache.h)                    loader
 *   jit_disk_impl.h  the JIT's disk cache                         jit_key, config
 *   jit_impl.h       kernels from NVRTC, the memory table,
 *                    module loads                                 jit_disk, jit_key, loader
 *   baseline_impl.h  cuSPARSE                                     loader, device
 *   kernels_impl.h   each format's kernel spec, decided on the
 *                    host (kernels.h)                             formats
 *   cuda_impl.h      device matrices and converters, launches
 *                    (dmatrix.h)                                  kernels, jit, device, formats, job
 *   stage_impl.h     a host CSR staged on the device for the
 *                    planner (dmatrix.h)                          cuda, jit, device
 *   The tuner, in rooms (tuner.h declares what each gives the rooms after it):
 *   plan_profile_impl.h    the row profile: rows, columns,
 *                          sampling, idle lanes, row statistics   csr, formats, device, cuda
 *   plan_device_impl.h     the device description and its file    context, io, jit, formats
 *   plan_model_impl.h      byte predictors, serial walk, times,
 *                          candidates, spx_plan_model             plan_profile, plan_device,
 *                                                                 kernels, cuda, formats
 *   plan_object_impl.h     spx_plan: build, SpMV, wait, destroy,
 *                          timing, getters, print                 plan_model, cuda, stage, baseline,
 *                                                                 device, plan_race
 *   plan_race_impl.h       auto's race over the first SpMVs (the
 *                          plan room's second file)               plan_object, device, cuda
 *   plan_strategy_impl.h   the papers' rules, the model's choice,
 *                          the trial, auto, a forced candidate    plan_object, plan_model
 *   plan_calibrate_impl.h  spx_plan_calibrate                     plan_strategy and below, gen, stage
 *   plan_rows_impl.h       the plan's matrix before the model:
 *                          staged and profiled on the device, or
 *                          on the host beside its upload or not   plan_profile, plan_model, stage,
 *                                                                 csr, config
 *   plan_impl.h            spx_plan_create: the selection; the
 *                          deferred choice and its upgrade        every room above, stage, csr,
 *                                                                 config
 *   plan_reselect_impl.h   re-selection on a worker thread        plan_impl, plan_object, plan_model
 *   The stencil, in rooms (stencil_sched.h declares what each gives the rooms after it):
 *   stencil_plan_impl.h    names, capacity, host memory, the cost
 *                          model, spx_stencil_choose              config
 *   stencil_schedule_impl.h
 *                          the schedules and their executor (GPU
 *                          streams or the host), the host step    stencil_plan, device, loader
 *   stencil_impl.h         kernels, spx_stencil_run, grids        stencil_schedule, stencil_plan, jit,
 *                                                                 context, device, loader, config
 *   solve_impl.h     solvers: options, scaling, the GPU path,
 *                    the entries                                  solve_host, plan, cuda, jit, device
 *   solve_host_impl.h      the solvers' host twin                 solve, plan
 *   AMG, in rooms (amg_levels.h declares what each gives the rooms after it):
 *   amg_gpu_impl.h         the setup on the GPU (amg_setup.cu's
 *                          kernels, cuSPARSE SpGEMM, csr2csc)     csr, device, jit, loader
 *   amg_setup_impl.h       the levels: strength, aggregation, P,
 *                          Galerkin, coarse LU (host twins; the
 *                          GPU's through amg_gpu)                 amg_gpu, csr
 *   amg_rs_impl.h          classical Ruge-Stueben coarsening:
 *                          strength, PMIS split, direct
 *                          interpolation (host only)              amg_setup, csr
 *   amg_smooth_impl.h      smoothers, coloring, the vector
 *                          operations (host twin and kernel)      amg_setup, plan, device, loader
 *   amg_impl.h             the hierarchy, cycles, update, AMG as
 *                          the solver, the report                 amg_smooth, amg_setup, solve, plan,
 *                                                                 jit, context, device, csr
 * tests/BUILD.gn (impl_alone) compiles each of them alone. */
#if defined(SPX_IMPLEMENTATION) && !defined(SPX__IMPLEMENTATION_DONE)
#define SPX__IMPLEMENTATION_DONE
#ifdef __cplusplus
#error "compile the spx implementation (SPX_IMPLEMENTATION) in a C file; C++ files include spx.h only"
#endif
#include "internal/config_impl.h"
#include "internal/status_impl.h"
#include "internal/job_impl.h"
#include "internal/io_impl.h"
#include "internal/csr_impl.h"
#include "internal/formats_impl.h"
#include "internal/mm_parse_impl.h"
#include "internal/mm_input_impl.h"
#include "internal/mm_impl.h"
#include "internal/analyze_impl.h"
#include "internal/gen_impl.h"
#include "internal/loader_impl.h"
#include "internal/device_impl.h"
#include "internal/context_impl.h"
#include "internal/jit_key_impl.h"
#include "internal/jit_disk_impl.h"
#include "internal/jit_impl.h"
#include "internal/baseline_impl.h"
#include "internal/kernels_impl.h"
#include "internal/cuda_impl.h"
#include "internal/stage_impl.h"
#include "internal/plan_profile_impl.h"
#include "internal/plan_device_impl.h"
#include "internal/plan_model_impl.h"
#include "internal/plan_object_impl.h"
#include "internal/plan_race_impl.h"
#include "internal/plan_strategy_impl.h"
#include "internal/plan_calibrate_impl.h"
#include "internal/plan_rows_impl.h"
#include "internal/plan_impl.h"
#include "internal/plan_reselect_impl.h"
#include "internal/stencil_plan_impl.h"
#include "internal/stencil_schedule_impl.h"
#include "internal/stencil_impl.h"
#include "internal/solve_impl.h"
#include "internal/solve_host_impl.h"
#include "internal/amg_gpu_impl.h"
#include "internal/amg_setup_impl.h"
#include "internal/amg_rs_impl.h"
#include "internal/amg_smooth_impl.h"
#include "internal/amg_impl.h"
#endif
