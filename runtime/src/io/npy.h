/*
 * npy.h — the pure part of the .npy format (npy.c): parsing a header, turning
 * file data into a C-order buffer, and writing a header. None of these
 * functions touches a file, a runtime or the heap, so a fuzz target can feed
 * them arbitrary bytes:
 *
 *   ty_npy_header h; char err[256];
 *   if (ty__npy_parse(data, size, size, &h, err, sizeof err) == TY_OK &&
 *       h.data_offset + h.data_bytes <= size) {        // always true on TY_OK
 *     void *dst = malloc(h.data_bytes ? h.data_bytes : 1);
 *     ty__npy_decode(&h, data + h.data_offset, dst);
 *   }
 *
 * (tests/fuzz/fuzz_npy.c does that, and runs the whole loader through
 * ty__npy_load_buffer.)
 *
 * Invariant of a header that parsed (TY_OK): 0 <= ndim <= TY_MAX_RANK, every
 * shape entry >= 0, count = their product (1 for ndim 0) without overflow,
 * data_bytes = count * dtype size <= INT64_MAX, and data_offset + data_bytes
 * <= the file size given to the parser. So a loader that trusts these fields
 * never reads past the file nor allocates more than the file holds.
 */
#ifndef TY_NPY_H
#define TY_NPY_H

#include "tycho/tycho.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest header (preamble + dict + padding) accepted on load: 64 KiB. numpy
 * writes under 1 KiB even at rank 16 (and np.load refuses more than 10000
 * bytes by default); the bound keeps a hostile 4 GiB header length of a
 * version 2.0 file from costing memory. */
#define TY_NPY_MAX_HEADER 65536

typedef struct ty_npy_header {
  int major, minor;           /* format version: 1.0, 2.0 or 3.0 */
  ty_dtype dtype;
  bool fortran_order;
  int ndim;
  int64_t shape[TY_MAX_RANK];
  int64_t count;              /* elements */
  uint64_t data_offset;       /* bytes from the start of the file to the data */
  uint64_t data_bytes;        /* count * dtype size */
} ty_npy_header;

/* The end of the header (= the offset of the data) from the preamble alone:
 * `buf` holds the first `len` bytes of a file of `file_size` bytes (12 bytes
 * are enough). Checks magic, version, and that the header fits the limit and
 * the file. On error: TY_EIO with a message in err (errlen may be 0). */
ty_status ty__npy_header_end(const void *buf, size_t len, uint64_t file_size, uint64_t *end,
                             char *err, size_t errlen);

/* Parse the preamble and header dict of a .npy file: `buf` holds its first
 * `len` bytes (at least up to the header's end, see ty__npy_header_end),
 * `file_size` is the file's total size (the data must fit in it). Errors:
 * TY_EIO (malformed or truncated), TY_EDTYPE (a dtype tycho does not hold:
 * big-endian, complex, structured, ...), TY_ELIMIT (rank above TY_MAX_RANK);
 * the message in err names what is wrong but not the file. */
ty_status ty__npy_parse(const void *buf, size_t len, uint64_t file_size, ty_npy_header *h,
                        char *err, size_t errlen);

/* Copy the file's data (`src`, h->data_bytes bytes) into `dst` in C order:
 * Fortran-order data is transposed, bool bytes are normalised to 0/1. When
 * the data is in C order, src may equal dst (in place); otherwise they must
 * not overlap. */
void ty__npy_decode(const ty_npy_header *h, const void *src, void *dst);

/* Write the preamble and header of a C-order .npy file of this dtype and
 * shape into buf, byte for byte what numpy's np.save writes (version 1.0, or
 * 2.0 when the header does not fit 1.0's 16-bit length; padded so the data
 * starts at a multiple of 64). Returns the bytes written, or 0 when cap is too
 * small (TY_NPY_MAX_HEADER is always enough for rank <= TY_MAX_RANK). */
size_t ty__npy_header_write(ty_dtype t, int ndim, const int64_t *shape, char *buf, size_t cap);

/* The descr string numpy uses for a dtype ("<f8", "|b1", ...). */
const char *ty__npy_descr(ty_dtype t);

/* ty_load_npy on bytes in memory: `buf` holds a whole file of `len` bytes,
 * `name` stands for its path in messages (NULL: "<buffer>"). Same checks,
 * same errors, same store; tests and the fuzz target (tests/fuzz) use it to
 * reach the whole loader without the file system. Fortran-order data is
 * scattered `chunk` bytes at a time as a file's is read (0: the loader's
 * 4 MiB), so a small chunk exercises the walk's resumption. */
ty_status ty__npy_load_buffer(ty_runtime *rt, const void *buf, size_t len, const char *name,
                              size_t chunk, ty_store **out);

#endif /* TY_NPY_H */
