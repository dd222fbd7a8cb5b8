"""The test suite's two tiers side by side: the inner loop (`pytest -m fast`) and the whole suite
(plain `pytest`, what CI runs), on a quiet machine and beside two busy loops (one per core),
alternating, so both tiers meet the same machine state.

Each run is `.venv/bin/python -m pytest -q -p no:cacheprovider [-m fast]` in this checkout, timed
by wall clock and by the CPU its process tree used (children's rusage). A failed run is reported,
not hidden. Run it on an otherwise idle machine: the "quiet" rows are only quiet then.

    .venv/bin/python -m bench.suite_tiers [--runs 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._util import PROJECT_ROOT, MachineWatch, print_table

TIERS = {"fast": ["-m", "fast"], "full": []}
TARGET_SHARE = 0.5
"""The inner loop takes at most half the full suite's time."""


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` processes each spinning one core, for as long as the block runs."""
    loops = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for loop in loops:
        loop.start()
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.join()


def run_tier(args: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the run's process tree, pytest's summary line)."""
    before = os.times()
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    lines = [line for line in result.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return wall, cpu, (lines[-1].strip("= ") if lines else f"exit {result.returncode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="rounds of each tier in each condition")
    options = parser.parse_args()
    rows = []
    watch = MachineWatch()
    for condition, loops in (("quiet", 0), ("two busy loops", 2)):
        times: dict[str, list[float]] = {name: [] for name in TIERS}
        for _ in range(options.runs):
            for name, args in TIERS.items():
                with busy_loops(loops):
                    wall, cpu, summary = run_tier(args)
                times[name].append(wall)
                rows.append([condition, name, f"{wall:.0f} s", f"{cpu:.0f} s", summary])
        share = min(times["fast"]) / min(times["full"])
        verdict = "met" if share <= TARGET_SHARE else "MISSED"
        rows.append([condition, "fast / full", f"{share:.2f}", "", f"target <= {TARGET_SHARE}: {verdict}"])
    print_table(["machine", "tier", "wall", "CPU", "pytest"], rows, title="Test tiers (bench/suite_tiers.py)")
    print(f"\n{watch.note()} (the busy loops count as other processes)")
    print(f"checkout: {Path(PROJECT_ROOT).name}")


if __name__ == "__main__":
    main()
