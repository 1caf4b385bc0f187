/*
 * test_linalg.c — tycho/linalg.h through the C API: values against numpy
 * 1.24 (computed once, pasted), the error of a singular matrix at the flush
 * (TY_ETASK, the function and the matrix named), shape checks, and a stack's
 * results the same bits under 1, 2, 3 and 8 processors with every processor
 * used (mode all, 3 pieces per processor).
 */
#include "check.h"
#include "req.h"

#include <tycho/linalg.h>
#include <tycho/task.h>
#include <tycho/tycho.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  ty_policy p = {.set = TY_POL_MODE | TY_POL_OVERDECOMPOSE, .mode = TY_MODE_ALL, .overdecompose = 3};
  REQ(rt, ty_scope_push(rt, &p, "scope at test"));
  return rt;
}

static ty_store *mk(ty_runtime *rt, int ndim, const int64_t *shape, const double *v) {
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, ndim, shape, v, &s));
  return s;
}

static void read_f64(ty_runtime *rt, ty_store *s, double *out, size_t n) {
  REQ(rt, ty_store_read(rt, s, out, n * sizeof *out));
}

static const double A[9] = {4, 1, 2, 1, 5, 3, 2, 3, 6};
static const int64_t S33[2] = {3, 3};

TEST(solve_inv_det_cholesky_match_numpy) {
  ty_runtime *rt = make_rt(3);
  const int64_t n3 = 3;
  const double bv[3] = {1, 2, 3};
  ty_store *a = mk(rt, 2, S33, A), *b = mk(rt, 1, &n3, bv), *x = NULL, *inv = NULL, *det = NULL,
           *l = NULL;
  REQ(rt, ty_linalg_solve(rt, a, b, &x));
  REQ(rt, ty_linalg_inv(rt, a, &inv));
  REQ(rt, ty_linalg_det(rt, a, &det));
  REQ(rt, ty_linalg_cholesky(rt, a, &l));
  CHECK_EQ_INT(ty_store_ndim(x), 1);
  CHECK_EQ_INT(ty_store_ndim(det), 0);
  double xv[3], iv[9], dv, lv[9];
  read_f64(rt, x, xv, 3);
  read_f64(rt, inv, iv, 9);
  read_f64(rt, det, &dv, 1);
  read_f64(rt, l, lv, 9);
  const double want_x[3] = {-1.3877787807814457e-17, 0.14285714285714285, 0.4285714285714286};
  const double want_i[9] = {0.3, 0.0, -0.1, 0.0, 0.2857142857142857, -0.14285714285714282,
                            -0.1, -0.14285714285714285, 0.2714285714285714};
  const double want_l[9] = {2.0, 0, 0, 0.5, 2.179449471770337, 0, 1.0, 1.1470786693528088,
                            1.9194297398747862};
  for (int i = 0; i < 3; i++) CHECK_NEAR(xv[i], want_x[i], 1e-13);
  for (int i = 0; i < 9; i++) CHECK_NEAR(iv[i], want_i[i], 1e-13);
  for (int i = 0; i < 9; i++) CHECK_NEAR(lv[i], want_l[i], 1e-13);
  CHECK_NEAR(dv, 69.99999999999996, 1e-13);
  ty_store *all[] = {a, b, x, inv, det, l};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
  ty_runtime_destroy(rt);
}

TEST(singular_matrix_fails_the_flush_naming_function_and_matrix) {
  ty_runtime *rt = make_rt(2);
  const int64_t shape[3] = {2, 2, 2};
  const double v[8] = {1, 0, 0, 1, 1, 2, 2, 4}; /* the second is singular */
  ty_store *a = mk(rt, 3, shape, v), *inv = NULL, *det = NULL;
  REQ(rt, ty_linalg_inv(rt, a, &inv)); /* deferred: the launch is queued */
  CHECK_EQ_INT(ty_flush(rt), TY_ETASK);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_linalg_inv: matrix 2 of the stack is singular (U(2,2) is exactly zero)");
  ty_store_release(inv);
  REQ(rt, ty_linalg_det(rt, a, &det)); /* det of a singular matrix is 0, no error */
  double d[2];
  read_f64(rt, det, d, 2);
  CHECK_NEAR(d[0], 1, 1e-15);
  CHECK_NEAR(d[1], 0, 0);
  ty_store_release(det);
  ty_store_release(a);
  ty_runtime_destroy(rt);
}

