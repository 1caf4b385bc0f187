/*
 * test_determinism.c — float sums, products, means and matmul give the same
 * bits whatever the piece count: 1 to 8 processors, every mode
 * (auto, all, single, task), overdecompose, fusion on and off. Results are
 * compared with memcmp against the first configuration, on awkward sizes
 * (primes, around a leaf of 128 and a tile of 65536 elements, 1e6 + 7),
 * values spread over many magnitudes so that any change of order shows in
 * the last bits. The scheme itself (kernels_reduce.c) is pinned against a
 * plain C rendering of its definition.
 */
#include "check.h"
#include "req.h"
#include "internal.h"
#include "kernels.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <math.h>
#include <stdint.h>


/* ---- configurations ------------------------------------------------------------------ */

typedef struct conf {
  int cpus;
  ty_mode mode;
  int overdecompose;
  bool fuse;
} conf;

static int nconfs;
static conf confs[64];

/* 1..8 processors under auto; 3 and 8 under all, single, task; fusion off;
 * overdecompose 3. The first is the reference. */
static void make_confs(void) {
  nconfs = 0;
  for (int c = 1; c <= 8; c++) confs[nconfs++] = (conf){c, TY_MODE_AUTO, 1, true};
  const ty_mode modes[] = {TY_MODE_ALL, TY_MODE_SINGLE, TY_MODE_TASK};
  for (int m = 0; m < 3; m++) {
    confs[nconfs++] = (conf){3, modes[m], 1, true};
    confs[nconfs++] = (conf){8, modes[m], 1, true};
  }
  confs[nconfs++] = (conf){3, TY_MODE_AUTO, 1, false};
  confs[nconfs++] = (conf){8, TY_MODE_ALL, 1, false};
  confs[nconfs++] = (conf){5, TY_MODE_ALL, 3, true};
}

static ty_runtime *make_rt(const conf *c) {
  ty_config cfg = {.cpus = c->cpus};
  cfg.policy.set = TY_POL_MODE | TY_POL_OVERDECOMPOSE | TY_POL_FUSE;
  cfg.policy.mode = c->mode;
  cfg.policy.overdecompose = c->overdecompose;
  cfg.policy.fuse = c->fuse;
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

static void conf_name(const conf *c, char *buf, size_t cap) {
  snprintf(buf, cap, "--cpus %d --parallel %s --overdecompose %d --fuse %s", c->cpus,
           ty_mode_name(c->mode), c->overdecompose, c->fuse ? "on" : "off");
}

/* ---- data and helpers ----------------------------------------------------------------- */

/* Values over ~12 orders of magnitude, both signs: sums in another order
 * differ in the last bits almost surely. */
static void fill_spread(double *v, int64_t n, uint64_t seed) {
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(x >> 11) * 0x1.0p-53;
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double e = (double)(x >> 11) * 0x1.0p-53;
    v[i] = (u - 0.4) * pow(10.0, 12.0 * e - 6.0);
  }
}

/* Factors near 1, for products that neither overflow nor vanish. */
static void fill_near_one(double *v, int64_t n, uint64_t seed) {
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = 1.0 + ((double)(x >> 11) * 0x1.0p-53 - 0.5) * 1e-3;
  }
}

/* A store of dtype t over `vals` (f64 data) or `raw` (already of dtype t). */
static ty_store *mk(ty_runtime *rt, ty_dtype t, int nd, const int64_t *shape, const double *vals) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  ty_store *s = NULL;
  if (t == TY_F64) {
    REQ(rt, ty_store_from_buffer(rt, t, nd, shape, vals, &s));
    return s;
  }
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 1);
  for (int64_t i = 0; i < n; i++) ty__store_f64(buf + i * (int64_t)es, t, vals[i]);
  REQ(rt, ty_store_from_buffer(rt, t, nd, shape, buf, &s));
  free(buf);
  return s;
}

static ty_store *mk_raw(ty_runtime *rt, ty_dtype t, int nd, const int64_t *shape, const void *raw) {
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, t, nd, shape, raw, &s));
  return s;
}

/* v converted to dtype t once (malloc'd) */
static void *convert(const double *v, int64_t n, ty_dtype t) {
  size_t es = ty_dtype_size(t);
  char *buf = malloc((size_t)n * es + 1);
  for (int64_t i = 0; i < n; i++) ty__store_f64(buf + i * (int64_t)es, t, v[i]);
  return buf;
}

