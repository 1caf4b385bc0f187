/*
 * format.c — ty_store_format: the text print(x) shows in Lua.
 *
 * The values are laid out exactly as numpy's str(array) (array2string) under
 * the runtime's print options (ty_set_print_options, numpy's set_printoptions:
 * by default 75-column lines, precision 8, summarise above 1000 elements with
 * 3 edge items), then a line naming the shape and dtype:
 *
 *   [[0.5488135  0.71518937]
 *    [0.60276338 0.54488318]]
 *   tycho.store(shape=(2, 2), dtype=f64)
 *
 * Booleans print as numpy's ("[ True False]"). A 0-d store prints its value
 * as numpy's repr of a 0-d array shows it ("1." as in "array(1.)", not
 * Python's "1.0"; "True").
 *
 * Floats follow numpy's FloatingFormat (floatmode "maxprec"): positional with
 * at most `precision` fractional digits, the fewest that read back as the
 * same value (trailing dot for integral values, "1."), padded with spaces
 * into aligned columns; scientific notation for every element when the
 * largest non-zero magnitude is >= 1e8, or (unless `suppress`) the smallest
 * is < 1e-4 or their ratio > 1000, with all mantissas printed to the same
 * number of digits. f32 elements are shortest as floats (0.1f prints "0.1").
 *
 * Only the printed elements are read: a summarised store (more than
 * `threshold` elements) shows at most 2 * edgeitems indices per dimension
 * (3 + "..." + 3 by default), read one by one with ty_store_get, so printing
 * a 10^9-element store reads 36 elements of a matrix, not 8 GB.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Printing more than 4M elements (only a high-rank store of dims <= 6 gets
 * there) is refused rather than building a 100 MB string. */
#define MAX_SHOWN ((int64_t)1 << 22)

/* ---- a growable string --------------------------------------------------------- */

typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static bool sb_reserve(sbuf *b, size_t more) {
  if (b->oom) return false;
  if (b->n + more + 1 <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + more + 1) cap *= 2;
  char *p = ty__realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

static void sb_putn(sbuf *b, const char *s, size_t n) {
  if (!sb_reserve(b, n)) return;
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_fill(sbuf *b, char c, size_t n) {
  if (!sb_reserve(b, n)) return;
  memset(b->p + b->n, c, n);
  b->n += n;
  b->p[b->n] = '\0';
}

/* ---- floats -------------------------------------------------------------------- */

/* Room for "%.*f" of DBL_MAX (309 digits) at the largest precision, and so
 * for any word: positional words are < 1e8 before the point. */
#define FBUF (320 + TY_PRINT_MAX_PRECISION)

static bool reads_back(const char *s, double x, bool f32) {
  return f32 ? strtof(s, NULL) == (float)x : strtod(s, NULL) == x;
}

/* The fewest digits p in [0, prec] with which `conv` ("%.*f" or "%.*e")
 * prints |x| so that it reads back as x, or prec + 1 when none does.
 * Reading back is monotonic in p (more correctly rounded digits are never
 * farther from x), so a binary search needs 4 conversions at precision 8. */
static int fewest_digits(const char *conv, double x, bool f32, int prec) {
  char buf[FBUF];
  int lo = 0, hi = prec + 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    snprintf(buf, sizeof buf, conv, mid, fabs(x));
    if (reads_back(buf, fabs(x), f32))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Positional digits of a finite x as numpy's dragon4_positional(unique,
 * precision prec, trim '.'): integer part (with '-') and fractional part. */
static void positional(double x, bool f32, int prec, char *ip, size_t ipcap, char *fp,
                       size_t fpcap) {
  char buf[FBUF];
  int p = fewest_digits("%.*f", x, f32, prec);
  snprintf(buf, sizeof buf, "%.*f", p > prec ? prec : p, fabs(x));
  char *dot = strchr(buf, '.');
  const char *frac = "";
  if (dot) {
    *dot = '\0';
    frac = dot + 1;
    size_t n = strlen(frac);
    while (n > 0 && dot[n] == '0') dot[n--] = '\0'; /* trim the 8-digit cut */
  }
  snprintf(ip, ipcap, "%s%.*s", signbit(x) ? "-" : "", (int)(ipcap - 2), buf);
  snprintf(fp, fpcap, "%s", frac);
}

/* Mantissa fractional digits of x in scientific notation: the fewest that
 * read back, at most prec (a value cut at prec loses its trailing zeros). */
static int sci_digits(double x, bool f32, int prec, int *exp10) {
  char buf[FBUF];
  int p = fewest_digits("%.*e", x, f32, prec);
  if (p > prec) {
    snprintf(buf, sizeof buf, "%.*e", prec, fabs(x));
    char *e = strchr(buf, 'e');
    p = prec;
    while (p > 0 && e[-1] == '0') {
      e--;
      p--;
    }
  } else {
    snprintf(buf, sizeof buf, "%.*e", p, fabs(x));
  }
  *exp10 = atoi(strchr(buf, 'e') + 1);
  return p;
}

/* ---- the formatter --------------------------------------------------------------- */

typedef struct fmt {
  ty_print_options opt;
  ty_dtype dtype;
  bool isfloat, f32;
  int ndim;
  int64_t shape[TY_MAX_RANK];
  int64_t shown[TY_MAX_RANK];   /* indices printed per dim */
  bool summ[TY_MAX_RANK];       /* dim printed as 3 + "..." + 3 */
  int64_t vstride[TY_MAX_RANK]; /* strides of the shown elements in vals */
  int64_t nshown;
  double *fv;                   /* shown values, C order (floats) */
  int64_t *iv;                  /* (integers and bools) */
  /* floats: numpy's FloatingFormat fields */
  bool exp;
  int pad_left, pad_right, precision, exp_size;
  /* integers and bools */
  int width;
  sbuf out;
} fmt;

/* An integer element as numpy prints it; u64 values are held as their bits. */
static int int_str(char *buf, size_t cap, int width, int64_t v, ty_dtype t) {
  if (t == TY_U64) return snprintf(buf, cap, "%*llu", width, (unsigned long long)v);
  return snprintf(buf, cap, "%*lld", width, (long long)v);
}

static int digits_of(int64_t v, ty_dtype t) {
  char buf[32];
  return int_str(buf, sizeof buf, 0, v, t);
}

/* numpy's FloatingFormat.fillFormat over the shown values. */
static void fill_float(fmt *f) {
  double maxv = 0, minv = INFINITY;
  int64_t nfinite = 0, nnz = 0;
  bool neginf = false;
  for (int64_t k = 0; k < f->nshown; k++) {
    double x = f->fv[k];
    if (!isfinite(x)) {
      if (isinf(x) && x < 0) neginf = true;
      continue;
    }
    nfinite++;
    double a = fabs(x);
    if (a == 0) continue;
    nnz++;
    if (a > maxv) maxv = a;
    if (a < minv) minv = a;
  }
  f->exp = nnz > 0 &&
           (maxv >= 1e8 || (!f->opt.suppress && (minv < 1e-4 || maxv / minv > 1000.)));
  f->pad_left = f->pad_right = 0;
  f->precision = 0;
  f->exp_size = -1;
  if (nfinite > 0 && f->exp) {
    int maxe = 0;
    for (int64_t k = 0; k < f->nshown; k++) {
      double x = f->fv[k];
      if (!isfinite(x)) continue;
      int e10;
      int p = sci_digits(x, f->f32, f->opt.precision, &e10);
      if (p > f->precision) f->precision = p;
      int ed = digits_of(e10 < 0 ? -(int64_t)e10 : e10, TY_I64);
      if (ed > maxe) maxe = ed;
      int il = signbit(x) ? 2 : 1;
      if (il > f->pad_left) f->pad_left = il;
    }
    f->exp_size = maxe < 2 ? 2 : maxe;
    f->pad_right = f->exp_size + 2 + f->precision;
  } else if (nfinite > 0) {
    char ip[64], fp[TY_PRINT_MAX_PRECISION + 8];
    for (int64_t k = 0; k < f->nshown; k++) {
      double x = f->fv[k];
      if (!isfinite(x)) continue;
      positional(x, f->f32, f->opt.precision, ip, sizeof ip, fp, sizeof fp);
      int il = (int)strlen(ip), fl = (int)strlen(fp);
      if (il > f->pad_left) f->pad_left = il;
      if (fl > f->pad_right) f->pad_right = fl;
    }
  }
  if (nfinite < f->nshown) {
    int offset = f->pad_right + 1; /* +1 for the decimal point */
    int nanlen = 3, inflen = 3 + (neginf ? 1 : 0);
    if (nanlen - offset > f->pad_left) f->pad_left = nanlen - offset;
    if (inflen - offset > f->pad_left) f->pad_left = inflen - offset;
  }
}

static void fill_int(fmt *f) {
  f->width = 1;
  if (f->dtype == TY_BOOL) {
    f->width = f->ndim > 0 ? 5 : 0; /* numpy pads True to " True" beside False */
    return;
  }
  for (int64_t k = 0; k < f->nshown; k++) {
    int w = digits_of(f->iv[k], f->dtype);
    if (w > f->width) f->width = w;
  }
}

/* Element k (index into the shown values) as a fixed-width word. */
static int word_raw(const fmt *f, int64_t k, char *w, size_t cap) {
  if (!f->isfloat) {
    if (f->dtype == TY_BOOL)
      return snprintf(w, cap, "%*s", f->width, f->iv[k] ? "True" : "False");
    return int_str(w, cap, f->width, f->iv[k], f->dtype);
  }
  double x = f->fv[k];
  if (!isfinite(x)) {
    const char *s = isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
    return snprintf(w, cap, "%*s", f->pad_left + f->pad_right + 1, s);
  }
  if (f->exp) {
    /* every mantissa to the common precision: numpy prints real digits of
     * the value past its shortest form (f32 1e-5 -> 9.9999997e-06) */
    char buf[FBUF];
    snprintf(buf, sizeof buf, "%.*e", f->precision, fabs(x));
    char *e = strchr(buf, 'e');
    int e10 = atoi(e + 1);
    *e = '\0';
    const char *frac = buf[1] == '.' ? buf + 2 : "";
    char ip[4] = {0};
    snprintf(ip, sizeof ip, "%s%c", signbit(x) ? "-" : "", buf[0]);
    return snprintf(w, cap, "%*s.%se%c%0*d", f->pad_left, ip, frac, e10 < 0 ? '-' : '+',
                    f->exp_size, e10 < 0 ? -e10 : e10);
  }
  char ip[64], fp[TY_PRINT_MAX_PRECISION + 8];
  positional(x, f->f32, f->opt.precision, ip, sizeof ip, fp, sizeof fp);
  return snprintf(w, cap, "%*s.%-*s", f->pad_left, ip, f->pad_right, fp);
}

/* word_raw's length cut to the buffer (never reached: a word is at most
 * ~20 + TY_PRINT_MAX_PRECISION bytes, FBUF is 320 + that), so callers can
 * append exactly what was written. */
static int word(const fmt *f, int64_t k, char *w, size_t cap) {
  int n = word_raw(f, k, w, cap);
  return n < 0 ? 0 : n >= (int)cap ? (int)cap - 1 : n;
}

/* numpy's _extendLine: start a new line when the word would pass `width`,
 * unless the line holds nothing but the hanging indent. The line is
 * out[*line_start ..]; a wrapped line loses its trailing spaces. */
static void extend_line(fmt *f, size_t *line_start, const char *w, size_t wn, int width,
                        int hang) {
  size_t len = f->out.n - *line_start;
  if ((int64_t)(len + wn) > width && len > (size_t)hang) {
    while (f->out.n > *line_start && f->out.p[f->out.n - 1] == ' ') f->out.n--;
    sb_putn(&f->out, "\n", 1);
    *line_start = f->out.n;
    sb_fill(&f->out, ' ', (size_t)hang);
  }
  sb_putn(&f->out, w, wn);
}

/* numpy's _formatArray recurser for the sub-array of dims axis.. whose first
 * shown value is f->fv/iv[base]: `hang` is the hanging indent (one space per
 * enclosing '['), `width` the columns left (one less per level, for ']').
 * Items come in numpy's order: leading ones, "...", then trailing ones
 * counted back from the end. Writes "[...]" at the end of f->out. */
static void recurse(fmt *f, int axis, int64_t base, int hang, int width) {
  size_t start = f->out.n;
  int axes_left = f->ndim - axis;
  int64_t m = f->shown[axis], vs = f->vstride[axis];
  int64_t lead = f->summ[axis] ? f->opt.edgeitems : 0;
  int64_t trail = f->summ[axis] ? f->opt.edgeitems : m; /* counted back from m */
  char w[FBUF];
  sb_fill(&f->out, ' ', (size_t)hang);
  if (axes_left == 1) {
    int elem_width = width - 1; /* room for ']' */
    size_t line_start = start;
    for (int64_t i = 0; i < lead; i++) {
      int n = word(f, base + i * vs, w, sizeof w);
      extend_line(f, &line_start, w, (size_t)n, elem_width, hang);
      sb_putn(&f->out, " ", 1);
    }
    if (f->summ[axis]) {
      extend_line(f, &line_start, "...", 3, elem_width, hang);
      sb_putn(&f->out, " ", 1);
    }
    for (int64_t i = trail; i > 1; i--) {
      int n = word(f, base + (m - i) * vs, w, sizeof w);
      extend_line(f, &line_start, w, (size_t)n, elem_width, hang);
      sb_putn(&f->out, " ", 1);
    }
    int n = word(f, base + (m - 1) * vs, w, sizeof w);
    extend_line(f, &line_start, w, (size_t)n, elem_width, hang);
  } else {
    /* rows end with a newline per remaining axis: blank lines between blocks */
    size_t nl = (size_t)(axes_left - 1);
    for (int64_t i = 0; i < lead; i++) {
      if (i > 0) sb_fill(&f->out, ' ', (size_t)hang);
      recurse(f, axis + 1, base + i * vs, hang + 1, width - 1);
      sb_fill(&f->out, '\n', nl);
    }
    if (f->summ[axis]) {
      if (lead > 0) sb_fill(&f->out, ' ', (size_t)hang);
      sb_puts(&f->out, "...");
      sb_fill(&f->out, '\n', nl);
    }
    bool first = lead == 0 && !f->summ[axis];
    for (int64_t i = trail; i >= 1; i--) {
      if (!first) sb_fill(&f->out, ' ', (size_t)hang);
      first = false;
      recurse(f, axis + 1, base + (m - i) * vs, hang + 1, width - 1);
      if (i > 1) sb_fill(&f->out, '\n', nl);
    }
  }
  if (f->out.oom) return;
  /* s = '[' + s[len(hanging_indent):] + ']' */
  memmove(f->out.p + start + 1, f->out.p + start + hang, f->out.n - start - (size_t)hang);
  f->out.n -= (size_t)hang - 1;
  f->out.p[start] = '[';
  f->out.p[f->out.n] = '\0';
  sb_putn(&f->out, "]", 1);
}

/* Read the shown elements into f->fv / f->iv in C order of the shown grid. */
static ty_status read_shown(ty_runtime *rt, ty_store *s, fmt *f) {
  bool isf = f->isfloat;
  if (f->nshown == s->size) {
    size_t es = ty_dtype_size(s->dtype), n = (size_t)s->size;
    char *buf = ty__malloc(n * es + 1);
    if (!buf) return ty__fail(rt, TY_ENOMEM, "ty_store_format: out of memory");
    ty_status st = ty_store_read(rt, s, buf, n * es);
    if (st == TY_OK)
      for (size_t k = 0; k < n; k++) {
        if (isf)
          f->fv[k] = ty__load_f64(buf + k * es, s->dtype);
        else
          f->iv[k] = ty__load_i64(buf + k * es, s->dtype);
      }
    free(buf);
    return st;
  }
  /* summarised: visit the shown grid, mapping shown positions to indices */
  int64_t pos[TY_MAX_RANK] = {0}, idx[TY_MAX_RANK];
  for (int64_t k = 0; k < f->nshown; k++) {
    for (int d = 0; d < f->ndim; d++)
      idx[d] = f->summ[d] && pos[d] >= f->opt.edgeitems ? f->shape[d] - f->shown[d] + pos[d]
                                                         : pos[d];
    ty_value v;
    ty_status st = ty_store_get(rt, s, idx, &v);
    if (st) return st;
    if (isf)
      f->fv[k] = v.f;
    else
      f->iv[k] = v.i;
    for (int d = f->ndim - 1; d >= 0; d--) {
      if (++pos[d] < f->shown[d]) break;
      pos[d] = 0;
    }
  }
  return TY_OK;
}

ty_status ty_store_format(ty_runtime *rt, ty_store *s, char **out) {
  if (!rt) return TY_EINVAL;
  if (!s || !out) return ty__fail(rt, TY_EINVAL, "ty_store_format: the store or out is NULL");
  *out = NULL;
  fmt f;
  memset(&f, 0, sizeof f);
  f.opt = rt->print;
  f.dtype = s->dtype;
  f.isfloat = ty_dtype_is_float(s->dtype);
  f.f32 = s->dtype == TY_F32;
  f.ndim = s->ndim;
  bool summarise = s->size > f.opt.threshold;
  int64_t edge = f.opt.edgeitems;
  f.nshown = 1;
  for (int d = 0; d < s->ndim; d++) {
    f.shape[d] = s->shape[d];
    f.summ[d] = summarise && s->shape[d] > 2 * edge;
    f.shown[d] = f.summ[d] ? 2 * edge : s->shape[d];
  }
  if (s->size == 0) f.nshown = 0;
  for (int d = 0; d < s->ndim && f.nshown; d++) {
    if (f.nshown > MAX_SHOWN / f.shown[d]) {
      char sh[256];
      ty__shape_str(s->ndim, s->shape, sh, sizeof sh);
      return ty__fail(rt, TY_ELIMIT,
                      "ty_store_format: a store of shape %s would print more than %lld elements",
                      sh, (long long)MAX_SHOWN);
    }
    f.nshown *= f.shown[d];
  }
  int64_t vs = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    f.vstride[d] = vs;
    vs *= f.shown[d] ? f.shown[d] : 1;
  }

  ty_status st = TY_OK;
  if (f.nshown > 0) {
    if (f.isfloat)
      f.fv = ty__malloc((size_t)f.nshown * sizeof *f.fv);
    else
      f.iv = ty__malloc((size_t)f.nshown * sizeof *f.iv);
    if (!f.fv && !f.iv) return ty__fail(rt, TY_ENOMEM, "ty_store_format: out of memory");
    st = read_shown(rt, s, &f);
    if (st) goto done;
    if (f.isfloat)
      fill_float(&f);
    else
      fill_int(&f);
  }

  if (f.nshown == 0) {
    sb_puts(&f.out, "[]");
  } else if (f.ndim == 0) {
    char w[FBUF];
    int n = word(&f, 0, w, sizeof w);
    sb_putn(&f.out, w, (size_t)n);
  } else {
    recurse(&f, 0, 0, 1, f.opt.linewidth);
  }
  char sh[400];
  ty__shape_str(s->ndim, s->shape, sh, sizeof sh);
  sb_puts(&f.out, "\ntycho.store(shape=");
  sb_puts(&f.out, sh);
  sb_puts(&f.out, ", dtype=");
  sb_puts(&f.out, ty_dtype_name(s->dtype));
  sb_puts(&f.out, ")");
  if (f.out.oom) {
    st = ty__fail(rt, TY_ENOMEM, "ty_store_format: out of memory");
    goto done;
  }
  *out = f.out.p;
  f.out.p = NULL;
done:
  free(f.fv);
  free(f.iv);
  free(f.out.p);
  return st;
}

void ty_print_options_default(ty_print_options *o) {
  o->threshold = 1000;
  o->precision = 8;
  o->linewidth = 75;
  o->edgeitems = 3;
  o->suppress = false;
}

ty_status ty_set_print_options(ty_runtime *rt, const ty_print_options *o) {
  if (!rt) return TY_EINVAL;
  if (!o) return ty__fail(rt, TY_EINVAL, "ty_set_print_options: the options are NULL");
  if (o->threshold < 0)
    return ty__fail(rt, TY_EINVAL, "threshold must be >= 0, got %lld", (long long)o->threshold);
  if (o->precision < 0 || o->precision > TY_PRINT_MAX_PRECISION)
    return ty__fail(rt, TY_EINVAL, "precision must be in 0..%d, got %d", TY_PRINT_MAX_PRECISION,
                    o->precision);
  if (o->linewidth < 1)
    return ty__fail(rt, TY_EINVAL, "linewidth must be >= 1, got %d", o->linewidth);
  if (o->edgeitems < 1)
    return ty__fail(rt, TY_EINVAL, "edgeitems must be >= 1, got %d", o->edgeitems);
  rt->print = *o;
  return TY_OK;
}

void ty_get_print_options(ty_runtime *rt, ty_print_options *o) {
  if (rt && o) *o = rt->print;
}
