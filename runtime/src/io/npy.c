/*
 * npy.c — numpy's .npy files: ty_load_npy and ty_save_npy.
 *
 * The format (numpy/lib/format.py): 6 magic bytes "\x93NUMPY", a major and a
 * minor version byte, the header length (2 bytes little-endian in 1.0, 4 in
 * 2.0 and 3.0), then the header: a Python dict literal such as
 *   {'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the raw elements.
 *
 * Loading trusts nothing in the file. The pure parser (ty__npy_parse, see
 * npy.h; no I/O, no allocation, so it can be fuzzed) checks the header length
 * against a 64 KiB limit and the file size, the dict's syntax, the dtype, the
 * rank, the element count for overflow, and that the data fits in the file,
 * all before the loader allocates anything. The store is charged against the
 * memory budget before its storage is allocated, and a short read (a file
 * that shrank while being read) is an error, never uninitialised data.
 * Fortran-order data is read through a 4 MiB buffer and scattered into the
 * store, so no load needs more than the store itself plus that buffer. The
 * loader reads a file or, for tests and tests/fuzz, a buffer in memory
 * (ty__npy_load_buffer): one code path either way.
 *
 * Saving writes through ty__save_file (savefile.c): a temporary beside the
 * target renamed over it, links followed, non-regular targets refused; the
 * rules are written there once for every writer (.npy and text files).
 */
#define _GNU_SOURCE /* pread on every libc */
#include "npy.h"
#include "npy_dist.h"

#include "internal.h"
#include "exec.h"
#include "exec_gpu.h"
#include "savefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Byte-order character of this machine in numpy's descr strings. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NATIVE_ORDER '>'
#define FOREIGN_ORDER '<'
#else
#define NATIVE_ORDER '<'
#define FOREIGN_ORDER '>'
#endif

static ty_status errf(char *err, size_t errlen, ty_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static ty_status errf(char *err, size_t errlen, ty_status st, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return st;
}

/* A file's bytes, quoted for a message: printable ASCII as is, others as
 * \xNN, cut at 40 bytes so a hostile header cannot flood the message. */
static void quote(char *out, size_t cap, const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 8 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i == 40) {
      k += (size_t)snprintf(out + k, cap - k, "...");
      break;
    }
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[k++] = (char)c;
    else
      k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
  }
  out[k] = '\0';
}

const char *ty__npy_descr(ty_dtype t) {
  switch (t) {
#if NATIVE_ORDER == '<'
  case TY_F64: return "<f8";
  case TY_F32: return "<f4";
  case TY_I64: return "<i8";
  case TY_I32: return "<i4";
  case TY_I16: return "<i2";
  case TY_U16: return "<u2";
  case TY_U32: return "<u4";
  case TY_U64: return "<u8";
#else
  case TY_F64: return ">f8";
  case TY_F32: return ">f4";
  case TY_I64: return ">i8";
  case TY_I32: return ">i4";
  case TY_I16: return ">i2";
  case TY_U16: return ">u2";
  case TY_U32: return ">u4";
  case TY_U64: return ">u8";
#endif
  case TY_U8: return "|u1";
  case TY_I8: return "|i1";
  case TY_BOOL: return "|b1";
  default: return "?";
  }
}

/* ---- parsing (pure) ---------------------------------------------------------- */

