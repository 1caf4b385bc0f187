/*
 * mc_task.h — the example host's own C task (mc_task.c).
 */
#ifndef MC_TASK_H
#define MC_TASK_H

#include "tycho/tycho.h"

/* Register "mc_integral" (signature "in, out, scalar:i64", trait
 * parallel = all) on rt. */
ty_status mc_register(ty_runtime *rt);

/* The exact value the task estimates: the integral of sin(a x)^2 over [0, 1]. */
double mc_exact(double a);

#endif
