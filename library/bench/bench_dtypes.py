#!/usr/bin/env python3
"""Chapter 10's Python benchmark: the dot of two device-resident vectors of every pair, through
dotcourse (chapter 10's kernel via libdotcourse.so), PyTorch (torch.dot where it accepts the pair,
and "convert, then torch.dot") and CuPy (cupy.dot), all in the same Python run. Median time per call
including the result's trip to the host; each result is checked against the fp64 (or exact integer)
reference, and a wrong one is reported as such, not timed as if it were right.

    python3 bench_dtypes.py [--n 2^26] [--reps 50] [--csv results/local/10_dtypes_python.csv]
Writes the CSV (columns pair, impl, n, bytes, median_ms, min_ms, reps, status, result, expected,
rel_error, note) and <stem>_targets.csv beside it.
"""
import argparse
import math
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))  # the dotcourse package
import numpy as np  # noqa: E402

import dotcourse  # noqa: E402

PAIRS = [("f32_f32", "float32", "float32"), ("f64_f64", "float64", "float64"), ("f32_f64", "float32", "float64"),
         ("f32_bool", "float32", "bool"), ("f32_i8", "float32", "int8"), ("f32_f16", "float32", "float16"),
         ("f16_f16", "float16", "float16"), ("bf16_bf16", "bfloat16", "bfloat16"), ("i8_i8", "int8", "int8")]
SIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int8": 1, "bool": 1}


def parse_n(text):
    return 1 << int(text[2:]) if text.startswith("2^") else int(text)


def timed(fn, reps, warmup=5):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), min(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="2^26")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--csv", default="results/local/10_dtypes_python.csv")
    args = ap.parse_args()
    n = parse_n(args.n)
    import torch
    try:
        import cupy as cp
    except ImportError:
        cp = None
    tdt = {"bool": torch.bool, "int8": torch.int8, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "float32": torch.float32, "float64": torch.float64}
    rows = []
    ctx = dotcourse.Context(1 << 20)
    rng = np.random.default_rng(2024)
    for name, tx, ty in PAIRS:
        def make(t):
            if t == "bool":
                return torch.from_numpy(rng.integers(0, 2, n).astype(np.bool_)).cuda()
            if t == "int8":
                return torch.from_numpy(rng.integers(-128, 128, n).astype(np.int8)).cuda()
            return torch.from_numpy(rng.uniform(-1, 1, n).astype(np.float32)).cuda().to(tdt[t])
        x, y = make(tx), make(ty)
        torch.cuda.synchronize()
        integer = tx in ("int8", "bool") and ty in ("int8", "bool")
        if integer:
            expected = float((x.cpu().numpy().astype(np.int64) * y.cpu().numpy().astype(np.int64)).sum())
        else:
            expected = float(torch.dot(x.to(torch.float64), y.to(torch.float64)).item())
        absdot = float(torch.dot(x.to(torch.float64).abs(), y.to(torch.float64).abs()).item())
        u = 0.0 if integer else (2.0 ** -53 if "float64" in (tx, ty) else 2.0 ** -24)
        # A library's float16/bfloat16 result is rounded to its own type: 2^-11 / 2^-8 relative on top.
        bound = math.expm1(8 * math.sqrt(n + 1) * max(u, 2.0 ** -24 if not integer else 0)) * absdot
        nbytes = n * (SIZE[tx] + SIZE[ty])
        common = torch.float64 if (integer or "float64" in (tx, ty)) else torch.float32

        def record(impl, fn, note=""):
            try:
                got = fn()
            except Exception as e:  # noqa: BLE001  (a refusal is a result here)
                rows.append([name, impl, n, nbytes, "", "", 0, "refused", "", expected, "", f"{type(e).__name__}: {e}"[:160]])
                return
            got = float(got)
            err = abs(got - expected)
            half_result = impl == "torch" and tx == ty and tx in ("float16", "bfloat16")
            allowed = 0.0 if integer else bound + (abs(expected) * (2.0 ** -8 if tx == "bfloat16" else 2.0 ** -11) if half_result else 0)
            ok = err <= allowed
            med, mn = timed(fn, args.reps)
            rows.append([name, impl, n, nbytes, med, mn, args.reps, "ok" if ok else "wrong", got, expected,
                         err / abs(expected) if expected else err, note])

        record("dotcourse", lambda: ctx.dot(x, y), "ctx.dot(tensor, tensor): chapter 10's kernel, no copy")
        record("torch", lambda: torch.dot(x, y).item(), "torch.dot(x, y).item()")
        record("torch_convert", lambda: torch.dot(x.to(common), y.to(common)).item(),
               f"torch.dot(x.to({str(common)[6:]}), y.to({str(common)[6:]})).item()")
        if cp is None:
            continue
        if tx == "bfloat16" or ty == "bfloat16":
            rows.append([name, "cupy", n, nbytes, "", "", 0, "refused", "", expected, "", "CuPy has no bfloat16 dtype"])
            continue
        cx, cy = cp.asarray(x), cp.asarray(y)  # zero-copy views of the same memory
        record("cupy", lambda: cp.dot(cx, cy).item(), "cupy.dot(x, y).item()")
        del x, y, cx, cy
        torch.cuda.empty_cache()
    ctx.close()

    out = pathlib.Path(args.csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    cols = ["pair", "impl", "n", "bytes", "median_ms", "min_ms", "reps", "status", "result", "expected", "rel_error", "note"]

    def cell(v):
        s = "" if v is None else (repr(v) if isinstance(v, float) else str(v))
        return '"' + s.replace('"', "'") + '"' if ("," in s or '"' in s) else s
    with open(out, "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(cell(v) for v in r) + "\n")

    def ms(pair, impl):
        for r in rows:
            if r[0] == pair and r[1] == impl and r[7] == "ok":
                return r[4]
        return None
    targets = []
    d = ms("f32_bool", "dotcourse")
    for impl in ("torch_convert", "cupy"):
        other = ms("f32_bool", impl)
        v = other / d if (d and other) else float("nan")
        targets.append(["f32_bool_speedup_vs_" + impl, "f32_bool", n, v, 3.5, int(v >= 3.5)])
    for pair in ("f16_f16", "bf16_bf16"):
        dd, t = ms(pair, "dotcourse"), ms(pair, "torch")
        v = t / dd if (dd and t) else float("nan")
        targets.append([pair + "_speedup_vs_torch", pair, n, v, 1.0, int(v >= 1.0)])
    tpath = out.with_name(out.stem + "_targets.csv")
    with open(tpath, "w") as f:
        f.write("target,pair,n,value,goal,met\n")
        for t in targets:
            f.write(",".join(cell(v) for v in t) + "\n")
    for r in rows:
        print(f"{r[0]:10s} {r[1]:14s} {r[7]:8s} {r[4] if r[4] == '' else f'{r[4]:.4f}':>8} ms  {r[11][:70]}")
    for t in targets:
        print(f"target {t[0]}: {t[3]:.2f} (goal {t[4]}) {'met' if t[5] else 'MISSED'}")
    print(f"CSV: {out} and {tpath}")


if __name__ == "__main__":
    main()
