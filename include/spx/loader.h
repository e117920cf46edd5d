/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/loader.h: CUDA at run time, devices, and the context every spx object lives in.
 *
 * spx opens the CUDA driver (libcuda), NVRTC and cuSPARSE with dlopen on first use, each on its
 * own: a machine without a GPU still has NVRTC when the toolkit is installed, and spx runs there
 * on its host backend. Nothing CUDA is needed at build time.
 *
 * WHERE THE LIBRARIES COME FROM (first that loads wins)
 *   driver    $SPX_LIBCUDA (only that, when set), else libcuda.so.1, libcuda.so
 *   NVRTC     $SPX_LIBNVRTC (only that, when set), else libnvrtc.so, .so.13, .so.12, .so.11.2 from
 *             the loader's path, then from $CUDA_HOME/lib64, /usr/local/cuda/lib64,
 *             /usr/local/cuda/targets/<arch>-linux/lib
 *   cuSPARSE  $SPX_LIBCUSPARSE, else libcusparse.so, .so.12, .so.13, .so.11 from the same places
 *   spx_lib_status_get() says which file was used, or why none could be.
 *
 * CONTEXTS
 *   spx_context_create(NULL, &ctx) picks the CUDA backend on device 0 when a driver and a device
 *   exist, else the host backend, saying once per process on stderr why it fell back (silenced
 *   by SPX_QUIET). $SPX_BACKEND=host|cuda|auto overrides an AUTO request. A CUDA context holds
 *   the device's primary context, the one the CUDA runtime uses, so device memory is shared with
 *   CUDA-runtime code of the same program. spx makes it current only around its own calls. */
#ifndef SPX_LOADER_H
#define SPX_LOADER_H

#include <stdint.h>
#include <stdio.h>
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Libraries the loader opens.
 *  _(ENUM_SUFFIX, "short name", "environment override", "what it is") */
#define SPX_LIB_LIST(_)                                                  \
  _(CUDA,     "cuda",     "SPX_LIBCUDA",     "the CUDA driver")          \
  _(NVRTC,    "nvrtc",    "SPX_LIBNVRTC",    "NVRTC, the CUDA run-time compiler") \
  _(CUSPARSE, "cusparse", "SPX_LIBCUSPARSE", "cuSPARSE")

typedef enum spx_lib {
#define SPX__LIB_ENUM(e, name, env, what) SPX_LIB_##e,
  SPX_LIB_LIST(SPX__LIB_ENUM)
#undef SPX__LIB_ENUM
  SPX_LIB_COUNT
} spx_lib;

typedef enum spx_backend {
  SPX_BACKEND_AUTO = 0, /* CUDA when a driver and a device exist, else host */
  SPX_BACKEND_HOST = 1,
  SPX_BACKEND_CUDA = 2
} spx_backend;

typedef struct spx_lib_status {
  int loaded;       /* 1: usable (for the driver: opened and cuInit succeeded) */
  char path[512];   /* the file that was opened ("" when none was) */
  char reason[512]; /* why it is not usable ("" when it is) */
} spx_lib_status;

typedef struct spx_device_info {
  int ordinal;             /* -1 for the host */
  char name[256];
  int sm_count, cc_major, cc_minor;
  int64_t total_mem, free_mem; /* bytes */
  int64_t l2_bytes;
  int max_threads_per_sm;
  double mem_clock_khz;    /* peak memory clock */
  int mem_bus_width;       /* bits */
  double peak_bandwidth_gbs; /* 2 * clock * bus width (double data rate), 1e9 bytes/s */
  int driver_version;      /* 13000 for 13.0; 0 without a driver */
  int nvrtc_major, nvrtc_minor;  /* 0 without NVRTC */
  int cusparse_version;    /* major*1000 + minor*100 + patch; 0 without cuSPARSE */
} spx_device_info;

typedef struct spx_context_options {
  spx_backend backend; /* AUTO (0) by default */
  int device;          /* CUDA device ordinal, 0 by default */
} spx_context_options;

/* Opaque; every object spx makes carries the context it was made in. */
typedef struct spx_context spx_context;

/* Loads the driver, NVRTC and cuSPARSE (what can be loaded; at most once per process). SPX_OK when
 * the driver is usable; SPX_NOT_AVAILABLE with the reason when not. NVRTC and cuSPARSE are
 * reported by spx_lib_status_get, not by the result. */
spx_status spx_cuda_load(void);
/* What happened to one library (SPX_LIB_*); loads it if that was not tried yet. */
void spx_lib_status_get(spx_lib which, spx_lib_status *out);
/* Short name ("cuda", "nvrtc", "cusparse"); "unknown" otherwise. */
const char *spx_lib_name(spx_lib which);

/* Number of CUDA devices; 0 without a driver or a GPU. Never fails. */
int spx_device_count(void);
/* Properties of device `ordinal` and the versions of the driver, NVRTC and cuSPARSE. */
spx_status spx_device_info_get(int ordinal, spx_device_info *out);
/* NVRTC's version; works without a GPU. SPX_NOT_AVAILABLE when NVRTC cannot be loaded. */
spx_status spx_nvrtc_version(int *major, int *minor);
/* cuSPARSE's version as major*1000 + minor*100 + patch; works without a GPU. */
spx_status spx_cusparse_version(int *version);

/* Creates a context (opt NULL: AUTO on device 0). Explicit CUDA without a usable driver or device
 * gives SPX_NOT_AVAILABLE with the reason; an ordinal past the last device SPX_INVALID_ARGUMENT. */
spx_status spx_context_create(const spx_context_options *opt, spx_context **out);
/* Releases the primary context; NULL is a no-op. Destroy the objects made in it first. */
void spx_context_destroy(spx_context *ctx);
spx_backend spx_context_backend(const spx_context *ctx);
/* "cuda" or "host"; with NULL, the backend an AUTO context would get now. */
const char *spx_backend_name(const spx_context *ctx);
/* Device properties with current free memory and library versions. A host context gives
 * ordinal -1 and name "host" with the library versions. */
spx_status spx_context_device_info(const spx_context *ctx, spx_device_info *out);
/* Writes what the context runs on (backend, device, arch, memory, driver, NVRTC and cuSPARSE
 * versions; for the host: why there is no GPU) as text lines or as one JSON object. ctx NULL
 * describes what an AUTO context would get. SPX_IO when writing fails. */
spx_status spx_context_print(const spx_context *ctx, FILE *f, int json);

#ifdef __cplusplus
}
#endif
#endif /* SPX_LOADER_H */