static ty_store *red(ty_runtime *rt, ty_reduce_op op, ty_store *a, int axis) {
  ty_store *r = NULL;
  REQ(rt, ty_reduce(rt, op, a, axis, &r));
  return r;
}

static ty_store *bin(ty_runtime *rt, ty_op op, ty_store *a, ty_store *b) {
  ty_store *r = NULL;
  REQ(rt, ty_binary(rt, op, a, b, &r));
  return r;
}

static ty_store *scalar(ty_runtime *rt, double v) {
  ty_store *s = NULL;
  REQ(rt, ty_scalar_f64(rt, TY_F64, v, &s));
  return s;
}

/* The results of one configuration: every store read, bytes appended. */
typedef struct bytes {
  char *p;
  size_t n, cap;
  int items;
} bytes;

static void put_store(ty_runtime *rt, bytes *b, ty_store *s) {
  size_t len = (size_t)ty_store_size(s) * ty_dtype_size(ty_store_dtype(s));
  if (b->n + len > b->cap) {
    b->cap = (b->n + len) * 2;
    b->p = realloc(b->p, b->cap);
  }
  REQ(rt, ty_store_read(rt, s, b->p + b->n, len));
  b->n += len;
  b->items++;
  ty_store_release(s);
}

/* Compare one configuration's bytes with the reference's; name the first
 * item that differs. */
static void same_bits(const bytes *ref, const bytes *got, const conf *c, const size_t *ends) {
  char name[128];
  conf_name(c, name, sizeof name);
  CHECK_EQ_INT(got->items, ref->items);
  CHECK_EQ_INT(got->n, ref->n);
  if (got->n != ref->n) return;
  size_t start = 0;
  for (int i = 0; i < ref->items; i++) {
    if (memcmp(ref->p + start, got->p + start, ends[i] - start) != 0) {
      fprintf(stderr, "result %d differs under %s\n", i, name);
      check_failures++;
      return;
    }
    start = ends[i];
  }
}

/* ---- the scheme, written out ----------------------------------------------------------- */

/* numpy's pairwise base case on n <= 128 doubles */
static double leaf_sum(const double *a, int64_t n) {
  if (n < 8) {
    double r = 0;
    for (int64_t i = 0; i < n; i++) r += a[i];
    return r;
  }
  double r[8];
  int64_t i;
  for (int j = 0; j < 8; j++) r[j] = a[j];
  for (i = 8; i < n - (n % 8); i += 8)
    for (int j = 0; j < 8; j++) r[j] += a[i + j];
  double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
  for (; i < n; i++) res += a[i];
  return res;
}

/* The aligned tree over leaves [lo, lo + 2^level) of the nleaves of a */
static double tree(const double *a, int64_t n, int64_t lo, int level, int64_t nleaves) {
  if (level == 0) {
    const int64_t s = lo * 128, e = s + 128 < n ? s + 128 : n;
    return leaf_sum(a + s, e - s);
  }
  const int64_t half = (int64_t)1 << (level - 1);
  if (lo + half >= nleaves) return tree(a, n, lo, level - 1, nleaves); /* no right half */
  return tree(a, n, lo, level - 1, nleaves) + tree(a, n, lo + half, level - 1, nleaves);
}

/* The ordered sum of one tile: leaves of 128, then the aligned tree. */
static double ordered_sum(const double *a, int64_t n) {
  const int64_t nleaves = (n + 127) / 128;
  int level = 0;
  while (((int64_t)1 << level) < nleaves) level++;
  return tree(a, n, 0, level, nleaves);
}

/* numpy's pairwise_sum (the whole recursion) */
static double numpy_pairwise(const double *a, int64_t n) {
  if (n <= 128) return leaf_sum(a, n);
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise(a, n2) + numpy_pairwise(a + n2, n - n2);
}

