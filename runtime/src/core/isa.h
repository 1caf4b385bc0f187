/*
 * isa.h — the instruction-set levels of the CPU kernels: one table, and the
 * dispatch by which the rest of the core reaches the kernels of the level a
 * process runs with (isa.c chooses it).
 *
 * Why: a default build must run on any x86-64 CPU from the last fifteen years
 * (the library and the shell are compiled for the table's first level), yet
 * the hot loops (element-wise, SLEEF calls, reductions, casts, fills, the
 * fused block interpreter) are worth 2-4x with AVX2 or AVX-512. So the files
 * of the kernel set (runtime/CMakeLists.txt names them) are compiled once per
 * level with that level's flags; the copies of the levels above the first
 * carry the level in every external name (ty__unary_loops_avx2: the rename
 * list below), and each copy exports one ty__kernels table (kernels_table.c)
 * of its entry points. isa.c picks a table once per process, from cpuid,
 * lowered by TYCHO_ISA / --isa; files outside the kernel set call the hot
 * entry points through it (the macros at the end), so `ty__unary_loops[op][t]`
 * reads the same in every file. Helpers that are not hot (ty__reduce_identity,
 * ty__ordered_walk, ...) are called in the first level's copy.
 *
 * The table (CMake reads the second column: keep one level per line):
 *   X(level, compiler flags, f64 lanes of generated code (0: none), cpu check)
 * - baseline = x86-64-v2 (SSE4.2, POPCNT: Nehalem 2008, Bulldozer 2011):
 *   what RHEL 9 requires; every x86-64 server still in service has it, and
 *   the hot code does not depend on it (it is dispatched). v3 would leave out
 *   Sandy/Ivy Bridge and the Atom-class cores that lack AVX2.
 * - avx2 = x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE: Haswell 2013,
 *   Zen 1); the check asks for AVX2, FMA, BMI1 and BMI2, which no CPU has
 *   without the rest.
 * - avx512 = x86-64-v4 (AVX-512 F, BW, CD, DQ, VL: Skylake-SP 2017, Zen 4),
 *   preferring 512-bit vectors (gcc's generic tuning would pick 256).
 * With -DTYCHO_NATIVE=ON the table has one level, "native" (-march=native):
 * a build for the build machine only, as before.
 */
#ifndef TY_ISA_H
#define TY_ISA_H

#ifdef TY_ISA_NATIVE
#if defined(__AVX512F__)
#define TY__NATIVE_LANES 8
#elif defined(__AVX2__)
#define TY__NATIVE_LANES 4
#else
#define TY__NATIVE_LANES 0
#endif
#define TY_ISA_LEVELS(X) X(native, "-march=native", TY__NATIVE_LANES, 1)
#else
/* clang-format off */
#define TY_ISA_LEVELS(X) \
  X(baseline, "-march=x86-64-v2", 0, 1) \
  X(avx2, "-march=x86-64-v3", 4, ty__cpu_has_v3()) \
  X(avx512, "-march=x86-64-v4 -mprefer-vector-width=512", 8, ty__cpu_has_v4() && ty__cpu_has_v3())
/* clang-format on */
#endif

/* ---- names in a level's copy of the kernel set ----------------------------------------
 *
 * TY_ISA_LEVEL names the level a kernel-set file is compiled for;
 * TY__ISA_RENAME (every level but the first) suffixes its external names. A
 * name missing here is defined twice: the link fails (multiple definition). */
#define TY__ISA_CAT3(a, b) a##_##b
#define TY__ISA_CAT2(a, b) TY__ISA_CAT3(a, b)
#define TY__ISA_NAME(s) TY__ISA_CAT2(s, TY_ISA_LEVEL)

