/* SPDX-License-Identifier: BSD-3-Clause */
/* Implementation of spx/mm.h.
 *
 * Reading, in order: the file into memory (read, never mapped; inflated when it starts with the
 * gzip magic; bounded as it arrives by what its header allows), the header and size line, pass 1
 * (count lines and entries per chunk; chunks end at line boundaries), pass 2 (parse each chunk
 * into its own slice of preallocated triplet arrays), the mirrored half of symmetric files, then
 * spx_csr_from_coo. Chunks run in parallel under OpenMP;
 * each keeps its first error and the earliest one in the file is reported, so messages (and
 * results) do not depend on the thread count. */
#include <errno.h>
#include <float.h>
#ifndef FLT_TRUE_MIN /* C11's; a C99 <float.h> lacks it */
#define FLT_TRUE_MIN 1.40129846432481707e-45F
#endif
#include <math.h> /* isnan, isinf, INFINITY, NAN: macros only, no libm */
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
#include "host.h"
#include "../io.h"
#include "../mm.h"
#include "../version.h"

/* Keyword tables, plus the keywords spx recognizes only to refuse them. */
#define SPX__MM_KW(e, kw) kw,
static const char *const spx__mm_formats[] = {SPX_MM_FORMAT_LIST(SPX__MM_KW)};
/* Largest row or column count the reader accepts. A valid tiny file may declare a 2^31-row empty
 * matrix, whose O(rows) row pointers cost seconds to zero; the fuzz harness lowers this so that it
 * measures parsing, not page clearing. Internal, not thread-safe to change while reading. */
int64_t spx__mm_dim_limit = INT32_MAX;

static const char *const spx__mm_fields[] = {SPX_MM_FIELD_LIST(SPX__MM_KW) "complex"};
static const char *const spx__mm_syms[] = {SPX_MM_SYMMETRY_LIST(SPX__MM_KW) "hermitian"};
#undef SPX__MM_KW
#define SPX__MM_NFORMAT 2 /* entries of each table that are valid enum values */
#define SPX__MM_NFIELD 3
#define SPX__MM_NSYM 3

const char *spx_mm_format_name(spx_mm_format f) {
  return (unsigned)f < SPX__MM_NFORMAT ? spx__mm_formats[f] : "unknown";
}
const char *spx_mm_field_name(spx_mm_field f) {
  return (unsigned)f < SPX__MM_NFIELD ? spx__mm_fields[f] : "unknown";
}
const char *spx_mm_symmetry_name(spx_mm_symmetry s) {
  return (unsigned)s < SPX__MM_NSYM ? spx__mm_syms[s] : "unknown";
}

/* The text to parse. It is empty or ends in '\n', so every scan stops at a '\n' without bounds
 * checks and nothing reads past the end. It lives in the caller's buffer or on the heap (the
 * loader's, after the header parser: see "input into memory"). */
typedef struct spx__mm_src {
  const char *p;
  size_t n;
  char *heap; /* SPX_FREE'd on release */
} spx__mm_src;

