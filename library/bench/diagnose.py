#!/usr/bin/env python3
"""Chapter 07's Python diagnostics: where a dot of NumPy arrays at 2^20 spends its time beside
the frameworks' threads, and what each part of the PyTorch device-array path costs.

    python3 library/bench/diagnose.py --out results/local     (from the repository root)
writes 07_library_python_host.csv (one row per condition, each in a fresh interpreter: CuPy and
PyTorch imported or not; 50 numpy.dot calls before the loop, or one numpy.dot before every call;
the registration cache on or off; fresh arrays; DOTCOURSE_STAGE_THREADS and
OPENBLAS_NUM_THREADS) and 07_library_python_device.csv (microseconds per call, 10 blocks of 1000
calls of each, interleaved). cpu_per_wall is the process's CPU time over the loop's wall time:
threads that spin while dotcourse works show up there.

    python3 library/bench/diagnose.py --parts binding --out results/local
writes 07_library_binding_parts.csv: what bench_peers' binding pair (ctx.dot against the same C
call, alternated, median of the per-pair differences) is made of at 2^10 and 2^20: the method
against itself (the C call against the C call), ctx.dot, the binding's own work alone (ctx.dot of
empty arrays against the C call with n = 0: no GPU work in either), and 5 us of spinning before
the C call (work that touches nothing). The binding is the compiled extension dotcourse._core; the
bare C call goes through the benchmarks' own ctypes handle (c_abi.py).
"""
import argparse, csv, json, os, subprocess, sys, time, statistics, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))  # the dotcourse package

CHILD = r'''
import os, sys, time, json, statistics
sys.path.insert(0, sys.argv[2])
import numpy as np
cond = json.loads(sys.argv[1])
if cond.get("imports"):
    import cupy, torch
    torch.zeros(1, device="cuda"); cupy.zeros(1)
import dotcourse
n = 1 << 20
rng = np.random.default_rng(1)
x = rng.uniform(-1, 1, n).astype(np.float32); y = rng.uniform(-1, 1, n).astype(np.float32)
ctx = dotcourse.Context(n, pin_arrays=cond.get("pin", 0))
def task_cpu():
    out = {}
    for t in os.listdir("/proc/self/task"):
        try:
            f = open(f"/proc/self/task/{t}/stat").read()
            comm = f[f.index("(")+1:f.rindex(")")]
            parts = f[f.rindex(")")+2:].split()
            out[t] = (comm, int(parts[11]) + int(parts[12]))
        except Exception:
            pass
    return out
mode = cond["mode"]
reps = 60
for _ in range(5): ctx.dot(x, y, where="gpu"); np.dot(x, y)
if mode == "numpy_block":
    for _ in range(50): np.dot(x, y)
samples = []
c0 = os.times(); w0 = time.perf_counter(); t0 = task_cpu()
for r in range(reps):
    if mode == "interleaved_numpy":
        np.dot(x, y)
    a, b = (x.copy(), y.copy()) if cond.get("fresh") else (x, y)
    s = time.perf_counter(); ctx.dot(a, b, where="gpu"); samples.append((time.perf_counter() - s) * 1e3)
c1 = os.times(); w1 = time.perf_counter(); t1 = task_cpu()
busy = sorted(((t1[t][1] - t0.get(t, ("", 0))[1], t1[t][0]) for t in t1), reverse=True)[:6]
print(json.dumps({"cond": cond, "median_ms": statistics.median(samples), "min_ms": min(samples),
    "p90_ms": sorted(samples)[int(0.9*len(samples))], "cpu_over_wall": ((c1.user-c0.user)+(c1.system-c0.system))/(w1-w0),
    "threads": len(t1), "busiest_ticks": busy, "pinned": ctx.pinned()}))
ctx.close()
'''

