/*
 * exec_gpu.h — the GPU processors of the executor (exec_gpu.c): which
 * launches run on a GPU, running them there, and keeping every storage's
 * copies coherent between host memory and device memory.
 *
 * Placement is per launch: the `target` policy axis (cpu | gpu | auto) and
 * what the launch is (a task with a GPU kernel: fused element-wise chains,
 * the element-wise built-ins, fill, copy, cast, the generators, reductions,
 * float matmul) decide; explain says why.
 *
 * Coherence: a storage a GPU has touched carries a ty__gstore (the
 * coherence tracker of gpu_coherence.h and its block on each device).
 * Whoever reads or writes host memory asks first (ty__storage_host): CPU
 * pieces (exec.c), host reads (store.c, npy.c). A storage no GPU has
 * touched has none, and every check is one pointer test.
 *
 * Ordering: the launches of one wave run on different streams of a device
 * (their lanes); at the start of the next wave the streams are joined with
 * events (no host wait, no device-wide synchronisation); a copy between
 * devices makes each side wait for the other with events; a copy to the host
 * is waited for before the host reads. Host-to-device copies
 * read pageable memory, which the driver stages before it returns, so the
 * host may write the source right after.
 */
#ifndef TY_EXEC_GPU_H
#define TY_EXEC_GPU_H

#include "internal.h"

/* Whether launch l may run on a GPU: GPUs are in use and its target is not
 * cpu (the fusion pass then keeps what a generated kernel cannot do out of
 * runs). */
bool ty__gpu_may_run(const ty_runtime *rt, const ty_pending *l);
/* Whether reduction launch l (a built-in sum prod min max) may end a fused
 * run that runs on a GPU: it reduces the whole domain into one element of
 * a dtype the generated kernel reduces (gpu_codegen.h: ty__gred). The run
 * is then one kernel. */
bool ty__gpu_fuses_reduce(const ty_runtime *rt, const ty_pending *l);
/* Whether launch l runs on the GPUs, with the reason for explain. A launch
 * the GPUs cannot run (no GPU, no kernel for it, target=cpu) gets false. */
bool ty__gpu_place(ty_runtime *rt, const ty_pending *l, char *why, size_t whylen);

/* Run launch l on the GPUs: copies in, kernels, on the devices' streams
 * (asynchronous; nothing waits here). e: its explain record (pieces,
 * devices, copies). *fallback when it cannot run there after all (device
 * memory full, a fused run the generated kernel does not do): nothing was
 * changed, run it on the CPU, with the reason in why. Errors are failures of
 * the launch. */
ty_status ty__gpu_run(ty_runtime *rt, ty_pending *l, int lane, ty_record *e, bool *fallback,
                      char *why, size_t whylen);
/* One chunk of a streamed scope (plan/stream.c): launch l over [lo, hi)
 * along dim (dim < 0: its whole domain), an element-wise launch (a fused
 * chain, an element-wise built-in, a generator). The chunk's bytes of every
 * argument are staged: copied into a block of device memory the size of the
 * chunk, the kernel runs, what it wrote is copied back into host memory and
 * waited for, the blocks go back to the pool. The host stays the owner of
 * every byte, so the streamer may free a transient's slice right after, and
 * device memory holds one chunk at a time, whatever the stores' sizes
 * (--fbmem). *fallback (nothing changed) when the chunk cannot run there:
 * not element-wise, or its blocks do not fit. */
ty_status ty__gpu_run_chunk(ty_runtime *rt, ty_pending *l, int dim, int64_t lo, int64_t hi, ty_record *e,
                            bool *fallback, char *why, size_t whylen);
/* Launch l of a wave runs on stream `lane` (its index in the wave, mod the
 * streams) of its GPUs; ty__gpu_join, at the start of each wave (and before
 * host accesses and frees), orders every stream after what earlier waves
 * queued, with events only. */
ty_status ty__gpu_join(ty_runtime *rt);

/* Before host code reads, updates or overwrites bytes [lo, hi) of stg's host
 * memory (TY__HOST_*, internal.h): copies what is valid only on a GPU back
 * and waits for it; a write makes the device copies stale. The host buffer
 * must be allocated. No-op for a storage no GPU touched. */
ty_status ty__storage_host(ty_runtime *rt, ty_storage *stg, uint64_t lo, uint64_t hi, int access);
/* Whether bytes [lo, hi) of stg are valid in host memory now. */
bool ty__storage_host_valid(const ty_storage *stg, uint64_t lo, uint64_t hi);
/* The storage is being freed: give its device blocks back (after the work
 * queued on them) and drop its tracker. */
void ty__storage_gpu_free(ty_runtime *rt, ty_storage *stg);
/* End of a flush: attached host buffers (ty_store_attach) hold their
 * values again, since the application may read them directly. */
ty_status ty__gpu_flush_end(ty_runtime *rt);

/* The entry points above as the executor and the core reach them
 * (rt->devices, installed by runtime.c). */
extern const ty__devices ty__gpu_devices;

#endif
