#!/usr/bin/env python3
"""Chapter 07's Python measurements, in one run: what a Python user would pick for a dot of two
NumPy float32 vectors, the result on the host after every call; and the motivating program
(init, 100 × dot on 2^20, deinit) from Python.

    python3 library/bench/bench_peers.py --out results/local
writes results/local/07_library_peers.csv (peer, input, n, reps, median_ms, mean_ms, min_ms,
gbps, rel_error) and results/local/07_library_program_python.csv (the columns of the C++
driver's 07_library_program.csv), results/local/07_library_binding.csv: what the Python
binding adds to a call, measured in this process (below), and results/local/07_library_device_pairs.csv:
the calls on arrays already on the GPU (torch.dot, cupy.dot, this library on PyTorch tensors and on
CuPy arrays) timed in turns, so that all of them see the same moments of the machine. Peers missing
here (CuPy, PyTorch, a GPU) are left out, with a line saying so.
"""
import argparse
import csv
import os
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))  # the dotcourse package
import dotcourse  # noqa: E402

# Every host call here asks for the GPU (where="gpu"): these are the chapter's measurements of the
# GPU path. Where a host dot runs fastest (where="auto", the CPU as well) is bench_host.py's.


def timed(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def timed_fresh(fn, x, y, reps, warmup=3):
    """fn(a, b) on fresh copies of x and y in every call (made outside the timed region): what a
    program that makes new arrays for every call sees (the registration cache never pins them)."""
    samples = []
    for r in range(warmup + reps):
        a, b = x.copy(), y.copy()
        t0 = time.perf_counter()
        fn(a, b)
        if r >= warmup:
            samples.append((time.perf_counter() - t0) * 1e3)
        del a, b
    return samples


def binding_cost(ctx, x, y, reps):
    """What `ctx.dot(x, y)` adds over the library's C call itself, in microseconds. The same C call
    is made through a prepared ctypes function (arguments converted once), alternately with
    ctx.dot, so both see the same moments of a host whose speed drifts; the ctypes call's own
    cost (timed on dotcourse_version(), which does nothing) is counted as the binding's, since a
    C++ caller does not pay it. Per-pair differences, median."""
    import ctypes
    import c_abi
    n = x.shape[0]
    lib, handle = c_abi.library(ctx)
    result = ctypes.c_float()
    out, px, py = ctypes.byref(result), x.ctypes.data, y.ctypes.data
    c_call, version = lib.dotcourse_dot_ex, lib.dotcourse_version  # the C call ctx.dot makes
    opts, report = c_abi.options("gpu"), c_abi.new_report()
    opts_p, report_p = ctypes.byref(opts), ctypes.byref(report)

    def raw():
        if c_call(handle, px, py, n, opts_p, out, report_p) != dotcourse.Status.OK:
            raise RuntimeError("dotcourse_dot_ex failed in the binding measurement")

    def py_call():
        ctx.dot(x, y, where="gpu")

    for _ in range(5):
        raw()
        py_call()
    binding, c_ms, py_ms, empty = [], [], [], []
    clock = time.perf_counter
    for r in range(reps):
        first, second = (py_call, raw) if r % 2 else (raw, py_call)  # alternate the order too
        t0 = clock()
        first()
        t1 = clock()
        second()
        t2 = clock()
        a, b = (t1 - t0, t2 - t1) if first is raw else (t2 - t1, t1 - t0)
        t3 = clock()
        version()
        t4 = clock()
        c_ms.append(a * 1e3)
        py_ms.append(b * 1e3)
        empty.append((t4 - t3) * 1e6)
        binding.append((b - a) * 1e6)
    ctypes_us = statistics.median(empty)
    return {"n": n, "reps": reps, "c_call_ms": statistics.median(c_ms), "python_ms": statistics.median(py_ms),
            "ctypes_call_us": ctypes_us, "binding_us": statistics.median(binding) + ctypes_us}


def device_pairs(n, device_calls, reps):
    """The device-array calls of one size, timed in rounds: each round calls every peer once, the
    order rotating from round to round, so that a drift of the GPU's or the host's speed falls on
    all of them alike (timed one peer after another, the order of two peers 5% apart changed from
    run to run). Per peer: the median, and the median of the per-round differences against
    torch.dot(...).item() (negative: faster), which the target reads."""
    names = list(device_calls)
    for fn in device_calls.values():  # warm-up, and a first look at each result
        for _ in range(3):
            fn()
    samples = {k: [] for k in names}
    clock = time.perf_counter
    for r in range(reps):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            t0 = clock()
            device_calls[name]()
            samples[name].append((clock() - t0) * 1e3)
    base = samples.get(("torch", "device"))
    rows = []
    for (peer, where), s in samples.items():
        diff = statistics.median(a - b for a, b in zip(s, base)) if base else float("nan")
        rows.append({"peer": peer, "input": where, "n": n, "reps": reps, "median_ms": statistics.median(s),
                     "min_ms": min(s), "minus_torch_dot_ms": diff})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results/local"), help="folder for the CSVs")
    p.add_argument("--sizes", default="10,20,26", help="powers of two, comma-separated (default 10,20,26)")
    p.add_argument("--reps", type=int, default=50, help="timed calls per peer and size (fewer at 2^24 and up)")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--peers", default="numpy,dotcourse,cupy,torch", help="which peers to time (comma-separated)")
    args = p.parse_args()
    sizes = [1 << int(s) for s in args.sizes.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    peers_wanted = set(args.peers.split(","))
    print(f"bench_peers: {len(os.sched_getaffinity(0))} CPUs in this thread's affinity mask before CuPy/PyTorch")
    program(args)  # first, before CuPy or PyTorch (and their thread pools) are loaded

    cp = torch = None
    if "cupy" in peers_wanted:
        try:
            import cupy as cp
        except Exception as e:  # noqa: BLE001
            print(f"bench_peers: no CuPy ({e}); its rows are left out")
    if "torch" in peers_wanted:
        try:
            import torch
            if not torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
        except Exception as e:  # noqa: BLE001
            torch = None
            print(f"bench_peers: no PyTorch with CUDA ({e}); its rows are left out")
    print(f"bench_peers: {len(os.sched_getaffinity(0))} CPUs in this thread's affinity mask after the imports")

    rows, binding, pairs = [], [], []
    ctx = dotcourse.Context(max(sizes), device=args.device)
    for n in sizes:
        rng = np.random.default_rng(n)
        x = rng.uniform(-1, 1, n).astype(np.float32)
        y = rng.uniform(-1, 1, n).astype(np.float32)
        ref = float(np.dot(x.astype(np.float64), y.astype(np.float64)))
        scale = float(np.abs(x.astype(np.float64) * y).sum())
        reps = args.reps if n < (1 << 24) else max(5, args.reps // 5)
        # dotcourse "host": the same arrays in every call (the registration cache pins them from the
        # second call on); "host_fresh": new arrays in every call (staged, never pinned).
        peers = [("numpy", "host", lambda: float(np.dot(x, y))),
                 ("dotcourse", "host", lambda: ctx.dot(x, y, where="gpu")),
                 ("dotcourse", "host_fresh", None)]
        peers = [p for p in peers if p[0] in peers_wanted]
        if cp is not None:
            dx, dy = cp.asarray(x), cp.asarray(y)
            peers += [("cupy", "host", lambda: float(cp.dot(cp.asarray(x), cp.asarray(y)))),
                      ("cupy", "device", lambda: float(cp.dot(dx, dy)))]
            if "dotcourse" in peers_wanted:
                peers.append(("dotcourse", "device_cupy", lambda: ctx.dot(dx, dy)))
        if torch is not None:
            tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
            px, py = torch.from_numpy(x).pin_memory(), torch.from_numpy(y).pin_memory()
            peers += [("torch", "host", lambda: torch.dot(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()).item()),
                      ("torch", "pinned", lambda: torch.dot(px.cuda(non_blocking=True), py.cuda(non_blocking=True)).item()),
                      ("torch", "device", lambda: torch.dot(tx, ty).item())]
            if "dotcourse" in peers_wanted:
                peers.append(("dotcourse", "device_torch", lambda: ctx.dot(tx, ty)))
        for name, where, fn in peers:
            if fn is None:  # host_fresh
                got = ctx.dot(x.copy(), y.copy(), where="gpu")
                samples = timed_fresh(lambda a, b: ctx.dot(a, b, where="gpu"), x, y, reps)
            else:
                got = fn()
                samples = timed(fn, reps)
            if (name, where) == ("dotcourse", "host"):
                # Registration is process-wide: CuPy's and PyTorch's copies from x and y would run
                # at the pinned rate too. Unpin them, so the peers after this one copy from pageable
                # memory as they would without dotcourse.
                ctx.unpin()
            med = statistics.median(samples)
            rows.append({"peer": name, "input": where, "n": n, "reps": reps, "median_ms": med,
                         "mean_ms": statistics.fmean(samples), "min_ms": min(samples),
                         "gbps": 2 * n * 4 / (med * 1e-3) / 1e9,
                         "rel_error": abs(got - ref) / max(abs(ref), 1e-30), "scale": scale})
            print(f"{name:10s} {where:13s} n=2^{n.bit_length() - 1:<2d} {med:9.4f} ms")
        device_calls = {(name, where): fn for name, where, fn in peers
                        if where == "device" or where.startswith("device_")}
        if len(device_calls) > 1:
            pairs += device_pairs(n, device_calls, reps)
            for r in pairs[-len(device_calls):]:
                print(f"{r['peer']:10s} {r['input']:13s} n=2^{n.bit_length() - 1:<2d} {r['median_ms']:9.4f} ms in turns, "
                      f"{1e3 * r['minus_torch_dot_ms']:+7.2f} us against torch.dot")
        if "dotcourse" in peers_wanted and n <= (1 << 20):  # above, the copies' scatter hides microseconds
            b = binding_cost(ctx, x, y, 4 * args.reps)
            ctx.unpin()
            binding.append(b)
            print(f"dotcourse  binding       n=2^{n.bit_length() - 1:<2d} {b['binding_us']:9.2f} us over the C call "
                  f"({b['python_ms']:.4f} against {b['c_call_ms']:.4f} ms; the ctypes call itself {b['ctypes_call_us']:.2f} us)")
    ctx.close()
    if binding:
        with open(args.out / "07_library_binding.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(binding[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(binding)
    if pairs:
        with open(args.out / "07_library_device_pairs.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(pairs[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(pairs)
    with open(args.out / "07_library_peers.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"bench_peers: wrote {args.out / '07_library_peers.csv'}, {args.out / '07_library_program_python.csv'}"
          + (f", {args.out / '07_library_binding.csv'}" if binding else "")
          + (f", {args.out / '07_library_device_pairs.csv'}" if pairs else ""))


def program(args):
    # The motivating program, from Python: init, 100 calls on 2^20, deinit; and NumPy beside it.
    n, calls = 1 << 20, 100
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    ref = float(np.dot(x.astype(np.float64), y.astype(np.float64)))
    prog = []
    t0 = time.perf_counter()
    c = dotcourse.Context(n, device=args.device)
    init_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    for _ in range(calls):
        got = c.dot(x, y, where="gpu")
    calls_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    c.close()
    deinit_ms = (time.perf_counter() - t0) * 1e3
    prog.append(["Python", "c_api", n, calls, init_ms, calls_ms, deinit_ms, calls_ms / calls, abs(got - ref) / abs(ref)])
    t0 = time.perf_counter()
    for _ in range(calls):
        got = float(np.dot(x, y))
    calls_ms = (time.perf_counter() - t0) * 1e3
    prog.append(["Python", "numpy", n, calls, 0.0, calls_ms, 0.0, calls_ms / calls, abs(got - ref) / abs(ref)])
    with open(args.out / "07_library_program_python.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["language", "variant", "n", "calls", "init_ms", "calls_ms", "deinit_ms", "per_call_ms", "rel_error"])
        w.writerows(prog)
    print(f"bench_peers: the program from Python: {prog[0][7]:.4f} ms per call (NumPy {prog[1][7]:.4f})")


if __name__ == "__main__":
    sys.exit(main())
