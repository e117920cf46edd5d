/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of spx/io.h, the one way spx writes files: whole or not at all. A failed write (a full disk,
 * made here with RLIMIT_FSIZE in a child process) leaves an existing file byte for byte as it was
 * and no temporary behind; a link planted where a private file goes is replaced, never written
 * through; a user's link is followed; devices are written in place. Each test works in a fresh
 * temporary directory. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, symlink, setrlimit */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "spx_test.h"

static char dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/spx_test_io_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char p[600];
  (void)state;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  if (d) closedir(d);
  rmdir(dir);
  return 0;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static char *slurp(const char *path) {
  static char buf[1 << 16];
  FILE *f = fopen(path, "r");
  size_t n;
  if (!f) return NULL;
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* Entries in the test directory (temporaries left behind show up here). */
static int entries(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

static void test_commit_and_abort(void **state) {
  char path[300];
  spx_file *f;
  struct stat st;
  (void)state;
  snprintf(path, sizeof path, "%s/a.txt", dir);
  put(path, "old\n");
  assert_int_equal(spx_file_create(path, 0, &f), SPX_OK);
  fputs("new\n", spx_file_stream(f));
  assert_string_equal(slurp(path), "old\n"); /* untouched until the commit */
  assert_int_equal(entries(), 2);            /* the file and its temporary */
  assert_int_equal(spx_file_commit(f), SPX_OK);
  assert_string_equal(slurp(path), "new\n");
  assert_int_equal(entries(), 1);
  /* abort: nothing changes, nothing stays */
  assert_int_equal(spx_file_create(path, 0, &f), SPX_OK);
  fputs("lost\n", spx_file_stream(f));
  spx_file_abort(f);
  assert_string_equal(slurp(path), "new\n");
  assert_int_equal(entries(), 1);
  /* private files are 0600 */
  snprintf(path, sizeof path, "%s/private.json", dir);
  assert_int_equal(spx_file_create(path, 1, &f), SPX_OK);
  fputs("{}\n", spx_file_stream(f));
  assert_int_equal(spx_file_commit(f), SPX_OK);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  /* errors name the path */
  assert_int_equal(spx_file_create("/nonexistent-dir/x", 0, &f), SPX_IO);
  assert_non_null(strstr(spx_last_error(), "cannot write /nonexistent-dir/x"));
  assert_int_equal(spx_file_create(dir, 0, &f), SPX_IO);
  assert_non_null(strstr(spx_last_error(), "is a directory"));
  assert_int_equal(spx_file_create(NULL, 0, &f), SPX_INVALID_ARGUMENT);
}

/* A planted link where a private file goes is replaced by the file; the victim is untouched. A
 * user's link is followed: its target gets the new content and the link stays a link. */
static void test_links(void **state) {
  char victim[300], link[300], target[300], ulink[300];
  spx_file *f;
  struct stat st;
  (void)state;
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(link, sizeof link, "%s/dev.json", dir);
  put(victim, "precious\n");
  assert_int_equal(symlink(victim, link), 0);
  assert_int_equal(spx_file_create(link, 1, &f), SPX_OK);
  fputs("tuner\n", spx_file_stream(f));
  assert_int_equal(spx_file_commit(f), SPX_OK);
  assert_string_equal(slurp(victim), "precious\n");
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_string_equal(slurp(link), "tuner\n");
  snprintf(target, sizeof target, "%s/results.txt", dir);
  snprintf(ulink, sizeof ulink, "%s/latest.txt", dir);
  put(target, "run 1\n");
  assert_int_equal(symlink("results.txt", ulink), 0);
  assert_int_equal(spx_file_create(ulink, 0, &f), SPX_OK);
  fputs("run 2\n", spx_file_stream(f));
  assert_int_equal(spx_file_commit(f), SPX_OK);
  assert_int_equal(lstat(ulink, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_string_equal(slurp(target), "run 2\n");
}

/* Under a file-size limit (EFBIG: what a full disk looks like to a writer; set and lifted in this
 * process, SIGXFSZ ignored meanwhile: a forked child would deadlock in OpenMP), rewrite an existing
 * matrix with a bigger one: the write fails with SPX_IO and the old file stays. */
static void test_full_disk_keeps_the_old_file(void **state) {
  char path[300], *before;
  spx_csr *small, *big;
  struct rlimit old, lim;
  void (*was)(int);
  int k;
  spx_status s;
  (void)state;
  assert_int_equal(spx_gen_poisson3d(3, 3, 3, 7, SPX_DOUBLE, &small), SPX_OK);
  assert_int_equal(spx_gen_poisson3d(20, 20, 20, 7, SPX_DOUBLE, &big), SPX_OK);
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  for (k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/keep%s", dir, k ? ".mtx.gz" : ".mtx");
    assert_int_equal(spx_mm_write(path, small, SPX_MM_GENERAL), SPX_OK);
    before = strdup(slurp(path));
    assert_non_null(before);
    lim = old;
    lim.rlim_cur = 16384;
    was = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    s = spx_mm_write(path, big, SPX_MM_GENERAL);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    assert_int_equal(s, SPX_IO);
    assert_non_null(strstr(spx_last_error(), "unchanged"));
    assert_string_equal(slurp(path), before); /* byte for byte (gzip: the compressed bytes) */
    assert_int_equal(entries(), k + 1);      /* no temporary left */
    free(before);
  }
  /* writing a matrix over the very file it was read from */
  {
    spx_csr *r = NULL;
    snprintf(path, sizeof path, "%s/keep.mtx", dir);
    assert_int_equal(spx_mm_read(path, SPX_DOUBLE, &r, NULL), SPX_OK);
    assert_int_equal(spx_mm_write(path, r, SPX_MM_GENERAL), SPX_OK);
    spx_csr_destroy(r);
    assert_int_equal(spx_mm_read(path, SPX_DOUBLE, &r, NULL), SPX_OK);
    assert_int_equal(r->nnz, small->nnz);
    spx_csr_destroy(r);
  }
  spx_csr_destroy(small);
  spx_csr_destroy(big);
}

/* Devices are written in place: /dev/null takes anything, /dev/full fails with SPX_IO and stays. */
static void test_devices(void **state) {
  spx_file *f;
  struct stat st;
  (void)state;
  assert_int_equal(spx_file_create("/dev/null", 0, &f), SPX_OK);
  fputs("x\n", spx_file_stream(f));
  assert_int_equal(spx_file_commit(f), SPX_OK);
  assert_int_equal(stat("/dev/null", &st), 0);
  assert_true(S_ISCHR(st.st_mode));
  if (access("/dev/full", W_OK) == 0) {
    int i;
    assert_int_equal(spx_file_create("/dev/full", 0, &f), SPX_OK);
    for (i = 0; i < 10000; i++) fputs("0123456789\n", spx_file_stream(f));
    assert_int_equal(spx_file_commit(f), SPX_IO);
    assert_non_null(strstr(spx_last_error(), "/dev/full"));
    assert_int_equal(stat("/dev/full", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
  }
  assert_int_equal(spx_file_create("/dev/null", 1, &f), SPX_IO); /* private files are regular */
}

/* The tuner file: a link planted at its path (or at the old predictable temporary name) redirects
 * nothing; the file is 0600 and reads back. */
static void test_tuner_file_links(void **state) {
  char victim[300], path[300];
  spx_plan_device d, back;
  struct stat st;
  (void)state;
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(path, sizeof path, "%s/dev.json", dir);
  put(victim, "precious\n");
  assert_int_equal(symlink(victim, path), 0);
  assert_int_equal(spx_plan_device_default(NULL, &d), SPX_OK);
  assert_int_equal(spx_plan_device_save(path, &d), SPX_OK);
  assert_string_equal(slurp(victim), "precious\n");
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(spx_plan_device_load(path, &back), SPX_OK);
  assert_true(back.bandwidth_gbs == d.bandwidth_gbs);
  assert_int_equal(entries(), 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_commit_and_abort),
      T(test_links),
      T(test_full_disk_keeps_the_old_file),
      T(test_devices),
      T(test_tuner_file_links),
  };
  return cmocka_run_group_tests_name("io", tests, NULL, NULL);
}