TEST(ordered_sum_follows_its_definition) {
  /* sizes within one tile (65536): the sum is 0 + the tile's ordered sum */
  const int64_t sizes[] = {1, 5, 8, 127, 128, 129, 383, 1000, 4096, 4099, 12345, 16384, 65536};
  double *v = malloc(sizeof(double) * 65536);
  fill_spread(v, 65536, 11);
  conf c = {1, TY_MODE_AUTO, 1, true};
  ty_runtime *rt = make_rt(&c);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const int64_t n = sizes[i];
    ty_store *x = mk(rt, TY_F64, 1, &n, v), *s = red(rt, TY_RED_SUM, x, -1);
    ty_value got;
    REQ(rt, ty_item(rt, s, &got));
    const double want = 0.0 + ordered_sum(v, n);
    if (memcmp(&got.f, &want, sizeof want) != 0) {
      fprintf(stderr, "n = %lld: got %a, the definition gives %a\n", (long long)n, got.f, want);
      check_failures++;
    }
    /* a power-of-two number of whole leaves: numpy's pairwise sum exactly */
    if (n % 128 == 0 && ((n / 128) & (n / 128 - 1)) == 0) CHECK(got.f == numpy_pairwise(v, n));
    ty_store_release(x), ty_store_release(s);
  }
  ty_runtime_destroy(rt);
  free(v);
}

/* Several tiles: their ordered sums added in tile order, tiles from the shape
 * alone (ty__ordered_tiles). */
TEST(ordered_tiles_are_fixed_by_the_shape) {
  ty_tiling t;
  int64_t a[1] = {100000000};
  ty__ordered_tiles(1, a, &t);
  CHECK_EQ_INT(t.pieces, TY__ORDER_MAX);
  int64_t b[2] = {3, 100000000};
  ty__ordered_tiles(2, b, &t);
  CHECK(t.tiles[0] == 3 && t.tiles[1] == 22 && t.pieces == 66);
  int64_t c[2] = {100, 10};
  ty__ordered_tiles(2, c, &t);
  CHECK_EQ_INT(t.pieces, 1);
  int64_t d[2] = {1, 200000};
  ty__ordered_tiles(2, d, &t);
  CHECK(t.tiles[0] == 1 && t.tiles[1] == 4);

  /* the value: tiles summed in order, each by the definition */
  const int64_t n = 1000007;
  double *v = malloc(sizeof(double) * n);
  fill_spread(v, n, 12);
  ty__ordered_tiles(1, &n, &t);
  CHECK_EQ_INT(t.pieces, 16);
  double want = 0.0;
  for (int p = 0; p < t.pieces; p++) {
    int64_t lo, hi;
    ty__piece_box(1, &n, &t, p, &lo, &hi);
    want += ordered_sum(v + lo, hi - lo);
  }
  for (int k = 0; k < 2; k++) {
    conf cf = {k ? 3 : 1, TY_MODE_AUTO, 1, true};
    ty_runtime *rt = make_rt(&cf);
    ty_store *x = mk(rt, TY_F64, 1, &n, v), *s = red(rt, TY_RED_SUM, x, -1);
    ty_value got;
    REQ(rt, ty_item(rt, s, &got));
    CHECK(memcmp(&got.f, &want, sizeof want) == 0);
    /* one piece on one processor (walking the tiles), the tiling on three */
    ty_explain_entry e[4];
    int ne = ty_explain(rt, 4, e);
    bool found = false;
    for (int i = 0; i < ne; i++)
      if (strcmp(e[i].task, "sum") == 0) {
        found = true;
        CHECK_EQ_INT(e[i].pieces, k ? 16 : 1);
      }
    CHECK(found);
    ty_store_release(x), ty_store_release(s);
    ty_runtime_destroy(rt);
  }
  free(v);
}

/* ---- every configuration gives the reference's bits ------------------------------------ */

static const int64_t sizes[] = {1, 2, 7, 8, 127, 128, 129, 255, 4099, 65535, 65536, 65537,
                                131073, 200003, 1000007};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXN 1000007

/* Sums, means and products of 1-D stores of every size, f64, f32 and i32
 * (mean: f64), plain and fused (sum(x * 3 - 1)). */
typedef struct data1 {
  const double *v, *ones;
  const void *f32, *i32;
} data1;

