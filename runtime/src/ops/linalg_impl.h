/*
 * linalg_impl.h — one matrix of each linalg operation, written once for a
 * float type and included twice by kernels_lapack.c: with T = double, the
 * LAPACK d routines (LA(gesv) -> LAPACKE_dgesv) and names ending in _f64,
 * then T = float with the s routines and _f32.
 *
 * Every function gets the matrix in column-major scratch (LAPACK's layout,
 * so LAPACKE transposes nothing), calls LAPACK, and writes its outputs in
 * C order at their offsets of the output row `o` (la_layout). It returns 0,
 * or a ty_ctx_fail status naming the condition. solve, inv, det, slogdet
 * and cholesky copy the matrix as it is, in C order, which LAPACK reads as
 * its transpose, and solve the transposed problem (see each): no
 * transposing copy in or out (at 4096^2 the tiled transpose in took
 * ~130 ms of CPU, cholesky's copy out ~70 ms more, of a 550-700 ms call).
 */

/* The copies between C order and LAPACK's column-major order are
 * transposes, done in LA_BLOCK^2 tiles (64^2 f64 = 32 KiB: both sides of a
 * tile stay in L1/L2; a plain loop reads a 4096^2 matrix with a 32 KiB
 * stride). */
#ifndef LA_BLOCK
#define LA_BLOCK 64
#endif

/* dst[r + c * ld] = matrix (r, c) of the 3-D tile at batch i (or 0 when the
 * tile's batch is 1: broadcast). */
static void FN(load)(T *dst, int64_t ld, const ty_tile *t, int64_t i) {
  const int64_t rows = t->shape[1], cols = t->shape[2], s1 = t->strides[1], s2 = t->strides[2];
  const T *src = (const T *)t->data + (t->shape[0] == 1 ? 0 : i) * t->strides[0];
  for (int64_t c0 = 0; c0 < cols; c0 += LA_BLOCK)
    for (int64_t r0 = 0; r0 < rows; r0 += LA_BLOCK) {
      const int64_t c1 = c0 + LA_BLOCK < cols ? c0 + LA_BLOCK : cols;
      const int64_t r1 = r0 + LA_BLOCK < rows ? r0 + LA_BLOCK : rows;
      for (int64_t c = c0; c < c1; c++)
        for (int64_t r = r0; r < r1; r++) dst[r + c * ld] = src[r * s1 + c * s2];
    }
}

/* C-order rows x cols at o from column-major src (leading dimension ld). */
static void FN(save)(T *o, const T *src, int64_t ld, int64_t rows, int64_t cols) {
  for (int64_t r0 = 0; r0 < rows; r0 += LA_BLOCK)
    for (int64_t c0 = 0; c0 < cols; c0 += LA_BLOCK) {
      const int64_t c1 = c0 + LA_BLOCK < cols ? c0 + LA_BLOCK : cols;
      const int64_t r1 = r0 + LA_BLOCK < rows ? r0 + LA_BLOCK : rows;
      for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++) o[r * cols + c] = src[r + c * ld];
    }
}

static T *FN(scratch)(int64_t n) { return ty__malloc(sizeof(T) * (size_t)(n > 0 ? n : 1)); }

/* dst[r * ld + c] = matrix (r, c) of the tile at batch i: the matrix in C
 * order, which LAPACK (column-major, leading dimension ld) reads as its
 * transpose. Dense rows are copied whole, on the threads LAPACK will use
 * (a 4096^2 f64 copy: 17-19 ms on one core of the EPYC, 11 ms on two). */
static void FN(load_t)(T *dst, int64_t ld, const ty_tile *t, int64_t i, int threads) {
  const int64_t rows = t->shape[1], cols = t->shape[2], s1 = t->strides[1], s2 = t->strides[2];
  const T *src = (const T *)t->data + (t->shape[0] == 1 ? 0 : i) * t->strides[0];
  if (s2 == 1 && s1 == cols && ld == cols) {
    const int64_t n = rows * cols, chunk = threads > 1 ? (n + threads - 1) / threads : n;
#pragma omp parallel for num_threads(threads) schedule(static, 1) if (threads > 1)
    for (int k = 0; k < threads; k++) {
      const int64_t lo = k * chunk, hi = lo + chunk < n ? lo + chunk : n;
      if (lo < hi) memcpy(dst + lo, src + lo, sizeof(T) * (size_t)(hi - lo));
    }
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    if (s2 == 1) memcpy(dst + r * ld, src + r * s1, sizeof(T) * (size_t)cols);
    else
      for (int64_t c = 0; c < cols; c++) dst[r * ld + c] = src[r * s1 + c * s2];
}

/* LAPACK 3.10+'s gesdd refuses a matrix holding NaN as an argument error;
 * numpy says "SVD did not converge": so is it said here, before the call. */
static bool FN(finite)(const T *a, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(a[i])) return false;
  return true;
}

