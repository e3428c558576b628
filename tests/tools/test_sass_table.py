"""Tests of tools/sass_table.py on a small fake `cuobjdump -sass` listing: no GPU, no cuobjdump, no build."""
import csv
import importlib.util
import pathlib
import re
import shutil
import sys
import tempfile
import unittest
from unittest import mock

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


st = load("sass_table")

# Symbols as nvcc 13 mangles the chapter 06 and 10 kernels (anonymous namespaces included).
V1 = "_ZN4ch0641_GLOBAL__N__17d6f96c_9_ladder_cu_c4e0fb7411dot_kernel1EPKfS2_mPf"
FINISH = "_ZN4ch0641_GLOBAL__N__17d6f96c_9_ladder_cu_c4e0fb7413finish_kernelEPKfmPf"
V9 = "_ZN4ch0641_GLOBAL__N__17d6f96c_9_ladder_cu_c4e0fb74L11dot_kernel9ILj256EEEvPKfS3_mPf"
READ_ONLY = "_ZN4ch0641_GLOBAL__N__17d6f96c_9_ladder_cu_c4e0fb74L16read_only_kernelILj1024EEEvPKfS3_mPf"
F32_I8 = "_ZN4ch1041_GLOBAL__N__07b76330_9_dtypes_cu_c7812d10L10dot_kernelIfafEEvPKT_PKT0_mxPyjPd"

DEMANGLED = {
    V1: "ch06::(anonymous namespace)::dot_kernel1(float const*, float const*, unsigned long, float*)",
    FINISH: "ch06::(anonymous namespace)::finish_kernel(float const*, unsigned long, float*)",
    V9: "void ch06::(anonymous namespace)::dot_kernel9<256u>(float const*, float const*, unsigned long, float*)",
    READ_ONLY: "void ch06::(anonymous namespace)::read_only_kernel<1024u>(float const*, float const*, unsigned long, float*)",
    F32_I8: "void ch10::(anonymous namespace)::dot_kernel<float, signed char, float>(float const*, signed char const*, "
            "unsigned long, long long, unsigned long long*, unsigned int, double*)",
}


def function(symbol, body):
    lines = [f"\t\tFunction : {symbol}",
             '\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"']
    for i, ins in enumerate(body):
        lines.append(f"        /*{16 * i:04x}*/                   {ins} ;                /* 0x000fe20000000800 */")
        lines.append("                                                                                 /* 0x000fc40000000f00 */")
    lines.append("\t\t..........")
    return "\n".join(lines)


LISTING = "\n".join([
    "",
    "Fatbin elf code:",
    "================",
    "arch = sm_90",
    "code version = [1,8]",
    "host = linux",
    "compile_size = 64bit",
    "",
    "\tcode for sm_90",
    function(V1, ["LDC R1, c[0x0][0x28]", "S2R R0, SR_TID.X", "@!P0 LDG.E R3, desc[UR4][R2.64]",
                  "@!P0 LDG.E R5, desc[UR4][R4.64]", "STS [R7], R0", "BAR.SYNC.DEFER_BLOCKING 0x0",
                  "LDS R8, [R7]", "LDS R9, [R7+0x4]", "FADD R8, R8, R9", "STS [R7], R8",
                  "@P1 BRA 0x100", "STG.E desc[UR4][R2.64], R8", "EXIT"]),
    function(FINISH, ["LDG.E.128 R4, desc[UR4][R2.64]", "SHFL.DOWN PT, R5, R4, 0x10, 0x1f",
                      "SHFL.DOWN PT, R6, R5, 0x8, 0x1f", "BAR.SYNC.DEFER_BLOCKING 0x0", "STG.E desc[UR4][R2.64], R6",
                      "EXIT"]),
    function(V9, ["LDG.E.128.CONSTANT R4, desc[UR4][R2.64]", "LDG.E.128.CONSTANT R8, desc[UR4][R6.64]",
                  "LDG.E.CONSTANT R12, desc[UR4][R10.64]", "FFMA R0, R4, R8, R0", "FFMA R0, R5, R9, R0",
                  "SHFL.DOWN PT, R5, R0, 0x10, 0x1f", "BAR.SYNC.DEFER_BLOCKING 0x0", "EXIT"]),
    function(READ_ONLY, ["LDG.E.128.CONSTANT R4, desc[UR4][R2.64]", "@P0 STG.E desc[UR4][R2.64], R0", "EXIT"]),
    "",
    "Fatbin ptx code:",
    "================",
    "arch = sm_75",
    "code version = [8,8]",
    ".version 8.8",
    ".target sm_75",
])


