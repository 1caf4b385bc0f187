/*
 * test_products.c — the products of tycho/products.h through the C API:
 * batched matmul against a triple loop, einsum against matmul, convolve
 * against a direct sum, on 1 to 8 processors; and every allocation failing
 * in turn inside einsum, tensordot, batched matmul and convolve returns
 * TY_ENOMEM (or succeeds) and leaves the runtime usable, leaking nothing.
 */
#include "check.h"
#include "req.h"
#include "internal.h"

#include <tycho/products.h>
#include <tycho/tycho.h>

#include <stdint.h>
#include <stdlib.h>

static const int cpu_counts[] = {1, 3, 8};
#define NCPUS ((int)(sizeof cpu_counts / sizeof cpu_counts[0]))

static ty_runtime *make_rt(int cpus) {
  ty_config cfg = {.cpus = cpus};
  ty_runtime *rt = NULL;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "cannot create a runtime\n");
    exit(1);
  }
  return rt;
}

/* An f64 store of `shape` holding (i * 7 % 11 - 5) / 4 for flat index i. */
static ty_store *ramp(ty_runtime *rt, int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc((size_t)n * sizeof *v + 8);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(i * 7 % 11 - 5) / 4;
  ty_store *s = NULL;
  REQ(rt, ty_store_from_buffer(rt, TY_F64, nd, shape, v, &s));
  free(v);
  return s;
}

static double *values(ty_runtime *rt, ty_store *s) {
  const int64_t n = ty_store_size(s);
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  REQ(rt, ty_store_read(rt, s, v, (size_t)n * sizeof *v));
  return v;
}

TEST(batched_matmul_matches_a_triple_loop) {
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *a = ramp(rt, 3, (const int64_t[]){3, 4, 5}), *b = ramp(rt, 2, (const int64_t[]){5, 2});
    ty_store *r = NULL;
    REQ(rt, ty_matmul(rt, a, b, &r));
    CHECK_EQ_INT(ty_store_ndim(r), 3);
    CHECK_EQ_INT(ty_store_shape(r)[2], 2);
    double *va = values(rt, a), *vb = values(rt, b), *vr = values(rt, r);
    for (int s = 0; s < 3; s++)
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
          double want = 0;
          for (int p = 0; p < 5; p++) want += va[(s * 4 + i) * 5 + p] * vb[p * 2 + j];
          CHECK_NEAR(vr[(s * 4 + i) * 2 + j], want, 1e-15);
        }
    free(va), free(vb), free(vr);
    ty_store_release(a), ty_store_release(b), ty_store_release(r);
    ty_runtime_destroy(rt);
  }
}

TEST(einsum_of_a_matrix_product_is_matmul) {
  ty_runtime *rt = make_rt(3);
  ty_store *a = ramp(rt, 2, (const int64_t[]){6, 7}), *b = ramp(rt, 2, (const int64_t[]){7, 3});
  ty_store *ops[2] = {a, b}, *e = NULL, *m = NULL, *t = NULL;
  REQ(rt, ty_einsum(rt, "ij,jk", 2, ops, &e));
  REQ(rt, ty_matmul(rt, a, b, &m));
  REQ(rt, ty_einsum(rt, "ij,jk->ki", 2, ops, &t));
  double *ve = values(rt, e), *vm = values(rt, m), *vt = values(rt, t);
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 3; k++) {
      CHECK(ve[i * 3 + k] == vm[i * 3 + k]);
      CHECK(vt[k * 6 + i] == vm[i * 3 + k]);
    }
  ty_store *bad = NULL;
  CHECK(ty_einsum(rt, "ij,jk->iz", 2, ops, &bad) == TY_EINVAL && bad == NULL);
  CHECK_STR_CONTAINS(ty_errmsg(rt), "output label 'z' is in no operand");
  free(ve), free(vm), free(vt);
  ty_store_release(a), ty_store_release(b), ty_store_release(e), ty_store_release(m);
  ty_store_release(t);
  ty_runtime_destroy(rt);
}

TEST(convolve_same_is_the_centred_direct_sum) {
  for (int c = 0; c < NCPUS; c++) {
    ty_runtime *rt = make_rt(cpu_counts[c]);
    ty_store *a = ramp(rt, 1, (const int64_t[]){50}), *v = ramp(rt, 1, (const int64_t[]){4});
    ty_store *r = NULL;
    REQ(rt, ty_convolve(rt, a, v, TY_CONV_SAME, &r));
    CHECK_EQ_INT(ty_store_size(r), 50);
    double *va = values(rt, a), *vv = values(rt, v), *vr = values(rt, r);
    for (int i = 0; i < 50; i++) {
      double want = 0; /* full[p] = sum_k a[p - k] v[k], same = full[(4 - 1) / 2 + i] */
      const int p = i + 1;
      for (int k = 0; k < 4; k++)
        if (p - k >= 0 && p - k < 50) want += va[p - k] * vv[k];
      CHECK_NEAR(vr[i], want, 1e-14);
    }
    free(va), free(vv), free(vr);
    ty_store_release(a), ty_store_release(v), ty_store_release(r);
    ty_runtime_destroy(rt);
  }
}

