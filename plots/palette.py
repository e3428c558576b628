"""The course's colours, in one place: one colour per role, per engine, per host-memory path and per
phase of a call, the same in every chapter's plots. A reader who has learnt in chapter 07 that
orange is a copy to the device reads chapter 09's timelines and chapter 11's host copies without a
legend; chapter 08's two figures give each path the same colour.

Every plot script takes its colours from here (through course_style, which re-exports them).
"""

# Roles: what a line or bar is in the story.
ROLES = {
    "cpu": "#7f7f7f",       # the CPU baselines
    "gpu": "#1f77b4",       # a GPU kernel, the course's versions
    "copies": "#ff7f0e",    # copies between host and device
    "library": "#2ca02c",   # cuBLAS, CUB
    "best": "#d62728",      # the version the chapter builds up to
    "roofline": "#000000",  # rooflines, links, yardsticks
    "key": "#444444",       # a legend entry that explains a marker or a shade, not a colour
}

# The GPU's engines (chapters 07, 09, 11): copy in, compute, copy out.
ENGINES = {
    "h2d": ROLES["copies"],
    "kernel": ROLES["gpu"],
    "d2h": "#9467bd",
}

# The phases of one call on host data (chapters 03 and 07): the engines' colours, plus the host's work.
PHASES = {
    "allocate": "#c49c94",
    "copy x": ENGINES["h2d"],
    "copy y": "#ffbb78",  # the second copy in: a lighter h2d
    "kernel": ENGINES["kernel"],
    "copy back": ENGINES["d2h"],
    "free": "#969696",
    "other": "#e0e0e0",
}

# The paths from host memory to the GPU (chapters 07 and 08), by the names the CSVs use.
PATHS = {
    "pageable": "#8c564b",
    "pinned": "#d62728",
    "registered": "#e377c2",
    "mapped": "#17becf",
    "staged": "#bcbd22",
    "managed": "#2ca02c",
    "managed_prefetch": "#98df8a",
}

# The Python peers of the course's library (chapters 07 and 10).
PEERS = {
    "numpy": ROLES["cpu"],
    "dotcourse": ROLES["gpu"],
    "cupy": "#2ca02c",
    "torch": "#6b6ecf",
    "torch_convert": "#9c9ede",  # torch after converting the pair to one dtype: a lighter torch
}

# Anything else (versions of a ladder, sizes, GPU counts), in order.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]


def path_color(name):
    """The colour of a host-memory path; an unknown one gets a colour of its own from the rest of PALETTE."""
    if name in PATHS:
        return PATHS[name]
    spare = [c for c in PALETTE if c not in PATHS.values()]
    return spare[sum(map(ord, str(name))) % len(spare)]


def engine_color(name):
    return ENGINES[name]


def lighter(color, amount):
    """`color` mixed with white: amount 0 is the colour itself, 1 is white."""
    rgb = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)


def darker(color, amount):
    """`color` mixed with black: amount 0 is the colour itself, 1 is black."""
    rgb = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c * (1 - amount)):02x}" for c in rgb)


def stream_shade(engine, stream, streams):
    """The colour of `engine`'s work on stream `stream` of `streams`: the engine's hue, lighter for
    later streams, so a timeline per engine tells streams apart and keeps the engines' colours."""
    return lighter(ENGINES[engine], 0.6 * stream / max(streams - 1, 1) if streams > 1 else 0.0)
