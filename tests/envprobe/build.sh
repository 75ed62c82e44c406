#!/bin/bash
# Builds one probe: build.sh SOURCE OUTPUT [m|s] [CFLAGS...]; m (default) for M-mode at the start of RAM
# (QEMU -bios none), s for an S-mode payload at OpenSBI's default next address.
set -euo pipefail
dir=$(dirname "$(readlink -f "$0")")
src=$1 out=$2 mode=${3:-m}
shift 3 || shift $#
CC=${CROSS_COMPILE:-riscv64-linux-gnu-}gcc
if [ "$mode" = s ]; then flags=(-DSMODE -Wl,--defsym=LOAD_ADDR=0x80200000); else flags=(-Wl,--defsym=LOAD_ADDR=0x80000000); fi
"$CC" -march=rv64gc_zicsr -mabi=lp64 -mcmodel=medany -O2 -Wall -Werror -ffreestanding -fno-pic -nostdlib -static \
  -Wl,--no-relax -Wl,--build-id=none -Wl,--no-warn-rwx-segments -T "$dir/link.ld" "${flags[@]}" "$@" -o "$out" "$dir/start.S" "$dir/lib.c" "$src"
