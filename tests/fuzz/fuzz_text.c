/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the parsers of short user strings: format parameters ("sell_c=8,sell_sigma=64",
 * from the CLI and the options), format and strategy names, the AMG and cuSPARSE option names, and
 * the SPX_* count knobs (config_impl.h). Any bytes must give SPX_OK with a value in its range, or a
 * status with a message: never undefined behaviour or a read past the string (it is copied into an
 * allocation of its exact length, so the sanitizer sees an overread). */
#include <spx/spx.h>
#include <spx/internal/common.h>
#include <spx/internal/config.h>
#include <spx/internal/host.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failure must say why. */
static void said(spx_status s) {
  if (s != SPX_OK && spx_last_error()[0] == 0) __builtin_trap();
  spx_clear_error();
}

/* After SPX_OK every parameter is SPX_AUTO or inside its format's range. */
static void params_in_range(const spx_format_params *p) {
  int f, j;
  for (f = 0; f < spx_format_count(); f++) {
    const spx_format_vtable *vt = spx_format_info((spx_format)f);
    for (j = 0; vt && vt->layout && j < vt->layout->nparams; j++) {
      const spx_format_param_info *pi = &vt->layout->params[j];
      int64_t v;
      memcpy(&v, (const char *)p + spx__param_off(f, j), sizeof v);
      if (v != SPX_AUTO && (v < pi->lo || v > pi->hi)) __builtin_trap();
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = (char *)malloc(size + 1);
  spx_format_params p;
  spx_format f;
  spx_plan_strategy st;
  spx_amg_smoother sm;
  spx_amg_cycle_type cy;
  spx_amg_aggregation ag;
  spx_amg_coarsening co;
  spx_amg_rs_interp ri;
  spx_cusparse_alg ca;
  spx_status s;
  long long n = -1;
  int k;
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  spx_format_params_default(&p);
  said(s = spx_format_params_parse(&p, text));
  if (s == SPX_OK) params_in_range(&p);
  said(s = spx_format_from_name(text, &f));
  if (s == SPX_OK && ((int)f < 0 || (int)f >= spx_format_count())) __builtin_trap();
  said(s = spx_plan_strategy_parse(text, &st));
  if (s == SPX_OK && ((int)st < 0 || st >= SPX_PLAN_STRATEGY_COUNT)) __builtin_trap();
  said(s = spx_amg_smoother_parse(text, &sm));
  if (s == SPX_OK && ((int)sm < 0 || sm >= SPX_AMG_SMOOTHER_COUNT)) __builtin_trap();
  said(spx_amg_cycle_type_parse(text, &cy));
  said(spx_amg_aggregation_parse(text, &ag));
  said(spx_amg_coarsening_parse(text, &co));
  said(spx_amg_rs_interp_parse(text, &ri));
  said(s = spx_cusparse_alg_parse(text, &ca));
  if (s == SPX_OK && ((int)ca < SPX_CUSPARSE_BEST || ca >= SPX_CUSPARSE_ALG_COUNT)) __builtin_trap();
  k = spx__env_parse_count(text, &n);
  if (k < -1 || k > 1 || (k == 1 && n < 0)) __builtin_trap();
  free(text);
  return 0;
}
