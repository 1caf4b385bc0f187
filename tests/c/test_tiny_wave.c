/*
 * test_tiny_wave.c — a wave too small to share among workers runs on the
 * flushing thread (exec.c, ty__tiny_wave): the rule, and a program whose
 * waves of small independent launches give the same bits as on one
 * processor, each of their launches on processor 0.
 */
#include "check.h"
#include "internal.h"
#include "prepared.h"

#include <tycho/task.h>
#include <tycho/tycho.h>

#include <stdlib.h>
#include <string.h>

/* ---- the rule ------------------------------------------------------------------ */

typedef struct fake {
  ty_task task;
  ty_pending l;
  ty_record rec;
} fake;

static void fake_launch(fake *f, prepared *pr, unsigned flags, int64_t bytes, int pieces) {
  memset(f, 0, sizeof *f);
  memset(pr, 0, sizeof *pr);
  f->task.flags = flags;
  f->l.task = &f->task;
  f->l.pol = &f->l.own_pol;
  f->l.own_pol.p.min_chunk = (int64_t)64 << 10;
  f->rec.bytes = bytes;
  pr->l = &f->l;
  pr->explain = &f->rec;
  pr->tiling.pieces = pieces;
  pr->first = 0;
  pr->last = pieces;
}

TEST(tiny_wave_rule) {
  fake *f = calloc(3, sizeof *f);
  prepared *pr = calloc(3, sizeof *pr);
  ty_status st[3] = {TY_OK, TY_OK, TY_OK};
  CHECK(f && pr);
  const unsigned B = TY__TASK_BYTES_BOUND | TY_TASK_POINTWISE;
  /* two 32 KiB element-wise launches: 64 KiB, the default min_chunk */
  fake_launch(&f[0], &pr[0], B, 32 << 10, 1);
  fake_launch(&f[1], &pr[1], B, 32 << 10, 1);
  CHECK(ty__tiny_wave(pr, st, 2));
  /* one byte more: shared */
  f[1].rec.bytes++;
  CHECK(!ty__tiny_wave(pr, st, 2));
  f[1].rec.bytes--;
  /* the smallest min_chunk of the wave decides */
  f[1].l.own_pol.p.min_chunk = 60 << 10;
  CHECK(!ty__tiny_wave(pr, st, 2));
  f[1].l.own_pol.p.min_chunk = (int64_t)64 << 10;
  /* a user task (time not known from its bytes), a split launch, OpenMP */
  f[1].task.flags = TY_TASK_POINTWISE;
  CHECK(!ty__tiny_wave(pr, st, 2));
  f[1].task.flags = B;
  pr[1].tiling.pieces = 2;
  pr[1].last = 2;
  CHECK(!ty__tiny_wave(pr, st, 2));
  pr[1].tiling.pieces = 1;
  pr[1].last = 1;
  pr[1].omp = true;
  CHECK(!ty__tiny_wave(pr, st, 2));
  pr[1].omp = false;
  /* launches that run nothing here do not count: failed, skipped, on a GPU */
  fake_launch(&f[2], &pr[2], TY_TASK_POINTWISE, (int64_t)1 << 30, 4);
  st[2] = TY_EINVAL;
  CHECK(ty__tiny_wave(pr, st, 3));
  st[2] = TY_OK;
  pr[2].skip = true;
  CHECK(ty__tiny_wave(pr, st, 3));
  pr[2].skip = false;
  pr[2].gpu = true;
  CHECK(ty__tiny_wave(pr, st, 3));
  pr[2].gpu = false;
  CHECK(!ty__tiny_wave(pr, st, 3));
  free(f);
  free(pr);
}

/* ---- a program ----------------------------------------------------------------- */

/* Four independent chains x * (c + 1) + (c + 1) of n elements each (fusion off, so
 * that each op is a launch of its own), summed into one 0-d store; favor
 * max-concurrency puts the chains' launches side by side in waves. The
 * explain entries of the flush are copied into ex (up to *nex). */
