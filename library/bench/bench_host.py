#!/usr/bin/env python3
"""Issue 26 item 5: the fastest dot of two NumPy float32 vectors at every size, against its peers,
with the result on the host after every call.

    python3 library/bench/bench_host.py --out "$OUT"

At n = 2^10, 2^12, ..., 2^28 (--max-log2), from fresh arrays in every call (copies made outside the
timed region: nothing is registered, as for a program that makes new arrays each time), each peer
is timed in blocks of calls, in rounds with the peers in another order each round (so that a
busy stretch of the host, or the peer before, weighs on all of them alike; 100 rounds up to 2^16,
25 up to 2^24, 5 above):
    numpy            numpy.dot(x, y)
    cpu16            this library's threaded CPU dot, where="cpu", 16 threads (a CPU-only context)
    cupy             float(cupy.dot(cupy.asarray(x), cupy.asarray(y)))
    torch            torch.dot(torch.from_numpy(x).cuda(), ...).item()
    dotcourse_gpu    ctx.dot(x, y, where="gpu")    (staged)
    dotcourse_auto   ctx.dot(x, y, where="auto")   (after ctx.calibrate() on this host)
    dotcourse_default  ctx.dot(x, y)               (a context nobody calibrated: the built-in plan)
    cpu16_again      cpu16 once more, as another peer (up to 2^24): the gap between the two is the
                     bench's own noise, printed as "noise:" lines and in the targets' notes
and, on arrays already on the GPU (PyTorch tensors), torch.dot(...).item() against ctx.dot(dx, dy).
The call's own cost: numpy.dot against ctx.dot (calibrated and not) at n = 16 on the same arrays,
per call in blocks of 2000 calls, blocks interleaved. The host's memory read bandwidth: 16 threads
each reading its part of x and y (numpy's max of a uint64 view, which releases the GIL), at 2^26
and 2^28, the median and the best of several.

Writes, in --out:
  07_library_host.csv          peer, n, reps, median_ms, min_ms, gbps, rel_error, path, n_gpu
  07_library_host_rounds.csv   peer, n, round, after, calls, median_ms (each block, and the peer before it)
  07_library_host_read.csv     n, threads, reps, median_ms, gbps (the read bandwidth)
  07_library_host_device.csv   peer, n, reps, median_ms (device arrays)
  07_library_host_call.csv     peer, n, blocks, calls_per_block, median_us, min_us (n = 16)
  07_library_host_targets.csv  target, n, value, limit, unit, passed, note
  07_library_host_plan.json    the calibration the "auto" rows ran with
Peers that are missing (CuPy, PyTorch, a GPU) are left out, with a line saying so; their targets
are then judged against the peers that ran. Timing noise: a target "not slower" passes within 5%.
"""
import argparse
import concurrent.futures
import csv
import json
import math
import os
import pathlib
import random
import statistics
import sys
import time


def _blas_threads(argv):
    """--blas-threads, read before NumPy is imported (OpenBLAS reads its variables when it loads)."""
    for i, a in enumerate(argv):
        if a == "--blas-threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--blas-threads="):
            return a.split("=", 1)[1]
    return "1"


# NumPy's OpenBLAS starts a thread per CPU, and they keep polling for a while after each call: on
# the 16-core H200 host, a 16-thread CPU dot timed right after numpy.dot took 3.80 ms at 2^18 with
# them and 0.041 ms with OPENBLAS_NUM_THREADS=1 (the library's auto at 2^20: 2.48 against 0.21 ms),
# while numpy.dot of float32 vectors took the same time either way (0.0747 and 0.0758 ms at 2^18,
# 1.92 and 1.60 ms at 2^22): it does not use them. The default, 1, times every peer on a quiet host;
# --blas-threads 0 leaves OpenBLAS as it is (a variable already set in the environment always wins).
BLAS_THREADS = _blas_threads(sys.argv[1:])
if BLAS_THREADS != "0":
    for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, BLAS_THREADS)

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))  # the dotcourse package
import dotcourse  # noqa: E402

