#!/usr/bin/env python3
"""The stack frame of every function of a RISC-V object, from its disassembly; fails when one is larger than a limit.

usage: scripts/frame_sizes.py [--limit BYTES] [--top N] OBJECT

A kernel stack is 16 KiB, and without VMAP_STACK no guard page stops a function that runs past it: it writes over
whatever lies below. The kernel holds its C code to CONFIG_FRAME_WARN (2048 bytes on 64-bit) with
-Wframe-larger-than; rustc has no such warning, so scripts/module-build applies the same limit to the module with
this script. A frame is what the function's prologue takes from sp: `addi sp, sp, -N`, or for larger frames a
constant built with lui/addi(w) and subtracted with `sub sp, sp, REG`.
"""

import argparse
import re
import shutil
import subprocess
import sys

FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
ADDI_SP = re.compile(r"\taddi\tsp, sp, -(0x[0-9a-f]+|\d+)$")
LUI = re.compile(r"\tlui\t(\w+), (0x[0-9a-f]+|\d+)$")
ADDI_REG = re.compile(r"\taddiw?\t(\w+), (\w+), (-?(?:0x[0-9a-f]+|\d+))$")
SUB_SP = re.compile(r"\tsub\tsp, sp, (\w+)$")


def frame_sizes(disassembly):
    """{function: bytes its prologue takes from sp} of `llvm-objdump -d --no-show-raw-insn` output."""
    sizes = {}
    name = None
    consts = {}
    for line in disassembly.splitlines():
        line = line.rstrip()
        m = FUNCTION.match(line)
        if m:
            name, consts = m.group(1), {}
            sizes.setdefault(name, 0)
            continue
        if name is None:
            continue
        if m := ADDI_SP.search(line):
            sizes[name] += int(m.group(1), 0)
        elif m := LUI.search(line):
            consts[m.group(1)] = int(m.group(2), 0) << 12
        elif (m := ADDI_REG.search(line)) and m.group(1) == m.group(2) and m.group(1) in consts:
            consts[m.group(1)] += int(m.group(3), 0)
        elif (m := SUB_SP.search(line)) and m.group(1) in consts:
            sizes[name] += consts[m.group(1)]
    return sizes


def objdump():
    for tool in ("llvm-objdump-19", "llvm-objdump"):
        if shutil.which(tool):
            return tool
    sys.exit("frame_sizes.py: llvm-objdump not found: install the Debian package llvm-19")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=2048, help="the largest frame allowed, in bytes (default 2048)")
    ap.add_argument("--top", type=int, default=3, help="how many of the largest frames to print (default 3)")
    ap.add_argument("object")
    a = ap.parse_args()
    out = subprocess.run([objdump(), "-d", "--no-show-raw-insn", a.object], capture_output=True, text=True,
                         check=True).stdout
    sizes = sorted(frame_sizes(out).items(), key=lambda kv: -kv[1])
    for name, size in sizes[:a.top]:
        print(f"  {size:6d}  {name}")
    over = [(n, s) for n, s in sizes if s > a.limit]
    for name, size in over:
        print(f"frame_sizes.py: {name} takes {size} bytes of stack, more than {a.limit}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