#define LD(x) ((lapack_int)((x) > 1 ? (x) : 1))

/* solve and inv: getrf + getrs, numpy's gesv, on a's copy in C order w
 * (n^2: FN(lu)), which LAPACK reads as a^T:
 * getrf factors a^T = P L U, a x = b is solved as (a^T)^T x = b by
 * getrs('T'), and inv(a) is inv(a^T) read in C order: getrs('N') on the
 * identity, written straight into the output. The pivoting is then over
 * a's columns instead of its rows: another backward-stable order, results
 * agree with numpy's to rounding. */
static int FN(gesv)(la_item *it, const ty_tile *A, const ty_tile *B, T *o, T *w) {
  const int64_t n = it->a->m, k = it->a->op == LA_INV ? n : it->a->k;
  const bool inv = it->a->op == LA_INV;
  /* b column-major: the output itself for inv and for one right-hand side */
  T *b = inv || k == 1 ? o : FN(scratch)(n * k);
  lapack_int *piv = ty__malloc(sizeof(lapack_int) * (size_t)(n > 0 ? n : 1));
  int st = 0;
  if (!b || !piv) {
    st = la_nomem(it);
  } else {
    FN(load_t)(w, n, A, it->i, it->threads);
    if (!inv) FN(load)(b, n, B, it->i);
    else {
      memset(b, 0, sizeof(T) * (size_t)(n * n));
      for (int64_t j = 0; j < n; j++) b[j * (n + 1)] = 1;
    }
    lapack_int info = n ? LA(getrf)(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, w, LD(n), piv) : 0;
    if (info > 0) st = la_fail(it, "is singular (U(%d,%d) is exactly zero)", (int)info, (int)info);
    else if (info < 0) st = la_fail(it, "LAPACK getrf refused argument %d", (int)-info);
    else if (n) {
      info = LA(getrs)(LAPACK_COL_MAJOR, inv ? 'N' : 'T', (lapack_int)n, (lapack_int)k, w, LD(n), piv,
                       b, LD(n));
      if (info < 0) st = la_fail(it, "LAPACK getrs refused argument %d", (int)-info);
      else if (b != o) FN(save)(o, b, n, n, k);
    }
  }
  free(piv);
  if (b != o) free(b);
  return st;
}

/* det and slogdet from getrf's LU of a^T (a in C order in w, as gesv):
 * det(a^T) = det(a). Sign from the pivots and the diagonal, log|det| the
 * sum of log|u_jj|; det = sign * exp(logdet), as numpy's. */
static int FN(getrf)(la_item *it, const ty_tile *A, T *o, T *w) {
  const int64_t n = it->a->m;
  lapack_int *piv = ty__malloc(sizeof(lapack_int) * (size_t)(n > 0 ? n : 1));
  int st = 0;
  if (!piv) {
    st = la_nomem(it);
  } else {
    T *a = w;
    FN(load_t)(a, n, A, it->i, it->threads);
    lapack_int info = n ? LA(getrf)(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, a, LD(n), piv) : 0;
    T sign = 1, logdet = 0;
    if (info > 0) {
      sign = 0;
      logdet = -INFINITY;
    } else if (info < 0) {
      st = la_fail(it, "LAPACK getrf refused argument %d", (int)-info);
    } else {
      for (int64_t j = 0; j < n; j++) {
        const T u = a[j + j * n];
        if (piv[j] != (lapack_int)(j + 1)) sign = -sign;
        if (u < 0) sign = -sign;
        logdet += LOGT(u < 0 ? -u : u);
      }
    }
    if (it->a->op == LA_DET) o[0] = sign * EXPT(logdet);
    else o[0] = sign, o[1] = logdet;
  }
  free(piv);
  return st;
}

/* In place in the output: a in C order is, to LAPACK, a^T, whose upper
 * triangle is a's lower one (numpy reads the lower); potrf('U') leaves
 * a^T = U^T U there, and U read in C order is L = U^T. Then the strict
 * upper triangle (a's values, untouched) is zeroed. */
static int FN(potrf)(la_item *it, const ty_tile *A, T *o) {
  const int64_t n = it->a->m;
  FN(load_t)(o, n, A, it->i, it->threads);
  lapack_int info = n ? LA(potrf)(LAPACK_COL_MAJOR, 'U', (lapack_int)n, o, LD(n)) : 0;
  int st = 0;
  if (info > 0)
    st = la_fail(it, "is not positive definite (its leading minor of order %d is not)", (int)info);
  else if (info < 0) st = la_fail(it, "LAPACK potrf refused argument %d", (int)-info);
  else {
    const int threads = it->threads;
#pragma omp parallel for num_threads(threads) schedule(static, 64) if (threads > 1)
    for (int64_t r = 0; r < n - 1; r++) memset(o + r * n + r + 1, 0, sizeof(T) * (size_t)(n - r - 1));
  }
  return st;
}

