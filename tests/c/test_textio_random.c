/*
 * test_textio_random.c — the C APIs of tycho/textio.h (ty_loadtxt_buffer,
 * ty_loadtxt, ty_savetxt) and tycho/random.h (ty_random_draw with explicit
 * generators and the runtime's), as a host application calls them.
 * Expected values of loadtxt/savetxt are numpy 1.24's for the same text.
 */
#include "check.h"
#include "tycho/random.h"
#include "tycho/textio.h"

#include <stdint.h>
#include <unistd.h>

static ty_runtime *new_rt(int cpus) {
  ty_config cfg;
  ty_config_init(&cfg, NULL, 0);
  cfg.cpus = cpus;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

static ty_store *load_text(ty_runtime *rt, const char *text, const ty_loadtxt_opts *o) {
  ty_store *s = NULL;
  ty_status st = ty_loadtxt_buffer(rt, text, strlen(text), "mem.csv", o, &s);
  if (st != TY_OK) fprintf(stderr, "loadtxt: %s\n", ty_errmsg(rt));
  CHECK_EQ_INT(st, TY_OK);
  return s;
}

TEST(loadtxt_buffer_csv_with_header_and_comments) {
  ty_runtime *rt = new_rt(2);
  ty_loadtxt_opts o;
  ty_loadtxt_defaults(&o);
  o.delimiter = ',';
  o.skiprows = 1;
  ty_store *s = load_text(rt, "x,y,z\r\n# c\r\n1.5, 2,3e2\r\n\r\n-4,  5.25 ,6 # t\r\n7,8,-9.125e-3\r\n", &o);
  CHECK_EQ_INT(ty_store_ndim(s), 2);
  CHECK_EQ_INT(ty_store_shape(s)[0], 3);
  CHECK_EQ_INT(ty_store_shape(s)[1], 3);
  double v[9], want[9] = {1.5, 2.0, 300.0, -4.0, 5.25, 6.0, 7.0, 8.0, -0.009125};
  CHECK_EQ_INT(ty_store_read(rt, s, v, sizeof v), TY_OK);
  for (int i = 0; i < 9; i++) CHECK(v[i] == want[i]);
  ty_store_release(s);
  /* usecols (0-based here), i32, one column squeezed to 1-D */
  int64_t cols[1] = {-1};
  ty_loadtxt_defaults(&o);
  o.usecols = cols;
  o.nusecols = 1;
  o.dtype = TY_I32;
  s = load_text(rt, "1 2 3\n4 5 6\n", &o);
  CHECK_EQ_INT(ty_store_ndim(s), 1);
  CHECK_EQ_INT(ty_store_dtype(s), TY_I32);
  int32_t iv[2];
  CHECK_EQ_INT(ty_store_read(rt, s, iv, sizeof iv), TY_OK);
  CHECK_EQ_INT(iv[0], 3);
  CHECK_EQ_INT(iv[1], 6);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

TEST(loadtxt_errors_name_the_place) {
  ty_runtime *rt = new_rt(1);
  ty_loadtxt_opts o;
  ty_loadtxt_defaults(&o);
  ty_store *s = NULL;
  const char *ragged = "1 2 3\n\n4 5\n";
  CHECK_EQ_INT(ty_loadtxt_buffer(rt, ragged, strlen(ragged), "r.txt", &o, &s), TY_EIO);
  CHECK(s == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "r.txt:3: line 3 has 2 columns, expected 3 (as line 1)");
  const char *bad = "1 2\n3 abc\n";
  CHECK_EQ_INT(ty_loadtxt_buffer(rt, bad, strlen(bad), "b.txt", &o, &s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "b.txt:2:3: could not convert 'abc' to f64");
  CHECK_EQ_INT(ty_loadtxt(rt, "/nonexistent/file.txt", &o, &s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "cannot open '/nonexistent/file.txt'");
  o.dtype = TY_BOOL;
  CHECK_EQ_INT(ty_loadtxt_buffer(rt, "1\n", 2, NULL, &o, &s), TY_EDTYPE);
  ty_runtime_destroy(rt);
}

TEST(savetxt_writes_numpys_bytes_and_loads_back) {
  ty_runtime *rt = new_rt(2);
  const double x[6] = {1.5, -2.7, 3.0, 1e-300, 123456.789, -0.0};
  const int64_t shape[2] = {2, 3};
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_store_from_buffer(rt, TY_F64, 2, shape, x, &s), TY_OK);
  char path[] = "/tmp/tycho-textio-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  ty_savetxt_opts o;
  ty_savetxt_defaults(&o);
  o.fmt = "%d";
  o.delimiter = ",";
  CHECK_EQ_INT(ty_savetxt(rt, path, s, &o), TY_OK);
  char buf[256] = "";
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  CHECK(strcmp(buf, "1,-2,3\n0,123456,0\n") == 0);
  /* the default %.18e keeps every bit */
  ty_savetxt_defaults(&o);
  CHECK_EQ_INT(ty_savetxt(rt, path, s, &o), TY_OK);
  ty_loadtxt_opts lo;
  ty_loadtxt_defaults(&lo);
  ty_store *back = NULL;
  CHECK_EQ_INT(ty_loadtxt(rt, path, &lo, &back), TY_OK);
  double y[6];
  CHECK_EQ_INT(ty_store_read(rt, back, y, sizeof y), TY_OK);
  CHECK(memcmp(x, y, sizeof x) == 0);
  /* a 3-D store and a bad format are refused */
  o.fmt = "%s";
  CHECK_EQ_INT(ty_savetxt(rt, path, s, &o), TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "unsupported conversion '%s'");
  unlink(path);
  ty_store_release(back);
  ty_store_release(s);
  ty_runtime_destroy(rt);
}

/* The parser's fast path (plain decimals) must give strtod's doubles: 60000
 * numbers of every magnitude written with 1..19 digits in %g, %e and %f
 * forms, plus edge spellings, loaded and compared bit for bit. */
TEST(loadtxt_numbers_are_strtods_bits) {
  ty_runtime *rt = new_rt(1);
  enum { N = 60000 };
  size_t cap = (size_t)N * 64 + 4096, len = 0;
  char *text = malloc(cap);
  double *want = malloc((N + 16) * sizeof(double));
  uint64_t r = 0x1234567;
  int n = 0;
  for (; n < N; n++) {
    r = r * 6364136223846793005ULL + 1442695040888963407ULL;
    double mag = ldexp((double)(r >> 11) * 0x1.0p-53, (int)((r >> 3) % 160) - 80);
    double v = (r & 4) ? -mag : mag;
    int digits = 1 + (int)((r >> 40) % 19);
    const char *form = (r >> 60) % 3 == 0 ? "%.*g\n" : (r >> 60) % 3 == 1 ? "%.*e\n" : "%.*f\n";
    int w = snprintf(text + len, cap - len, form, digits, v);
    want[n] = strtod(text + len, NULL);
    len += (size_t)w;
  }
  static const char *const edge[] = {"-0", "0.", ".5", "+7", "9007199254740993", "9007199254740992",
                                     "1e22", "1e23", "123456789012345678", "1234567890123456789012",
                                     "4.9e-324", "1e-400", "1.7976931348623157e308", "00012.50",
                                     "2.2250738585072011e-308", "0.000000000000000000000000000001"};
  for (size_t k = 0; k < sizeof edge / sizeof *edge; k++, n++) {
    len += (size_t)snprintf(text + len, cap - len, "%s\n", edge[k]);
    want[n] = strtod(edge[k], NULL);
  }
  ty_loadtxt_opts o;
  ty_loadtxt_defaults(&o);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_loadtxt_buffer(rt, text, len, "nums", &o, &s), TY_OK);
  CHECK_EQ_INT(ty_store_size(s), n);
  double *got = malloc((size_t)n * sizeof(double));
  CHECK_EQ_INT(ty_store_read(rt, s, got, (size_t)n * sizeof(double)), TY_OK);
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (memcmp(&got[i], &want[i], sizeof(double)) && bad++ < 5)
      fprintf(stderr, "number %d: got %a, strtod %a\n", i, got[i], want[i]);
  CHECK_EQ_INT(bad, 0);
  ty_store_release(s);
  free(got);
  free(want);
  free(text);
  ty_runtime_destroy(rt);
}

/* 10^5 draws of each distribution under a generator, read back. */
static void draw_all(ty_runtime *rt, ty_random_gen *g, double *out, int64_t n) {
  const ty_random_spec specs[4] = {{.dist = TY_RANDOM_NORMAL, .a = 1, .b = 2},
                                   {.dist = TY_RANDOM_UNIFORM, .a = -1, .b = 1},
                                   {.dist = TY_RANDOM_EXPONENTIAL, .a = 3},
                                   {.dist = TY_RANDOM_INTEGERS, .lo = -7, .hi = 8}};
  for (int k = 0; k < 4; k++) {
    ty_store *s = NULL, *d = NULL;
    const int64_t shape[2] = {n / 100, 100};
    CHECK_EQ_INT(ty_random_draw(rt, k == 3 ? TY_I64 : TY_F64, 2, shape, &specs[k], g, &s), TY_OK);
    CHECK_EQ_INT(ty_cast(rt, s, TY_F64, &d), TY_OK);
    CHECK_EQ_INT(ty_store_read(rt, d, out + k * n, (size_t)n * sizeof(double)), TY_OK);
    ty_store_release(s);
    ty_store_release(d);
  }
}

TEST(random_draw_same_bits_under_any_cpus_and_generator_state) {
  enum { N = 100000 };
  double *a = malloc(4 * N * sizeof(double)), *b = malloc(4 * N * sizeof(double));
  ty_runtime *r1 = new_rt(1), *r3 = new_rt(3);
  ty_random_gen g1 = {77, 0}, g3 = {77, 0};
  draw_all(r1, &g1, a, N);
  draw_all(r3, &g3, b, N);
  CHECK(memcmp(a, b, 4 * N * sizeof(double)) == 0);
  CHECK_EQ_INT(g1.stream, 4);
  /* moments: normal(1, 2), uniform(-1, 1), exponential(3), integers [-7, 8) */
  double m[4] = {0}, v[4] = {0};
  for (int k = 0; k < 4; k++) {
    for (int i = 0; i < N; i++) m[k] += a[k * N + i];
    m[k] /= N;
    for (int i = 0; i < N; i++) v[k] += (a[k * N + i] - m[k]) * (a[k * N + i] - m[k]);
    v[k] /= N;
  }
  CHECK_NEAR(m[0], 1.0, 0.032); /* 5 standard errors */
  CHECK_NEAR(v[0], 4.0, 0.09);
  CHECK_NEAR(m[1], 0.0, 0.0092);
  CHECK_NEAR(v[1], 1.0 / 3, 0.0075);
  CHECK_NEAR(m[2], 3.0, 0.048);
  CHECK_NEAR(v[2], 9.0, 0.36);
  CHECK_NEAR(m[3], 0.0, 0.07);
  CHECK_NEAR(v[3], (15.0 * 15 - 1) / 12, 0.3);
  for (int i = 0; i < N; i++) {
    CHECK(a[N + i] >= -1 && a[N + i] < 1);
    CHECK(a[2 * N + i] >= 0);
    CHECK(a[3 * N + i] >= -7 && a[3 * N + i] <= 7);
  }
  /* the runtime's generator after ty_seed(s) is {s, 0} */
  ty_seed(r1, 77);
  ty_random_gen st = ty_random_state(r1);
  CHECK_EQ_INT(st.seed, 77);
  CHECK_EQ_INT(st.stream, 0);
  draw_all(r1, NULL, b, N);
  CHECK(memcmp(a, b, 4 * N * sizeof(double)) == 0);
  CHECK_EQ_INT(ty_random_state(r1).stream, 4);
  /* bad parameters draw nothing and use no stream */
  ty_random_spec bad = {.dist = TY_RANDOM_NORMAL, .a = 0, .b = -1};
  ty_store *s = NULL;
  const int64_t one = 3;
  ty_random_gen g = {1, 5};
  CHECK_EQ_INT(ty_random_draw(r1, TY_F64, 1, &one, &bad, &g, &s), TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(r1), "standard deviation must be >= 0");
  CHECK_EQ_INT(g.stream, 5);
  ty_random_spec ints = {.dist = TY_RANDOM_INTEGERS, .lo = 0, .hi = 300};
  CHECK_EQ_INT(ty_random_draw(r1, TY_U8, 1, &one, &ints, &g, &s), TY_EINVAL);
  CHECK_STR_CONTAINS(ty_errmsg(r1), "out of range for u8");
  ty_runtime_destroy(r1);
  ty_runtime_destroy(r3);
  free(a);
  free(b);
}

static const check_case cases[] = {
    CASE(loadtxt_buffer_csv_with_header_and_comments),
    CASE(loadtxt_errors_name_the_place),
    CASE(loadtxt_numbers_are_strtods_bits),
    CASE(savetxt_writes_numpys_bytes_and_loads_back),
    CASE(random_draw_same_bits_under_any_cpus_and_generator_state),
};
CHECK_MAIN(cases)
