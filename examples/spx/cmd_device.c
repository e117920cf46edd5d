/* SPDX-License-Identifier: BSD-3-Clause */
/* spx device: which backend spx picks here and what GPU it sees; with --upload, how fast
 * spx_device_upload moves a host buffer to the GPU (the pinned pool; SPX_UPLOAD_THREADS=0 shows
 * the driver's pageable path for comparison). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Best and median of 7 uploads of mb MiB from a filled (first-touched) malloc'd buffer. */
static int spx_cli_upload(spx_context *ctx, int64_t mb, int json) {
  const size_t bytes = (size_t)mb << 20;
  const char *env = getenv("SPX_UPLOAD_THREADS");
  double gbs[7], t;
  unsigned char *h = malloc(bytes);
  spx_devptr d = 0;
  int i, bad = 0;
  if (!h) { fprintf(stderr, "spx device: no host memory for %lld MiB\n", (long long)mb); return 1; }
  memset(h, 1, bytes); /* touched: the upload, not the page faults, is timed */
  if (spx_device_alloc(ctx, bytes, &d)) { free(h); return spx_cli_fail("device --upload"); }
  for (i = 0; i < 7 && !bad; i++) {
    t = spx_cli_now();
    bad = spx_device_upload(ctx, d, h, bytes) != SPX_OK;
    gbs[i] = (double)bytes / (spx_cli_now() - t) * 1e-9;
  }
  spx_device_free(ctx, d);
  free(h);
  if (bad) return spx_cli_fail("device --upload");
  spx_cli_sort(gbs, 7); /* best last */
  if (json) {
    printf("{\"upload_mib\": %lld, \"upload_threads\": ", (long long)mb);
    spx_cli_json_str(stdout, env ? env : "default");
    spx_cli_json_printf(stdout, ", \"best_gbs\": %.3f, \"median_gbs\": %.3f}\n", gbs[6], gbs[3]);
  } else
    printf("spx_device_upload of %lld MiB (SPX_UPLOAD_THREADS %s): best %.2f GB/s, median %.2f GB/s of 7\n",
           (long long)mb, env ? env : "unset", gbs[6], gbs[3]);
  return 0;
}

/* `spx help device` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_device_help[] = {
    "Prints the backend (cuda or host) and the device spx would use. With --upload, the environment "
    "variable SPX_UPLOAD_THREADS sets the upload's threads.",
    "--json\tprint JSON instead of text (default: text)",
    "--upload MIB\tmeasure spx_device_upload of MIB MiB, 1 to 1048576 (best and median of 7; needs a "
    "GPU; default: no measurement)",
    "$ spx device --upload 1024",
    NULL};

int spx_cli_device(int argc, char **argv) {
  int json = 0, i, rc = 0;
  int64_t upload = 0;
  spx_context *ctx;
  for (i = 1; i < argc; i++) {
    const char *v;
    if (!strcmp(argv[i], "--json")) json = 1;
    else if ((v = spx_cli_opt(argc, argv, &i, "--upload"))) {
      double mib;
      if (!spx_cli_number("device", "--upload", v, "a positive integer of MiB up to 1048576", SPX_CLI_INTEGER, 0,
                          1 << 20, &mib))
        return 2;
      upload = (int64_t)mib;
    } else {
      return spx_cli_usage("device", "unknown argument '%s'", argv[i]);
    }
  }
  if (spx_context_create(NULL, &ctx)) return spx_cli_fail("device");
  if (!upload) spx_context_print(ctx, stdout, json);
  else if (spx_context_backend(ctx) != SPX_BACKEND_CUDA) rc = spx_cli_usage("device", "--upload needs a GPU");
  else rc = spx_cli_upload(ctx, upload, json);
  spx_context_destroy(ctx);
  return rc;
}
