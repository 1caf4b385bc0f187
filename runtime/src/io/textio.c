/*
 * textio.c — numpy's loadtxt and savetxt (tycho/textio.h).
 *
 * Loading: a reader hands out one line at a time from a 1 MiB buffer that it
 * refills from the file (or copies from memory: ty_loadtxt_buffer), growing
 * it only for a line longer than the buffer. A line is cut at its comment,
 * skipped when blank, split into fields by recording their bounds (an array
 * reused for every line), and the kept fields are converted where they lie
 * (a NUL written after the field for strtod, then put back) and appended to
 * the output buffer, which doubles as it fills. So the cost is one pass over
 * the bytes and one conversion per number (fast_decimal, else strtod), with
 * no allocation per field or line.
 * The store is made from the buffer at the end (the one copy).
 *
 * Line numbers in messages are the file's (1-based, skipped lines counted);
 * columns are 1-based byte offsets in the line.
 *
 * Saving: the format is checked and split once into conversions (each
 * rebuilt as a C conversion of a 64-bit integer or a double, as Python's %
 * operator treats numpy's values: %d of a float truncates it, %e of an
 * integer converts it), then rows are formatted into a 64 KiB buffer that is
 * written when full, through ty__save_file (a temporary renamed over the
 * target).
 */
#define _GNU_SOURCE /* strtod_l, newlocale */
#include "tycho/textio.h"

#include "internal.h"
#include "savefile.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK ((size_t)1 << 20)

void ty_loadtxt_defaults(ty_loadtxt_opts *o) {
  memset(o, 0, sizeof *o);
  o->comments = "#";
  o->max_rows = -1;
  o->dtype = TY_F64;
}

void ty_savetxt_defaults(ty_savetxt_opts *o) {
  o->fmt = "%.18e";
  o->delimiter = " ";
  o->newline = "\n";
  o->header = "";
  o->footer = "";
  o->comments = "# ";
}

/* Numbers are read and written in the C locale whatever the host set. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }
static locale_t numeric_locale(void) {
  pthread_once(&c_locale_once, make_c_locale);
  return c_locale;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* ---- the line reader ------------------------------------------------------------ */

typedef struct reader {
  int fd;            /* -1: reading mem */
  const char *mem;
  size_t memlen, mempos;
  char *buf;         /* [beg, end) unread; one byte past cap-1 is kept for a NUL */
  size_t cap, beg, end, scanned;
  bool eof;
  int err;           /* errno of a failed read */
  int64_t line;      /* the number of the line last returned */
} reader;

/* The next line, NUL-terminated in place (its '\n' and a '\r' before it
 * removed): 1, or 0 at the end (r->err set when a read failed). */
static int next_line(reader *r, char **s, size_t *n) {
  for (;;) {
    char *from = r->buf + r->beg + r->scanned;
    char *nl = memchr(from, '\n', r->end - r->beg - r->scanned);
    if (nl || (r->eof && r->end > r->beg)) {
      char *line = r->buf + r->beg;
      size_t len = nl ? (size_t)(nl - line) : r->end - r->beg;
      r->beg += len + (nl ? 1 : 0);
      r->scanned = 0;
      line[len] = '\0'; /* nl, or the spare byte past end */
      if (len && line[len - 1] == '\r') line[--len] = '\0';
      r->line++;
      *s = line;
      *n = len;
      return 1;
    }
    if (r->eof) return 0;
    r->scanned = r->end - r->beg;
    /* refill: keep the partial line at the front, grow for a long one */
    memmove(r->buf, r->buf + r->beg, r->end - r->beg);
    r->end -= r->beg;
    r->beg = 0;
    if (r->cap - 1 - r->end < READ_CHUNK / 2) {
      size_t cap = r->cap * 2;
      char *b = ty__realloc(r->buf, cap);
      if (!b) {
        r->err = ENOMEM;
        return 0;
      }
      r->buf = b;
      r->cap = cap;
    }
    size_t want = r->cap - 1 - r->end;
    ssize_t got;
    if (r->fd < 0) {
      got = (ssize_t)(r->memlen - r->mempos < want ? r->memlen - r->mempos : want);
      memcpy(r->buf + r->end, r->mem + r->mempos, (size_t)got);
      r->mempos += (size_t)got;
    } else {
      do got = read(r->fd, r->buf + r->end, want);
      while (got < 0 && errno == EINTR);
      if (got < 0) {
        r->err = errno;
        return 0;
      }
    }
    if (got == 0) r->eof = true;
    r->end += (size_t)got;
  }
}

