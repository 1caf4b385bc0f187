/*
 * test_npy.c — .npy load and save: round trips of every dtype and rank, files
 * numpy writes (Fortran order, versions 2.0 and 3.0, dtype spellings), and
 * hostile files (bad magic, truncation, huge shapes, malformed dicts), which
 * must fail with a message and without allocating. Saving is atomic: a
 * failed save leaves the old file and no temporary behind.
 */
#include "check.h"
#include "internal.h"
#include "npy.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/* A fresh directory under /tmp, removed (with its files) by rm_dir. */
static char tmpdir[256];
static const char *new_dir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/tycho-npy-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    exit(1);
  }
  return tmpdir;
}

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
      rm_dir(p);
    else
      unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

/* Entries of dir whose name contains `part`. */
static int count_entries(const char *dir, const char *part) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, part)) n++;
  closedir(d);
  return n;
}

static void write_bytes(const char *path, const void *buf, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, n, f) != n) {
    perror(path);
    exit(1);
  }
  fclose(f);
}

static size_t read_bytes(const char *path, void *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* A .npy file with a hand-written header dict (padded like numpy's) and raw
 * data; version 1, 2 or 3. Returns its size. */
static size_t make_npy(unsigned char *buf, int version, const char *dict, const void *data,
                       size_t nbytes) {
  size_t pre = version == 1 ? 10 : 12;
  size_t dl = strlen(dict);
  size_t hlen = dl + 1;
  size_t pad = 64 - (pre + hlen) % 64;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)version;
  buf[7] = 0;
  uint32_t L = (uint32_t)(hlen + pad);
  for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(L >> (8 * i));
  memcpy(buf + pre, dict, dl);
  memset(buf + pre + dl, ' ', pad);
  buf[pre + hlen + pad - 1] = '\n';
  size_t n = pre + hlen + pad;
  if (nbytes) memcpy(buf + n, data, nbytes);
  return n + nbytes;
}

/* Load `path` and expect failure `want` with a message naming the file and
 * containing `part`; and no store left behind. */
static void expect_load_error(ty_runtime *rt, const char *path, ty_status want, const char *part) {
  ty_stats before, after;
  ty_get_stats(rt, &before);
  ty_store *s = (ty_store *)0x1;
  ty_status st = ty_load_npy(rt, path, &s);
  CHECK_EQ_INT(st, want);
  CHECK(s == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), path);
  CHECK_STR_CONTAINS(ty_errmsg(rt), part);
  ty_get_stats(rt, &after);
  CHECK_EQ_INT(after.stores_live, before.stores_live);
  CHECK_EQ_INT(after.bytes_allocated, before.bytes_allocated);
  CHECK_EQ_INT(after.bytes_reserved, before.bytes_reserved);
}

/* Deterministic element values of every dtype, distinct per index. */
static void fill_values(ty_dtype t, int64_t n, void *buf) {
  for (int64_t i = 0; i < n; i++) {
    switch (t) {
    case TY_F64: ((double *)buf)[i] = (double)i * 1.25 - 3.5 + 1e-3 * (double)(i % 7); break;
    case TY_F32: ((float *)buf)[i] = (float)i * 0.5f - 2.25f; break;
    case TY_I64: ((int64_t *)buf)[i] = (i % 2 ? -1 : 1) * (i * 1000003 + ((int64_t)1 << 40)); break;
    case TY_I32: ((int32_t *)buf)[i] = (int32_t)(i * 7919 - 50000); break;
    case TY_U8: ((uint8_t *)buf)[i] = (uint8_t)(i * 37 + 5); break;
    case TY_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(i % 3 == 1); break;
    case TY_I8: ((int8_t *)buf)[i] = (int8_t)(i * 37 - 100); break;
    case TY_I16: ((int16_t *)buf)[i] = (int16_t)(i * 1237 - 20000); break;
    case TY_U16: ((uint16_t *)buf)[i] = (uint16_t)(i * 4099 + 7); break;
    case TY_U32: ((uint32_t *)buf)[i] = (uint32_t)((uint64_t)i * 2654435761u); break;
    case TY_U64: ((uint64_t *)buf)[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull; break;
    default: break;
    }
  }
}

/* The store holds exactly this dtype, shape and C-order data. */
static void check_store(ty_runtime *rt, ty_store *s, ty_dtype t, int ndim, const int64_t *shape,
                        const void *want) {
  CHECK_EQ_INT(ty_store_dtype(s), t);
  CHECK_EQ_INT(ty_store_ndim(s), ndim);
  int64_t n = 1;
  for (int d = 0; d < ndim && d < ty_store_ndim(s); d++) {
    CHECK_EQ_INT(ty_store_shape(s)[d], shape[d]);
    n *= shape[d];
  }
  CHECK_EQ_INT(ty_store_size(s), n);
  size_t bytes = (size_t)n * ty_dtype_size(t);
  char *got = malloc(bytes + 1);
  CHECK_EQ_INT(ty_store_read(rt, s, got, bytes), TY_OK);
  CHECK(bytes == 0 || memcmp(got, want, bytes) == 0);
  free(got);
}

/* ---- round trips ----------------------------------------------------------------- */

TEST(npy_round_trip_every_dtype_and_rank) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  static const int64_t shapes[][3] = {{0}, {5}, {3, 4}, {2, 3, 4}};
  char path[512];
  for (int t = 0; t < TY_NDTYPES; t++) {
    for (int ndim = 0; ndim <= 3; ndim++) {
      int64_t n = 1;
      for (int d = 0; d < ndim; d++) n *= shapes[ndim][d];
      char *data = malloc((size_t)n * 8);
      fill_values((ty_dtype)t, n, data);
      ty_store *s, *back = NULL;
      CHECK_EQ_INT(ty_store_from_buffer(rt, (ty_dtype)t, ndim, shapes[ndim], data, &s), TY_OK);
      snprintf(path, sizeof path, "%s/%s_%d.npy", dir, ty_dtype_name((ty_dtype)t), ndim);
      CHECK_EQ_INT(ty_save_npy(rt, path, s), TY_OK);
      CHECK_EQ_INT(ty_load_npy(rt, path, &back), TY_OK);
      if (back) check_store(rt, back, (ty_dtype)t, ndim, shapes[ndim], data);
      /* numpy's layout: data starts at a multiple of 64 */
      struct stat sb;
      CHECK(stat(path, &sb) == 0);
      CHECK_EQ_INT((sb.st_size - n * (int64_t)ty_dtype_size((ty_dtype)t)) % 64, 0);
      ty_store_release(s);
      ty_store_release(back);
      free(data);
    }
  }
  CHECK_EQ_INT(count_entries(dir, ".tmp."), 0);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

TEST(npy_round_trip_zero_size_dims) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/empty.npy", dir);
  static const int64_t shape[] = {3, 0, 2};
  ty_store *s, *back = NULL;
  CHECK_EQ_INT(ty_store_create(rt, TY_I32, 3, shape, &s), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, path, s), TY_OK);
  CHECK_EQ_INT(ty_load_npy(rt, path, &back), TY_OK);
  if (back) {
    CHECK_EQ_INT(ty_store_ndim(back), 3);
    CHECK_EQ_INT(ty_store_shape(back)[0], 3);
    CHECK_EQ_INT(ty_store_shape(back)[1], 0);
    CHECK_EQ_INT(ty_store_shape(back)[2], 2);
    CHECK_EQ_INT(ty_store_size(back), 0);
    CHECK_EQ_INT(ty_store_dtype(back), TY_I32);
  }
  ty_store_release(s);
  ty_store_release(back);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* A transposed view is saved in the C order of its logical values. */
