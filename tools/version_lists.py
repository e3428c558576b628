#!/usr/bin/env python3
"""One source for every list of versions: each chapter's registry.

A chapter's versions are listed once, in its registry (solutions/NN_name/*.cu|cpp, the
`static const std::vector<course::Version<...>> registry = {...}` of `versions()`).
The command line's --list and --kernel, the tests and the benchmark read it at run time. The other
lists are made from it or checked against it here:

  chapters/NN_name/README.md   the table between `<!-- versions: begin -->` and
                               `<!-- versions: end -->` is written from the registry
  the source's table of contents  the `//   name ...` lines at the top of the registry's file
                               must name the same versions in the same order
  tools/grading/NN_name.json   every `--kernel X` and every performance row's `version` must be a
                               version (or `X_paired`: X timed alternately with its baseline);
                               every exercise version needs a correctness entry
                               "chNN X: *"

  tools/version_lists.py           rewrite the README tables
  tools/version_lists.py --check   exit 1 when a README table, a table of contents or a grading
                                   manifest disagrees with a registry (CI)
  tools/version_lists.py --print NN  print chapter NN's registry as CSV (name,description,exercise)
  tools/version_lists.py --check-list NN EXE  exit 1 when `EXE --list` (the built executable) does
                                   not print chapter NN's registry (a CTest in the solutions build)
"""
import subprocess
import argparse
import csv
import fnmatch
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# course::Version<Fn> entries are braced initializers {"name", "description", launcher[, exercise]};
# chapter 10's pairs are make_pair<X, Y>("name", "description", ..., exercise) calls.
REGISTRY = re.compile(r"(\w+)\(\)\s*\{\s*(?://[^\n]*\n\s*)*static const std::vector<(course::Version<\w+>|Pair)> registry = \{",
                      re.S)
MAKE_PAIR = re.compile(r"\bmake_pair<[^<>()]*>\s*\(")
TABLE = re.compile(r"(<!-- versions: begin[^>]*-->\n)(.*?)(<!-- versions: end -->)", re.S)
TOC_ENTRY = re.compile(r"^//   (\w+)(\s|$)")


class ListError(Exception):
    pass


class Version:
    def __init__(self, name, description, exercise):
        self.name, self.description, self.exercise = name, description, exercise

    def __repr__(self):
        return f"Version({self.name!r}, exercise={self.exercise})"


def _split_top(text, sep=","):
    """Splits `text` at `sep` outside braces, parentheses, angle-free; strings and comments kept whole."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if text.startswith("//", i):
            i = text.index("\n", i) if "\n" in text[i:] else len(text)
            continue
        if c in "{(":
            depth += 1
        elif c in "})":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _string(expr, where):
    """The value of a C++ string literal (adjacent literals joined)."""
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', expr)
    rest = re.sub(r'"((?:[^"\\]|\\.)*)"', "", expr).strip()
    if not pieces or rest:
        raise ListError(f"{where}: expected a string literal, found {expr!r}")
    return "".join(p.encode().decode("unicode_escape") for p in pieces)


def parse_registry(text, where="source"):
    """(function name, [Version]) of the one registry in a C++ source text."""
    found = list(REGISTRY.finditer(text))
    if len(found) != 1:
        raise ListError(f"{where}: expected one `registry = {{...}}` of course::Version, found {len(found)}")
    function = found[0].group(1)
    start = found[0].end()
    depth, i = 1, start
    while depth:
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            i = text.index("\n", i)
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    body = MAKE_PAIR.sub("make_pair(", text[start:i - 1])  # no commas of template arguments left
    versions = []
    for entry in _split_top(body):
        if entry.startswith("make_pair(") and entry.endswith(")"):
            entry = "{" + entry[len("make_pair("):-1] + "}"
        if not (entry.startswith("{") and entry.endswith("}")):
            raise ListError(f"{where}: a registry entry is not a braced initializer: {entry[:60]!r}")
        fields = _split_top(entry[1:-1])
        if len(fields) < 3:
            raise ListError(f"{where}: a registry entry needs a name, a description and a launcher: {entry[:60]!r}")
        exercise = fields[-1] == "true" if len(fields) >= 4 and fields[-1] in ("true", "false") else False
        versions.append(Version(_string(fields[0], where), _string(fields[1], where), exercise))
    names = [v.name for v in versions]
    if len(set(names)) != len(names):
        raise ListError(f"{where}: a version name appears twice in the registry: {names}")
    return function, versions


def parse_toc(text):
    """The names in the table of contents: the `//   name` lines of the file's opening comment."""
    names, started = [], False
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        m = TOC_ENTRY.match(line)
        if m:
            names.append(m.group(1))
            started = True
        elif started and not line.startswith("//    "):
            break  # the list ended (a continuation line is indented deeper)
    return names


class Chapter:
    def __init__(self, folder):
        self.folder = folder  # solutions/NN_name
        self.name = folder.name
        self.number = self.name[:2]
        sources = [p for p in sorted(folder.iterdir()) if p.suffix in (".cu", ".cpp") and REGISTRY.search(p.read_text())]
        if len(sources) != 1:
            raise ListError(f"{folder.relative_to(ROOT)}: expected one source with a registry, found {len(sources)}")
        self.source = sources[0]
        self.text = self.source.read_text()
        self.function, self.versions = parse_registry(self.text, str(self.source.relative_to(ROOT)))
        self.element = REGISTRY.search(self.text).group(2)  # course::Version<Fn>, or chapter 10's Pair

    @property
    def names(self):
        return [v.name for v in self.versions]


