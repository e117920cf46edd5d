/* SPDX-License-Identifier: BSD-3-Clause */
/* Matrix Market input into memory (mm_text.h): a caller's buffer, or a file read (never mapped),
 * inflated when it starts with the gzip magic, and checked as it arrives against the bounds its
 * header sets (the header parser of mm_parse_impl.h), so that no input makes the reader take more
 * memory than its size line can use. */
#include <errno.h>
#include <zlib.h>
#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define SPX__MM_POSIX 1
#else
#define SPX__MM_POSIX 0
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "mm_text.h"

/* ---------------------------------------------------------------- input into memory */

/* The text as it is read or inflated, checked as it grows (spx__mm_sink_check): a first line that
 * cannot be a header is refused from its first bytes, and once the size line is in, spx__mm_limit
 * bounds the rest. */
typedef struct spx__mm_sink {
  const char *name;
  char *b;            /* the text so far (heap), with room for one more byte: the final '\n' */
  size_t n, cap;
  size_t hint;        /* the size it will likely reach (a file's size, a gzip trailer's); 0: unknown */
  size_t limit;       /* the most it may reach: SPX__MM_HEAD_MAX until the size line is in */
  size_t scan, seen;  /* header search: start of the first line not passed, bytes of it searched */
  size_t skip;        /* blanks before the first word of line 1, passed */
  int64_t line;       /* the number of the line at scan */
  int64_t size_line;  /* 0 until the size line is in */
  int64_t nnz;        /* the entries it announces */
  int gz;             /* inflated text (for the messages) */
} spx__mm_sink;

static void spx__mm_sink_init(spx__mm_sink *k, const char *name) {
  memset(k, 0, sizeof *k);
  k->name = name;
  k->limit = SPX__MM_HEAD_MAX;
  k->line = 1;
}

/* Room for want bytes and the final '\n': doubling, or the hint at once (with 64 KiB to spare for
 * the read that finds the end) where the size line allows that much; never far past the limit,
 * which the next check enforces. */
static spx_status spx__mm_sink_room(spx__mm_sink *k, size_t want) {
  size_t c = SPX__MAX(k->cap, (size_t)1 << 16);
  char *nb;
  if (want < k->cap) return SPX_OK;
  if (want > SIZE_MAX / 4) return spx__fail(SPX_OUT_OF_MEMORY, "%s: input too large for memory", k->name);
  while (c <= want) c *= 2;
  if (k->size_line && k->hint > want && k->hint <= k->limit) c = k->hint + ((size_t)1 << 16);
  if (k->limit < SIZE_MAX / 4) c = SPX__MIN(c, SPX__MAX(want + 1, k->limit + 2));
  if (!(nb = (char *)SPX_REALLOC(k->b, c)))
    return spx__fail(SPX_OUT_OF_MEMORY, "%s: out of host memory reading %zu bytes", k->name, c);
  spx__advise_huge(nb + k->cap, c - k->cap);
  k->b = nb;
  k->cap = c;
  return SPX_OK;
}

/* Line 1 before its end has arrived: refused as soon as it cannot be the header line (the same
 * message spx__mm_banner gives for the whole line). */
static spx_status spx__mm_banner_prefix(spx__mm_sink *k) {
  static const char kw[] = "%%matrixmarket";
  const char *p = k->b + k->skip, *e = k->b + k->n;
  size_t i;
  char s1[48];
  while (p < e && spx__mm_blank(*p)) p++;
  k->skip = (size_t)(p - k->b);
  for (i = 0; i < sizeof kw - 1 && p + i < e; i++)
    if ((p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]) != kw[i]) break;
  if (p + i == e || (i == sizeof kw - 1 && spx__mm_blank(p[i]))) return SPX_OK; /* a header so far */
  return spx__fail_at(SPX_PARSE, k->name, 1, "header: expected '" SPX__MM_BANNER "', got '%s'",
                      spx__mm_show(k->b, k->n, s1));
}

/* The header search over the lines that have arrived: line 1 as soon as it is whole (before that,
 * its first bytes), then comments and blank lines, then the size line, which sets the limit. Each
 * byte is searched once, however the text arrives. */