static void run_1d(const conf *c, const data1 *d, bytes *out, size_t *ends) {
  ty_runtime *rt = make_rt(c);
  for (int i = 0; i < NSIZES; i++) {
    const int64_t n = sizes[i];
    ty_store *x = mk_raw(rt, TY_F64, 1, &n, d->v), *f = mk_raw(rt, TY_F32, 1, &n, d->f32);
    ty_store *k = mk_raw(rt, TY_I32, 1, &n, d->i32), *p = mk_raw(rt, TY_F64, 1, &n, d->ones);
    ty_store *three = scalar(rt, 3), *one = scalar(rt, 1);
    ty_store *e1 = bin(rt, TY_OP_MUL, x, three), *e2 = bin(rt, TY_OP_SUB, e1, one);
    ty_store *r[] = {red(rt, TY_RED_SUM, x, -1), red(rt, TY_RED_MEAN, x, -1),
                     red(rt, TY_RED_SUM, f, -1), red(rt, TY_RED_MEAN, f, -1),
                     red(rt, TY_RED_MEAN, k, -1), red(rt, TY_RED_PROD, p, -1),
                     red(rt, TY_RED_SUM, e2, -1)};
    ty_store *dead[] = {x, f, k, p, three, one, e1, e2};
    for (size_t j = 0; j < sizeof dead / sizeof dead[0]; j++) ty_store_release(dead[j]);
    for (size_t j = 0; j < sizeof r / sizeof r[0]; j++) {
      put_store(rt, out, r[j]);
      if (ends) ends[out->items - 1] = out->n;
    }
  }
  ty_runtime_destroy(rt);
}

TEST(sums_means_products_same_bits_for_any_pieces) {
  make_confs();
  double *v = malloc(sizeof(double) * MAXN), *w = malloc(sizeof(double) * MAXN);
  double *ones = malloc(sizeof(double) * MAXN);
  fill_spread(v, MAXN, 1);
  fill_near_one(ones, MAXN, 4);
  for (int64_t i = 0; i < MAXN; i++) w[i] = trunc(v[i]); /* |v| < 1e6 */
  data1 d = {v, ones, convert(v, MAXN, TY_F32), convert(w, MAXN, TY_I32)};
  bytes ref = {0};
  size_t *ends = calloc(NSIZES * 8, sizeof *ends);
  run_1d(&confs[0], &d, &ref, ends);
  for (int i = 1; i < nconfs; i++) {
    bytes got = {0};
    run_1d(&confs[i], &d, &got, NULL);
    same_bits(&ref, &got, &confs[i], ends);
    free(got.p);
  }
  /* and the sums are sums: the largest within 1e-12 of a long double loop */
  long double exact = 0;
  for (int64_t i = 0; i < MAXN; i++) exact += v[i];
  double s = 0;
  memcpy(&s, ref.p + ends[(NSIZES - 1) * 7 - 1], sizeof s); /* the last size's first result */
  CHECK_NEAR(s, (double)exact, 1e-12 * 1e6);
  free(ref.p), free(ends), free(v), free(w), free(ones), free((void *)d.f32), free((void *)d.i32);
}

/* 2-D: full sums, both axes (short and long kept dims, so REDUCE and OUT),
 * a transposed view, fused expressions along an axis. */
static void run_2d(const conf *c, const double *v, const float *vf, bytes *out, size_t *ends) {
  ty_runtime *rt = make_rt(c);
  const int64_t shapes[][2] = {{301, 503}, {3, 100003}, {100003, 3}, {1000, 1000}, {17, 40000}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    ty_store *x = mk(rt, TY_F64, 2, shapes[i], v), *f = mk_raw(rt, TY_F32, 2, shapes[i], vf), *t = NULL;
    REQ(rt, ty_store_transpose(rt, x, 0, 1, &t));
    ty_store *two = scalar(rt, 2), *e = bin(rt, TY_OP_MUL, x, two), *e2 = bin(rt, TY_OP_ADD, e, x);
    ty_store *r[] = {red(rt, TY_RED_SUM, x, -1), red(rt, TY_RED_SUM, x, 0),
                     red(rt, TY_RED_SUM, x, 1),  red(rt, TY_RED_MEAN, f, 1),
                     red(rt, TY_RED_SUM, f, 0),  red(rt, TY_RED_SUM, t, -1),
                     red(rt, TY_RED_SUM, t, 0),  red(rt, TY_RED_SUM, t, 1),
                     red(rt, TY_RED_SUM, e2, 0), red(rt, TY_RED_SUM, e2, 1),
                     red(rt, TY_RED_SUM, e2, -1)};
    ty_store *dead[] = {x, f, t, two, e, e2};
    for (size_t j = 0; j < sizeof dead / sizeof dead[0]; j++) ty_store_release(dead[j]);
    for (size_t j = 0; j < sizeof r / sizeof r[0]; j++) {
      put_store(rt, out, r[j]);
      if (ends) ends[out->items - 1] = out->n;
    }
  }
  ty_runtime_destroy(rt);
}

