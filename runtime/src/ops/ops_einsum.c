/*
 * ops_einsum.c — numpy's einsum for 1 to 3 operands (tycho/products.h),
 * composed of views, reductions, element-wise launches and batched matmul.
 *
 * The spec is parsed into one label per dim of each operand: letters are
 * labels 0..51 in ASCII order (A-Z, then a-z: numpy's order for the implicit
 * output), the dims of "..." labels 52.. (right-aligned across operands, so
 * they broadcast). Then:
 *  1. each operand becomes a view with one dim per distinct label: a repeated
 *     label is a diagonal (the strides add), and an extent-1 dim of a label
 *     that is longer elsewhere gets stride 0 (broadcast);
 *  2. labels of one operand that no other operand and not the output has are
 *     summed away (a "sum" reduction per label);
 *  3. two operands contract: labels in both that are kept (in the output or
 *     in the third operand) are batch dims, labels in both that are not kept
 *     are summed, the others are free dims. No summed label: one broadcast
 *     multiplication. Summed labels but no free dims: multiplication and sum
 *     (a fused mul + reduction). Otherwise one batched matmul of the
 *     operands as (batch..., free, summed) and (batch..., summed, free)
 *     matrices (views when the strides allow, ty__as_batched_matrix);
 *     three operands contract the pair with the smallest intermediate
 *     first, then the third;
 *  4. the result is permuted to the output's order and copied into a fresh
 *     store of numpy's result dtype (unless it is already that store).
 * Integer and bool sums are taken in i64 and cast back at the end: wrapping
 * arithmetic commutes with the cast, and a bool result is "any product is
 * true" (the counts are non-negative), which are numpy's values.
 */
#include "internal.h"

#include "tycho/products.h"

#include <string.h>

#define NLETTERS 52
#define NLABELS (NLETTERS + TY_MAX_RANK)
#define FN "ty_einsum"

typedef struct term {
  ty_store *s; /* owned */
  int n;
  uint8_t lab[TY_MAX_RANK];
} term;

static int letter(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return NLETTERS / 2 + (c - 'a');
  return -1;
}

static char label_char(int l) {
  return l < NLETTERS / 2 ? (char)('A' + l) : l < NLETTERS ? (char)('a' + l - NLETTERS / 2) : '.';
}

static bool has(const term *t, int l) {
  for (int i = 0; i < t->n; i++)
    if (t->lab[i] == l) return true;
  return false;
}

/* Parse one subscript list (no ',' or '-'): letters into lab, "..." marked
 * at *ell (the position it holds among the labels; -1 when none). */
static ty_status parse_term(ty_runtime *rt, const char *p, size_t len, int *nlab, int *lab,
                            int *ell, const char *what) {
  *nlab = 0;
  *ell = -1;
  for (size_t i = 0; i < len; i++) {
    if (p[i] == ' ') continue;
    if (p[i] == '.') {
      if (*ell >= 0 || i + 2 >= len || p[i + 1] != '.' || p[i + 2] != '.')
        return ty__fail(rt, TY_EINVAL, "%s: %s has a '.' that is not one \"...\"", FN, what);
      *ell = *nlab;
      i += 2;
      continue;
    }
    const int l = letter(p[i]);
    if (l < 0)
      return ty__fail(rt, TY_EINVAL, "%s: %s has the character '%c': labels are letters a-z A-Z",
                      FN, what, p[i]);
    if (*nlab >= TY_MAX_RANK)
      return ty__fail(rt, TY_ELIMIT, "%s: %s has more than %d labels", FN, what, TY_MAX_RANK);
    lab[(*nlab)++] = l;
  }
  return TY_OK;
}

/* t's store viewed with dims for `order` (n labels): a label t has keeps its
 * stride (0 where its extent is 1 and the label's is not), a label it lacks
 * gets stride 0. */
static ty_status view_as(ty_runtime *rt, const term *t, const uint8_t *order, int n,
                         const int64_t *extent, ty_store **out) {
  int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK];
  for (int i = 0; i < n; i++) {
    shape[i] = extent[order[i]];
    strides[i] = 0;
    for (int d = 0; d < t->n; d++)
      if (t->lab[d] == order[i] && t->s->shape[d] == shape[i]) strides[i] = t->s->strides[d];
  }
  return ty__store_view(rt, t->s, n, shape, strides, t->s->offset, out);
}