def chapters(root=None):
    root = root or ROOT
    out = []
    for folder in sorted((root / "solutions").glob("[0-9][0-9]_*")):
        if folder.is_dir() and any(REGISTRY.search(p.read_text()) for p in folder.iterdir() if p.suffix in (".cu", ".cpp")):
            out.append(Chapter(folder))
    return out


def readme_table(ch):
    """The README's version table, made from the registry."""
    first = "path" if ch.element == "course::Version<PathFactory>" else "version"  # chapter 08's paths
    lines = [f"| {first} | what it does | run it |", "| --- | --- | --- |"]
    for v in ch.versions:
        what = v.description.replace("|", "/")
        if v.exercise:
            what += " (**exercise**)"
        lines.append(f"| `{v.name}` | {what} | `{ch.name} --kernel {v.name}` |")
    return "\n".join(lines) + "\n"


def sync_readme(ch, text, where):
    """`text` with its version table rewritten; ListError when the markers are missing."""
    found = list(TABLE.finditer(text))
    if len(found) != 1:
        raise ListError(f"{where}: expected one `<!-- versions: begin -->` ... `<!-- versions: end -->` table, "
                        f"found {len(found)}")
    m = found[0]
    return text[:m.start(2)] + readme_table(ch) + text[m.end(2):]


def check_toc(ch):
    toc = parse_toc(ch.text)
    if toc != ch.names:
        return [f"{ch.source.relative_to(ROOT)}: the table of contents lists {toc}, the registry "
                f"({ch.function}()) {ch.names}: make them agree (same names, same order)"]
    return []


def check_manifest(ch, manifest, where):
    problems = []
    names = set(ch.names)
    for rule in manifest.get("performance", []):
        args = rule.get("args", [])
        for k, a in enumerate(args[:-1]):
            if a != "--kernel":
                continue
            for asked in args[k + 1].split(","):   # --kernel takes one name or a comma list
                if asked not in names:
                    problems.append(f"{where}: performance rule '{rule.get('name')}' runs --kernel {asked}, "
                                    f"which is not a version of {ch.name} ({', '.join(ch.names)})")
        version = rule.get("row", {}).get("version")
        # "X_paired" is version X timed alternately with its baseline (chapter 07's graded pair).
        if version is not None and version.endswith("_paired"):
            version = version[:-len("_paired")]
        # A registry of Pair (chapter 10) keeps the pair in the CSV's dtype column; its `version` column
        # names the implementation (course, cuBLAS, CUB), which --kernel does not select.
        if version is not None and version not in names and ch.element != "Pair":
            problems.append(f"{where}: performance rule '{rule.get('name')}' reads the row of version '{version}', "
                            f"which is not a version of {ch.name}")
    globs = {c.get("tests", "") for c in manifest.get("correctness", [])}
    for v in ch.versions:
        # an entry whose glob takes the version's tests: "chNN name: *", a wider one ("ch10 f*: *")
        # or a narrower one of the same version ("ch11 allgather on 1 GPU: *")
        if v.exercise and not any(fnmatch.fnmatchcase(f"ch{ch.number} {v.name}: a test", g) or
                                  g.startswith(f"ch{ch.number} {v.name} ") for g in globs):
            problems.append(f"{where}: the exercise version '{v.name}' has no correctness entry "
                            f"\"ch{ch.number} {v.name}: *\"")
    return problems


def run(check, root=None):
    root = root or ROOT
    problems, changed = [], []
    for ch in chapters(root):
        readme = root / "chapters" / ch.name / "README.md"
        where = str(readme.relative_to(root))
        try:
            old = readme.read_text()
            new = sync_readme(ch, old, where)
            if new != old:
                if check:
                    problems.append(f"{where}: the version table is not the registry's; run tools/version_lists.py")
                else:
                    readme.write_text(new)
                    changed.append(where)
        except (ListError, FileNotFoundError) as e:
            problems.append(str(e))
        problems += check_toc(ch)
        manifest_path = root / "tools" / "grading" / f"{ch.name}.json"
        if manifest_path.is_file():
            problems += check_manifest(ch, json.loads(manifest_path.read_text()), str(manifest_path.relative_to(root)))
    return problems, changed


def parse_list_output(text):
    """(name, description) pairs from an executable's --list: name, two spaces or more, description."""
    out = []
    for line in text.splitlines():
        if line.strip():
            name, _, what = line.partition("  ")
            out.append((name.strip(), what.strip()))
    return out


def check_list(ch, exe):
    got = parse_list_output(subprocess.run([exe, "--list"], check=True, capture_output=True, text=True).stdout)
    want = [(v.name, v.description) for v in ch.versions]
    if got != want:
        return [f"`{exe} --list` prints {got}, the registry parsed from {ch.source.relative_to(ROOT)} is {want}"]
    return []


def find_chapter(key):
    for ch in chapters():
        if key in (ch.number, ch.name):
            return ch
    raise ListError(f"no chapter {key} with a registry under solutions/")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any disagreement")
    parser.add_argument("--print", metavar="NN", help="print chapter NN's registry as CSV and exit")
    parser.add_argument("--check-list", nargs=2, metavar=("NN", "EXE"),
                        help="compare `EXE --list` with chapter NN's registry")
    args = parser.parse_args()
    try:
        changed = []
        if args.print:
            ch = find_chapter(args.print)
            w = csv.writer(sys.stdout, lineterminator="\n")
            w.writerow(["name", "description", "exercise"])
            for v in ch.versions:
                w.writerow([v.name, v.description, 1 if v.exercise else 0])
            return 0
        if args.check_list:
            problems = check_list(find_chapter(args.check_list[0]), args.check_list[1])
        else:
            problems, changed = run(args.check)
    except ListError as e:
        print(f"version_lists: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"version_lists: {p}", file=sys.stderr)
    for c in changed:
        print(f"version_lists: rewrote the version table of {c}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
