/* nearest_stream.c — the C+OpenMP peer of nearest_stream.lua: the same
 * double loop as nearest.c (a running minimum, no matrix), at its sizes. */
#include "nearest.c"
