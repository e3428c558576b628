"""One thread policy per process (issue 41 item 2): however many contexts a program makes, the
library's threads never outnumber the CPUs of its affinity mask, and idle they sleep.

Three CPU contexts of 16 threads each (as bench_host.py runs three contexts in one process) in a
child Python limited to two CPUs (os.sched_setaffinity, like taskset -c 0,1), called in turns. Each
context with its own pool started 3 x 15 threads that polled for work on 2 cores; one pool for the
process starts one. Structure only, no timing: thread counts from /proc/self/task and their states
('S': asleep)."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import dotcourse

CHILD = textwrap.dedent(r"""
    import json, os, sys, time
    cpus = sorted(os.sched_getaffinity(0))[:2]
    os.sched_setaffinity(0, cpus)
    import numpy as np
    import dotcourse

    def threads():
        out = []
        for tid in os.listdir("/proc/self/task"):
            if int(tid) == os.getpid():
                continue
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = f.read().strip()
                with open(f"/proc/self/task/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            out.append((name, state))
        return out

    before = len(threads())
    contexts = [dotcourse.Context(1, device="cpu", cpu_threads=16) for _ in range(3)]
    n = 1 << 17  # above the size the CPU dot computes on the calling thread alone
    x = (np.arange(n) % 13 - 6).astype(np.float32)
    y = (np.arange(n) % 7 * 0.5).astype(np.float32)
    results = [c.dot(x, y) for _ in range(20) for c in contexts]
    after = len(threads())
    # Idle, the pool's threads park after their poll window; real time only bounds a failure.
    for _ in range(2000):
        pool = [s for name, s in threads() if name == "course-pool"]
        if all(s == "S" for s in pool):
            break
        time.sleep(0.01)
    print(json.dumps({"cpus": len(os.sched_getaffinity(0)), "before": before, "after": after,
                      "pool_states": pool, "results": sorted(set(results)),
                      "expected": float(np.dot(x.astype(np.float64), y.astype(np.float64)))}))
    for c in contexts:
        c.close()
""")


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").is_dir() or not hasattr(os, "sched_setaffinity"),
                    reason="needs Linux's /proc/self/task and sched_setaffinity")
def test_contexts_share_one_pool_no_more_threads_than_cpus():
    env = dict(os.environ)
    package_parent = str(pathlib.Path(dotcourse.__file__).resolve().parents[1])
    env["PYTHONPATH"] = package_parent + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    data = json.loads(child.stdout.strip().splitlines()[-1])
    added = data["after"] - data["before"]
    assert added <= data["cpus"] - 1, (
        f"three contexts of 16 threads added {added} threads on {data['cpus']} CPU(s): the library must run "
        "every context on one pool per process (common/course/thread_pool.hpp process_pool)")
    assert len(data["pool_states"]) <= data["cpus"] - 1
    assert all(s == "S" for s in data["pool_states"]), f"idle pool threads must sleep: {data['pool_states']}"
    # 16 parts on 2 threads, from three contexts: one value, the same bits every call.
    assert len(data["results"]) == 1
    assert data["results"][0] == pytest.approx(data["expected"], rel=1e-6)
