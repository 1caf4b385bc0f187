/*
 * tycho.c — the `tycho` executable: the shell of libtycho_repl with nothing
 * registered beyond the built-in tasks; with MPI (TYCHO_MPI), the same shell
 * run on several processes when a launcher started it (mpi.c).
 */
#include "tycho_repl.h"

#ifdef TYCHO_MPI
int ty_mpi_main(int argc, char **argv); /* mpi.c */
int main(int argc, char **argv) { return ty_mpi_main(argc, argv); }
#else
int main(int argc, char **argv) { return ty_shell_main(argc, argv, NULL, NULL); }
#endif