ty_status ty__npy_header_end(const void *buf, size_t len, uint64_t file_size, uint64_t *end,
                             char *err, size_t errlen) {
  const unsigned char *b = buf;
  size_t have = (uint64_t)len < file_size ? len : (size_t)file_size;
  size_t cmp = have < 6 ? have : 6;
  if (memcmp(b, npy_magic, cmp) != 0)
    return errf(err, errlen, TY_EIO, "not a .npy file (it does not start with \\x93NUMPY)");
  if (have < 8)
    return errf(err, errlen, TY_EIO, "truncated: %zu bytes is too short for a .npy preamble",
                have);
  int major = b[6], minor = b[7];
  if (minor != 0 || major < 1 || major > 3)
    return errf(err, errlen, TY_EIO,
                "unsupported .npy format version %d.%d (tycho reads 1.0, 2.0 and 3.0)", major,
                minor);
  size_t pre = major == 1 ? 10 : 12;
  if (have < pre)
    return errf(err, errlen, TY_EIO, "truncated: %zu bytes is too short for a version %d.0 preamble",
                have, major);
  uint64_t hlen = major == 1 ? (uint64_t)b[8] | (uint64_t)b[9] << 8
                             : (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 |
                                   (uint64_t)b[11] << 24;
  uint64_t e = pre + hlen;
  if (e > TY_NPY_MAX_HEADER)
    return errf(err, errlen, TY_EIO, "the header claims %llu bytes, over tycho's limit of %d",
                (unsigned long long)hlen, TY_NPY_MAX_HEADER);
  if (e > file_size)
    return errf(err, errlen, TY_EIO,
                "truncated: the header needs %llu bytes but the file has only %llu",
                (unsigned long long)e, (unsigned long long)file_size);
  *end = e;
  return TY_OK;
}

/* A cursor over the header dict's text. */
typedef struct lex {
  const char *p, *e;
  const char *start; /* the file's first byte, for offsets in messages */
  char *err;
  size_t errlen;
} lex;

static void skip_ws(lex *x) {
  while (x->p < x->e && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r'))
    x->p++;
}

static ty_status syntax(lex *x, const char *what) {
  char near[64];
  quote(near, sizeof near, x->p, (size_t)(x->e - x->p) < 16 ? (size_t)(x->e - x->p) : 16);
  return errf(x->err, x->errlen, TY_EIO, "malformed header: %s at byte %td ('%s')", what,
              x->p - x->start, near);
}

/* A quoted string without escapes ('...' or "..."): numpy writes keys and
 * descr strings this way, and none of the dtypes tycho reads needs an escape. */
static ty_status lex_string(lex *x, const char **s, size_t *n) {
  if (x->p >= x->e || (*x->p != '\'' && *x->p != '"')) return syntax(x, "expected a quoted string");
  char q = *x->p++;
  const char *start = x->p;
  while (x->p < x->e && *x->p != q) {
    if (*x->p == '\\' || *x->p == '\n') return syntax(x, "unsupported character in a string");
    x->p++;
  }
  if (x->p >= x->e) return syntax(x, "unterminated string");
  *s = start;
  *n = (size_t)(x->p - start);
  x->p++;
  return TY_OK;
}

static bool lex_word(lex *x, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(x->e - x->p) < n || memcmp(x->p, w, n) != 0) return false;
  /* not a prefix of a longer identifier ("Truex") */
  if ((size_t)(x->e - x->p) > n) {
    char c = x->p[n];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
      return false;
  }
  x->p += n;
  return true;
}

/* A shape tuple: "()", "(3,)", "(2, 3)", "(2, 3,)"; Python 2 files may write
 * "3L". "(3)" is an int, not a tuple, and numpy refuses it too. */
static ty_status lex_shape(lex *x, int *ndim, int64_t *shape) {
  if (x->p >= x->e || *x->p != '(') return syntax(x, "the shape is not a tuple");
  x->p++;
  int n = 0;
  bool comma = false;
  skip_ws(x);
  while (x->p < x->e && *x->p != ')') {
    if (*x->p == '-')
      return errf(x->err, x->errlen, TY_EIO, "malformed header: shape[%d] is negative", n);
    if (*x->p < '0' || *x->p > '9') return syntax(x, "expected a dimension in the shape");
    int64_t v = 0;
    while (x->p < x->e && *x->p >= '0' && *x->p <= '9') {
      int d = *x->p++ - '0';
      if (v > (INT64_MAX - d) / 10)
        return errf(x->err, x->errlen, TY_EIO, "malformed header: shape[%d] overflows 64 bits", n);
      v = v * 10 + d;
    }
    if (x->p < x->e && (*x->p == 'L' || *x->p == 'l')) x->p++;
    if (n == TY_MAX_RANK)
      return errf(x->err, x->errlen, TY_ELIMIT,
                  "the shape has more than %d dimensions (tycho's rank limit)", TY_MAX_RANK);
    shape[n++] = v;
    skip_ws(x);
    comma = false;
    if (x->p < x->e && *x->p == ',') {
      x->p++;
      comma = true;
      skip_ws(x);
    } else if (x->p < x->e && *x->p != ')') {
      return syntax(x, "expected ',' or ')' in the shape");
    }
  }
  if (x->p >= x->e) return syntax(x, "unterminated shape tuple");
  if (n == 1 && !comma) return syntax(x, "the shape is not a tuple");
  x->p++;
  *ndim = n;
  return TY_OK;
}

/* numpy's descr for the dtypes tycho holds. The byte order may be '<', '='
 * or '|' (all native on a little-endian machine) or absent; one-byte types
 * take any order character, as numpy itself normalises them. */
static ty_status parse_descr(const char *s, size_t n, ty_dtype *t, char *err, size_t errlen) {
  char q[200];
  quote(q, sizeof q, s, n);
  const char *k = s;
  size_t kn = n;
  char order = 0;
  if (kn > 0 && (k[0] == '<' || k[0] == '>' || k[0] == '=' || k[0] == '|')) {
    order = k[0];
    k++;
    kn--;
  }
  static const struct {
    const char *code;
    ty_dtype t;
  } codes[] = {{"f8", TY_F64}, {"f4", TY_F32}, {"i8", TY_I64}, {"i4", TY_I32},
               {"u1", TY_U8},  {"b1", TY_BOOL}, {"i1", TY_I8},  {"i2", TY_I16},
               {"u2", TY_U16}, {"u4", TY_U32},  {"u8", TY_U64}};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    if (kn != 2 || memcmp(k, codes[i].code, 2) != 0) continue;
    if (ty_dtype_size(codes[i].t) > 1 && order == FOREIGN_ORDER)
      return errf(err, errlen, TY_EDTYPE,
                  "dtype '%s' has foreign byte order (tycho reads native %s data only)", q,
                  NATIVE_ORDER == '<' ? "little-endian" : "big-endian");
    *t = codes[i].t;
    return TY_OK;
  }
  return errf(err, errlen, TY_EDTYPE,
              "dtype '%s' is not supported (tycho reads <f8 <f4 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1)",
              q);
}

