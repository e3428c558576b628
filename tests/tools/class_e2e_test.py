#!/usr/bin/env python3
"""tools/grade-class end to end with the real tools/grade, on chapter 02 (CPU only, no GPU needed):
locally, then through a real single-node Slurm started here (munged, slurmctld, slurmd on
localhost; Debian's slurm-wlm and munge), the way docs/grading.md says to run it on a cluster.

    tests/tools/class_e2e_test.py                 # both (the CI step; Slurm needs root)
    tests/tools/class_e2e_test.py --local         # the local class only
    tests/tools/class_e2e_test.py --slurm         # the Slurm class only

Local: two submissions, the solutions and the unfilled tree, one CPU worker; the solutions get every
point of chapter 02's correctness, the unfilled tree none; a second run grades nothing (resume).
Slurm: the same two and a negative case (tests/negative/02_threads_partials_chunk_short: some points,
not all), a job array of three tasks submitted with sbatch, waited for (with a bound), merged with
--merge. Both share one build root, so that the Slurm tasks build incrementally on the local run's
build. Exit codes: 0 every check passed · 1 a check failed · 2 cannot run (no Slurm, not root).
"""
import argparse
import csv
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRADE_CLASS = ROOT / "tools" / "grade-class"
GRADE_ARGS = ["--chapter", "02", "--no-performance", "--no-sanitize"]
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def make_class(dest, kinds):
    subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "make_class.py"), str(dest)] + kinds,
                   check=True, stdout=subprocess.DEVNULL)


def gradebook(out):
    with open(out / "gradebook.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def run(cmd, **kw):
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], **kw)


def local(tmp, build_root):
    cls, out = tmp / "class-local", tmp / "out-local"
    make_class(cls, ["solutions", "unfilled"])
    t0 = time.monotonic()
    p = run([GRADE_CLASS, cls, "--out", out, "--workers", "1", "--build-root", build_root] + GRADE_ARGS)
    print(f"(local class of 2: {time.monotonic() - t0:.0f} s)")
    check(p.returncode == 0, f"tools/grade-class exits 0 (it exited {p.returncode})")
    book = gradebook(out)
    sol, unf = book.get("solutions", {}), book.get("unfilled", {})
    check(sol.get("status") == "graded" and unf.get("status") == "graded",
          f"both graded (solutions: {sol.get('status')}, unfilled: {unf.get('status')})")
    check(sol.get("02_correctness") not in (None, "", "0") and sol.get("02_correctness") == sol.get("max"),
          f"the solutions get every point of chapter 02 ({sol.get('02_correctness')} of {sol.get('max')})")
    check(unf.get("02_correctness") == "0", f"the unfilled tree gets none ({unf.get('02_correctness')})")
    check((out / "solutions" / "report.md").is_file() and (out / "unfilled" / "results.json").is_file(),
          "each student's report.md and results.json are in their folder")
    check("## Per chapter" in (out / "class_summary.md").read_text(), "class_summary.md has the per-chapter table")
    p = run([GRADE_CLASS, cls, "--out", out, "--workers", "1", "--build-root", build_root] + GRADE_ARGS,
            stderr=subprocess.PIPE, text=True)
    sys.stderr.write(p.stderr)
    check(p.stderr.count("skipped (unchanged)") == 2, "run again: both skipped (unchanged)")
    return sol.get("max")