static double chains(int cpus, int64_t n, ty_explain_entry *ex, int *nex) {
  ty_config cfg = {.cpus = cpus, .window = 256};
  ty_runtime *rt = NULL;
  CHECK(ty_runtime_create(&cfg, &rt) == TY_OK);
  ty_policy p = {.set = TY_POL_FAVOR | TY_POL_FUSE, .favor = TY_FAVOR_MAX_CONCURRENCY, .fuse = false};
  CHECK(ty_scope_push(rt, &p, "scope at test") == TY_OK);
  ty_store *x, *acc = NULL;
  CHECK(ty_arange(rt, TY_F64, 0.5, 0.001, n, &x) == TY_OK);
  CHECK(ty_flush(rt) == TY_OK);
  for (int c = 0; c < 4; c++) {
    ty_store *k, *y, *z;
    CHECK(ty_scalar_f64(rt, TY_F64, c + 1.0, &k) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_MUL, x, k, &y) == TY_OK);
    CHECK(ty_binary(rt, TY_OP_ADD, y, k, &z) == TY_OK);
    ty_store_release(y);
    ty_store_release(k);
    if (acc) {
      CHECK(ty_binary(rt, TY_OP_ADD, acc, z, &y) == TY_OK);
      ty_store_release(acc);
      ty_store_release(z);
      acc = y;
    } else {
      acc = z;
    }
  }
  ty_store *s;
  CHECK(ty_reduce(rt, TY_RED_SUM, acc, -1, &s) == TY_OK);
  CHECK(ty_scope_pop(rt) == TY_OK);
  ty_store_release(acc);
  ty_store_release(x);
  CHECK(ty_flush(rt) == TY_OK);
  ty_flush_stats fs;
  ty_last_flush_stats(rt, &fs);
  CHECK(fs.concurrent > 0); /* waves of two or more launches */
  *nex = ty_explain(rt, *nex, ex);
  ty_value v;
  CHECK(ty_item(rt, s, &v) == TY_OK);
  ty_store_release(s);
  ty_runtime_destroy(rt);
  return v.f;
}

TEST(tiny_waves_same_bits_on_processor_zero) {
  enum { KEEP = 64 };
  ty_explain_entry *ex = calloc(KEEP, sizeof *ex);
  CHECK(ex != NULL);
  int nex = KEEP;
  /* 1000 f64: 8 KiB per launch, four side by side 32 KiB, within 64 KiB */
  const double one = chains(1, 1000, ex, &nex);
  nex = KEEP;
  const double four = chains(4, 1000, ex, &nex);
  CHECK(one == four);
  /* the sum of (c + 1) x + (c + 1) over c = 0..3 and x = 0.5 + 0.001 i,
   * i < 1000: 10 * sum(x) + 10000 = 19995 (numpy: 19995.0) */
  CHECK(one > 19995.0 - 1e-6 && one < 19995.0 + 1e-6);
  /* the launches of the last flush in waves of two or more: processor 0
   * (a busy machine may give the flushing thread every slot of a shared
   * wave too, so this part passes without the path; tiny_wave_rule fails) */
  int width[64] = {0}, in_waves = 0;
  const uint64_t last = ex[nex - 1].flush.flush;
  for (int i = 0; i < nex; i++)
    if (ex[i].flush.flush == last && ex[i].wave >= 0 && ex[i].wave < 64) width[ex[i].wave]++;
  for (int i = 0; i < nex; i++) {
    if (ex[i].flush.flush != last || ex[i].wave < 0 || ex[i].wave >= 64 || width[ex[i].wave] < 2)
      continue;
    CHECK_EQ_INT(ex[i].pieces, 1);
    CHECK_EQ_INT(ex[i].processor, 0);
    in_waves++;
  }
  CHECK(in_waves >= 8); /* the four mul side by side, then the four add */
  free(ex);
}

static const check_case cases[] = {
    CASE(tiny_wave_rule),
    CASE(tiny_waves_same_bits_on_processor_zero),
};
CHECK_MAIN(cases)