ty_status ty__npy_parse(const void *buf, size_t len, uint64_t file_size, ty_npy_header *h,
                        char *err, size_t errlen) {
  uint64_t end;
  ty_status st = ty__npy_header_end(buf, len, file_size, &end, err, errlen);
  if (st) return st;
  if (end > len)
    return errf(err, errlen, TY_EIO, "truncated: the header needs %llu bytes, %zu given",
                (unsigned long long)end, len);
  const char *b = buf;
  memset(h, 0, sizeof *h);
  h->major = (unsigned char)b[6];
  h->minor = (unsigned char)b[7];
  size_t pre = h->major == 1 ? 10 : 12;
  lex x = {b + pre, b + end, b, err, errlen};

  const char *descr = NULL;
  size_t descr_n = 0;
  bool have_order = false, have_shape = false;
  skip_ws(&x);
  if (x.p >= x.e || *x.p != '{') return syntax(&x, "expected '{'");
  x.p++;
  for (;;) {
    skip_ws(&x);
    if (x.p < x.e && *x.p == '}') {
      x.p++;
      break;
    }
    const char *key;
    size_t kn;
    if ((st = lex_string(&x, &key, &kn))) return st;
    skip_ws(&x);
    if (x.p >= x.e || *x.p != ':') return syntax(&x, "expected ':' after a key");
    x.p++;
    skip_ws(&x);
    if (kn == 5 && memcmp(key, "descr", 5) == 0) {
      if (descr) return syntax(&x, "duplicate key 'descr'");
      if (x.p < x.e && *x.p == '[')
        return errf(err, errlen, TY_EDTYPE,
                    "structured dtypes (a list descr) are not supported");
      if ((st = lex_string(&x, &descr, &descr_n))) return st;
    } else if (kn == 13 && memcmp(key, "fortran_order", 13) == 0) {
      if (have_order) return syntax(&x, "duplicate key 'fortran_order'");
      if (lex_word(&x, "True"))
        h->fortran_order = true;
      else if (lex_word(&x, "False"))
        h->fortran_order = false;
      else
        return syntax(&x, "fortran_order is not True or False");
      have_order = true;
    } else if (kn == 5 && memcmp(key, "shape", 5) == 0) {
      if (have_shape) return syntax(&x, "duplicate key 'shape'");
      if ((st = lex_shape(&x, &h->ndim, h->shape))) return st;
      have_shape = true;
    } else {
      char q[200];
      quote(q, sizeof q, key, kn);
      return errf(err, errlen, TY_EIO, "malformed header: unexpected key '%s'", q);
    }
    skip_ws(&x);
    if (x.p < x.e && *x.p == ',') {
      x.p++;
      continue;
    }
    if (x.p < x.e && *x.p == '}') {
      x.p++;
      break;
    }
    return syntax(&x, "expected ',' or '}'");
  }
  skip_ws(&x);
  if (x.p != x.e) return syntax(&x, "unexpected text after the header dict");
  if (!descr || !have_order || !have_shape)
    return errf(err, errlen, TY_EIO, "malformed header: the dict lacks '%s'",
                !descr ? "descr" : !have_order ? "fortran_order" : "shape");
  if ((st = parse_descr(descr, descr_n, &h->dtype, err, errlen))) return st;

  /* Element count and bytes. As in ty__shape_size, the product of the
   * non-zero dims times the element size must fit in int64 even when a zero
   * dim makes the store empty, so the store's strides cannot overflow. */
  int64_t es = (int64_t)ty_dtype_size(h->dtype), n = 1;
  bool zero = false;
  for (int d = 0; d < h->ndim; d++) {
    int64_t e = h->shape[d] ? h->shape[d] : 1;
    if (!h->shape[d]) zero = true;
    if (n > INT64_MAX / es / e)
      return errf(err, errlen, TY_EIO, "malformed header: shape is too large (its size overflows)");
    n *= e;
  }
  h->count = zero ? 0 : n;
  h->data_offset = end;
  h->data_bytes = (uint64_t)h->count * (uint64_t)es;
  if (h->data_bytes > file_size - end) {
    char sh[400];
    ty__shape_str(h->ndim, h->shape, sh, sizeof sh);
    return errf(err, errlen, TY_EIO,
                "truncated: shape %s of %s needs %llu bytes of data, the file has %llu",
                sh, ty__npy_descr(h->dtype), (unsigned long long)h->data_bytes,
                (unsigned long long)(file_size - end));
  }
  return TY_OK;
}

