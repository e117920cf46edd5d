/* SPDX-License-Identifier: BSD-3-Clause */
/* gen/embed: turns the kernel templates (templates/<name>.cu) into a C header holding their
 * sources, so that a program built against the spx headers carries its kernels with it and
 * never reads templates/ at run time. A line `#include "<name>.cuh"` is replaced by that file
 * (templates/ share a few macros that way; NVRTC gets one self-contained source).
 *
 *   embed -o OUT.h FILE.cu...            write the table (inputs sorted by name: the output does
 *                                        not depend on the order GN lists them in)
 *   embed --check COMMITTED GENERATED    exit 1, saying how to fix it, when the two differ
 *   embed --update COMMITTED GENERATED   make COMMITTED a copy of GENERATED where they differ
 *                                        (written to COMMITTED.tmp, then renamed over it)
 *
 * Each source is stored as string literals of at most SPX__CHUNK bytes: ISO C guarantees only
 * 4095 characters per string literal (gcc -Wpedantic says -Woverlength-strings past that), so a
 * longer template becomes several chunks that spx joins once at run time. One literal per
 * source line keeps the header readable and its diffs line-for-line.
 *
 * The 64-bit content hash is FNV-1a (offset 0xcbf29ce484222325, prime 0x100000001b3) of the
 * file's bytes; it is part of every JIT cache key. Standalone C11: no spx headers, no POSIX. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPX__CHUNK 4000 /* bytes of source per literal; below C's 4095 with room to spare */

