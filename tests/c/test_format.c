/*
 * test_format.c — ty_store_format, the text of print(x): numpy's str() layout
 * (expected strings below are numpy 1.24's output for the same arrays), then
 * the shape/dtype line; the print options (ty_set_print_options) as numpy's
 * set_printoptions.
 */
#include "check.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <unistd.h>

static ty_runtime *new_rt(void) {
  ty_config cfg;
  ty_config_init(&cfg, NULL, 0);
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* Format a store made from `data` and compare with `want` exactly. */
static void expect_format(ty_runtime *rt, ty_dtype t, int ndim, const int64_t *shape,
                          const void *data, const char *want) {
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_store_from_buffer(rt, t, ndim, shape, data, &s), TY_OK);
  if (!s) return;
  char *out = NULL;
  CHECK_EQ_INT(ty_store_format(rt, s, &out), TY_OK);
  if (out && strcmp(out, want) != 0) {
    fprintf(stderr, "got:\n%s\nwant:\n%s\n", out, want);
    CHECK(!"format mismatch");
  }
  free(out);
  ty_store_release(s);
}

TEST(format_1d_f64) {
  ty_runtime *rt = new_rt();
  double a[] = {0.5, 1, 2.25};
  static const int64_t sh[] = {3};
  expect_format(rt, TY_F64, 1, sh, a, "[0.5  1.   2.25]\ntycho.store(shape=(3,), dtype=f64)");
  double b[] = {0.5488135039273248, 0.7151893663724195, 0.6027633760716439, 0.5448831829968969};
  static const int64_t sh2[] = {2, 2};
  expect_format(rt, TY_F64, 2, sh2, b,
                "[[0.5488135  0.71518937]\n [0.60276338 0.54488318]]\n"
                "tycho.store(shape=(2, 2), dtype=f64)");
  double c[] = {1.5, 10.25, 3, -0.0};
  static const int64_t sh4[] = {4};
  expect_format(rt, TY_F64, 1, sh4, c, "[ 1.5  10.25  3.   -0.  ]\ntycho.store(shape=(4,), dtype=f64)");
  ty_runtime_destroy(rt);
}

TEST(format_2d_ints) {
  ty_runtime *rt = new_rt();
  int64_t a[] = {-1, 20, 3, 4};
  static const int64_t sh[] = {2, 2};
  expect_format(rt, TY_I64, 2, sh, a, "[[-1 20]\n [ 3  4]]\ntycho.store(shape=(2, 2), dtype=i64)");
  int32_t b[24];
  for (int i = 0; i < 24; i++) b[i] = i;
  static const int64_t sh3[] = {2, 3, 4};
  expect_format(rt, TY_I32, 3, sh3, b,
                "[[[ 0  1  2  3]\n  [ 4  5  6  7]\n  [ 8  9 10 11]]\n\n"
                " [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]\n"
                "tycho.store(shape=(2, 3, 4), dtype=i32)");
  uint8_t u[] = {0, 255, 7};
  static const int64_t sh1[] = {3};
  expect_format(rt, TY_U8, 1, sh1, u, "[  0 255   7]\ntycho.store(shape=(3,), dtype=u8)");
  ty_runtime_destroy(rt);
}

TEST(format_bool) {
  ty_runtime *rt = new_rt();
  uint8_t a[] = {1, 0, 1};
  static const int64_t sh[] = {3};
  expect_format(rt, TY_BOOL, 1, sh, a, "[ True False  True]\ntycho.store(shape=(3,), dtype=bool)");
  uint8_t t = 1;
  expect_format(rt, TY_BOOL, 0, NULL, &t, "True\ntycho.store(shape=(), dtype=bool)");
  ty_runtime_destroy(rt);
}

TEST(format_0d) {
  ty_runtime *rt = new_rt();
  double one = 1.0, half = 0.5;
  expect_format(rt, TY_F64, 0, NULL, &one, "1.\ntycho.store(shape=(), dtype=f64)");
  expect_format(rt, TY_F64, 0, NULL, &half, "0.5\ntycho.store(shape=(), dtype=f64)");
  int32_t seven = -7;
  expect_format(rt, TY_I32, 0, NULL, &seven, "-7\ntycho.store(shape=(), dtype=i32)");
  double nan = NAN;
  expect_format(rt, TY_F64, 0, NULL, &nan, "nan\ntycho.store(shape=(), dtype=f64)");
  ty_runtime_destroy(rt);
}

TEST(format_empty) {
  ty_runtime *rt = new_rt();
  static const int64_t sh[] = {2, 0};
  expect_format(rt, TY_F64, 2, sh, NULL, "[]\ntycho.store(shape=(2, 0), dtype=f64)");
  static const int64_t sh0[] = {0};
  expect_format(rt, TY_BOOL, 1, sh0, NULL, "[]\ntycho.store(shape=(0,), dtype=bool)");
  ty_runtime_destroy(rt);
}