SLURM_CONF = """ClusterName=dotcourse
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={port}
SlurmdPort={port1}
AuthType=auth/munge
AuthInfo=socket={tmp}/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/slurmctld.log
SlurmdLogFile={tmp}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Slurm:
    """munged, slurmctld and slurmd on this machine, with every file in one temporary folder."""

    def __init__(self, tmp):
        self.tmp, self.procs = tmp, []
        (tmp / "state").mkdir(parents=True)
        (tmp / "spool").mkdir()
        key = tmp / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        port = free_port()
        self.host = socket.gethostname().split(".")[0]
        conf = tmp / "slurm.conf"
        conf.write_text(SLURM_CONF.format(host=self.host, port=port, port1=port + 1, tmp=tmp,
                                          cpus=os.cpu_count() or 2))
        self.env = dict(os.environ, SLURM_CONF=str(conf))
        self.start(["munged", "-F", "--force", f"--socket={tmp}/munge.socket", f"--key-file={key}",
                    f"--log-file={tmp}/munged.log", f"--pid-file={tmp}/munged.pid", f"--seed-file={tmp}/munged.seed"])
        self.wait_for(lambda: (tmp / "munge.socket").exists(), "munged's socket")
        self.start(["slurmctld", "-D", "-c", "-i"])
        self.wait_for(lambda: subprocess.run(["scontrol", "ping"], env=self.env, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True).stdout.count("UP") > 0,
                      "slurmctld")
        self.start(["slurmd", "-D", "-N", self.host])
        self.wait_for(lambda: "idle" in subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, text=True,
                                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout,
                      "the node to be idle")

    def start(self, cmd):
        log = open(self.tmp / f"{cmd[0]}.out", "w")
        self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def wait_for(self, ready, what, limit=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if ready():
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        self.dump()
        raise RuntimeError(f"Slurm did not start: no {what} after {time.monotonic() - t0:.0f} s")

    def dump(self):
        for name in ("munged.out", "munged.log", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"):
            f = self.tmp / name
            if f.exists():
                print(f"--- {name} (last lines) ---\n" + "\n".join(f.read_text(errors="replace").splitlines()[-20:]))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def slurm(tmp, build_root, full_marks):
    if os.geteuid() != 0 or not all(shutil.which(x) for x in ("munged", "slurmctld", "slurmd", "sbatch")):
        print("class_e2e_test: the Slurm test needs root and Debian's slurm-wlm and munge "
              "(apt-get install slurm-wlm munge)", file=sys.stderr)
        return 2
    cls, out = tmp / "class-slurm", tmp / "out-slurm"
    make_class(cls, ["solutions", "unfilled", "neg:02_threads_partials_chunk_short"])
    daemons = Slurm(tmp / "slurm")
    try:
        p = run([GRADE_CLASS, cls, "--out", out, "--slurm", "--slurm-no-gpu", "--slurm-cpus", str(os.cpu_count() or 2),
                 "--slurm-time", "20", "--build-root", build_root] + GRADE_ARGS, env=daemons.env)
        check(p.returncode == 0, "--slurm writes the job array")
        script = (out / "grade-class.sbatch").read_text()
        check("#SBATCH --array=0-2" in script and "--gres" not in script,
              "the script is a job array of 3 tasks, no GPU asked for")
        t0 = time.monotonic()
        # sbatch --wait returns when every task of the array has ended; the bound is for a stuck queue.
        p = run(["timeout", "900", "sbatch", "--wait", out / "grade-class.sbatch"], env=daemons.env)
        print(f"(Slurm array of 3: {time.monotonic() - t0:.0f} s)")
        check(p.returncode == 0, f"sbatch --wait: every task ended well (exit {p.returncode})")
        for log in sorted((out / "slurm").glob("task-*.log")):
            print(f"--- {log.name} (last lines) ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-4:]))
        p = run([GRADE_CLASS, "--merge", out])
        check(p.returncode == 0, "--merge exits 0")
        book = gradebook(out)
        sol, unf = book.get("solutions", {}), book.get("unfilled", {})
        neg = book.get("neg-02_threads_partials_chunk_short", {})
        check(sol.get("status") == "graded" and sol.get("02_correctness") == full_marks,
              f"Slurm: the solutions get every point ({sol.get('02_correctness')} of {full_marks})")
        check(unf.get("status") == "graded" and unf.get("02_correctness") == "0",
              f"Slurm: the unfilled tree gets none ({unf.get('02_correctness')})")
        got = float(neg.get("02_correctness") or -1)
        check(neg.get("status") == "graded" and 0 < got < float(full_marks or 0),
              f"Slurm: the negative case gets some points, not all ({neg.get('02_correctness')})")
    finally:
        if failures:
            daemons.dump()
        daemons.stop()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--local", action="store_true")
    ap.add_argument("--slurm", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    both = not args.local and not args.slurm
    tmp = Path(tempfile.mkdtemp(prefix="grade-class-e2e-"))
    build_root = tmp / "builds"
    code = 0
    try:
        full = None
        if args.local or both:
            full = local(tmp, build_root)
        if args.slurm or both:
            if full is None:  # chapter 02's correctness points, from its manifest
                import json
                data = json.loads((ROOT / "tools" / "grading" / "02_cpu_dot.json").read_text())
                full = f"{sum(r['points'] * r.get('expect', 1) for r in data['correctness']):g}"
            code = slurm(tmp, build_root, full)
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"class_e2e_test: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    if code == 0:
        print("class_e2e_test: every check passed")
    return code


if __name__ == "__main__":
    sys.exit(main())
