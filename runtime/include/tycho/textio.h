/*
 * tycho/textio.h — numpy's loadtxt and savetxt: stores from and to text
 * files of numbers (CSV, whitespace-separated), beside the .npy files of
 * ty_load_npy / ty_save_npy.
 *
 * Loading streams the file (1 MiB reads) and converts each field in place
 * (an exact fast path for plain decimals, else the C locale's strtod: the
 * same doubles), so a 10^6-row file needs no per-field memory; the store is
 * made at the end. Errors name the place: "data.csv:3:5: could not convert
 * 'abc' to f64", "data.csv:4: line 4 has 2 columns, expected 3 (as line 1)".
 */
#ifndef TYCHO_TEXTIO_H
#define TYCHO_TEXTIO_H

#include "tycho/tycho.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ty_loadtxt_opts {
  char delimiter;         /* one byte; 0: runs of whitespace (numpy's None) */
  const char *comments;   /* a line's text from this string on is ignored; NULL or "": none */
  int64_t skiprows;       /* lines skipped first, whatever they hold */
  int64_t max_rows;       /* rows of data read at most (blank and comment lines do not
                             count); < 0: all */
  const int64_t *usecols; /* the columns kept, in this order, 0-based, negative from the
                             end; NULL: all (then every row has the same count) */
  int nusecols;
  ty_dtype dtype;         /* a float or integer dtype */
  int ndmin;              /* 0, 1 or 2: numpy's squeeze, then at least this rank */
} ty_loadtxt_opts;

/* numpy's defaults: whitespace, "#", f64, every row and column, ndmin 0. */
void ty_loadtxt_defaults(ty_loadtxt_opts *o);

/* The rows x columns of numbers of a text file, as numpy's loadtxt shapes
 * them: (rows, columns) with dimensions of length 1 squeezed out unless
 * ndmin keeps them (one row or one column: 1-D; one number: 0-d). Integer
 * dtypes take integers (or a float with an integral value, "3.0"); floats
 * take what strtod does but hexadecimal ("nan", "inf", "1e-3"). */
ty_status ty_loadtxt(ty_runtime *rt, const char *path, const ty_loadtxt_opts *o, ty_store **out);
/* The same from text in memory; `name` stands for the file in messages. */
ty_status ty_loadtxt_buffer(ty_runtime *rt, const char *text, size_t len, const char *name,
                            const ty_loadtxt_opts *o, ty_store **out);

typedef struct ty_savetxt_opts {
  const char *fmt;       /* printf-style: one conversion for every column, or one per
                            column (d i u o x X e E f F g G, flags, width, precision) */
  const char *delimiter; /* between columns when fmt has one conversion */
  const char *newline;   /* after each row */
  const char *header;    /* "" none; else written first, each line after `comments` */
  const char *footer;    /* the same, last */
  const char *comments;
} ty_savetxt_opts;

/* numpy's defaults: "%.18e", " ", "\n", no header or footer, "# ". */
void ty_savetxt_defaults(ty_savetxt_opts *o);

/* Write a 1-D store (one value a line) or a 2-D one (a row a line) as
 * numpy's savetxt does, through a temporary renamed over the target (the
 * rules of ty_save_npy: links followed, only regular files replaced). */
ty_status ty_savetxt(ty_runtime *rt, const char *path, ty_store *s, const ty_savetxt_opts *o);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_TEXTIO_H */