TEST(format_nan_inf) {
  ty_runtime *rt = new_rt();
  double a[] = {NAN, INFINITY, -INFINITY, 1.5};
  static const int64_t sh[] = {4};
  expect_format(rt, TY_F64, 1, sh, a, "[ nan  inf -inf  1.5]\ntycho.store(shape=(4,), dtype=f64)");
  double b[] = {1e-5, NAN};
  static const int64_t sh2[] = {2};
  expect_format(rt, TY_F64, 1, sh2, b, "[1.e-05    nan]\ntycho.store(shape=(2,), dtype=f64)");
  double c[] = {NAN, 1.0};
  expect_format(rt, TY_F64, 1, sh2, c, "[nan  1.]\ntycho.store(shape=(2,), dtype=f64)");
  ty_runtime_destroy(rt);
}

TEST(format_scientific_and_f32) {
  ty_runtime *rt = new_rt();
  double a[] = {1e-5, 1.0};
  static const int64_t sh2[] = {2};
  expect_format(rt, TY_F64, 1, sh2, a, "[1.e-05 1.e+00]\ntycho.store(shape=(2,), dtype=f64)");
  double b[] = {1e10, -2.5};
  expect_format(rt, TY_F64, 1, sh2, b, "[ 1.0e+10 -2.5e+00]\ntycho.store(shape=(2,), dtype=f64)");
  double c[] = {1e-100, 1.0};
  expect_format(rt, TY_F64, 1, sh2, c, "[1.e-100 1.e+000]\ntycho.store(shape=(2,), dtype=f64)");
  float f[] = {0.1f, 1e-5f, 1.2345678e-5f};
  static const int64_t sh1[] = {1};
  expect_format(rt, TY_F32, 1, sh1, f, "[0.1]\ntycho.store(shape=(1,), dtype=f32)");
  /* f32 mantissas padded with the value's real digits, as numpy does */
  expect_format(rt, TY_F32, 1, sh2, f + 1,
                "[9.9999997e-06 1.2345678e-05]\ntycho.store(shape=(2,), dtype=f32)");
  float g[] = {67108872.f};
  expect_format(rt, TY_F32, 1, sh1, g, "[67108872.]\ntycho.store(shape=(1,), dtype=f32)");
  double h[] = {0.001953125, 0.5};
  expect_format(rt, TY_F64, 1, sh2, h, "[0.00195312 0.5       ]\ntycho.store(shape=(2,), dtype=f64)");
  ty_runtime_destroy(rt);
}

TEST(format_wraps_long_rows) {
  ty_runtime *rt = new_rt();
  int64_t a[30];
  for (int i = 0; i < 30; i++) a[i] = i;
  static const int64_t sh[] = {30};
  expect_format(rt, TY_I64, 1, sh, a,
                "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
                " 24 25 26 27 28 29]\ntycho.store(shape=(30,), dtype=i64)");
  ty_runtime_destroy(rt);
}

TEST(format_truncates_large_stores) {
  ty_runtime *rt = new_rt();
  int64_t *a = malloc(2000 * sizeof *a);
  for (int i = 0; i < 2000; i++) a[i] = i;
  static const int64_t sh[] = {2000};
  expect_format(rt, TY_I64, 1, sh, a,
                "[   0    1    2 ... 1997 1998 1999]\ntycho.store(shape=(2000,), dtype=i64)");
  double *d = malloc(2000 * sizeof *d);
  for (int i = 0; i < 2000; i++) d[i] = i;
  expect_format(rt, TY_F64, 1, sh, d,
                "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]\n"
                "tycho.store(shape=(2000,), dtype=f64)");
  /* 2-D: rows and columns summarised */
  static const int64_t sh2[] = {40, 50};
  expect_format(rt, TY_I64, 2, sh2, a,
                "[[   0    1    2 ...   47   48   49]\n"
                " [  50   51   52 ...   97   98   99]\n"
                " [ 100  101  102 ...  147  148  149]\n"
                " ...\n"
                " [1850 1851 1852 ... 1897 1898 1899]\n"
                " [1900 1901 1902 ... 1947 1948 1949]\n"
                " [1950 1951 1952 ... 1997 1998 1999]]\n"
                "tycho.store(shape=(40, 50), dtype=i64)");
  /* a store of 10^6 elements prints 36 of them */
  ty_store *s;
  static const int64_t big[] = {1000, 1000};
  CHECK_EQ_INT(ty_store_create(rt, TY_F64, 2, big, &s), TY_OK);
  char *out = NULL;
  CHECK_EQ_INT(ty_store_format(rt, s, &out), TY_OK);
  CHECK_STR_CONTAINS(out, "[[0. 0. 0. ... 0. 0. 0.]\n [0. 0. 0. ... 0. 0. 0.]\n");
  CHECK_STR_CONTAINS(out, " ...\n");
  CHECK_STR_CONTAINS(out, "tycho.store(shape=(1000, 1000), dtype=f64)");
  free(out);
  ty_store_release(s);
  free(a);
  free(d);
  ty_runtime_destroy(rt);
}

