/*
 * fuzz_npy.c — libFuzzer target for the .npy reader (runtime/src/io/npy.c).
 *
 * Each input is a whole file. It goes through the pure parser and decoder
 * (ty__npy_parse, ty__npy_decode) and through the whole loader
 * (ty__npy_load_buffer: the code of ty_load_npy less open/fstat, with a
 * 24-byte read chunk so that Fortran-order inputs cross chunk boundaries).
 * Besides ASan and UBSan, the target checks what npy.h promises:
 *
 *  - a header that parses describes data inside the input (rank <= 16,
 *    dims >= 0, count and bytes consistent), so nothing trusts the file
 *    beyond its length;
 *  - a refused input gets TY_EIO, TY_EDTYPE or TY_ELIMIT and a message, and
 *    the loader refuses it with the same status and names the file;
 *  - an accepted input loads into a store of its dtype and shape whose
 *    values are the file's, transposed from Fortran order by a separate,
 *    naive computation here (one index at a time);
 *  - the runtime's budget is 2 KiB, so larger data must fail with TY_ENOMEM
 *    before any allocation; and every load, failed or not, leaves the
 *    runtime's live stores and bytes as they were.
 *
 * Huge allocations are caught by libFuzzer's -malloc_limit_mb (the CTest
 * entry sets 64: a header that made the loader allocate what it claims would
 * exceed it long before the budget check could be bypassed unnoticed).
 */
#include "internal.h"
#include "npy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUDGET 2048 /* bytes of stores: inputs of up to 4 KiB cross it both ways */
#define CHUNK 24    /* bytes per scatter in the loader: 3 f64, 6 f32, 24 u8 */

static ty_runtime *rt;

#define REQUIRE(cond)                                                              \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "fuzz_npy: %s:%d: property failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                              \
      abort();                                                                     \
    }                                                                              \
  } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  ty_config cfg;
  ty_config_init(&cfg, NULL, 0);
  cfg.cpus = 1;
  cfg.gpus = -1;
  cfg.sysmem = BUDGET;
  if (ty_runtime_create(&cfg, &rt) != TY_OK) {
    fprintf(stderr, "fuzz_npy: cannot create a runtime\n");
    abort();
  }
  return 0;
}

/* The C-order values of a parsed file, element by element: the Fortran
 * offset of each C index computed from scratch (no walk, no strides kept). */
static void naive_c_order(const ty_npy_header *h, const unsigned char *src, unsigned char *dst) {
  size_t es = ty_dtype_size(h->dtype);
  for (int64_t i = 0; i < h->count; i++) {
    int64_t rest = i, off = 0;
    if (h->fortran_order) {
      int64_t idx[TY_MAX_RANK];
      for (int d = h->ndim - 1; d >= 0; d--) {
        idx[d] = rest % h->shape[d];
        rest /= h->shape[d];
      }
      for (int d = h->ndim - 1; d >= 0; d--) off = off * h->shape[d] + idx[d];
    } else {
      off = i;
    }
    memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
    if (h->dtype == TY_BOOL) dst[i] = dst[i] != 0;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the pure layer */
  ty_npy_header h;
  char err[256];
  memset(err, 0x55, sizeof err);
  ty_status st = ty__npy_parse(data, size, size, &h, err, sizeof err);
  unsigned char *ref = NULL;
  if (st == TY_OK) {
    REQUIRE(h.ndim >= 0 && h.ndim <= TY_MAX_RANK);
    REQUIRE(h.major >= 1 && h.major <= 3 && h.minor == 0);
    int64_t n = 1;
    for (int d = 0; d < h.ndim; d++) {
      REQUIRE(h.shape[d] >= 0);
      n *= h.shape[d]; /* cannot overflow: the data fits in the input */
    }
    REQUIRE(h.count == n);
    REQUIRE(h.data_bytes == (uint64_t)h.count * ty_dtype_size(h.dtype));
    REQUIRE(h.data_offset <= size && h.data_bytes <= size - h.data_offset);
    uint64_t end;
    REQUIRE(ty__npy_header_end(data, size < 12 ? size : 12, size, &end, NULL, 0) == TY_OK);
    REQUIRE(end == h.data_offset);
    /* exact-size buffers: ASan sees one byte too many */
    ref = malloc(h.data_bytes ? h.data_bytes : 1);
    unsigned char *dec = malloc(h.data_bytes ? h.data_bytes : 1);
    REQUIRE(ref && dec);
    naive_c_order(&h, data + h.data_offset, ref);
    ty__npy_decode(&h, data + h.data_offset, dec);
    REQUIRE(memcmp(ref, dec, h.data_bytes) == 0);
    free(dec);
  } else {
    REQUIRE(st == TY_EIO || st == TY_EDTYPE || st == TY_ELIMIT);
    REQUIRE(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
  }

  /* the whole loader */
  ty_stats before, after;
  ty_get_stats(rt, &before);
  ty_store *s = (ty_store *)&h; /* must be reset to NULL on failure */
  ty_status lst = ty__npy_load_buffer(rt, data, size, "fuzz.npy", CHUNK, &s);
  if (st != TY_OK) {
    REQUIRE(lst == st);
    REQUIRE(s == NULL);
    REQUIRE(strstr(ty_errmsg(rt), "'fuzz.npy'") != NULL);
  } else if (h.data_bytes > BUDGET) {
    REQUIRE(lst == TY_ENOMEM);
    REQUIRE(s == NULL);
    REQUIRE(strstr(ty_errmsg(rt), "'fuzz.npy'") && strstr(ty_errmsg(rt), "budget"));
  } else {
    REQUIRE(lst == TY_OK && s != NULL);
    REQUIRE(ty_store_dtype(s) == h.dtype && ty_store_ndim(s) == h.ndim);
    for (int d = 0; d < h.ndim; d++) REQUIRE(ty_store_shape(s)[d] == h.shape[d]);
    REQUIRE(ty_store_size(s) == h.count);
    unsigned char *got = malloc(h.data_bytes ? h.data_bytes : 1);
    REQUIRE(got && ty_store_read(rt, s, got, h.data_bytes) == TY_OK);
    REQUIRE(memcmp(got, ref, h.data_bytes) == 0);
    free(got);
    ty_store_release(s);
  }
  ty_get_stats(rt, &after);
  REQUIRE(after.stores_live == before.stores_live);
  REQUIRE(after.bytes_live == before.bytes_live);
  REQUIRE(after.bytes_reserved == before.bytes_reserved);
  free(ref);
  return 0;
}