/* Sum t over its labels not in keep (one reduction per label, last first). */
static ty_status sum_away(ty_runtime *rt, term *t, const bool *keep) {
  for (int d = t->n - 1; d >= 0; d--) {
    if (keep[t->lab[d]]) continue;
    ty_store *r = NULL;
    ty_status st = ty_reduce(rt, TY_RED_SUM, t->s, d, &r);
    if (st) return st;
    ty_store_release(t->s);
    t->s = r;
    memmove(t->lab + d, t->lab + d + 1, (size_t)(t->n - d - 1));
    t->n--;
  }
  return TY_OK;
}

/* Contract x and y into *r; keep: the labels that must survive. */
static ty_status contract(ty_runtime *rt, term *x, term *y, const bool *keep,
                          const int64_t *extent, term *r) {
  uint8_t batch[TY_MAX_RANK], sum[TY_MAX_RANK], fx[TY_MAX_RANK], fy[TY_MAX_RANK];
  int nb = 0, ns = 0, nx = 0, ny = 0;
  bool xkeep[NLABELS], ykeep[NLABELS];
  for (int l = 0; l < NLABELS; l++) xkeep[l] = ykeep[l] = keep[l];
  for (int d = 0; d < x->n; d++)
    if (has(y, x->lab[d])) xkeep[x->lab[d]] = true;
  for (int d = 0; d < y->n; d++)
    if (has(x, y->lab[d])) ykeep[y->lab[d]] = true;
  ty_status st = sum_away(rt, x, xkeep);
  if (!st) st = sum_away(rt, y, ykeep);
  if (st) return st;
  for (int d = 0; d < x->n; d++) {
    const int l = x->lab[d];
    if (!has(y, l)) fx[nx++] = (uint8_t)l;
    else if (keep[l]) batch[nb++] = (uint8_t)l;
    else sum[ns++] = (uint8_t)l;
  }
  for (int d = 0; d < y->n; d++)
    if (!has(x, y->lab[d])) fy[ny++] = y->lab[d];
  if (nb + nx + ny + ns > TY_MAX_RANK && (ns == 0 || nx + ny == 0))
    return ty__fail(rt, TY_ELIMIT, "%s: a product of more than %d labels", FN, TY_MAX_RANK);
  uint8_t order[TY_MAX_RANK];
  int n = 0;
  ty_store *vx = NULL, *vy = NULL, *mx = NULL, *my = NULL, *p = NULL;
  if (ns == 0 || nx + ny == 0) {
    /* element-wise: (batch, free x, free y, summed) then a sum per summed label */
    for (int i = 0; i < nb; i++) order[n++] = batch[i];
    for (int i = 0; i < nx; i++) order[n++] = fx[i];
    for (int i = 0; i < ny; i++) order[n++] = fy[i];
    for (int i = 0; i < ns; i++) order[n++] = sum[i];
    st = view_as(rt, x, order, n, extent, &vx);
    if (!st) st = view_as(rt, y, order, n, extent, &vy);
    if (!st) st = ty_binary(rt, TY_OP_MUL, vx, vy, &p);
    for (int i = 0; i < ns && !st; i++) {
      ty_store *s = NULL;
      st = ty_reduce(rt, TY_RED_SUM, p, p->ndim - 1, &s);
      ty_store_release(p);
      p = s;
    }
    n -= ns;
  } else {
    /* batched matmul: x as (batch, free x, summed), y as (batch, summed, free y) */
    uint8_t ox[TY_MAX_RANK], oy[TY_MAX_RANK];
    int kx = 0, ky = 0;
    for (int i = 0; i < nb; i++) ox[kx++] = oy[ky++] = batch[i];
    for (int i = 0; i < nx; i++) ox[kx++] = fx[i];
    for (int i = 0; i < ns; i++) ox[kx++] = oy[ky++] = sum[i];
    for (int i = 0; i < ny; i++) oy[ky++] = fy[i];
    for (int i = 0; i < nb; i++) order[n++] = batch[i];
    for (int i = 0; i < nx; i++) order[n++] = fx[i];
    for (int i = 0; i < ny; i++) order[n++] = fy[i];
    st = view_as(rt, x, ox, kx, extent, &vx);
    if (!st) st = view_as(rt, y, oy, ky, extent, &vy);
    if (!st) st = ty__as_batched_matrix(rt, vx, nb, nx, &mx);
    if (!st) st = ty__as_batched_matrix(rt, vy, nb, ns, &my);
    ty_store *c = NULL;
    if (!st) st = ty_matmul(rt, mx, my, &c);
    if (!st) {
      int64_t shape[TY_MAX_RANK];
      for (int i = 0; i < n; i++) shape[i] = extent[order[i]];
      st = ty_store_reshape(rt, c, n, shape, &p); /* c is fresh: contiguous */
    }
    ty_store_release(c);
  }
  ty_store_release(vx);
  ty_store_release(vy);
  ty_store_release(mx);
  ty_store_release(my);
  if (st) {
    ty_store_release(p);
    return st;
  }
  r->s = p;
  r->n = n;
  memcpy(r->lab, order, (size_t)n);
  return TY_OK;
}

