#!/usr/bin/env python3
"""One honest line from a CTest JUnit file: `N passed, N failed, N skipped`, then each reason for a
skip with how many tests gave it (the guard's own words: no GPU, too little device memory, ...).

    tools/test_summary.py build/solutions/ctest-junit.xml

Exit code: 0, or 1 when the file cannot be read (the caller keeps CTest's own exit code).
A command shim: the code is coursetools.junit.summarize (tools/coursetools/junit.py).
"""
import sys
import xml.etree.ElementTree as ET

from coursetools.junit import skip_reason, summarize  # noqa: F401

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        print(summarize(sys.argv[1]))
    except (OSError, ET.ParseError) as e:
        print(f"test_summary: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
