/*
 * linebuf.h — fused launches that write a store in place while reading it
 * through views shifted along the outer dim (linebuf.c): the geometry the
 * fusion pass checks before it makes one, and the executor's three steps.
 */
#ifndef TY_LINEBUF_H
#define TY_LINEBUF_H

#include "internal.h"

enum {
  TY__LB_REACH = 8, /* rows a read may reach back or on from the row it computes */
  TY__LB_MAX_RING = 16 << 20, /* bytes of a piece's row buffer, at most */
};

/* W, written by a launch over `domain`, has rows the line-buffered executor
 * can walk: at least 2 dims and 2 rows, its shape the domain's, positive
 * strides, and rows that do not interleave (the outer stride exceeds the
 * span of a row). */
bool ty__linebuf_target(const ty_store *w, int ndim, const int64_t *domain);

/* R, a read view of W's storage with W's dtype, shape and strides (a shifted
 * copy of W's view): widens *up / *dn to the rows of W that computing one row
 * reads (row i reads rows i - *up .. i + *dn). False when R is another kind
 * of view or reaches more than TY__LB_REACH rows. */
bool ty__linebuf_reach(const ty_store *w, const ty_store *r, int *up, int *dn);

/* The row buffer of reach up fits TY__LB_MAX_RING. */
bool ty__linebuf_fits(const ty_store *w, int ndim, const int64_t *domain, int up);

struct prepared;

/* After the partition: the buffers for the rows next to a neighbouring
 * piece, which are written when every piece has read them. */
ty_status ty__linebuf_prepare(ty_runtime *rt, struct prepared *pr);

/* Run one piece of a line-buffered launch: ctx as run_piece made it (tiles
 * of the piece's box), body the task's variant. Returns its status. */
int ty__linebuf_piece(struct prepared *pr, ty_task_ctx *ctx, ty_variant_fn body);

/* After a wave's launches were prepared: a double-buffered launch with
 * another launch of the wave on its storage copies the rest of the storage
 * in finish, when every piece of the wave ran. */
void ty__linebuf_wave(struct prepared *prs, int count);

/* After every piece ran: write the held rows back when `ok`, free them. */
void ty__linebuf_finish(struct prepared *pr, bool ok);

/* The workers' row buffers (runtime teardown). */
void ty__linebuf_free(ty_runtime *rt);

#endif
