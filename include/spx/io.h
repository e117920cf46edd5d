/* SPDX-License-Identifier: BSD-3-Clause */
/* spx/io.h: files written whole or not at all.
 *
 *   spx_file *f;
 *   spx_file_create("out.mtx", 0, &f);         a temporary file beside out.mtx
 *   fprintf(spx_file_stream(f), ...);           write through stdio (or spx_file_fd)
 *   spx_file_commit(f);                         flush, fsync, rename over out.mtx
 *
 * Until the commit the target is untouched: a full disk, a failed write or a crash leave the old
 * file as it was (and no temporary behind, on every path spx controls). The temporary is made with
 * mkstemp in the target's directory (unpredictable, never follows a link, never overwrites another
 * file); the rename replaces a link at the target rather than writing through it. The file gets
 * the mode a new file would get (0666 less the umask, or the mode of the file it replaces), or 0600
 * with private = 1 (caches, the tuner file). Every spx writer goes through here. */
#ifndef SPX_IO_H
#define SPX_IO_H

#include <stdio.h>
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spx_file spx_file;

/* Opens the temporary for path. SPX_IO with a sentence naming the directory when it cannot be
 * created there (missing directory, no permission, read-only file system). */
spx_status spx_file_create(const char *path, int private_mode, spx_file **out);
/* The stdio stream to write to (owned by f). */
FILE *spx_file_stream(spx_file *f);
/* The file descriptor under it (for zlib's gzdopen on a dup of it; flush the stream first when
 * mixing the two). */
int spx_file_fd(const spx_file *f);
/* Flushes, fsyncs and renames the temporary over the target; frees f whatever happens. A failed
 * write anywhere before (the stream's error flag), a full disk at the flush or the fsync, or a
 * failed rename is SPX_IO naming the target, and the temporary is removed. */
spx_status spx_file_commit(spx_file *f);
/* Drops the temporary and frees f (NULL: nothing). */
void spx_file_abort(spx_file *f);

#ifdef __cplusplus
}
#endif
#endif /* SPX_IO_H */
