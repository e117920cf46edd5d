/* SPDX-License-Identifier: BSD-3-Clause */
/* The CLI's JSON writer: every string and every floating-point number the spx command writes into
 * JSON (stdout or a file) goes through here, so that any file name, message or measurement gives
 * valid JSON. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"

/* Length of the valid UTF-8 sequence at s (1..4), 0 if the bytes there are not one (a stray
 * continuation byte, a truncated, overlong or surrogate sequence, or past U+10FFFF). */
static int spx_cli_utf8_len(const unsigned char *s) {
  int n, k;
  unsigned cp;
  if (s[0] < 0x80) return 1;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) { n = 2; cp = s[0] & 0x1fu; }
  else if (s[0] >= 0xe0 && s[0] <= 0xef) { n = 3; cp = s[0] & 0x0fu; }
  else if (s[0] >= 0xf0 && s[0] <= 0xf4) { n = 4; cp = s[0] & 0x07u; }
  else return 0;
  for (k = 1; k < n; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[k] & 0x3fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

void spx_cli_json_str(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  if (!s) { fputs("null", f); return; }
  fputc('"', f);
  while (*p) {
    int n = spx_cli_utf8_len(p);
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else if (n == 0) fputs("\\ufffd", f); /* not UTF-8 (a Latin-1 file name): the replacement character */
    else fwrite(p, 1, (size_t)n, f);
    p += n ? n : 1;
  }
  fputc('"', f);
}

/* One conversion of fmt at a time: its argument taken with the type printf takes it with (the
 * format attribute in cli.h checks the call against printf's rules), printed by fprintf, or as null
 * when it is a non-finite double. Conversions: d i u x c s f e g, with l, ll or z on the integers. */
void spx_cli_json_printf(FILE *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  while (*fmt) {
    char spec[32];
    size_t n, lit = strcspn(fmt, "%");
    int l = 0, z = 0;
    fwrite(fmt, 1, lit, f);
    fmt += lit;
    if (!*fmt) break;
    if (fmt[1] == '%') { fputc('%', f); fmt += 2; continue; }
    n = 1 + strspn(fmt + 1, "-+ #0123456789."); /* flags, width, precision */
    for (; fmt[n] == 'l' || fmt[n] == 'z'; n++) {
      l += fmt[n] == 'l';
      z |= fmt[n] == 'z';
    }
    if (n + 2 > sizeof spec) goto unknown;
    memcpy(spec, fmt, n + 1);
    spec[n + 1] = 0;
    switch (fmt[n]) {
      case 'd': case 'i':
        if (l > 1) fprintf(f, spec, va_arg(ap, long long));
        else if (l) fprintf(f, spec, va_arg(ap, long));
        else if (!z) fprintf(f, spec, va_arg(ap, int));
        else goto unknown;
        break;
      case 'u': case 'x':
        if (l > 1) fprintf(f, spec, va_arg(ap, unsigned long long));
        else if (l) fprintf(f, spec, va_arg(ap, unsigned long));
        else if (z) fprintf(f, spec, va_arg(ap, size_t));
        else fprintf(f, spec, va_arg(ap, unsigned));
        break;
      case 'f': case 'e': case 'g': {
        double v = va_arg(ap, double);
        if (isfinite(v)) fprintf(f, spec, v);
        else fputs("null", f);
        break;
      }
      case 'c': fprintf(f, spec, va_arg(ap, int)); break;
      case 's': fprintf(f, spec, va_arg(ap, const char *)); break;
      default: goto unknown;
    }
    fmt += n + 1;
  }
  va_end(ap);
  return;
unknown: /* a conversion this writer does not take: the rest of the arguments cannot be read safely */
  fprintf(f, "[spx_cli_json_printf: unsupported conversion in \"%s\"]", fmt);
  va_end(ap);
}

void spx_cli_json_solve_report(FILE *f, const spx_solve_report *r) {
  fprintf(f, "{\"method\": ");
  spx_cli_json_str(f, r->method ? r->method : "");
  spx_cli_json_printf(f, ", \"status\": \"%s\", \"n\": %lld, \"iterations\": %lld, \"spmvs\": %lld, "
                         "\"precond_calls\": %lld, \"bnorm\": %.17g, \"tol\": %.17g, \"resid\": %.17g, "
                         "\"rel_resid\": %.17g, \"true_resid\": %.17g, \"true_rel_resid\": %.17g, "
                         "\"analysis_ms\": %.6g, \"build_ms\": %.6g, \"setup_ms\": %.6g, \"jit_ms\": %.6g, \"solve_ms\": %.6g, "
                         "\"per_iter_us\": %.6g, \"check_ms\": %.6g, \"vector_bytes_per_iter\": %lld, "
                         "\"spmvs_per_iter\": %d, \"upgraded_at\": %lld, \"upgrade_ms\": %.6g, \"message\": ",
                      spx_status_string(r->status), (long long)r->n, (long long)r->iterations, (long long)r->spmvs,
                      (long long)r->precond_calls, r->bnorm, r->tol, r->resid, r->rel_resid, r->true_resid,
                      r->true_rel_resid, r->analysis_ms, r->build_ms, r->setup_ms, r->jit_ms, r->solve_ms,
                      r->per_iter_us, r->check_ms, (long long)r->vector_bytes_per_iter, r->spmvs_per_iter,
                      (long long)r->upgraded_at, r->upgrade_ms);
  spx_cli_json_str(f, r->message);
  fputc('}', f);
}
