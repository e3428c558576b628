"""Tests of tools/why_table.py: no GPU, no build. The main kernel of a version is its longest, the
columns come from the right source, and --check fails on a stale table."""
import pathlib
import sys
import tempfile
import unittest

sys.path.append(str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import why_table  # noqa: E402

COUNTERS = """chapter,version,config,kernel,n,duration_us,dram_pct_peak,inst_per_element,shared_bank_conflicts,stall_1,achieved_occupancy_pct
06_ladder,v1,,first_pass,1024,10.0,50,8.0,2048,wait,90
06_ladder,v1,,finish,1024,1.0,1,0.1,0,barrier,40
06_ladder,v2,,one_pass,1024,5.0,90,0.5,0,long_scoreboard,99
"""
SASS = """chapter,version,kernel,symbol,arch,note,ldg_32,ldg_128,shfl,bar,lds,sts
06_ladder,v1,first_pass,s1,sm_90,,2,0,0,2,3,2
06_ladder,v1,finish,s2,sm_90,,1,33,15,1,1,1
06_ladder,v2,one_pass,s3,sm_90,,6,6,35,3,2,2
"""


class WhyTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        (self.dir / "06_ladder_counters.csv").write_text(COUNTERS)
        (self.dir / "06_ladder_sass.csv").write_text(SASS)

    def tearDown(self):
        self.tmp.cleanup()

    def test_main_kernel_and_columns(self):
        text = why_table.table_for(self.dir, "06_ladder")
        lines = text.splitlines()
        self.assertEqual(lines[0].split(","), why_table.COLUMNS)
        self.assertEqual(len(lines), 3)  # one row per version: v1's finish kernel is left out
        v1 = dict(zip(why_table.COLUMNS, lines[1].split(",")))
        self.assertEqual((v1["kernel"], v1["ldg_128"], v1["lds_sts"]), ("first_pass", "0", "5"))
        self.assertEqual(v1["bank_conflicts_per_kelem"], "2048")  # 2048 conflicts over 1024 elements, per 1024
        self.assertEqual(v1["top_stall"], "wait")

    def test_check_fails_when_stale_and_passes_when_written(self):
        self.assertEqual(why_table.main(["--results", str(self.dir), "--check", "06_ladder"]), 1)
        self.assertEqual(why_table.main(["--results", str(self.dir), "06_ladder"]), 0)
        self.assertEqual(why_table.main(["--results", str(self.dir), "--check", "06_ladder"]), 0)
        (self.dir / "06_ladder_counters.csv").write_text(COUNTERS.replace("8.0", "7.0"))
        self.assertEqual(why_table.main(["--results", str(self.dir), "--check", "06_ladder"]), 1)

    def test_missing_source_is_a_usage_error(self):
        (self.dir / "06_ladder_sass.csv").unlink()
        self.assertEqual(why_table.main(["--results", str(self.dir), "06_ladder"]), 2)


if __name__ == "__main__":
    unittest.main()