static void spx__mm_release(spx__mm_src *s) {
  SPX_FREE(s->heap);
  memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- lexing */

static int spx__mm_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
/* A token ends at a blank or at the end of the line. */
static int spx__mm_end(char c) { return c == '\n' || spx__mm_blank(c); }
static int spx__mm_digit(char c) { return (unsigned)(c - '0') < 10u; }

typedef struct spx__mm_tok {
  const char *s;
  size_t n;
} spx__mm_tok;

/* Splits the line at p into tokens; keeps at most max, returns how many there are. */
static int spx__mm_tokens(const char *p, spx__mm_tok *t, int max) {
  int k = 0;
  for (;;) {
    while (spx__mm_blank(*p)) p++;
    if (*p == '\n') return k;
    if (k < max) t[k].s = p;
    while (!spx__mm_end(*p)) p++;
    if (k < max) t[k].n = (size_t)(p - t[k].s);
    k++;
  }
}

/* Case-insensitive comparison of a token with a lower-case keyword. */
static int spx__mm_kw(spx__mm_tok t, const char *kw) {
  size_t i;
  for (i = 0; i < t.n && kw[i]; i++)
    if ((t.s[i] >= 'A' && t.s[i] <= 'Z' ? t.s[i] + 32 : t.s[i]) != kw[i]) return 0;
  return i == t.n && !kw[i];
}

static int spx__mm_lookup(spx__mm_tok t, const char *const *kw, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (spx__mm_kw(t, kw[i])) return i;
  return -1;
}

/* A token fit for a message: at most 40 printable characters, "..." when cut. */
static const char *spx__mm_show(const char *s, size_t n, char buf[48]) {
  size_t i, m = SPX__MIN(n, (size_t)40);
  for (i = 0; i < m; i++) buf[i] = s[i] >= 32 && s[i] < 127 ? s[i] : '?';
  if (n > m) { memcpy(buf + m, "...", 3); m += 3; }
  buf[m] = 0;
  return buf;
}

#if defined(__GNUC__)
#define SPX__MM_INLINE inline __attribute__((always_inline)) /* the parser's inner loops */
#else
#define SPX__MM_INLINE inline
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SPX__MM_SWAR 1
/* Eight ASCII digits in a little-endian word: are they all digits, and their value. */
static int spx__mm_eight(uint64_t w) {
  return ((w & 0xf0f0f0f0f0f0f0f0ull) | (((w + 0x0606060606060606ull) & 0xf0f0f0f0f0f0f0f0ull) >> 4)) ==
         0x3333333333333333ull;
}
static uint64_t spx__mm_eight_value(uint64_t w) {
  w -= 0x3030303030303030ull;
  w = w * 10 + (w >> 8); /* pairs of digits in every other byte */
  return (((w & 0x000000ff000000ffull) * 0x000f424000000064ull) +        /* *100, *10^6 */
          (((w >> 16) & 0x000000ff000000ffull) * 0x0000271000000001ull)) >> 32; /* *1, *10^4 */
}
#else
#define SPX__MM_SWAR 0
#endif

/* Appends up to room digits at *pp to *m and returns how many. Eight at a time while the text
 * has eight bytes left (lim is its end), then four: both shorten the multiply-add chain. The &&
 * chain reads a byte only after a digit, so it never passes the '\n' that ends the text. */
static SPX__MM_INLINE int spx__mm_digits(const char **pp, const char *lim, uint64_t *m, int room) {
  const char *p = *pp;
  uint64_t v = *m;
  int n = 0;
#if SPX__MM_SWAR
  while (room - n >= 8 && lim - p >= 8) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
    if (!spx__mm_eight(w)) break;
    v = v * 100000000 + spx__mm_eight_value(w);
    p += 8; n += 8;
  }
#else
  (void)lim;
#endif
  while (room - n >= 4 && spx__mm_digit(p[0]) && spx__mm_digit(p[1]) && spx__mm_digit(p[2]) &&
         spx__mm_digit(p[3])) {
    v = v * 10000 + (uint64_t)((p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0'));
    p += 4; n += 4;
  }
  for (; n < room && spx__mm_digit(*p); p++, n++) v = v * 10 + (uint64_t)(*p - '0');
  *pp = p; *m = v;
  return n;
}

/* Unsigned decimal of at most 18 significant digits; NULL if the token is not one. */
static const char *spx__mm_uint(const char *p, const char *lim, uint64_t *x) {
  const char *s0 = p;
  uint64_t v = 0;
  while (*p == '0') p++;
  spx__mm_digits(&p, lim, &v, 18);
  if (p == s0 || !spx__mm_end(*p)) return NULL;
  *x = v;
  return p;
}

/* Signed 64-bit integer (the integer field); NULL if not one or out of range. */
static const char *spx__mm_int(const char *p, const char *lim, double *out) {
  const char *s0;
  uint64_t v = 0;
  int neg = *p == '-', n;
  if (*p == '-' || *p == '+') p++;
  s0 = p;
  while (*p == '0') p++;
  n = spx__mm_digits(&p, lim, &v, 19);
  if (p == s0 || !spx__mm_end(*p)) return NULL;
  if (n == 19 && v > (uint64_t)INT64_MAX + (uint64_t)neg) return NULL;
  *out = neg ? -(double)v : (double)v;
  return p;
}

/* strtod / strtof on an exact token copy, for what the fast paths cannot decide. */
static int spx__mm_strto(const char *s, const char *e, int is_float, double *out) {
  char small[128], *buf = small, *end;
  size_t n = (size_t)(e - s);
  int ok;
  if (n >= sizeof small && !(buf = (char *)SPX_MALLOC(n + 1))) return 0;
  memcpy(buf, s, n);
  buf[n] = 0;
  *out = is_float ? (double)strtof(buf, &end) : strtod(buf, &end);
  ok = end == buf + n;
  if (buf != small) SPX_FREE(buf);
  return ok;
}

static const double spx__mm_p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#if LDBL_MANT_DIG >= 64
/* 10^k is exact in a 64-bit mantissa up to k = 27 (5^27 < 2^64). */
static const long double spx__mm_p10l[28] = {
    1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
    1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};

/* Does long double carry 64 mantissa bits at run time? Not under valgrind, for one, which does
 * x87 arithmetic in double precision: the tie check below would then pass wrong roundings. */
static int spx__mm_ld_works(void) {
  volatile uint64_t big = (1ull << 63) + 1;
  volatile long double l = (long double)big;
  return l - (long double)(1ull << 63) == 1.0L;
}

/* Is l (positive, normal) exactly halfway between the two doubles around it? Then rounding l to
 * double may differ from rounding the decimal itself, and strtod must decide. Otherwise l and the
 * decimal lie on the same side of every midpoint, and rounding l once more is exact. */
static int spx__mm_ld_tie(long double l) {
#if LDBL_MANT_DIG == 64 && (defined(__x86_64__) || defined(__i386__))
  uint64_t u; /* x87: the 64-bit mantissa comes first; its low 11 bits are below double's 53 */
  memcpy(&u, &l, sizeof u);
  return (u & 0x7ff) == 0x400;
#else
  double d = (double)l, o;
  uint64_t u;
  if ((long double)d == l) return 0;
  memcpy(&u, &d, sizeof u);
  u = l > (long double)d ? u + 1 : u - 1;
  memcpy(&o, &u, sizeof o);
  return l == ((long double)d + (long double)o) / 2;
#endif
}
#else
static int spx__mm_ld_works(void) { return 0; }
#endif

/* inf, infinity, nan (any case) after the sign. */
static const char *spx__mm_special(const char *p, int neg, double *out) {
  static const char *const words[] = {"infinity", "inf", "nan"};
  int w;
  for (w = 0; w < 3; w++) {
    size_t i;
    for (i = 0; words[w][i] && (p[i] | 0x20) == words[w][i]; i++) {}
    if (!words[w][i] && spx__mm_end(p[i])) {
      *out = w < 2 ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
      return p + i;
    }
  }
  return NULL;
}

/* Decimal real: [+-]digits[.digits][(e|E)[+-]digits], or inf/nan. Correctly rounded: Clinger's
 * fast path (m <= 2^53, |k| <= 22: one exact IEEE operation), then the same with a 64-bit
 * mantissa in long double (where the platform has one) with a tie check, then strtod. */
static const char *spx__mm_real(const char *p, const char *lim, int ld, double *out) {
  const char *s = p, *q;
  uint64_t m = 0;
  int64_t k = 0, x = 0;
  int nd, inexact = 0, neg = *p == '-';
  double v;
  (void)ld; /* unused where long double is double */
  if (*p == '-' || *p == '+') p++;
  if ((*p | 0x20) == 'i' || (*p | 0x20) == 'n') return spx__mm_special(p, neg, out);
  q = p;
  while (*p == '0') p++;
  nd = spx__mm_digits(&p, lim, &m, 19);
  for (; spx__mm_digit(*p); p++) { k++; inexact |= *p != '0'; } /* past 19 digits */
  if (*p == '.') {
    int nf;
    const char *f = ++p;
    if (!nd) while (*p == '0') p++;
    k -= p - f;
    nf = spx__mm_digits(&p, lim, &m, 19 - nd);
    nd += nf; k -= nf;
    for (; spx__mm_digit(*p); p++) inexact |= *p != '0';
    if (p == f && f - 1 == q) return NULL; /* "." alone */
  } else if (p == q) return NULL;
  if ((*p | 0x20) == 'e') {
    int xneg;
    p++;
    xneg = *p == '-';
    if (*p == '-' || *p == '+') p++;
    if (!spx__mm_digit(*p)) return NULL;
    for (; spx__mm_digit(*p); p++)
      if (x < 100000) x = x * 10 + (*p - '0'); /* beyond that, the value is 0 or Inf anyway */
    k += xneg ? -x : x;
  }
  if (!spx__mm_end(*p)) return NULL;
  if (m == 0) { *out = neg ? -0.0 : 0.0; return p; }
  if (!inexact) {
    if (m <= (1ull << 53) && k >= -22 && k <= 22) {
      v = k < 0 ? (double)m / spx__mm_p10[-k] : (double)m * spx__mm_p10[k];
      *out = neg ? -v : v;
      return p;
    }
#if LDBL_MANT_DIG >= 64
    if (ld && k >= -27 && k <= 27) {
      long double l = k < 0 ? (long double)m / spx__mm_p10l[-k] : (long double)m * spx__mm_p10l[k];
      if (!spx__mm_ld_tie(l)) { *out = neg ? -(double)l : (double)l; return p; }
    }
#endif
  }
  return spx__mm_strto(s, p, 0, out) ? p : NULL;
}

/* Next float after f towards +inf (up) or -inf. */
static float spx__mm_fnext(float f, int up) {
  uint32_t u;
  if (f == 0) return up ? FLT_TRUE_MIN : -FLT_TRUE_MIN;
  memcpy(&u, &f, sizeof u);
  u = (f > 0) == (up != 0) ? u + 1 : u - 1;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* The correctly rounded float of the token [s, e), given its correctly rounded double d. Rounding
 * twice is exact unless d is exactly halfway between two floats (or rounds to Inf): strtof then. */
static double spx__mm_to_float(double d, const char *s, const char *e) {
  float f = (float)d;
  double r;
  if ((double)f == d || isnan(d)) return f;
  if (!isinf(f)) {
    double o = spx__mm_fnext(f, d > f);
    if (d != ((double)f + o) * 0.5) return f;
  }
  return spx__mm_strto(s, e, 1, &r) ? r : f;
}

/* ---------------------------------------------------------------- header */

typedef struct spx__mm_hdr {
  int format, field, sym;
  int64_t nrows, ncols, nnz; /* nnz: entries the file lists */
  size_t data;               /* offset of the first line after the size line */
  int64_t data_line;         /* its line number */
} spx__mm_hdr;

#define SPX__MM_BANNER "%%%%MatrixMarket matrix coordinate real general"

/* Line 1 (b holds it, '\n' included): "%%MatrixMarket matrix <format> <field> <symmetry>". */
static spx_status spx__mm_banner(const char *b, size_t n, const char *name, spx__mm_hdr *h) {
  spx__mm_tok t[6];
  char s1[48];
  const char *p = b;
  int nt = spx__mm_tokens(p, t, 6);
  if (nt < 1 || !spx__mm_kw(t[0], "%%matrixmarket"))
    return spx__fail_at(SPX_PARSE, name, 1, "header: expected '" SPX__MM_BANNER "', got '%s'",
                        spx__mm_show(p, (size_t)((const char *)memchr(p, '\n', n) - p), s1));
  if (nt != 5)
    return spx__fail_at(SPX_PARSE, name, 1,
                        "header: expected 5 words like '" SPX__MM_BANNER "', got %d", nt);
  if (!spx__mm_kw(t[1], "matrix"))
    return spx__fail_at(SPX_UNSUPPORTED, name, 1, "header: object '%s' is not supported (only 'matrix')",
                        spx__mm_show(t[1].s, t[1].n, s1));
  h->format = spx__mm_lookup(t[2], spx__mm_formats, SPX__MM_NFORMAT);
  h->field = spx__mm_lookup(t[3], spx__mm_fields, SPX__MM_NFIELD + 1);
  h->sym = spx__mm_lookup(t[4], spx__mm_syms, SPX__MM_NSYM + 1);
  if (h->format < 0)
    return spx__fail_at(SPX_PARSE, name, 1, "header: unknown format '%s' (coordinate or array)",
                        spx__mm_show(t[2].s, t[2].n, s1));
  if (h->field < 0)
    return spx__fail_at(SPX_PARSE, name, 1, "header: unknown field '%s' (real, integer, pattern or complex)",
                        spx__mm_show(t[3].s, t[3].n, s1));
  if (h->sym < 0)
    return spx__fail_at(SPX_PARSE, name, 1,
                        "header: unknown symmetry '%s' (general, symmetric, skew-symmetric or hermitian)",
                        spx__mm_show(t[4].s, t[4].n, s1));
  if (h->field == SPX__MM_NFIELD)
    return spx__fail_at(SPX_UNSUPPORTED, name, 1, "complex matrices are not supported (spx values are real)");
  if (h->sym == SPX__MM_NSYM)
    return spx__fail_at(SPX_UNSUPPORTED, name, 1, "hermitian matrices are not supported (spx values are real)");
  if (h->field == SPX_MM_PATTERN && h->format == SPX_MM_ARRAY)
    return spx__fail_at(SPX_PARSE, name, 1, "header: an array cannot have the field 'pattern'");
  if (h->field == SPX_MM_PATTERN && h->sym == SPX_MM_SKEW_SYMMETRIC)
    return spx__fail_at(SPX_PARSE, name, 1, "header: a pattern matrix cannot be skew-symmetric");
  return SPX_OK;
}

/* Line 1, comments and blank lines, the size line (b holds at least up to its '\n'). */
static spx_status spx__mm_header(const char *b, size_t n, const char *name, spx__mm_hdr *h) {
  spx__mm_tok t[3];
  char s1[48];
  const char *p = b, *what;
  int nt, nf, i;
  int64_t line = 1;
  uint64_t sz[3];
  spx_status s;
  if ((s = spx__mm_banner(b, n, name, h))) return s;
  /* Comments and blank lines, then the size line. */
  for (;;) {
    p = (const char *)memchr(p, '\n', (size_t)(b + n - p)) + 1;
    line++;
    if (p == b + n) return spx__fail_at(SPX_PARSE, name, line - 1, "file ends before the size line");
    while (spx__mm_blank(*p)) p++;
    if (*p != '%' && *p != '\n') break;
  }
  nf = h->format == SPX_MM_COORDINATE ? 3 : 2;
  what = nf == 3 ? "rows cols entries" : "rows cols";
  if ((nt = spx__mm_tokens(p, t, 3)) != nf)
    return spx__fail_at(SPX_PARSE, name, line, "size line: expected %d numbers (%s), got %d", nf, what, nt);
  for (i = 0; i < nf; i++) {
    if (!spx__mm_uint(t[i].s, b + n, &sz[i])) {
      size_t j;
      for (j = 0; j < t[i].n && spx__mm_digit(t[i].s[j]); j++) {}
      if (j == t[i].n) /* only digits: just too many of them */
        return spx__fail_at(SPX_RANGE, name, line, "size line: %s is too large",
                            spx__mm_show(t[i].s, t[i].n, s1));
      return spx__fail_at(SPX_PARSE, name, line, "size line: bad number '%s' (expected %s as nonnegative integers)",
                          spx__mm_show(t[i].s, t[i].n, s1), what);
    }
  }
  h->nrows = (int64_t)sz[0];
  h->ncols = (int64_t)sz[1];
  if (h->nrows > INT32_MAX || h->ncols > INT32_MAX)
    return spx__fail_at(SPX_RANGE, name, line, "size line: %lld x %lld exceeds the 32-bit index limit (2147483647)",
                        (long long)h->nrows, (long long)h->ncols);
  if (h->nrows > spx__mm_dim_limit || h->ncols > spx__mm_dim_limit)
    return spx__fail_at(SPX_RANGE, name, line, "size line: %lld x %lld exceeds the configured dimension limit %lld",
                        (long long)h->nrows, (long long)h->ncols, (long long)spx__mm_dim_limit);
  if (h->sym != SPX_MM_GENERAL && h->nrows != h->ncols)
    return spx__fail_at(SPX_PARSE, name, line, "size line: a %s matrix must be square, got %lld x %lld",
                        spx__mm_syms[h->sym], (long long)h->nrows, (long long)h->ncols);
  if (h->format == SPX_MM_COORDINATE) h->nnz = (int64_t)sz[2];
  else if (h->sym == SPX_MM_GENERAL) h->nnz = h->nrows * h->ncols;
  else if (h->sym == SPX_MM_SYMMETRIC) h->nnz = h->nrows * (h->nrows + 1) / 2;
  else h->nnz = h->nrows * (h->nrows - 1) / 2;
  p = (const char *)memchr(p, '\n', (size_t)(b + n - p)) + 1;
  h->data = (size_t)(p - b);
  h->data_line = line + 1;
  return SPX_OK;
}

/* What a text may hold, so that no input makes the reader take more memory than its size line
 * can use: the lines up to the size line within SPX__MM_HEAD_MAX bytes, then SPX__MM_ENTRY_BYTES
 * per announced entry and SPX__MM_SLACK for comments and blank lines among the entries. A gzip
 * bomb or an endless stream (a pipe, /dev/zero) stops there with SPX_PARSE rather than filling
 * memory, and a plain file or buffer past the bound fails alike: a result never depends on where
 * the text came from. */
#define SPX__MM_HEAD_MAX ((size_t)64 << 20)
#define SPX__MM_ENTRY_BYTES 256
#define SPX__MM_SLACK ((size_t)16 << 20)

static size_t spx__mm_limit(const spx__mm_hdr *h) {
  size_t fixed = h->data + SPX__MM_SLACK; /* data is at most SPX__MM_HEAD_MAX */
  if ((uint64_t)h->nnz >= (uint64_t)((SIZE_MAX - fixed) / SPX__MM_ENTRY_BYTES)) return SIZE_MAX;
  return fixed + (size_t)h->nnz * SPX__MM_ENTRY_BYTES;
}

/* The text ran past limit (size_line 0: no size line yet, limit SPX__MM_HEAD_MAX). */
static spx_status spx__mm_too_long(const char *name, int64_t size_line, int64_t nnz, size_t limit, int gz) {
  if (!size_line)
    return spx__fail_at(SPX_PARSE, name, 0, "no size line in the first %d MiB%s (the header line, comments and "
                        "blank lines before it may take no more)", (int)(limit >> 20), gz ? " of the inflated data" : "");
  return spx__fail_at(SPX_PARSE, name, size_line,
                      "%s past %zu bytes, more than %lld entr%s can need (%d bytes an entry, %d MiB of comments "
                      "and blank lines)", gz ? "the gzip data inflates" : "the text runs", limit, (long long)nnz,
                      nnz == 1 ? "y" : "ies", SPX__MM_ENTRY_BYTES, (int)(SPX__MM_SLACK >> 20));
}

/* The text against its header: the size line ends within SPX__MM_HEAD_MAX; every entry takes at
 * least 2 bytes per field ("1 1 1\n"), so counts the rest cannot hold are refused before anything
 * is allocated for them (SPX_RANGE); and no more than spx__mm_limit. */
static spx_status spx__mm_fits(const spx__mm_hdr *h, size_t n, const char *name) {
  int nf = h->format == SPX_MM_ARRAY ? 1 : h->field == SPX_MM_PATTERN ? 2 : 3;
  if (h->data > SPX__MM_HEAD_MAX) return spx__mm_too_long(name, 0, 0, SPX__MM_HEAD_MAX, 0);
  if ((uint64_t)h->nnz > (uint64_t)(n - h->data) / (uint64_t)(2 * nf))
    return spx__fail_at(SPX_RANGE, name, h->data_line - 1,
                        "size line: %lld entries cannot fit in the %zu bytes after it (%d or more each): "
                        "a wrong size line or a truncated file",
                        (long long)h->nnz, n - h->data, 2 * nf);
  if (n > spx__mm_limit(h)) return spx__mm_too_long(name, h->data_line - 1, h->nnz, spx__mm_limit(h), 0);
  return SPX_OK;
}

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
static spx_status spx__mm_text(const char *data, size_t n, const char *name, spx__mm_src *src) {
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
static spx_status spx__mm_load(const char *path, spx__mm_src *src) {
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

/* ---------------------------------------------------------------- entries */

typedef struct spx__mm_ctx {
  const char *name;
  spx__mm_hdr h;
  spx_dtype dtype;
  const char *lim; /* end of the text */
  int ld;          /* long double has its 64-bit mantissa (spx__mm_ld_works) */
  int32_t *ri, *ci;
  double *v; /* NULL for pattern */
} spx__mm_ctx;

typedef struct spx__mm_chunk {
  const char *b, *e;      /* whole lines */
  int64_t line0, lines;   /* first line number, lines */
  int64_t k0, entries;    /* first entry index, entry lines */
  int64_t offdiag, nans, infs, zeros;
  int64_t extra_line;     /* line of entry nnz + 1 (one more than announced), 0 if not here */
  int64_t err_line;
  spx_status err;
  char msg[256];
} spx__mm_chunk;

/* Pass 1: lines and entry lines (neither blank nor comment). */
static void spx__mm_count(spx__mm_chunk *ch) {
  const char *p = ch->b;
  while (p < ch->e) {
    const char *q = p;
    while (spx__mm_blank(*q)) q++;
    ch->entries += *q != '%' && *q != '\n';
    ch->lines++;
    p = (const char *)memchr(q, '\n', (size_t)(ch->e - q)) + 1;
  }
}

/* The slow path after the fast one failed on the line at s: find out why, in field order. */
static void spx__mm_diagnose(const spx__mm_ctx *cx, spx__mm_chunk *ch, const char *s, int64_t line) {
  static const char *const idx_name[2] = {"row", "column"};
  const spx__mm_hdr *h = &cx->h;
  int coord = h->format == SPX_MM_COORDINATE;
  int nf = !coord ? 1 : h->field == SPX_MM_PATTERN ? 2 : 3, nt, i;
  spx__mm_tok t[3];
  char sh[48];
  uint64_t ij[2] = {0, 0};
  double v;
  ch->err_line = line;
  ch->err = SPX_PARSE;
  if ((nt = spx__mm_tokens(s, t, 3)) != nf && !(nf == 2 && nt == 3)) {
    snprintf(ch->msg, sizeof ch->msg, "expected %d field%s (%s), got %d", nf, nf > 1 ? "s" : "",
             !coord ? "value" : nf == 2 ? "row col" : "row col value", nt);
    return;
  }
  for (i = 0; coord && i < 2; i++) {
    int64_t hi = i ? h->ncols : h->nrows;
    size_t j;
    spx__mm_show(t[i].s, t[i].n, sh);
    for (j = 0; j < t[i].n && spx__mm_digit(t[i].s[j]); j++) {}
    if (j < t[i].n) {
      snprintf(ch->msg, sizeof ch->msg, "bad %s index '%s'", idx_name[i], sh);
      return;
    }
    if (!spx__mm_uint(t[i].s, cx->lim, &ij[i]) || ij[i] < 1 || ij[i] > (uint64_t)hi) {
      ch->err = SPX_RANGE;
      snprintf(ch->msg, sizeof ch->msg, "%s index %s out of range 1..%lld", idx_name[i], sh, (long long)hi);
      return;
    }
  }
  if (nt != 2) {
    spx__mm_tok tv = t[nt - 1];
    if (h->field == SPX_MM_INTEGER && !spx__mm_int(tv.s, cx->lim, &v)) {
      size_t j = tv.n && (tv.s[0] == '-' || tv.s[0] == '+');
      for (; j < tv.n && spx__mm_digit(tv.s[j]); j++) {}
      if (j == tv.n && tv.n > 1) ch->err = SPX_RANGE;
      snprintf(ch->msg, sizeof ch->msg, ch->err == SPX_RANGE ? "integer %s does not fit in 64 bits"
                                                             : "bad integer '%s'",
               spx__mm_show(tv.s, tv.n, sh));
      return;
    }
    if (h->field != SPX_MM_INTEGER && !spx__mm_real(tv.s, cx->lim, cx->ld, &v)) {
      snprintf(ch->msg, sizeof ch->msg, "bad number '%s'", spx__mm_show(tv.s, tv.n, sh));
      return;
    }
  }
  if (coord && h->sym == SPX_MM_SKEW_SYMMETRIC && ij[0] == ij[1]) {
    snprintf(ch->msg, sizeof ch->msg,
             "diagonal entry (%lld, %lld) in a skew-symmetric matrix (only the strict lower triangle may be listed)",
             (long long)ij[0], (long long)ij[1]);
    return;
  }
  ch->err = SPX_INTERNAL;
  snprintf(ch->msg, sizeof ch->msg, "the entry parser rejected this line without a reason");
}

/* Pass 2: parse the chunk's entries into the triplets from index k0 on. */
static void spx__mm_parse(const spx__mm_ctx *cx, spx__mm_chunk *ch) {
  const spx__mm_hdr *h = &cx->h;
  const char *p = ch->b;
  int64_t line = ch->line0, k = ch->k0, ai = 0, aj = 0;
  const uint64_t nr = (uint64_t)h->nrows, nc = (uint64_t)h->ncols;
  const int coord = h->format == SPX_MM_COORDINATE, field = h->field, sym = h->sym;
  const int fl = cx->dtype == SPX_FLOAT;
  const char *lim = cx->lim;
  const int ld = cx->ld;
  if (!coord && ch->k0 < h->nnz) { /* array: (ai, aj) of entry k0, column-major */
    int64_t r = ch->k0;
    if (sym == SPX_MM_GENERAL) { aj = r / h->nrows; ai = r % h->nrows; }
    else {
      int64_t d = sym == SPX_MM_SKEW_SYMMETRIC; /* first row of column j is j + d */
      while (r >= h->nrows - aj - d) { r -= h->nrows - aj - d; aj++; }
      ai = aj + d + r;
    }
  }
  for (; p < ch->e; p++, line++) {
    const char *s = p, *t;
    uint64_t i = 0, j = 0;
    double v = 1;
    while (spx__mm_blank(*p)) p++;
    if (*p == '\n') continue;
    if (*p == '%') { p = (const char *)memchr(p, '\n', (size_t)(ch->e - p)); continue; }
    if (k == h->nnz) { ch->extra_line = line; return; }
    if (coord) {
      if (!(p = spx__mm_uint(p, lim, &i)) || i - 1 >= nr) goto bad;
      while (spx__mm_blank(*p)) p++;
      if (!(p = spx__mm_uint(p, lim, &j)) || j - 1 >= nc) goto bad;
      i--; j--;
      if (i == j && sym == SPX_MM_SKEW_SYMMETRIC) goto bad;
      while (spx__mm_blank(*p)) p++;
      /* SuiteSparse has pattern files that list values (weighted graphs): checked, ignored. */
      if (field == SPX_MM_PATTERN && *p != '\n' && !(p = spx__mm_real(p, lim, ld, &v))) goto bad;
      v = 1;
    } else {
      i = (uint64_t)ai; j = (uint64_t)aj;
      if (++ai == h->nrows) { aj++; ai = sym == SPX_MM_GENERAL ? 0 : aj + (sym == SPX_MM_SKEW_SYMMETRIC); }
    }
    if (field != SPX_MM_PATTERN) {
      t = p;
      if (!(p = field == SPX_MM_REAL ? spx__mm_real(p, lim, ld, &v) : spx__mm_int(p, lim, &v))) goto bad;
      if (fl) v = spx__mm_to_float(v, t, p);
      ch->nans += isnan(v) != 0;
      ch->infs += isinf(v) != 0;
      ch->zeros += v == 0;
      cx->v[k] = v;
    }
    while (spx__mm_blank(*p)) p++;
    if (*p != '\n') goto bad;
    cx->ri[k] = (int32_t)i;
    cx->ci[k] = (int32_t)j;
    ch->offdiag += i != j;
    k++;
    continue;
  bad:
    spx__mm_diagnose(cx, ch, s, line);
    return;
  }
}

/* The mirrored entries of the chunk's off-diagonal ones, from index w on. */
static void spx__mm_mirror(const spx__mm_ctx *cx, const spx__mm_chunk *ch, int64_t w) {
  int64_t k;
  int skew = cx->h.sym == SPX_MM_SKEW_SYMMETRIC;
  for (k = ch->k0; k < ch->k0 + ch->entries; k++) {
    if (cx->ri[k] == cx->ci[k]) continue;
    cx->ri[w] = cx->ci[k];
    cx->ci[w] = cx->ri[k];
    if (cx->v) cx->v[w] = skew ? -cx->v[k] : cx->v[k];
    w++;
  }
}

/* Parses the text (released here, early: before the CSR build, which needs the memory). */
static spx_status spx__mm_read_text(spx__mm_src *src, const char *name, spx_dtype dtype,
                                    spx_csr **out, spx_mm_info *info) {
  const char *text = src->p;
  size_t n = src->n;
  spx__mm_ctx cx;
  spx__mm_chunk *ch = NULL;
  spx_status s;
  int64_t total = 0, lines = 0, ntrip, c, nch, nth = 1;
  size_t dlen;
  memset(&cx, 0, sizeof cx);
  cx.name = name;
  cx.dtype = dtype;
  if (n == 0) { s = spx__fail_at(SPX_PARSE, name, 0, "empty file (expected a '" SPX__MM_BANNER "' header)"); goto done; }
  cx.lim = text + n;
  cx.ld = spx__mm_ld_works();
  if ((s = spx__mm_header(text, n, name, &cx.h))) goto done;
  info->format = (spx_mm_format)cx.h.format;
  info->field = (spx_mm_field)cx.h.field;
  info->symmetry = (spx_mm_symmetry)cx.h.sym;
  info->nrows = cx.h.nrows;
  info->ncols = cx.h.ncols;
  info->entries = cx.h.nnz;
  if ((s = spx__mm_fits(&cx.h, n, name))) goto done;
  /* Chunks of about 1 MiB, at most 8 per thread, each starting at a line start. */
  dlen = n - cx.h.data;
#if defined(_OPENMP)
  nth = omp_get_max_threads();
#endif
  nch = SPX__MAX(1, SPX__MIN((int64_t)(dlen >> 20), 8 * nth));
  if (!(ch = (spx__mm_chunk *)spx__calloc((size_t)nch, sizeof *ch))) { s = SPX_OUT_OF_MEMORY; goto done; }
  for (c = 0; c < nch; c++) {
    size_t o = cx.h.data + (size_t)((double)dlen * (double)c / (double)nch);
    ch[c].b = o == cx.h.data ? text + o : (const char *)memchr(text + o - 1, '\n', n - o + 1) + 1;
    if (c) ch[c - 1].e = ch[c].b;
  }
  ch[nch - 1].e = text + n;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
#endif
  for (c = 0; c < nch; c++) spx__mm_count(&ch[c]);
  for (c = 0; c < nch; c++) {
    ch[c].line0 = cx.h.data_line + lines;
    ch[c].k0 = total;
    lines += ch[c].lines;
    total += ch[c].entries;
  }
  info->lines = cx.h.data_line - 1 + lines;
  /* Room for what the file has (at most what it announces), twice for the mirrored half. */
  ntrip = SPX__MIN(total, cx.h.nnz);
  ntrip *= cx.h.sym == SPX_MM_GENERAL ? 1 : 2;
  { /* a tiny file may announce 2^31 rows: their row pointers must fit before anything is allocated */
    char msg[256];
    if (spx__coo_short(cx.h.nrows, ntrip, dtype, (double)ntrip * (cx.h.field == SPX_MM_PATTERN ? 8 : 16), msg,
                       sizeof msg)) {
      s = spx__fail_at(SPX_OUT_OF_MEMORY, name, cx.h.data_line - 1, "%s", msg);
      goto done;
    }
  }
  cx.ri = (int32_t *)spx__alloc((size_t)ntrip, sizeof(int32_t));
  cx.ci = (int32_t *)spx__alloc((size_t)ntrip, sizeof(int32_t));
  if (cx.h.field != SPX_MM_PATTERN) cx.v = (double *)spx__alloc((size_t)ntrip, sizeof(double));
  spx__advise_huge(cx.ri, (size_t)ntrip * sizeof(int32_t));
  spx__advise_huge(cx.ci, (size_t)ntrip * sizeof(int32_t));
  spx__advise_huge(cx.v, (size_t)ntrip * sizeof(double));
  if (!cx.ri || !cx.ci || (cx.h.field != SPX_MM_PATTERN && !cx.v)) { s = SPX_OUT_OF_MEMORY; goto done; }
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
#endif
  for (c = 0; c < nch; c++)
    if (ch[c].k0 <= cx.h.nnz) spx__mm_parse(&cx, &ch[c]); /* later ones only hold surplus entries */
  for (c = 0; c < nch; c++) {
    if (ch[c].err) { s = spx__fail_at(ch[c].err, name, ch[c].err_line, "%s", ch[c].msg); goto done; }
    if (ch[c].extra_line) {
      s = spx__fail_at(SPX_PARSE, name, ch[c].extra_line, "too many entries: the size line announces %lld",
                       (long long)cx.h.nnz);
      goto done;
    }
  }
  if (total < cx.h.nnz) {
    s = spx__fail_at(SPX_PARSE, name, info->lines, "file ends after %lld of %lld entries", (long long)total,
                     (long long)cx.h.nnz);
    goto done;
  }
  spx__mm_release(src);
  ntrip = total;
  for (c = 0; c < nch; c++) {
    info->nan_count += ch[c].nans;
    info->inf_count += ch[c].infs;
    info->explicit_zeros += ch[c].zeros;
  }
  if (cx.h.sym != SPX_MM_GENERAL) {
    int64_t *w0 = (int64_t *)spx__alloc((size_t)nch, sizeof *w0);
    if (!w0) { s = SPX_OUT_OF_MEMORY; goto done; }
    for (c = 0; c < nch; c++) { w0[c] = ntrip; ntrip += ch[c].offdiag; }
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) if (nch > 1)
#endif
    for (c = 0; c < nch; c++) spx__mm_mirror(&cx, &ch[c], w0[c]);
    SPX_FREE(w0);
  }
  if ((s = spx_csr_from_coo(cx.h.nrows, cx.h.ncols, ntrip, cx.ri, cx.ci, cx.v, dtype, out))) goto done;
  info->duplicates = ntrip - (*out)->nnz;
done:
  spx__mm_release(src);
  SPX_FREE(ch);
  SPX_FREE(cx.ri);
  SPX_FREE(cx.ci);
  SPX_FREE(cx.v);
  return s;
}

static spx_status spx__mm_check_args(spx_dtype dtype, spx_csr **out, spx_mm_info *info, const char *fn) {
  if (out) *out = NULL;
  if (info) memset(info, 0, sizeof *info);
  if (!out) return spx__fail(SPX_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (dtype != SPX_DOUBLE && dtype != SPX_FLOAT)
    return spx__fail(SPX_INVALID_ARGUMENT, "%s: unknown dtype %d", fn, (int)dtype);
  return SPX_OK;
}

spx_status spx_mm_read(const char *path, spx_dtype dtype, spx_csr **out, spx_mm_info *info) {
  spx_mm_info tmp;
  spx__mm_src src;
  spx_status s;
  double t0 = spx__now();
  if (!info) info = &tmp;
  if ((s = spx__mm_check_args(dtype, out, info, "spx_mm_read"))) return s;
  if (!path) return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_read: path is NULL");
  memset(&src, 0, sizeof src);
  if ((s = spx__mm_load(path, &src))) return s;
  s = spx__mm_read_text(&src, path, dtype, out, info);
  info->seconds = spx__now() - t0;
  return s;
}

spx_status spx_mm_read_buffer(const char *data, size_t len, const char *name, spx_dtype dtype,
                              spx_csr **out, spx_mm_info *info) {
  spx_mm_info tmp;
  spx__mm_src src;
  spx_status s;
  double t0 = spx__now();
  if (!info) info = &tmp;
  if (!name) name = "<buffer>";
  if ((s = spx__mm_check_args(dtype, out, info, "spx_mm_read_buffer"))) return s;
  if (!data && len) return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_read_buffer: data is NULL");
  if ((s = spx__mm_text(data ? data : "", len, name, &src))) return s;
  s = spx__mm_read_text(&src, name, dtype, out, info);
  info->seconds = spx__now() - t0;
  return s;
}

/* ---------------------------------------------------------------- writing */

/* Checks a == a^T (skew: a == -a^T, so a zero diagonal), pattern and values; NaN equals NaN. */
static spx_status spx__mm_check_sym(const spx_csr *a, int skew) {
  spx_csr *t;
  spx_status s;
  int64_t i;
  if (a->nrows != a->ncols)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_write: a %s matrix must be square, not %lld x %lld",
                     skew ? "skew-symmetric" : "symmetric", (long long)a->nrows, (long long)a->ncols);
  if ((s = spx_csr_transpose(a, &t))) return s;
  for (i = 0; i < a->nrows; i++) {
    int64_t p = a->row_ptr[i], q = t->row_ptr[i], pe = a->row_ptr[i + 1], qe = t->row_ptr[i + 1];
    for (; p < pe || q < qe; p++, q++) {
      int64_t cp = p < pe ? a->col_idx[p] : INT64_MAX, cq = q < qe ? t->col_idx[q] : INT64_MAX;
      double x, y;
      if (cp != cq) {
        int64_t c = SPX__MIN(cp, cq);
        int here = cp < cq; /* stored in row i of a, missing in row i of a^T */
        spx_csr_destroy(t);
        return spx__fail(SPX_INVALID_ARGUMENT,
                         "spx_mm_write: matrix is not %s: A[%lld][%lld] is stored but A[%lld][%lld] is not (0-based)",
                         skew ? "skew-symmetric" : "symmetric", (long long)(here ? i : c),
                         (long long)(here ? c : i), (long long)(here ? c : i), (long long)(here ? i : c));
      }
      x = a->dtype == SPX_DOUBLE ? a->val.d[p] : a->val.f[p];
      y = t->dtype == SPX_DOUBLE ? t->val.d[q] : t->val.f[q];
      if (skew) y = -y;
      if (x != y && !(isnan(x) && isnan(y))) {
        spx_csr_destroy(t);
        return spx__fail(SPX_INVALID_ARGUMENT,
                         "spx_mm_write: matrix is not %s: A[%lld][%lld] = %.17g but A[%lld][%lld] = %.17g (0-based)",
                         skew ? "skew-symmetric" : "symmetric", (long long)i, (long long)cp, x,
                         (long long)cp, (long long)i, skew ? -y : y);
      }
    }
  }
  spx_csr_destroy(t);
  return SPX_OK;
}

static char *spx__mm_utoa(char *o, uint64_t x) {
  char t[24];
  int n = 0;
  do t[n++] = (char)('0' + x % 10); while (x /= 10);
  while (n) *o++ = t[--n];
  return o;
}

/* The shorter of two precisions that reads back to the same value. */
static char *spx__mm_fmt(char *o, double v, int fl) {
  int n;
  if (isnan(v)) { memcpy(o, "nan", 3); return o + 3; }
  n = snprintf(o, 32, fl ? "%.6g" : "%.15g", v);
  if (fl ? strtof(o, NULL) != (float)v : strtod(o, NULL) != v) n = snprintf(o, 32, fl ? "%.9g" : "%.17g", v);
  return o + n;
}

#define SPX__MM_LINE_MAX 64 /* two 10-digit indices, a 24-character value, blanks and '\n' */

/* Formats entries [kb, ke) of a (the lower triangle only when lower; strictly when strict). */
static size_t spx__mm_format(const spx_csr *a, int64_t kb, int64_t ke, int lower, int strict, char *buf) {
  int64_t lo = 0, hi = a->nrows, k;
  char *o = buf;
  while (hi - lo > 1) { /* the row holding kb: last i with row_ptr[i] <= kb */
    int64_t mid = lo + (hi - lo) / 2;
    if (a->row_ptr[mid] <= kb) lo = mid; else hi = mid;
  }
  for (k = kb; k < ke; k++) {
    int64_t j = a->col_idx[k];
    while (a->row_ptr[lo + 1] <= k) lo++;
    if (lower && (j > lo || (strict && j == lo))) continue;
    o = spx__mm_utoa(o, (uint64_t)lo + 1);
    *o++ = ' ';
    o = spx__mm_utoa(o, (uint64_t)j + 1);
    *o++ = ' ';
    o = spx__mm_fmt(o, a->dtype == SPX_DOUBLE ? a->val.d[k] : a->val.f[k], a->dtype == SPX_FLOAT);
    *o++ = '\n';
  }
  return (size_t)(o - buf);
}

typedef struct spx__mm_out {
  FILE *f;
  gzFile g;
} spx__mm_out;

static int spx__mm_put(spx__mm_out *w, const char *b, size_t n) {
  if (w->f) return fwrite(b, 1, n, w->f) == n;
  while (n) {
    unsigned m = (unsigned)SPX__MIN(n, (size_t)1 << 30);
    if (gzwrite(w->g, b, m) != (int)m) return 0;
    b += m; n -= m;
  }
  return 1;
}

spx_status spx_mm_write(const char *path, const spx_csr *a, spx_mm_symmetry symmetry) {
  enum { BATCH = 1 << 15 };
  spx__mm_out w = {NULL, NULL};
  spx_file *file = NULL;
  spx_status s = SPX_OK;
  char head[256], *buf = NULL;
  size_t pl = path ? strlen(path) : 0, *len = NULL;
  int64_t nw = 0, k, k0, nth = 1;
  int lower = symmetry != SPX_MM_GENERAL, strict = symmetry == SPX_MM_SKEW_SYMMETRIC, ok = 1;
  if (!path || !a) return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_write: NULL argument");
  if ((unsigned)symmetry >= SPX__MM_NSYM)
    return spx__fail(SPX_INVALID_ARGUMENT, "spx_mm_write: unknown symmetry %d", (int)symmetry);
  if ((s = spx_csr_validate(a))) return spx__wrap(s, "spx_mm_write");
  if (lower && (s = spx__mm_check_sym(a, strict))) return s;
  if (!lower) nw = a->nnz;
  else {
    int64_t i;
    for (i = 0; i < a->nrows; i++)
      for (k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) nw += a->col_idx[k] < i || (!strict && a->col_idx[k] == i);
  }
#if defined(_OPENMP)
  nth = omp_get_max_threads();
#endif
  buf = (char *)spx__alloc((size_t)nth * BATCH, SPX__MM_LINE_MAX);
  len = (size_t *)spx__alloc((size_t)nth, sizeof *len);
  if (!buf || !len) { s = SPX_OUT_OF_MEMORY; goto done; }
  /* into a temporary beside path, renamed over it only once complete: a failed write (a full
   * disk) leaves an existing file as it was, even when it is the matrix being read */
  if ((s = spx_file_create(path, 0, &file))) goto done;
  if (pl > 3 && !strcmp(path + pl - 3, ".gz")) {
    int fd = dup(spx_file_fd(file));
    if (fd < 0 || !(w.g = gzdopen(fd, "wb"))) {
      if (fd >= 0) close(fd);
      s = spx__fail(SPX_OUT_OF_MEMORY, "%s: cannot start the gzip stream", path);
      goto done;
    }
  } else {
    w.f = spx_file_stream(file);
  }
  snprintf(head, sizeof head, "%%%%MatrixMarket matrix coordinate real %s\n%% written by spx %s (%s values)\n%lld %lld %lld\n",
           spx__mm_syms[symmetry], SPX_VERSION_STRING, spx_dtype_name(a->dtype), (long long)a->nrows,
           (long long)a->ncols, (long long)nw);
  ok = spx__mm_put(&w, head, strlen(head));
  /* Rounds of nth batches formatted in parallel, written in order. */
  for (k0 = 0; ok && k0 < a->nnz; k0 += nth * BATCH) {
    int64_t t;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static, 1) if (a->nnz > BATCH)
#endif
    for (t = 0; t < nth; t++) {
      int64_t kb = SPX__MIN(k0 + t * BATCH, a->nnz), ke = SPX__MIN(kb + BATCH, a->nnz);
      len[t] = spx__mm_format(a, kb, ke, lower, strict, buf + (size_t)t * BATCH * SPX__MM_LINE_MAX);
    }
    for (t = 0; ok && t < nth; t++) ok = spx__mm_put(&w, buf + (size_t)t * BATCH * SPX__MM_LINE_MAX, len[t]);
  }
  if (!ok) s = spx__fail(SPX_IO, "cannot write %s: %s (the file is unchanged)", path, strerror(errno ? errno : EIO));
  if (w.g && gzclose(w.g) != Z_OK && !s) s = spx__fail(SPX_IO, "cannot write %s: the gzip stream failed on close (the file is unchanged)", path);
  if (!s) s = spx_file_commit(file);
  else spx_file_abort(file);
  file = NULL;
done:
  spx_file_abort(file);
  SPX_FREE(buf);
  SPX_FREE(len);
  return s;
}
