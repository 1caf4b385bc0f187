/*
 * task.c — the task registry. Tasks are looked up by name (a linear scan: a
 * runtime has tens of tasks, and launches hold task pointers, not names).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ty_status ty_task_register(ty_runtime *rt, const ty_task_desc *desc, const ty_task **out) {
  if (out) *out = NULL;
  if (!rt || !desc) return TY_EINVAL;
  if (!desc->name || !*desc->name)
    return ty__fail(rt, TY_EINVAL, "ty_task_register: a task needs a name");
  if (strlen(desc->name) >= TY_MAX_NAME)
    return ty__fail(rt, TY_ELIMIT, "ty_task_register: task name '%.20s...' is longer than %d bytes",
                    desc->name, TY_MAX_NAME - 1);
  if (!desc->cpu)
    return ty__fail(rt, TY_EINVAL,
                    "ty_task_register: task '%s' has no cpu variant (required, also beside "
                    "an omp or gpu variant)",
                    desc->name);
  const ty_policy *tr = &desc->traits;
  if (((tr->set & TY_POL_MODE) && (unsigned)tr->mode > TY_MODE_TASK) ||
      ((tr->set & TY_POL_OVERDECOMPOSE) && tr->overdecompose < 1) ||
      ((tr->set & TY_POL_MIN_CHUNK) && tr->min_chunk < 1) ||
      ((tr->set & TY_POL_FAVOR) && (unsigned)tr->favor > TY_FAVOR_MAX_CONCURRENCY))
    return ty__fail(rt, TY_EINVAL, "ty_task_register: task '%s' has an invalid trait value",
                    desc->name);
  if (ty_task_find(rt, desc->name))
    return ty__fail(rt, TY_EINVAL, "ty_task_register: a task named '%s' already exists", desc->name);
  if (rt->ntasks == rt->cap_tasks) {
    int cap = rt->cap_tasks ? rt->cap_tasks * 2 : 64;
    ty_task **t = ty__realloc(rt->tasks, (size_t)cap * sizeof *t);
    if (!t) return ty__fail(rt, TY_ENOMEM, "ty_task_register: out of memory");
    rt->tasks = t;
    rt->cap_tasks = cap;
  }
  ty_task *t = ty__calloc(1, sizeof *t);
  if (!t) return ty__fail(rt, TY_ENOMEM, "ty_task_register: out of memory");
  snprintf(t->name, sizeof t->name, "%s", desc->name);
  t->cpu = desc->cpu;
  t->omp = desc->omp;
  t->gpu = desc->gpu;
  t->traits = desc->traits;
  t->flags = desc->flags;
  t->release = desc->release;
  if (desc->signature && !(t->signature = ty__strdup(desc->signature))) {
    free(t);
    return ty__fail(rt, TY_ENOMEM, "ty_task_register: out of memory");
  }
  t->data = desc->data;
  t->id = rt->ntasks;
  rt->tasks[rt->ntasks++] = t;
  if (out) *out = t;
  return TY_OK;
}

const ty_task *ty_task_find(const ty_runtime *rt, const char *name) {
  if (!rt || !name) return NULL;
  for (int i = 0; i < rt->ntasks; i++)
    if (strcmp(rt->tasks[i]->name, name) == 0) return rt->tasks[i];
  return NULL;
}

const char *ty_task_name(const ty_task *t) { return t ? t->name : "?"; }
const char *ty_task_signature(const ty_task *t) { return t ? t->signature : NULL; }
const void *ty_task_data(const ty_task *t) { return t ? t->data : NULL; }
unsigned ty_task_flags(const ty_task *t) { return t ? t->flags : 0; }
const ty_policy *ty_task_traits(const ty_task *t) { return t ? &t->traits : NULL; }
ty_variant_fn ty_task_gpu(const ty_task *t) { return t ? t->gpu : NULL; }
const ty_task *ty_task_at(const ty_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->ntasks ? rt->tasks[i] : NULL;
}

void ty__task_free(ty_task *t) {
  if (t->release) t->release((void *)t->data);
  free(t->signature);
  free(t);
}

int ty_ctx_fail(ty_task_ctx *ctx, const char *fmt, ...) {
  if (ctx->errbuf && ctx->errcap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->errbuf, ctx->errcap, fmt, ap);
    va_end(ap);
  }
  return TY_ETASK;
}

void ty_ctx_fail_reached(ty_task_ctx *ctx, uint64_t args) {
  if (!ctx->reach) return;
  ctx->reach->partial = true;
  ctx->reach->args |= args;
}
