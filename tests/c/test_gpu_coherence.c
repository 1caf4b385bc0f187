/*
 * test_gpu_coherence.c — the coherence bookkeeping of gpu_coherence.c:
 * sequences of CPU and GPU tasks on the same stores and the copies each
 * needs, zero fills of never-written bytes, several GPUs, eviction, tile
 * ranges, and a randomised comparison against a byte-by-byte model.
 * Pure data structure: runs everywhere, no GPU.
 */
#include "check.h"

#include "gpu_coherence.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define H TY__COH_HOST
#define D0 TY__COH_DEV(0)
#define D1 TY__COH_DEV(1)
#define BIT(p) (1u << (p))

/* a store of 8 pieces of 1000 bytes */
#define PIECE 1000
#define LO(k) ((uint64_t)(k) * PIECE)
#define HI(k) ((uint64_t)(k + 1) * PIECE)

static void check_copy(const ty__coh_copies *c, int i, int src, int dst, uint64_t lo, uint64_t hi) {
  CHECK(i < c->n);
  if (i >= c->n) return;
  CHECK_EQ_INT(c->v[i].src, src);
  CHECK_EQ_INT(c->v[i].dst, dst);
  CHECK_EQ_INT(c->v[i].lo, lo);
  CHECK_EQ_INT(c->v[i].hi, hi);
}

TEST(gpu_write_then_cpu_reads_only_its_piece) {
  ty__coh_obj o;
  ty__coh_copies c = {0};
  ty__coh_init(&o, 8 * PIECE, 0);
  /* a GPU task writes the whole store: nothing to copy in */
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 8 * PIECE, D0, TY__COH_DISCARD, &c), TY_OK);
  CHECK_EQ_INT(c.n, 0);
  CHECK(ty__coh_valid(&o, 0, 8 * PIECE, D0));
  CHECK(!ty__coh_valid(&o, 0, 1, H));
  /* a CPU task reads piece 2: that piece comes back, nothing else */
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(2), HI(2), H, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, D0, H, LO(2), HI(2));
  CHECK_EQ_INT(ty__coh_at(&o, LO(2)), BIT(H) | BIT(D0));
  CHECK_EQ_INT(ty__coh_at(&o, LO(3)), BIT(D0));
  /* reading it again copies nothing */
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(2), HI(2), H, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 0);
  /* a CPU task updates piece 3 in place: fetched, then the GPU copy is stale */
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(3), HI(3), H, TY__COH_READWRITE, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, D0, H, LO(3), HI(3));
  CHECK_EQ_INT(ty__coh_at(&o, LO(3)), BIT(H));
  /* the GPU reads everything: only piece 3 goes back up */
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 8 * PIECE, D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, H, D0, LO(3), HI(3));
  CHECK(ty__coh_valid(&o, 0, 8 * PIECE, D0));
  CHECK_EQ_INT(c.bytes[D0 + 1][H], 2 * PIECE); /* totals over the whole sequence */
  CHECK_EQ_INT(c.bytes[H + 1][D0], PIECE);
  /* segments: [0,2) d0, [2,4) both, [4,8) d0 */
  CHECK_EQ_INT(o.nseg, 3);
  ty__coh_copies_free(&c);
  ty__coh_free(&o);
}

TEST(cpu_and_gpu_alternate_on_two_stores) {
  /* x = random (cpu); y = exp(x) (gpu); x[piece 5] = 0 (cpu); z = x + y (gpu); print(z) (cpu) */
  ty__coh_obj x, y, z;
  ty__coh_copies c = {0};
  ty__coh_init(&x, 8 * PIECE, 0);
  ty__coh_init(&y, 8 * PIECE, 0);
  ty__coh_init(&z, 8 * PIECE, 0);
  CHECK_EQ_INT(ty__coh_acquire(&x, 0, 8 * PIECE, H, TY__COH_DISCARD, &c), TY_OK);
  CHECK_EQ_INT(ty__coh_acquire(&x, 0, 8 * PIECE, D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(ty__coh_acquire(&y, 0, 8 * PIECE, D0, TY__COH_DISCARD, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, H, D0, 0, 8 * PIECE);
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&x, LO(5), HI(5), H, TY__COH_DISCARD, &c), TY_OK);
  CHECK_EQ_INT(c.n, 0);
  CHECK_EQ_INT(ty__coh_at(&x, LO(5)), BIT(H));
  CHECK_EQ_INT(ty__coh_at(&x, LO(4)), BIT(H) | BIT(D0));
  /* z = x + y on the GPU: x's piece 5 is stale there */
  CHECK_EQ_INT(ty__coh_acquire(&x, 0, 8 * PIECE, D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(ty__coh_acquire(&y, 0, 8 * PIECE, D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(ty__coh_acquire(&z, 0, 8 * PIECE, D0, TY__COH_DISCARD, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, H, D0, LO(5), HI(5));
  CHECK_EQ_INT(x.nseg, 1); /* valid on both everywhere again: one segment */
  /* print(z) reads all of z on the host */
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&z, 0, 8 * PIECE, H, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, D0, H, 0, 8 * PIECE);
  ty__coh_copies_free(&c);
  ty__coh_free(&x);
  ty__coh_free(&y);
  ty__coh_free(&z);
}

TEST(never_written_bytes_are_zero_filled) {
  ty__coh_obj o;
  ty__coh_copies c = {0};
  ty__coh_init(&o, 8 * PIECE, 0);
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(1), HI(3), D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, -1, D0, LO(1), HI(3));
  /* partly written: the rest is still zeros, the written part copies */
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(4), HI(4), H, TY__COH_DISCARD, &c), TY_OK);
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(3), HI(5), D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 2); /* piece 3 is already there (zeros) */
  check_copy(&c, 0, H, D0, LO(4), HI(4));
  check_copy(&c, 1, -1, D0, LO(5), HI(5));
  /* a store made from host data starts valid on the host */
  ty__coh_obj h;
  ty__coh_init(&h, 100, BIT(H));
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&h, 0, 100, D1, TY__COH_READ, &c), TY_OK);
  check_copy(&c, 0, H, D1, 0, 100);
  ty__coh_copies_free(&c);
  ty__coh_free(&o);
  ty__coh_free(&h);
}