def child(cond, env=None):
    e = dict(os.environ); e.update(env or {})
    here = str(pathlib.Path(__file__).resolve().parents[1] / "python")  # the dotcourse package
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cond), here], capture_output=True, text=True, env=e,
                       timeout=120)
    if r.returncode != 0:
        return {"cond": cond, "env": env, "error": r.stderr[-2000:]}
    d = json.loads(r.stdout.strip().splitlines()[-1]); d["env"] = env
    return d

def host_questions(out):
    rows = []
    plan = []
    for mode in ("alone", "numpy_block", "interleaved_numpy"):
        for pin, fresh in ((0, False), (4, False)):
            plan.append(({"imports": False, "mode": mode, "pin": pin, "fresh": fresh}, None))
    for mode in ("alone", "numpy_block", "interleaved_numpy"):
        plan.append(({"imports": True, "mode": mode, "pin": 0}, None))
    plan.append(({"imports": True, "mode": "interleaved_numpy", "pin": 4}, None))
    for mode in ("numpy_block", "interleaved_numpy"):
        plan.append(({"imports": False, "mode": mode, "pin": 0}, {"OPENBLAS_NUM_THREADS": "1"}))
    for t in ("2", "4", "16"):
        for mode in ("alone", "interleaved_numpy"):
            plan.append(({"imports": False, "mode": mode, "pin": 0}, {"DOTCOURSE_STAGE_THREADS": t}))
    plan.append(({"imports": False, "mode": "alone", "pin": 4, "fresh": True}, None))
    deadline = time.time() + float(os.environ.get("DIAG_SECONDS", "90"))
    for cond, env in plan:
        if time.time() > deadline:
            print("diag: out of time, skipped", cond, env); continue
        rows.append(child(cond, env)); print(json.dumps(rows[-1]), flush=True)
    write_host_csv(rows, out / "07_library_python_host.csv")


def write_host_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "frameworks", "pin_arrays", "fresh", "stage_threads", "openblas_threads", "median_ms",
                    "min_ms", "p90_ms", "cpu_per_wall", "threads"])
        for r in rows:
            if "error" in r:
                continue
            c, env = r["cond"], r.get("env") or {}
            w.writerow([c["mode"], int(bool(c.get("imports"))), c.get("pin", 0), int(bool(c.get("fresh"))),
                        env.get("DOTCOURSE_STAGE_THREADS", "default"), env.get("OPENBLAS_NUM_THREADS", "default"),
                        r["median_ms"], r["min_ms"], r["p90_ms"], r["cpu_over_wall"], r["threads"]])

def device_questions(out):
    import numpy as np, torch, cupy as cp
    import dotcourse
    n = 1 << 20
    x = np.random.default_rng(2).uniform(-1, 1, n).astype(np.float32); y = x[::-1].copy()
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    cx, cy = cp.asarray(x), cp.asarray(y)
    ctx = dotcourse.Context(n)
    from dotcourse._arrays import from_cai as _from_cai, vector as _device_view
    fns = {
        "torch.dot.item": lambda: torch.dot(tx, ty).item(),
        "dotcourse_torch": lambda: ctx.dot(tx, ty),
        "dotcourse_cupy": lambda: ctx.dot(cx, cy),
        "py_only_torch_fastpath_x2": lambda: (_device_view("x", tx), _device_view("y", ty)),
        "py_only_torch_cai_x2": lambda: (_from_cai("x", tx), _from_cai("y", ty)),
        "py_only_cupy_cai_x2": lambda: (_from_cai("x", cx), _from_cai("y", cy)),
        "torch_current_stream_public": lambda: torch.cuda.current_stream().cuda_stream,
        "cupy.dot.float": lambda: float(cp.dot(cx, cy)),
    }
    res = {k: [] for k in fns}
    for f in fns.values():
        for _ in range(200): f()
    for block in range(10):  # interleaved blocks of 1000 calls: 10^4 calls each
        for k, f in fns.items():
            s = time.perf_counter()
            for _ in range(1000): f()
            res[k].append((time.perf_counter() - s) * 1e3)  # us per call = ms per 1000
    summary = {k: {"median_us_per_call": statistics.median(v), "min_us": min(v)} for k, v in res.items()}
    for k, v in summary.items(): print(f"{k:32s} {v['median_us_per_call']:8.2f} us/call (best block {v['min_us']:.2f})")
    ctx.close()
    write_device_csv(summary, out / "07_library_python_device.csv")


