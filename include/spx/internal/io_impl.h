/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/io.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"
#include "../io.h"

struct spx_file {
  FILE *stream;
  char *path, *tmp; /* tmp NULL: written in place (a device or a pipe: nothing to rename) */
};

/* The process's umask without changing it (umask() would, for every thread, for a moment): Linux
 * reports it in /proc/self/status; elsewhere 022. */
static mode_t spx__umask(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[128];
  unsigned m = 022;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Umask: %o", &m) == 1) break;
  if (f) fclose(f);
  return (mode_t)(m & 0777);
}

static void spx__file_free(spx_file *f) {
  if (f->stream) fclose(f->stream);
  if (f->tmp) (void)unlink(f->tmp);
  SPX_FREE(f->tmp);
  SPX_FREE(f->path);
  SPX_FREE(f);
}

/* XSI, not in POSIX.1-2008's base that spx.h asks for: declared here (glibc, musl, BSDs have it). */
char *realpath(const char *path, char *resolved);

/* Where a write to path lands: a user's link is followed (its file is replaced, the link stays);
 * a private file's link is not (it is replaced by the file: a planted link redirects nothing). */
static char *spx__file_target(const char *path, int private_mode) {
  struct stat st;
  if (!private_mode && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    char *r = realpath(path, NULL), *c;
    if (r) {
      c = spx__strdup(r);
      free(r); /* realpath's, from the C library's malloc */
      return c;
    }
  }
  return spx__strdup(path);
}

spx_status spx_file_create(const char *path, int private_mode, spx_file **out) {
  spx_file *f;
  struct stat st;
  const char *slash, *name;
  size_t n;
  int fd, exists;
  if (out) *out = NULL;
  if (!path || !*path || !out) return spx__fail(SPX_INVALID_ARGUMENT, "spx_file_create: NULL or empty path");
  if (!(f = (spx_file *)spx__calloc(1, sizeof *f))) return SPX_OUT_OF_MEMORY;
  if (!(f->path = spx__file_target(path, private_mode))) { spx__file_free(f); return SPX_OUT_OF_MEMORY; }
  exists = stat(f->path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    spx__file_free(f);
    return spx__fail(SPX_IO, "cannot write %s: it is a directory", path);
  }
  if (exists && !S_ISREG(st.st_mode)) {
    /* a device or a pipe (/dev/stdout, a FIFO): written in place, nothing to replace */
    if (private_mode) {
      spx__file_free(f);
      return spx__fail(SPX_IO, "cannot write %s: it is not a regular file", path);
    }
    if ((fd = open(f->path, O_WRONLY | O_CLOEXEC)) < 0) {
      spx_status s = spx__fail(SPX_IO, "cannot write %s: %s", path, strerror(errno));
      spx__file_free(f);
      return s;
    }
  } else {
    /* ".NAME.XXXXXX" beside NAME: the rename stays on one file system */
    n = strlen(f->path);
    slash = strrchr(f->path, '/');
    name = slash ? slash + 1 : f->path;
    if (!(f->tmp = (char *)spx__alloc(n + 16, 1))) { spx__file_free(f); return SPX_OUT_OF_MEMORY; }
    snprintf(f->tmp, n + 16, "%.*s.%s.XXXXXX", (int)(name - f->path), f->path, name);
    if ((fd = mkstemp(f->tmp)) < 0) {
      spx_status s = spx__fail(SPX_IO, "cannot write %s: cannot create a file in its directory: %s", path, strerror(errno));
      SPX_FREE(f->tmp);
      f->tmp = NULL; /* nothing was created */
      spx__file_free(f);
      return s;
    }
    (void)fchmod(fd, private_mode ? 0600 : exists ? st.st_mode & 07777 : 0666 & ~spx__umask());
  }
  if (!(f->stream = fdopen(fd, "wb"))) {
    close(fd);
    spx__file_free(f);
    return spx__fail(SPX_OUT_OF_MEMORY, "cannot write %s: out of memory", path);
  }
  *out = f;
  return SPX_OK;
}

FILE *spx_file_stream(spx_file *f) { return f ? f->stream : NULL; }
int spx_file_fd(const spx_file *f) { return f && f->stream ? fileno(f->stream) : -1; }

spx_status spx_file_commit(spx_file *f) {
  spx_status s = SPX_OK;
  int e = 0;
  if (!f) return spx__fail(SPX_INVALID_ARGUMENT, "spx_file_commit: NULL file");
  errno = 0;
  if (ferror(f->stream)) e = errno ? errno : EIO;
  else if (fflush(f->stream) != 0) e = errno ? errno : EIO;
  /* a device or a pipe may not sync: that is no failure of the write */
  else if (fsync(fileno(f->stream)) != 0 && (f->tmp || (errno != EINVAL && errno != EROFS && errno != ENOTSUP)))
    e = errno ? errno : EIO;
  if (fclose(f->stream) != 0 && !e) e = errno ? errno : EIO;
  f->stream = NULL;
  if (!e && f->tmp && rename(f->tmp, f->path) != 0) e = errno;
  if (e) s = spx__fail(SPX_IO, "cannot write %s: %s%s", f->path, strerror(e), f->tmp ? " (the file is unchanged)" : "");
  else if (f->tmp) { /* renamed: nothing to remove */
    SPX_FREE(f->tmp);
    f->tmp = NULL;
  }
  spx__file_free(f);
  return s;
}

void spx_file_abort(spx_file *f) {
  if (f) spx__file_free(f);
}
