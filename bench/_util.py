"""Small helpers shared by the benchmark scripts (not part of kbkit)."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
"""The read-only benchmark data: `../shared/data` relative to the project root."""


def data_dir(override: Path | None) -> Path:
    data = (override or DEFAULT_DATA).expanduser().resolve()
    if not data.is_dir():
        raise SystemExit(f"benchmark data not found at {data}; pass --data DIR")
    return data


def write_project(root: Path, kb_path: str) -> None:
    """A minimal kbkit project: `root/kbkit.toml` pointing at `root/<kb_path>`."""
    (root / kb_path).mkdir(parents=True, exist_ok=True)
    (root / "kbkit.toml").write_text(f'[kb]\npath = "{kb_path}"\n', encoding="utf-8")


def percentile(values: list[float], pct: int) -> float:
    """Linear-interpolation percentile (numpy's default method), `pct` a whole number 1..99."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


class MachineWatch:
    """How busy the rest of the machine was while a benchmark ran.

    Timings taken while something else runs on a 2-core machine are not comparable, so each
    script reports the CPU that other processes used meanwhile: all busy CPU time (from
    /proc/stat) minus this process's and its children's, as cores on average.
    """

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self._start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat", encoding="ascii") as handle:
                fields = [int(value) for value in handle.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
        own = os.times()
        return time.monotonic(), busy, own.user + own.system + own.children_user + own.children_system

    def note(self) -> str:
        end = self._sample()
        if self._start is None or end is None:
            return f"{self.cores} cores (load of other processes unknown)"
        wall = max(end[0] - self._start[0], 1e-9)
        other = max(0.0, (end[1] - self._start[1]) - (end[2] - self._start[2])) / wall
        busy = " - BUSY, timings are inflated; rerun on an idle machine" if other > 0.2 else ""
        return f"{self.cores} cores; other processes used {other:.2f} cores on average during the run{busy}"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("met" if ok else "MISSED")


def print_table(headers: list[str], rows: list[list[str]], title: str | None = None) -> None:
    """A Markdown table (readable in a terminal, pasteable into docs/benchmarks.md)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    if title:
        print(f"\n{title}\n")

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))