/* geqrf, R from its upper triangle, then Q from the reflectors (orgqr): the
 * first k columns (reduced) or all m (complete), numpy's. */
static int FN(geqrf)(la_item *it, const ty_tile *A, T *o) {
  const int64_t m = it->a->m, n = it->a->n, k = m < n ? m : n;
  const int mode = it->a->flag;
  const int64_t qc = mode == TY_QR_COMPLETE ? m : k, rr = qc;
  T *a = FN(scratch)(m * n + k + m * m);
  if (!a) return la_nomem(it);
  T *tau = a + m * n, *q = tau + k;
  FN(load)(a, m, A, it->i);
  lapack_int info = k ? LA(geqrf)(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, a, LD(m), tau) : 0;
  int st = 0;
  if (info < 0) {
    st = la_fail(it, "LAPACK geqrf refused argument %d", (int)-info);
  } else {
    T *R = mode == TY_QR_R ? o : o + m * qc;
    for (int64_t r = 0; r < rr; r++)
      for (int64_t c = 0; c < n; c++) R[r * n + c] = r <= c ? a[r + c * m] : 0;
    if (mode != TY_QR_R && m > 0) {
      for (int64_t c = 0; c < qc; c++)
        for (int64_t r = 0; r < m; r++) q[r + c * m] = c < n ? a[r + c * m] : 0;
      info = LA(orgqr)(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qc, (lapack_int)k, q, LD(m), tau);
      if (info < 0) st = la_fail(it, "LAPACK orgqr refused argument %d", (int)-info);
      else FN(save)(o, q, m, m, qc);
    }
  }
  free(a);
  return st;
}

/* gesdd (numpy's routine): jobz A (full), S (reduced) or N (values only).
 * Outputs u, s, vh; pinv and matrix_rank are computed from them here. */
static int FN(gesdd)(la_item *it, const ty_tile *A, T *o) {
  const la_args *g = it->a;
  const int64_t m = g->m, n = g->n, k = m < n ? m : n;
  const bool uv = g->op == LA_PINV || (g->op == LA_SVD && (g->flag & 1));
  const bool full = g->op == LA_SVD && (g->flag & 2);
  const int64_t uc = full ? m : k, vr = full ? n : k;
  T *a = FN(scratch)(m * n + k + (uv ? m * uc + vr * n + m * n : 0));
  if (!a) return la_nomem(it);
  T *s = a + m * n, *u = s + k, *vt = u + m * uc, *p = vt + vr * n;
  FN(load)(a, m, A, it->i);
  int st = 0;
  lapack_int info = 0;
  if (!FN(finite)(a, m * n)) {
    st = la_fail(it, "holds NaN or infinity: the SVD did not converge");
    free(a);
    return st;
  }
  if (k > 0)
    info = LA(gesdd)(LAPACK_COL_MAJOR, uv ? (full ? 'A' : 'S') : 'N', (lapack_int)m, (lapack_int)n, a,
                     LD(m), s, u, LD(m), vt, LD(vr));
  else if (uv) { /* an empty matrix: identity factors (full), nothing else */
    for (int64_t c = 0; c < uc; c++)
      for (int64_t r = 0; r < m; r++) u[r + c * m] = r == c;
    for (int64_t c = 0; c < n; c++)
      for (int64_t r = 0; r < vr; r++) vt[r + c * vr] = r == c;
  }
  if (info > 0) st = la_fail(it, "did not converge (SVD)");
  else if (info < 0) st = la_fail(it, "LAPACK gesdd refused argument %d", (int)-info);
  else if (g->op == LA_SVD) {
    if (uv) {
      FN(save)(o, u, m, m, uc);
      memcpy(o + m * uc, s, sizeof(T) * (size_t)k);
      FN(save)(o + m * uc + k, vt, vr, vr, n);
    } else {
      memcpy(o, s, sizeof(T) * (size_t)k);
    }
  } else if (g->op == LA_RANK) {
    const T tol = g->tol == g->tol ? (T)g->tol : (k ? s[0] : 0) * (T)(m > n ? m : n) * EPST;
    int64_t r = 0;
    for (int64_t j = 0; j < k; j++) r += s[j] > tol;
    o[0] = (T)r;
  } else { /* pinv = V diag(1/s, 0 where s <= cutoff) U^T: u's columns scaled, one gemm */
    const T cutoff = (T)g->tol * (k ? s[0] : 0);
    for (int64_t j = 0; j < k; j++) {
      const T inv = s[j] > cutoff ? 1 / s[j] : 0;
      for (int64_t r = 0; r < m; r++) u[r + j * m] *= inv;
    }
    if (k > 0 && m > 0 && n > 0)
      GEMM(CblasColMajor, CblasTrans, CblasTrans, (int)n, (int)m, (int)k, 1, vt, (int)LD(k), u,
           (int)LD(m), 0, p, (int)LD(n));
    else
      for (int64_t j = 0; j < m * n; j++) p[j] = 0;
    FN(save)(o, p, n, n, m);
  }
  free(a);
  return st;
}