/* Each allocation from the k-th on fails once: every call returns TY_OK or
 * TY_ENOMEM and the runtime stays usable; the sanitizer build checks that
 * nothing leaks. */
/* The short-k products (ops_matmul_ew.c): a strided B (copied), a 1-D
 * side, f32 promoted to f64; each allocation failing in turn. */
TEST(short_k_products_fail_cleanly_under_allocation_faults) {
  for (long k = 1; k < 400; k++) {
    ty_runtime *rt = make_rt(2);
    ty_store *a = ramp(rt, 2, (const int64_t[]){5, 2}), *c = ramp(rt, 2, (const int64_t[]){3, 2});
    ty_store *v = ramp(rt, 1, (const int64_t[]){2}), *ct = NULL, *a32 = NULL;
    REQ(rt, ty_store_transpose(rt, c, 0, 1, &ct));
    REQ(rt, ty_cast(rt, a, TY_F32, &a32));
    REQ(rt, ty_flush(rt));
    ty_store *r[4] = {NULL, NULL, NULL, NULL};
    const long before = ty_fault_failures();
    ty_fault_fail_alloc(k);
    ty_status st[4];
    st[0] = ty_matmul(rt, a, ct, &r[0]);
    st[1] = ty_matmul(rt, v, ct, &r[1]);
    st[2] = ty_matmul(rt, c, v, &r[2]);
    st[3] = ty_matmul(rt, a32, ct, &r[3]);
    ty_status fl = ty_flush(rt);
    ty_fault_fail_alloc(0);
    const bool injected = ty_fault_failures() != before;
    for (int i = 0; i < 4; i++) {
      CHECK(st[i] == TY_OK || st[i] == TY_ENOMEM);
      CHECK((st[i] == TY_OK) == (r[i] != NULL));
      ty_store_release(r[i]);
    }
    (void)fl;
    ty_store *again = NULL;
    REQ(rt, ty_matmul(rt, a, ct, &again));
    REQ(rt, ty_flush(rt));
    double x[15];
    REQ(rt, ty_store_read(rt, again, x, sizeof x));
    /* row 0 of a (-5/4, 2/4) by column 0 of c^T (-5/4, 2/4): 25/16 + 4/16 */
    CHECK(x[0] == 29.0 / 16);
    ty_store_release(again);
    ty_store_release(a), ty_store_release(c), ty_store_release(v), ty_store_release(ct);
    ty_store_release(a32);
    ty_runtime_destroy(rt);
    if (!injected) break; /* past the last allocation */
  }
}

TEST(products_fail_cleanly_under_allocation_faults) {
  for (long k = 1; k < 400; k++) {
    ty_runtime *rt = make_rt(2);
    ty_store *a = ramp(rt, 3, (const int64_t[]){2, 3, 4}), *b = ramp(rt, 2, (const int64_t[]){4, 3});
    ty_store *c = ramp(rt, 2, (const int64_t[]){3, 2});
    ty_store *ops[3] = {a, b, c}, *r[4] = {NULL, NULL, NULL, NULL};
    const long before = ty_fault_failures();
    ty_fault_fail_alloc(k);
    ty_status st[4];
    st[0] = ty_einsum(rt, "bij,jk,kl->bil", 3, ops, &r[0]);
    st[1] = ty_tensordot(rt, a, b, 1, (const int[]){2}, (const int[]){0}, &r[1]);
    st[2] = ty_matmul(rt, a, b, &r[2]);
    st[3] = ty_convolve(rt, b, c, TY_CONV_FULL, &r[3]);
    ty_status fl = ty_flush(rt);
    ty_fault_fail_alloc(0);
    const bool injected = ty_fault_failures() != before;
    for (int i = 0; i < 4; i++) {
      CHECK(st[i] == TY_OK || st[i] == TY_ENOMEM);
      CHECK((st[i] == TY_OK) == (r[i] != NULL));
      ty_store_release(r[i]);
    }
    (void)fl;
    ty_store *again = NULL;
    REQ(rt, ty_einsum(rt, "bij,jk,kl->bil", 3, ops, &again));
    REQ(rt, ty_flush(rt));
    ty_store_release(again);
    ty_store_release(a), ty_store_release(b), ty_store_release(c);
    ty_runtime_destroy(rt);
    if (!injected) break; /* past the last allocation */
  }
}

static const check_case cases[] = {
    CASE(batched_matmul_matches_a_triple_loop),
    CASE(einsum_of_a_matrix_product_is_matmul),
    CASE(convolve_same_is_the_centred_direct_sum),
    CASE(products_fail_cleanly_under_allocation_faults),
    CASE(short_k_products_fail_cleanly_under_allocation_faults),
};
CHECK_MAIN(cases)
