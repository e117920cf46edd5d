/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the tuner's calibration file (<cache>/tuner/vN/NAME.json, which anything on
 * the machine may have written or cut short): any bytes must give a device description or a clean
 * SPX_PARSE, without undefined behaviour (out-of-range integers were a cast before this target). */
#include <spx/spx.h>
#include <spx/internal/common.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char text[16384];
  spx_plan_device d;
  spx_status s;
  size_t n = size < sizeof text - 1 ? size : sizeof text - 1; /* what spx_plan_device_load reads */
  memcpy(text, data, n);
  text[n] = 0;
  s = spx_plan_device_parse(text, "fuzz.json", &d);
  if (s == SPX_OK) {
    /* what the model relies on */
    if (!(d.bandwidth_gbs > 0) || d.warp < 1 || d.launch_us < 0) __builtin_trap();
  } else if (s != SPX_PARSE || spx_last_error()[0] == 0) {
    __builtin_trap();
  }
  return 0;
}