typedef struct tpl {
  char name[64];
  char *text;
  size_t size;
} tpl;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int fail(const char *fmt, ...) {
  va_list ap;
  fputs("gen/embed: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 1;
}

/* Whole file into a NUL-terminated buffer; NULL (message printed) on failure. */
static char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL, *nb;
  size_t cap = 0, n = 0, got;
  if (!f) {
    fail("cannot open %s", path);
    return NULL;
  }
  for (;;) {
    if (cap - n < 4096) {
      cap = cap ? 2 * cap : 65536;
      if (!(nb = (char *)realloc(buf, cap + 1))) {
        fail("out of memory reading %s", path);
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
    }
    got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    fail("cannot read %s", path);
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[n] = 0;
  *size = n;
  return buf;
}

static uint64_t fnv1a64(const char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* "dir/vector.cu" -> "vector"; 0 unless it is a .cu file with a C-identifier name. */
static int template_name(const char *path, char *name, size_t len) {
  const char *base = strrchr(path, '/');
  size_t n, i;
  base = base ? base + 1 : path;
  n = strlen(base);
  if (n < 4 || strcmp(base + n - 3, ".cu") || n - 3 >= len) return 0;
  for (i = 0; i < n - 3; i++) {
    char c = base[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  if (base[0] >= '0' && base[0] <= '9') return 0;
  memcpy(name, base, n - 3);
  name[n - 3] = 0;
  return 1;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const tpl *)a)->name, ((const tpl *)b)->name);
}

/* One byte inside a C string literal. `prev` is the byte before it: "??x" would be a trigraph
 * in strict ISO mode (-std=c11), so a '?' after a '?' is written "\?". */
static void put_escaped(FILE *o, unsigned char c, unsigned char prev) {
  switch (c) {
    case '\\': fputs("\\\\", o); break;
    case '"': fputs("\\\"", o); break;
    case '\t': fputs("\\t", o); break;
    case '?': fputs(prev == '?' ? "\\?" : "?", o); break;
    default:
      if (c < 0x20 || c >= 0x7f) fprintf(o, "\\%03o", c); /* three digits: ends the escape */
      else fputc(c, o);
  }
}

/* The source as chunks of <= SPX__CHUNK bytes, each cut after a newline where one fits; one
 * literal per source line. Returns the number of chunks. */
static int put_chunks(FILE *o, const tpl *t) {
  size_t pos = 0, i;
  int chunks = 0;
  while (pos < t->size) {
    size_t end = pos + SPX__CHUNK < t->size ? pos + SPX__CHUNK : t->size, cut = end;
    if (end < t->size) /* prefer to cut after the last newline in the window */
      for (i = end; i > pos; i--)
        if (t->text[i - 1] == '\n') { cut = i; break; }
    /* Parenthesized: clang -Wstring-concatenation suspects a missing comma otherwise. */
    fprintf(o, "    /* chunk %d: bytes %zu..%zu */\n    (\"", chunks, pos, cut);
    for (i = pos; i < cut; i++) {
      unsigned char c = (unsigned char)t->text[i];
      if (c == '\n') {
        fputs(i + 1 < cut ? "\\n\"\n    \"" : "\\n", o);
        continue;
      }
      put_escaped(o, c, i > pos ? (unsigned char)t->text[i - 1] : 0);
    }
    fputs("\"),\n", o);
    pos = cut;
    chunks++;
  }
  return chunks;
}

static int write_header(const char *out, tpl *t, int n) {
  FILE *o = fopen(out, "wb");
  int i, *nchunks;
  if (!o) return fail("cannot create %s", out);
  if (!(nchunks = (int *)calloc((size_t)n, sizeof *nchunks))) {
    fclose(o);
    return fail("out of memory");
  }
  fputs("/* SPDX-License-Identifier: BSD-3-Clause */\n"
        "/* spx/internal/templates_gen.h: GENERATED by gen/embed from templates/<name>.cu; do not\n"
        " * edit. Regenerate: ninja -C out templates_update\n"
        " * (test_jit and the build's check fail while this copy differs from the generated one).\n"
        " * Sources are split into chunks of at most 4000 bytes (C guarantees 4095 per string\n"
        " * literal); spx joins them once at run time. hash: FNV-1a 64 of the source bytes. */\n"
        "#ifndef SPX_INTERNAL_TEMPLATES_GEN_H\n"
        "#define SPX_INTERNAL_TEMPLATES_GEN_H\n\n"
        "#include <stddef.h>\n#include <stdint.h>\n\n"
        "typedef struct spx__template {\n"
        "  const char *name;          /* templates/<name>.cu */\n"
        "  const char *const *chunks; /* the source, in order */\n"
        "  int nchunks;\n"
        "  size_t size;               /* bytes in all chunks */\n"
        "  uint64_t hash;             /* FNV-1a 64 of the source */\n"
        "} spx__template;\n\n", o);
  for (i = 0; i < n; i++) {
    fprintf(o, "/* templates/%s.cu */\nstatic const char *const spx__template_%s[] = {\n", t[i].name,
            t[i].name);
    nchunks[i] = put_chunks(o, &t[i]);
    fputs("};\n\n", o);
  }
  fputs("/* ORDER: sorted by name. */\nstatic const spx__template spx__templates[] = {\n", o);
  for (i = 0; i < n; i++)
    fprintf(o, "    {\"%s\", spx__template_%s, %d, %zu, UINT64_C(0x%016llx)},\n", t[i].name, t[i].name,
            nchunks[i], t[i].size, (unsigned long long)fnv1a64(t[i].text, t[i].size));
  fprintf(o, "};\n#define SPX__TEMPLATE_COUNT %d\n\n#endif /* SPX_INTERNAL_TEMPLATES_GEN_H */\n", n);
  free(nchunks);
  if (fclose(o) != 0) return fail("cannot write %s", out);
  return 0;
}

/* Replaces each line `#include "NAME.cuh"` of the template at path by that file (same directory),
 * so the embedded source needs no headers (NVRTC gets none) while nvcc still compiles the file as
 * it is. One level: an included file may not include. 0 on success, with *text / *size replaced. */
static int inline_headers(const char *path, char **text, size_t *size) {
  static const char tag[] = "#include \"";
  const char *slash = strrchr(path, '/'), *p = *text, *line;
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0, cap = *size + 1, n = 0;
  char *outb = (char *)malloc(cap), *nb;
  if (!outb) return fail("out of memory");
  for (line = p; *line; line = p) {
    const char *eol = strchr(line, '\n'), *add = line;
    size_t len = eol ? (size_t)(eol - line) + 1 : strlen(line), addn = len;
    char *inc = NULL, hpath[512];
    p = line + len;
    if (!strncmp(line, tag, sizeof tag - 1)) {
      const char *q = line + sizeof tag - 1, *e = memchr(q, '"', len - (sizeof tag - 1));
      size_t hn;
      if (!e || (size_t)(e - q) < 5 || strncmp(e - 4, ".cuh", 4) || dir + (size_t)(e - q) >= sizeof hpath) {
        free(outb);
        return fail("%s: only #include \"<name>.cuh\" (a file beside it) is allowed", path);
      }
      memcpy(hpath, path, dir);
      memcpy(hpath + dir, q, (size_t)(e - q));
      hpath[dir + (size_t)(e - q)] = 0;
      if (!(inc = slurp(hpath, &hn))) {
        free(outb);
        return 1;
      }
      if (strstr(inc, tag)) {
        free(inc);
        free(outb);
        return fail("%s: an included file may not include another", hpath);
      }
      add = inc;
      addn = hn;
    }
    if (n + addn + 2 > cap) {
      cap = 2 * (n + addn + 2);
      if (!(nb = (char *)realloc(outb, cap))) {
        free(inc);
        free(outb);
        return fail("out of memory");
      }
      outb = nb;
    }
    memcpy(outb + n, add, addn);
    n += addn;
    if (inc && addn && inc[addn - 1] != '\n') outb[n++] = '\n';
    free(inc);
  }
  outb[n] = 0;
  free(*text);
  *text = outb;
  *size = n;
  return 0;
}

static int generate(const char *out, int nfiles, char **files) {
  tpl *t = (tpl *)calloc((size_t)nfiles, sizeof *t);
  int i, j, rc = 1;
  if (!t) return fail("out of memory");
  for (i = 0; i < nfiles; i++) {
    if (!template_name(files[i], t[i].name, sizeof t[i].name)) {
      fail("%s: a template must be named <name>.cu, <name> in [a-z0-9_] not starting with a digit",
           files[i]);
      goto done;
    }
    for (j = 0; j < i; j++)
      if (!strcmp(t[j].name, t[i].name)) {
        fail("template %s is listed twice (%s)", t[i].name, files[i]);
        goto done;
      }
    if (!(t[i].text = slurp(files[i], &t[i].size)) || inline_headers(files[i], &t[i].text, &t[i].size)) goto done;
    if (t[i].size == 0 || strlen(t[i].text) != t[i].size) {
      fail("%s is empty or contains a NUL byte", files[i]);
      goto done;
    }
  }
  qsort(t, (size_t)nfiles, sizeof *t, by_name);
  rc = write_header(out, t, nfiles);
done:
  for (i = 0; i < nfiles; i++) free(t[i].text);
  free(t);
  return rc;
}

static int check(const char *committed, const char *generated) {
  size_t na = 0, nb = 0, i, line = 1;
  char *a = slurp(committed, &na), *b = a ? slurp(generated, &nb) : NULL;
  int rc = 0;
  if (!a || !b) {
    free(a);
    return 1;
  }
  for (i = 0; i < na && i < nb && a[i] == b[i]; i++)
    if (a[i] == '\n') line++;
  if (na != nb || i < na) {
    fprintf(stderr,
            "gen/embed: %s is stale: it differs from the freshly generated %s from line %zu on\n"
            "  (a template in templates/ changed, or the generator did).\n"
            "  Update the committed copy:  ninja -C <build dir> templates_update\n",
            committed, generated, line);
    rc = 1;
  }
  free(a);
  free(b);
  return rc;
}

/* COMMITTED := GENERATED where they differ; a reader of COMMITTED never sees half a file. */
static int update(const char *committed, const char *generated) {
  size_t na = 0, nb = 0;
  char *a = slurp(committed, &na), *b = slurp(generated, &nb), tmp[4096];
  FILE *o;
  int rc = 0;
  if (!b) {
    free(a);
    return 1;
  }
  if (a && na == nb && !memcmp(a, b, na)) goto done;
  if (snprintf(tmp, sizeof tmp, "%s.tmp", committed) >= (int)sizeof tmp) { rc = fail("path too long: %s", committed); goto done; }
  if (!(o = fopen(tmp, "wb"))) { rc = fail("cannot create %s", tmp); goto done; }
  if (fwrite(b, 1, nb, o) != nb || fclose(o) != 0) { remove(tmp); rc = fail("cannot write %s", tmp); goto done; }
  if (rename(tmp, committed) != 0) { remove(tmp); rc = fail("cannot rename %s to %s", tmp, committed); goto done; }
  printf("gen/embed: updated %s\n", committed);
done:
  free(a);
  free(b);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--check")) return check(argv[2], argv[3]);
  if (argc == 4 && !strcmp(argv[1], "--update")) return update(argv[2], argv[3]);
  if (argc >= 4 && !strcmp(argv[1], "-o")) return generate(argv[2], argc - 3, argv + 3);
  fprintf(stderr,
          "usage: embed -o OUT.h TEMPLATE.cu...          write the template table\n"
          "       embed --check COMMITTED GENERATED      fail when the committed table is stale\n"
          "       embed --update COMMITTED GENERATED     refresh the committed table\n");
  return 2;
}
