#!/usr/bin/env python3
"""Keep the course's text true: code and measured numbers in Markdown come from their sources.

In chapters/*/README.md, chapters/*/APPENDIX.md, docs/*.md and README.md:

  <!-- snippet: solutions/05_many_blocks/dot.cu block_tree -->
  ```cuda
  (the lines between the two `// [block_tree]` markers of that file)
  ```
  <!-- /snippet -->

  The tree reaches <!--n:3-->2950<!--/n--> GB/s, <!--n:cpu-->190<!--/n-->× the CPU's time.
  ...
  <!-- numbers (tools/sync_snippets.py): what each n:KEY marker above shows
  3: 05_many_blocks.csv version=block_tree n=16777216 col=gbps fmt=.0f
  cpu: 01_timing.csv version=add_cpu config=float col=median_ms over="version=add_gpu;config=float" fmt=.0f
  -->

  <!-- table: 06_ladder.csv where=n=268435456 cols=version,median_ms,gbps fmt=median_ms:.4f,gbps:.0f -->
  (a Markdown table of the matching rows)
  <!-- /table -->

Numbers and tables come from the CSVs of a real run (default results/reference/h100). A number is
marked where the sentence shows it by a short key, so that the raw Markdown still reads as prose;
its source is the key's line in the document's one `<!-- numbers ... -->` block, at the end of the
document. Every key has one line there and every line is used (a key may mark several places).
A number's line must match exactly one row; with over="k=v;..." it is divided by the same column of
another row (a speed-up). Values with spaces are quoted: config="float, iters=64". In snippets taken from solutions/, the solution-region markers are
dropped and the stubs left out. A region tagged inside the snippet's own (`// [inner]` twice) is left
out as one line: its own snippet prints it, once.

  <!-- negatives -->
  (a Markdown table of tests/negative/*/case.json: case, class of bug, the tests that catch it)
  <!-- /negatives -->

  tools/sync_snippets.py           rewrite the text
  tools/sync_snippets.py --check   exit 1 when any text disagrees with its sources (CI)
"""
import argparse
import csv
import pathlib
import re
import shlex
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
SNIPPET = re.compile(r"(<!-- snippet: (\S+) (\S+) -->\n)(.*?)(<!-- /snippet -->)", re.S)
NUM_OPEN, NUM_CLOSE = r"<!--n:([\w.-]+)-->", r"<!--/n-->"  # around a number: short, so the sentence reads
NUM = re.compile(f"({NUM_OPEN})(.*?)({NUM_CLOSE})", re.S)
NUM_BLOCK = re.compile(r"<!-- numbers\b[^\n]*\n(.*?)^-->[ \t]*$", re.S | re.M)
NUM_LINE = re.compile(r"^([\w.-]+): (\S.*)$")
OLD_NUM = re.compile(r"<!-- /?num\b")
TABLE = re.compile(r"(<!-- table: ([^>]*?) -->\n)(.*?)(<!-- /table -->)", re.S)
NEGATIVES = re.compile(r"(<!-- negatives -->\n)(.*?)(<!-- /negatives -->)", re.S)
LANG = {".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp", ".hpp": "cpp", ".h": "cpp", ".py": "python",
        ".cmake": "cmake", ".txt": "cmake", ".sh": "bash"}


HOLE_MARKER = re.compile(r"^//\s*\[hole \d+ (begin|end)\]$")


class SyncError(Exception):
    pass


def extract(path, tag):
    src = ROOT / path
    if not src.is_file():
        raise SyncError(f"snippet source {path} does not exist")
    lines = src.read_text().splitlines()
    marker = re.compile(r"^\s*//\s*\[" + re.escape(tag) + r"\]\s*$")
    at = [i for i, line in enumerate(lines) if marker.match(line)]
    if len(at) != 2:
        raise SyncError(f"{path}: marker '// [{tag}]' must appear exactly twice (found {len(at)})")
    body, skipping, nested = [], False, None
    any_marker = re.compile(r"^\s*//\s*\[([\w.-]+)\]\s*$")
    for line in lines[at[0] + 1:at[1]]:
        s = line.strip()
        inner = any_marker.match(line)
        if inner and not HOLE_MARKER.match(s):  # a region tagged inside this one: its own snippet shows it
            if nested is None:
                nested = inner.group(1)
                body.append(line[:len(line) - len(line.lstrip())] + f"// ... [{nested}]: printed where the text comes to it")
            elif inner.group(1) == nested:
                nested = None
            continue
        if nested is not None:
            continue
        if s in ("// BEGIN SOLUTION", "// END SOLUTION"):
            skipping = False
            continue
        if s == "// STUB":
            skipping = True
            continue
        if HOLE_MARKER.match(s):  # the grader's hole markers in chapters/ files: not part of the lesson
            continue
        if not skipping:
            body.append(line)
    return textwrap.dedent("\n".join(body)).strip("\n")


