/*
 * error.c — the runtime's last error message: a leaf every layer calls.
 *
 * The core never longjmps: a function that fails records a message here and
 * returns its status (DESIGN.md section 5); the Lua binding and hosts read
 * the message back with ty_errmsg. It calls nothing of tycho, so it ties no
 * file to another.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

ty_status ty__fail(ty_runtime *rt, ty_status status, const char *fmt, ...) {
  if (rt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->errmsg, sizeof rt->errmsg, fmt, ap);
    va_end(ap);
  }
  return status;
}

const char *ty_errmsg(const ty_runtime *rt) { return rt ? rt->errmsg : "no runtime"; }