/* Fortran order is C order of the reversed shape: the file's elements come
 * with dim 0 fastest, and each goes to its C-order place in dst. The walk
 * keeps its place between calls, so the loader can read a Fortran-order file
 * through a small buffer (NPY_CHUNK): the transposing load then needs the
 * store plus 4 MiB, not twice the store. */
typedef struct walk {
  int64_t idx[TY_MAX_RANK]; /* multi-index of the next element, dim 0 fastest */
  int64_t off;              /* its C-order offset, in elements */
} walk;

/* Scatter the next n elements of the file (src) into dst. The header parsed,
 * so count > 0 means every dim > 0 and offsets stay below count. */
static void fortran_scatter(const ty_npy_header *h, walk *w, const char *src, int64_t n,
                            char *dst) {
  size_t es = ty_dtype_size(h->dtype);
  int64_t cst[TY_MAX_RANK];
  int64_t s = 1;
  for (int d = h->ndim - 1; d >= 0; d--) {
    cst[d] = s;
    s *= h->shape[d];
  }
  while (n > 0) {
    /* a run along dim 0: contiguous in the file, stride cst[0] in dst */
    int64_t run = h->shape[0] - w->idx[0];
    if (run > n) run = n;
    char *p = dst + w->off * (int64_t)es;
    int64_t step = cst[0] * (int64_t)es;
    switch (es) {
    case 8:
      for (int64_t i = 0; i < run; i++, src += 8, p += step) memcpy(p, src, 8);
      break;
    case 4:
      for (int64_t i = 0; i < run; i++, src += 4, p += step) memcpy(p, src, 4);
      break;
    default:
      for (int64_t i = 0; i < run; i++, src += es, p += step) memcpy(p, src, es);
      break;
    }
    n -= run;
    w->idx[0] += run;
    w->off += run * cst[0];
    if (w->idx[0] < h->shape[0]) break; /* n is 0: the chunk ended inside the run */
    w->off -= h->shape[0] * cst[0];
    w->idx[0] = 0;
    for (int d = 1; d < h->ndim; d++) {
      w->off += cst[d];
      if (++w->idx[d] < h->shape[d]) break;
      w->off -= cst[d] * h->shape[d];
      w->idx[d] = 0;
    }
  }
}

/* numpy writes bools as 0/1, but a file may hold any byte; kernels rely on 0/1. */
static void normalise_bools(const ty_npy_header *h, void *dst) {
  if (h->dtype != TY_BOOL) return;
  unsigned char *b = dst;
  for (int64_t i = 0; i < h->count; i++) b[i] = b[i] != 0;
}

static bool transposed(const ty_npy_header *h) { return h->fortran_order && h->ndim > 1; }