TEST(npy_save_view_gathers_c_order) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/t.npy", dir);
  double a[6] = {0, 1, 2, 3, 4, 5}; /* [[0 1 2] [3 4 5]] */
  static const int64_t shape[] = {2, 3};
  ty_store *s, *t, *back = NULL;
  CHECK_EQ_INT(ty_store_from_buffer(rt, TY_F64, 2, shape, a, &s), TY_OK);
  CHECK_EQ_INT(ty_store_transpose(rt, s, 0, 1, &t), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, path, t), TY_OK);
  CHECK_EQ_INT(ty_load_npy(rt, path, &back), TY_OK);
  static const int64_t tshape[] = {3, 2};
  double want[6] = {0, 3, 1, 4, 2, 5};
  if (back) check_store(rt, back, TY_F64, 2, tshape, want);
  ty_store_release(back);
  /* a slice of a row: offset into the storage */
  ty_store *row;
  CHECK_EQ_INT(ty_store_select(rt, s, 0, 1, &row), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, path, row), TY_OK);
  CHECK_EQ_INT(ty_load_npy(rt, path, &back), TY_OK);
  static const int64_t rshape[] = {3};
  if (back) check_store(rt, back, TY_F64, 1, rshape, a + 3);
  ty_store_release(back);
  ty_store_release(row);
  ty_store_release(t);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* The header is byte for byte numpy's (checked against numpy itself in
 * npy_numpy_interop); here its fixed parts. */
TEST(npy_header_matches_numpy_layout) {
  char buf[1024];
  static const int64_t shape[] = {2, 3};
  size_t n = ty__npy_header_write(TY_F64, 2, shape, buf, sizeof buf);
  CHECK_EQ_INT(n, 128);
  CHECK(memcmp(buf, "\x93NUMPY\x01\x00\x76\x00", 10) == 0);
  const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(memcmp(buf + 10, dict, strlen(dict)) == 0);
  CHECK(buf[127] == '\n');
  n = ty__npy_header_write(TY_BOOL, 0, NULL, buf, sizeof buf);
  CHECK_EQ_INT(n, 128);
  dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (), }";
  CHECK(memcmp(buf + 10, dict, strlen(dict)) == 0);
  static const int64_t one[] = {7};
  n = ty__npy_header_write(TY_U8, 1, one, buf, sizeof buf);
  dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }";
  CHECK(memcmp(buf + 10, dict, strlen(dict)) == 0);
  CHECK_EQ_INT(ty__npy_header_write(TY_U8, 1, one, buf, 32), 0); /* too small */
  /* rank 16 with 19-digit dims still fits version 1.0 and the load limit */
  int64_t big[TY_MAX_RANK];
  for (int d = 0; d < TY_MAX_RANK; d++) big[d] = INT64_MAX;
  n = ty__npy_header_write(TY_F64, TY_MAX_RANK, big, buf, sizeof buf);
  CHECK(n > 0 && n < 1024 && buf[6] == 1);
}

/* ---- files written by hand (what numpy may produce) -------------------------------- */