/* Elements of the intermediate that contracting x and y would make. */
static double pair_size(const term *x, const term *y, const bool *keep, const int64_t *extent) {
  double size = 1;
  bool seen[NLABELS] = {false};
  for (int k = 0; k < 2; k++) {
    const term *t = k ? y : x;
    for (int d = 0; d < t->n; d++) {
      const int l = t->lab[d];
      if (seen[l] || !keep[l]) continue;
      seen[l] = true;
      size *= (double)extent[l];
    }
  }
  return size;
}

static void release_terms(term *t, int n) {
  for (int i = 0; i < n; i++) {
    ty_store_release(t[i].s);
    t[i].s = NULL;
  }
}

ty_status ty_einsum(ty_runtime *rt, const char *spec, int nops, ty_store *const *ops,
                    ty_store **out) {
  if (!rt) return TY_EINVAL;
  if (rt->destroyed) return ty__fail(rt, TY_EINVAL, "%s: the runtime was destroyed", FN);
  if (!out) return ty__fail(rt, TY_EINVAL, "%s: out is NULL", FN);
  *out = NULL;
  if (!spec) return ty__fail(rt, TY_EINVAL, "%s: spec is NULL", FN);
  if (nops < 1 || nops > TY_EINSUM_MAX_OPERANDS || !ops)
    return ty__fail(rt, TY_EINVAL, "%s: %d operands (1 to %d)", FN, nops, TY_EINSUM_MAX_OPERANDS);
  for (int i = 0; i < nops; i++) {
    if (!ops[i]) return ty__fail(rt, TY_EINVAL, "%s: operand %d is NULL", FN, i + 1);
    if (ops[i]->rt != rt)
      return ty__fail(rt, TY_EINVAL, "%s: operand %d belongs to another runtime", FN, i + 1);
  }
  /* split "in1,in2->out" */
  const char *arrow = strstr(spec, "->");
  const size_t inlen = arrow ? (size_t)(arrow - spec) : strlen(spec);
  if (arrow && strstr(arrow + 2, "->"))
    return ty__fail(rt, TY_EINVAL, "%s: spec \"%s\" has more than one \"->\"", FN, spec);
  int nlab[TY_EINSUM_MAX_OPERANDS], lab[TY_EINSUM_MAX_OPERANDS][TY_MAX_RANK], ell[TY_EINSUM_MAX_OPERANDS];
  int nterms = 0;
  size_t start = 0;
  ty_status st = TY_OK;
  for (size_t i = 0; i <= inlen && !st; i++) {
    if (i < inlen && spec[i] != ',') continue;
    if (nterms == nops)
      return ty__fail(rt, TY_EINVAL, "%s: spec \"%s\" has more operands than the %d given", FN,
                      spec, nops);
    char what[48];
    snprintf(what, sizeof what, "operand %d's subscripts", nterms + 1);
    st = parse_term(rt, spec + start, i - start, &nlab[nterms], lab[nterms], &ell[nterms], what);
    nterms++;
    start = i + 1;
  }
  if (st) return st;
  if (nterms != nops)
    return ty__fail(rt, TY_EINVAL, "%s: spec \"%s\" has %d operands, %d given", FN, spec, nterms,
                    nops);
  /* dims covered by "...", right-aligned across operands */
  int nell = 0, edims[TY_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < nops; i++) {
    const int nd = ops[i]->ndim;
    if (ell[i] < 0 ? nd != nlab[i] : nd < nlab[i])
      return ty__fail(rt, TY_ESHAPE, "%s: operand %d has %d dims but its subscripts name %d%s", FN,
                      i + 1, nd, nlab[i], ell[i] < 0 ? " (no \"...\" for the others)" : " and \"...\"");
    edims[i] = ell[i] < 0 ? 0 : nd - nlab[i];
    if (edims[i] > nell) nell = edims[i];
  }
  /* every operand's labels, dim by dim, and each label's extent */
  term t[TY_EINSUM_MAX_OPERANDS];
  memset(t, 0, sizeof t);
  int64_t extent[NLABELS];
  int count[NLABELS] = {0};
  for (int l = 0; l < NLABELS; l++) extent[l] = -1;
  for (int i = 0; i < nops; i++) {
    const ty_store *s = ops[i];
    int d = 0;
    for (int k = 0; k <= nlab[i]; k++) {
      if (k == ell[i])
        for (int e = 0; e < edims[i]; e++) t[i].lab[d++] = (uint8_t)(NLETTERS + nell - edims[i] + e);
      if (k < nlab[i]) t[i].lab[d++] = (uint8_t)lab[i][k];
    }
    t[i].n = d;
    for (d = 0; d < s->ndim; d++) {
      const int l = t[i].lab[d];
      count[l]++;
      const int64_t e = s->shape[d];
      if (extent[l] < 0 || extent[l] == 1) {
        extent[l] = extent[l] < 0 || e != 1 ? e : extent[l];
      } else if (e != 1 && e != extent[l]) {
        char sh[256];
        ty__shape_str(s->ndim, s->shape, sh, sizeof sh);
        return ty__fail(rt, TY_ESHAPE,
                        "%s: label '%c' has extents %lld and %lld (the latter in operand %d, shape %s)",
                        FN, label_char(l), (long long)extent[l], (long long)e, i + 1, sh);
      }
    }
  }
  /* the output's labels */
  uint8_t olab[TY_MAX_RANK];
  int on = 0;
  bool inout[NLABELS] = {false};
  if (arrow) {
    int onl, ol[TY_MAX_RANK], oell;
    st = parse_term(rt, arrow + 2, strlen(arrow + 2), &onl, ol, &oell, "the output's subscripts");
    if (st) return st;
    if (oell < 0 && nell > 0)
      return ty__fail(rt, TY_ESHAPE,
                      "%s: the operands have dims under \"...\" but the output names no \"...\"", FN);
    for (int k = 0; k <= onl; k++) {
      if (k == oell)
        for (int e = 0; e < nell; e++) olab[on++] = (uint8_t)(NLETTERS + e);
      if (k == onl) break;
      const int l = ol[k];
      if (count[l] == 0)
        return ty__fail(rt, TY_EINVAL, "%s: output label '%c' is in no operand", FN, label_char(l));
      if (inout[l])
        return ty__fail(rt, TY_EINVAL, "%s: output label '%c' appears twice", FN, label_char(l));
      if (on >= TY_MAX_RANK)
        return ty__fail(rt, TY_ELIMIT, "%s: more than %d output labels", FN, TY_MAX_RANK);
      olab[on++] = (uint8_t)l;
      inout[l] = true;
    }
    for (int e = 0; e < nell; e++) inout[NLETTERS + e] = true;
  } else {
    for (int e = 0; e < nell; e++) olab[on++] = (uint8_t)(NLETTERS + e), inout[NLETTERS + e] = true;
    for (int l = 0; l < NLETTERS; l++)
      if (count[l] == 1) {
        if (on >= TY_MAX_RANK)
          return ty__fail(rt, TY_ELIMIT, "%s: more than %d output labels", FN, TY_MAX_RANK);
        olab[on++] = (uint8_t)l, inout[l] = true;
      }
  }
  ty_dtype rtype = ops[0]->dtype;
  for (int i = 1; i < nops; i++) rtype = ty_dtype_promote(rtype, ops[i]->dtype);

  /* 1. one dim per distinct label: diagonals and broadcast dims */
  for (int i = 0; i < nops && !st; i++) {
    const ty_store *s = ops[i];
    term u = {.n = 0};
    int64_t shape[TY_MAX_RANK], strides[TY_MAX_RANK], own[TY_MAX_RANK];
    for (int d = 0; d < s->ndim; d++) {
      const int l = t[i].lab[d];
      int k = 0;
      while (k < u.n && u.lab[k] != l) k++;
      if (k < u.n) { /* a repeated label: the diagonal */
        if (s->shape[d] != own[k]) {
          char sh[256];
          ty__shape_str(s->ndim, s->shape, sh, sizeof sh);
          st = ty__fail(rt, TY_ESHAPE,
                        "%s: label '%c' repeats in operand %d over dims of extents %lld and %lld "
                        "(shape %s)", FN, label_char(l), i + 1, (long long)own[k],
                        (long long)s->shape[d], sh);
          break;
        }
        strides[k] += s->strides[d];
        continue;
      }
      u.lab[u.n] = (uint8_t)l;
      own[u.n] = s->shape[d];
      shape[u.n] = extent[l];
      strides[u.n++] = s->shape[d] == extent[l] ? s->strides[d] : 0;
    }
    if (!st) st = ty__store_view(rt, ops[i], u.n, shape, strides, s->offset, &t[i].s);
    if (!st) memcpy(t[i].lab, u.lab, sizeof u.lab), t[i].n = u.n;
  }
  /* 2. labels only one operand has and the output lacks */
  for (int i = 0; i < nops && !st; i++) {
    bool keep[NLABELS];
    for (int l = 0; l < NLABELS; l++) keep[l] = inout[l];
    for (int j = 0; j < nops; j++)
      for (int d = 0; j != i && d < t[j].n; d++) keep[t[j].lab[d]] = true;
    st = sum_away(rt, &t[i], keep);
  }
  /* 3. contractions */
  term r = {.s = NULL};
  if (!st && nops == 1) {
    r = t[0];
    t[0].s = NULL;
  } else if (!st && nops == 2) {
    st = contract(rt, &t[0], &t[1], inout, extent, &r);
  } else if (!st) {
    /* the pair with the smallest intermediate first */
    int best = 0;
    double best_size = 0;
    for (int p = 0; p < 3; p++) {
      const int i = p == 2 ? 1 : 0, j = p == 0 ? 1 : 2, k = 3 - i - j;
      bool keep[NLABELS];
      for (int l = 0; l < NLABELS; l++) keep[l] = inout[l] || has(&t[k], l);
      const double size = pair_size(&t[i], &t[j], keep, extent);
      if (p == 0 || size < best_size) best = p, best_size = size;
    }
    const int i = best == 2 ? 1 : 0, j = best == 0 ? 1 : 2, k = 3 - i - j;
    bool keep[NLABELS];
    for (int l = 0; l < NLABELS; l++) keep[l] = inout[l] || has(&t[k], l);
    term m = {.s = NULL};
    st = contract(rt, &t[i], &t[j], keep, extent, &m);
    if (!st) st = contract(rt, &m, &t[k], inout, extent, &r);
    release_terms(&m, 1);
  }
  release_terms(t, nops);
  if (st) {
    release_terms(&r, 1);
    return st;
  }
  /* 4. the output's order and dtype, in a fresh store */
  bool same = r.n == on && r.s->dtype == rtype && ty_store_is_contiguous(r.s) && nops > 1;
  for (int i = 0; same && i < on; i++) same = r.lab[i] == olab[i];
  if (same) {
    *out = r.s;
    return TY_OK;
  }
  ty_store *v = NULL;
  st = view_as(rt, &r, olab, on, extent, &v);
  if (!st) st = ty_cast(rt, v, rtype, out);
  ty_store_release(v);
  release_terms(&r, 1);
  return st;
}
