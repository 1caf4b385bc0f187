/*
 * test_gpu_alloc.c — the caching device allocator (gpu_alloc.c) on a fake
 * device: size classes, reuse, the --fbmem budget and its out-of-memory
 * message, a device fuller than the budget, and stream-ordered reuse.
 * No GPU needed.
 */
#include "check.h"

#include "gpu_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A device with `capacity` bytes: addresses are handed out upward and
 * remembered, so frees of unknown blocks are caught. */
typedef struct fake {
  size_t capacity, used;
  uint64_t next;
  int allocs, frees, fails;
  uint64_t live[256];
  size_t live_bytes[256];
  int nlive;
  bool events_done;
  int released;
} fake;

static int fake_alloc(void *ud, int dev, size_t bytes, uint64_t *ptr) {
  fake *f = ud;
  (void)dev;
  if (f->used + bytes > f->capacity || f->nlive == 256) {
    f->fails++;
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  }
  f->used += bytes;
  f->allocs++;
  *ptr = f->next;
  f->live[f->nlive] = f->next;
  f->live_bytes[f->nlive++] = bytes;
  f->next += (bytes + 255) / 256 * 256;
  return 0;
}

static void fake_free(void *ud, int dev, uint64_t ptr, size_t bytes) {
  fake *f = ud;
  (void)dev;
  for (int i = 0; i < f->nlive; i++)
    if (f->live[i] == ptr) {
      CHECK_EQ_INT(f->live_bytes[i], bytes);
      f->used -= bytes;
      f->live[i] = f->live[f->nlive - 1];
      f->live_bytes[i] = f->live_bytes[f->nlive - 1];
      f->nlive--;
      f->frees++;
      return;
    }
  CHECK(!"freed a block the device never gave");
}

static bool fake_done(void *ud, void *event) {
  (void)event;
  return ((fake *)ud)->events_done;
}

static void fake_release(void *ud, void *event) {
  (void)event;
  ((fake *)ud)->released++;
}

static ty__gpu_pool *make_pool(fake *f, size_t capacity, size_t budget) {
  memset(f, 0, sizeof *f);
  f->capacity = capacity;
  f->next = 0x7f0000000000ULL;
  ty__dev_ops ops = {f, fake_alloc, fake_free, fake_done, fake_release};
  ty__gpu_pool *p = malloc(sizeof *p);
  ty__gpu_pool_init(p, 0, "Fake H200", budget, &ops);
  return p;
}

#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

TEST(size_classes_waste_at_most_an_eighth) {
  size_t sz;
  CHECK_EQ_INT(ty__gpu_size_class(1, &sz), 0);
  CHECK_EQ_INT(sz, 512);
  CHECK_EQ_INT(ty__gpu_size_class(512, &sz), 0);
  CHECK_EQ_INT(ty__gpu_size_class(513, &sz), 1);
  CHECK_EQ_INT(sz, 576);
  CHECK_EQ_INT(ty__gpu_size_class(1024, &sz), 8);
  CHECK_EQ_INT(sz, 1024);
  CHECK_EQ_INT(ty__gpu_size_class(MiB, &sz), ty__gpu_size_class(MiB - 100, &sz));
  CHECK_EQ_INT(sz, MiB);
  int prev = 0;
  size_t prev_size = 512;
  for (size_t b = 513; b < 64 * MiB; b = b * 9 / 8 + 7) {
    int c = ty__gpu_size_class(b, &sz);
    CHECK(sz >= b);
    CHECK(sz - b <= b / 8 + 1);
    CHECK(c >= prev && c < TY__GPU_CLASSES);
    CHECK(c > prev || sz == prev_size);
    prev = c;
    prev_size = sz;
  }
  /* 80 GB (a 10^10-element f64 store) still has a class */
  CHECK(ty__gpu_size_class((size_t)80e9, &sz) < TY__GPU_CLASSES && sz >= (size_t)80e9);
}

