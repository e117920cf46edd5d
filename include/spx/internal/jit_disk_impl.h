/* SPDX-License-Identifier: BSD-3-Clause */
/* The JIT's disk cache (jit_cache.h): its directory (SPX_CACHE, SPX_CACHE_DIR, XDG_CACHE_HOME,
 * HOME), the trust its directories and entries must earn, the entry file (a checksummed header and
 * the image), written whole and renamed into place, and eviction of the least recently used
 * entries past the cap. It calls the key's hash and name (jit_key_impl.h) and counts into the
 * stats; no lock: the table above it is jit_impl.h's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common.h"
#include "config.h"
#include "jit_cache.h"
#include "../jit.h"

#define SPX__JIT_FORMAT 1u          /* entry format; SPX_JIT_CACHE_SUBDIR says it too */
#define SPX__JIT_HEADER 128         /* bytes before the payload */
#define SPX__JIT_MAX_PAYLOAD ((uint64_t)1 << 30)
#define SPX__JIT_DEFAULT_CAP_MB 512.0
#define SPX__JIT_STALE_TMP_S 3600   /* a temporary file this old was left by a writer that died */

/* ---- The disk cache --------------------------------------------------------------------------- */
/* The cache directory (not the versioned subdirectory); 0 when the disk cache is off. */
static int spx__jit_root(char *root, size_t len) {
  const spx__config *cfg = spx__cfg();
  const char *off = cfg->cache, *d = cfg->cache_dir, *x = cfg->xdg_cache_home, *h = cfg->home;
  int n;
  root[0] = 0;
  if (off && (!strcmp(off, "off") || !strcmp(off, "0") || !strcmp(off, "no") || !strcmp(off, "false") ||
              !strcmp(off, "OFF")))
    return 0;
  if (d && *d) n = snprintf(root, len, "%s", d);
  else if (x && x[0] == '/') n = snprintf(root, len, "%s/spx", x); /* XDG: relative paths are invalid */
  else if (h && *h) n = snprintf(root, len, "%s/.cache/spx", h);
  else return 0;
  if (n < 0 || (size_t)n + 48 >= len) { /* room for /v1/<key> and a temporary suffix */
    root[0] = 0;
    return 0;
  }
  return 1;
}

/* The entry directory (root/SPX_JIT_CACHE_SUBDIR) whatever its verdict; 0 when the disk cache is off. */
static int spx__jit_subdir(char *dir, size_t len) {
  char root[1024];
  if (!spx__jit_root(root, sizeof root)) return 0;
  return snprintf(dir, len, "%s/%s", root, SPX_JIT_CACHE_SUBDIR) < (int)len;
}

const char *spx_jit_cache_dir(void) {
  static SPX__THREAD_LOCAL char root[1024];
  return spx__jit_root(root, sizeof root) ? root : NULL;
}

/* ---- Trust ------------------------------------------------------------------------------------
 * The disk cache holds code the GPU runs, and its checksums (public seeds) catch accidents, not
 * forgeries. So the cache directory and its entry directory must each be a directory (not a
 * symbolic link) owned by the effective user and writable by nobody else; otherwise the process
 * runs on the memory cache alone, as with SPX_CACHE=off, after one notice. A directory not yet
 * there is fine: spx__jit_mkdirs creates it 0700 and it is checked again before the first write.
 * Each entry is checked too, on its open descriptor (spx__jit_disk_read). */
enum { SPX__JIT_DIR_UNKNOWN = 0, SPX__JIT_DIR_OK, SPX__JIT_DIR_ABSENT, SPX__JIT_DIR_REFUSED };
#define SPX__JIT_NVERDICTS 8

/* Verdicts per entry-directory path for the process (SPX_CACHE_DIR may change between calls; a
 * refused directory keeps its verdict, so its notice is printed once). */
