/*
 * tycho.c — the `tycho` executable: the shell of libtycho_repl with nothing
 * registered beyond the built-in tasks; with MPI (TYCHO_MPI), the same shell
 * run on several processes when a launcher started it (mpi.c).
 */
#include "tycho_repl.h"

#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Keep up to 64 MiB of freed memory at the top of the heap rather than
 * giving it back to the system at each free (glibc's default trims past
 * 128 KiB). A loop of small flushes frees and takes back the same few
 * hundred KiB every iteration: CG on 256^2 made one brk pair and ~3 fresh
 * page faults an iteration (`strace -f -c`: 1,075 brk in 1,200
 * iterations; `/usr/bin/time` faults 7,400-9,100 -> 4,200, system time
 * 0.22 -> 0.12 s). Only the shell does this, not the library: a host
 * application keeps its own allocator settings. A user's own choice
 * (MALLOC_TRIM_THRESHOLD_, or GLIBC_TUNABLES naming it) is left alone. */
static void keep_freed_heap(void) {
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD)
  const char *tun = getenv("GLIBC_TUNABLES");
  if (getenv("MALLOC_TRIM_THRESHOLD_") || (tun && strstr(tun, "trim_threshold"))) return;
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

#ifdef TYCHO_MPI
int ty_mpi_main(int argc, char **argv); /* mpi.c */
int main(int argc, char **argv) {
  keep_freed_heap();
  return ty_mpi_main(argc, argv);
}
#else
int main(int argc, char **argv) {
  keep_freed_heap();
  return ty_shell_main(argc, argv, NULL, NULL);
}
#endif
