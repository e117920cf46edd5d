/* SPDX-License-Identifier: BSD-3-Clause */
/* Matrix Market text to CSR (mm_text.h): the keyword tables and their names, lexing, numbers read
 * exactly, the header and size line and the bounds they set on the text, then the entries in
 * chunks (pass 1 counts lines and entries, pass 2 parses each chunk into its own slice of the
 * triplet arrays, then the mirrored half of symmetric files) and spx_csr_from_coo. It reads text
 * already in memory; mm_input_impl.h, above it, puts it there and calls the header parser as the
 * text arrives. */
#include <float.h>
#ifndef FLT_TRUE_MIN /* C11's; a C99 <float.h> lacks it */
#define FLT_TRUE_MIN 1.40129846432481707e-45F
#endif
#include <math.h> /* isnan, isinf, INFINITY, NAN: macros only, no libm */
#if defined(_OPENMP)
#include <omp.h>
#endif
#include "common.h"
#include "host.h"
#include "mm_text.h"
#include "../csr.h"
#include "../mm.h"

/* Keyword tables, plus the keywords spx recognizes only to refuse them. */
#define SPX__MM_KW(e, kw) kw,
static const char *const spx__mm_formats[] = {SPX_MM_FORMAT_LIST(SPX__MM_KW)};
/* Largest row or column count the reader accepts. A valid tiny file may declare a 2^31-row empty
 * matrix, whose O(rows) row pointers cost seconds to zero; the fuzz harness lowers this so that it
 * measures parsing, not page clearing. Internal, not thread-safe to change while reading. */
int64_t spx__mm_dim_limit = INT32_MAX;

static const char *const spx__mm_fields[] = {SPX_MM_FIELD_LIST(SPX__MM_KW) "complex"};
const char *const spx__mm_syms[] = {SPX_MM_SYMMETRY_LIST(SPX__MM_KW) "hermitian"};
#undef SPX__MM_KW

const char *spx_mm_format_name(spx_mm_format f) {
  return (unsigned)f < SPX__MM_NFORMAT ? spx__mm_formats[f] : "unknown";
}
const char *spx_mm_field_name(spx_mm_field f) {
  return (unsigned)f < SPX__MM_NFIELD ? spx__mm_fields[f] : "unknown";
}
const char *spx_mm_symmetry_name(spx_mm_symmetry s) {
  return (unsigned)s < SPX__MM_NSYM ? spx__mm_syms[s] : "unknown";
}

static void spx__mm_release(spx__mm_src *s) {
  SPX_FREE(s->heap);
  memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- lexing */

int spx__mm_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
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
const char *spx__mm_show(const char *s, size_t n, char buf[48]) {
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

/* Line 1 (b holds it, '\n' included): "%%MatrixMarket matrix <format> <field> <symmetry>". */
spx_status spx__mm_banner(const char *b, size_t n, const char *name, spx__mm_hdr *h) {
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
spx_status spx__mm_header(const char *b, size_t n, const char *name, spx__mm_hdr *h) {
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

size_t spx__mm_limit(const spx__mm_hdr *h) {
  size_t fixed = h->data + SPX__MM_SLACK; /* data is at most SPX__MM_HEAD_MAX */
  if ((uint64_t)h->nnz >= (uint64_t)((SIZE_MAX - fixed) / SPX__MM_ENTRY_BYTES)) return SIZE_MAX;
  return fixed + (size_t)h->nnz * SPX__MM_ENTRY_BYTES;
}

/* The text ran past limit (size_line 0: no size line yet, limit SPX__MM_HEAD_MAX). */
spx_status spx__mm_too_long(const char *name, int64_t size_line, int64_t nnz, size_t limit, int gz) {
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
spx_status spx__mm_fits(const spx__mm_hdr *h, size_t n, const char *name) {
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
spx_status spx__mm_read_text(spx__mm_src *src, const char *name, spx_dtype dtype,
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

/* ---------------------------------------------------------------- a slice of the entries */

void spx__mm_slice_count(const char *b, const char *e, int64_t *lines, int64_t *entries) {
  spx__mm_chunk ch;
  memset(&ch, 0, sizeof ch);
  ch.b = b;
  ch.e = e;
  spx__mm_count(&ch);
  *lines = ch.lines;
  *entries = ch.entries;
}

void spx__mm_slice_free(spx__mm_slice *s) {
  SPX_FREE(s->ri);
  SPX_FREE(s->ci);
  SPX_FREE(s->v);
  memset(s, 0, sizeof *s);
}

/* One chunk (the whole slice) through pass 2 and the mirror, as spx__mm_read_text runs each of
 * its chunks; the header's count is cut to what is left for this slice, so an entry past the size
 * line's count is reported at its line, as there. */
spx_status spx__mm_slice_parse(const spx__mm_hdr *h, const char *name, const char *b, const char *e, int64_t line0,
                               int64_t k0, int64_t entries, spx_dtype dtype, spx__mm_slice *out) {
  spx__mm_ctx cx;
  spx__mm_chunk ch;
  int64_t m, k;
  memset(out, 0, sizeof *out);
  memset(&cx, 0, sizeof cx);
  memset(&ch, 0, sizeof ch);
  cx.name = name;
  cx.h = *h;
  cx.h.nnz = SPX__MAX(0, h->nnz - k0);
  cx.dtype = dtype;
  cx.lim = e;
  cx.ld = spx__mm_ld_works();
  m = SPX__MIN(entries, cx.h.nnz);
  k = h->sym == SPX_MM_GENERAL ? m : 2 * m;
  cx.ri = out->ri = (int32_t *)spx__alloc((size_t)k + 1, sizeof(int32_t));
  cx.ci = out->ci = (int32_t *)spx__alloc((size_t)k + 1, sizeof(int32_t));
  out->v = (double *)spx__alloc((size_t)k + 1, sizeof(double));
  if (!out->ri || !out->ci || !out->v) {
    spx__mm_slice_free(out);
    return SPX_OUT_OF_MEMORY;
  }
  if (h->field != SPX_MM_PATTERN) cx.v = out->v;
  ch.b = b;
  ch.e = e;
  ch.line0 = line0;
  ch.entries = m;
  if (b < e) spx__mm_parse(&cx, &ch);
  if (ch.err || ch.extra_line) {
    spx__mm_slice_free(out);
    if (ch.err) return spx__fail_at(ch.err, name, ch.err_line, "%s", ch.msg);
    return spx__fail_at(SPX_PARSE, name, ch.extra_line, "too many entries: the size line announces %lld",
                        (long long)h->nnz);
  }
  out->listed = m;
  if (h->sym != SPX_MM_GENERAL) {
    spx__mm_mirror(&cx, &ch, m);
    out->mirrored = ch.offdiag;
  }
  if (!cx.v)
    for (k = 0; k < m + out->mirrored; k++) out->v[k] = 1; /* pattern */
  return SPX_OK;
}
