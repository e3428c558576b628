"""The bench's order-effect summary (library/bench/bench_host.py, order_effect): whether
dotcourse_auto is slower right after dotcourse_gpu's block than after another peer's. Rows only,
no timing."""
import importlib.util
import pathlib

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "bench_host.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_host_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(peer, n, k, after, ms):
    return {"peer": peer, "n": n, "round": k, "after": after, "calls": 5, "median_ms": ms}


def test_blocks_after_the_gpu_peer_apart_from_the_others():
    bench = load_bench()
    rows = [row("dotcourse_auto", 1024, 0, "dotcourse_gpu", 0.0015), row("dotcourse_auto", 1024, 1, "numpy", 0.0011),
            row("dotcourse_auto", 1024, 2, "", 0.0009), row("dotcourse_auto", 1024, 3, "dotcourse_gpu", 0.0017),
            row("cpu16", 1024, 0, "dotcourse_gpu", 0.5),          # another peer: not counted
            row("dotcourse_auto", 4096, 0, "numpy", 0.002)]       # never after the GPU peer: no line
    [(n, after, other, k_after, k_other)] = bench.order_effect(rows)
    assert (n, k_after, k_other) == (1024, 2, 2)
    assert after == pytest.approx(0.0016) and other == pytest.approx(0.001)
    assert bench.order_effect(rows, peer="cpu16") == []


def test_short_blocks_up_to_2_24_and_every_rep_timed():
    bench = load_bench()
    for n, want in ((1 << 10, 100), (1 << 16, 100), (1 << 18, 25), (1 << 20, 25), (1 << 24, 25)):
        rounds, per_round = bench.blocks_for(n, bench.reps_for(n))
        assert rounds == want and rounds * per_round >= bench.reps_for(n)
    assert bench.blocks_for(1 << 20, bench.reps_for(1 << 20)) == (25, 3)
    assert bench.blocks_for(1 << 28, 15) == (5, 3)
    assert bench.blocks_for(1 << 10, 1) == (100, 1)  # at least one call per block


def test_control_gap_is_the_same_code_twice():
    bench = load_bench()
    med = {("cpu16", 1024): 0.0010, (bench.CONTROL, 1024): 0.0012, ("cpu16", 1 << 26): 5.0}
    assert bench.control_gap(med, 1024) == pytest.approx(0.2)
    assert bench.control_gap(med, 1 << 26) is None  # the control did not run there
