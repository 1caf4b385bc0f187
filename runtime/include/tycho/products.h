/*
 * tycho/products.h — numpy's products and convolutions: dot, tensordot,
 * outer, inner, vdot, kron, trace, einsum, convolve and correlate. ty_matmul
 * (tycho.h) does numpy's batched matmul for operands of any rank.
 *
 * Same conventions as tycho.h: 0-based axes (negative counts from the end
 * where said), ty_status results, one reference handed back through `out`.
 * Every product is composed of launches the runtime already has (the
 * "matmul" task for contractions, element-wise and reduction launches for
 * the rest, so they fuse and partition), except convolve and correlate,
 * which are one "convolve" launch. Dtypes follow numpy's result_type of the
 * operands (bool products are logical: any true product), except trace,
 * which sums (ty_reduce's dtypes).
 */
#ifndef TYCHO_PRODUCTS_H
#define TYCHO_PRODUCTS_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

/* numpy's dot: a 0-d operand multiplies; 1-D and 2-D operands are ty_matmul;
 * otherwise the sum over a's last axis and b's second-to-last (b's only axis
 * when b is 1-D), the result's shape a's other dims then b's. */
ty_status ty_dot(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
/* numpy's tensordot: sums over a's axes axes_a[i] paired with b's axes_b[i]
 * (n pairs, 0-based, negative from the end; extents must match); the result
 * has a's other axes, then b's, in order. */
ty_status ty_tensordot(ty_runtime *rt, ty_store *a, ty_store *b, int n, const int *axes_a,
                       const int *axes_b, ty_store **out);
/* out[i, j] = a.flat[i] * b.flat[j]. */
ty_status ty_outer(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
/* numpy's inner: the sum over the last axes of both (a 0-d operand multiplies). */
ty_status ty_inner(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
/* The dot product of the flattened operands (same size), a 0-d store. */
ty_status ty_vdot(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
/* The Kronecker product (the operand of fewer dims gets leading 1s); ranks
 * up to TY_MAX_RANK / 2. */
ty_status ty_kron(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
/* The sum of the diagonal of axes (axis1, axis2) at `offset` (above the
 * main diagonal when positive); the result has the other axes. */
ty_status ty_trace(ty_runtime *rt, ty_store *a, int64_t offset, int axis1, int axis2,
                   ty_store **out);

/* numpy's einsum for 1 to 3 operands: "ij,jk->ik", implicit output ("ij,jk"
 * is "ij,jk->ik": the labels seen once, in ASCII order), repeated labels in
 * one operand (a diagonal), labels summed away, "..." (broadcast dims).
 * Extents of one label must match or be 1. The result is a new store. */
#define TY_EINSUM_MAX_OPERANDS 3
ty_status ty_einsum(ty_runtime *rt, const char *spec, int nops, ty_store *const *ops,
                    ty_store **out);

typedef enum ty_conv_mode {
  TY_CONV_FULL = 0, /* every overlap: n + m - 1 per dim */
  TY_CONV_SAME,     /* 1-D: max(n, m) (numpy); N-D: a's shape, centred (scipy) */
  TY_CONV_VALID     /* full overlaps only: max(n, m) - min(n, m) + 1 */
} ty_conv_mode;
ty_status ty_conv_mode_parse(const char *s, ty_conv_mode *out);
/* Discrete linear convolution. 1-D operands follow numpy.convolve (the
 * operands are swapped when v is longer); operands of one rank >= 2 follow
 * scipy.signal.convolve (valid: one operand at least as large as the other
 * in every dim). Direct sums, each output element adding its terms in one
 * fixed order: the same bits under any partition. */
ty_status ty_convolve(ty_runtime *rt, ty_store *a, ty_store *v, ty_conv_mode mode,
                      ty_store **out);
/* Cross-correlation: numpy.correlate for 1-D (c[k] = sum_n a[n + k] v[n];
 * when v is longer the result is reversed, as numpy's), and
 * scipy.signal.correlate for N-D. */
ty_status ty_correlate(ty_runtime *rt, ty_store *a, ty_store *v, ty_conv_mode mode,
                       ty_store **out);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_PRODUCTS_H */