static pthread_mutex_t spx__jit_trust_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char dir[1100];
  int verdict; /* SPX__JIT_DIR_* */
} spx__jit_verdicts[SPX__JIT_NVERDICTS];
static int spx__jit_verdict_next;

/* Mode bits that let someone else than the owner change a file or a directory's names. */
#define SPX__JIT_OTHERS_WRITE ((mode_t)(S_IWGRP | S_IWOTH))

static const char *spx__jit_writers(mode_t m) {
  return (m & S_IWOTH) ? "others" : "its group";
}

/* One directory: SPX__JIT_DIR_OK, _ABSENT, or _REFUSED with `why`. */
static int spx__jit_dir_check(const char *dir, char *why, size_t wlen) {
  struct stat st;
  if (lstat(dir, &st) != 0) {
    if (errno == ENOENT) return SPX__JIT_DIR_ABSENT;
    snprintf(why, wlen, "cannot be examined (%s)", strerror(errno));
  } else if (S_ISLNK(st.st_mode)) {
    snprintf(why, wlen, "is a symbolic link");
  } else if (!S_ISDIR(st.st_mode)) {
    snprintf(why, wlen, "is not a directory");
  } else if (st.st_uid != geteuid()) {
    snprintf(why, wlen, "is owned by uid %u, not by this process's user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
  } else if (st.st_mode & SPX__JIT_OTHERS_WRITE) {
    snprintf(why, wlen, "is writable by %s (mode %04o)", spx__jit_writers(st.st_mode),
             (unsigned)(st.st_mode & 07777));
  } else {
    return SPX__JIT_DIR_OK;
  }
  return SPX__JIT_DIR_REFUSED;
}

/* Whether the disk cache in entry directory dir may be used (its parent, the cache directory, is
 * checked with it). A kept verdict is reused, except that one saying "absent" is checked again
 * unless `kept_absent_ok` (spx_jit_stats_get: no I/O once a path has a verdict). */
static int spx__jit_trusted(const char *dir, int kept_absent_ok) {
  char root[1100], why[160];
  const char *bad = dir, *slash = strrchr(dir, '/');
  int i, v, slot = -1;
  pthread_mutex_lock(&spx__jit_trust_lock);
  for (i = 0; i < SPX__JIT_NVERDICTS && slot < 0; i++)
    if (spx__jit_verdicts[i].verdict != SPX__JIT_DIR_UNKNOWN && !strcmp(spx__jit_verdicts[i].dir, dir)) slot = i;
  if (slot >= 0 && (spx__jit_verdicts[slot].verdict != SPX__JIT_DIR_ABSENT || kept_absent_ok)) {
    v = spx__jit_verdicts[slot].verdict;
    pthread_mutex_unlock(&spx__jit_trust_lock);
    return v != SPX__JIT_DIR_REFUSED;
  }
  snprintf(root, sizeof root, "%.*s", slash && slash > dir ? (int)(slash - dir) : (int)strlen(dir), dir);
  for (i = (int)strlen(root); i > 1 && root[i - 1] == '/'; i--) root[i - 1] = 0; /* "d/" would follow a link */
  if ((v = spx__jit_dir_check(root, why, sizeof why)) == SPX__JIT_DIR_REFUSED) bad = root;
  else if (v == SPX__JIT_DIR_OK) v = spx__jit_dir_check(dir, why, sizeof why);
  if (slot < 0 && strlen(dir) < sizeof spx__jit_verdicts[0].dir) {
    slot = spx__jit_verdict_next;
    spx__jit_verdict_next = (spx__jit_verdict_next + 1) % SPX__JIT_NVERDICTS;
    memcpy(spx__jit_verdicts[slot].dir, dir, strlen(dir) + 1);
  }
  if (slot >= 0) spx__jit_verdicts[slot].verdict = v;
  if (v == SPX__JIT_DIR_REFUSED)
    spx__warn("JIT cache directory %s %s; running without the disk cache (GPU code is loaded from it: it must "
              "be this user's directory, writable by nobody else)", bad, why);
  pthread_mutex_unlock(&spx__jit_trust_lock);
  return v != SPX__JIT_DIR_REFUSED;
}

/* The entry directory when the disk cache is on and its directories pass spx__jit_trusted. */
int spx__jit_disk_dir(char *dir, size_t len, int kept_absent_ok) {
  return spx__jit_subdir(dir, len) && spx__jit_trusted(dir, kept_absent_ok);
}

/* Opens directory `dir` for listing without following a symbolic link in its place. */
DIR *spx__jit_opendir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e;
  DIR *d;
  if (fd < 0) return NULL;
  if (!(d = fdopendir(fd))) {
    e = errno;
    close(fd);
    errno = e;
  }
  return d;
}

