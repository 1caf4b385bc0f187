/*
 * test_dtypes.c — the dtypes of issue 18 (i8 i16 u16 u32 u64) in the core and
 * the kernel tables: numpy's promotion table (every pair), limits, the
 * single-value loads and stores, the cast loops' wrapping and saturation, and
 * the element-wise and reduction loops at the edges of each range. Expected
 * values come from numpy 1.24 (np.promote_types, astype, the ufuncs) except
 * float -> integer out of range, which is tycho's rule (NaN 0, saturate).
 */
#include "check.h"
#include "internal.h"
#include "kernels.h"

#include <math.h>
#include <string.h>

static const ty_dtype ALL[TY_NDTYPES] = {TY_F64, TY_F32, TY_I64, TY_I32,  TY_U8, TY_BOOL,
                                         TY_I8,  TY_I16, TY_U16, TY_U32, TY_U64};

TEST(promotion_is_numpys_table) {
  /* np.promote_types, rows and columns in the order of ALL */
  static const char *const rows[TY_NDTYPES] = {
      "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64", "f64 f32 f64 f64 f32 f32 f32 f32 f32 f64 f64",
      "f64 f64 i64 i64 i64 i64 i64 i64 i64 i64 f64", "f64 f64 i64 i32 i32 i32 i32 i32 i32 i64 f64",
      "f64 f32 i64 i32 u8 u8 i16 i16 u16 u32 u64",   "f64 f32 i64 i32 u8 bool i8 i16 u16 u32 u64",
      "f64 f32 i64 i32 i16 i8 i8 i16 i32 i64 f64",   "f64 f32 i64 i32 i16 i16 i16 i16 i32 i64 f64",
      "f64 f32 i64 i32 u16 u16 i32 i32 u16 u32 u64", "f64 f64 i64 i64 u32 u32 i64 i64 u32 u32 u64",
      "f64 f64 f64 f64 u64 u64 f64 f64 u64 u64 u64"};
  for (int a = 0; a < TY_NDTYPES; a++) {
    char row[128];
    row[0] = '\0';
    for (int b = 0; b < TY_NDTYPES; b++) {
      if (b) strcat(row, " ");
      strcat(row, ty_dtype_name(ty_dtype_promote(ALL[a], ALL[b])));
    }
    if (strcmp(row, rows[a]) != 0) fprintf(stderr, "%s: got  %s\n     want %s\n", ty_dtype_name(ALL[a]), row, rows[a]);
    CHECK(strcmp(row, rows[a]) == 0);
  }
}