/* ---- loading ------------------------------------------------------------------- */

typedef struct field {
  uint32_t start, end; /* byte offsets in the line */
} field;

typedef struct loader {
  ty_runtime *rt;
  const ty_loadtxt_opts *o;
  const char *name;
  size_t es;
  field *fields;
  size_t nfields_cap;
  int64_t ncols, ncols_line; /* the first data row's field count (-1: none yet) and its line */
  int64_t nout;              /* kept columns per row */
  char *out;                 /* rows * nout elements of o->dtype */
  size_t out_len, out_cap;   /* in bytes */
  int64_t rows;
} loader;

/* Clinger's fast path: a plain decimal ([+-]digits[.digits][e[+-]digits])
 * with at most 19 significant digits whose value m fits 2^53 and whose
 * power of ten is within 10^+-22 is m * 10^e or m / 10^-e, both exact
 * operands and one rounding, so the same double strtod gives (correctly
 * rounded). Anything else (more digits, nan, inf, junk) returns false and
 * goes to strtod. About 3x strtod's speed on numbers such as "%.6g" writes. */
static bool fast_decimal(const char *s, size_t len, double *out) {
  static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char *p = s, *end = s + len;
  bool neg = false;
  if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
  uint64_t m = 0;
  int digits = 0, sig = 0, scale = 0;
  for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
    if (m == 0 && *p == '0') continue;
    if (++sig > 19) return false;
    m = m * 10 + (uint64_t)(*p - '0');
  }
  if (p < end && *p == '.') {
    for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
      scale--;
      if (m == 0 && *p == '0') continue;
      if (++sig > 19) return false;
      m = m * 10 + (uint64_t)(*p - '0');
    }
  }
  if (!digits) return false;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    bool eneg = false;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    if (p == end) return false;
    int e = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
      if (e < 10000) e = e * 10 + (*p - '0');
    scale += eneg ? -e : e;
  }
  if (p != end || m > ((uint64_t)1 << 53)) return false;
  double v;
  if (m == 0) v = 0.0;
  else if (scale >= 0 && scale <= 22) v = (double)m * p10[scale];
  else if (scale < 0 && scale >= -22) v = (double)m / p10[-scale];
  else return false;
  *out = neg ? -v : v;
  return true;
}

/* Convert s[0..len) (len >= 0; s[len] may be overwritten and is restored)
 * into dst; false when it is not a number of the dtype. */
static bool convert(char *s, size_t len, ty_dtype t, void *dst) {
  while (len && is_space(*s)) s++, len--;
  while (len && is_space(s[len - 1])) len--;
  if (!len) return false;
  double fast;
  if (ty_dtype_is_float(t) && fast_decimal(s, len, &fast)) {
    if (t == TY_F64) *(double *)dst = fast;
    else *(float *)dst = (float)fast;
    return true;
  }
  const char *p = s + (*s == '+' || *s == '-');
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return false; /* strtod's hex: not numpy's */
  char save = s[len];
  s[len] = '\0';
  char *end;
  bool ok;
  if (ty_dtype_is_float(t)) {
    double v = strtod_l(s, &end, numeric_locale());
    ok = end == s + len;
    if (t == TY_F64) *(double *)dst = v;
    else *(float *)dst = (float)v;
  } else {
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (t == TY_U64 && errno == ERANGE && s[0] != '-') { /* 2^63 .. 2^64 - 1 */
      errno = 0;
      unsigned long long u = strtoull(s, &end, 10);
      ok = end == s + len && errno == 0;
      *(uint64_t *)dst = u;
      s[len] = save;
      return ok;
    }
    ok = end == s + len && errno == 0;
    if (!ok && errno == 0) { /* "3.0": a float with an integral value */
      double d = strtod_l(s, &end, numeric_locale());
      ok = end == s + len && d == trunc(d) && d >= -0x1p63 && d < 0x1p63;
      v = ok ? (long long)d : 0;
    }
    if (t == TY_I32) {
      ok = ok && v >= INT32_MIN && v <= INT32_MAX;
      *(int32_t *)dst = (int32_t)v;
    } else if (t == TY_U8) {
      ok = ok && v >= 0 && v <= UINT8_MAX;
      *(uint8_t *)dst = (uint8_t)v;
    } else if (t != TY_I64) { /* the integer dtypes added later */
      int64_t lo;
      uint64_t hi;
      ty_dtype_limits(t, &lo, &hi);
      ok = ok && v >= lo && (v < 0 || (uint64_t)v <= hi);
      ty__store_i64(dst, t, (int64_t)v);
    } else {
      *(int64_t *)dst = (int64_t)v;
    }
  }
  s[len] = save;
  return ok;
}