TEST(npy_load_fortran_order) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  unsigned char buf[4096];
  /* logical [[0 1 2] [3 4 5]] stored column by column */
  double f[6] = {0, 3, 1, 4, 2, 5};
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f,
                      sizeof f);
  snprintf(path, sizeof path, "%s/f.npy", dir);
  write_bytes(path, buf, n);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  double want[6] = {0, 1, 2, 3, 4, 5};
  static const int64_t shape[] = {2, 3};
  if (s) check_store(rt, s, TY_F64, 2, shape, want);
  ty_store_release(s);

  /* rank 3, i32: element (i,j,k) = 100i + 10j + k at Fortran offset i + 2j + 6k */
  int32_t g[2 * 3 * 4], gw[2 * 3 * 4];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        g[i + 2 * j + 6 * k] = 100 * i + 10 * j + k;
        gw[(i * 3 + j) * 4 + k] = 100 * i + 10 * j + k;
      }
  n = make_npy(buf, 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }", g,
               sizeof g);
  write_bytes(path, buf, n);
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  static const int64_t shape3[] = {2, 3, 4};
  if (s) check_store(rt, s, TY_I32, 3, shape3, gw);
  ty_store_release(s);

  /* 1-D and 0-d Fortran files are the same bytes as C order */
  uint8_t u[3] = {7, 8, 9};
  n = make_npy(buf, 1, "{'descr': '|u1', 'fortran_order': True, 'shape': (3,), }", u, 3);
  write_bytes(path, buf, n);
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  static const int64_t shape1[] = {3};
  if (s) check_store(rt, s, TY_U8, 1, shape1, u);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* Fortran-order data is read through a 4 MiB buffer and scattered into the
 * store chunk by chunk: a file larger than the buffer, whose chunk ends in
 * the middle of a column, and buffers scattered 1, 5, 7 or 24 bytes at a
 * time (ty__npy_load_buffer) load exactly as one pass would. */
TEST(npy_load_fortran_order_in_chunks) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/big.npy", dir);
  /* 513 x 1031 f64 = 4.03 MiB: the 4 MiB chunk ends 30 elements into a column */
  enum { R = 513, C = 1031 };
  double *f = malloc(sizeof(double) * R * C), *want = malloc(sizeof(double) * R * C);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      f[i + (size_t)R * j] = i * 10000.0 + j;
      want[(size_t)i * C + j] = i * 10000.0 + j;
    }
  unsigned char *buf = malloc(128 + sizeof(double) * R * C);
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (513, 1031), }",
                      f, sizeof(double) * R * C);
  write_bytes(path, buf, n);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  static const int64_t shape[] = {R, C};
  if (s) check_store(rt, s, TY_F64, 2, shape, want);
  ty_store_release(s);
  free(f);
  free(want);
  free(buf);

  /* rank 3 i32 and rank 2 bools (any non-zero byte is true), in small chunks */
  int32_t g[2 * 3 * 4], gw[2 * 3 * 4];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        g[i + 2 * j + 6 * k] = 100 * i + 10 * j + k;
        gw[(i * 3 + j) * 4 + k] = 100 * i + 10 * j + k;
      }
  unsigned char small[512], bools[512];
  size_t ng = make_npy(small, 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }",
                       g, sizeof g);
  uint8_t b[6] = {0, 7, 0, 1, 255, 0}, bw[6] = {0, 1, 1, 1, 0, 0}; /* (3, 2) by columns */
  size_t nb = make_npy(bools, 1, "{'descr': '|b1', 'fortran_order': True, 'shape': (3, 2), }", b,
                       sizeof b);
  static const int64_t shape3[] = {2, 3, 4}, shapeb[] = {3, 2};
  static const size_t chunks[] = {1, 5, 7, 24, 0};
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
    CHECK_EQ_INT(ty__npy_load_buffer(rt, small, ng, "g.npy", chunks[c], &s), TY_OK);
    if (s) check_store(rt, s, TY_I32, 3, shape3, gw);
    ty_store_release(s);
    CHECK_EQ_INT(ty__npy_load_buffer(rt, bools, nb, "b.npy", chunks[c], &s), TY_OK);
    if (s) check_store(rt, s, TY_BOOL, 2, shapeb, bw);
    ty_store_release(s);
  }
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* The loader on a buffer (tests and tests/fuzz) is the file loader: same
 * checks, same messages with the name given for the path. */
TEST(npy_load_buffer_names_it_in_errors) {
  ty_runtime *rt = new_rt();
  unsigned char buf[512];
  double d[3] = {1, 2, 3};
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d,
                      sizeof d);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty__npy_load_buffer(rt, buf, n, "mem.npy", 0, &s), TY_OK);
  static const int64_t shape[] = {3};
  if (s) check_store(rt, s, TY_F64, 1, shape, d);
  ty_store_release(s);
  s = (ty_store *)0x1;
  CHECK_EQ_INT(ty__npy_load_buffer(rt, buf, n - 1, "mem.npy", 0, &s), TY_EIO);
  CHECK(s == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt),
                     "ty_load_npy: 'mem.npy': truncated: shape (3,) of <f8 needs 24");
  CHECK_EQ_INT(ty__npy_load_buffer(rt, buf, 5, NULL, 0, &s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "'<buffer>'");
  CHECK_EQ_INT(ty__npy_load_buffer(rt, NULL, 0, "empty", 0, &s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "0 bytes is too short");
  CHECK_EQ_INT(ty__npy_load_buffer(rt, buf, n, "x", 0, NULL), TY_EINVAL);
  ty_runtime_destroy(rt);
}

/* A file that holds all the data it claims can still be larger than the
 * memory budget (--sysmem): the loader fails before allocating the store,
 * naming the file, its shape and the budget. The file here is sparse: 1 GiB
 * of data that costs no disk. */
TEST(npy_load_over_budget_fails_before_allocating) {
  ty_config cfg;
  ty_config_init(&cfg, NULL, 0);
  cfg.sysmem = 1 << 20;
  ty_runtime *rt = NULL;
  CHECK_EQ_INT(ty_runtime_create(&cfg, &rt), TY_OK);
  if (!rt) return;
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/sparse.npy", dir);
  unsigned char buf[512];
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (1024, 131072), }",
                      NULL, 0);
  write_bytes(path, buf, n);
  CHECK(truncate(path, (off_t)n + ((off_t)1 << 30)) == 0);
  expect_load_error(rt, path, TY_ENOMEM,
                    "out of memory: a store of shape (1024, 131072) f64 needs 1.0 GiB; "
                    "the host memory budget is 1.0 MiB");
  /* within the budget the same loader succeeds */
  n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", NULL, 0);
  write_bytes(path, buf, n);
  CHECK(truncate(path, (off_t)n + 16) == 0);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

