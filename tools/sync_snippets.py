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
another row (a speed-up). Values with spaces are quoted: config="float, iters=64". A CSV named
../h200/X.csv is read from the folder beside the results folder (results/reference/h200/X.csv):
a sentence that says where a second card differs syncs that card's number the same way. In
snippets taken from solutions/, the solution-region markers are dropped and the stubs left out. A
region tagged inside the snippet's own (`// [inner]` twice) is left out as one line: its own
snippet prints it, once.

  <!-- cards: 06_ladder_targets.csv by=n fmt=.2f -->
  (one Markdown table of the same CSV from each reference card: value and verdict per card)
  <!-- /cards -->

  <!-- negatives -->
  (a Markdown table of tests/negative/*/case.json: case, class of bug, the tests that catch it)
  <!-- /negatives -->

A cards table joins one CSV (a chapter's targets) across the reference cards, the folders beside
the results folder: cards=h100,h200 by default (chapter 11: cards=h200x2,h200). A column per card,
headed by the GPU that its run_metadata.json names for the chapter (the CSV's name starts with the
chapter), never by the folder. Rows join on the columns target, pair and n that the CSV has; each
cell is the value (value=COL, default `value`; fmt=SPEC, default .3g) and the verdict of the
met (or passed) column: "met", "unmet", or the row's note where the verdict is empty (a one-GPU card
on a two-GPU target: "needs 2 GPUs"); "—" where the card has no such row. Options:
  by=n           one column per n instead of a row per n, and a row per target and card (chapter
                 06: 48 rows become 14 of 10 sizes, H100 above H200 for each target)
  show=goal,...  columns shown once, before the cards, as short as they go (fmt g; values that
                 differ: "a / b", in card order)
  loose=target   numbers in that column ignored when joining (chapter 11's targets name the GPU
                 count and the size measured: "2 GPU(s)" on one card is "1 GPU(s)" on the other);
                 the name shown is the first card's
An integer that is a power of two from 2^10 up shows as 2^k (a size). A CSV missing on a card, a
folder without run_metadata.json or the chapter, and two rows of one card with the same key are
errors.

  tools/sync_snippets.py           rewrite the text
  tools/sync_snippets.py --check   exit 1 when any text disagrees with its sources (CI)
"""
import argparse
import csv
import json
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
CARDS = re.compile(r"(<!-- cards: ([^>]*?) -->\n)(.*?)(<!-- /cards -->)", re.S)
BLOCK_NAMES = ("snippet", "table", "cards")  # the markers of a synced block (tools/doxygen_filter.py drops them)
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
    key = (str(results), name)
    if key not in cache:
        path = results / name
        if not path.is_file():
            raise SyncError(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} does not exist "
                            "(run the chapter on a GPU with --csv, or fix the marker)")
        with path.open(newline="") as f:
            cache[key] = list(csv.DictReader(f))
    return cache[key]


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


def pow2(value):
    """'2^k' for an integer power of two from 2^10 up (a size), else None."""
    try:
        v = float(value)
    except ValueError:
        return None
    if v >= 1024 and v == int(v) and int(v) & (int(v) - 1) == 0:
        return f"2^{int(v).bit_length() - 1}"
    return None


def card_name(folder, csv_name):
    """The GPU of a reference card's run, for the chapter whose name the CSV starts with."""
    meta_path = folder / "run_metadata.json"
    if not meta_path.is_file():
        raise SyncError(f"cards: {folder.name}/run_metadata.json does not exist")
    try:
        chapters = json.loads(meta_path.read_text()).get("chapters", {})
    except (ValueError, AttributeError) as e:
        raise SyncError(f"cards: {folder.name}/run_metadata.json: {e}")
    mine = [c for c in chapters if csv_name.startswith(c)]
    if not mine:
        raise SyncError(f"cards: {folder.name}/run_metadata.json has no chapter for {csv_name}")
    gpu = chapters[max(mine, key=len)].get("gpu")
    if not gpu:
        raise SyncError(f"cards: {folder.name}/run_metadata.json names no gpu for {max(mine, key=len)}")
    return gpu


def render_cards(spec, results, cache):
    """One CSV from each reference card, joined by its key columns: value and verdict per card."""
    name, fields = parse_spec(spec)
    folders = [results.parent / c for c in fields.pop("cards", "h100,h200").split(",") if c]
    value_col = fields.pop("value", "value")
    spec_fmt = fields.pop("fmt", ".3g")
    by = fields.pop("by", None)
    show = [c for c in fields.pop("show", "").split(",") if c]
    loose = fields.pop("loose", None)
    if fields:
        raise SyncError(f"cards '{spec}': unknown option(s) {', '.join(fields)}")
    if len(folders) < 2:
        raise SyncError(f"cards '{spec}': a cards table needs two cards or more")

    def number(v):
        return pow2(v) or fmt(v, spec_fmt)

    cards = []  # (header, {key: row})
    key_cols = None
    for folder in folders:
        rows = load_csv(folder, name, cache)
        if not rows:
            raise SyncError(f"cards '{spec}': {folder.name}/{name} has no rows")
        cols = list(rows[0])
        met_col = "met" if "met" in cols else "passed" if "passed" in cols else None
        for c in [value_col, by] + show:
            if c and c not in cols:
                raise SyncError(f"cards '{spec}': {folder.name}/{name} has no column '{c}'")
        keys = [c for c in ("target", "pair", "n") if c in cols and c != by] + ([by] if by else [])
        if key_cols is None:
            key_cols = keys
        elif keys != key_cols:
            raise SyncError(f"cards '{spec}': {folder.name}/{name} is keyed by {keys}, not {key_cols}")
        table = {}
        for r in rows:
            key = tuple(re.sub(r"\d+(\.\d+)?", "#", r[c]) if c == loose else
                        (str(float(r[c])) if c in ("n", by) and pow2(r[c]) else r[c]) for c in keys)
            if key in table:
                raise SyncError(f"cards '{spec}': two rows of {folder.name}/{name} have the key {key}")
            verdict = {"1": "met", "0": "unmet"}.get(r.get(met_col, "").strip() if met_col else "", "")
            if not verdict and (r.get("note") or "").strip():
                verdict = f"({r['note'].strip()})"
            table[key] = (r, f"{number(r[value_col])} {verdict}".strip())
        cards.append((card_name(folder, name), table))

    order = []  # keys in the order of the first card that has them
    for _, table in cards:
        order += [k for k in table if k not in order]

    def shown(key, col):
        vals = []
        for _, table in cards:
            if key in table:
                v = table[key][0][col]
                v = pow2(v) or fmt(v, "g")
                if v not in vals:
                    vals.append(v)
        return " / ".join(vals)

    def label(key, col):  # the name from the first card that has the row
        for _, table in cards:
            if key in table:
                v = table[key][0][col]
                return pow2(v) or v if col == "n" else v
        return "—"

    row_cols = [c for c in key_cols if c != by]
    if by is None:
        head = row_cols + show + [h for h, _ in cards]
        out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
        for key in order:
            cells = [label(key, c) for c in row_cols] + [shown(key, c) for c in show]
            cells += [table[key][1] if key in table else "—" for _, table in cards]
            out.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
        return "\n".join(out) + "\n"
    columns = []  # the values of `by`, in order
    rows_of = []  # the row keys without `by`
    for key in order:
        if key[-1] not in columns:
            columns.append(key[-1])
        if key[:-1] not in rows_of:
            rows_of.append(key[:-1])
    first = {}  # a full key for each column, to name it
    for key in order:
        first.setdefault(key[-1], key)
    head = row_cols + ["card"] + [label(first[c], by) for c in columns]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    for rk in rows_of:
        for header, table in cards:
            any_key = next(k for k in order if k[:-1] == rk)
            cells = [label(any_key, c) for c in row_cols] + [header]
            cells += [table[rk + (c,)][1] if rk + (c,) in table else "—" for c in columns]
            out.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
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
    text = CARDS.sub(lambda m: m.group(1) + render_cards(m.group(2), results, cache) + m.group(4), text)
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