static spx_status spx__mm_sink_head(spx__mm_sink *k) {
  spx__mm_hdr h;
  spx_status s;
  if (!k->n) return SPX_OK;
  for (;;) {
    const char *p = k->b + k->scan, *nl = (const char *)memchr(k->b + k->seen, '\n', k->n - k->seen);
    if (!nl) {
      k->seen = k->n;
      return k->line == 1 ? spx__mm_banner_prefix(k) : SPX_OK;
    }
    k->seen = (size_t)(nl - k->b) + 1;
    if (k->line == 1) {
      if ((s = spx__mm_banner(k->b, k->seen, k->name, &h))) return s;
    } else {
      while (spx__mm_blank(*p)) p++;
      if (*p != '%' && *p != '\n') {
        if ((s = spx__mm_header(k->b, k->seen, k->name, &h))) return s;
        if (k->seen > SPX__MM_HEAD_MAX) return spx__mm_too_long(k->name, 0, 0, SPX__MM_HEAD_MAX, k->gz);
        k->size_line = k->line;
        k->nnz = h.nnz;
        k->limit = spx__mm_limit(&h);
        return SPX_OK;
      }
    }
    k->scan = k->seen;
    k->line++;
  }
}

/* After every arrival: the header search until the size line is in, then the limit, on the
 * length the text will have at least (a '\n' is added where it lacks one, as spx__mm_fits sees
 * it). total: the whole text's size where it is known ahead (a regular file's), so that a file
 * past the limit is refused before the rest of it is read. */
static spx_status spx__mm_sink_check(spx__mm_sink *k, size_t total) {
  spx_status s;
  if (!k->size_line && (s = spx__mm_sink_head(k))) return s;
  if (k->n + (k->n && k->b[k->n - 1] != '\n') > k->limit || (k->size_line && total > k->limit))
    return spx__mm_too_long(k->name, k->size_line, k->nnz, k->limit, k->gz);
  return SPX_OK;
}

/* The text, ended by '\n', to src, which owns it from here. */
static void spx__mm_sink_done(spx__mm_sink *k, spx__mm_src *src) {
  if (k->n && k->b[k->n - 1] != '\n') k->b[k->n++] = '\n'; /* the byte room() kept */
  src->p = src->heap = k->b;
  src->n = k->n;
  if (!src->p) src->p = "";
}

static int spx__mm_is_gzip(const char *p, size_t n) {
  return n >= 2 && (unsigned char)p[0] == 0x1f && (unsigned char)p[1] == 0x8b;
}

/* The inflated size a gzip trailer (the last 4 bytes t of n) gives, when plausible: a hint only
 * (mod 2^32, and the last member's); a forged one costs no more than the limit allows. */
static size_t spx__mm_gz_hint(const unsigned char *t, uint64_t n) {
  uint64_t h = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
  return n >= 18 && h >= n && h / 1100 <= n && h < SIZE_MAX / 4 ? (size_t)h : 0;
}

/* A file as read() (POSIX) or stdio sees it. */
#if SPX__MM_POSIX
typedef int spx__mm_fd;
#define SPX__MM_NOFD (-1)
#else
typedef FILE *spx__mm_fd;
#define SPX__MM_NOFD NULL
#endif

/* One read of up to n bytes: how many, 0 at the end, -1 on an error (errno says which). */
static long long spx__mm_sysread(spx__mm_fd fd, void *b, size_t n) {
#if SPX__MM_POSIX
  ssize_t r;
  do r = read(fd, b, SPX__MIN(n, (size_t)1 << 30)); while (r < 0 && errno == EINTR);
  return (long long)r;
#else
  size_t r = fread(b, 1, n, fd);
  return r ? (long long)r : ferror(fd) ? -1 : 0;
#endif
}

/* Compressed input: the caller's bytes, or a file read in chunks into buf. */
typedef struct spx__mm_in {
  const unsigned char *p; /* bytes [pos, n) are not inflated yet */
  size_t n, pos;
  uint64_t off;           /* input bytes before p */
  uint64_t total;         /* the input's size where known ahead (a buffer, a regular file), else 0 */
  spx__mm_fd fd;          /* SPX__MM_NOFD: p is all there is (eof set) */
  int eof;
  unsigned char *buf;
  size_t cap;
} spx__mm_in;

/* At least want bytes at p + pos, unless the input ends first. */
static spx_status spx__mm_in_fill(spx__mm_in *in, size_t want, const char *name) {
  if (in->n - in->pos >= want || in->eof) return SPX_OK;
  memmove(in->buf, in->buf + in->pos, in->n - in->pos);
  in->off += in->pos;
  in->n -= in->pos;
  in->pos = 0;
  in->p = in->buf;
  while (in->n < want && !in->eof) {
    long long got = spx__mm_sysread(in->fd, in->buf + in->n, in->cap - in->n);
    if (got < 0) return spx__fail(SPX_IO, "%s: read error: %s", name, strerror(errno));
    in->eof = got == 0;
    in->n += (size_t)got;
  }
  return SPX_OK;
}