TEST(npy_load_versions_2_and_3) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  unsigned char buf[4096];
  int64_t v[4] = {1, -2, 3, -4};
  static const int64_t shape[] = {2, 2};
  for (int ver = 2; ver <= 3; ver++) {
    size_t n = make_npy(buf, ver, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }",
                        v, sizeof v);
    snprintf(path, sizeof path, "%s/v%d.npy", dir, ver);
    write_bytes(path, buf, n);
    ty_store *s = NULL;
    CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
    if (s) check_store(rt, s, TY_I64, 2, shape, v);
    ty_store_release(s);
  }
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* Spellings of the same dtypes: byte order '<' '=' '|' or none, keys in any
 * order, double quotes, Python 2 longs, no trailing comma, extra spaces. */
TEST(npy_load_dtype_spellings_and_dict_syntax) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/x.npy", dir);
  unsigned char buf[4096];
  static const struct {
    const char *dict;
    ty_dtype t;
  } cases[] = {
      {"{'descr': '=f8', 'fortran_order': False, 'shape': (2,), }", TY_F64},
      {"{'descr': 'f8', 'fortran_order': False, 'shape': (2,), }", TY_F64},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", TY_F32},
      {"{'descr': '=i4', 'fortran_order': False, 'shape': (2,), }", TY_I32},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }", TY_I64},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2,), }", TY_U8},
      {"{'descr': '=u1', 'fortran_order': False, 'shape': (2,), }", TY_U8},
      {"{'descr': 'u1', 'fortran_order': False, 'shape': (2,), }", TY_U8},
      {"{'descr': '<b1', 'fortran_order': False, 'shape': (2,), }", TY_BOOL},
      {"{'descr': '=b1', 'fortran_order': False, 'shape': (2,), }", TY_BOOL},
      {"{'shape': (2,), 'fortran_order': False, 'descr': '|b1'}", TY_BOOL},
      {"{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": ( 2 , ) }", TY_F64},
      {"  {'descr':'<i4','fortran_order':False,'shape':(2,)}", TY_I32},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char data[16];
    fill_values(cases[c].t, 2, data);
    size_t n = make_npy(buf, 1, cases[c].dict, data, 2 * ty_dtype_size(cases[c].t));
    write_bytes(path, buf, n);
    ty_store *s = NULL;
    ty_status st = ty_load_npy(rt, path, &s);
    if (st) fprintf(stderr, "case %zu: %s\n", c, ty_errmsg(rt));
    CHECK_EQ_INT(st, TY_OK);
    static const int64_t shape[] = {2};
    if (s) check_store(rt, s, cases[c].t, 1, shape, data);
    ty_store_release(s);
  }
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* A bool file may hold any byte; tycho's bools are 0 or 1. */
TEST(npy_load_normalises_bools) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/b.npy", dir);
  unsigned char buf[4096];
  uint8_t raw[4] = {0, 1, 2, 255};
  size_t n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", raw, 4);
  write_bytes(path, buf, n);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  uint8_t want[4] = {0, 1, 1, 1};
  static const int64_t shape[] = {4};
  if (s) check_store(rt, s, TY_BOOL, 1, shape, want);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* ---- hostile and broken files ------------------------------------------------------ */

TEST(npy_load_missing_file_and_directory) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/nope.npy", dir);
  expect_load_error(rt, path, TY_ENOTFOUND, "No such file or directory");
  expect_load_error(rt, dir, TY_EIO, "is a directory");
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, "", &s), TY_EINVAL);
  CHECK_EQ_INT(ty_load_npy(rt, NULL, &s), TY_EINVAL);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

TEST(npy_load_bad_magic) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/bad.npy", dir);
  write_bytes(path, "PK\x03\x04 this is a zip", 19);
  expect_load_error(rt, path, TY_EIO, "not a .npy file");
  write_bytes(path, "", 0);
  expect_load_error(rt, path, TY_EIO, "truncated");
  write_bytes(path, "\x93NUM", 4);
  expect_load_error(rt, path, TY_EIO, "truncated");
  write_bytes(path, "\x93NUMPY\x04\x00\x10\x00", 10);
  expect_load_error(rt, path, TY_EIO, "version 4.0");
  write_bytes(path, "\x93NUMPY\x01\x01\x10\x00", 10);
  expect_load_error(rt, path, TY_EIO, "version 1.1");
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

TEST(npy_load_truncated) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/trunc.npy", dir);
  unsigned char buf[4096];
  double d[10] = {0};
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (10,), }", d,
                      sizeof d);
  write_bytes(path, buf, n - 1); /* one byte of data short */
  expect_load_error(rt, path, TY_EIO, "truncated: shape (10,) of <f8 needs 80 bytes of data, the file has 79");
  write_bytes(path, buf, 40); /* cut inside the header */
  expect_load_error(rt, path, TY_EIO, "truncated: the header needs 128 bytes");
  write_bytes(path, buf, 9); /* cut inside the preamble */
  expect_load_error(rt, path, TY_EIO, "truncated");
  /* extra bytes after the data are ignored, as numpy does */
  write_bytes(path, buf, n);
  FILE *f = fopen(path, "ab");
  fputs("trailing", f);
  fclose(f);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  CHECK(s && ty_store_size(s) == 10);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* A header may claim anything; tycho must check it against the file before
 * allocating (expect_load_error checks that nothing was allocated). */