TEST(two_gpus_copy_between_devices_and_coalesce) {
  ty__coh_obj o;
  ty__coh_copies c = {0};
  ty__coh_init(&o, 8 * PIECE, 0);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 8 * PIECE, D0, TY__COH_DISCARD, &c), TY_OK);
  /* task mode: GPU 1 works on piece 0, then overwrites piece 1 */
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(0), HI(0), D1, TY__COH_READ, &c), TY_OK);
  check_copy(&c, 0, D0, D1, LO(0), HI(0));
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(1), HI(1), D1, TY__COH_DISCARD, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 8 * PIECE, D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, D1, D0, LO(1), HI(1));
  /* the host reads everything: three segments, one source (device 0), one copy */
  CHECK_EQ_INT(o.nseg, 2);
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 8 * PIECE, H, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, D0, H, 0, 8 * PIECE);
  CHECK_EQ_INT(ty__coh_places(&o), BIT(H) | BIT(D0) | BIT(D1));
  ty__coh_copies_free(&c);
  ty__coh_free(&o);
}

TEST(eviction_writes_back_only_what_lives_nowhere_else) {
  ty__coh_obj o;
  ty__coh_copies c = {0};
  ty__coh_init(&o, 8 * PIECE, BIT(H));
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 8 * PIECE, D0, TY__COH_READ, &c), TY_OK);
  CHECK_EQ_INT(ty__coh_acquire(&o, LO(6), HI(7), D0, TY__COH_READWRITE, &c), TY_OK);
  ty__coh_copies_reset(&c);
  CHECK_EQ_INT(ty__coh_evict(&o, D0, &c), TY_OK);
  CHECK_EQ_INT(c.n, 1);
  check_copy(&c, 0, D0, H, LO(6), HI(7));
  CHECK_EQ_INT(ty__coh_places(&o), BIT(H));
  CHECK_EQ_INT(o.nseg, 1);
  CHECK_EQ_INT(ty__coh_evict(&o, H, &c), TY_ERANGE); /* the host is never evicted */
  ty__coh_copies_free(&c);
  ty__coh_free(&o);
}

TEST(bad_ranges_and_places_are_refused) {
  ty__coh_obj o;
  ty__coh_init(&o, 100, 0);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 101, H, TY__COH_READ, NULL), TY_ERANGE);
  CHECK_EQ_INT(ty__coh_acquire(&o, 50, 40, H, TY__COH_READ, NULL), TY_ERANGE);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 10, TY__COH_PLACES, TY__COH_READ, NULL), TY_ERANGE);
  CHECK_EQ_INT(ty__coh_acquire(&o, 0, 10, -1, TY__COH_READ, NULL), TY_ERANGE);
  CHECK_EQ_INT(ty__coh_acquire(&o, 10, 10, H, TY__COH_READ, NULL), TY_OK); /* empty */
  CHECK_EQ_INT(o.nseg, 1);
  ty__coh_free(&o);
}

