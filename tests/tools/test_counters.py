"""Tests of tools/counters.py and tools/telemetry.py with a fake `ncu --csv` output and a fake
nvidia-smi: no GPU, no Nsight Compute, no build."""
import csv
import importlib.util
import json
import os
import pathlib
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ct = load("counters")
tm = load("telemetry")

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
V1 = "void ch06::(anonymous namespace)::dot_kernel1(const float *, const float *, unsigned long, float *)"
FINISH = "ch06::(anonymous namespace)::finish_kernel(const float *, unsigned long, float *)"


def metric_lines(launch_id, kernel, metrics):
    out = []
    for name, (unit, value) in metrics.items():
        out.append(f'"{launch_id}","4242","06_ladder","127.0.0.1","{kernel}","1","13","(256, 1, 1)","(262144, 1, 1)",'
                   f'"0","9.0","Command line profiler metrics","{name}","{unit}","{value}"')
    return out


V1_METRICS = {
    "gpu__time_duration.sum": ("nsecond", "250,000"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "62.5"),
    "dram__bytes_read.sum": ("Mbyte", "536.870912"),
    "dram__bytes_write.sum": ("byte", "1,048,576"),
    "lts__t_sector_hit_rate.pct": ("%", "3.2"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "88.1"),
    "smsp__issue_active.avg.pct_of_peak_sustained_active": ("%", "41.0"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("", "1,000"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": ("", "24"),
    "smsp__inst_executed.sum": ("inst", "134,217,728"),
    "smsp__thread_inst_executed.sum": ("inst", "2,147,483,648"),
    "smsp__cycles_elapsed.avg.per_second": ("cycle/nsecond", "1.755"),
    "dram__cycles_elapsed.avg.per_second": ("cycle/second", "2,619,000,000"),
    "launch__grid_size": ("", "262,144"),
    "launch__block_size": ("", "256"),
    "launch__registers_per_thread": ("register/thread", "16"),
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": ("ratio", "9.5"),
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": ("ratio", "12.25"),
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio": ("ratio", "0.5"),
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": ("ratio", "1.5"),
}
FINISH_METRICS = {"gpu__time_duration.sum": ("usecond", "3.5"), "smsp__inst_executed.sum": ("inst", "5000"),
                  "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": ("ratio", "2")}

NCU_LOG = "\n".join(["==PROF== Connected to process 4242 (/course/build/solutions/bin/06_ladder)",
                     '==PROF== Profiling "dot_kernel1": 0%....50%....100% - 41 passes',
                     HEADER] + metric_lines(0, V1, V1_METRICS) + metric_lines(1, FINISH, FINISH_METRICS)
                    + ["==PROF== Disconnected from process 4242"]) + "\n"
N = 1 << 26


class ParseNcu(unittest.TestCase):
    def test_launches_in_order_with_base_units(self):
        launches = ct.parse_ncu_csv(NCU_LOG)
        self.assertEqual([l["kernel"] for l in launches], [V1, FINISH])
        m = launches[0]["metrics"]
        self.assertAlmostEqual(m["gpu__time_duration.sum"], 250e-6)
        self.assertAlmostEqual(m["dram__bytes_read.sum"], 536870912)
        self.assertAlmostEqual(m["smsp__cycles_elapsed.avg.per_second"], 1.755e9)
        self.assertEqual(m["launch__grid_size"], 262144)
        self.assertAlmostEqual(launches[1]["metrics"]["gpu__time_duration.sum"], 3.5e-6)

    def test_not_the_details_page(self):
        with self.assertRaises(ct.CountersError):
            ct.parse_ncu_csv('"ID","Kernel Name","dram__bytes_read.sum"\n"0","k","1"\n')
        self.assertEqual(ct.parse_ncu_csv("==PROF== nothing profiled\n"), [])

    def test_units(self):
        self.assertEqual(ct.to_base(2.0, "Gbyte"), 2e9)
        self.assertEqual(ct.to_base(5.0, "msecond"), 5e-3)
        self.assertEqual(ct.to_base(1.5, "Ghz"), 1.5e9)
        self.assertEqual(ct.to_base(88.0, "%"), 88.0)
        self.assertIsNone(ct.number("n/a"))
        self.assertEqual(ct.number("1,234.5"), 1234.5)


class Rows(unittest.TestCase):
    def test_a_version_of_two_kernels(self):
        run = ct.runs_for("06_ladder", "v1_divergent", N)[0]
        rows = ct.rows_for_run("06_ladder", run, ct.parse_ncu_csv(NCU_LOG), "2025.3.1")
        self.assertEqual([(r["version"], r["kernel"]) for r in rows],
                         [("v1_divergent", "dot_kernel1"), ("v1_divergent", "finish_kernel")])
        r = rows[0]
        self.assertEqual(r["inst_per_element"], "2")            # 2^27 warp instructions / 2^26 elements
        self.assertEqual(r["thread_inst_per_element"], "32")
        self.assertEqual(r["dram_pct_peak"], "62.5")
        self.assertEqual(r["l2_hit_pct"], "3.2")
        self.assertEqual(r["achieved_occupancy_pct"], "88.1")
        self.assertEqual(r["issue_slot_pct"], "41")
        self.assertEqual((r["shared_bank_conflicts"], r["shared_bank_conflicts_ld"]), ("1024", "1000"))
        self.assertAlmostEqual(float(r["dram_gbps"]) / ((536870912 + 1048576) / 250e-6 / 1e9), 1, places=5)
        self.assertAlmostEqual(float(r["dram_bytes_per_element"]) / ((536870912 + 1048576) / N), 1, places=5)
        self.assertEqual((r["stall_1"], r["stall_2"], r["stall_3"]), ("long_scoreboard", "barrier", "wait"))
        self.assertEqual(r["stall_1_cycles"], "12.25")
        self.assertEqual((r["sm_clock_mhz"], r["dram_clock_mhz"]), ("1755", "2619"))
        self.assertEqual((r["clock_control"], r["ncu_version"], r["grid_size"]), ("--clock-control none", "2025.3.1", "262144"))
        self.assertEqual(rows[1]["stall_2"], "")  # one stall reason only: the others are empty

    def test_a_kernel_that_was_not_profiled(self):
        run = ct.runs_for("06_ladder", "v1_divergent", N)[0]
        rows = ct.rows_for_run("06_ladder", run, ct.parse_ncu_csv(NCU_LOG)[:1])
        self.assertIn("no launch", rows[1]["note"])
        self.assertEqual(rows[1]["duration_us"], "")

    def test_names_ncu_spells_otherwise_are_matched_by_launch_order(self):
        run = ct.runs_for("06_ladder", "v1_divergent", N)[0]
        log = "\n".join([HEADER] + metric_lines(0, "dot_kernel1", FINISH_METRICS) + metric_lines(1, "finish_kernel", FINISH_METRICS))
        rows = ct.rows_for_run("06_ladder", run, ct.parse_ncu_csv(log))
        self.assertEqual([r["kernel"] for r in rows], ["dot_kernel1", "finish_kernel"])
        self.assertTrue(all("launch order" in r["note"] for r in rows))

    def test_chapter_10_speed_of_light_row(self):
        run = ct.runs_for("10_dtypes", "f32_i8", N)[0]
        self.assertEqual(len(run.kernels), 2)
        course = "void ch10::(anonymous namespace)::dot_kernel<float, signed char, float>(const float *, ...)"
        floor = "ch10::(anonymous namespace)::speed_of_light_kernel(const unsigned char *, unsigned long, ...)"
        log = "\n".join([HEADER] + metric_lines(0, course, FINISH_METRICS) + metric_lines(1, floor, FINISH_METRICS))
        rows = ct.rows_for_run("10_dtypes", run, ct.parse_ncu_csv(log))
        self.assertEqual([(r["version"], r["config"]) for r in rows], [("f32_i8", ""), ("speed_of_light", "f32_i8")])

    def test_which_runs(self):
        self.assertIsInstance(ct.runs_for("01_timing", "add_cpu", N), str)
        self.assertIsInstance(ct.runs_for("01_timing", "add_gpu_copies", N), str)
        add = ct.runs_for("01_timing", "add_gpu", N)
        self.assertEqual([r.config for r in add], ["float", "double"])  # one run per precision
        self.assertTrue(all(len(r.kernels) == 1 for r in add))
        self.assertIn("--per-thread", ct.runs_for("05_many_blocks", "two_level", N)[0].args)
        for ch in ct.sass_table.KERNELS:
            for v in ct.sass_table.KERNELS[ch]:
                runs = ct.runs_for(ch, v, N)
                self.assertTrue(isinstance(runs, str) or runs, (ch, v))

    def test_the_command(self):
        run = ct.runs_for("06_ladder", "v9_float4", N)[0]
        cmd = ct.ncu_command("ncu", pathlib.Path("bin/06_ladder"), run, ["a.sum", "b.ratio"], "log.csv")
        self.assertEqual(cmd[cmd.index("--clock-control") + 1], "none")
        self.assertEqual(cmd[cmd.index("--launch-count") + 1], "2")
        self.assertEqual(cmd[cmd.index("--metrics") + 1], "a.sum,b.ratio")
        self.assertTrue(cmd[cmd.index("--kernel-name") + 1].startswith("regex:"))
        self.assertEqual(cmd[cmd.index("bin/06_ladder") + 1:][:4], ["--kernel", "v9_float4", "--n", str(N)])

    def test_unknown_metrics_are_named_by_ncu_errors(self):
        log = "==ERROR== Failed to find metric smsp__average_warps_issue_stalled_misc_per_issue_active.ratio\n"
        self.assertEqual(ct.unknown_metrics(log, ct.all_metrics()),
                         ["smsp__average_warps_issue_stalled_misc_per_issue_active.ratio"])
        log = "==ERROR== Failed to find metric smsp__average_warps_issue_stalled_misc_per_issue_active\n"
        self.assertEqual(ct.unknown_metrics(log, ct.all_metrics()),
                         ["smsp__average_warps_issue_stalled_misc_per_issue_active.ratio"])
        self.assertEqual(ct.unknown_metrics("==ERROR== ERR_NVGPUCTRPERM\n", ct.all_metrics()), [])


FAKE_NCU = textwrap.dedent('''\
    #!{python}
    import pathlib, sys
    args = sys.argv[1:]
    if args == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0.0 (build 1)")
        sys.exit(0)
    log = pathlib.Path(args[args.index("--log-file") + 1])
    metrics = args[args.index("--metrics") + 1].split(",")
    bad = "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio"
    if bad in metrics:
        log.write_text("==ERROR== Failed to find metric " + bad + "\\n")
        sys.exit(1)
    log.write_text(pathlib.Path({fixture!r}).read_text())
''')


class EndToEnd(unittest.TestCase):
    def test_without_ncu_it_says_so_and_skips(self):
        with mock.patch.object(ct, "find_ncu", lambda: None):
            self.assertEqual(ct.main(["06_ladder"]), ct.EXIT_SKIP)

    def test_with_a_fake_ncu(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            (tmp / "fixture.csv").write_text(NCU_LOG)
            ncu = tmp / "ncu"
            ncu.write_text(FAKE_NCU.format(python=sys.executable, fixture=str(tmp / "fixture.csv")))
            ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
            (tmp / "bin").mkdir()
            (tmp / "bin" / "06_ladder").write_text("")
            with mock.patch.object(ct, "find_ncu", lambda: str(ncu)):
                rc = ct.main(["--bin", str(tmp / "bin"), "--out", str(tmp / "out"), "--only", "v1_divergent",
                              "06_ladder"])
            self.assertEqual(rc, 0)
            with (tmp / "out" / "06_ladder_counters.csv").open(newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual([r["kernel"] for r in rows], ["dot_kernel1", "finish_kernel"])
            self.assertEqual(rows[0]["ncu_version"], "2099.1.0.0")
            self.assertIn("metrics this ncu lacks", rows[0]["note"])  # dropped, then the run went on
            self.assertTrue((tmp / "out" / "ncu").is_dir())           # ncu's own log kept
            for name in rows[0]:
                self.assertRegex(name, r"^[a-z][a-z0-9_]*$")
            for r in rows:
                for cell in r.values():
                    self.assertNotIn(cell.strip().lower(), {"nan", "none", "yes", "no", "true", "false"})

    def test_a_budget_stops_new_runs_and_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            (tmp / "bin").mkdir()
            (tmp / "bin" / "05_many_blocks").write_text("")
            with mock.patch.object(ct, "find_ncu", lambda: "/nonexistent/ncu"), \
                    mock.patch.object(ct, "ncu_version", lambda ncu: ""), \
                    mock.patch.object(ct, "profile", side_effect=AssertionError("no run may start")):
                self.assertEqual(ct.main(["--bin", str(tmp / "bin"), "--out", str(tmp), "--budget", "1e-9",
                                          "05_many_blocks"]), 0)
            with (tmp / "05_many_blocks_counters.csv").open(newline="") as f:
                rows = list(csv.DictReader(f))
        self.assertEqual({r["version"] for r in rows}, set(ct.sass_table.KERNELS["05_many_blocks"]))
        self.assertTrue(all("budget" in r["note"] for r in rows))


class Telemetry(unittest.TestCase):
    @staticmethod
    def smi(outputs):
        """A runner that answers nvidia-smi queries from `outputs` (field list -> stdout, or None)."""
        def run(cmd):
            fields = cmd[1][len("--query-gpu="):]
            out = outputs.get(fields)
            return subprocess.CompletedProcess(cmd, 0 if out is not None else 6, out or "", "")
        return run

    BASE = "index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw"
    COUNTERS = "index," + ",".join(f"clocks_event_reasons_counters.{c}" for c in tm.COUNTERS)

    def test_a_sample_with_the_new_field_names(self):
        runner = self.smi({self.BASE + ",clocks_event_reasons.active":
                           "0, NVIDIA H100 80GB HBM3, 1980, 2619, 41, 312.50, 0x0000000000000004\n",
                           self.COUNTERS: "0, 1000, 0, 0, 0, 0\n"})
        s = tm.sample(runner)
        self.assertEqual(len(s), 1)
        self.assertEqual((s[0]["sm_mhz"], s[0]["mem_mhz"], s[0]["temperature_c"], s[0]["power_w"]),
                         (1980.0, 2619.0, 41.0, 312.5))
        self.assertEqual(s[0]["reasons"], ["sw_power_cap"])
        self.assertTrue(s[0]["throttling"])
        self.assertEqual(s[0]["counters_us"]["sw_power_cap"], 1000.0)

    def test_older_drivers_and_no_counters(self):
        runner = self.smi({self.BASE + ",clocks_throttle_reasons.active":
                           "0, NVIDIA H100, 1755, 2619, 35, 90.1, 0x0000000000000001\n"})
        s = tm.sample(runner)
        self.assertEqual(s[0]["reasons"], ["gpu_idle"])
        self.assertFalse(s[0]["throttling"])  # idle is not throttling
        self.assertNotIn("counters_us", s[0])

    def test_no_nvidia_smi(self):
        self.assertEqual(tm.sample(lambda cmd: None), [])
        rec = tm.record([], [])
        self.assertIsNone(rec["throttled"])
        self.assertEqual(tm.footer_text(rec), "")

    def test_a_run_that_throttled_between_two_quiet_samples(self):
        quiet = {"index": 0, "reasons_mask": 0, "reasons": [], "throttling": False}
        before = [dict(quiet, counters_us={"sw_power_cap": 100.0, "hw_thermal_slowdown": 0.0})]
        after = [dict(quiet, counters_us={"sw_power_cap": 5100.0, "hw_thermal_slowdown": 0.0})]
        rec = tm.record(before, after)
        self.assertTrue(rec["throttled"])
        self.assertEqual(rec["reasons"], ["sw_power_cap"])
        self.assertEqual(rec["throttled_us"], {"sw_power_cap": 5000.0})
        self.assertEqual(tm.footer_text(rec), "GPU throttled (sw power cap)")
        self.assertEqual(tm.footer_text(tm.record(before, before)), "no throttling seen")

    def test_run_metadata_keeps_the_record(self):
        rm = load("run_metadata")
        with tempfile.TemporaryDirectory() as tmp:
            before = pathlib.Path(tmp) / "before.json"
            before.write_text(json.dumps([{"index": 0, "reasons_mask": 4, "reasons": ["sw_power_cap"],
                                           "throttling": True}]))
            out = pathlib.Path(tmp) / "run_metadata.json"
            self.assertEqual(rm.main(["--out", str(out), "--bin", str(pathlib.Path(tmp) / "no-bin"), "--chapter",
                                      "06_ladder", "--telemetry-before", str(before)]), 0)
            record = json.loads(out.read_text())["chapters"]["06_ladder"]
        self.assertTrue(record["telemetry"]["throttled"])
        self.assertEqual(record["telemetry"]["reasons"], ["sw_power_cap"])


if __name__ == "__main__":
    unittest.main()