TEST(axis_and_2d_reductions_same_bits_for_any_pieces) {
  make_confs();
  double *v = malloc(sizeof(double) * 1000000);
  fill_spread(v, 1000000, 2);
  float *vf = convert(v, 1000000, TY_F32);
  bytes ref = {0};
  size_t ends[64];
  run_2d(&confs[0], v, vf, &ref, ends);
  for (int i = 1; i < nconfs; i++) {
    bytes got = {0};
    run_2d(&confs[i], v, vf, &got, NULL);
    same_bits(&ref, &got, &confs[i], ends);
    free(got.p);
  }
  free(ref.p), free(v), free(vf);
}

/* matmul: square, thin, tall, vector products, transposed operands, f32. */
static void run_matmul(const conf *c, const double *v, const float *vf, bytes *out, size_t *ends) {
  ty_runtime *rt = make_rt(c);
  const int64_t dims[][3] = {{257, 129, 1031}, {500, 500, 500}, {3, 1000, 5},  {1031, 4099, 7},
                             {100003, 5, 1},   {1, 3000, 1000}, {2000, 77, 1}, {129, 1, 257},
                             /* k split into chunks (ty__matmul_ksplit): 4 of 65536 and a
                              * remainder of 3 (16 in streams for X^T z); a row times a tall
                              * matrix; 2 even chunks */
                             {16, 262147, 1},  {1, 262147, 16}, {4, 262144, 2},
                             /* a gemm from 2048 rows: 2 blocks of 1050 on 2 cores */
                             {2100, 64, 65}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    const int64_t m = dims[i][0], k = dims[i][1], n = dims[i][2];
    const int64_t sa[2] = {m, k}, sb[2] = {k, n}, sat[2] = {k, m};
    ty_store *A = mk(rt, TY_F64, 2, sa, v), *B = mk(rt, TY_F64, 2, sb, v + 7);
    ty_store *AT = mk(rt, TY_F64, 2, sat, v + 3), *tA = NULL;
    REQ(rt, ty_store_transpose(rt, AT, 0, 1, &tA));
    ty_store *Af = mk_raw(rt, TY_F32, 2, sa, vf), *Bf = mk_raw(rt, TY_F32, 2, sb, vf + 7);
    ty_store *b1 = mk(rt, TY_F64, 1, &k, v + 11); /* A @ vector */
    ty_store *r[4] = {NULL, NULL, NULL, NULL};
    REQ(rt, ty_matmul(rt, A, B, &r[0]));
    REQ(rt, ty_matmul(rt, tA, B, &r[1]));
    REQ(rt, ty_matmul(rt, Af, Bf, &r[2]));
    REQ(rt, ty_matmul(rt, A, b1, &r[3]));
    ty_store *dead[] = {A, B, AT, tA, Af, Bf, b1};
    for (size_t j = 0; j < sizeof dead / sizeof dead[0]; j++) ty_store_release(dead[j]);
    for (int j = 0; j < 4; j++) {
      put_store(rt, out, r[j]);
      if (ends) ends[out->items - 1] = out->n;
    }
  }
  ty_runtime_destroy(rt);
}

