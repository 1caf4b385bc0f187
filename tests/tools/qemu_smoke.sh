#!/bin/sh
# tests/tools/qemu_smoke.sh TYCHO SCRIPT CACHE — run SCRIPT in the shell TYCHO
# under an emulated Nehalem (x86-64-v2: SSE4.2, no AVX), the oldest CPU a
# default build supports (runtime/src/core/isa.h). Exit 77 (skipped) without
# qemu-x86_64 (Debian: qemu-user). Compiled fused kernels are asked for
# (TYCHO_CODEGEN=always) and must not be made: the baseline level has none,
# since the child compiler would run natively, outside the emulator.
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "qemu-x86_64 not found (Debian package qemu-user): skipped"
  exit 77
fi
rm -rf "$3" && mkdir -p "$3" || exit 1
TYCHO_CODEGEN=always TYCHO_CACHE_DIR=$3 qemu-x86_64 -cpu Nehalem "$1" --cpus 2 "$2" || exit 1
if ls "$3"/fk-*.so >/dev/null 2>&1; then
  echo "a fused kernel was compiled for the emulated CPU: $(ls "$3")"
  exit 1
fi