class Parsing(unittest.TestCase):
    def test_functions_and_opcodes_per_architecture(self):
        fns = st.parse_sass(LISTING)
        self.assertEqual([(a, s) for a, s, _ in fns], [("sm_90", V1), ("sm_90", FINISH), ("sm_90", V9), ("sm_90", READ_ONLY)])
        ops = fns[0][2]
        self.assertEqual(ops["LDG.E"], 2)  # the predicate (@!P0) is not the opcode
        self.assertEqual(ops["BAR.SYNC.DEFER_BLOCKING"], 1)
        self.assertEqual(sum(ops.values()), 13)

    def test_load_widths(self):
        self.assertEqual(st.ldg_width("LDG.E"), 32)
        self.assertEqual(st.ldg_width("LDG.E.CONSTANT"), 32)
        self.assertEqual(st.ldg_width("LDG.E.64"), 64)
        self.assertEqual(st.ldg_width("LDG.E.128.CONSTANT"), 128)
        self.assertEqual(st.ldg_width("LDG.E.U8.CONSTANT"), 8)
        self.assertEqual(st.ldg_width("LDG.E.S16"), 16)

    def test_classify(self):
        import collections
        c = st.classify(collections.Counter({"LDG.E.128.CONSTANT": 2, "LDG.E": 1, "SHFL.DOWN": 5, "BAR.SYNC": 1,
                                             "ATOMG.E.ADD.F32.FTZ.RN": 1, "RED.E.ADD.F32.FTZ.RN": 1, "ATOMS.ADD": 2,
                                             "LDS": 3, "STS": 4, "IDP.4A.S8.S8": 4, "MEMBAR.GPU": 1, "EXIT": 1}))
        self.assertEqual((c["ldg_128"], c["ldg_32"], c["shfl"], c["bar"], c["atom"], c["red"], c["atoms"]),
                         (2, 1, 5, 1, 1, 1, 2))
        self.assertEqual((c["lds"], c["sts"], c["dp4a"], c["membar"], c["total"]), (3, 4, 4, 1, 26))


class Table(unittest.TestCase):
    def rows(self, chapter="06_ladder", listing=LISTING):
        with mock.patch.object(st, "demangle", lambda syms: {s: DEMANGLED.get(s, s) for s in syms}):
            return st.table(chapter, st.parse_sass(listing))

    def test_every_registry_version_gets_rows_and_versions_share_kernels(self):
        rows = self.rows()
        versions = [r["version"] for r in rows]
        for v in st.KERNELS["06_ladder"]:
            self.assertIn(v, versions)
        v1 = [r for r in rows if r["version"] == "v1_divergent"]
        self.assertEqual([r["kernel"] for r in v1], ["dot_kernel1", "finish_kernel"])
        self.assertEqual((v1[0]["ldg_32"], v1[0]["lds"], v1[0]["sts"], v1[0]["bar"], v1[0]["shfl"]), (2, 2, 2, 1, 0))
        v10 = [r for r in rows if r["version"] == "v10_machine_grid"]
        self.assertEqual(v10[0]["symbol"], V9)  # version 10 runs version 9's kernel
        self.assertEqual(v10[0]["ldg_128"], 2)
        sol = [r for r in rows if r["version"] == "speed_of_light"]
        self.assertEqual((sol[0]["kernel"], sol[0]["ldg_128"], sol[0]["stg"]), ("read_only_kernel", 1, 1))

    def test_missing_kernels_and_libraries_say_so(self):
        rows = {(r["version"], r["kernel"]): r for r in self.rows()}
        self.assertIn("not found", rows[("v2_bank_conflicts", "dot_kernel2")]["note"])
        self.assertEqual(rows[("v2_bank_conflicts", "dot_kernel2")]["ldg_32"], "")
        self.assertIn("cuBLAS", rows[("cublas", "")]["note"])

    def test_template_instances_map_to_their_pair(self):
        listing = "arch = sm_90\n" + function(F32_I8, ["LDG.E.128.CONSTANT R4, desc[UR4][R2.64]",
                                                      "LDG.E.CONSTANT R8, desc[UR4][R6.64]", "EXIT"])
        rows = {r["version"]: r for r in self.rows("10_dtypes", listing)}
        self.assertEqual((rows["f32_i8"]["ldg_128"], rows["f32_i8"]["ldg_32"]), (1, 1))
        self.assertIn("not found", rows["f32_f32"]["note"])
        self.assertIn("speed_of_light", rows)  # the floor's row beside the pairs

    def test_an_architecture_that_is_not_there(self):
        with self.assertRaises(st.SassError):
            st.table("06_ladder", st.parse_sass(LISTING), "sm_100")
        with self.assertRaises(st.SassError):
            st.table("06_ladder", st.parse_sass("Fatbin ptx code:\narch = sm_75\n"))

    def test_patterns_match_the_demangled_names_and_nothing_else(self):
        self.assertTrue(re.search(st.k("dot_kernel1").pattern, DEMANGLED[V1]))
        self.assertFalse(re.search(st.k("dot_kernel1").pattern, "void ch06::dot_kernel12<1024u>(float const*)"))
        self.assertFalse(re.search(st.k("dot_kernel").pattern, DEMANGLED[V1]))
        inst = st.k("dot_kernel", "float, signed char, float").pattern
        self.assertTrue(re.search(inst, DEMANGLED[F32_I8]))
        self.assertTrue(re.search(inst, "ch10::dot_kernel<float,signed char,float>(const float *, ...)"))
        self.assertFalse(re.search(inst, "void dot_kernel<float, 128, 0, cublasDotParams<float, float>>(...)"))

    def test_real_demangler_when_present(self):
        if not shutil.which("c++filt"):
            self.skipTest("no c++filt")
        names = st.demangle([V9, F32_I8])
        self.assertIn("dot_kernel9<256u>", names[V9])
        self.assertIn("dot_kernel<float, signed char, float>", names[F32_I8])


