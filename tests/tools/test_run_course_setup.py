"""Tests of the set-up of tools/run_course.sh and tools/setup.sh, in a fake machine: no build, no GPU,
no network. The repository's scripts run in a scratch copy of the repository with fakes first on PATH:
apt-get records its calls, cmake stops the run where the build would start, python3 stands for the
plots' Python, date is a fake clock. Go is missing (the rest of PATH is linked without it).

- run_course never calls apt-get for Go when chapter 07 is not among its chapters;
- setup.sh asks apt-get nothing when no package registry is in reach, and says so (the probe is a
  connection to a closed local port, refused at once): Go is left out, a missing package stops it;
  where one is in reach (a local port that listens), it still installs;
- the summary's set-up seconds include the plots' Python (.venv), on the fake clock.
"""
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HIDDEN = {"go", "gofmt", "doxygen"}  # the machine has no Go, and no doxygen
FAKES = {
    # Every call is recorded; an install fails as it would with no network.
    "apt-get": 'echo "apt-get $*" >> "$FAKE_LOG"; exit 100',
    "id": 'if [ "$1" = -u ]; then echo 0; else exec /usr/bin/env -i id "$@"; fi',
    "nvcc": "exit 0",
    # CMake 3.25; `cmake --preset` is where set-up ends and the build begins, unless FAKE_BUILD=1:
    # then the build makes a course_info without a GPU and a chapter that prints a caption.
    "cmake": textwrap.dedent("""\
        if [ "$1" = --version ]; then echo "cmake version 3.25.1"; exit 0; fi
        echo "cmake $*" >> "$FAKE_LOG"
        [ "${FAKE_BUILD:-0}" = 1 ] || exit 97
        if [ "$1" = --build ]; then
          mkdir -p build/solutions/bin
          printf '#!/bin/sh\\necho "no GPU"; exit 3\\n' > build/solutions/bin/course_info
          printf '#!/bin/sh\\necho "valid = 1 in every row where version=v"; printf "version,valid\\\\nv,$FAKE_VALID\\\\n" > "$2"\\n' \\
            > build/solutions/bin/02_cpu_dot
          chmod +x build/solutions/bin/course_info build/solutions/bin/02_cpu_dot
        fi
        exit 0"""),
    # The plots' Python: has matplotlib; checking that costs 20 s of the fake clock (a first .venv).
    # tools/check_captions.py runs for real; the other scripts (run_metadata, render_all) do nothing.
    "python3": textwrap.dedent("""\
        if [ "$1" = -c ]; then echo "python3 $*" >> "$FAKE_LOG"; echo $(( $(cat "$FAKE_CLOCK") + 20 )) > "$FAKE_CLOCK"; fi
        if [ "$1" = tools/check_captions.py ]; then exec "$REAL_PYTHON" "$@"; fi
        exit 0"""),
    "date": 'if [ "$1" = +%s.%N ]; then cat "$FAKE_CLOCK"; else exec /bin/date "$@"; fi',
}


