#!/usr/bin/env python3
"""Whether a compiled CPU loop adds in independent lanes: a performance rule that needs no timer.

An exercise that asks for independent accumulators (chapter 02's `unrolled`: eight lanes) passes
every correctness test with one accumulator too: the sum is the same to within the bound. Only
its speed differs, because without -ffast-math a compiler may not reorder float additions: one
chain of additions stays scalar (`addss`, one add per cycle at best), while independent lanes
become packed adds (`addps`, `vaddps`, `vfmadd...ps`; `fadd v.4s` on AArch64). So this reads the
function's machine code (objdump) and requires a loop, a backward jump's range, that holds a
packed add. It looks at one function of the built object (the student's hole is inside it), so
the course's code elsewhere cannot pass for it; the lanes combined after the loop do not count.

Only an optimised build is meaningful (tests/support/hole_scan.cmake registers it for Release
and RelWithDebInfo, the grader's build type). Exit 0 lanes found, 1 none, 77 objdump missing.

    lanes_check.py --object lib02_cpu_dot_lib.a --function 'ch02::dot_unrolled('
"""
import argparse
import re
import shutil
import subprocess
import sys

LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
PACKED_X86 = re.compile(r"^v?(?:add|fmadd\d*|fmaddsub\d*)ps$|^vfmadd\d*ps$")
PACKED_ARM = re.compile(r"^(?:fadd|fmla)$")
MULTIPLY = re.compile(r"^v?(?:mul|fmadd\d*|fmul|fmla)")
JUMP_TARGET = re.compile(r"(?:^|,\s*)([0-9a-f]+)\s+<")


def function_lines(disassembly, function):
    """[(address, mnemonic, operands)] of the first function whose demangled name starts with `function`."""
    out, inside = [], False
    for line in disassembly.splitlines():
        if line.endswith(">:") and "<" in line:
            name = line[line.index("<") + 1:-2]
            if inside:
                break
            inside = name.startswith(function)
            continue
        if inside:
            m = LINE.match(line)
            if m:
                out.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return out


def packed(mnemonic, operands):
    if PACKED_X86.match(mnemonic):
        return True
    return bool(PACKED_ARM.match(mnemonic) and re.search(r"\bv\d+\.(?:4s|2d|8h)", operands))


def loops(lines):
    """[(first address, last address)] of every backward jump's range."""
    out = []
    for address, mnemonic, operands in lines:
        if mnemonic.startswith("j") or mnemonic.startswith("b"):
            m = JUMP_TARGET.search(operands)
            if m and int(m.group(1), 16) <= address:
                out.append((int(m.group(1), 16), address))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--object", required=True, help="an object file or a static library")
    ap.add_argument("--function", required=True, help="the start of the demangled name, e.g. 'ch02::dot_unrolled('")
    ap.add_argument("--what", default="the exercise's loop", help="how to name the loop in the message")
    args = ap.parse_args()
    objdump = shutil.which("objdump")
    if objdump is None:
        print("lanes_check: objdump (binutils) not found: not assessed")
        return 77
    dis = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", args.object], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True).stdout
    lines = function_lines(dis, args.function)
    if not lines:
        print(f"lanes_check: no function named {args.function}... in {args.object}")
        return 1
    # The exercise's loop: the first loop (in address order) that multiplies. Later backward jumps
    # are the tail loop and the compiler's block layout, which the lanes' combine may fall inside.
    first = next(((a, b) for a, b in sorted(loops(lines), key=lambda r: r[1])
                  if any(MULTIPLY.match(m) for addr, m, o in lines if a <= addr <= b)), None)
    if first is None:
        print(f"FAILED lanes: {args.what} ({args.function}...) has no loop that multiplies")
        return 1
    body = [(m, o) for addr, m, o in lines if first[0] <= addr <= first[1]]
    adds = [m for m, o in body if packed(m, o)]
    scalar = sum(1 for m, o in body if m in ("addss", "vaddss", "vfmadd231ss", "fadd", "fmadd") and not packed(m, o))
    if adds:
        print(f"lanes_check: {args.what} adds in packed lanes ({', '.join(sorted(set(adds)))} in its loop)")
        return 0
    print(f"FAILED lanes: {args.what} ({args.function}...) has no packed add in its loop: its additions form one "
          f"chain ({scalar} scalar adds per trip). The exercise asks for independent lanes "
          "(lane k adds into acc[k]); one accumulator is correct but runs at the plain loop's speed, and the "
          "chapter's performance rule gives it no points.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
