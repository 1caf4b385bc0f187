/*
 * tycho/linalg.h — dense linear algebra through LAPACK (numpy.linalg's).
 *
 * Every function takes a stack of matrices: the last two dims are the matrix,
 * the leading dims a batch (numpy's broadcasting of a stack), and returns
 * stores of the batch's shape followed by the result's. Floats keep their
 * dtype (f32 through LAPACK's s routines, f64 through d); integers and bool
 * are computed in f64, as numpy does.
 *
 * The work is one launch of the task "linalg" over the batch: each piece
 * factors whole matrices with one single-threaded LAPACK call each, so the
 * result of a matrix does not depend on the pieces or on --cpus. A lone
 * large matrix (a stack of one, m n min(m, n) >= 2^24) whose launch runs
 * alone in its wave (flush before the call, as the Lua binding does) is
 * factored on all --cpus OpenBLAS threads instead: the same bits for a given
 * --cpus, not across --cpus (OpenBLAS's threaded LAPACK rounds differently).
 *
 * A singular matrix (solve, inv) or one that is not positive definite
 * (cholesky) fails the launch with TY_ETASK and a message that names the
 * function, the condition and, for a stack, the matrix ("ty_linalg_solve:
 * matrix 2 of the stack is singular (U(3,3) is exactly zero)"); det and
 * slogdet of a singular matrix are 0 and (0, -inf), as numpy's.
 */
#ifndef TYCHO_LINALG_H
#define TYCHO_LINALG_H

#include "tycho/tycho.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x with a @ x = b. b is a stack of vectors when b->ndim == a->ndim - 1
 * (numpy's rule), else of matrices; batch dims broadcast. */
ty_status ty_linalg_solve(ty_runtime *rt, ty_store *a, ty_store *b, ty_store **out);
ty_status ty_linalg_inv(ty_runtime *rt, ty_store *a, ty_store **out);
ty_status ty_linalg_det(ty_runtime *rt, ty_store *a, ty_store **out);
/* sign (0 for a singular matrix) and log|det| (-inf then). */
ty_status ty_linalg_slogdet(ty_runtime *rt, ty_store *a, ty_store **sign, ty_store **logdet);
/* The lower factor L with a = L L^T (numpy's). */
ty_status ty_linalg_cholesky(ty_runtime *rt, ty_store *a, ty_store **out);

typedef enum ty_qr_mode { TY_QR_REDUCED = 0, TY_QR_COMPLETE, TY_QR_R } ty_qr_mode;
/* q is not written (may be NULL) for TY_QR_R. */
ty_status ty_linalg_qr(ty_runtime *rt, ty_store *a, ty_qr_mode mode, ty_store **q, ty_store **r);
/* s descending; u and vh written when u != NULL (then vh too). */
ty_status ty_linalg_svd(ty_runtime *rt, ty_store *a, bool full_matrices, ty_store **u,
                        ty_store **s, ty_store **vh);
/* Eigenvalues (ascending) of a symmetric matrix read from its lower
 * (lower true, numpy's UPLO="L") or upper triangle; the eigenvectors (the
 * columns of v) when v != NULL. */
ty_status ty_linalg_eigh(ty_runtime *rt, ty_store *a, bool lower, ty_store **w, ty_store **v);
/* numpy's lstsq (2-D a only): rcond < 0 is machine precision, NaN is
 * numpy's default eps * max(m, n). residuals has one value per column of b
 * (numpy's are empty when rank < n or m <= n: the caller decides, rank is a
 * 0-d i64 store). */
ty_status ty_linalg_lstsq(ty_runtime *rt, ty_store *a, ty_store *b, double rcond, ty_store **x,
                          ty_store **residuals, ty_store **rank, ty_store **s);
/* Pseudo-inverse through the SVD; singular values <= rcond * max(s) count as 0. */
ty_status ty_linalg_pinv(ty_runtime *rt, ty_store *a, double rcond, ty_store **out);
/* The number of singular values > tol (NaN: numpy's max(s) * max(m, n) * eps), i64. */
ty_status ty_linalg_matrix_rank(ty_runtime *rt, ty_store *a, double tol, ty_store **out);

#ifdef __cplusplus
}
#endif
#endif /* TYCHO_LINALG_H */