TEST(npy_load_huge_shape_does_not_allocate) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/huge.npy", dir);
  unsigned char buf[4096];
  double d[4] = {0};
  size_t n = make_npy(buf, 1,
                      "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000), }",
                      d, sizeof d);
  write_bytes(path, buf, n);
  expect_load_error(rt, path, TY_EIO, "needs 8000000000000000 bytes of data, the file has 32");
  /* the element count overflows int64 */
  n = make_npy(buf, 1,
               "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", d,
               sizeof d);
  write_bytes(path, buf, n);
  expect_load_error(rt, path, TY_EIO, "overflows");
  /* a zero dim does not excuse an overflowing product of the others */
  n = make_npy(buf, 1,
               "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }",
               d, 0);
  write_bytes(path, buf, n);
  expect_load_error(rt, path, TY_EIO, "overflows");
  /* a dimension beyond int64 */
  n = make_npy(buf, 1,
               "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", d,
               0);
  write_bytes(path, buf, n);
  expect_load_error(rt, path, TY_EIO, "overflows 64 bits");
  /* a version 2.0 header claiming 4 GiB of header */
  memcpy(buf, "\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
  write_bytes(path, buf, 200);
  expect_load_error(rt, path, TY_EIO, "over tycho's limit");
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

TEST(npy_load_unsupported_dtypes) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/dt.npy", dir);
  unsigned char buf[4096];
  char zeros[64] = {0};
  static const struct {
    const char *dict, *part;
  } cases[] = {
      {"{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", "'>f8' has foreign byte order"},
      {"{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }", "'<c16' is not supported"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "'|O' is not supported"},
      {"{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", "'<f2' is not supported"},
      {"{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", "'<U3' is not supported"},
      {"{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", "structured"},
      {"{'descr': '\xc3\xa9', 'fortran_order': False, 'shape': (2,), }", "'\\xc3\\xa9' is not supported"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t n = make_npy(buf, 1, cases[c].dict, zeros, 32);
    write_bytes(path, buf, n);
    expect_load_error(rt, path, TY_EDTYPE, cases[c].part);
  }
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

TEST(npy_load_malformed_headers) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/m.npy", dir);
  unsigned char buf[4096];
  char zeros[64] = {0};
  static const struct {
    const char *dict, *part;
    ty_status st;
  } cases[] = {
      {"", "expected '{'", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False}", "lacks 'shape'", TY_EIO},
      {"{'descr': '<f8', 'shape': (2,)}", "lacks 'fortran_order'", TY_EIO},
      {"{'fortran_order': False, 'shape': (2,)}", "lacks 'descr'", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x'", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}", "not True or False", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': Truth, 'shape': (2,)}", "not True or False", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2)}", "not a tuple", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [2]}", "not a tuple", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}", "negative", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,,)}", "expected a dimension", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3}", "expected ',' or ')'", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'", TY_EIO},
      {"{'descr': '<f8' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'", TY_EIO},
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", "duplicate key", TY_EIO},
      {"{'descr: '<f8', 'fortran_order': False, 'shape': (2,)}", "expected ':'", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x", "unexpected text", TY_EIO},
      {"{'descr': '<f8\\n', 'fortran_order': False, 'shape': (2,)}", "unsupported character", TY_EIO},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'", TY_EIO},
      {"{'descr': '<f8', fortran_order: False, 'shape': (2,)}", "expected a quoted string", TY_EIO},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': "
       "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}", "more than 16 dimensions", TY_ELIMIT},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t n = make_npy(buf, 1, cases[c].dict, zeros, 16);
    write_bytes(path, buf, n);
    expect_load_error(rt, path, cases[c].st, cases[c].part);
  }
  /* a NUL byte inside the header */
  size_t n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", zeros, 16);
  buf[20] = '\0';
  write_bytes(path, buf, n);
  expect_load_error(rt, path, TY_EIO, "malformed header");
  /* rank 16 is fine */
  n = make_npy(buf, 1,
               "{'descr': '<f8', 'fortran_order': False, 'shape': "
               "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2)}",
               zeros, 16);
  write_bytes(path, buf, n);
  ty_store *s = NULL;
  CHECK_EQ_INT(ty_load_npy(rt, path, &s), TY_OK);
  CHECK(s && ty_store_ndim(s) == 16 && ty_store_size(s) == 2);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* A small deterministic fuzz of the pure parser: every prefix of a valid
 * file and thousands of byte mutations must parse or fail cleanly (the
 * sanitizer build checks for out-of-bounds reads), and a header that parses
 * must describe data inside the buffer. */
TEST(npy_parse_survives_mutations) {
  unsigned char good[512];
  int32_t v[6] = {1, 2, 3, 4, 5, 6};
  size_t n = make_npy(good, 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", v,
                      sizeof v);
  char err[256];
  ty_npy_header h;
  for (size_t len = 0; len <= n; len++) {
    unsigned char *b = malloc(len ? len : 1);
    memcpy(b, good, len);
    ty_status st = ty__npy_parse(b, len, len, &h, err, sizeof err);
    CHECK(st == (len == n ? TY_OK : TY_EIO));
    free(b);
  }
  uint64_t rng = 0x9e3779b97f4a7c15u;
  int parsed = 0;
  for (int it = 0; it < 20000; it++) {
    size_t len = n;
    unsigned char *b = malloc(n);
    memcpy(b, good, n);
    int flips = 1 + it % 4;
    for (int k = 0; k < flips; k++) {
      rng = rng * 6364136223846793005u + 1442695040888963407u;
      size_t pos = (size_t)(rng >> 33) % n;
      static const char alphabet[] = "(),:'\" 0123456789{}TrueFalse<>|=fiub\n\x93\xff";
      b[pos] = (it & 1) ? (unsigned char)(rng >> 17) : (unsigned char)alphabet[(rng >> 20) % (sizeof alphabet - 1)];
    }
    if (it % 5 == 0) len = (size_t)(rng >> 40) % (n + 1);
    ty_status st = ty__npy_parse(b, len, len, &h, err, sizeof err);
    if (st == TY_OK) {
      parsed++;
      CHECK(h.ndim >= 0 && h.ndim <= TY_MAX_RANK);
      CHECK(h.data_offset + h.data_bytes <= len);
      void *dst = malloc(h.data_bytes + 1);
      ty__npy_decode(&h, b + h.data_offset, dst);
      free(dst);
    } else {
      CHECK(st == TY_EIO || st == TY_EDTYPE || st == TY_ELIMIT);
      CHECK(strlen(err) > 0);
    }
    free(b);
  }
  CHECK(parsed > 0);
}

