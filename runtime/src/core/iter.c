/*
 * iter.c — n-d iteration over strided operands, one innermost run at a time.
 *
 * Every element-wise and reduction kernel is a 1-D loop (ty_loop1d) over n
 * elements with one byte stride per operand. ty__foreach turns an n-d box into
 * the fewest such runs:
 *  - a box with a zero extent makes no call at all;
 *  - dims of extent 1 are dropped (their strides never matter);
 *  - neighbouring dims d, d+1 are merged when, for EVERY operand,
 *    stride[d] == stride[d+1] * shape[d+1] (this includes broadcast dims, where
 *    both strides are 0), so a contiguous 4096x4096 box is one run of 16M
 *    elements and a row broadcast against a matrix stays one run per row;
 *  - a box with no dim left (0-d, or all extents 1) is one call with n = 1.
 * Dims keep their C order (the last dim is the innermost run): the caller's
 * layout decides which run is inner, so a reduction whose output has stride 0
 * on the last dim gets reduction runs, and one with stride 0 on the first dim
 * gets element-wise accumulation runs over rows (both vectorise).
 * The loop never modifies `base`; fn gets its own copy of the pointers.
 */
#include "internal.h"

/* The run's pointers are copied for each call (fn may change its copy) by
 * a loop of 8-byte moves. GCC turns such a loop into a memcpy of nops * 8
 * bytes, which the portable build's -mmemcpy-strategy=vector_loop (top
 * CMakeLists.txt) expands as 16-byte moves with a byte-by-byte tail: ~100
 * instructions a call for 3 operands, a fifth of the interpreted 2-D
 * stencil of cg 256² (bench/README, "Interpreted CG: session 26"). */
#if defined(__GNUC__) && !defined(__clang__)
#define TY__NO_MEMCPY_IDIOM __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define TY__NO_MEMCPY_IDIOM
#endif

TY__NO_MEMCPY_IDIOM void ty__foreach(int ndim, const int64_t *shape, int nops, char *const *base,
                                     const int64_t (*strides)[TY_MAX_RANK], ty_loop1d fn,
                                     const void *aux) {
  int64_t sh[TY_MAX_RANK];
  int64_t st[TY_MAX_ARGS][TY_MAX_RANK];
  char *ptrs[TY_MAX_ARGS], *run[TY_MAX_ARGS];
  int64_t inner[TY_MAX_ARGS];
  int nd = 0;

  if (nops <= 0 || nops > TY_MAX_ARGS) return;
  for (int d = 0; d < ndim; d++)
    if (shape[d] == 0) return;

  /* drop extent-1 dims, then merge from the inside out */
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < nops && merge; k++)
        merge = st[k][nd - 1] == strides[k][d] * shape[d];
      if (merge) {
        sh[nd - 1] *= shape[d];
        for (int k = 0; k < nops; k++) st[k][nd - 1] = strides[k][d];
        continue;
      }
    }
    sh[nd] = shape[d];
    for (int k = 0; k < nops; k++) st[k][nd] = strides[k][d];
    nd++;
  }

  for (int k = 0; k < nops; k++) ptrs[k] = base[k];
  if (nd == 0) {
    for (int k = 0; k < nops; k++) {
      inner[k] = 0;
      run[k] = ptrs[k];
    }
    fn(1, run, inner, aux);
    return;
  }

  const int64_t n = sh[nd - 1];
  for (int k = 0; k < nops; k++) inner[k] = st[k][nd - 1];
  int64_t idx[TY_MAX_RANK] = {0};
  for (;;) {
    for (int k = 0; k < nops; k++) run[k] = ptrs[k];
    fn(n, run, inner, aux);
    /* odometer over the outer dims nd-2 .. 0 */
    int d = nd - 2;
    for (; d >= 0; d--) {
      if (++idx[d] < sh[d]) {
        for (int k = 0; k < nops; k++) ptrs[k] += st[k][d];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < nops; k++) ptrs[k] -= st[k][d] * (sh[d] - 1);
    }
    if (d < 0) return;
  }
}