TEST(freed_blocks_are_reused_without_the_device) {
  fake f;
  ty__gpu_pool *p = make_pool(&f, 1024 * MiB, 512 * MiB);
  char err[512];
  ty__gpu_block *a, *b;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 80 * MiB, 1, "store #1", &a, err, sizeof err), TY_OK);
  CHECK_EQ_INT(f.allocs, 1);
  uint64_t where = a->ptr;
  ty__gpu_pool_free(p, a, 1, NULL);
  CHECK_EQ_INT(p->in_use, 0);
  CHECK_EQ_INT(p->cached, 80 * MiB);
  /* the next iteration asks for the same size (or a bit less: same class) */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 80 * MiB - 1000, 1, "store #2", &b, err, sizeof err), TY_OK);
  CHECK(b->ptr == where);
  CHECK_EQ_INT(f.allocs, 1);
  CHECK_EQ_INT(p->hits, 1);
  CHECK_EQ_INT(p->cached, 0);
  CHECK_EQ_INT(p->in_use, 80 * MiB);
  ty__gpu_pool_free(p, b, 1, NULL);
  /* another class is a new allocation */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 40 * MiB, 1, "store #3", &a, err, sizeof err), TY_OK);
  CHECK_EQ_INT(f.allocs, 2);
  ty__gpu_pool_free(p, a, 1, NULL);
  CHECK_EQ_INT(p->peak, 120 * MiB);
  CHECK_EQ_INT(ty__gpu_pool_destroy(p), 0);
  CHECK_EQ_INT(f.nlive, 0);
  CHECK_EQ_INT(f.frees, 2);
  free(p);
}

TEST(budget_gives_back_cache_then_fails_naming_the_store) {
  fake f;
  ty__gpu_pool *p = make_pool(&f, 1024 * MiB, 100 * MiB);
  char err[512] = "";
  ty__gpu_block *a, *b, *c;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 60 * MiB, 7, "store #1 (7864320,) f64", &a, err, sizeof err), TY_OK);
  /* a second 60 MiB store does not fit the 100 MiB budget */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 60 * MiB, 7, "store #2 (7864320,) f64", &b, err, sizeof err), TY_ENOMEM);
  CHECK(b == NULL);
  CHECK_STR_CONTAINS(err, "out of GPU memory on device 0 (Fake H200)");
  CHECK_STR_CONTAINS(err, "store #2 (7864320,) f64 needs 60");
  CHECK_STR_CONTAINS(err, "--fbmem");
  CHECK_STR_CONTAINS(err, "stream");
  CHECK_EQ_INT(f.allocs, 1); /* the device was not even asked */
  /* once the first is freed (cached), a 70 MiB store evicts it */
  ty__gpu_pool_free(p, a, 7, NULL);
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 70 * MiB, 7, "store #3", &c, err, sizeof err), TY_OK);
  CHECK_EQ_INT(f.frees, 1);
  CHECK_EQ_INT(p->cached, 0);
  CHECK(p->in_use + p->cached <= p->budget);
  size_t c70;
  ty__gpu_size_class(70 * MiB, &c70);
  CHECK_EQ_INT(c70, 72 * MiB); /* 64 MiB + one eighth */
  CHECK_EQ_INT(f.used, c70);
  /* small blocks still fit beside it */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 20 * MiB, 7, "store #4", &a, err, sizeof err), TY_OK);
  /* but not a request larger than the whole budget */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 200 * MiB, 7, "store #5", &b, err, sizeof err), TY_ENOMEM);
  CHECK_STR_CONTAINS(err, "store #5");
  ty__gpu_pool_free(p, a, 7, NULL);
  ty__gpu_pool_free(p, c, 7, NULL);
  CHECK_EQ_INT(ty__gpu_pool_destroy(p), 0);
  CHECK_EQ_INT(f.nlive, 0);
  free(p);
}