/* ---- atomic save ---------------------------------------------------------------------- */

TEST(npy_save_into_missing_directory_fails) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/no/such/dir/x.npy", dir);
  ty_store *s;
  CHECK_EQ_INT(ty_scalar_f64(rt, TY_F64, 1.5, &s), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, path, s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), path);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "No such file or directory");
  CHECK_EQ_INT(count_entries(dir, ""), 2); /* . and .. */
  CHECK_EQ_INT(ty_save_npy(rt, "", s), TY_EINVAL);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* Saving over a directory is refused before anything is written (even as
 * root); the directory and its content survive and no temporary is made. */
TEST(npy_save_over_directory_leaves_it_intact) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512], inner[600];
  snprintf(path, sizeof path, "%s/target.npy", dir);
  CHECK(mkdir(path, 0755) == 0);
  snprintf(inner, sizeof inner, "%s/keep", path);
  write_bytes(inner, "x", 1);
  ty_store *s;
  CHECK_EQ_INT(ty_scalar_i64(rt, TY_I64, 42, &s), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, path, s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), path);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "it is a directory, not a regular file");
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
  CHECK(access(inner, F_OK) == 0);
  CHECK_EQ_INT(count_entries(dir, ".tmp."), 0);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* A write that fails half way (the file size limit, which binds root too)
 * leaves the previous file byte for byte and no temporary. */
TEST(npy_save_failure_keeps_old_file) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/keep.npy", dir);
  double small[3] = {1, 2, 3};
  static const int64_t s3[] = {3};
  ty_store *a, *big;
  CHECK_EQ_INT(ty_store_from_buffer(rt, TY_F64, 1, s3, small, &a), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, path, a), TY_OK);
  unsigned char before[4096], after[4096];
  size_t nb = read_bytes(path, before, sizeof before);
  CHECK_EQ_INT(nb, 128 + 24);

  static const int64_t sbig[] = {100000};
  double *data = calloc(100000, sizeof *data);
  CHECK_EQ_INT(ty_store_from_buffer(rt, TY_F64, 1, sbig, data, &big), TY_OK);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 4096;
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  ty_status st = ty_save_npy(rt, path, big);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  CHECK_EQ_INT(st, TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "File too large");
  CHECK_EQ_INT(read_bytes(path, after, sizeof after), nb);
  CHECK(memcmp(before, after, nb) == 0);
  CHECK_EQ_INT(count_entries(dir, ".tmp."), 0);
  CHECK_EQ_INT(count_entries(dir, ""), 3); /* . .. keep.npy */

  /* and a save that succeeds replaces it */
  CHECK_EQ_INT(ty_save_npy(rt, path, big), TY_OK);
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && sb.st_size == 128 + 800000);
  /* with the mode a plain create gives (mkstemp's 0600 is widened) */
  mode_t um = umask(022);
  umask(um);
  CHECK_EQ_INT(sb.st_mode & 0777, 0666 & ~um);
  free(data);
  ty_store_release(a);
  ty_store_release(big);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* The kind of what `path` names, without following a link. */
static mode_t kind_of(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0 ? (sb.st_mode & S_IFMT) : 0;
}

/* Issue 21, item 6: the atomic rename must not replace a device, a FIFO or a
 * socket with a regular file, and must write through a symbolic link. Every
 * node is private, under a fresh temporary directory: no test touches a
 * system path. */
TEST(npy_save_refuses_non_regular_targets) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  ty_store *s;
  CHECK_EQ_INT(ty_scalar_i64(rt, TY_I64, 7, &s), TY_OK);
  char path[512];

  snprintf(path, sizeof path, "%s/fifo", dir);
  CHECK(mkfifo(path, 0600) == 0);
  CHECK_EQ_INT(ty_save_npy(rt, path, s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), path);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "it is a FIFO, not a regular file");
  CHECK_EQ_INT(kind_of(path), S_IFIFO);

  /* a character device with /dev/null's numbers, made here (needs root) */
  snprintf(path, sizeof path, "%s/null", dir);
  if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0) {
    CHECK_EQ_INT(ty_save_npy(rt, path, s), TY_EIO);
    CHECK_STR_CONTAINS(ty_errmsg(rt), "it is a character device, not a regular file");
    CHECK_EQ_INT(kind_of(path), S_IFCHR);
  } else {
    printf("skip: the character device case (mknod: %s; it needs root)\n", strerror(errno));
  }

  /* a link to the FIFO is refused too, naming both */
  char link[600];
  snprintf(link, sizeof link, "%s/to-fifo", dir);
  CHECK(symlink("fifo", link) == 0);
  CHECK_EQ_INT(ty_save_npy(rt, link, s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "which is a FIFO, not a regular file");
  CHECK_EQ_INT(kind_of(link), S_IFLNK);
  snprintf(path, sizeof path, "%s/fifo", dir);
  CHECK_EQ_INT(kind_of(path), S_IFIFO);

  /* a loop of links */
  char a[600], b[600];
  snprintf(a, sizeof a, "%s/loop-a", dir);
  snprintf(b, sizeof b, "%s/loop-b", dir);
  CHECK(symlink("loop-b", a) == 0 && symlink("loop-a", b) == 0);
  CHECK_EQ_INT(ty_save_npy(rt, a, s), TY_EIO);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "symbolic links");
  CHECK_EQ_INT(count_entries(dir, ".tmp."), 0);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* A link (relative, absolute, through a chain, into another directory,
 * dangling) stays a link, and the file it names gets the new data, as numpy's
 * save writes through it; the replaced file keeps its mode. */