TEST(shapes_are_checked_before_any_launch) {
  ty_runtime *rt = make_rt(1);
  const int64_t s23[2] = {2, 3}, n4 = 4;
  const double v[6] = {1, 2, 3, 4, 5, 6};
  ty_store *a = mk(rt, 2, s23, v), *b = mk(rt, 1, &n4, v), *sq = mk(rt, 2, S33, A), *out = NULL;
  CHECK_EQ_INT(ty_linalg_inv(rt, a, &out), TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "ty_linalg_inv: the last 2 dimensions of a must be square, got shape (2, 3)");
  CHECK(out == NULL);
  CHECK_EQ_INT(ty_linalg_solve(rt, sq, b, &out), TY_ESHAPE);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "do not align");
  CHECK_EQ_INT(ty_linalg_cholesky(rt, b, &out), TY_ESHAPE);
  CHECK_EQ_INT(ty_linalg_det(rt, sq, NULL), TY_EINVAL);
  CHECK_EQ_INT(ty_linalg_qr(rt, a, (ty_qr_mode)7, &out, &out), TY_EINVAL);
  ty_store_release(a);
  ty_store_release(b);
  ty_store_release(sq);
  ty_runtime_destroy(rt);
}

TEST(qr_svd_lstsq_shapes_and_values) {
  ty_runtime *rt = make_rt(2);
  const int64_t s32[2] = {3, 2}, n3 = 3;
  const double m[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {1, 2, 2};
  ty_store *a = mk(rt, 2, s32, m), *b = mk(rt, 1, &n3, bv);
  ty_store *q = NULL, *r = NULL, *u = NULL, *s = NULL, *vh = NULL;
  REQ(rt, ty_linalg_qr(rt, a, TY_QR_COMPLETE, &q, &r));
  CHECK_EQ_INT(ty_store_shape(q)[1], 3);
  CHECK_EQ_INT(ty_store_shape(r)[0], 3);
  double rv[6];
  read_f64(rt, r, rv, 6);
  CHECK_NEAR(rv[0], -5.916079783099616, 1e-13);
  CHECK_NEAR(rv[3], 0.8280786712108248, 1e-13);
  CHECK_NEAR(rv[4], 0, 0);
  REQ(rt, ty_linalg_svd(rt, a, false, &u, &s, &vh));
  CHECK_EQ_INT(ty_store_shape(u)[1], 2);
  double sv[2];
  read_f64(rt, s, sv, 2);
  CHECK_NEAR(sv[0], 9.525518091565107, 1e-13);
  CHECK_NEAR(sv[1], 0.514300580658644, 1e-13);
  ty_store *x = NULL, *res = NULL, *rank = NULL, *s2 = NULL;
  const double ones[6] = {1, 1, 1, 2, 1, 3};
  ty_store *a2 = mk(rt, 2, s32, ones);
  REQ(rt, ty_linalg_lstsq(rt, a2, b, NAN, &x, &res, &rank, &s2));
  CHECK_EQ_INT(ty_store_dtype(rank), TY_I64);
  ty_value rk;
  REQ(rt, ty_item(rt, rank, &rk));
  CHECK_EQ_INT(rk.i, 2);
  double xv[2], rs;
  read_f64(rt, x, xv, 2);
  read_f64(rt, res, &rs, 1);
  CHECK_NEAR(xv[0], 0.66666666666666674, 1e-13);
  CHECK_NEAR(xv[1], 0.5, 1e-13);
  CHECK_NEAR(rs, 0.16666666666666666, 1e-13);
  ty_store *all[] = {a, b, q, r, u, s, vh, x, res, rank, s2, a2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
  ty_runtime_destroy(rt);
}

/* 40 matrices of 24 x 24 (diagonally dominant): inv and eigh */
TEST(a_stack_gives_the_same_bits_under_any_processor_count) {
  enum { B = 40, M = 24 };
  static double v[B * M * M], first_inv[B * M * M], first_w[B * M], got[B * M * M];
  for (int i = 0; i < B * M * M; i++) v[i] = (double)((i * 7919) % 1009) / 1009.0;
  for (int k = 0; k < B; k++)
    for (int i = 0; i < M; i++) v[k * M * M + i * M + i] += M;
  const int cpus[] = {1, 2, 3, 8};
  for (int c = 0; c < 4; c++) {
    ty_runtime *rt = make_rt(cpus[c]);
    const int64_t shape[3] = {B, M, M};
    ty_store *a = mk(rt, 3, shape, v), *inv = NULL, *w = NULL;
    REQ(rt, ty_linalg_inv(rt, a, &inv));
    REQ(rt, ty_linalg_eigh(rt, a, true, &w, NULL));
    read_f64(rt, inv, got, B * M * M);
    if (c == 0) memcpy(first_inv, got, sizeof got);
    else CHECK(memcmp(first_inv, got, sizeof got) == 0);
    read_f64(rt, w, got, B * M);
    if (c == 0) memcpy(first_w, got, sizeof first_w);
    else CHECK(memcmp(first_w, got, sizeof first_w) == 0);
    ty_store_release(a);
    ty_store_release(inv);
    ty_store_release(w);
    ty_runtime_destroy(rt);
  }
}

/* solve (2 right-hand sides), cholesky and det of a stack of 12 matrices
 * of 30 x 30, and solve and cholesky of a lone 100 x 100 (below the
 * OpenBLAS-threaded size, tycho/linalg.h): the same bits under 1 and 2
 * processors (LAPACK on the C-order copy, linalg_impl.h). */
TEST(solve_cholesky_det_give_the_same_bits_under_1_and_2_processors) {
  enum { B = 12, M = 30, L = 100 };
  static double v[B * M * M], rhs[B * M * 2], lone[L * L], first[B * M * M + B * M * 2 + B + L + L * L],
      got[B * M * M + B * M * 2 + B + L + L * L];
  for (int i = 0; i < B * M * M; i++) v[i] = (double)((i * 7919) % 1009) / 1009.0;
  for (int k = 0; k < B; k++) /* symmetric, diagonally dominant: SPD */
    for (int i = 0; i < M; i++)
      for (int j = 0; j < i; j++) v[k * M * M + j * M + i] = v[k * M * M + i * M + j];
  for (int k = 0; k < B; k++)
    for (int i = 0; i < M; i++) v[k * M * M + i * M + i] += M;
  for (int i = 0; i < B * M * 2; i++) rhs[i] = (double)((i * 104729) % 997) / 997.0;
  for (int i = 0; i < L * L; i++) lone[i] = (double)((i * 7919) % 1009) / 1009.0;
  for (int i = 0; i < L; i++)
    for (int j = 0; j < i; j++) lone[j * L + i] = lone[i * L + j];
  for (int i = 0; i < L; i++) lone[i * L + i] += L;
  for (int c = 1; c <= 2; c++) {
    ty_runtime *rt = make_rt(c);
    ty_store *a = mk(rt, 3, (const int64_t[3]){B, M, M}, v);
    ty_store *b = mk(rt, 3, (const int64_t[3]){B, M, 2}, rhs);
    ty_store *la = mk(rt, 2, (const int64_t[2]){L, L}, lone);
    ty_store *lb = mk(rt, 1, (const int64_t[1]){L}, rhs);
    ty_store *x = NULL, *l = NULL, *d = NULL, *lx = NULL, *ll = NULL;
    REQ(rt, ty_linalg_solve(rt, a, b, &x));
    REQ(rt, ty_linalg_cholesky(rt, a, &l));
    REQ(rt, ty_linalg_det(rt, a, &d));
    REQ(rt, ty_linalg_solve(rt, la, lb, &lx));
    REQ(rt, ty_linalg_cholesky(rt, la, &ll));
    double *g = got;
    read_f64(rt, l, g, B * M * M), g += B * M * M;
    read_f64(rt, x, g, B * M * 2), g += B * M * 2;
    read_f64(rt, d, g, B), g += B;
    read_f64(rt, lx, g, L), g += L;
    read_f64(rt, ll, g, L * L);
    /* the factor is lower triangular and reproduces a (lone: a l l^T check) */
    double worst = 0;
    for (int i = 0; i < L; i++)
      for (int j = 0; j < L; j++) {
        double s = 0;
        for (int q = 0; q < L; q++) s += g[i * L + q] * g[j * L + q];
        const double e = s - lone[i * L + j];
        if ((e < 0 ? -e : e) > worst) worst = e < 0 ? -e : e;
        if (j > i) CHECK(g[i * L + j] == 0);
      }
    CHECK(worst < 1e-10);
    if (c == 1) memcpy(first, got, sizeof got);
    else CHECK(memcmp(first, got, sizeof got) == 0);
    ty_store *all[] = {a, b, la, lb, x, l, d, lx, ll};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ty_store_release(all[i]);
    ty_runtime_destroy(rt);
  }
}

static const check_case cases[] = {
    CASE(solve_inv_det_cholesky_match_numpy),
    CASE(singular_matrix_fails_the_flush_naming_function_and_matrix),
    CASE(shapes_are_checked_before_any_launch),
    CASE(qr_svd_lstsq_shapes_and_values),
    CASE(a_stack_gives_the_same_bits_under_any_processor_count),
    CASE(solve_cholesky_det_give_the_same_bits_under_1_and_2_processors),
};
CHECK_MAIN(cases)