static ty_status add_field(loader *ld, size_t *nf, size_t start, size_t end) {
  if (*nf == ld->nfields_cap) {
    size_t cap = ld->nfields_cap ? ld->nfields_cap * 2 : 64;
    field *f = ty__realloc(ld->fields, cap * sizeof *f);
    if (!f) return ty__fail(ld->rt, TY_ENOMEM, "ty_loadtxt: out of memory");
    ld->fields = f;
    ld->nfields_cap = cap;
  }
  ld->fields[(*nf)++] = (field){(uint32_t)start, (uint32_t)end};
  return TY_OK;
}

/* One line: skipped when blank after its comment is cut, else a row. */
static ty_status parse_line(loader *ld, char *line, size_t len, int64_t lineno) {
  const ty_loadtxt_opts *o = ld->o;
  if (len > UINT32_MAX)
    return ty__fail(ld->rt, TY_ELIMIT, "ty_loadtxt: %s:%lld: the line is longer than 4 GiB", ld->name,
                    (long long)lineno);
  if (o->comments && o->comments[0]) {
    char *c = o->comments[1] ? strstr(line, o->comments) : memchr(line, o->comments[0], len);
    if (c) len = (size_t)(c - line);
  }
  size_t i = 0;
  while (i < len && is_space(line[i])) i++;
  if (i == len) return TY_OK;
  size_t nf = 0;
  ty_status st = TY_OK;
  if (o->delimiter == 0) {
    while (i < len && !st) {
      size_t a = i;
      while (i < len && !is_space(line[i])) i++;
      st = add_field(ld, &nf, a, i);
      while (i < len && is_space(line[i])) i++;
    }
  } else {
    size_t a = 0;
    for (i = 0; i < len && !st; i++)
      if (line[i] == o->delimiter) {
        st = add_field(ld, &nf, a, i);
        a = i + 1;
      }
    if (!st) st = add_field(ld, &nf, a, len);
  }
  if (st) return st;
  if (!o->usecols) {
    if (ld->ncols < 0) {
      ld->ncols = (int64_t)nf;
      ld->ncols_line = lineno;
      ld->nout = (int64_t)nf;
    } else if ((int64_t)nf != ld->ncols) {
      return ty__fail(ld->rt, TY_EIO, "ty_loadtxt: %s:%lld: line %lld has %zu columns, expected %lld "
                      "(as line %lld)", ld->name, (long long)lineno, (long long)lineno, nf,
                      (long long)ld->ncols, (long long)ld->ncols_line);
    }
  }
  size_t need = ld->out_len + (size_t)ld->nout * ld->es;
  if (need > ld->out_cap) {
    size_t cap = ld->out_cap ? ld->out_cap : 1 << 16;
    while (cap < need) cap *= 2;
    char *b = ty__realloc(ld->out, cap);
    if (!b)
      return ty__fail(ld->rt, TY_ENOMEM, "ty_loadtxt: out of memory: %zu bytes for %s's numbers", cap,
                      ld->name);
    ld->out = b;
    ld->out_cap = cap;
  }
  for (int64_t k = 0; k < ld->nout; k++) {
    int64_t c = k;
    if (o->usecols) {
      c = o->usecols[k] < 0 ? o->usecols[k] + (int64_t)nf : o->usecols[k];
      if (c < 0 || c >= (int64_t)nf)
        return ty__fail(ld->rt, TY_EIO, "ty_loadtxt: %s:%lld: line %lld has %zu columns, usecols asks "
                        "for column %lld", ld->name, (long long)lineno, (long long)lineno, nf,
                        (long long)o->usecols[k]);
    }
    const field f = ld->fields[c];
    if (!convert(line + f.start, f.end - f.start, o->dtype, ld->out + ld->out_len)) {
      int w = (int)(f.end - f.start > 40 ? 40 : f.end - f.start);
      return ty__fail(ld->rt, TY_EIO, "ty_loadtxt: %s:%lld:%u: could not convert '%.*s%s' to %s",
                      ld->name, (long long)lineno, f.start + 1, w, line + f.start,
                      f.end - f.start > 40 ? "..." : "", ty_dtype_name(o->dtype));
    }
    ld->out_len += ld->es;
  }
  ld->rows++;
  return TY_OK;
}