TEST(npy_save_writes_through_symlinks) {
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char sub[512], data[600], rel[600], absl[600], chain[600], dang[600], dtarget[600];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  CHECK(mkdir(sub, 0755) == 0);
  snprintf(data, sizeof data, "%s/data.npy", sub);
  ty_store *s1, *s2;
  CHECK_EQ_INT(ty_scalar_i64(rt, TY_I64, 1, &s1), TY_OK);
  CHECK_EQ_INT(ty_scalar_i64(rt, TY_I64, 2, &s2), TY_OK);
  CHECK_EQ_INT(ty_save_npy(rt, data, s1), TY_OK);
  CHECK(chmod(data, 0640) == 0);

  snprintf(rel, sizeof rel, "%s/rel", dir);
  CHECK(symlink("sub/data.npy", rel) == 0);
  snprintf(absl, sizeof absl, "%s/abs", dir);
  CHECK(symlink(data, absl) == 0);
  snprintf(chain, sizeof chain, "%s/chain", dir);
  CHECK(symlink("rel", chain) == 0);
  const char *links[] = {rel, absl, chain};
  for (int i = 0; i < 3; i++) {
    ty_store *x = i % 2 ? s1 : s2, *back = NULL;
    CHECK_EQ_INT(ty_save_npy(rt, links[i], x), TY_OK);
    CHECK_EQ_INT(kind_of(links[i]), S_IFLNK);
    CHECK_EQ_INT(kind_of(data), S_IFREG);
    CHECK_EQ_INT(ty_load_npy(rt, data, &back), TY_OK);
    ty_value v = {0}, w = {0};
    if (back) CHECK_EQ_INT(ty_item(rt, back, &v), TY_OK);
    CHECK_EQ_INT(ty_item(rt, x, &w), TY_OK);
    CHECK_EQ_INT(v.i, w.i);
    ty_store_release(back);
    struct stat sb;
    CHECK(stat(data, &sb) == 0 && (sb.st_mode & 0777) == 0640);
  }
  CHECK_EQ_INT(count_entries(dir, ".tmp."), 0);
  CHECK_EQ_INT(count_entries(sub, ".tmp."), 0);

  /* a dangling link: the file is created where it points */
  snprintf(dang, sizeof dang, "%s/dangling", dir);
  snprintf(dtarget, sizeof dtarget, "%s/new.npy", sub);
  CHECK(symlink("sub/new.npy", dang) == 0);
  CHECK_EQ_INT(ty_save_npy(rt, dang, s2), TY_OK);
  CHECK_EQ_INT(kind_of(dang), S_IFLNK);
  CHECK_EQ_INT(kind_of(dtarget), S_IFREG);
  ty_store_release(s1);
  ty_store_release(s2);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

/* ---- numpy itself ------------------------------------------------------------------------ */

#define PYTHON "/usr/bin/python3"

static bool have_numpy(void) {
  if (access(PYTHON, X_OK) != 0) return false;
  return system(PYTHON " -c 'import numpy' >/dev/null 2>&1") == 0;
}

/* numpy writes files of every dtype, order and version; tycho reads them
 * equal to values computed here. Then tycho writes files numpy reads equal,
 * and tycho's bytes are numpy's np.save bytes. */
TEST(npy_numpy_interop) {
  if (!have_numpy()) {
    printf("skip: %s with numpy is not available\n", PYTHON);
    CHECK(access(PYTHON, X_OK) != 0 || system(PYTHON " -c 'import numpy' >/dev/null 2>&1") != 0);
    return;
  }
  ty_runtime *rt = new_rt();
  const char *dir = new_dir();
  char cmd[4096];
  /* element i of array k: see fill_values (same formulas in numpy) */
  snprintf(cmd, sizeof cmd,
           PYTHON " -c '\n"
           "import numpy as np, sys\n"
           "from numpy.lib import format as F\n"
           "d = sys.argv[1]\n"
           "def vals(dt, n):\n"
           "  i = np.arange(n, dtype=np.int64)\n"
           "  if dt == \"f8\": return i * 1.25 - 3.5 + 1e-3 * (i %% 7)\n"
           "  if dt == \"f4\": return (i.astype(np.float32) * np.float32(0.5) - np.float32(2.25))\n"
           "  if dt == \"i8\": return np.where(i %% 2 == 1, -1, 1) * (i * 1000003 + (1 << 40))\n"
           "  if dt == \"i4\": return (i * 7919 - 50000)\n"
           "  if dt == \"u1\": return (i * 37 + 5) %% 256\n"
           "  return i %% 3 == 1\n"
           "for dt in [\"f8\", \"f4\", \"i8\", \"i4\", \"u1\", \"b1\"]:\n"
           "  for shape in [(), (5,), (3, 4), (2, 3, 4), (3, 0, 2)]:\n"
           "    n = int(np.prod(shape))\n"
           "    a = vals(dt, n).astype(\"?\" if dt == \"b1\" else dt).reshape(shape)\n"
           "    tag = dt + \"_\" + \"x\".join(map(str, shape))\n"
           "    np.save(d + \"/np_\" + tag + \".npy\", a)\n"
           "    np.save(d + \"/npf_\" + tag + \".npy\", np.asfortranarray(a))\n"
           "    for v in [(2, 0), (3, 0)]:\n"
           "      with open(d + \"/npv%%d_\" %% v[0] + tag + \".npy\", \"wb\") as f:\n"
           "        F.write_array(f, a, version=v)\n"
           "' %s",
           dir);
  CHECK_EQ_INT(system(cmd), 0);

  static const char *codes[] = {"f8", "f4", "i8", "i4", "u1", "b1"};
  static const ty_dtype types[] = {TY_F64, TY_F32, TY_I64, TY_I32, TY_U8, TY_BOOL};
  static const struct {
    int ndim;
    int64_t shape[3];
    const char *tag;
  } shapes[] = {{0, {0}, ""}, {1, {5}, "5"}, {2, {3, 4}, "3x4"}, {3, {2, 3, 4}, "2x3x4"},
                {3, {3, 0, 2}, "3x0x2"}};
  static const char *prefixes[] = {"np_", "npf_", "npv2_", "npv3_"};
  char path[600];
  int loaded = 0;
  for (int t = 0; t < 6; t++)
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
      int64_t n = 1;
      for (int d = 0; d < shapes[k].ndim; d++) n *= shapes[k].shape[d];
      char want[256];
      fill_values(types[t], n, want);
      for (int p = 0; p < 4; p++) {
        snprintf(path, sizeof path, "%s/%s%s_%s.npy", dir, prefixes[p], codes[t], shapes[k].tag);
        ty_store *s = NULL;
        ty_status st = ty_load_npy(rt, path, &s);
        if (st) fprintf(stderr, "%s: %s\n", path, ty_errmsg(rt));
        CHECK_EQ_INT(st, TY_OK);
        if (s) {
          /* np.asfortranarray makes a 0-d array 1-D */
          static const int64_t one[] = {1};
          if (p == 1 && shapes[k].ndim == 0)
            check_store(rt, s, types[t], 1, one, want);
          else
            check_store(rt, s, types[t], shapes[k].ndim, shapes[k].shape, want);
          loaded++;
          /* tycho writes it back; the file is numpy's np.save file byte for byte */
          if (p == 0) {
            char mine[700];
            snprintf(mine, sizeof mine, "%s/ty_%s_%s.npy", dir, codes[t], shapes[k].tag);
            CHECK_EQ_INT(ty_save_npy(rt, mine, s), TY_OK);
            static unsigned char a[8192], b[8192];
            size_t na = read_bytes(path, a, sizeof a), nb = read_bytes(mine, b, sizeof b);
            CHECK_EQ_INT(na, nb);
            CHECK(na == nb && memcmp(a, b, na) == 0);
          }
          ty_store_release(s);
        }
      }
    }
  CHECK_EQ_INT(loaded, 6 * 5 * 4);

  /* numpy reads what tycho wrote (a transposed view, gathered) */
  double m[6] = {0.5, -1, 2, 1e300, -0.0, 3.25};
  static const int64_t ms[] = {2, 3};
  ty_store *s, *t;
  CHECK_EQ_INT(ty_store_from_buffer(rt, TY_F64, 2, ms, m, &s), TY_OK);
  CHECK_EQ_INT(ty_store_transpose(rt, s, 0, 1, &t), TY_OK);
  snprintf(path, sizeof path, "%s/ty_t.npy", dir);
  CHECK_EQ_INT(ty_save_npy(rt, path, t), TY_OK);
  snprintf(cmd, sizeof cmd,
           PYTHON " -c 'import numpy as np, sys; a = np.load(sys.argv[1]); "
           "w = np.array([[0.5, -1, 2], [1e300, -0.0, 3.25]]).T; "
           "sys.exit(0 if a.dtype == np.float64 and a.shape == (3, 2) and (a == w).all() else 1)' %s",
           path);
  CHECK_EQ_INT(system(cmd), 0);
  ty_store_release(t);
  ty_store_release(s);
  rm_dir(dir);
  ty_runtime_destroy(rt);
}