/* Whether `name` in the open directory d is a regular file of this user: what spx may remove
 * (spx_jit_clear, spx_jit_forget, eviction); *st receives its status. Symbolic links are not followed. */
int spx__jit_is_mine(DIR *d, const char *name, struct stat *st) {
  return fstatat(dirfd(d), name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

double spx__jit_cap_mb(void) {
  static atomic_int warned;
  const char *e = spx__cfg()->cache_max_mb;
  char *end;
  double v;
  if (!e || !*e) return SPX__JIT_DEFAULT_CAP_MB;
  v = strtod(e, &end);
  if (*end || !(v > 0) || v > 1e12) {
    if (!atomic_exchange(&warned, 1))
      spx__warn("SPX_CACHE_MAX_MB=%s is not a positive number of MiB; using %.0f", e, SPX__JIT_DEFAULT_CAP_MB);
    return SPX__JIT_DEFAULT_CAP_MB;
  }
  return v;
}

static void spx__jit_put32(unsigned char *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void spx__jit_put64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t spx__jit_get32(const unsigned char *p) {
  uint32_t v = 0;
  int i;
  for (i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t spx__jit_get64(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Entry header, little-endian. ORDER: fixed by SPX__JIT_FORMAT; a change needs a new format
 * number and SPX_JIT_CACHE_SUBDIR.
 *  _(field,          offset, bytes) */
#define SPX__JIT_HDR(_)          \
  _(MAGIC,            0,   8)    \
  _(FORMAT,           8,   4)    \
  _(KIND,             12,  4)    /* 1 CUBIN, 2 PTX */ \
  _(KEY_HI,           16,  8)    \
  _(KEY_LO,           24,  8)    \
  _(PAYLOAD_SIZE,     32,  8)    \
  _(PAYLOAD_HASH,     40,  8)    \
  _(TEMPLATE,         48,  40)   /* NUL-padded, for people listing the directory */ \
  _(ARCH,             88,  24)   \
  _(NVRTC_MAJOR,      112, 4)    \
  _(NVRTC_MINOR,      116, 4)    \
  _(HEADER_HASH,      120, 8)    /* of bytes 0..119 */
#define SPX__JIT_HDR_ENUM(f, off, n) SPX__JH_##f = off,
enum { SPX__JIT_HDR(SPX__JIT_HDR_ENUM) SPX__JH_END = SPX__JIT_HEADER };
#undef SPX__JIT_HDR_ENUM
static const char spx__jit_magic[8] = {'S', 'P', 'X', 'J', 'I', 'T', 'C', '\n'};
#define SPX__JIT_SEED_PAYLOAD 0x452821e638d01377ull
#define SPX__JIT_SEED_HEADER 0xbe5466cf34e90c6cull

static int spx__jit_read_all(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

static int spx__jit_write_all(int fd, const void *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t r = write(fd, (const char *)buf + put, n - put);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    put += (size_t)r;
  }
  return 1;
}


/* Reads entry `path` for key k: SPX__JIT_READ_OK with *image allocated, or what was wrong (`why`
 * says it). A FIFO, device or symbolic link in an entry's place is refused without blocking or
 * following it; a file another user could have written is refused as if absent. */
int spx__jit_disk_read(const char *path, spx__jit_key k, void **image, size_t *size, int *cubin,
                              char *why, size_t wlen) {
  unsigned char h[SPX__JIT_HEADER];
  struct stat st;
  uint64_t n;
  uint32_t kind = 0;
  void *img = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC), ok = SPX__JIT_READ_BAD, fl;
  *image = NULL;
  if (fd < 0) {
    if (errno == ENOENT) return SPX__JIT_READ_ABSENT;
    if (errno == ELOOP || errno == EMLINK) snprintf(why, wlen, "a symbolic link"); /* O_NOFOLLOW */
    else snprintf(why, wlen, "unreadable (%s)", strerror(errno));
    return SPX__JIT_READ_BAD;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, wlen, "not a regular file");
  } else if (st.st_uid != geteuid()) {
    snprintf(why, wlen, "owned by uid %u, not by this process's user (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
    ok = SPX__JIT_READ_FOREIGN;
  } else if (st.st_mode & SPX__JIT_OTHERS_WRITE) {
    snprintf(why, wlen, "writable by %s (mode %04o)", spx__jit_writers(st.st_mode), (unsigned)(st.st_mode & 07777));
    ok = SPX__JIT_READ_UNSAFE;
  } else if ((fl = fcntl(fd, F_GETFL)) < 0 || ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) {
    snprintf(why, wlen, "unreadable (%s)", strerror(errno));
  } else if ((uint64_t)st.st_size < SPX__JIT_HEADER || !spx__jit_read_all(fd, h, sizeof h)) {
    snprintf(why, wlen, "truncated (%lld bytes, less than its header)", (long long)st.st_size);
  } else if (memcmp(h + SPX__JH_MAGIC, spx__jit_magic, 8)) {
    snprintf(why, wlen, "not an spx JIT cache entry");
  } else if (spx__jit_get64(h + SPX__JH_HEADER_HASH) != spx__jit_hash64(h, SPX__JH_HEADER_HASH, SPX__JIT_SEED_HEADER)) {
    snprintf(why, wlen, "corrupt (header checksum mismatch)");
  } else if (spx__jit_get32(h + SPX__JH_FORMAT) != SPX__JIT_FORMAT ||
             ((kind = spx__jit_get32(h + SPX__JH_KIND)) != 1 && kind != 2)) {
    snprintf(why, wlen, "of another format (%u)", (unsigned)spx__jit_get32(h + SPX__JH_FORMAT));
  } else if (spx__jit_get64(h + SPX__JH_KEY_HI) != k.hi || spx__jit_get64(h + SPX__JH_KEY_LO) != k.lo) {
    snprintf(why, wlen, "holding another key");
  } else if ((n = spx__jit_get64(h + SPX__JH_PAYLOAD_SIZE)) > SPX__JIT_MAX_PAYLOAD ||
             n != (uint64_t)st.st_size - SPX__JIT_HEADER) {
    snprintf(why, wlen, "truncated (%lld payload bytes where the header says %llu)",
             (long long)st.st_size - SPX__JIT_HEADER, (unsigned long long)n);
  } else if (!(img = spx__alloc((size_t)n, 1))) {
    snprintf(why, wlen, "too large to read (%llu bytes)", (unsigned long long)n);
  } else if (!spx__jit_read_all(fd, img, (size_t)n)) {
    snprintf(why, wlen, "truncated while reading");
  } else if (spx__jit_hash64(img, (size_t)n, SPX__JIT_SEED_PAYLOAD) != spx__jit_get64(h + SPX__JH_PAYLOAD_HASH)) {
    snprintf(why, wlen, "corrupt (payload checksum mismatch)");
  } else if (kind == 2 && (n == 0 || ((const char *)img)[n - 1] != 0)) {
    snprintf(why, wlen, "corrupt (PTX without its terminating NUL)");
  } else {
    ok = SPX__JIT_READ_OK;
    *image = img;
    *size = (size_t)n;
    *cubin = kind == 1;
    img = NULL;
    (void)futimens(fd, NULL); /* recently used: eviction goes by modification time */
  }
  SPX_FREE(img);
  close(fd);
  return ok;
}

/* mkdir -p with mode 0700: compiled code loaded from here must not be writable by others (a
 * directory that exists already keeps its mode: spx__jit_trusted judges it). */
static int spx__jit_mkdirs(const char *dir) {
  char p[1100];
  size_t i, n = strlen(dir);
  if (n >= sizeof p) return -1;
  memcpy(p, dir, n + 1);
  for (i = 1; i <= n; i++)
    if (p[i] == '/' || p[i] == 0) {
      char c = p[i];
      p[i] = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
      p[i] = c;
    }
  return 0;
}

/* Writes the entry atomically, mode 0600: a temporary file in the same directory, renamed over the
 * name. 1: written; 0: not, the directories (created now) were refused by spx__jit_trusted, which
 * said why; -1: not, an I/O error (spx_last_error says which). */
int spx__jit_disk_write(const char *dir, spx__jit_key k, const spx_jit_key_inputs *in,
                               const void *image, size_t size, int cubin) {
  unsigned char h[SPX__JIT_HEADER];
  char hex[33], tmp[1200], path[1200];
  struct stat st;
  int fd, ok;
  spx__jit_hex(k, hex);
  snprintf(path, sizeof path, "%s/%s", dir, hex);
  snprintf(tmp, sizeof tmp, "%s/" SPX__JIT_TMP_PREFIX "%s-XXXXXX", dir, hex);
  if (spx__jit_mkdirs(dir) != 0) {
    spx__fail(SPX_IO, "cannot create the JIT cache directory %s: %s", dir, strerror(errno));
    return -1;
  }
  if (!spx__jit_trusted(dir, 0)) return 0; /* it was absent when the lookup began: judge what is there now */
  if ((fd = mkstemp(tmp)) < 0) {
    spx__fail(SPX_IO, "cannot create a file in the JIT cache directory %s: %s", dir, strerror(errno));
    return -1;
  }
  /* mkstemp makes it 0600 already; say so, and check, whatever the C library did. */
  if (fchmod(fd, 0600) != 0 || fstat(fd, &st) != 0) {
    ok = errno;
  } else if ((st.st_mode & 07777) != 0600 || st.st_uid != geteuid()) {
    ok = EPERM;
  } else {
    ok = 0;
  }
  if (ok) {
    spx__fail(SPX_IO, "cannot make the JIT cache file %s private (mode 0600, owned by uid %u): %s", tmp,
              (unsigned)geteuid(), strerror(ok));
    close(fd);
    unlink(tmp);
    return -1;
  }
  memset(h, 0, sizeof h);
  memcpy(h + SPX__JH_MAGIC, spx__jit_magic, 8);
  spx__jit_put32(h + SPX__JH_FORMAT, SPX__JIT_FORMAT);
  spx__jit_put32(h + SPX__JH_KIND, cubin ? 1 : 2);
  spx__jit_put64(h + SPX__JH_KEY_HI, k.hi);
  spx__jit_put64(h + SPX__JH_KEY_LO, k.lo);
  spx__jit_put64(h + SPX__JH_PAYLOAD_SIZE, (uint64_t)size);
  spx__jit_put64(h + SPX__JH_PAYLOAD_HASH, spx__jit_hash64(image, size, SPX__JIT_SEED_PAYLOAD));
  memcpy(h + SPX__JH_TEMPLATE, in->template_name,
         SPX__MIN(strlen(in->template_name), (size_t)(SPX__JH_ARCH - SPX__JH_TEMPLATE - 1)));
  memcpy(h + SPX__JH_ARCH, in->arch, SPX__MIN(strlen(in->arch), (size_t)(SPX__JH_NVRTC_MAJOR - SPX__JH_ARCH - 1)));
  spx__jit_put32(h + SPX__JH_NVRTC_MAJOR, (uint32_t)in->nvrtc_major);
  spx__jit_put32(h + SPX__JH_NVRTC_MINOR, (uint32_t)in->nvrtc_minor);
  spx__jit_put64(h + SPX__JH_HEADER_HASH, spx__jit_hash64(h, SPX__JH_HEADER_HASH, SPX__JIT_SEED_HEADER));
  ok = spx__jit_write_all(fd, h, sizeof h) && spx__jit_write_all(fd, image, size);
  /* No fsync: after a crash an entry may be empty or short, which the checksum catches. */
  if (close(fd) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    spx__fail(SPX_IO, "cannot write the JIT cache entry %s: %s", path, strerror(e));
    return -1;
  }
  atomic_fetch_add(&spx__jit_st.disk_writes, 1);
  return 1;
}

int spx__jit_is_key_name(const char *s) {
  size_t i;
  for (i = 0; i < 32; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return s[32] == 0;
}

/* The entries of dir (*files allocated, may be NULL when none) and their total size: key-named
 * regular files of this user (symbolic links are not followed). This user's temporary files older
 * than SPX__JIT_STALE_TMP_S are removed when `sweep` is set. */
int spx__jit_scan(const char *dir, spx__jit_file **files, int64_t *nfiles, int64_t *total, int sweep) {
  DIR *d = spx__jit_opendir(dir);
  struct dirent *de;
  spx__jit_file *f = NULL, *nf;
  int64_t n = 0, cap = 0;
  struct stat st;
  time_t now = time(NULL);
  *files = NULL;
  *nfiles = *total = 0;
  if (!d) return errno == ENOENT ? 0 : -1;
  while ((de = readdir(d)) != NULL) {
    if (!strncmp(de->d_name, SPX__JIT_TMP_PREFIX, strlen(SPX__JIT_TMP_PREFIX))) {
      if (sweep && spx__jit_is_mine(d, de->d_name, &st) && now - st.st_mtime > SPX__JIT_STALE_TMP_S)
        (void)unlinkat(dirfd(d), de->d_name, 0);
      continue;
    }
    if (!spx__jit_is_key_name(de->d_name) || !spx__jit_is_mine(d, de->d_name, &st)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      if (!(nf = (spx__jit_file *)SPX_REALLOC(f, (size_t)cap * sizeof *f))) break;
      f = nf;
    }
    memcpy(f[n].name, de->d_name, 33); /* a key name: 32 digits and the NUL */
    f[n].size = (int64_t)st.st_size;
    f[n].mtime = st.st_mtim;
    *total += f[n].size;
    n++;
  }
  closedir(d);
  *files = f;
  *nfiles = n;
  return 0;
}

static int spx__jit_older(const void *a, const void *b) {
  const spx__jit_file *x = (const spx__jit_file *)a, *y = (const spx__jit_file *)b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Removes least recently used entries until the directory fits the cap. Another process may
 * evict at the same time; a file it removed first is simply gone. */
void spx__jit_evict(const char *dir) {
  spx__jit_file *f;
  int64_t n, i, total;
  double cap = spx__jit_cap_mb() * 1048576.0;
  char path[1200];
  int64_t left;
  if (spx__jit_scan(dir, &f, &n, &total, 1) != 0) return;
  left = n;
  if ((double)total > cap) {
    qsort(f, (size_t)n, sizeof *f, spx__jit_older);
    for (i = 0; i < n && (double)total > cap; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
      if (unlink(path) == 0) atomic_fetch_add(&spx__jit_st.evictions, 1);
      total -= f[i].size; /* gone either way: by us or by another process */
      left--;
    }
  }
  spx__jit_scanned(total, left);
  SPX_FREE(f);
}