TEST(device_fuller_than_budget_frees_cache_then_reports) {
  /* another process holds most of the device: the budget is not the limit */
  fake f;
  ty__gpu_pool *p = make_pool(&f, 100 * MiB, 1024 * MiB);
  char err[512] = "";
  ty__gpu_block *a, *b;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 30 * MiB, 1, "store #1", &a, err, sizeof err), TY_OK);
  ty__gpu_pool_free(p, a, 1, NULL);
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 40 * MiB, 1, "store #2", &a, err, sizeof err), TY_OK);
  /* 30 cached + 40 in use + 50 asked > 100 on the device: the cache goes, then it fits */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 50 * MiB, 1, "store #3", &b, err, sizeof err), TY_OK);
  CHECK_EQ_INT(f.fails, 1);
  CHECK_EQ_INT(p->cached, 0);
  /* nothing left to give back: the device's own failure is reported */
  ty__gpu_block *c;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 20 * MiB, 1, "store #4 (2621440,) f64", &c, err, sizeof err), TY_ENOMEM);
  CHECK_STR_CONTAINS(err, "store #4 (2621440,) f64 needs 20");
  CHECK_STR_CONTAINS(err, "the device has no more");
  CHECK_EQ_INT(p->device_failures, 1);
  ty__gpu_pool_free(p, a, 1, NULL);
  ty__gpu_pool_free(p, b, 1, NULL);
  CHECK_EQ_INT(ty__gpu_pool_destroy(p), 0);
  free(p);
}

TEST(other_streams_wait_for_the_free_event) {
  fake f;
  ty__gpu_pool *p = make_pool(&f, 1024 * MiB, 1024 * MiB);
  char err[256];
  ty__gpu_block *a, *b;
  int ev;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, MiB, 1, "x", &a, err, sizeof err), TY_OK);
  uint64_t where = a->ptr;
  ty__gpu_pool_free(p, a, 1, &ev); /* a kernel on stream 1 may still read it */
  f.events_done = false;
  /* stream 2 must not get it yet: a new block */
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, MiB, 2, "y", &b, err, sizeof err), TY_OK);
  CHECK(b->ptr != where);
  CHECK_EQ_INT(f.allocs, 2);
  /* stream 1 may: its own order protects the pending work */
  ty__gpu_block *c;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, MiB, 1, "z", &c, err, sizeof err), TY_OK);
  CHECK(c->ptr == where);
  CHECK_EQ_INT(f.released, 1);
  /* once the event completes, any stream may reuse */
  ty__gpu_pool_free(p, c, 1, &ev);
  f.events_done = true;
  ty__gpu_block *d;
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, MiB, 3, "w", &d, err, sizeof err), TY_OK);
  CHECK(d->ptr == where);
  CHECK_EQ_INT(d->stream, 3);
  ty__gpu_pool_free(p, b, 2, NULL);
  ty__gpu_pool_free(p, d, 3, NULL);
  CHECK_EQ_INT(ty__gpu_pool_destroy(p), 0);
  CHECK_EQ_INT(f.released, 2);
  free(p);
}

TEST(trim_and_leak_count) {
  fake f;
  ty__gpu_pool *p = make_pool(&f, 1024 * MiB, 1024 * MiB);
  char err[256];
  ty__gpu_block *a[6];
  for (int i = 0; i < 6; i++)
    CHECK_EQ_INT(ty__gpu_pool_alloc(p, (size_t)(i + 1) * MiB, 1, "t", &a[i], err, sizeof err), TY_OK);
  for (int i = 0; i < 5; i++) ty__gpu_pool_free(p, a[i], 1, NULL);
  CHECK_EQ_INT(p->cached, 15 * MiB);
  ty__gpu_pool_trim(p, 6 * MiB); /* largest first: 5, 4 go */
  CHECK_EQ_INT(p->cached, 6 * MiB);
  CHECK_EQ_INT(ty__gpu_pool_alloc(p, 0, 1, "zero", &a[0], err, sizeof err), TY_EINVAL);
  CHECK_EQ_INT(ty__gpu_pool_destroy(p), 1); /* a[5] is still out */
  CHECK_EQ_INT(f.nlive, 1);
  free(a[5]); /* the pool's block struct: a test may free it by hand */
  free(p);
}

static const check_case cases[] = {
    CASE(size_classes_waste_at_most_an_eighth),
    CASE(freed_blocks_are_reused_without_the_device),
    CASE(budget_gives_back_cache_then_fails_naming_the_store),
    CASE(device_fuller_than_budget_frees_cache_then_reports),
    CASE(other_streams_wait_for_the_free_event),
    CASE(trim_and_leak_count),
};

CHECK_MAIN(cases)
