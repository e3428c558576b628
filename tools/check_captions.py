#!/usr/bin/env python3
"""The captions against the rows: what a chapter's caption says its table shows, checked on the CSVs.

A chapter driver prints a caption above each table. Where a caption says what the rows show, it says
it in one form that reads as English and that this tool can check:

    COLUMN = VALUE in every row where KEY=VALUE[, KEY OP VALUE ...]

for example "valid = 0 in every row where version=bug_int_accumulator" or "within_bound = 1 in every
row where version=pairwise, data=positive, n>=2^22". OP is =, !=, <, <=, > or >=; a value may be a
number, 2^k, or a name with * and ? wildcards. The claim holds for the rows of every CSV of the chapter
(CHAPTER.csv, CHAPTER_*.csv) that has the columns it names. A caption that says "COLUMN = NUMBER"
of a column of the chapter's CSVs in any other form is reported too: a claim nobody can check is how
a caption comes to contradict its rows ("COLUMN = NUMBER: what it means" defines a value, and passes).

    tools/check_captions.py                          every chapter's captions (the string literals of
                                                     chapters/*/main.cpp) against results/reference/h100
    tools/check_captions.py 02_cpu_dot --results results/local --output LOG
                                                     one chapter, its captions as it printed them (LOG)
    --strict   a claim that no row of the CSVs matches is an error (for complete runs: the reference)

Exit 0 when every claim holds, 1 when a row contradicts a caption (each one is listed with its CSV
line), 2 on bad input.
"""
import argparse
import csv
import fnmatch
import math
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME = r"[A-Za-z_][A-Za-z0-9_]*"
VALUE = r"[^\s,;()]*[^\s,;().:]"  # a trailing full stop, colon or bracket ends the sentence, not the value
OP = r"!=|>=|<=|=|<|>"
COND = rf"{NAME}\s*(?:{OP})\s*{VALUE}"
CLAIM = re.compile(rf"\b(?P<col>{NAME}) = (?P<value>{VALUE}) in every row where (?P<conds>{COND}(?:, {COND})*)")
CONDITION = re.compile(rf"^(?P<key>{NAME})\s*(?P<op>{OP})\s*(?P<value>{VALUE})$")
# "COLUMN = NUMBER" anywhere in a caption: a claim about the rows, unless it is one of the form above
# or a definition ("valid = 1: ...", "deterministic = 1 means ...").
MENTION = re.compile(rf"\b(?P<col>{NAME}) = (?P<value>-?[0-9][0-9.^e+-]*)(?P<after>:| means)?")
# C++ tokens whose quotes are not string literals' (comments, character literals), then the literals.
CPP_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|R"(?P<delim>[^(\s]*)\((?P<raw>.*?)\)(?P=delim)"|"(?P<str>(?:[^"\\\n]|\\.)*)"'
                       r"|'(?:[^'\\\n]|\\.)+'", re.S)
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


class InputError(Exception):
    pass


def number(text):
    """The value of a number, 2^k or 2**k; None when the text is not one."""
    m = re.fullmatch(r"(-?\d+)\s*(?:\^|\*\*)\s*(\d+)", text)
    if m:
        return float(int(m.group(1)) ** int(m.group(2)))
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def caption_text_of_source(text):
    """The texts a C++ driver can print: its string literals, adjacent ones joined (as the compiler does)
    into one text each. Escapes are decoded; printf's %% is one %."""
    groups, current, last_end = [], [], None
    for m in CPP_TOKEN.finditer(text):
        if m.group("raw") is None and m.group("str") is None:
            continue  # a comment or a character literal
        if current and text[last_end:m.start()].strip():
            groups.append("".join(current))
            current = []
        if m.group("raw") is not None:
            current.append(m.group("raw"))
        else:
            current.append(re.sub(r"\\(.)", lambda e: ESCAPES.get(e.group(1), e.group(1)), m.group("str")))
        last_end = m.end()
    if current:
        groups.append("".join(current))
    return [g.replace("%%", "%") for g in groups]


def parse_claims(texts):
    """The claims of caption texts (a list of texts, or one; a claim lies within one text), and the
    'COLUMN = NUMBER' mentions outside them. Returns (claims, mentions): claims as dicts {col, value,
    conds: [(key, op, value)], text}; mentions as (column, value, sentence)."""
    if isinstance(texts, str):
        texts = [texts]
    claims, mentions = [], []
    for text in texts:
        more_claims, more_mentions = _parse_one(re.sub(r"\s+", " ", text))
        claims += more_claims
        mentions += more_mentions
    return claims, mentions


def _parse_one(flat):
    claims, spans = [], []
    for m in CLAIM.finditer(flat):
        conds = []
        for part in m.group("conds").split(", "):
            c = CONDITION.match(part.strip())
            conds.append((c.group("key"), c.group("op"), c.group("value")))
        claims.append({"col": m.group("col"), "value": m.group("value"), "conds": conds, "text": m.group(0)})
        spans.append(m.span())
    mentions = []
    for m in MENTION.finditer(flat):
        if m.group("after") or any(a <= m.start() < b for a, b in spans):
            continue
        end = flat.find(".", m.end())
        mentions.append((m.group("col"), m.group("value"), flat[m.start():end if end != -1 else len(flat)].strip()))
    return claims, mentions


