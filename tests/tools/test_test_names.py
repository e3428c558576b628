"""The Catch2 test names, checked in the sources (no build): CTest receives each name through a
CMake list, where a semicolon splits one test into two entries, the second of which runs nothing
(a test named " the plain one does not" passed that way, asserting nothing)."""
import pathlib
import re
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# TEST_CASE("name", ...) and course::test::add_case("name", ...), the name possibly on the next line
NAME = re.compile(r'\b(?:TEST_CASE|add_case)\(\s*"((?:[^"\\]|\\.)*)"', re.S)


class TestNames(unittest.TestCase):
    def test_no_name_has_a_semicolon(self):
        sources = sorted((ROOT / "tests").glob("test_*.cpp"))
        self.assertTrue(sources, "no test sources found")
        found = 0
        bad = []
        for path in sources:
            for m in NAME.finditer(path.read_text()):
                found += 1
                if ";" in m.group(1):
                    bad.append(f"{path.name}: {m.group(1)}")
        self.assertGreater(found, 100, "the pattern found too few test names: has the registration changed?")
        self.assertEqual(bad, [], "a ';' splits a test name in CTest's list: use ',' or ':'")


if __name__ == "__main__":
    unittest.main()