/* Inflates the gzip stream of in (concatenated members too, as `cat a.gz b.gz` makes) into k,
 * checked as it grows: a bomb stops at the limit its header allows. Truncated or corrupt data
 * is SPX_PARSE. */
static spx_status spx__mm_inflate(spx__mm_in *in, spx__mm_sink *k) {
  z_stream z;
  spx_status s = SPX_OK;
  int r;
  k->gz = 1;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK) return spx__fail(SPX_OUT_OF_MEMORY, "%s: cannot initialize zlib", k->name);
  for (;;) {
    size_t ain, aout;
    if ((s = spx__mm_in_fill(in, 1, k->name)) || (s = spx__mm_sink_room(k, k->n + ((size_t)1 << 16)))) break;
    ain = SPX__MIN(in->n - in->pos, (size_t)1 << 30);
    aout = SPX__MIN(k->cap - k->n - 1, (size_t)1 << 30);
    z.next_in = (Bytef *)(uintptr_t)(in->p + in->pos); /* zlib's API is not const-correct */
    z.avail_in = (uInt)ain;
    z.next_out = (Bytef *)(k->b + k->n);
    z.avail_out = (uInt)aout;
    r = inflate(&z, Z_NO_FLUSH);
    in->pos += ain - z.avail_in;
    k->n += aout - z.avail_out;
    if ((s = spx__mm_sink_check(k, 0))) break;
    if (r == Z_STREAM_END) { /* the end, or another member: its first two bytes say */
      uint64_t at;
      if ((s = spx__mm_in_fill(in, 2, k->name)) || in->pos == in->n) break;
      if (spx__mm_is_gzip((const char *)in->p + in->pos, in->n - in->pos) && inflateReset(&z) == Z_OK) continue;
      at = in->off + in->pos;
      if (in->total > at)
        s = spx__fail_at(SPX_PARSE, k->name, 0, "%llu bytes of trailing junk after the gzip data",
                         (unsigned long long)(in->total - at));
      else
        s = spx__fail_at(SPX_PARSE, k->name, 0, "trailing junk after the gzip data (from byte %llu on)",
                         (unsigned long long)at);
      break;
    }
    if (r == Z_MEM_ERROR) { s = spx__fail(SPX_OUT_OF_MEMORY, "%s: out of memory in zlib", k->name); break; }
    if (r != Z_OK && r != Z_BUF_ERROR) {
      s = spx__fail_at(SPX_PARSE, k->name, 0, "corrupt gzip data (%s)", z.msg ? z.msg : "bad stream");
      break;
    }
    if (in->pos == in->n && z.avail_out > 0) { /* inflate wants more input: is there any? */
      if ((s = spx__mm_in_fill(in, 1, k->name))) break;
      if (in->pos == in->n) {
        s = spx__fail_at(SPX_PARSE, k->name, 0,
                         "truncated gzip data: the compressed stream ends early (%zu bytes inflated)", k->n);
        break;
      }
    }
  }
  inflateEnd(&z);
  return s;
}

/* The text of n bytes in memory: data itself when it ends in '\n' (no copy), else a copy with the
 * '\n' added, or the inflated gzip data. On success src owns what it allocated. (A plain buffer
 * is in memory already: spx__mm_fits applies the limit to it.) */
spx_status spx__mm_text(const char *data, size_t n, const char *name, spx__mm_src *src) {
  spx__mm_sink k;
  spx__mm_in in;
  spx_status s;
  memset(src, 0, sizeof *src);
  if (!spx__mm_is_gzip(data, n)) {
    if (n == 0 || data[n - 1] == '\n') {
      src->p = data;
      src->n = n;
      return SPX_OK;
    }
    if (!(src->heap = (char *)spx__alloc(n + 1, 1))) return SPX_OUT_OF_MEMORY;
    memcpy(src->heap, data, n);
    src->heap[n] = '\n';
    src->p = src->heap;
    src->n = n + 1;
    return SPX_OK;
  }
  memset(&in, 0, sizeof in);
  in.p = (const unsigned char *)data;
  in.n = in.total = n;
  in.fd = SPX__MM_NOFD;
  in.eof = 1;
  spx__mm_sink_init(&k, name);
  if (n >= 18) k.hint = spx__mm_gz_hint(in.p + n - 4, n);
  if ((s = spx__mm_inflate(&in, &k))) {
    SPX_FREE(k.b);
    return s;
  }
  spx__mm_sink_done(&k, src);
  return SPX_OK;
}

