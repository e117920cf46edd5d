/* SPDX-License-Identifier: BSD-3-Clause */
/* spx info FILE: read a Matrix Market file and print what spx_analyze finds. */
#include <string.h>

#include "cli.h"

static void spx_cli_print_read(const char *path, const spx_mm_info *mi, int json) {
  if (json) {
    printf("{\"file\": ");
    spx_cli_json_str(stdout, path);
    spx_cli_json_printf(stdout, ", \"read\": {\"format\": \"%s\", \"field\": \"%s\", \"symmetry\": \"%s\", "
                        "\"entries\": %lld, \"duplicates\": %lld, \"explicit_zeros\": %lld, \"nan\": %lld, "
                        "\"inf\": %lld, \"seconds\": %.6f}, \"analysis\": ",
                        spx_mm_format_name(mi->format), spx_mm_field_name(mi->field),
                        spx_mm_symmetry_name(mi->symmetry), (long long)mi->entries, (long long)mi->duplicates,
                        (long long)mi->explicit_zeros, (long long)mi->nan_count, (long long)mi->inf_count, mi->seconds);
    return;
  }
  printf("file              %s\n", path);
  printf("stored as         %s %s %s, %lld entries\n", spx_mm_format_name(mi->format),
         spx_mm_field_name(mi->field), spx_mm_symmetry_name(mi->symmetry), (long long)mi->entries);
  printf("read              %.3f s (%lld duplicates summed, %lld explicit zeros)\n", mi->seconds,
         (long long)mi->duplicates, (long long)mi->explicit_zeros);
  if (mi->nan_count || mi->inf_count)
    printf("non-finite        %lld NaN, %lld Inf (accepted; SpMV results will carry them)\n",
           (long long)mi->nan_count, (long long)mi->inf_count);
}

/* `spx help info` (cli.h: paragraphs, "OPTION\twhat it does", one "$ example"). */
const char *const spx_cli_info_help[] = {
    "FILE is a Matrix Market file (.mtx or .mtx.gz). Prints how it was stored and read (entries, "
    "duplicates summed, explicit zeros, NaN and Inf counts, read time), then the matrix's analysis.",
    "--json\tprint one JSON object instead of the text report (default: text)",
    "--float\tread the values as float (default: double)",
    "$ spx info bcsstk16.mtx.gz --json",
    NULL};

int spx_cli_info(int argc, char **argv) {
  const char *path = NULL;
  int json = 0, i;
  spx_dtype dt = SPX_DOUBLE;
  spx_csr *a = NULL;
  spx_mm_info mi;
  spx_analysis an;
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--float")) dt = SPX_FLOAT;
    else if (argv[i][0] == '-') return spx_cli_usage("info", "unknown option '%s'", argv[i]);
    else if (!path) path = argv[i];
    else return spx_cli_usage("info", "one FILE only");
  }
  if (!path) return spx_cli_usage("info", "FILE is missing");
  spx_cli_progress("reading %s", path);
  if (spx_mm_read(path, dt, &a, &mi)) { spx_cli_progress_done(); return spx_cli_fail("info"); }
  spx_cli_progress("analysing");
  if (spx_analyze(a, &an)) { spx_cli_progress_done(); spx_csr_destroy(a); return spx_cli_fail("info"); }
  spx_cli_progress_done();
  spx_cli_print_read(path, &mi, json);
  spx_analysis_print(&an, json ? NULL : path, stdout, json);
  if (json) printf("}\n");
  spx_csr_destroy(a);
  return 0;
}