TEST(tile_ranges) {
  uint64_t lo, hi;
  bool dense;
  /* rows 2..4 of a 10 x 8 f64 matrix: dense */
  int64_t sh[2] = {3, 8}, st[2] = {8, 1};
  ty__coh_tile_range(2, sh, st, 16, 8, &lo, &hi, &dense);
  CHECK_EQ_INT(lo, 128);
  CHECK_EQ_INT(hi, 320);
  CHECK(dense);
  /* column 3 of it: strided, the range has holes */
  int64_t sh2[2] = {10, 1};
  ty__coh_tile_range(2, sh2, st, 3, 8, &lo, &hi, &dense);
  CHECK_EQ_INT(lo, 24);
  CHECK_EQ_INT(hi, (3 + 72 + 1) * 8);
  CHECK(!dense);
  /* a transposed full matrix is dense (every element, another order) */
  int64_t sh3[2] = {8, 10}, st3[2] = {1, 8};
  ty__coh_tile_range(2, sh3, st3, 0, 4, &lo, &hi, &dense);
  CHECK_EQ_INT(hi - lo, 320);
  CHECK(dense);
  /* an inner block of a grid (the stencil's center) is not */
  int64_t sh4[2] = {4, 4}, st4[2] = {6, 1};
  ty__coh_tile_range(2, sh4, st4, 7, 8, &lo, &hi, &dense);
  CHECK_EQ_INT(lo, 56);
  CHECK_EQ_INT(hi, (7 + 18 + 3 + 1) * 8);
  CHECK(!dense);
  /* empty */
  int64_t sh5[2] = {0, 4};
  ty__coh_tile_range(2, sh5, st4, 7, 8, &lo, &hi, &dense);
  CHECK_EQ_INT(hi, lo);
}

/* A byte-by-byte model: masks per byte; an acquire's copies must cover
 * exactly the bytes not valid at the place (unless DISCARD), each from a
 * place valid for it (or -1 for bytes valid nowhere). */
TEST(random_sequences_match_a_byte_model) {
  enum { N = 257, PLACES = 4, STEPS = 4000 };
  ty__cohmask model[N];
  ty__coh_obj o;
  ty__coh_copies c = {0};
  ty__coh_init(&o, N, 0);
  memset(model, 0, sizeof model);
  uint64_t rng = 12345;
#define RND() (rng = rng * 6364136223846793005ULL + 1442695040888963407ULL, (unsigned)(rng >> 33))
  for (int step = 0; step < STEPS; step++) {
    int place = (int)(RND() % PLACES);
    ty__coh_copies_reset(&c);
    if (RND() % 10 == 0 && place != H) {
      CHECK_EQ_INT(ty__coh_evict(&o, place, &c), TY_OK);
      ty__cohmask covered[N];
      memset(covered, 0, sizeof covered);
      for (int k = 0; k < c.n; k++) {
        CHECK_EQ_INT(c.v[k].src, place);
        CHECK_EQ_INT(c.v[k].dst, H);
        for (uint64_t b = c.v[k].lo; b < c.v[k].hi; b++) covered[b] = 1;
      }
      for (int b = 0; b < N; b++) {
        CHECK_EQ_INT(covered[b], model[b] == BIT(place));
        if (model[b] == BIT(place)) model[b] = BIT(H);
        else model[b] &= ~BIT(place);
      }
    } else {
      uint64_t lo = RND() % (N + 1), hi = RND() % (N + 1);
      if (lo > hi) {
        uint64_t t = lo;
        lo = hi;
        hi = t;
      }
      static const ty__cohaccess acc[3] = {TY__COH_READ, TY__COH_READWRITE, TY__COH_DISCARD};
      ty__cohaccess a = acc[RND() % 3];
      CHECK_EQ_INT(ty__coh_acquire(&o, lo, hi, place, a, &c), TY_OK);
      int covered[N];
      memset(covered, 0, sizeof covered);
      for (int k = 0; k < c.n; k++) {
        CHECK_EQ_INT(c.v[k].dst, place);
        CHECK(c.v[k].lo >= lo && c.v[k].hi <= hi && c.v[k].lo < c.v[k].hi);
        for (uint64_t b = c.v[k].lo; b < c.v[k].hi; b++) {
          covered[b]++;
          if (c.v[k].src < 0) CHECK_EQ_INT(model[b], 0);
          else CHECK(model[b] & BIT(c.v[k].src));
        }
      }
      for (uint64_t b = 0; b < N; b++) {
        bool in = b >= lo && b < hi;
        int want = in && a != TY__COH_DISCARD && !(model[b] & BIT(place));
        CHECK_EQ_INT(covered[b], want);
        if (in) model[b] = a == TY__COH_READ ? model[b] | BIT(place) : BIT(place);
      }
    }
    for (uint64_t b = 0; b < N; b++)
      if (ty__coh_at(&o, b) != model[b]) {
        CHECK_EQ_INT(ty__coh_at(&o, b), model[b]);
        break;
      }
    /* merged: neighbours differ */
    for (int k = 1; k < o.nseg; k++) CHECK(o.seg[k].valid != o.seg[k - 1].valid && o.seg[k].lo > o.seg[k - 1].lo);
    if (check_failures) break;
  }
#undef RND
  ty__coh_copies_free(&c);
  ty__coh_free(&o);
}

static const check_case cases[] = {
    CASE(gpu_write_then_cpu_reads_only_its_piece),
    CASE(cpu_and_gpu_alternate_on_two_stores),
    CASE(never_written_bytes_are_zero_filled),
    CASE(two_gpus_copy_between_devices_and_coalesce),
    CASE(eviction_writes_back_only_what_lives_nowhere_else),
    CASE(bad_ranges_and_places_are_refused),
    CASE(tile_ranges),
    CASE(random_sequences_match_a_byte_model),
};

CHECK_MAIN(cases)