def parse_spec(spec):
    try:
        parts = shlex.split(spec)  # values with spaces are quoted: config="float, iters=64"
    except ValueError as e:
        raise SyncError(f"cannot parse marker '{spec}': {e}")
    if not parts:
        raise SyncError("empty marker")
    fields = {}
    for p in parts[1:]:
        if "=" not in p:
            raise SyncError(f"'{p}' in '{spec}' is not key=value")
        k, v = p.split("=", 1)
        fields[k] = v
    return parts[0], fields


def load_csv(results, name, cache):
    if name not in cache:
        path = results / name
        if not path.is_file():
            raise SyncError(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} does not exist "
                            "(run the chapter on a GPU with --csv, or fix the marker)")
        with path.open(newline="") as f:
            cache[name] = list(csv.DictReader(f))
    return cache[name]


def same(a, b):
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def select(rows, conditions, what):
    for key in conditions:
        if rows and key not in rows[0]:
            raise SyncError(f"{what}: no column '{key}'")
    return [r for r in rows if all(same(r[k], v) for k, v in conditions.items())]


def fmt(value, spec):
    try:
        return format(float(value), spec) if spec else value
    except ValueError:
        return value


def one_row(rows, conditions, what, name):
    match = select(rows, conditions, what)
    if len(match) != 1:
        raise SyncError(f"{what} matches {len(match)} rows of {name}; it must match exactly one")
    return match[0]


def render_num(spec, results, cache):
    """One cell; with over="k=v;k2=v2", the cell divided by the same column of another row
    (a speed-up or a ratio, still computed from the measurement)."""
    name, fields = parse_spec(spec)
    col = fields.pop("col", None)
    spec_fmt = fields.pop("fmt", "")
    over = fields.pop("over", None)
    if col is None:
        raise SyncError(f"num '{spec}' needs col=")
    rows = load_csv(results, name, cache)
    row = one_row(rows, fields, f"num '{spec}'", name)
    if col not in row:
        raise SyncError(f"num '{spec}': {name} has no column '{col}'")
    if over is None:
        return fmt(row[col], spec_fmt)
    other = dict(kv.split("=", 1) for kv in over.split(";") if kv)
    base = one_row(rows, other, f"num '{spec}' (over=)", name)
    try:
        return format(float(row[col]) / float(base[col]), spec_fmt or ".3g")
    except (ValueError, ZeroDivisionError) as e:
        raise SyncError(f"num '{spec}': cannot divide {row[col]} by {base[col]}: {e}")


def render_table(spec, results, cache):
    name, fields = parse_spec(spec)
    cols = fields.get("cols", "").split(",")
    where = dict(kv.split("=", 1) for kv in fields.get("where", "").split(",") if kv)
    fmts = dict(kv.split(":", 1) for kv in fields.get("fmt", "").split(",") if kv)
    rows = select(load_csv(results, name, cache), where, f"table '{spec}'")
    if not rows:
        raise SyncError(f"table '{spec}' matches no row of {name}")
    for c in cols:
        if c not in rows[0]:
            raise SyncError(f"table '{spec}': {name} has no column '{c}'")
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(fmt(r[c], fmts.get(c, ".4g")) if c not in ("version", "config") else r[c]
                                      for c in cols) + " |")
    return "\n".join(out) + "\n"


