/*
 * ops_matmul_ew.c — a float matrix product with a short inner dimension
 * (k <= TY__MATMUL_EW_K) as element-wise launches:
 *
 *   C = A[:, 0] * B[0, :]  +  A[:, 1] * B[1, :]  +  ...  +  A[:, k-1] * B[k-1, :]
 *
 * each term one "mul" of two broadcast views (A's column p: one element per
 * row, stride 0 along the columns; B's row p: stride 0 along the rows), the
 * terms added left to right ("add"), so that element (i, j) is
 * ((a_i0 b_0j + a_i1 b_1j) + a_i2 b_2j) + ..., each product and sum rounded
 * (IEEE, no contraction into FMA): the same bits on any number of
 * processors, for any tiling, fused or not (fuse = false runs the 2k - 1
 * launches one by one and gets the same values).
 *
 * Why: BLAS spends most of a call with k = 2 packing and zeroing (k-means'
 * `data:dot(centroids:t())`, n x 2 times 2 x 10), and its n x k output goes
 * through memory. As element-wise launches the product fuses into the
 * expression that reads it (fusion.md): in k-means the distances
 * `data_dots:expand(2) + centroid_dots:expand(1) - data:dot(centroids:t()) * 2.0`
 * and their argmin become one compiled pass over the points, and the product
 * and its terms are temporaries, never allocated.
 *
 * B's rows are made contiguous first (one copy of the k x n matrix) when they
 * are strided, so that the compiled row kernel (fused_codegen.c's
 * generate2: each argument contiguous along the rows or one element per row)
 * takes them. The launches are marked with the origin "matmul k=<k>", which
 * an error names and explain shows in `fused_ops`.
 */
#include "builtins.h"
#include "internal.h"

#include <stdio.h>

/* A (m, k) and B (k, n) 2-D views (stride 0 on a dim a 1-D operand lacks),
 * both of dtype t; C (m, n) the output, written whole. */
static ty_status terms(ty_runtime *rt, ty_store *A, ty_store *B, ty_store *C, const char *origin) {
  const int64_t m = C->shape[0], n = C->shape[1], k = A->shape[1];
  const int64_t shape[2] = {m, n};
  const ty__builtins *bt = rt->builtins;
  ty_store *acc = NULL;
  ty_status st = TY_OK;
  for (int64_t p = 0; p < k && !st; p++) {
    ty_store *ap = NULL, *bp = NULL, *prod = NULL, *sum = NULL;
    const int64_t as[2] = {A->strides[0], 0}, bs[2] = {0, B->strides[1]};
    st = ty__store_view(rt, A, 2, shape, as, A->offset + p * A->strides[1], &ap);
    if (!st) st = ty__store_view(rt, B, 2, shape, bs, B->offset + p * B->strides[0], &bp);
    /* the last term goes straight into C when it is the only one */
    if (!st) {
      if (k == 1) {
        prod = C;
        ty_store_retain(C);
      } else {
        st = ty__store_new(rt, C->dtype, 2, shape, &prod);
      }
    }
    if (!st) {
      ty_arg args[3] = {
          {.store = prod, .priv = TY_PRIV_OUT, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
          {.store = ap, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
          {.store = bp, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED}};
      ty_launch_desc d = {.task = bt->op[TY_OP_MUL], .ndim = 2, .domain = shape, .nargs = 3,
                          .args = args, .origin = origin};
      st = ty_launch(rt, &d);
    }
    if (!st && p > 0) {
      if (p == k - 1) {
        sum = C;
        ty_store_retain(C);
      } else {
        st = ty__store_new(rt, C->dtype, 2, shape, &sum);
      }
      if (!st) {
        ty_arg args[3] = {
            {.store = sum, .priv = TY_PRIV_OUT, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
            {.store = acc, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED},
            {.store = prod, .priv = TY_PRIV_IN, .redop = TY_REDOP_NONE, .proj = TY_PROJ_ALIGNED}};
        ty_launch_desc d = {.task = bt->op[TY_OP_ADD], .ndim = 2, .domain = shape, .nargs = 3,
                            .args = args, .origin = origin};
        st = ty_launch(rt, &d);
      }
      ty_store_release(acc);
      ty_store_release(prod);
      acc = sum;
    } else {
      ty_store_release(acc);
      acc = prod;
    }
    ty_store_release(ap);
    ty_store_release(bp);
  }
  ty_store_release(acc);
  return st;
}

/* x (1-D or 2-D) in dtype t as a (rows, cols) view, a 1-D x as a row
 * (as_row) or a column; a strided 2-D B (as_row false, its rows not
 * contiguous and n > 1) is copied to a contiguous matrix first. */
static ty_status operand(ty_runtime *rt, ty_store *x, ty_dtype t, bool as_row, ty_store **out) {
  ty_store *c = NULL;
  ty_status st = TY_OK;
  const bool strided_rows = !as_row && x->ndim == 2 && x->shape[1] > 1 && x->strides[1] != 1;
  if (x->dtype != t || strided_rows) {
    st = ty__store_new(rt, t, x->ndim, x->shape, &c);
    if (!st) st = ty_copy(rt, c, x);
    if (st) {
      ty_store_release(c);
      return st;
    }
  } else {
    c = x;
    ty_store_retain(c);
  }
  int64_t shape[2], strides[2];
  ty__matrix_dims(c, as_row, shape, strides);
  st = ty__store_view(rt, c, 2, shape, strides, c->offset, out);
  ty_store_release(c);
  return st;
}

bool ty__matmul_ew_fits(ty_dtype t, int64_t k) {
  return (t == TY_F64 || t == TY_F32) && k >= 1 && k <= TY__MATMUL_EW_K;
}

ty_status ty__matmul_ew(ty_runtime *rt, ty_store *a, ty_store *b, ty_dtype t, ty_store *res) {
  ty_store *A = NULL, *B = NULL, *C = NULL;
  ty_status st = operand(rt, a, t, true, &A);
  if (!st) st = operand(rt, b, t, false, &B);
  if (!st) {
    if (res->ndim == 2) { /* res itself: a view of it would keep it from being a temporary */
      C = res;
      ty_store_retain(C);
    } else {
      const int64_t cshape[2] = {A->shape[0], B->shape[1]};
      /* stride 0 on the extent-1 dims a 1-D operand dropped (res 1-D or 0-d) */
      const int64_t s0 = res->ndim == 1 ? res->strides[0] : 0;
      const int64_t cstr[2] = {a->ndim == 2 ? s0 : 0, a->ndim == 2 ? 0 : s0};
      st = ty__store_view(rt, res, 2, cshape, cstr, res->offset, &C);
    }
  }
  if (!st) {
    char origin[32];
    snprintf(origin, sizeof origin, "matmul k=%lld", (long long)A->shape[1]);
    st = terms(rt, A, B, C, origin);
  }
  ty_store_release(A);
  ty_store_release(B);
  ty_store_release(C);
  return st;
}