/* numpy's _ensure_ndmin_ndarray on (rows, cols): squeeze when the rank is
 * above ndmin, then pad to ndmin (a 1-D result becomes a column). */
static int result_shape(int64_t rows, int64_t cols, int ndmin, int64_t *shape) {
  int nd = 0;
  if (ndmin >= 2) {
    shape[0] = rows, shape[1] = cols;
    return 2;
  }
  if (rows != 1) shape[nd++] = rows;
  if (cols != 1) shape[nd++] = cols;
  if (nd == 0 && ndmin == 1) shape[nd++] = 1;
  return nd;
}

static ty_status load(ty_runtime *rt, reader *r, const char *name, const ty_loadtxt_opts *o,
                      ty_store **out) {
  if (!ty_dtype_is_float(o->dtype) && !ty_dtype_is_int(o->dtype))
    return ty__fail(rt, TY_EDTYPE, "ty_loadtxt: dtype must be a float or integer dtype, not %s",
                    ty_dtype_name(o->dtype));
  if (o->ndmin < 0 || o->ndmin > 2)
    return ty__fail(rt, TY_EINVAL, "ty_loadtxt: ndmin must be 0, 1 or 2, got %d", o->ndmin);
  if (o->skiprows < 0)
    return ty__fail(rt, TY_EINVAL, "ty_loadtxt: skiprows must be >= 0, got %lld", (long long)o->skiprows);
  if (o->nusecols < 0 || (o->nusecols > 0 && !o->usecols))
    return ty__fail(rt, TY_EINVAL, "ty_loadtxt: usecols is NULL or its count is negative");
  if (o->delimiter == '\n' || o->delimiter == '\r' ||
      (o->delimiter && o->comments && strchr(o->comments, o->delimiter)))
    return ty__fail(rt, TY_EINVAL, "ty_loadtxt: the delimiter '%c' cannot be a newline or part of "
                    "the comment string", o->delimiter);
  loader ld = {.rt = rt, .o = o, .name = name, .es = ty_dtype_size(o->dtype), .ncols = -1};
  if (o->usecols) ld.nout = o->nusecols;
  r->cap = READ_CHUNK + 1;
  r->buf = ty__malloc(r->cap);
  if (!r->buf) return ty__fail(rt, TY_ENOMEM, "ty_loadtxt: out of memory");
  ty_status st = TY_OK;
  char *line;
  size_t len;
  while (!st && (o->max_rows < 0 || ld.rows < o->max_rows) && next_line(r, &line, &len))
    if (r->line > o->skiprows) st = parse_line(&ld, line, len, r->line);
  if (!st && r->err)
    st = ty__fail(rt, r->err == ENOMEM ? TY_ENOMEM : TY_EIO, "ty_loadtxt: cannot read '%s': %s", name,
                  strerror(r->err));
  if (!st) {
    int64_t cols = ld.ncols < 0 && !o->usecols ? 1 : ld.nout;
    int64_t shape[2];
    int nd = result_shape(ld.rows, cols, o->ndmin, shape);
    st = ty_store_from_buffer(rt, o->dtype, nd, shape, ld.out, out);
  }
  free(r->buf);
  free(ld.fields);
  free(ld.out);
  return st;
}

ty_status ty_loadtxt_buffer(ty_runtime *rt, const char *text, size_t len, const char *name,
                            const ty_loadtxt_opts *o, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out || !o || (!text && len)) return ty__fail(rt, TY_EINVAL, "ty_loadtxt: a NULL argument");
  *out = NULL;
  reader r = {.fd = -1, .mem = text, .memlen = len};
  return load(rt, &r, name ? name : "<buffer>", o, out);
}

