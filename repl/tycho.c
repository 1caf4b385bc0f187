/*
 * tycho.c — the `tycho` executable: the shell of libtycho_repl with nothing
 * registered beyond the built-in tasks.
 */
#include "tycho_repl.h"

int main(int argc, char **argv) { return ty_shell_main(argc, argv, NULL, NULL); }
