#!/usr/bin/env python3
"""Issue 41 item 2: several CPU contexts in one process, called in turns, on few cores.

    taskset -c 0,1 python3 library/bench/pool_contention.py [--contexts 3] [--threads 16]

Not a test (it times, and times depend on the host): it shows the floor that threads which poll for
work cost a process with more of them than it has CPUs. bench_host.py runs three contexts in one
process (a CPU one and two GPU ones), each with its own threads; on 16 cores of an H200 host calls
that take tens of microseconds took about 3 ms, a scheduler time slice: the thread that had to run
waited behind threads polling for a job that was not theirs.

Here: --contexts CPU contexts (Context(1, device="cpu", cpu_threads=--threads)), one dot each in
turns on fresh NumPy arrays, at each n; per context the median and minimum time of a call, and
NumPy's for scale; then how many threads the process has (/proc/self/task) against its CPUs
(the affinity mask). Before issue 41's fix each context started its own pool (contexts x (threads - 1)
threads, every one polling for 0.5 ms after each job); after it the library has one pool for the
process, with one thread per CPU of the mask.
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))  # the dotcourse package
import dotcourse  # noqa: E402


def threads_now():
    return len(os.listdir("/proc/self/task"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=3)
    ap.add_argument("--threads", type=int, default=16, help="cpu_threads of each context")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--log2", type=int, nargs="+", default=[16, 18, 20])
    args = ap.parse_args()
    if args.contexts < 1 or args.threads < 1 or args.reps < 1:
        print("pool_contention: --contexts, --threads and --reps must be at least 1", file=sys.stderr)
        return 2

    cpus = len(os.sched_getaffinity(0))
    before = threads_now()
    contexts = [dotcourse.Context(1, device="cpu", cpu_threads=args.threads) for _ in range(args.contexts)]
    rng = np.random.default_rng(41)
    print(f"{args.contexts} CPU contexts of {args.threads} threads, {cpus} CPU(s) in the affinity mask")
    print(f"{'n':>9} {'peer':>8} {'median_ms':>10} {'min_ms':>9}")
    for k in args.log2:
        n = 1 << k
        x0 = rng.standard_normal(n).astype(np.float32)
        y0 = rng.standard_normal(n).astype(np.float32)
        times = {name: [] for name in ["numpy"] + [f"ctx{i}" for i in range(len(contexts))]}
        for _ in range(args.reps):
            for name in times:
                x, y = x0.copy(), y0.copy()  # fresh arrays, outside the timed region
                t0 = time.perf_counter()
                if name == "numpy":
                    np.dot(x, y)
                else:
                    contexts[int(name[3:])].dot(x, y)
                times[name].append(time.perf_counter() - t0)
        for name, t in times.items():
            print(f"{n:>9} {name:>8} {statistics.median(t) * 1e3:>10.4f} {min(t) * 1e3:>9.4f}")
    print(f"threads: {before} before the contexts, {threads_now()} after "
          f"(+{threads_now() - before}; the process has {cpus} CPU(s))")
    for c in contexts:
        c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