ty_status ty_loadtxt(ty_runtime *rt, const char *path, const ty_loadtxt_opts *o, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out || !o || !path) return ty__fail(rt, TY_EINVAL, "ty_loadtxt: a NULL argument");
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ty__fail(rt, TY_EIO, "ty_loadtxt: cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    close(fd);
    return ty__fail(rt, TY_EIO, "ty_loadtxt: cannot read '%s': it is a directory", path);
  }
  reader r = {.fd = fd};
  ty_status st = load(rt, &r, path, o, out);
  close(fd);
  return st;
}

/* ---- saving -------------------------------------------------------------------- */

typedef struct conv {
  size_t lit, litlen; /* the literal text before it, in the row format */
  char spec[80];      /* the C conversion ("%-12.4lld"), for a long long or a double */
  char orig[48];      /* as fmt wrote it ("%-12.4d"), for messages */
  char kind;          /* 'i': integer, 'f': double; 'x': o/x/X (sign printed apart) */
} conv;

typedef struct writer {
  ty_runtime *rt;
  const ty_savetxt_opts *o;
  const char *row; /* the row format */
  conv *convs;
  int nconv;
  size_t tail;     /* literal text after the last conversion */
  ty_dtype t;
  int64_t rows, cols;
  const char *data;
  char *buf;
  size_t len, cap;
  int err;         /* errno of a failed write */
  char bad[160];   /* a value the format cannot take */
} writer;

/* Parse the row format into conversions; 0 or a message in msg. */
static int compile_format(const char *f, conv *cv, int maxconv, int *n, size_t *tail, char *msg,
                          size_t msglen) {
  size_t i = 0, lit = 0;
  *n = 0;
  while (f[i]) {
    if (f[i] != '%') {
      i++;
      continue;
    }
    if (f[i + 1] == '%') {
      i += 2;
      continue;
    }
    size_t start = i++;
    char flags[8] = "";
    int nfl = 0;
    while (strchr("-+ #0", f[i]) && f[i]) {
      if (nfl < 7) flags[nfl++] = f[i];
      i++;
    }
    long width = -1, prec = -1;
    if (f[i] >= '0' && f[i] <= '9') width = strtol(f + i, NULL, 10);
    while (f[i] >= '0' && f[i] <= '9') i++;
    if (f[i] == '.') {
      i++;
      prec = strtol(f + i, NULL, 10);
      while (f[i] >= '0' && f[i] <= '9') i++;
    }
    while (f[i] && strchr("hlLqjzt", f[i])) i++; /* Python ignores length modifiers */
    char c = f[i];
    if (!c || !strchr("diuoxXeEfFgG", c)) {
      snprintf(msg, msglen, "unsupported conversion '%.*s' in fmt \"%s\" (expected one of d i u o x X "
               "e E f F g G, with flags, width and precision)", (int)(i - start + (c != 0)), f + start, f);
      return -1;
    }
    if (width > 1000 || prec > 1000) {
      snprintf(msg, msglen, "width and precision in fmt must be at most 1000");
      return -1;
    }
    if (*n == maxconv) {
      snprintf(msg, msglen, "fmt has more than %d conversions", maxconv); /* not reached */
      return -1;
    }
    conv *v = &cv[(*n)++];
    v->lit = lit;
    v->litlen = start - lit;
    v->kind = strchr("diu", c) ? 'i' : strchr("oxX", c) ? 'x' : 'f';
    char w[24] = "", p[24] = "";
    if (width >= 0) snprintf(w, sizeof w, "%ld", width);
    if (prec >= 0) snprintf(p, sizeof p, ".%ld", prec);
    snprintf(v->spec, sizeof v->spec, "%%%s%s%s%s%c", flags, w, p, v->kind == 'f' ? "" : "ll",
             c == 'i' || c == 'u' ? 'd' : c);
    snprintf(v->orig, sizeof v->orig, "%.*s", (int)(i + 1 - start), f + start);
    lit = ++i;
  }
  *tail = lit;
  return 0;
}

static int flush_buf(int fd, writer *w) {
  int e = ty__write_full(fd, w->buf, w->len);
  w->len = 0;
  return e;
}

