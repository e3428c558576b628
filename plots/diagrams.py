#!/usr/bin/env python3
"""Draws the course's diagrams as SVG, written by this code (no plotting library), into docs/figures/.

The chapters show them with `![...](../../docs/figures/NAME.svg)`, which GitHub resolves from the
chapter's folder and tools/doxygen_filter.py turns into a name Doxygen finds in IMAGE_PATH. The
output is a pure function of this file, byte for byte, so CI can check that the committed figures
are current:

    python3 plots/diagrams.py            write docs/figures/*.svg
    python3 plots/diagrams.py --check    exit 1 when a committed figure differs or is missing (CI)
    python3 plots/diagrams.py --out DIR  write somewhere else

Every figure is small and drawn for a case small enough to read (8 threads, 16 values); the text
around it says how the picture scales to the real sizes.
"""
import argparse
import pathlib
import sys
from xml.sax.saxutils import escape

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "figures"

# One colour per thread (or lane, or block): colour-blind-safe (Okabe and Ito), then two greys.
COLOURS = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999"]
IDLE = "#EEEEEE"
INK = "#222222"
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"


class Svg:
    """The few SVG primitives the diagrams need; coordinates in pixels, y downwards."""

    def __init__(self, width, height, title):
        self.width, self.height, self.items = width, height, []
        self.title = title

    def rect(self, x, y, w, h, fill, stroke=INK, dash=False):
        extra = ' stroke-dasharray="4 3"' if dash else ""
        self.items.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}" '
                          f'stroke="{stroke}" stroke-width="1"{extra}/>')

    def text(self, x, y, s, size=12, anchor="middle", weight="normal", colour=INK, italic=False):
        style = ' font-style="italic"' if italic else ""
        self.items.append(f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" '
                          f'font-weight="{weight}" fill="{colour}"{style}>{escape(s)}</text>')

    def line(self, x1, y1, x2, y2, colour=INK, arrow=True, width=1.2, dash=False):
        head = ' marker-end="url(#head)"' if arrow else ""
        extra = ' stroke-dasharray="4 3"' if dash else ""
        self.items.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{colour}" '
                          f'stroke-width="{width}"{head}{extra}/>')

    def cell(self, x, y, w, h, label, fill, size=11, colour=INK):
        self.rect(x, y, w, h, fill)
        self.text(x + w / 2, y + h / 2 + size * 0.36, label, size=size, colour=colour)

    def render(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family="{FONT}">\n'
                f'<title>{escape(self.title)}</title>\n'
                '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
                'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#222222"/></marker></defs>\n'
                f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="white"/>\n')
        return head + "\n".join(self.items) + "\n</svg>\n"


def thread_mapping():
    """Chapter 01: one thread per element; the last block is rounded up and its extra threads idle."""
    n, block, blocks, w, h = 22, 8, 3, 30, 24
    s = Svg(90 + blocks * block * w + 200, 250, "One thread per element: i = blockIdx.x * blockDim.x + threadIdx.x")
    x0 = 90
    s.text(20, 22, "A grid of 3 blocks of blockDim.x = 8 threads for n = 22 elements (grid rounded up: 3 × 8 = 24 ≥ 22)",
           anchor="start", size=13, weight="bold")
    for b in range(blocks):
        bx = x0 + b * block * w
        s.rect(bx - 3, 40, block * w + 6, 64, "none", stroke=COLOURS[4 + b % 3], dash=True)
        s.text(bx + block * w / 2, 55, f"block {b} (blockIdx.x = {b})", size=12)
        for t in range(block):
            i = b * block + t
            fill = COLOURS[b] if i < n else IDLE
            s.cell(bx + t * w, 64, w, h, f"{t}", fill)
    s.text(x0 - 6, 80, "threadIdx.x", anchor="end", size=10)
    for i in range(blocks * block):
        x = x0 + i * w + w / 2
        if i < n:
            s.line(x, 64 + h + 2, x, 150 - 3, colour=INK)
        s.cell(x0 + i * w, 150, w, h, f"{i}" if i < n else "", COLOURS[i // block] if i < n else "white")
    s.text(x0 - 6, 166, "element i", anchor="end", size=10)
    s.text(x0 + blocks * block * w + 8, 166, "← i ≥ n: idle (bounds check)", anchor="start", size=10, italic=True)
    s.text(20, 205, "Thread 5 of block 2 takes i = 2 × 8 + 5 = 21. Neighbouring threads take neighbouring elements,",
           anchor="start", size=12)
    s.text(20, 223, "so a warp's 32 loads fall on consecutive addresses: one wide memory transaction (coalesced).",
           anchor="start", size=12)
    return s


def chunks_vs_stride():
    """Chapter 03 (and 05): contiguous chunks against a strided split, seen at one step of the loop."""
    n, threads, w, h = 16, 4, 34, 24
    s = Svg(40 + n * w + 270, 235, "Contiguous chunks against a strided split, 4 threads, 16 elements")
    x0 = 40
    s.text(x0, 22, "Who reads element i: 4 threads, 16 elements; the heavy outline is what the threads read at step 0",
           anchor="start", size=13, weight="bold")
    for row, (label, owner) in enumerate([("chunks (chapter 02's threads)", lambda i: i // (n // threads)),
                                           ("strided (grid-stride, chapter 05)", lambda i: i % threads)]):
        y = 50 + row * 80
        s.text(x0, y - 8, label, anchor="start", size=12)
        for i in range(n):
            t = owner(i)
            step = (i % (n // threads)) if row == 0 else i // threads
            s.cell(x0 + i * w, y, w, h, f"t{t}", COLOURS[t])
            if step == 0:
                s.rect(x0 + i * w + 2, y + 2, w - 4, h - 4, "none", stroke=INK)
                s.rect(x0 + i * w + 1, y + 1, w - 2, h - 2, "none", stroke=INK)
        s.text(x0 + n * w + 12, y + 16,
               "step 0 reads 0, 4, 8, 12: far apart" if row == 0 else "step 0 reads 0, 1, 2, 3: side by side",
               anchor="start", size=11)
    s.text(x0, 208, "Same work per thread either way. On a GPU the threads of a warp load together: side by side, "
                    "one transaction serves them all.", anchor="start", size=12)
    return s


def grid_stride():
    """Chapter 05: the grid-stride loop: 2 blocks × 4 threads over 20 elements, three passes."""
    n, blocks, block, w, h = 20, 2, 4, 30, 24
    threads = blocks * block
    s = Svg(900, 285, "The grid-stride loop: thread g takes g, g + S, g + 2S, ... with S = gridDim.x * blockDim.x")
    x0 = 60
    s.text(20, 22, "Grid-stride loop: gridDim.x = 2 blocks × blockDim.x = 4 threads, S = 8 threads in the grid, n = 20",
           anchor="start", size=13, weight="bold")
    for g in range(threads):
        b, t = divmod(g, block)
        s.cell(x0 + g * 2.5 * w, 45, 2 * w, h, f"block {b}, t{t}", COLOURS[g], size=10)
    for i in range(n):
        g = i % threads
        s.cell(x0 + i * w, 165, w, h, f"{i}", COLOURS[g])
    for i in range(n):
        g = i % threads
        s.line(x0 + g * 2.5 * w + w, 45 + h + 1, x0 + i * w + w / 2, 165 - 3, colour=COLOURS[g], width=1.0)
    for p in range(3):
        lo, hi = p * threads, min(n, (p + 1) * threads)
        s.line(x0 + lo * w + 2, 200, x0 + hi * w - 2, 200, arrow=False, width=2)
        s.text(x0 + (lo + hi) * w / 2, 216, f"pass {p}: i = {lo} … {hi - 1}", size=11)
    s.text(20, 245, "Any n works with any grid: each thread loops until i ≥ n (threads 4 to 7 stop after two passes).",
           anchor="start", size=12)
    s.text(20, 263, "In every pass the whole grid reads S consecutive elements: coalesced, pass after pass.",
           anchor="start", size=12)
    return s


def _tree(s, x0, y0, w, h, n, steps, title, subtitle):
    """Draws a reduction in shared memory: rows of n cells, one per step; (dst, src) pairs per step."""
    s.text(x0, y0 - 26, title, anchor="start", size=13, weight="bold")
    s.text(x0, y0 - 10, subtitle, anchor="start", size=11)
    live = set(range(n))
    for row, pairs in enumerate(steps + [[]]):
        y = y0 + row * 70
        for i in range(n):
            fill = COLOURS[0] if i in live else IDLE
            s.cell(x0 + i * w, y, w, h, str(i), fill, size=9)
        for dst, src in pairs:
            s.line(x0 + src * w + w / 2, y + h + 1, x0 + dst * w + w / 2, y + 70 - 3, colour=COLOURS[4], width=1.0)
        live = {d for d, _ in pairs} if pairs else live
    return live


def interleaved_vs_sequential():
    """Chapter 06: versions 1–2 (interleaved addressing) against version 3 (sequential addressing)."""
    n, w, h = 16, 22, 20
    s = Svg(2 * (n * w) + 120, 455, "Interleaved against sequential addressing in a shared-memory tree")
    inter, seq = [], []
    stride = 1
    while stride < n:
        inter.append([(i, i + stride) for i in range(0, n, 2 * stride)])
        stride *= 2
    half = n // 2
    while half >= 1:
        seq.append([(i, i + half) for i in range(half)])
        half //= 2
    _tree(s, 30, 55, w, h, n, inter, "Versions 1, 2: interleaved addressing",
          "s[i] += s[i + stride], i a multiple of 2·stride; stride = 1, 2, 4, 8")
    _tree(s, 90 + n * w, 55, w, h, n, seq, "Version 3: sequential addressing",
          "s[t] += s[t + half] for t < half; half = 8, 4, 2, 1")
    s.text(30, 400, "Left: the active slots spread out: the threads that work are scattered over the warps (v1: divergence), "
                    "or a thread's", anchor="start", size=11)
    s.text(30, 416, "slot is 2·stride·tid, many threads of a warp hit one bank (v2: bank conflicts). Right: the active "
                    "slots are always the first ones,", anchor="start", size=11)
    s.text(30, 432, "whole warps work or rest together, and neighbouring threads read neighbouring words, one per bank.",
           anchor="start", size=11)
    return s


def shuffle_down():
    """Chapter 05: __shfl_down_sync, drawn for 8 lanes with offsets 4, 2, 1 (a warp of 32 uses 16 … 1)."""
    lanes, w, h = 8, 60, 26
    s = Svg(140 + lanes * w + 40, 365, "Shuffle down: lane l adds the value of lane l + offset")
    x0 = 140
    s.text(20, 22, "value += __shfl_down_sync(mask, value, offset), drawn for 8 lanes",
           anchor="start", size=13, weight="bold")
    s.text(20, 38, "(a warp has 32 lanes and uses offsets 16, 8, 4, 2, 1: five steps)", anchor="start", size=11)
    useful = set(range(lanes))
    offset = lanes // 2
    row = 0
    while True:
        y = 55 + row * 72
        for lane in range(lanes):
            fill = COLOURS[2] if lane in useful else IDLE
            s.cell(x0 + lane * w, y, w - 6, h, f"lane {lane}", fill, size=10)
        if offset == 0:
            s.text(x0 - 10, y + 17, "lane 0: the sum", anchor="end", size=11, weight="bold")
            break
        s.text(x0 - 10, y + 50, f"offset {offset}", anchor="end", size=11)
        for lane in range(lanes):
            src = lane + offset
            if src < lanes and lane < offset:
                s.line(x0 + src * w + (w - 6) / 2, y + h + 1, x0 + lane * w + (w - 6) / 2, y + 72 - 3,
                       colour=COLOURS[4], width=1.2)
        useful = {lane for lane in useful if lane < offset}
        offset //= 2
        row += 1
    s.text(20, 335, "Registers to registers: no shared memory, no barrier. A lane whose partner is past the end",
           anchor="start", size=11)
    s.text(20, 351, "gets its own value back; those sums (grey) are never used: only lane 0's is.", anchor="start", size=11)
    return s


def last_block_ticket():
    """Chapter 06: version 11's single pass: every block writes its partial, then draws a ticket."""
    blocks = 5
    finish = [2, 0, 4, 1, 3]  # the order in which the blocks happen to finish
    s = Svg(840, 330, "The last block's ticket: whoever draws ticket gridDim.x - 1 adds the partials")
    s.text(20, 22, "Single pass (version 11), gridDim.x = 5: each block writes its partial, then takes a ticket",
           anchor="start", size=13, weight="bold")
    x_work, x_end = 110, 560
    for b in range(blocks):
        y = 45 + b * 42
        s.text(x_work - 10, y + 17, f"block {b}", anchor="end", size=12)
        order = finish.index(b)
        end = x_work + 200 + 50 * order
        s.rect(x_work, y, end - x_work, 24, COLOURS[b])
        s.text((x_work + end) / 2, y + 16, "its share → block sum", size=10,
               colour="white" if COLOURS[b] in ("#0072B2", "#D55E00") else INK)
        s.cell(end + 4, y, 80, 24, f"partial[{b}]", "white", size=10)
        last = order == blocks - 1
        s.cell(end + 90, y, 70, 24, f"ticket {order}", COLOURS[4] if last else IDLE, size=10,
               colour="white" if last else INK)
        if last:
            s.cell(end + 166, y, 96, 24, "adds partial[0..4]", COLOURS[5], size=10, colour="white")
    s.line(x_work, 270, x_end + 230, 270, width=1.2)
    s.text(x_end + 230, 285, "time", anchor="end", size=11, italic=True)
    s.text(20, 305, "The partial is written before the ticket is taken (release) and the last block reads the partials after "
                    "it (acquire): the last", anchor="start", size=11)
    s.text(20, 321, "ticket proves every partial is visible. The last block also sets the counter back to 0 for the next call.",
           anchor="start", size=11)
    return s


FIGURES = {
    "thread_mapping": thread_mapping,
    "chunks_vs_stride": chunks_vs_stride,
    "grid_stride": grid_stride,
    "shuffle_down": shuffle_down,
    "interleaved_vs_sequential": interleaved_vs_sequential,
    "last_block_ticket": last_block_ticket,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=OUT, help="folder for the SVG files (default docs/figures)")
    parser.add_argument("--check", action="store_true", help="compare with the committed figures; write nothing")
    args = parser.parse_args()
    stale = []
    for name, draw in FIGURES.items():
        text = draw().render()
        path = args.out / f"{name}.svg"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path))
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if args.check:
        extra = sorted(p.name for p in args.out.glob("*.svg") if p.stem not in FIGURES)
        if stale or extra:
            for p in stale:
                print(f"diagrams: {p} is missing or out of date: run python3 plots/diagrams.py", file=sys.stderr)
            for p in extra:
                print(f"diagrams: {args.out / p} is drawn by nothing in plots/diagrams.py", file=sys.stderr)
            return 1
        print(f"diagrams: {len(FIGURES)} figures current")
        return 0
    print(f"diagrams: wrote {len(FIGURES)} figures to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