NOISE = 1.05  # "not slower than" allows 5% for the run-to-run noise of a shared host
READ_TARGET = 0.85  # at 2^26, auto reaches 85% of the host's read bandwidth
QUIET_S = 0.005  # between two peers' blocks: 10x the pool's poll window (course::ThreadPool::kPollUs)
WARM_S = 0.002  # a block's warm-up lasts at least this long (and at least its warm-up calls)
CONTROL = "cpu16_again"  # cpu16 under another name: how far one run's medians of the same code differ


def reps_for(n):
    # At least 15 reps: with 5, one stall of a shared host moved a median by 2x (2^22 on the H100
    # machine: auto's median 1.09 ms against a minimum of 0.44 ms). 25 up to 2^24: with 15, one
    # CPU dot's medians at 2^22 still differed by a fifth from peer to peer of one run. 75 from 2^18
    # to 2^22, where a call is short and the copies between calls are not.
    floor = 75 if n <= 1 << 22 else 25 if n <= 1 << 24 else 15
    return int(min(201, max(floor, (1 << 24) // n)))


def blocks_for(n, reps):
    """(rounds, calls per block) for `reps` timed calls of each peer at n. Up to 2^24, many rounds of
    short blocks: on the H200 host a block's median at 2^20 ranged from 0.10 to 0.24 ms for the
    same CPU dot (a block of a few calls lands in one state of the host), so with 5 blocks the
    medians of two peers running the same code differed by a third. 100 rounds up to 2^16, where
    a call lasts microseconds and 5% of it is a few hundred nanoseconds (with 25, the control was
    still 4% apart at 2^10), 25 up to 2^24. Above, where a call lasts milliseconds and a block spans
    many states, 5 rounds (each call's copies cost hundreds of ms)."""
    rounds = 100 if n <= 1 << 16 else 25 if n <= 1 << 24 else 5
    return rounds, max(1, -(-reps // rounds))


def control_gap(med, n):
    """The same code timed as two peers (cpu16 and its control) in one run: the relative gap of
    their medians at n, or None where the control did not run. A "not slower" verdict closer than
    this is within the bench's own noise."""
    a, b = med.get(("cpu16", n)), med.get((CONTROL, n))
    return None if a is None or b is None else abs(b - a) / min(a, b)


def write_csv(path, data):
    if data:
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(data[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(data)


def order_effect(round_rows, peer="dotcourse_auto", before="dotcourse_gpu"):
    """Whether `peer` is slower right after `before`: per n, the median of its block medians timed
    just after `before` and of those timed after any other peer (07_library_host_rounds.csv's
    rows). [(n, after_ms, other_ms, blocks_after, blocks_other)], for the sizes that have both."""
    out = []
    for n in sorted({r["n"] for r in round_rows}):
        mine = [r for r in round_rows if r["n"] == n and r["peer"] == peer]
        after = [r["median_ms"] for r in mine if r["after"] == before]
        other = [r["median_ms"] for r in mine if r["after"] != before]
        if after and other:
            out.append((n, statistics.median(after), statistics.median(other), len(after), len(other)))
    return out


def read_bandwidth(pool, threads, x, y, reps):
    """Seconds for `threads` threads to read x and y, each thread its part of both: the largest
    element of its part seen as uint64 (a SIMD reduction that needs no arithmetic per byte, three
    times as fast per core as numpy.sum of float32: the threads wait for memory, not for adds)."""
    n = x.shape[0]
    bounds = [(n * t // threads) & ~1 for t in range(threads)] + [n & ~1]
    xu, yu = x[:n & ~1].view(np.uint64), y[:n & ~1].view(np.uint64)

    def part(t):
        a, b = bounds[t] // 2, bounds[t + 1] // 2
        return int(xu[a:b].max()) ^ int(yu[a:b].max()) if b > a else 0

    samples = []
    for r in range(reps + 2):
        t0 = time.perf_counter()
        sum(pool.map(part, range(threads)))
        if r >= 2:
            samples.append(time.perf_counter() - t0)
    return samples


def process_threads():
    """The process's threads and how many are the library's pool (issue 41: one pool per process,
    no more threads than the CPUs of the affinity mask), from /proc/self/task."""
    names = []
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else []:
        try:
            names.append(pathlib.Path(f"/proc/self/task/{tid}/comm").read_text().strip())
        except OSError:
            pass
    pool = sum(name == "course-pool" for name in names)
    return (f"{len(names)} threads in the process, {pool} of them the library's pool (course-pool, the caller "
            f"is one more); {len(os.sched_getaffinity(0))} CPUs in the affinity mask")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path(os.environ.get("OUT", ".")))
    p.add_argument("--min-log2", type=int, default=10)
    p.add_argument("--max-log2", type=int, default=28)
    p.add_argument("--threads", type=int, default=16, help="threads of the cpu16 peer and the read bandwidth")
    p.add_argument("--reps-scale", type=float, default=1.0, help="multiply every rep count (quick runs: 0.2)")
    p.add_argument("--blas-threads", default="1", metavar="N",
                   help="OpenBLAS/MKL threads of NumPy (default 1: their idle polling slows every other peer, "
                        "and numpy.dot of vectors does not use them); 0 leaves them as they are")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [1 << k for k in range(args.min_log2, args.max_log2 + 1, 2)]
    n_top = sizes[-1]
    os.environ.setdefault("DOTCOURSE_CALIBRATION", str(args.out / "07_library_host_plan.json"))

    cp = torch = None
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - any failure: the peer is missing
        print(f"bench_host: no CuPy peer ({e})")
        cp = None
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # noqa: BLE001
        print(f"bench_host: no PyTorch peer ({e})")
        torch = None

    cpu = dotcourse.Context(1, device="cpu", cpu_threads=args.threads, calibration="none")
    cpu.set_plan([], numpy_below=0)  # the library's CPU dot at every n, never NumPy's
    gpu = None
    plan = None
    try:
        gpu = dotcourse.Context(n_top, calibration="none")
        t0 = time.perf_counter()
        plan = gpu.calibrate()  # saved to $DOTCOURSE_CALIBRATION (default: --out/07_library_host_plan.json)
        print(f"bench_host: calibrated in {time.perf_counter() - t0:.1f} s: NumPy for n in "
              f"[{plan['numpy_from']}, {plan['numpy_below']}), rows = {plan['rows']}")
    except (dotcourse.NoGpuError, OSError) as e:
        print(f"bench_host: no GPU peers of this library ({e}); auto runs on a CPU-only context")
        gpu = dotcourse.Context(1, device="cpu", cpu_threads=args.threads, calibration="none")
        plan = gpu.calibrate(save=False)

    peers = [("numpy", lambda a, b: float(np.dot(a, b))),
             ("cpu16", lambda a, b: cpu.dot(a, b, where="cpu"))]
    if cp is not None:
        peers.append(("cupy", lambda a, b: float(cp.dot(cp.asarray(a), cp.asarray(b)))))
    if torch is not None:
        peers.append(("torch", lambda a, b: torch.dot(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()).item()))
    if gpu.device != "cpu":
        peers.append(("dotcourse_gpu", lambda a, b: gpu.dot(a, b, where="gpu")))
    peers.append(("dotcourse_auto", lambda a, b: gpu.dot(a, b, where="auto")))
    # Without calibrate(): what a program gets that never calls it (the plan every context starts with).
    default = dotcourse.Context(n_top, calibration="none") if gpu.device != "cpu" else \
        dotcourse.Context(1, device="cpu", cpu_threads=args.threads, calibration="none")
    peers.append(("dotcourse_default", lambda a, b: default.dot(a, b)))
    # The control: cpu16 again, as if it were another peer (up to 2^24; above, its copies cost more
    # than the noise it would measure).
    peers.append((CONTROL, lambda a, b: cpu.dot(a, b, where="cpu")))

    rng = np.random.default_rng(26)
    x_all = rng.uniform(-1, 1, n_top).astype(np.float32)
    y_all = rng.uniform(-1, 1, n_top).astype(np.float32)
    rows = []
    round_rows = []
    for n in sizes:
        x, y = x_all[:n], y_all[:n]
        ref = float(np.dot(x.astype(np.float64), y.astype(np.float64)))
        scale = float(np.dot(np.abs(x).astype(np.float64), np.abs(y).astype(np.float64)))
        reps = max(3, int(reps_for(n) * args.reps_scale))
        samples = {name: [] for name, _ in peers}
        got = {}
        paths = {}
        # Each peer's calls one after another (warm-up calls first), as a program that calls one of
        # them in a loop does, with fresh arrays for every call made outside the timed region.
        # Before each block the last peer's threads stop polling and sleep (the library's pool
        # polls for 0.5 ms after its last part). The reps are split over rounds (blocks_for), each
        # in another order of the peers (round 0 the listed one, then seeded shuffles), so that a
        # stretch of a busy host falls on every peer and no peer always follows the same one (with
        # one order, dotcourse_auto always followed dotcourse_gpu, and at small n it was slower
        # than the same CPU path on the context timed after it). The warm-up is two calls below
        # 2^22, one above, and lasts at least WARM_S: after the quiet sleep a block of
        # microsecond calls would otherwise be timed while the core wakes.
        rounds, per_round = blocks_for(n, reps)
        warm = 2 if n < 1 << 22 else 1
        order = [p for p in peers if p[0] != CONTROL or n <= 1 << 24]
        for k in range(rounds):
            if k:
                random.Random(1000 * n + k).shuffle(order)
            before = ""
            for name, fn in order:
                time.sleep(QUIET_S)
                first = len(samples[name])
                start = time.perf_counter()
                r = 0
                while len(samples[name]) - first < per_round:
                    a, b = x.copy(), y.copy()
                    t0 = time.perf_counter()
                    v = fn(a, b)
                    t = time.perf_counter() - t0
                    if r >= warm and t0 - start >= WARM_S:
                        samples[name].append(t)
                    r += 1
                    got[name] = v
                    del a, b
                if name == "dotcourse_auto":  # once, after the block: the timed calls run back to
                    call = gpu.last_call       # back, as every other peer's do
                    paths[name] = (call.path, call.n_gpu)
                # Each block's median and the peer timed just before it: whether a peer is slower
                # after another (the order effect the rounds spread) shows in this file.
                round_rows.append({"peer": name, "n": n, "round": k, "after": before, "calls": per_round,
                                   "median_ms": 1e3 * statistics.median(samples[name][first:])})
                before = name
        reps = per_round * rounds
        for name, _ in order:
            med = statistics.median(samples[name])
            path, n_gpu = paths.get(name, ("", ""))
            rows.append({"peer": name, "n": n, "reps": reps, "median_ms": 1e3 * med,
                         "min_ms": 1e3 * min(samples[name]), "gbps": 8 * n / med / 1e9,
                         "rel_error": abs(got[name] - ref) / scale if scale else 0.0, "path": path, "n_gpu": n_gpu})
            print(f"n = 2^{int(math.log2(n)):2d}  {name:15s} {1e3 * med:10.4f} ms  {8 * n / med / 1e9:7.1f} GB/s"
                  + (f"  ({path}, n_gpu = {n_gpu})" if path else ""), flush=True)
        write_csv(args.out / "07_library_host.csv", rows)  # after every n: a run cut short keeps what it measured
        write_csv(args.out / "07_library_host_rounds.csv", round_rows)

    # The order effect the rounds spread: dotcourse_auto right after dotcourse_gpu against after others.
    for n, after_ms, other_ms, k_after, k_other in order_effect(round_rows):
        print(f"order: n = 2^{int(math.log2(n)):2d}  dotcourse_auto after dotcourse_gpu {1e3 * after_ms:9.2f} us "
              f"({k_after} block(s)), after another peer {1e3 * other_ms:9.2f} us ({k_other})", flush=True)
    # The bench's own noise: the same CPU dot timed as two peers.
    med = {(r["peer"], r["n"]): r["median_ms"] for r in rows}
    for n in sizes:
        gap = control_gap(med, n)
        if gap is not None:
            a, b = med[("cpu16", n)], med[(CONTROL, n)]
            print(f"noise: n = 2^{int(math.log2(n)):2d}  cpu16 {1e3 * a:9.2f} us, the same code as {CONTROL} "
                  f"{1e3 * b:9.2f} us: {100 * gap:.1f}% apart", flush=True)

    # The call's own cost at n = 16: the same two arrays every call, per call in blocks of calls.
    call_rows = []
    x16, y16 = x_all[:16].copy(), y_all[:16].copy()
    calls = [("numpy", lambda: np.dot(x16, y16)), ("dotcourse_auto", lambda: gpu.dot(x16, y16)),
             ("dotcourse_default", lambda: default.dot(x16, y16))]
    per_block, blocks = 2000, max(5, int(25 * args.reps_scale))
    cs = {k: [] for k, _ in calls}
    for r in range(blocks + 1):
        for k, fn in (calls if r % 2 else calls[::-1]):
            t0 = time.perf_counter()
            for _ in range(per_block):
                fn()
            if r >= 1:
                cs[k].append((time.perf_counter() - t0) / per_block)
    for k, _ in calls:
        call_rows.append({"peer": k, "n": 16, "blocks": blocks, "calls_per_block": per_block,
                          "median_us": 1e6 * statistics.median(cs[k]), "min_us": 1e6 * min(cs[k])})
    print("call cost n = 16: " + ", ".join(f"{r['peer']} {r['median_us']:.3f} us" for r in call_rows))

    # The host's read bandwidth, at the target's size and the largest.
    read_rows = []
    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        for n in sorted({min(1 << 26, n_top), n_top}):
            reps = max(5, int(15 * args.reps_scale))
            s = read_bandwidth(pool, args.threads, x_all[:n], y_all[:n], reps)
            read_rows.append({"n": n, "threads": args.threads, "reps": reps, "median_ms": 1e3 * statistics.median(s),
                              "best_gbps": 8 * n / min(s) / 1e9, "median_gbps": 8 * n / statistics.median(s) / 1e9})
            print(f"read bandwidth n = 2^{int(math.log2(n))}: {read_rows[-1]['best_gbps']:.1f} GB/s (best), "
                  f"{read_rows[-1]['median_gbps']:.1f} (median)")
    # Median against median: the dot's time is a median of calls, so the host's bandwidth is too
    # (the best of the reads is also in the CSV; it reads one lucky moment of the memory system).
    host_read = next(r["median_gbps"] for r in read_rows if r["n"] == min(1 << 26, n_top))

    # Arrays already on the GPU: torch.dot(...).item() against this library on the same tensors.
    device_rows = []
    if torch is not None and gpu.device != "cpu":
        for n in (1 << 20, min(1 << 26, n_top)):
            dx, dy = torch.from_numpy(x_all[:n]).cuda(), torch.from_numpy(y_all[:n]).cuda()
            calls = [("torch_dot_item", lambda: torch.dot(dx, dy).item()), ("dotcourse_device", lambda: gpu.dot(dx, dy))]
            reps = max(11, int(101 * args.reps_scale))
            s = {k: [] for k, _ in calls}
            for r in range(reps + 5):
                for k, fn in (calls if r % 2 else calls[::-1]):
                    t0 = time.perf_counter()
                    fn()
                    if r >= 5:
                        s[k].append(time.perf_counter() - t0)
            for k, _ in calls:
                device_rows.append({"peer": k, "n": n, "reps": reps, "median_ms": 1e3 * statistics.median(s[k])})
            print(f"device n = 2^{int(math.log2(n))}: torch.dot().item() {device_rows[-2]['median_ms']:.4f} ms, "
                  f"dotcourse {device_rows[-1]['median_ms']:.4f} ms")

    # The targets.
    targets = []
    peer_names = [name for name, _ in peers if name in ("numpy", "cpu16", "cupy", "torch")]

    def noise_note(n):
        gap = control_gap(med, n)
        return "" if gap is None else f"; cpu16 against itself {100 * gap:.1f}%"
    for ours_name, target in (("dotcourse_auto", "auto_not_slower_than_fastest_peer"),
                              ("dotcourse_default", "uncalibrated_not_slower_than_fastest_peer")):
        for n in sizes:
            best_name = min(peer_names, key=lambda k: med[(k, n)])
            auto = med[(ours_name, n)]
            targets.append({"target": target, "n": n, "value": auto,
                            "limit": NOISE * med[(best_name, n)], "unit": "ms",
                            "passed": auto <= NOISE * med[(best_name, n)],
                            "note": f"fastest peer {best_name} {med[(best_name, n)]:.4f} ms; 5% allowed for noise; "
                                    f"gap {1e3 * (auto - med[(best_name, n)]):+.2f} us" + noise_note(n)})
    n26 = 1 << 26
    if n26 in sizes:
        gbps = 8 * n26 / (med[("dotcourse_auto", n26)] / 1e3) / 1e9
        targets.append({"target": "auto_read_bandwidth_at_2^26", "n": n26, "value": gbps,
                        "limit": READ_TARGET * host_read, "unit": "GB/s", "passed": gbps >= READ_TARGET * host_read,
                        "note": f"85% of the host's read bandwidth {host_read:.1f} GB/s (median; 16 threads, numpy max of uint64 views)"})
    cmed = {r["peer"]: r["median_us"] for r in call_rows}
    for k in ("dotcourse_auto", "dotcourse_default"):
        targets.append({"target": "call_cost_at_16_not_slower_than_numpy", "n": 16, "value": cmed[k],
                        "limit": NOISE * cmed["numpy"], "unit": "us", "passed": cmed[k] <= NOISE * cmed["numpy"],
                        "note": f"{k}: the call's own cost; numpy.dot {cmed['numpy']:.3f} us"})
    dmed = {(r["peer"], r["n"]): r["median_ms"] for r in device_rows}
    for n in sorted({r["n"] for r in device_rows}):
        ours, theirs = dmed[("dotcourse_device", n)], dmed[("torch_dot_item", n)]
        targets.append({"target": "device_not_slower_than_torch_dot_item", "n": n, "value": ours,
                        "limit": NOISE * theirs, "unit": "ms", "passed": ours <= NOISE * theirs,
                        "note": f"torch.dot(...).item() {theirs:.4f} ms; 5% allowed for noise"})

    for name, data in (("07_library_host.csv", rows), ("07_library_host_read.csv", read_rows),
                       ("07_library_host_device.csv", device_rows), ("07_library_host_call.csv", call_rows),
                       ("07_library_host_targets.csv", [dict(t, passed=int(bool(t["passed"]))) for t in targets])):
        write_csv(args.out / name, data)  # booleans as 1/0 (tests/tools/test_csv_conventions.py)
    if not pathlib.Path(os.environ["DOTCOURSE_CALIBRATION"]).is_file():
        (args.out / "07_library_host_plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    failed = [t for t in targets if not t["passed"]]
    for t in targets:
        print(f"{'PASS' if t['passed'] else 'FAIL'}  {t['target']:40s} n = {t['n']:>10d}  {t['value']:10.4f} "
              f"{t['unit']} (limit {t['limit']:.4f})  {t['note']}")
    print(f"bench_host: wrote {args.out}/07_library_host*.csv; {len(targets) - len(failed)} of {len(targets)} "
          "targets met")
    print(f"bench_host: {process_threads()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    cpu.close()
    gpu.close()
    default.close()


if __name__ == "__main__":
    main()
