/*
 * fuse.c — the fusion pass (issue 5): not written yet; the window runs as is.
 */
#include "internal.h"

void ty__fuse(ty_runtime *rt) { (void)rt; }