TEST(matmul_same_bits_for_any_pieces) {
  make_confs();
  const int64_t nv = 1031 * 4099 + 16;
  double *v = malloc(sizeof(double) * (size_t)nv);
  fill_spread(v, nv, 3);
  float *vf = convert(v, nv, TY_F32);
  bytes ref = {0};
  size_t ends[64];
  run_matmul(&confs[0], v, vf, &ref, ends);
  for (int i = 1; i < nconfs; i++) {
    bytes got = {0};
    run_matmul(&confs[i], v, vf, &got, NULL);
    same_bits(&ref, &got, &confs[i], ends);
    free(got.p);
  }
  /* the blocks: fixed by the shape, 128 rows at least, 64 at most */
  CHECK_EQ_INT(ty__matmul_blocks(1, 1000, 1000), 1);
  CHECK_EQ_INT(ty__matmul_blocks(1024, 1024, 1024), 8);
  CHECK_EQ_INT(ty__matmul_blocks(2047, 2048, 2048), 9);  /* gemm: m / 8 rows, <= 512 */
  /* from 2048 rows: an even count of blocks of >= 1024 rows (B packed less),
   * on a machine of 2 cores; more cores: up to the m / 8 rule's blocks */
  const int cores = ty__gemm_cores();
  ty__gemm_cores_set(16);
  CHECK_EQ_INT(ty__matmul_blocks(2048, 2048, 2048), 8);
  CHECK_EQ_INT(ty__matmul_blocks(4096, 4096, 4096), 8);
  ty__gemm_cores_set(3);
  CHECK_EQ_INT(ty__matmul_blocks(2048, 2048, 2048), 4);
  CHECK_EQ_INT(ty__matmul_blocks(8192, 8192, 8192), 8);
  ty__gemm_cores_set(2);
  CHECK_EQ_INT(ty__matmul_blocks(2048, 2048, 2048), 2);
  CHECK_EQ_INT(ty__matmul_blocks(4095, 4096, 4096), 2);
  CHECK_EQ_INT(ty__matmul_blocks(4096, 4096, 4096), 4);
  CHECK_EQ_INT(ty__matmul_blocks(6143, 4096, 4096), 4);
  CHECK_EQ_INT(ty__matmul_blocks(8192, 8192, 8192), 8);
  CHECK_EQ_INT(ty__matmul_blocks(8192, 63, 8192), 64);   /* not a gemm: 128 rows */
  CHECK_EQ_INT(ty__matmul_blocks(4096, 1, 4096), 32);    /* gemv: 128 rows */
  CHECK_EQ_INT(ty__matmul_blocks(100000, 1000, 1000), 64);
  CHECK_EQ_INT(ty__matmul_blocks(100003, 1, 5), 16);
  ty__gemm_cores_set(cores);
  /* the k chunks: only for few row blocks and long k, fixed by the shape */
  CHECK_EQ_INT(ty__matmul_ksplit(16, 1, 262147, false), 4);
  CHECK_EQ_INT(ty__matmul_ksplit(1, 16, 262147, false), 4);
  CHECK_EQ_INT(ty__matmul_ksplit(4, 2, 262144, false), 2);
  CHECK_EQ_INT(ty__matmul_ksplit(32, 1, 500000, false), 15);
  CHECK_EQ_INT(ty__matmul_ksplit(32, 1, 10000000, false), 64);
  CHECK_EQ_INT(ty__matmul_ksplit(4096, 1, 4096, false), 1);
  CHECK_EQ_INT(ty__matmul_ksplit(2048, 2048, 2048, false), 1);
  CHECK_EQ_INT(ty__matmul_ksplit(16, 1, 8191, false), 1);
  CHECK_EQ_INT(ty__matmul_ksplit(512, 512, 100000, false), 16);   /* partials: 16 x 2^18 elements */
  CHECK_EQ_INT(ty__matmul_ksplit(4096, 4096, 100000, false), 1);  /* 2^24 outputs: no partials */
  CHECK_EQ_INT(ty__matmul_ksplit(1024, 2048, 100000, false), 2);
  /* a thin sum's chunks in streams: 4 times as many, 4 to a tile */
  CHECK_EQ_INT(ty__matmul_ksplit(32, 1, 10000000, true), 256);
  CHECK_EQ_INT(ty__matmul_ksplit(32, 1, 500000, true), 60);
  CHECK_EQ_INT(ty__matmul_ksplit(1, 16, 262147, true), 16);
  CHECK_EQ_INT(ty__matmul_ksplit(16, 1, 8191, true), 1);
  free(ref.p), free(v), free(vf);
}

static const check_case cases[] = {
    CASE(ordered_sum_follows_its_definition),
    CASE(ordered_tiles_are_fixed_by_the_shape),
    CASE(sums_means_products_same_bits_for_any_pieces),
    CASE(axis_and_2d_reductions_same_bits_for_any_pieces),
    CASE(matmul_same_bits_for_any_pieces),
};
CHECK_MAIN(cases)