def matches(cell, op, want):
    """Does a CSV cell satisfy `op want`? Numbers compare as numbers, names by wildcard."""
    a, b = number(cell), number(want)
    if op in ("<", "<=", ">", ">="):
        if a is None or b is None:
            return False
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if a is not None and b is not None:
        equal = a == b
    else:
        equal = fnmatch.fnmatchcase(cell, want)
    return equal if op == "=" else not equal


def chapter_csvs(results, chapter):
    return sorted(p for p in results.glob(f"{chapter}*.csv")
                  if p.stem == chapter or p.stem.startswith(chapter + "_"))


def read_csv(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def check(claims, mentions, csvs, strict=False):
    """Holds every claim on the rows? Returns a list of problems (empty: the captions are true)."""
    tables = [(path, *read_csv(path)) for path in csvs]
    # The flag columns (every value 0 or 1: valid, within_bound, deterministic, ...): what a caption says
    # of them is a claim about the rows. Other "COLUMN = NUMBER" mentions are formulas ("bytes = 2 n").
    flags = {c for _, header, rows in tables for c in header
             if rows and all(number(r[c]) in (0.0, 1.0) for r in rows if r[c] != "")}
    problems = []
    for col, value, sentence in mentions:
        if col in flags and number(value) in (0.0, 1.0):
            problems.append(f"a caption says \"{sentence}\" in a form that cannot be checked: write it as "
                            f"\"{col} = VALUE in every row where KEY=VALUE, ...\" (tools/check_captions.py)")
    for claim in claims:
        names = {claim["col"]} | {key for key, _, _ in claim["conds"]}
        applicable = [(p, h, rows) for p, h, rows in tables if names <= set(h)]
        if not applicable:
            if tables:
                problems.append(f"\"{claim['text']}\": no CSV has the columns {', '.join(sorted(names))}")
            continue
        matched = 0
        for path, _, rows in applicable:
            for line, row in enumerate(rows, start=2):
                if not all(matches(row[key], op, value) for key, op, value in claim["conds"]):
                    continue
                matched += 1
                if not matches(row[claim["col"]], "=", claim["value"]):
                    where = " ".join(f"{key}={row[key]}" for key in ("version", "data", "config", "n")
                                     if key in row and row[key] != "")
                    problems.append(f"{path.name}:{line}: {where} has {claim['col']} = {row[claim['col']]}, "
                                    f"but the caption says \"{claim['text']}\"")
        if matched == 0 and strict:
            problems.append(f"\"{claim['text']}\": no row of {', '.join(p.name for p, _, _ in applicable)} "
                            "matches it (--strict)")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("chapters", nargs="*", help="chapters by name (default: every chapters/NN_*/)")
    ap.add_argument("--results", type=pathlib.Path, default=ROOT / "results/reference/h100",
                    help="folder of the CSVs (default results/reference/h100)")
    ap.add_argument("--output", type=pathlib.Path,
                    help="what the chapter printed (its captions as shown); default: the string literals of "
                         "chapters/CHAPTER/main.cpp. One chapter only.")
    ap.add_argument("--strict", action="store_true", help="a claim that no row matches is an error")
    args = ap.parse_args(argv)
    try:
        chapters = args.chapters or sorted(p.parent.name for p in (ROOT / "chapters").glob("[0-9][0-9]_*/main.cpp"))
        if args.output and len(chapters) != 1:
            raise InputError("--output goes with exactly one chapter")
        if not args.results.is_dir():
            raise InputError(f"no folder {args.results}")
        failed, checked = False, 0
        for chapter in chapters:
            if args.output:
                if not args.output.is_file():
                    raise InputError(f"no file {args.output}")
                text = args.output.read_text(errors="replace")
            else:
                source = ROOT / "chapters" / chapter / "main.cpp"
                if not source.is_file():
                    raise InputError(f"no chapter '{chapter}' (looked for {source.relative_to(ROOT)})")
                text = caption_text_of_source(source.read_text())
            csvs = chapter_csvs(args.results, chapter)
            claims, mentions = parse_claims(text)
            if not csvs:
                print(f"check_captions: {chapter}: no CSV in {args.results}: {len(claims)} claim(s) not checked")
                continue
            problems = check(claims, mentions, csvs, strict=args.strict)
            checked += len(claims)
            for p in problems:
                print(f"check_captions: {chapter}: {p}", file=sys.stderr)
            failed |= bool(problems)
        print(f"check_captions: {checked} claim(s) of {len(chapters)} chapter(s) against {args.results}: "
              + ("CONTRADICTED (see above)" if failed else "all hold"))
        return 1 if failed else 0
    except (InputError, OSError, csv.Error) as e:
        print(f"check_captions: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