#ifdef TY__ISA_RENAME
/* kernels_ew.c */
#define ty__unary_loops TY__ISA_NAME(ty__unary_loops)
#define ty__unary_loops_fast TY__ISA_NAME(ty__unary_loops_fast)
#define ty__binary_loops TY__ISA_NAME(ty__binary_loops)
#define ty__binary_loops_fast TY__ISA_NAME(ty__binary_loops_fast)
#define ty__where_loops TY__ISA_NAME(ty__where_loops)
/* kernels_reduce.c */
#define ty__ostream_init TY__ISA_NAME(ty__ostream_init)
#define ty__ostream_feeds TY__ISA_NAME(ty__ostream_feeds)
#define ty__ostream_feed_dot_f64 TY__ISA_NAME(ty__ostream_feed_dot_f64)
#define ty__ostream_finish TY__ISA_NAME(ty__ostream_finish)
#define ty__ordered_apply TY__ISA_NAME(ty__ordered_apply)
#define ty__reduce_loops TY__ISA_NAME(ty__reduce_loops)
#define ty__reduce_ordered TY__ISA_NAME(ty__reduce_ordered)
#define ty__reduce_scheme TY__ISA_NAME(ty__reduce_scheme)
#define ty__reduce_loop TY__ISA_NAME(ty__reduce_loop)
#define ty__reduce_identity TY__ISA_NAME(ty__reduce_identity)
#define ty__ordered_walk TY__ISA_NAME(ty__ordered_walk)
#define ty__reduce_variant TY__ISA_NAME(ty__reduce_variant)
#define ty__argmin_loops TY__ISA_NAME(ty__argmin_loops)
#define ty__argmax_loops TY__ISA_NAME(ty__argmax_loops)
#define ty__argreduce_variant TY__ISA_NAME(ty__argreduce_variant)
/* kernels_cast.c */
#define ty__f64_to_i64_sat TY__ISA_NAME(ty__f64_to_i64_sat)
#define ty__f64_to_i32_sat TY__ISA_NAME(ty__f64_to_i32_sat)
#define ty__f64_to_u8_sat TY__ISA_NAME(ty__f64_to_u8_sat)
#define ty__f64_to_i8_sat TY__ISA_NAME(ty__f64_to_i8_sat)
#define ty__f64_to_i16_sat TY__ISA_NAME(ty__f64_to_i16_sat)
#define ty__f64_to_u16_sat TY__ISA_NAME(ty__f64_to_u16_sat)
#define ty__f64_to_u32_sat TY__ISA_NAME(ty__f64_to_u32_sat)
#define ty__f64_to_u64_sat TY__ISA_NAME(ty__f64_to_u64_sat)
#define ty__cast_loops TY__ISA_NAME(ty__cast_loops)
/* kernels_fill.c */
#define ty__fill_loops TY__ISA_NAME(ty__fill_loops)
#define ty__random_u01 TY__ISA_NAME(ty__random_u01)
#define ty__random_variant TY__ISA_NAME(ty__random_variant)
#define ty__arange_variant TY__ISA_NAME(ty__arange_variant)
#define ty__linspace_variant TY__ISA_NAME(ty__linspace_variant)
/* fused_cpu.c */
#define ty__fused_variant TY__ISA_NAME(ty__fused_variant)
/* kernels_conv.c */
#define ty__convolve_variant TY__ISA_NAME(ty__convolve_variant)
/* kernels_gemv.c */
#define ty__thin_dot TY__ISA_NAME(ty__thin_dot)
#define ty__thin_acc TY__ISA_NAME(ty__thin_acc)
#define ty__thin_accs TY__ISA_NAME(ty__thin_accs)
#define ty__gemv_chain_variant TY__ISA_NAME(ty__gemv_chain_variant)
#endif

/* ---- choosing a level (isa.c) ----------------------------------------------------------- */

/* cpuid (through the compiler's __builtin_cpu_supports, which also checks
 * that the OS saves the vector registers) */
int ty__cpu_has_v3(void);
int ty__cpu_has_v4(void);

/* The chosen level's index in TY_ISA_LEVELS, its flags (what the run-time
 * code generator compiles with) and its f64 lanes (0: no generated code). */
int ty__isa_index(void);
const char *ty__isa_cflags(void);
int ty__isa_lanes(void);
/* The flags of the first level with that many f64 lanes, whether or not the
 * CPU has it (a test compiling another level's generated code:
 * ty__codegen_source); NULL when no level of this build has that many. */
const char *ty__isa_cflags_of(int lanes);
/* Fixes the process's level from a runtime's config (NULL: no preference).
 * -1 when the process already runs another level. */
int ty__isa_select(const char *ceiling);

#endif /* TY_ISA_H */