class FakeMachine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bins = tempfile.TemporaryDirectory()
        top = pathlib.Path(cls.bins.name)
        fakes, farm = top / "fakes", top / "farm"
        fakes.mkdir()
        farm.mkdir()
        for name, body in FAKES.items():
            (fakes / name).write_text("#!/bin/bash\n" + body + "\n")
            (fakes / name).chmod(0o755)
        # Everything else on PATH, Go left out.
        for d in os.environ["PATH"].split(os.pathsep):
            d = pathlib.Path(d)
            if not d.is_dir():
                continue
            for exe in d.iterdir():
                target = farm / exe.name
                if exe.name in HIDDEN or exe.name in FAKES or target.exists() or target.is_symlink():
                    continue
                try:
                    if exe.is_file() and os.access(exe, os.X_OK):
                        target.symlink_to(exe)
                except OSError:
                    pass
        cls.path = f"{fakes}:{farm}"

    @classmethod
    def tearDownClass(cls):
        cls.bins.cleanup()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        top = pathlib.Path(self.tmp.name)
        self.repo = top / "repo"
        for path in ("tools/run_course.sh", "tools/setup.sh", "tools/course_python.sh", "tools/check_captions.py"):
            (self.repo / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, self.repo / path)
        for chapter in ("02_cpu_dot", "07_library"):
            (self.repo / "chapters" / chapter).mkdir(parents=True)
        (self.repo / "solutions").mkdir()
        # apt's own configuration, pointing at a source of our choosing (see registry()).
        self.apt = top / "apt"
        (self.apt / "etc/sources.list.d").mkdir(parents=True)
        (self.apt / "apt.conf").write_text(f'Dir::Etc "{self.apt}/etc";\n')
        # A CMake package folder where setup looks: Catch2 and CLI11 are "installed".
        cmake_pkgs = top / "cmake"
        for name in ("Catch2", "CLI11"):
            (cmake_pkgs / name).mkdir(parents=True)
            (cmake_pkgs / name / f"{name}Config.cmake").write_text("")
        self.log = top / "calls.log"
        self.log.write_text("")
        self.clock = top / "clock"
        self.clock.write_text("1000\n")
        self.env = {"PATH": self.path, "HOME": str(top), "APT_CONFIG": str(self.apt / "apt.conf"),
                    "CMAKE_PREFIX_PATH": str(cmake_pkgs), "FAKE_LOG": str(self.log), "FAKE_CLOCK": str(self.clock),
                    "LANG": "C.UTF-8", "REAL_PYTHON": sys.executable, "FAKE_VALID": "1"}
        self.listener = None

    def tearDown(self):
        if self.listener:
            self.listener.close()
        self.tmp.cleanup()

    def registry(self, reachable):
        """apt's one source: a local port that accepts connections (a registry in reach) or one that
        refuses them (nothing in reach: refused at once, however fast the machine)."""
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        if reachable:
            sock.listen(8)
            self.listener = sock
        else:
            sock.close()
        (self.apt / "etc/sources.list").write_text(f"deb [trusted=yes] http://127.0.0.1:{port}/debian stable main\n")

    def run_script(self, *argv, **env):
        return subprocess.run(list(argv), cwd=self.repo, env={**self.env, **env}, capture_output=True, text=True,
                              timeout=120)

    def calls(self, program):
        return [line for line in self.log.read_text().splitlines() if line.startswith(program + " ")]

    def test_run_course_without_chapter_07_sets_up_no_go(self):
        self.registry(reachable=True)
        r = self.run_script("bash", "tools/run_course.sh", "02")
        self.assertEqual(r.returncode, 97, r.stdout + r.stderr)  # stopped where the build begins: set-up done
        self.assertTrue(self.calls("cmake"), "run_course did not get past set-up")
        self.assertEqual(self.calls("apt-get"), [], "run_course 02 runs no Go: nothing to install")

    @unittest.skipUnless(shutil.which("apt-config"), "no apt here")
    def test_run_course_with_chapter_07_sets_up_go(self):
        self.registry(reachable=True)
        r = self.run_script("bash", "tools/run_course.sh", "07")
        self.assertEqual(r.returncode, 97, r.stdout + r.stderr)
        self.assertTrue(any("install" in c and "golang-go" in c for c in self.calls("apt-get")), r.stderr)

    def test_setup_without_a_registry_asks_apt_nothing(self):
        self.registry(reachable=False)
        r = self.run_script("bash", "-c", "source tools/setup.sh", COURSE_SETUP_GO="1")
        self.assertEqual(r.returncode, 0, r.stderr)  # Go is optional: setup goes on
        self.assertEqual(self.calls("apt-get"), [], r.stderr)
        self.assertIn("no package registry in reach", r.stderr)
        self.assertIn("Go tests will not run here", r.stderr)

    def test_setup_without_a_registry_and_a_missing_package_stops(self):
        self.registry(reachable=False)
        # The site's build (COURSE_SETUP_DOCS=1) needs doxygen, which this machine lacks.
        r = self.run_script("bash", "-c", "source tools/setup.sh", COURSE_SETUP_GO="0", COURSE_SETUP_DOCS="1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(self.calls("apt-get"), [], r.stderr)
        self.assertIn("no package registry in reach", r.stderr)
        self.assertIn("missing: doxygen", r.stderr)

    @unittest.skipUnless(shutil.which("apt-config"), "no apt here")
    def test_setup_with_a_registry_installs_go(self):
        self.registry(reachable=True)
        r = self.run_script("bash", "-c", "source tools/setup.sh", COURSE_SETUP_GO="1")
        self.assertEqual(r.returncode, 0, r.stderr)
        calls = self.calls("apt-get")
        self.assertTrue(any("update" in c for c in calls), calls)
        self.assertTrue(any("install" in c and "golang-go" in c for c in calls), calls)
        self.assertIn("could not install golang-go", r.stderr)  # the fake apt-get fails

    def test_a_contradicted_caption_fails_the_run(self):
        self.registry(reachable=False)
        r = self.run_script("bash", "tools/run_course.sh", "02", FAKE_BUILD="1", FAKE_VALID="0")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("02_cpu_dot.csv:2: version=v has valid = 0", r.stderr)
        self.assertIn("ran, a caption contradicts its rows", r.stdout)

    def test_summary_counts_the_plots_python_in_set_up(self):
        self.registry(reachable=False)
        r = self.run_script("bash", "tools/run_course.sh", "02", FAKE_BUILD="1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(self.calls("python3"), "the plots' Python was never looked for")
        self.assertRegex(r.stdout, r"\(set-up 20 s, build 0 s, plots 0 s\)")


if __name__ == "__main__":
    unittest.main()