#if SPX__MM_POSIX
#define SPX__MM_PREAD_MIN ((size_t)32 << 20) /* below this, one read() is as fast */

/* Bytes [k->n, size) of a regular file, one pread loop per thread: the copies and the first touch
 * of the fresh buffer run in parallel (on one core they, not the parse, bound a large read). A
 * slice that ends early means the file shrank meanwhile: SPX_IO. */
static spx_status spx__mm_pread(int fd, size_t size, spx__mm_sink *k) {
  const size_t from = k->n, align = (size_t)2 << 20;
  size_t piece;
  int64_t t, nt = 1;
  int err = 0, shrank = 0;
#if defined(_OPENMP)
  nt = omp_get_max_threads();
#endif
  piece = ((size - from) / (size_t)nt + align - 1) / align * align;
  nt = (int64_t)((size - from + piece - 1) / piece);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) reduction(max : err, shrank) if (nt > 1)
#endif
  for (t = 0; t < nt; t++) {
    size_t o = from + (size_t)t * piece, e = SPX__MIN(o + piece, size);
    while (o < e) {
      ssize_t got = pread(fd, k->b + o, SPX__MIN(e - o, (size_t)1 << 30), (off_t)o);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) { err = errno; break; }
      if (got == 0) { shrank = 1; break; }
      o += (size_t)got;
    }
  }
  if (err) return spx__fail(SPX_IO, "%s: read error: %s", k->name, strerror(err));
  if (shrank) return spx__fail(SPX_IO, "%s: the file shrank while it was being read (it had %zu bytes)", k->name, size);
  if (lseek(fd, (off_t)size, SEEK_SET) < 0) /* pread leaves the offset where read() stopped */
    return spx__fail(SPX_IO, "%s: cannot seek: %s", k->name, strerror(errno));
  k->n = size;
  return SPX_OK;
}
#endif

/* Plain text from fd (size: a regular file's, else 0): read serially until the size line is in
 * (it bounds the rest; a foreign first line stops the read at once), then the rest of a regular
 * file in parallel slices, then serially to the end (a file that grew, a pipe, a device). */
static spx_status spx__mm_read_plain(spx__mm_fd fd, size_t size, spx__mm_sink *k) {
  spx_status s;
  for (;;) {
    long long got;
    if ((s = spx__mm_sink_check(k, size))) return s;
#if SPX__MM_POSIX
    if (k->size_line && size > k->n + SPX__MM_PREAD_MIN) {
      if ((s = spx__mm_sink_room(k, size)) || (s = spx__mm_pread(fd, size, k))) return s;
      size = 0; /* read; what follows, if anything, was appended meanwhile */
      continue;
    }
#endif
    if ((s = spx__mm_sink_room(k, k->n + ((size_t)1 << 16)))) return s;
    if ((got = spx__mm_sysread(fd, k->b + k->n, k->cap - 1 - k->n)) < 0)
      return spx__fail(SPX_IO, "%s: read error: %s", k->name, strerror(errno));
    if (!got) return SPX_OK;
    k->n += (size_t)got;
  }
}

/* The file's first bytes decide: gzip (they start the compressed input) or plain text. */
static spx_status spx__mm_read_fd(spx__mm_fd fd, size_t size, spx__mm_sink *k) {
  spx__mm_in in;
  spx_status s;
  unsigned char *nb;
  if ((s = spx__mm_sink_room(k, (size_t)1 << 16))) return s;
  while (k->n < 2) {
    long long got = spx__mm_sysread(fd, k->b + k->n, k->cap - 1 - k->n);
    if (got < 0) return spx__fail(SPX_IO, "%s: read error: %s", k->name, strerror(errno));
    if (!got) break;
    k->n += (size_t)got;
  }
  if (!spx__mm_is_gzip(k->b, k->n)) return spx__mm_read_plain(fd, size, k);
  memset(&in, 0, sizeof in);
  in.buf = (unsigned char *)k->b;
  in.n = k->n;
  in.cap = k->cap;
  in.fd = fd;
  in.total = size;
  k->b = NULL;
  k->n = k->cap = 0;
  k->hint = 0;
  if (!(nb = (unsigned char *)SPX_REALLOC(in.buf, (size_t)4 << 20))) {
    SPX_FREE(in.buf);
    return spx__fail(SPX_OUT_OF_MEMORY, "%s: out of host memory for the compressed input", k->name);
  }
  in.buf = nb;
  in.p = nb;
  in.cap = (size_t)4 << 20;
#if SPX__MM_POSIX
  if (size >= 18) {
    unsigned char t[4];
    if (pread(fd, t, 4, (off_t)(size - 4)) == 4) k->hint = spx__mm_gz_hint(t, size);
  }
#endif
  s = spx__mm_inflate(&in, k);
  SPX_FREE(in.buf);
  return s;
}

