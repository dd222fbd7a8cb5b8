"""Small helpers shared by the benchmark scripts (not part of kbkit)."""

from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import statistics
import sys
import tarfile
import time
from pathlib import Path

from kbkit.kb.formats.markdown import parse_markdown

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
"""The read-only benchmark data: `../shared/data` relative to the project root."""


def rerun(module: str, *args: str) -> list[str]:
    """The command line that runs bench module `module` (its `__spec__.name`) again in a child, as
    `python -m bench.NAME` from the project root runs it: give the child `cwd=PROJECT_ROOT`."""
    return [sys.executable, "-m", module, *args]


def data_dir(override: Path | None) -> Path:
    data = (override or DEFAULT_DATA).expanduser().resolve()
    if not data.is_dir():
        raise SystemExit(f"benchmark data not found at {data}; pass --data DIR")
    return data


def write_project(root: Path, kb_path: str) -> None:
    """A minimal kbkit project: `root/kbkit.toml` pointing at `root/<kb_path>`."""
    (root / kb_path).mkdir(parents=True, exist_ok=True)
    (root / "kbkit.toml").write_text(f'[kb]\npath = "{kb_path}"\n', encoding="utf-8")


def free_port() -> int:
    """A loopback port free right now (a bench may race for it; the tests bind port 0 instead)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def percentile(values: list[float], pct: int) -> float:
    """Linear-interpolation percentile (numpy's default method), `pct` a whole number 1..99."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


class MachineWatch:
    """How busy the rest of the machine was while a benchmark ran.

    Timings taken while something else runs on a 2-core machine are not comparable, so each
    script reports the CPU that other processes used meanwhile: all busy CPU time (from
    /proc/stat) minus this process's and its children's, as cores on average. A server the run
    started through a fork server is not a child it waits for: `own` adds its CPU seconds, read
    before it stops, so its work is not reported as somebody else's load.
    """

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self._start = self._sample()
        self._own_elsewhere = 0.0

    def own(self, pid: int) -> None:
        """Count the CPU time so far of a process this run started (and does not wait for) as its
        own: call it just before stopping the process."""
        with contextlib.suppress(OSError, ValueError, IndexError):  # gone: its time is lost to the note
            self._own_elsewhere += cpu_seconds(pid)

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
        own = end[2] - self._start[2] + self._own_elsewhere
        other = max(0.0, (end[1] - self._start[1]) - own) / wall
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


# A phrase a person would type starts and ends on a content word ("window style", not "form of").
FUNCTION_WORDS = frozenset(
    "a an and are as at be but by can for from has have if in into is it its may must no not of on or "
    "so such than that the their then there these they this to was were will with you your".split()
)
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.MULTILINE | re.DOTALL)
_LINK_TARGET = re.compile(r"\]\([^)]*\)|<[^>]*>|https?://\S+")
_PROSE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#_.-]*[A-Za-z0-9+#]|[A-Za-z]")


def unpack(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")


def make_queries(kb_root: Path, count: int, seed: int, *, max_words: int = 4) -> list[str]:
    """Half titles, half 2-to-max_words runs of prose (code fences, link targets and tags left out)."""
    rng = random.Random(seed)
    files = sorted(kb_root.rglob("*.md"))
    queries: list[str] = []
    for path in rng.sample(files, min(len(files), count * 2)):
        if len(queries) == count:
            break
        parsed = parse_markdown(path.read_bytes())
        if len(queries) % 2 == 0:
            if parsed.title:
                queries.append(parsed.title)
            continue
        prose = _LINK_TARGET.sub(" ", _FENCE.sub(" ", parsed.body))
        words = _PROSE_WORD.findall(prose)
        size = rng.randint(2, max_words)
        for _ in range(50 if len(words) >= size else 0):
            phrase = words[(start := rng.randrange(len(words) - size + 1)) : start + size]
            if phrase[0].lower() not in FUNCTION_WORDS and phrase[-1].lower() not in FUNCTION_WORDS:
                queries.append(" ".join(phrase))
                break
    return queries


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """utime + stime of a process, from /proc/<pid>/stat (of one of its threads, given its id)."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
    with open(path, encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