TEST(names_sizes_limits) {
  static const struct {
    const char *name, *alias;
    ty_dtype t;
    size_t size;
    int64_t lo;
    uint64_t hi;
  } cases[] = {{"i8", "int8", TY_I8, 1, INT8_MIN, INT8_MAX},
               {"i16", "int16", TY_I16, 2, INT16_MIN, INT16_MAX},
               {"u16", "uint16", TY_U16, 2, 0, UINT16_MAX},
               {"u32", "uint32", TY_U32, 4, 0, UINT32_MAX},
               {"u64", "uint64", TY_U64, 8, 0, UINT64_MAX},
               {"i64", "int64", TY_I64, 8, INT64_MIN, INT64_MAX},
               {"bool", "bool", TY_BOOL, 1, 0, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ty_dtype t;
    CHECK(ty_dtype_parse(cases[i].name, &t) == TY_OK && t == cases[i].t);
    CHECK(ty_dtype_parse(cases[i].alias, &t) == TY_OK && t == cases[i].t);
    CHECK(strcmp(ty_dtype_name(cases[i].t), cases[i].name) == 0);
    CHECK(ty_dtype_size(cases[i].t) == cases[i].size);
    int64_t lo;
    uint64_t hi;
    ty_dtype_limits(cases[i].t, &lo, &hi);
    CHECK(lo == cases[i].lo && hi == cases[i].hi);
  }
  CHECK(ty_dtype_is_int(TY_U64) && ty_dtype_is_int(TY_I8) && !ty_dtype_is_int(TY_BOOL));
  CHECK(ty_dtype_is_unsigned(TY_U16) && !ty_dtype_is_unsigned(TY_I16) && !ty_dtype_is_unsigned(TY_BOOL));
  CHECK(!ty_dtype_is_int(TY_F32) && !ty_dtype_is_int(TY_NDTYPES));
}

TEST(single_value_loads_and_stores_wrap_and_saturate) {
  char b[8];
  ty__store_i64(b, TY_I8, 200); /* wraps */
  CHECK(ty__load_i64(b, TY_I8) == -56);
  ty__store_i64(b, TY_U16, -1);
  CHECK(ty__load_i64(b, TY_U16) == 65535);
  ty__store_i64(b, TY_U64, -1);
  CHECK(ty__load_i64(b, TY_U64) == -1); /* the bits */
  CHECK(ty__load_f64(b, TY_U64) == 18446744073709551616.0);
  ty__store_f64(b, TY_I16, 1e9); /* saturates */
  CHECK(ty__load_i64(b, TY_I16) == 32767);
  ty__store_f64(b, TY_U32, -3.5);
  CHECK(ty__load_i64(b, TY_U32) == 0);
  ty__store_f64(b, TY_U64, 1e30);
  CHECK((uint64_t)ty__load_i64(b, TY_U64) == UINT64_MAX);
  ty__store_f64(b, TY_U64, 9223372036854775808.0); /* 2^63: exact */
  CHECK((uint64_t)ty__load_i64(b, TY_U64) == UINT64_C(9223372036854775808));
  ty__store_f64(b, TY_I8, NAN);
  CHECK(ty__load_i64(b, TY_I8) == 0);
}

/* cast n doubles to dtype t through the table, back as int64 (u64: bits) */
static void cast_from_f64(ty_dtype t, const double *in, int n, int64_t *out) {
  char buf[64];
  char *p[2] = {buf, (char *)in};
  const int64_t s[2] = {(int64_t)ty_dtype_size(t), 8};
  ty__cast_loops[TY_F64][t](n, p, s, NULL);
  for (int i = 0; i < n; i++) out[i] = ty__load_i64(buf + (size_t)i * ty_dtype_size(t), t);
}

TEST(float_casts_saturate_and_integer_casts_wrap) {
  const double v[6] = {-1.5, 300.7, 1e10, -1e10, NAN, 1e30};
  static const int64_t want[5][6] = {
      {-1, 127, 127, -128, 0, 127},                           /* i8 */
      {-1, 300, 32767, -32768, 0, 32767},                     /* i16 */
      {0, 300, 65535, 0, 0, 65535},                           /* u16 */
      {0, 300, 4294967295, 0, 0, 4294967295},                 /* u32 */
      {0, 300, 10000000000, 0, 0, -1},                        /* u64 (2^64 - 1: bits) */
  };
  const ty_dtype ts[5] = {TY_I8, TY_I16, TY_U16, TY_U32, TY_U64};
  for (int k = 0; k < 5; k++) {
    int64_t got[6];
    cast_from_f64(ts[k], v, 6, got);
    for (int i = 0; i < 6; i++) {
      if (got[i] != want[k][i])
        fprintf(stderr, "f64 %g -> %s: got %lld, want %lld\n", v[i], ty_dtype_name(ts[k]),
                (long long)got[i], (long long)want[k][i]);
      CHECK(got[i] == want[k][i]);
    }
  }
  /* numpy's astype from i64: -129 -1 65536 2^32 + 5 */
  const int64_t src[4] = {-129, -1, 65536, (INT64_C(1) << 32) + 5};
  static const int64_t wrapped[5][4] = {
      {127, -1, 0, 5}, {-129, -1, 0, 5}, {65407, 65535, 0, 5},
      {4294967167, 4294967295, 65536, 5}, {-129, -1, 65536, 4294967301}};
  for (int k = 0; k < 5; k++) {
    char buf[64];
    char *p[2] = {buf, (char *)src};
    const int64_t s[2] = {(int64_t)ty_dtype_size(ts[k]), 8};
    ty__cast_loops[TY_I64][ts[k]](4, p, s, NULL);
    for (int i = 0; i < 4; i++)
      CHECK(ty__load_i64(buf + (size_t)i * ty_dtype_size(ts[k]), ts[k]) == wrapped[k][i]);
  }
  /* every pair has a loop */
  for (int f = 0; f < TY_NDTYPES; f++)
    for (int t = 0; t < TY_NDTYPES; t++) CHECK(ty__cast_loops[f][t] != NULL);
}

/* out = a OP b over 3 elements of dtype t (values as int64, u64 as bits) */
static void binary3(ty_op op, ty_dtype t, const int64_t *a, const int64_t *b, int64_t *out) {
  char x[24], y[24], o[24];
  const size_t es = ty_dtype_size(t);
  for (int i = 0; i < 3; i++) {
    ty__store_i64(x + i * es, t, a[i]);
    ty__store_i64(y + i * es, t, b[i]);
  }
  char *p[3] = {o, x, y};
  const int64_t s[3] = {(int64_t)es, (int64_t)es, (int64_t)es};
  CHECK(ty__binary_loops[op][t] != NULL);
  ty__binary_loops[op][t](3, p, s, NULL);
  for (int i = 0; i < 3; i++) out[i] = ty__load_i64(o + i * es, t);
}

TEST(element_wise_loops_match_numpy_at_the_edges) {
  static const struct {
    ty_op op;
    ty_dtype t;
    int64_t a[3], b[3], want[3];
  } cases[] = {
      {TY_OP_ADD, TY_I8, {100, -100, 127}, {100, -100, 1}, {-56, 56, -128}},
      {TY_OP_MUL, TY_I16, {300, -300, 181}, {300, 300, 181}, {24464, -24464, 32761}},
      {TY_OP_MUL, TY_U16, {65535, 256, 3}, {65535, 256, 3}, {1, 0, 9}},
      {TY_OP_SUB, TY_U32, {0, 5, 7}, {1, 6, 7}, {4294967295, 4294967295, 0}},
      {TY_OP_SUB, TY_U64, {0, 5, 7}, {1, 6, 7}, {-1, -1, 0}},
      {TY_OP_FLOORDIV, TY_I8, {-7, -128, 7}, {2, -1, 0}, {-4, -128, 0}},
      {TY_OP_MOD, TY_I16, {-7, 7, -32768}, {2, -2, -1}, {1, -1, 0}},
      {TY_OP_FLOORDIV, TY_U64, {-1, 9, 9}, {2, 0, 4}, {INT64_MAX, 0, 2}}, /* (2^64-1) // 2 */
      {TY_OP_MOD, TY_U32, {4294967295, 9, 9}, {10, 0, 4}, {5, 0, 1}},
      {TY_OP_LSHIFT, TY_I8, {1, -1, 64}, {7, 3, 1}, {-128, -8, -128}},
      {TY_OP_RSHIFT, TY_I8, {-128, 100, -1}, {7, 2, 9}, {-1, 25, -1}},
      {TY_OP_RSHIFT, TY_U64, {-1, -1, 8}, {63, 64, 1}, {1, 0, 4}},
      {TY_OP_MAXIMUM, TY_U64, {-1, 0, 5}, {1, 1, 4}, {-1, 1, 5}}, /* 2^64 - 1 is the largest */
      {TY_OP_LT, TY_U32, {4294967295, 0, 5}, {0, 1, 5}, {0, 1, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t got[3];
    const ty_dtype ot = ty__op_out_dtype(cases[c].op, cases[c].t);
    if (ot != cases[c].t) { /* comparisons: bool out */
      char x[24], y[24], o[3];
      const size_t es = ty_dtype_size(cases[c].t);
      for (int i = 0; i < 3; i++) {
        ty__store_i64(x + i * es, cases[c].t, cases[c].a[i]);
        ty__store_i64(y + i * es, cases[c].t, cases[c].b[i]);
      }
      char *p[3] = {o, x, y};
      const int64_t s[3] = {1, (int64_t)es, (int64_t)es};
      ty__binary_loops[cases[c].op][cases[c].t](3, p, s, NULL);
      for (int i = 0; i < 3; i++) got[i] = o[i];
    } else {
      binary3(cases[c].op, cases[c].t, cases[c].a, cases[c].b, got);
    }
    for (int i = 0; i < 3; i++) {
      if (got[i] != cases[c].want[i])
        fprintf(stderr, "%s %s [%d]: got %lld, want %lld\n", ty_op_name(cases[c].op),
                ty_dtype_name(cases[c].t), i, (long long)got[i], (long long)cases[c].want[i]);
      CHECK(got[i] == cases[c].want[i]);
    }
  }
}

TEST(reductions_of_the_new_dtypes) {
  /* sum of i8 into i64, of u16 into u64 (numpy), min/max of u64 unsigned */
  const int8_t a[4] = {100, 100, 100, -128};
  int64_t acc = 0;
  char *p[2] = {(char *)&acc, (char *)a};
  int64_t s[2] = {0, 1};
  ty__reduce_loops[TY__RSUM][TY_I8][TY_I64](4, p, s, NULL);
  CHECK(acc == 172);
  const uint16_t u[2] = {65535, 65535};
  uint64_t uacc = 0;
  p[0] = (char *)&uacc, p[1] = (char *)u, s[1] = 2;
  CHECK(ty__reduce_loops[TY__RSUM][TY_U16][TY_U64] != NULL);
  ty__reduce_loops[TY__RSUM][TY_U16][TY_U64](2, p, s, NULL);
  CHECK(uacc == 131070);
  const uint64_t big[3] = {5, UINT64_MAX, UINT64_C(1) << 63};
  ty__fillval id = ty__reduce_identity(TY__RMIN, TY_U64);
  uint64_t mn = (uint64_t)id.i, mx = (uint64_t)ty__reduce_identity(TY__RMAX, TY_U64).i;
  CHECK(mn == UINT64_MAX && mx == 0);
  p[0] = (char *)&mn, p[1] = (char *)big, s[1] = 8;
  ty__reduce_loops[TY__RMIN][TY_U64][TY_U64](3, p, s, NULL);
  p[0] = (char *)&mx;
  ty__reduce_loops[TY__RMAX][TY_U64][TY_U64](3, p, s, NULL);
  CHECK(mn == 5 && mx == UINT64_MAX);
  CHECK(ty__argmax_loops[TY_U64](3, (const char *)big, 8) == 1);
  CHECK(ty__argmin_loops[TY_I16] != NULL && ty__argmin_loops[TY_U32] != NULL);
}

static const check_case cases[] = {
    CASE(promotion_is_numpys_table),
    CASE(names_sizes_limits),
    CASE(single_value_loads_and_stores_wrap_and_saturate),
    CASE(float_casts_saturate_and_integer_casts_wrap),
    CASE(element_wise_loops_match_numpy_at_the_edges),
    CASE(reductions_of_the_new_dtypes),
};
CHECK_MAIN(cases)
