/* SPDX-License-Identifier: BSD-3-Clause */
/* The evaluation corpus of the auto-tuner: groups of matrices, each split once into a fit half
 * (where the model's constants and thresholds are chosen) and a validation half (what results
 * report). The rule is a hash of the matrix's name, so a matrix keeps its half in every group
 * (a shared matrix and its replication are on the same side) and a new matrix gets one without a
 * list to edit. bench/corpus/split.tsv holds the split as this rule gives it; test_cli checks that
 * the two agree and that the halves are disjoint. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Generated problems beside the real ones: sizes from latency-bound to GPU-sized. */
static const char *const spx_cli_generated[] = {
    "poisson7:32",        "poisson7:64",        "poisson7:128",      "poisson7:160",    "poisson27:24",
    "poisson27:48",       "poisson27:100",      "elasticity:12",     "elasticity:24",   "elasticity:48",
    "powerlaw:20000",     "powerlaw:200000",    "powerlaw:1000000",  "powerlaw:4000000", NULL};

static const char *const spx_cli_set_names[] = {"shared", "replicated", "generated", "large"};

/* A name's half: FNV-1a 32 of it, even = fit (0), odd = validation (1). */
static int spx_cli_corpus_half(const char *name) {
  uint32_t h = 0x811c9dc5u;
  for (; *name; name++) h = (h ^ (uint8_t)*name) * 0x01000193u;
  return (int)(h & 1u);
}

const char *spx_cli_shared_dir(void) {
  const char *dir = getenv("SPX_SHARED_MATRICES");
  return dir && *dir ? dir : "../shared/matrices";
}

static int spx_cli_strcmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names (file name less .mtx.gz) of the shared matrices, sorted bytewise. */
static int spx_cli_shared_names(char ***out, int *n) {
  DIR *d = opendir(spx_cli_shared_dir());
  struct dirent *e;
  char **v = NULL;
  int k = 0, cap = 0;
  *out = NULL;
  *n = 0;
  if (!d) return spx_format_fail(SPX_IO, "cannot open the shared matrices at %s (set SPX_SHARED_MATRICES)",
                                 spx_cli_shared_dir());
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l <= 7 || strcmp(e->d_name + l - 7, ".mtx.gz")) continue;
    if (k == cap) {
      char **w = (char **)realloc(v, sizeof *v * (size_t)(cap = cap ? 2 * cap : 128));
      if (!w) break;
      v = w;
    }
    if (!(v[k] = (char *)malloc(l - 6))) break;
    memcpy(v[k], e->d_name, l - 7);
    v[k++][l - 7] = 0;
  }
  closedir(d);
  if (e) { /* stopped early: out of memory */
    while (k > 0) free(v[--k]);
    free(v);
    return spx_format_fail(SPX_OUT_OF_MEMORY, "out of memory listing %s", spx_cli_shared_dir());
  }
  if (k > 1) qsort(v, (size_t)k, sizeof *v, spx_cli_strcmp);
  *out = v;
  *n = k;
  return 0;
}

void spx_cli_corpus_free(spx_cli_corpus_entry *v, int n) {
  int i;
  for (i = 0; i < n && v; i++) free(v[i].spec);
  free(v);
}

int spx_cli_corpus(const char *set, int half, int64_t rep_nnz, spx_cli_corpus_entry **out, int *n) {
  char **names = NULL;
  int nn = 0, i, k = 0, g;
  spx_cli_corpus_entry *v;
  *out = NULL;
  *n = 0;
  for (g = 0; g < 4 && strcmp(set, spx_cli_set_names[g]); g++) {}
  if (g == 4) return spx_format_fail(SPX_INVALID_ARGUMENT, "unknown set \"%s\" (shared, replicated, generated, large)", set);
  if (g <= 1 && spx_cli_shared_names(&names, &nn)) return 1;
  if (g == 2) while (spx_cli_generated[nn]) nn++;
  if (g == 3) while (spx_cli_large_set[nn]) nn++;
  if (!(v = (spx_cli_corpus_entry *)calloc((size_t)nn + 1, sizeof *v))) {
    for (i = 0; i < nn && names; i++) free(names[i]);
    free(names);
    return spx_format_fail(SPX_OUT_OF_MEMORY, "out of memory");
  }
  for (i = 0; i < nn; i++) {
    const char *name = g <= 1 ? names[i] : g == 2 ? spx_cli_generated[i] : spx_cli_large_set[i];
    char buf[1200];
    int h = g == 3 ? -1 : spx_cli_corpus_half(name); /* the large set is the earlier reference, in no half */
    if (half >= 0 && h != half) continue;
    if (g == 0) snprintf(buf, sizeof buf, "%s/%s.mtx.gz", spx_cli_shared_dir(), name);
    else if (g == 1) snprintf(buf, sizeof buf, "rep:%s:%lld", name, (long long)rep_nnz);
    else snprintf(buf, sizeof buf, "%s", name);
    if (!(v[k].spec = (char *)malloc(strlen(buf) + 1))) break;
    memcpy(v[k].spec, buf, strlen(buf) + 1);
    snprintf(v[k].name, sizeof v[k].name, "%s", name);
    v[k++].half = h;
  }
  for (g = 0; g < nn && names; g++) free(names[g]);
  free(names);
  if (i < nn) {
    spx_cli_corpus_free(v, k);
    return spx_format_fail(SPX_OUT_OF_MEMORY, "out of memory");
  }
  *out = v;
  *n = k;
  return 0;
}