class WritingAndChecking(unittest.TestCase):
    def test_csv_follows_the_course_conventions(self):
        with mock.patch.object(st, "demangle", lambda syms: {s: DEMANGLED.get(s, s) for s in syms}):
            rows = st.table("06_ladder", st.parse_sass(LISTING))
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "06_ladder_sass.csv"
            st.write_csv(rows, path)
            with path.open(newline="") as f:
                data = list(csv.reader(f))
        for name in data[0]:
            self.assertRegex(name, r"^[a-z][a-z0-9_]*$")
        for row in data[1:]:
            self.assertEqual(len(row), len(data[0]))
            for cell in row:
                self.assertNotIn(cell.strip().lower(), {"nan", "none", "yes", "no", "true", "false"})

    def test_check_finds_missing_and_unknown_versions(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = pathlib.Path(tmp)
            names = st.registry_names("06_ladder")
            rows = [st._row("06_ladder", v, "", "", "sm_90", "", None) for v in names[1:]]
            rows.append(st._row("06_ladder", "v99_renamed", "", "", "sm_90", "", None))
            st.write_csv(rows, results / "06_ladder_sass.csv")
            problems = st.check(results, ["06_ladder", "05_many_blocks"])
        self.assertTrue(any(f"no row for version {names[0]}" in p for p in problems), problems)
        self.assertTrue(any("v99_renamed" in p for p in problems), problems)
        self.assertTrue(any("05_many_blocks_sass.csv: missing" in p for p in problems), problems)

    def test_check_passes_on_a_complete_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = pathlib.Path(tmp)
            for ch in st.KERNELS:
                extra = list(st.EXTRA.get(ch, {}))
                rows = [st._row(ch, v, "", "", "sm_90", "", None) for v in st.registry_names(ch) + extra]
                st.write_csv(rows, results / f"{ch}_sass.csv")
            self.assertEqual(st.check(results, list(st.KERNELS)), [])

    def test_the_kernel_map_covers_every_registry_version(self):
        for ch in st.KERNELS:
            self.assertEqual(sorted(st.registry_names(ch)), sorted(st.KERNELS[ch]), ch)

    def test_without_cuobjdump_it_says_so_and_skips(self):
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / "06_ladder").write_text("")
            with mock.patch.object(st, "run_cuobjdump", lambda binary: None):
                self.assertEqual(st.main(["--bin", tmp, "--out", tmp, "06_ladder"]), st.EXIT_SKIP)

    def test_from_a_saved_listing(self):
        with tempfile.TemporaryDirectory() as tmp:
            listing = pathlib.Path(tmp) / "06.sass"
            listing.write_text(LISTING)
            with mock.patch.object(st, "demangle", lambda syms: {s: DEMANGLED.get(s, s) for s in syms}):
                self.assertEqual(st.main(["--sass", str(listing), "--chapter", "06_ladder", "--out", tmp]), 0)
            self.assertTrue((pathlib.Path(tmp) / "06_ladder_sass.csv").exists())


if __name__ == "__main__":
    unittest.main()