/* A transposed view prints its logical values. */
TEST(format_view) {
  ty_runtime *rt = new_rt();
  int32_t a[] = {1, 2, 3, 4, 5, 6};
  static const int64_t sh[] = {2, 3};
  ty_store *s, *t;
  CHECK_EQ_INT(ty_store_from_buffer(rt, TY_I32, 2, sh, a, &s), TY_OK);
  CHECK_EQ_INT(ty_store_transpose(rt, s, 0, 1, &t), TY_OK);
  char *out = NULL;
  CHECK_EQ_INT(ty_store_format(rt, t, &out), TY_OK);
  CHECK(out && strcmp(out, "[[1 4]\n [2 5]\n [3 6]]\ntycho.store(shape=(3, 2), dtype=i32)") == 0);
  free(out);
  ty_store_release(t);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

/* ---- against numpy itself ------------------------------------------------------------ */

#define PYTHON "/usr/bin/python3"

/* numpy prints a set of arrays (random values, mixed magnitudes, nan/inf,
 * f32, summarised 1-D/2-D/3-D, wrapping) and saves them; tycho loads each and
 * must print the same text. */
TEST(format_matches_numpy) {
  if (access(PYTHON, X_OK) != 0 || system(PYTHON " -c 'import numpy' >/dev/null 2>&1") != 0) {
    printf("skip: %s with numpy is not available\n", PYTHON);
    CHECK(access(PYTHON, X_OK) != 0 || system(PYTHON " -c 'import numpy' >/dev/null 2>&1") != 0);
    return;
  }
  char dir[] = "/tmp/tycho-fmt-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           PYTHON " -c '\n"
           "import numpy as np, sys\n"
           "d = sys.argv[1]\n"
           "r = np.random.default_rng(7)\n"
           "arrs = [r.random((3, 4)), r.random(40) * 1000, r.standard_normal((5, 7)) * 1e-3,\n"
           "  r.standard_normal((4, 5, 6)), r.random(2000), r.random((30, 40)) - 0.5,\n"
           "  r.random((11, 12, 13)), np.array([1.0, np.nan, -np.inf, 2.5e9]),\n"
           "  (r.random(17) * 100).astype(np.float32), np.arange(-50, 50).reshape(10, 10),\n"
           "  r.integers(-10**12, 10**12, (6, 7)), r.integers(0, 255, 300).astype(np.uint8),\n"
           "  r.random((7, 8)) < 0.5, np.array(3.25), np.array([[1e-7, 1.0], [123.0, 4.0]]),\n"
           "  np.round(r.random(25) * 1000, 2), r.random((2, 3, 2, 3)), np.zeros((3, 0)),\n"
           "  r.random((1001,)).astype(np.float32), np.array([1e8, 1.0]), np.array([-0.0, 0.0]),\n"
           "  np.array([1e16, 123456789.0]), np.linspace(0, 1, 11), np.full(5, np.nan),\n"
           "  np.array([1/3, 2/3, 1.0]), np.array([np.inf, -np.inf])]\n"
           "for k, a in enumerate(arrs):\n"
           "  np.save(\"%%s/a%%d.npy\" %% (d, k), a)\n"
           "  s = str(a)\n"
           "  open(\"%%s/a%%d.txt\" %% (d, k), \"w\").write(s)\n"
           "print(len(arrs))\n"
           "' %s > %s/count",
           dir, dir);
  CHECK_EQ_INT(system(cmd), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/count", dir);
  FILE *f = fopen(path, "r");
  int count = 0;
  if (f) {
    if (fscanf(f, "%d", &count) != 1) count = 0;
    fclose(f);
  }
  CHECK(count == 26);
  ty_runtime *rt = new_rt();
  static char want[1 << 16];
  for (int k = 0; k < count; k++) {
    snprintf(path, sizeof path, "%s/a%d.txt", dir, k);
    f = fopen(path, "r");
    size_t n = f ? fread(want, 1, sizeof want - 1, f) : 0;
    if (f) fclose(f);
    want[n] = '\0';
    snprintf(path, sizeof path, "%s/a%d.npy", dir, k);
    ty_store *s = NULL;
    CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
    if (!s) continue;
    char *out = NULL;
    CHECK_EQ_INT(ty_store_format(rt, s, &out), TY_OK);
    /* compare the values part (before the shape line) */
    char *tail = out ? strstr(out, "\ntycho.store(") : NULL;
    CHECK(tail != NULL);
    if (tail) *tail = '\0';
    if (out && strcmp(out, want) != 0) {
      fprintf(stderr, "array %d:\ngot:\n%s\nwant (numpy):\n%s\n", k, out, want);
      CHECK(!"differs from numpy");
    }
    free(out);
    ty_store_release(s);
  }
  ty_runtime_destroy(rt);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_INT(system(cmd), 0);
}

static bool same_options(const ty_print_options *a, const ty_print_options *b) {
  return a->threshold == b->threshold && a->precision == b->precision &&
         a->linewidth == b->linewidth && a->edgeitems == b->edgeitems &&
         a->suppress == b->suppress;
}

/* numpy 1.24 under np.set_printoptions(precision=3, threshold=5, edgeitems=2,
 * linewidth=20) and (suppress=True). */
TEST(format_print_options) {
  ty_runtime *rt = new_rt();
  ty_print_options o, d;
  ty_get_print_options(rt, &o);
  ty_print_options_default(&d);
  CHECK(o.threshold == 1000 && o.precision == 8 && o.linewidth == 75 && o.edgeitems == 3 &&
        !o.suppress);
  CHECK(same_options(&o, &d));
  o.precision = 3;
  o.threshold = 5;
  o.edgeitems = 2;
  o.linewidth = 20;
  CHECK_EQ_INT(ty_set_print_options(rt, &o), TY_OK);
  double a[] = {3.14159265, 2.71828183, 0.5, 1, 2, 3, 4, 5};
  static const int64_t sh[] = {8};
  expect_format(rt, TY_F64, 1, sh, a,
                "[3.142 2.718 ...\n 4.    5.   ]\ntycho.store(shape=(8,), dtype=f64)");
  ty_print_options_default(&o);
  o.suppress = true;
  CHECK_EQ_INT(ty_set_print_options(rt, &o), TY_OK);
  double b[] = {1e-10, 1, 100.5};
  static const int64_t sh3[] = {3};
  expect_format(rt, TY_F64, 1, sh3, b, "[  0.    1.  100.5]\ntycho.store(shape=(3,), dtype=f64)");
  /* out of range: refused, the options kept */
  ty_print_options bad = o;
  bad.precision = TY_PRINT_MAX_PRECISION + 1;
  CHECK_EQ_INT(ty_set_print_options(rt, &bad), TY_EINVAL);
  bad = o;
  bad.linewidth = 0;
  CHECK_EQ_INT(ty_set_print_options(rt, &bad), TY_EINVAL);
  bad = o;
  bad.edgeitems = 0;
  CHECK_EQ_INT(ty_set_print_options(rt, &bad), TY_EINVAL);
  bad = o;
  bad.threshold = -1;
  CHECK_EQ_INT(ty_set_print_options(rt, &bad), TY_EINVAL);
  CHECK_EQ_INT(ty_set_print_options(rt, NULL), TY_EINVAL);
  ty_get_print_options(rt, &bad);
  CHECK(same_options(&o, &bad));
  /* the widest precision fits the word buffers */
  o.precision = TY_PRINT_MAX_PRECISION;
  o.suppress = false;
  CHECK_EQ_INT(ty_set_print_options(rt, &o), TY_OK);
  double c[] = {1e-90, 1.0 / 3};
  static const int64_t sh2[] = {2};
  expect_format(rt, TY_F64, 1, sh2, c,
                "[1.000000000000000e-90 3.333333333333333e-01]\n"
                "tycho.store(shape=(2,), dtype=f64)");
  o.suppress = true; /* positional: 1e-90 is 92 columns, one per line */
  CHECK_EQ_INT(ty_set_print_options(rt, &o), TY_OK);
  expect_format(rt, TY_F64, 1, sh2, c,
                "[0.0000000000000000000000000000000000000000000000000000000000000000000"
                "00000000000000000000001\n"
                " 0.3333333333333333                                                   "
                "                       ]\n"
                "tycho.store(shape=(2,), dtype=f64)");
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(format_1d_f64),       CASE(format_2d_ints),
    CASE(format_bool),         CASE(format_0d),
    CASE(format_empty),        CASE(format_nan_inf),
    CASE(format_scientific_and_f32), CASE(format_wraps_long_rows),
    CASE(format_truncates_large_stores), CASE(format_view),
    CASE(format_matches_numpy), CASE(format_print_options),
};
CHECK_MAIN(cases)