def binding_parts(out, reps=400):
    import ctypes
    import c_abi
    import numpy as np
    import dotcourse

    def pair(f, g):
        for _ in range(5):
            f(); g()
        firsts, seconds, diffs = [], [], []
        clock = time.perf_counter
        for r in range(reps):
            a, b = (f, g) if r % 2 else (g, f)  # the order alternates
            t0 = clock(); a(); t1 = clock(); b(); t2 = clock()
            tf, tg = (t1 - t0, t2 - t1) if a is f else (t2 - t1, t1 - t0)
            firsts.append(tf * 1e3); seconds.append(tg * 1e3); diffs.append((tg - tf) * 1e6)
        return statistics.median(firsts), statistics.median(seconds), statistics.median(diffs)

    rows = []
    rng = np.random.default_rng(3)
    with dotcourse.Context(1 << 20) as ctx:
        for n in (1 << 10, 1 << 20):
            x = rng.uniform(-1, 1, n).astype(np.float32); y = rng.uniform(-1, 1, n).astype(np.float32)
            for _ in range(3):
                ctx.dot(x, y, where="gpu")  # the registration cache pins arrays of 1 MiB and more here
            lib, handle = c_abi.library(ctx)
            out_f = ctypes.c_float(); out_p = ctypes.byref(out_f)
            px, py, c = x.ctypes.data, y.ctypes.data, lib.dotcourse_dot
            x0, y0 = x[:0], y[:0]

            def spin_then_call():
                t = time.perf_counter()
                while time.perf_counter() - t < 5e-6:
                    pass
                c(handle, px, py, n, out_p)

            parts = [("c_call_vs_itself", lambda: c(handle, px, py, n, out_p), lambda: c(handle, px, py, n, out_p)),
                     ("ctx_dot", lambda: c(handle, px, py, n, out_p), lambda: ctx.dot(x, y, where="gpu")),
                     # the binding's own steps: ctx.dot of empty arrays against the C call with n = 0
                     ("ctx_dot_n0_binding_work", lambda: c(handle, px, py, 0, out_p), lambda: ctx.dot(x0, y0, where="gpu")),
                     ("spin_5us_then_c_call", lambda: c(handle, px, py, n, out_p), spin_then_call)]
            for name, f, g in parts:
                first, second, diff = pair(f, g)
                rows.append({"part": name, "n": n, "reps": reps, "c_call_ms": first, "other_ms": second, "diff_us": diff})
                print(f"binding part n=2^{n.bit_length() - 1:<2d} {name:24s} {diff:7.2f} us ({second:.4f} against {first:.4f} ms)",
                      flush=True)
            ctx.unpin()
    with open(out / "07_library_binding_parts.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def write_device_csv(summary, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["what", "n", "median_us_per_call", "best_block_us_per_call"])
        for k, v in summary.items():
            w.writerow([k, 1 << 20, v["median_us_per_call"], v["min_us"]])

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results/local"), help="folder for the CSVs")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("DIAG_SECONDS", "300")),
                   help="stop starting new host conditions after this long")
    p.add_argument("--parts", default="device,host",
                   help="which diagnostics, comma-separated: device, host, binding (default device,host)")
    args = p.parse_args()
    parts = [q for q in args.parts.split(",") if q]
    unknown = sorted(set(parts) - {"device", "host", "binding"})
    if unknown:
        p.error(f"unknown part(s) {', '.join(unknown)}: choose from device, host, binding")
    os.environ["DIAG_SECONDS"] = str(args.seconds)
    args.out.mkdir(parents=True, exist_ok=True)
    if "device" in parts:
        device_questions(args.out)
    if "host" in parts:
        host_questions(args.out)
    if "binding" in parts:
        binding_parts(args.out)
