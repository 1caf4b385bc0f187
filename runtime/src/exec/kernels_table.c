/*
 * kernels_table.c — the entry points of one instruction-set level's copy of
 * the kernel set, as the table isa.c chooses from (isa.h). Compiled once per
 * level like the kernels themselves: inside this file the names are the
 * level's own (ty__unary_loops_avx2 in the avx2 copy).
 */
#include "kernels.h"

#ifndef TY_ISA_LEVEL
#error "kernels_table.c is compiled with -DTY_ISA_LEVEL=<level> (runtime/CMakeLists.txt)"
#endif

#define TABLE_NAME TY__ISA_CAT2(ty__kernels, TY_ISA_LEVEL)

extern const ty__kernels TABLE_NAME;
const ty__kernels TABLE_NAME = {
    .unary_loops = ty__unary_loops,
    .unary_loops_fast = ty__unary_loops_fast,
    .binary_loops = ty__binary_loops,
    .binary_loops_fast = ty__binary_loops_fast,
    .where_loops = ty__where_loops,
    .cast_loops = ty__cast_loops,
    .fill_loops = ty__fill_loops,
    .reduce_loops = ty__reduce_loops,
    .argmin_loops = ty__argmin_loops,
    .argmax_loops = ty__argmax_loops,
    .reduce_variant = ty__reduce_variant,
    .argreduce_variant = ty__argreduce_variant,
    .random_variant = ty__random_variant,
    .arange_variant = ty__arange_variant,
    .linspace_variant = ty__linspace_variant,
    .fused_variant = ty__fused_variant,
    .convolve_variant = ty__convolve_variant,
    .gemv_chain_variant = ty__gemv_chain_variant,
    .thin_dot = ty__thin_dot,
    .thin_acc = ty__thin_acc,
    .thin_accs = ty__thin_accs,
};