void ty__npy_decode(const ty_npy_header *h, const void *src, void *dst) {
  if (h->count == 0) return;
  if (transposed(h)) {
    walk w = {{0}, 0};
    fortran_scatter(h, &w, src, h->count, dst);
  } else if (src != dst) {
    memcpy(dst, src, (size_t)h->data_bytes);
  }
  normalise_bools(h, dst);
}

/* ---- header writing (pure) --------------------------------------------------- */

size_t ty__npy_header_write(ty_dtype t, int ndim, const int64_t *shape, char *buf, size_t cap) {
  /* numpy's _write_array_header: the dict's keys sorted, repr'd values, a
   * trailing ", " before '}', then 21 - len(repr(shape[0])) spaces of room
   * to grow the first axis in place (GROWTH_AXIS_MAX_DIGITS), then spaces and
   * '\n' up to a multiple of 64 bytes (ARRAY_ALIGN) counting the preamble. */
  char dict[1024];
  size_t n = 0;
  n += (size_t)snprintf(dict + n, sizeof dict - n,
                        "{'descr': '%s', 'fortran_order': False, 'shape': (", ty__npy_descr(t));
  for (int d = 0; d < ndim && n < sizeof dict; d++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (n < sizeof dict) n += (size_t)snprintf(dict + n, sizeof dict - n, ndim == 1 ? ",), }" : "), }");
  if (ndim > 0 && n < sizeof dict) {
    int digits = snprintf(NULL, 0, "%lld", (long long)shape[0]);
    for (int i = digits; i < 21 && n + 1 < sizeof dict; i++) dict[n++] = ' ';
  }
  if (n >= sizeof dict) return 0;
  size_t hlen = n + 1; /* the '\n' */
  size_t pre = 10;
  size_t pad = 64 - (pre + hlen) % 64;
  int major = 1;
  if (hlen + pad > 65535) {
    major = 2;
    pre = 12;
    pad = 64 - (pre + hlen) % 64;
  }
  size_t total = pre + hlen + pad;
  if (total > cap) return 0;
  unsigned char *o = (unsigned char *)buf;
  memcpy(o, npy_magic, 6);
  o[6] = (unsigned char)major;
  o[7] = 0;
  uint64_t L = hlen + pad;
  for (size_t i = 0; i < pre - 8; i++) o[8 + i] = (unsigned char)(L >> (8 * i));
  memcpy(o + pre, dict, n);
  memset(o + pre + n, ' ', pad);
  o[total - 1] = '\n';
  return total;
}

/* ---- file I/O ---------------------------------------------------------------- */

/* Read exactly n bytes at offset; 0 on success, else an errno value (EIO for
 * an early end of file: the file shrank after we measured it). */
static int pread_full(int fd, void *buf, uint64_t n, uint64_t off) {
  char *p = buf;
  while (n > 0) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t r = pread(fd, p, chunk, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return -1;
    p += r;
    n -= (uint64_t)r;
    off += (uint64_t)r;
  }
  return 0;
}


/* The loader reads through a source: an open regular file, or bytes in
 * memory (ty__npy_load_buffer: tests and the fuzz target). */
typedef struct source {
  int fd;                   /* -1: read mem */
  const unsigned char *mem;
  uint64_t size;            /* the file's size, measured once */
  uint64_t chunk;           /* bytes per read of Fortran-order data */
} source;

/* Exactly n bytes at off: 0, an errno value, or -1 for an early end. */
static int src_read(const source *src, void *buf, uint64_t n, uint64_t off) {
  if (src->fd >= 0) return pread_full(src->fd, buf, n, off);
  if (off > src->size || n > src->size - off) return -1;
  if (n) memcpy(buf, src->mem + off, (size_t)n);
  return 0;
}

static ty_status read_error(ty_runtime *rt, const char *name, int e) {
  if (e < 0)
    return ty__fail(rt, TY_EIO, "ty_load_npy: '%s': truncated (the file changed while being read)",
                    name);
  return ty__fail(rt, TY_EIO, "ty_load_npy: cannot read '%s': %s", name, strerror(e));
}

/* The buffer a Fortran-order file is read through, then scattered (see walk):
 * 4 MiB, large enough that the reads cost nothing next to the scatter. */
#define NPY_CHUNK ((uint64_t)4 << 20)

/* The data of a parsed file into dst (h->data_bytes bytes), in C order. */
static ty_status load_data(ty_runtime *rt, const char *name, const source *src,
                           const ty_npy_header *h, char *dst) {
  int e;
  if (!transposed(h)) {
    if ((e = src_read(src, dst, h->data_bytes, h->data_offset))) return read_error(rt, name, e);
    normalise_bools(h, dst);
    return TY_OK;
  }
  uint64_t es = ty_dtype_size(h->dtype);
  uint64_t chunk = src->chunk / es * es;
  if (chunk < es) chunk = es;
  if (chunk > h->data_bytes) chunk = h->data_bytes;
  /* a buffer source is read in place (ty__npy_parse checked the range) */
  char *buf = src->fd < 0 ? NULL : ty__malloc((size_t)chunk);
  if (src->fd >= 0 && !buf)
    return ty__fail(rt, TY_ENOMEM, "ty_load_npy: out of memory: %llu bytes to read '%s'",
                    (unsigned long long)chunk, name);
  walk w = {{0}, 0};
  for (uint64_t done = 0; done < h->data_bytes;) {
    uint64_t n = h->data_bytes - done < chunk ? h->data_bytes - done : chunk;
    const char *p = buf;
    if (!buf) {
      p = (const char *)src->mem + h->data_offset + done;
    } else if ((e = src_read(src, buf, n, h->data_offset + done))) {
      free(buf);
      return read_error(rt, name, e);
    }
    fortran_scatter(h, &w, p, (int64_t)(n / es), dst);
    done += n;
  }
  free(buf);
  normalise_bools(h, dst);
  return TY_OK;
}

/* Everything the file claims is checked against its size before anything
 * is allocated but the header (at most TY_NPY_MAX_HEADER bytes): then the
 * store is charged against the memory budget (ty__store_new) before its
 * storage exists. So the most a hostile file costs is min(its size, the
 * budget) plus 4 MiB. */
static ty_status load(ty_runtime *rt, const char *name, const source *src, ty_store **out) {
  char err[TY_ERRLEN - 64];
  unsigned char pre[12];
  size_t npre = src->size < sizeof pre ? (size_t)src->size : sizeof pre;
  int e = src_read(src, pre, npre, 0);
  if (e) return read_error(rt, name, e);
  uint64_t end;
  ty_status st = ty__npy_header_end(pre, npre, src->size, &end, err, sizeof err);
  if (st) return ty__fail(rt, st, "ty_load_npy: '%s': %s", name, err);
  char *hdr = ty__malloc((size_t)end); /* <= TY_NPY_MAX_HEADER */
  if (!hdr) return ty__fail(rt, TY_ENOMEM, "ty_load_npy: out of memory reading a header");
  if ((e = src_read(src, hdr, end, 0))) {
    free(hdr);
    return read_error(rt, name, e);
  }
  ty_npy_header h;
  st = ty__npy_parse(hdr, (size_t)end, src->size, &h, err, sizeof err);
  free(hdr);
  if (st) return ty__fail(rt, st, "ty_load_npy: '%s': %s", name, err);
  ty_store *s = NULL;
  st = ty__store_new(rt, h.dtype, h.ndim, h.shape, &s);
  if (!st && h.count > 0) st = ty__storage_ensure(rt, s->storage, false);
  if (st) {
    /* over the budget: say which file ("out of memory: a store of shape ...") */
    char msg[TY_ERRLEN - 64];
    snprintf(msg, sizeof msg, "%s", ty_errmsg(rt));
    ty_store_release(s);
    return ty__fail(rt, st, "ty_load_npy: '%s': %s", name, msg);
  }
  if (h.count > 0 && (st = load_data(rt, name, src, &h, ty__store_base(s)))) {
    ty_store_release(s);
    return st;
  }
  *out = s;
  return TY_OK;
}

ty_status ty__npy_load_buffer(ty_runtime *rt, const void *buf, size_t len, const char *name,
                              size_t chunk, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_load_npy: out is NULL");
  *out = NULL;
  if (!buf && len) return ty__fail(rt, TY_EINVAL, "ty_load_npy: the buffer is NULL");
  source src = {-1, buf, len, chunk ? chunk : NPY_CHUNK};
  return load(rt, name ? name : "<buffer>", &src, out);
}

ty_status ty_load_npy(ty_runtime *rt, const char *path, ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (!out) return ty__fail(rt, TY_EINVAL, "ty_load_npy: out is NULL");
  *out = NULL;
  if (!path || !*path) return ty__fail(rt, TY_EINVAL, "ty_load_npy: the path is empty");
  if (rt->dist.nranks > 1) ty__dist_check_mark(rt, "loads a .npy file");

  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    ty_status st = ty__fail(rt, e == ENOENT ? TY_ENOTFOUND : TY_EIO,
                            "ty_load_npy: cannot open '%s': %s", path, strerror(e));
    return rt->dist.nranks > 1 ? ty__load_npy_agree(rt, st, out) : st;
  }
  ty_status st;
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    st = ty__fail(rt, TY_EIO, "ty_load_npy: cannot stat '%s': %s", path, strerror(errno));
  } else if (S_ISDIR(sb.st_mode)) {
    st = ty__fail(rt, TY_EIO, "ty_load_npy: '%s' is a directory", path);
  } else if (!S_ISREG(sb.st_mode)) {
    /* a pipe or device has no size to check the header against */
    st = ty__fail(rt, TY_EIO, "ty_load_npy: '%s' is not a regular file", path);
  } else {
    source src = {fd, NULL, (uint64_t)sb.st_size, NPY_CHUNK};
    st = load(rt, path, &src, out);
  }
  close(fd);
  if (rt->dist.nranks > 1) st = ty__load_npy_agree(rt, st, out); /* every rank read it */
  return st;
}