def render_negatives():
    """The negative cases, one row each, as tools/check_negatives.py loads and checks them."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("course_check_negatives", ROOT / "tools" / "check_negatives.py")
    negatives = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(negatives)
    try:
        cases = negatives.load_cases()
    except negatives.CaseError as e:
        raise SyncError(f"negatives: {e}")
    out = ["| case | class of bug | caught by |", "| --- | --- | --- |"]
    for c in cases:
        tests = ", ".join(f"`{t}`" for t in c["fail"])
        caught = f"compute-sanitizer {c['sanitize']} on {tests}" if c.get("sanitize") else tests
        if c.get("note"):
            caught += f" ({c['note']})"
        where = "" if c["gpu"] else " (CPU)"
        out.append(f"| `{c['name']}` | {c.get('class', '').replace('|', '/')}{where} | {caught.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def number_specs(text):
    """{key: spec} from the document's numbers block ({} without one)."""
    blocks = NUM_BLOCK.findall(text)
    if len(blocks) > 1:
        raise SyncError(f"{len(blocks)} '<!-- numbers' blocks; a document has one, at its end")
    specs = {}
    for line in (blocks[0].splitlines() if blocks else []):
        if not line.strip():
            continue
        m = NUM_LINE.match(line.strip())
        if not m:
            raise SyncError(f"numbers block: '{line.strip()}' is not 'KEY: CSV key=value ...'")
        if m.group(1) in specs:
            raise SyncError(f"numbers block: key '{m.group(1)}' has two lines")
        specs[m.group(1)] = m.group(2)
    return specs


def sync_numbers(text, results, cache):
    """Every <!--n:KEY-->...<!--/n--> filled from KEY's line of the numbers block."""
    old = OLD_NUM.search(text)
    if old:
        line = text.count("\n", 0, old.start()) + 1
        raise SyncError(f"line {line}: a '<!-- num: ... -->' marker; numbers are marked <!--n:KEY-->...<!--/n--> "
                        "with KEY's source in the document's '<!-- numbers' block (see this script's help)")
    specs, used = number_specs(text), set()

    def number(m):
        key = m.group(2)
        if key not in specs:
            raise SyncError(f"number n:{key} has no line in the document's '<!-- numbers' block")
        used.add(key)
        return m.group(1) + render_num(specs[key], results, cache) + m.group(4)

    text = NUM.sub(number, text)
    unused = [k for k in specs if k not in used]
    if unused:
        raise SyncError(f"numbers block: no n:KEY marker uses {', '.join(unused)}")
    return text


def sync_text(text, results, cache):
    def snippet(m):
        path, tag = m.group(2), m.group(3)
        lang = LANG.get(pathlib.Path(path).suffix, "")
        return f"{m.group(1)}```{lang}\n{extract(path, tag)}\n```\n{m.group(5)}"

    text = SNIPPET.sub(snippet, text)
    text = sync_numbers(text, results, cache)
    text = TABLE.sub(lambda m: m.group(1) + render_table(m.group(2), results, cache) + m.group(4), text)
    text = NEGATIVES.sub(lambda m: m.group(1) + render_negatives() + m.group(3), text)
    return text


def documents():
    yield from sorted((ROOT / "chapters").glob("*/README.md"))
    yield from sorted((ROOT / "chapters").glob("*/APPENDIX.md"))  # numbers moved out of a lesson keep their markers
    yield from sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "CONTRIBUTING.md")  # its markers are examples
    if (ROOT / "README.md").is_file():
        yield ROOT / "README.md"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    parser.add_argument("--results", default="results/reference/h100", help="folder of the CSVs numbers come from")
    args = parser.parse_args()
    results = (ROOT / args.results).resolve()
    cache, differ, errors, count = {}, [], [], 0
    for doc in documents():
        text = doc.read_text()
        try:
            new = sync_text(text, results, cache)
        except SyncError as e:
            errors.append(f"{doc.relative_to(ROOT)}: {e}")
            continue
        count += 1
        if new != text:
            differ.append(doc)
            if not args.check:
                doc.write_text(new)
    for e in errors:
        print(f"sync_snippets: {e}", file=sys.stderr)
    if args.check:
        for d in differ:
            print(f"sync_snippets: {d.relative_to(ROOT)} disagrees with its sources; run tools/sync_snippets.py",
                  file=sys.stderr)
        ok = not differ and not errors
        print(f"sync_snippets: {count} documents checked" + ("" if ok else ", problems above"))
        return 0 if ok else 1
    print(f"sync_snippets: updated {len(differ)} of {count} documents")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