static int FN(syevd)(la_item *it, const ty_tile *A, T *o) {
  const int64_t n = it->a->m;
  const bool vec = it->a->flag & 1;
  T *a = FN(scratch)(n * n + n);
  if (!a) return la_nomem(it);
  T *w = a + n * n;
  FN(load)(a, n, A, it->i);
  lapack_int info = n ? LA(syevd)(LAPACK_COL_MAJOR, vec ? 'V' : 'N', (it->a->flag & 2) ? 'L' : 'U',
                                  (lapack_int)n, a, LD(n), w)
                      : 0;
  int st = 0;
  if (info > 0) st = la_fail(it, "did not converge (eigenvalues)");
  else if (info < 0) st = la_fail(it, "LAPACK syevd refused argument %d", (int)-info);
  else {
    memcpy(o, w, sizeof(T) * (size_t)n);
    if (vec) FN(save)(o + n, a, n, n, n);
  }
  free(a);
  return st;
}

/* gelsd (numpy's routine): x, the residual sum of squares of each column
 * (rows n..m of gelsd's b, when m > n), the rank and the singular values. */
static int FN(gelsd)(la_item *it, const ty_tile *A, const ty_tile *B, T *o) {
  const int64_t m = it->a->m, n = it->a->n, nrhs = it->a->k, k = m < n ? m : n;
  const int64_t ldb = m > n ? m : n;
  T *a = FN(scratch)(m * n + ldb * nrhs + k);
  if (!a) return la_nomem(it);
  T *b = a + m * n, *s = b + ldb * nrhs;
  for (int64_t j = 0; j < ldb * nrhs; j++) b[j] = 0;
  FN(load)(a, m, A, it->i);
  FN(load)(b, ldb, B, it->i);
  if (!FN(finite)(a, m * n) || !FN(finite)(b, ldb * nrhs)) {
    free(a);
    return la_fail(it, "or b holds NaN or infinity: the SVD in least squares did not converge");
  }
  const T rcond = it->a->tol == it->a->tol ? (T)it->a->tol : EPST * (T)ldb;
  lapack_int rank = 0, info = 0;
  if (k > 0)
    info = LA(gelsd)(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, (lapack_int)nrhs, a, LD(m), b,
                     LD(ldb), s, rcond, &rank);
  int st = 0;
  if (info > 0) st = la_fail(it, "did not converge (SVD in least squares)");
  else if (info < 0) st = la_fail(it, "LAPACK gelsd refused argument %d", (int)-info);
  else {
    FN(save)(o, b, ldb, n, nrhs);
    T *res = o + n * nrhs;
    for (int64_t c = 0; c < nrhs; c++) {
      T sum = 0;
      for (int64_t r = n; r < m; r++) /* an empty a: x = 0, all of b is residual */ sum += b[r + c * ldb] * b[r + c * ldb];
      res[c] = sum;
    }
    res[nrhs] = (T)rank;
    memcpy(res + nrhs + 1, s, sizeof(T) * (size_t)k);
  }
  free(a);
  return st;
}

/* getrf's n^2 work: the pack's after the outputs (la_work), else scratch */
static int FN(lu)(la_item *it, const ty_tile *A, const ty_tile *B, T *o) {
  const int64_t n = it->a->m;
  T *own = NULL, *w = o + la_work_at(it->a);
  if (!la_work(it->a)) {
    own = FN(scratch)(n * n);
    if (!own) return la_nomem(it);
    w = own;
  }
  const int st = it->a->op == LA_SOLVE || it->a->op == LA_INV ? FN(gesv)(it, A, B, o, w)
                                                              : FN(getrf)(it, A, o, w);
  free(own);
  return st;
}

/* o: the matrix's row of the pack */
static int FN(item)(la_item *it, const ty_tile *A, const ty_tile *B, T *o) {
  switch (it->a->op) {
  case LA_SOLVE:
  case LA_INV:
  case LA_DET:
  case LA_SLOGDET: return FN(lu)(it, A, B, o);
  case LA_CHOLESKY: return FN(potrf)(it, A, o);
  case LA_QR: return FN(geqrf)(it, A, o);
  case LA_SVD:
  case LA_PINV:
  case LA_RANK: return FN(gesdd)(it, A, o);
  case LA_EIGH: return FN(syevd)(it, A, o);
  case LA_LSTSQ: return FN(gelsd)(it, A, B, o);
  default: return la_fail(it, "unknown operation %d", it->a->op);
  }
}

#undef LD