typedef struct npy_body {
  const char *hdr;
  size_t hn;
  const void *data;
  size_t nbytes;
} npy_body;

static int write_npy(int fd, void *ud) {
  const npy_body *b = ud;
  int e = ty__write_full(fd, b->hdr, b->hn);
  if (!e && b->nbytes) e = ty__write_full(fd, b->data, b->nbytes);
  return e;
}

ty_status ty_save_npy(ty_runtime *rt, const char *path, ty_store *s) {
  if (!rt) return TY_EINVAL;
  if (!s) return ty__fail(rt, TY_EINVAL, "ty_save_npy: the store is NULL");
  if (!path || !*path) return ty__fail(rt, TY_EINVAL, "ty_save_npy: the path is empty");

  char hdr[1024]; /* rank <= 16: under 600 bytes */
  size_t hn = ty__npy_header_write(s->dtype, s->ndim, s->shape, hdr, sizeof hdr);
  if (hn == 0) return ty__fail(rt, TY_ELIMIT, "ty_save_npy: the header does not fit");

  /* The data in C order: straight from the storage when the store is
   * contiguous and written, else gathered by ty_store_read (which flushes,
   * and reads unwritten storage as zeros). */
  size_t nbytes = (size_t)s->size * ty_dtype_size(s->dtype);
  const void *data = NULL;
  void *buf = NULL;
  const bool ranks = rt->dist.nranks > 1 && rt->dist.write_at_all;
  ty_status st = ty_flush(rt);
  if (st) return st;
  /* check mode meets a rank still flushing before any collective of the save */
  if (ranks) ty__dist_check_mark(rt, "saves a .npy file");
  ty__dist_whole(rt, s->storage); /* several ranks: the pieces others hold */
  if (nbytes > 0) {
    if (s->storage->cancelled) return ty__unavailable(rt, "ty_save_npy", s->storage);
    uint64_t lo, hi;
    bool dense;
    ty__store_range(s, &lo, &hi, &dense);
    if (ty_store_is_contiguous(s) && s->storage->data &&
        (st = ty__storage_host(rt, s->storage, lo, hi, TY__HOST_READ)))
      return st;
    if (ty_store_is_contiguous(s) && s->storage->data) {
      data = ty__store_base(s);
    } else {
      buf = ty__malloc(nbytes);
      if (!buf)
        st = ty__fail(rt, TY_ENOMEM, "ty_save_npy: out of memory: %zu bytes to gather the store",
                      nbytes);
      else if ((st = ty_store_read(rt, s, buf, nbytes)))
        free(buf), buf = NULL;
      if (st && !ranks) return st;
      data = buf;
    }
  }

  if (ranks) { /* the ranks write it together; a failure here (st) is agreed there */
    st = ty__save_npy_ranks(rt, path, hdr, hn, data, nbytes, s->ndim > 0 ? s->shape[0] : 0, st);
    free(buf);
    return st;
  }
  npy_body body = {hdr, hn, data, nbytes};
  st = ty__save_file(rt, "ty_save_npy", path, write_npy, &body);
  free(buf);
  return st;
}
