/* spx device: which backend spx picks here and what GPU it sees. */
#include <string.h>

#include "cli.h"

int spx_cli_device(int argc, char **argv) {
  int json = argc > 1 && !strcmp(argv[1], "--json");
  spx_context *ctx;
  if (spx_context_create(NULL, &ctx)) return spx_cli_fail("device");
  spx_context_print(ctx, stdout, json);
  spx_context_destroy(ctx);
  return 0;
}
