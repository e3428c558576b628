#!/usr/bin/env python3
"""One honest line from a CTest JUnit file: `N passed, N failed, N skipped`, then each reason for a
skip with how many tests gave it (the guard's own words: no GPU, too little device memory, ...).

    tools/test_summary.py build/solutions/ctest-junit.xml

Exit code: 0, or 1 when the file cannot be read (the caller keeps CTest's own exit code).
"""
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

MARKER = re.compile(r"(COURSE-NO-[A-Z-]+:.*)")


def skip_reason(case):
    text = "".join((e.text or "") for e in case.iter() if e.tag in ("system-out", "system-err"))
    lines = text.splitlines()
    for k, line in enumerate(lines):
        m = MARKER.search(line)
        if m:
            words = [m.group(1).strip()]
            for more in lines[k + 1:]:  # Catch2 wraps long messages over indented lines
                if not more.strip() or not more.startswith(" "):
                    break
                words.append(more.strip())
            # Sizes differ from test to test: group by the reason's words, not its numbers.
            return re.sub(r"\d[\d.,]*\s*(GiB|MiB|KiB|GB|MB|B)\b", "N \\1", " ".join(words))
    skipped = case.find("skipped")
    return (skipped.get("message") if skipped is not None else "") or "no reason given"


def summarize(path):
    root = ET.parse(path).getroot()
    passed = failed = skipped = 0
    reasons = Counter()
    for case in root.iter("testcase"):
        status = (case.get("status") or "").lower()
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            message = case.find("skipped").get("message", "") if case.find("skipped") is not None else status
            if message.startswith("SKIP_REGULAR_EXPRESSION_MATCHED") or message.startswith("SKIP_RETURN_CODE"):
                skipped += 1
                reasons[skip_reason(case)] += 1
            else:  # not run for a reason nobody chose: a failure
                failed += 1
        else:
            passed += 1
    lines = [f"{passed} passed, {failed} failed, {skipped} skipped"]
    for reason, count in reasons.most_common():
        lines.append(f"  skipped {count}: {reason}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        print(summarize(sys.argv[1]))
    except (OSError, ET.ParseError) as e:
        print(f"test_summary: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