/* Append printf output; the buffer is written out when it would overflow. */
static int put(int fd, writer *w, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int put(int fd, writer *w, const char *fmt, ...) {
  for (int attempt = 0;; attempt++) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
    va_end(ap);
    if (n < 0) return EINVAL;
    if ((size_t)n < w->cap - w->len) {
      w->len += (size_t)n;
      return 0;
    }
    if (attempt) return EOVERFLOW; /* cannot happen: widths are at most 1000 */
    int e = flush_buf(fd, w);
    if (e) return e;
  }
}

static int put_text(int fd, writer *w, const char *s, size_t n) {
  if (n > w->cap - w->len) {
    int e = flush_buf(fd, w);
    if (e) return e;
    if (n > w->cap) return ty__write_full(fd, s, n);
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  return 0;
}

/* header/footer: comments + text with each newline followed by comments. */
static int put_comment(int fd, writer *w, const char *text) {
  const ty_savetxt_opts *o = w->o;
  int e = put_text(fd, w, o->comments, strlen(o->comments));
  for (const char *p = text; !e && *p; p++) {
    e = put_text(fd, w, p, 1);
    if (!e && *p == '\n') e = put_text(fd, w, o->comments, strlen(o->comments));
  }
  if (!e) e = put_text(fd, w, o->newline, strlen(o->newline));
  return e;
}

static int put_value(int fd, writer *w, const conv *v, int64_t flat) {
  const char *p = w->data + (size_t)flat * ty_dtype_size(w->t);
  double d = 0;
  long long i = 0;
  bool isf = ty_dtype_is_float(w->t);
  if (w->t == TY_F64) d = *(const double *)p;
  else if (w->t == TY_F32) d = *(const float *)p;
  else if (w->t == TY_I64) i = *(const int64_t *)p;
  else if (w->t == TY_I32) i = *(const int32_t *)p;
  else if (w->t == TY_U8 || w->t == TY_BOOL) i = *(const uint8_t *)p; /* bool: 0/1 */
  else i = ty__load_i64(p, w->t); /* the dtypes added later; u64: the bits */
  const bool big = w->t == TY_U64 && i < 0; /* a u64 at or above 2^63 */
  if (v->kind == 'f') {
    if (!isf) d = big ? (double)(uint64_t)i : (double)i;
    if (isnan(d)) d = fabs(d); /* Python prints "nan", never "-nan" */
    return put(fd, w, v->spec, d);
  }
  if (isf) {
    if (!(d > -0x1p63 && d < 0x1p63)) {
      snprintf(w->bad, sizeof w->bad, "cannot format %g with the integer conversion '%s'",
               isnan(d) ? fabs(d) : d, v->orig); /* "nan", not "-nan" */
      return EINVAL;
    }
    i = (long long)d; /* Python's %d truncates a float */
  }
  if (big) { /* print it unsigned: %lld becomes %llu (x and o are unsigned already) */
    char spec[sizeof v->spec];
    snprintf(spec, sizeof spec, "%s", v->spec);
    char *c = spec + strlen(spec) - 1;
    if (*c == 'd' || *c == 'i') *c = 'u';
    return put(fd, w, spec, (unsigned long long)i);
  }
  if (v->kind == 'x' && i < 0) { /* Python: "-1f", not two's complement */
    int e = put_text(fd, w, "-", 1);
    return e ? e : put(fd, w, v->spec, (long long)(0 - (unsigned long long)i));
  }
  return put(fd, w, v->spec, i);
}

static int write_text(int fd, void *ud) {
  writer *w = ud;
  const ty_savetxt_opts *o = w->o;
  int e = 0;
  if (o->header[0]) e = put_comment(fd, w, o->header);
  for (int64_t r = 0; r < w->rows && !e; r++) {
    for (int k = 0; k < w->nconv && !e; k++) {
      const conv *v = &w->convs[k];
      e = put_text(fd, w, w->row + v->lit, v->litlen);
      if (!e) e = put_value(fd, w, v, r * w->cols + k);
    }
    if (!e) e = put_text(fd, w, w->row + w->tail, strlen(w->row + w->tail));
    if (!e) e = put_text(fd, w, o->newline, strlen(o->newline));
  }
  if (!e && o->footer[0]) e = put_comment(fd, w, o->footer);
  if (!e) e = flush_buf(fd, w);
  return e;
}

ty_status ty_savetxt(ty_runtime *rt, const char *path, ty_store *s, const ty_savetxt_opts *o) {
  if (!rt) return TY_EINVAL;
  if (!s || !o || !path) return ty__fail(rt, TY_EINVAL, "ty_savetxt: a NULL argument");
  if (!*path) return ty__fail(rt, TY_EINVAL, "ty_savetxt: the path is empty");
  if (!o->fmt || !o->delimiter || !o->newline || !o->header || !o->footer || !o->comments)
    return ty__fail(rt, TY_EINVAL, "ty_savetxt: an option string is NULL");
  size_t plen = strlen(path);
  if (plen >= 3 && strcmp(path + plen - 3, ".gz") == 0)
    return ty__fail(rt, TY_EINVAL, "ty_savetxt: '%s': compressed (.gz) text is not supported", path);
  int nd = ty_store_ndim(s);
  if (nd != 1 && nd != 2)
    return ty__fail(rt, TY_ESHAPE, "ty_savetxt: expected a 1-D or 2-D store, got %d-D", nd);
  writer w = {.rt = rt, .o = o, .t = ty_store_dtype(s)};
  w.rows = ty_store_shape(s)[0];
  w.cols = nd == 2 ? ty_store_shape(s)[1] : 1;
  char msg[400];
  /* numpy: fmt with one conversion is repeated for every column, joined by
   * the delimiter; otherwise it must have one conversion per column. A
   * conversion takes two bytes at least, so strlen / 2 + 1 slots suffice. */
  size_t fl = strlen(o->fmt), dl = strlen(o->delimiter);
  conv *scratch = ty__malloc((fl / 2 + 1) * sizeof *scratch);
  if (!scratch) return ty__fail(rt, TY_ENOMEM, "ty_savetxt: out of memory");
  int n1;
  size_t tail1;
  int bad = compile_format(o->fmt, scratch, (int)(fl / 2 + 1), &n1, &tail1, msg, sizeof msg);
  free(scratch);
  if (bad) return ty__fail(rt, TY_EINVAL, "ty_savetxt: %s", msg);
  char *row = NULL;
  if (n1 == 1) {
    size_t cols = (size_t)w.cols;
    row = ty__malloc(cols * (fl + dl) + 1);
    if (!row) return ty__fail(rt, TY_ENOMEM, "ty_savetxt: out of memory");
    char *p = row;
    for (size_t k = 0; k < cols; k++) {
      if (k) memcpy(p, o->delimiter, dl), p += dl;
      memcpy(p, o->fmt, fl), p += fl;
    }
    *p = '\0';
  } else {
    row = ty__strdup(o->fmt);
    if (!row) return ty__fail(rt, TY_ENOMEM, "ty_savetxt: out of memory");
  }
  size_t rl = strlen(row);
  w.convs = ty__malloc((rl / 2 + 1) * sizeof *w.convs);
  ty_status st = TY_OK;
  if (!w.convs) st = ty__fail(rt, TY_ENOMEM, "ty_savetxt: out of memory");
  else if (compile_format(row, w.convs, (int)(rl / 2 + 1), &w.nconv, &w.tail, msg, sizeof msg))
    st = ty__fail(rt, TY_EINVAL, "ty_savetxt: %s", msg);
  else if (w.nconv != w.cols)
    st = ty__fail(rt, TY_EINVAL, "ty_savetxt: fmt \"%s\" has %d conversions, but the store has %lld "
                  "columns (give one conversion, or one per column)", o->fmt, n1, (long long)w.cols);
  w.row = row;
  size_t nbytes = (size_t)ty_store_size(s) * ty_dtype_size(w.t);
  char *data = NULL;
  if (!st) {
    data = ty__malloc(nbytes ? nbytes : 1);
    w.cap = 1 << 16;
    w.buf = ty__malloc(w.cap);
    if (!data || !w.buf) st = ty__fail(rt, TY_ENOMEM, "ty_savetxt: out of memory");
  }
  if (!st) st = ty_store_read(rt, s, data, nbytes);
  if (!st) {
    w.data = data;
    st = ty__save_file(rt, "ty_savetxt", path, write_text, &w);
    if (st == TY_EIO && w.bad[0]) st = ty__fail(rt, TY_EINVAL, "ty_savetxt: %s", w.bad);
  }
  free(data);
  free(w.buf);
  free(w.convs);
  free(row);
  return st;
}
