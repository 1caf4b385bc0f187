/*
 * dist_matmul.c — a split matmul's operands on several ranks (docs/mpi.md):
 * what each rank lacks, not whole operands.
 *
 * A matmul launch C = A B (kernels_linalg.c) has C aligned and A, B read
 * whole by every piece. A piece of C's rows reads A's same rows (all its
 * columns) and every element of B: each element of C is one dot product of
 * a row of A and a column of B, in the k order of one process, so it needs
 * the whole row and the whole column on the rank that computes it (cutting
 * k among ranks would change the bits). Rules, for a split launch:
 *  - A (argument 1) split among ranks is read by rows: each rank receives
 *    the rows of its pieces of C that other ranks hold (dist_data.c's
 *    READ_ROWS, a halo: with A cut by rows as C is, half a row block per
 *    rank boundary at most), never the whole of A. Then A's record becomes
 *    the rows of C's pieces (ty__dist_rows_record): a rank holds those rows
 *    now, so the next product with A (a loop's M x) receives nothing.
 *  - B (argument 2) split among ranks is made whole, as before: every rank
 *    with a piece of C needs all of it, and whole it stays (a vector of a
 *    matrix-vector product: the smaller operand).
 * So a split operand is never gathered whole when its rows suffice, and at
 * most one operand (B) is gathered whole. A launch run whole on every rank
 * (a small C) still makes both whole.
 */
#include "internal.h"
#include "kernels.h"
#include "prepared.h"

bool ty__dist_rows_arg(const ty_pending *l, int i) {
  if (i != 1 || l->nargs != 3 || l->task->cpu != ty__matmul_variant || l->ndim < 2) return false;
  const ty_arg *a = &l->args[1];
  if (a->proj != TY_PROJ_WHOLE || a->priv != TY_PRIV_IN || a->store->ndim != l->ndim) return false;
  for (int d = 0; d < l->ndim - 1; d++) /* its batch dims and rows are C's: no broadcast */
    if (a->store->shape[d] != l->domain[d]) return false;
  return true;
}

void ty__dist_rows_box(const ty_pending *l, int i, int64_t *lo, int64_t *hi) {
  const int last = l->ndim - 1;
  lo[last] = 0; /* C's rows (and batch dims), all of A's columns */
  hi[last] = l->args[i].store->shape[last];
}

bool ty__dist_rows_record(const prepared *pr, int i, const ty__split *old, ty__split *out) {
  const ty_store *s = pr->l->args[i].store;
  const int nd = pr->l->ndim;
  if (old->ndim != nd || old->offset != s->offset || old->dtype != s->dtype ||
      pr->tiling.tiles[nd - 1] > 1) /* C cut by columns too (an integer product): no rows */
    return false;
  for (int k = 0; k < nd; k++) /* the record's own view: nothing outside it changes hands */
    if (old->shape[k] != s->shape[k] || old->strides[k] != s->strides[k]) return false;
  *out = *old;
  out->tiling = pr->tiling;
  out->tiling.tiles[nd - 1] = 1; /* whole rows of A: the pieces of C's rows */
  out->by_rows = pr->by_rows;
  return true;
}
