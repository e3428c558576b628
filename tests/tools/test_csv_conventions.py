"""The course's CSV conventions, checked on the committed reference results (no GPU, no build):
snake_case column names, yes/no as 1/0, an empty field for a missing value. The C++ writers get
them from course::Table (its constructor refuses other names; NaN is written as an empty field)."""
import csv
import pathlib
import re
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "reference"
WORDS = {"yes", "no", "true", "false", "nan", "-nan", "inf", "-inf", "none", "null", "n/a", "na"}


class ReferenceCsvs(unittest.TestCase):
    def test_every_reference_csv_follows_the_conventions(self):
        files = sorted(RESULTS.glob("*/*.csv"))
        self.assertTrue(files, "no reference CSVs found")
        problems = []
        for path in files:
            with path.open(newline="") as f:
                rows = list(csv.reader(f))
            where = path.relative_to(ROOT)
            for name in rows[0]:
                if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                    problems.append(f"{where}: column '{name}' is not snake_case")
            for k, row in enumerate(rows[1:], start=2):
                if len(row) != len(rows[0]):
                    problems.append(f"{where}:{k}: {len(row)} fields under {len(rows[0])} columns")
                for name, cell in zip(rows[0], row):
                    if cell.strip().lower() in WORDS:
                        problems.append(f"{where}:{k}: {name}='{cell}' (write 1/0, or an empty field for missing)")
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