/* The text of the file at path. Opened once and read, never mapped: a FIFO has one writer to meet
 * (a second open would wait for another forever), and a mapped file that another process
 * truncates raises SIGBUS in the reader, which a library cannot survive; reading costs a copy, in
 * parallel for large files. */
spx_status spx__mm_load(const char *path, spx__mm_src *src) {
  spx__mm_sink k;
  spx_status s;
  size_t size = 0;
  spx__mm_fd fd;
#if SPX__MM_POSIX
  struct stat st;
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
    return spx__fail(SPX_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0) {
    s = spx__fail(SPX_IO, "%s: cannot stat: %s", path, strerror(errno));
    close(fd);
    return s;
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return spx__fail(SPX_IO, "%s: cannot read: it is a directory", path);
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size < (uint64_t)SIZE_MAX / 4) {
    size = (size_t)st.st_size;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
#else
  if (!(fd = fopen(path, "rb"))) return spx__fail(SPX_IO, "%s: cannot open: %s", path, strerror(errno));
#endif
  spx__mm_sink_init(&k, path);
  k.hint = size;
  s = spx__mm_read_fd(fd, size, &k);
#if SPX__MM_POSIX
  close(fd);
#else
  fclose(fd);
#endif
  if (s) {
    SPX_FREE(k.b);
    return s;
  }
  spx__mm_sink_done(&k, src);
  return SPX_OK;
}

/* The header of a plain regular file, for a reader that reads the rest itself in slices
 * (spx_dist_read_mm): read as spx__mm_load reads it, through the same checks, until the size line
 * is in; gzip (its first two bytes) and anything but a regular file leave *plain 0. */
spx_status spx__mm_head(const char *path, spx__mm_hdr *h, uint64_t *size, int *plain) {
#if SPX__MM_POSIX
  spx__mm_sink k;
  struct stat st;
  spx_status s = SPX_OK;
  int fd, gz = 0;
  *plain = 0;
  *size = 0;
  if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return spx__fail(SPX_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    s = S_ISDIR(st.st_mode) ? spx__fail(SPX_IO, "%s: cannot read: it is a directory", path)
                            : spx__fail(SPX_IO, "%s: cannot stat: %s", path, strerror(errno));
    close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size >= (uint64_t)SIZE_MAX / 4) {
    close(fd);
    return SPX_OK;
  }
  spx__mm_sink_init(&k, path);
  while (!s && !k.size_line) {
    long long got;
    if ((s = spx__mm_sink_room(&k, k.n + ((size_t)1 << 16)))) break;
    if ((got = spx__mm_sysread(fd, k.b + k.n, k.cap - 1 - k.n)) < 0) {
      s = spx__fail(SPX_IO, "%s: read error: %s", path, strerror(errno));
      break;
    }
    if (!got) break;
    k.n += (size_t)got;
    if (k.n >= 2 && (gz = spx__mm_is_gzip(k.b, k.n))) break;
    s = spx__mm_sink_check(&k, (size_t)st.st_size);
  }
  if (!s && !gz && !k.size_line) { /* the file ended first (a size line without its '\n', or none) */
    if (!k.n) s = spx__fail_at(SPX_PARSE, path, 0, "empty file (expected a '" SPX__MM_BANNER "' header)");
    else if (k.b[k.n - 1] != '\n') k.b[k.n++] = '\n'; /* the byte room() kept */
    k.seen = k.n;
  }
  if (!s && !gz) {
    char last = '\n';
    if (pread(fd, &last, 1, st.st_size - 1) != 1) last = '\n';
    if (!(s = spx__mm_header(k.b, k.seen, path, h)) &&
        !(s = spx__mm_fits(h, (size_t)st.st_size + (last != '\n'), path))) {
      *size = (uint64_t)st.st_size;
      *plain = 1;
    }
  }
  SPX_FREE(k.b);
  close(fd);
  return s;
#else
  (void)path;
  (void)h;
  *size = 0;
  *plain = 0; /* no pread: rank 0 reads the file */
  return SPX_OK;
#endif
}