static const check_case cases[] = {
    CASE(npy_round_trip_every_dtype_and_rank),
    CASE(npy_round_trip_zero_size_dims),
    CASE(npy_save_view_gathers_c_order),
    CASE(npy_header_matches_numpy_layout),
    CASE(npy_load_fortran_order),
    CASE(npy_load_fortran_order_in_chunks),
    CASE(npy_load_buffer_names_it_in_errors),
    CASE(npy_load_over_budget_fails_before_allocating),
    CASE(npy_load_versions_2_and_3),
    CASE(npy_load_dtype_spellings_and_dict_syntax),
    CASE(npy_load_normalises_bools),
    CASE(npy_load_missing_file_and_directory),
    CASE(npy_load_bad_magic),
    CASE(npy_load_truncated),
    CASE(npy_load_huge_shape_does_not_allocate),
    CASE(npy_load_unsupported_dtypes),
    CASE(npy_load_malformed_headers),
    CASE(npy_parse_survives_mutations),
    CASE(npy_save_into_missing_directory_fails),
    CASE(npy_save_over_directory_leaves_it_intact),
    CASE(npy_save_failure_keeps_old_file),
    CASE(npy_save_refuses_non_regular_targets),
    CASE(npy_save_writes_through_symlinks),
    CASE(npy_numpy_interop),
};
CHECK_MAIN(cases)
