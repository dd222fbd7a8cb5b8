"""Hostile files against their budgets: a PDF form bomb and a backtracking `.kbignore`, before and after.

Each case runs in its own process, so its time and peak memory (the process's max RSS) are its own:

- PDF form bomb: one page drawing one form XObject `--draws` times (600,000; about 6 KB on disk,
  tests/peers/hostile.py builds it). "before" is the extraction as it was (pypdf's defaults,
  `page.extract_text()`), with its text then written to an FTS5 table as the indexer did;
  "after" is `kbkit index` on a project holding the file, under kbkit's PDF budgets.
- repeated form: 120 pages (one page object listed 120 times) each drawing one form 5,000 times,
  600,000 renderings in 1.5 KB, each stream within its budgets; `kbkit index` on it.
- backtracking `.kbignore`: `**/a*a*...(15)b.md` over `--files` names of 24 `a`s (3,000).
  "before" matches them with pathspec's Python-regex backend (what kbkit used), stopped at
  `--limit` seconds and extrapolated from the files done; "after" is `kbkit index` (RE2).
- over-long pattern: a 404-character pattern, refused by `kbkit index` with one line.

    .venv/bin/python -m bench.hostile [--draws 600000] [--files 3000] [--limit 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench._util import MachineWatch, print_table, write_project
from tests.peers.hostile import (
    backtracking_kbignore,
    backtracking_names,
    form_bomb_pdf,
    repeated_form_pdf,
)

KBKIT = str(Path(sys.executable).parent / "kbkit")

BEFORE_PDF = """
import io, sqlite3, sys, pypdf
reader = pypdf.PdfReader(io.BytesIO(open(sys.argv[1], "rb").read()))
text = "\\n\\n".join((page.extract_text() or "").strip() for page in reader.pages)
conn = sqlite3.connect(sys.argv[2])
conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
conn.execute("INSERT INTO t (body) VALUES (?)", (text,))
conn.commit()
print(len(text))
"""

BEFORE_IGNORE = """
import sys, pathspec
spec = pathspec.GitIgnoreSpec.from_lines([sys.argv[1]], backend="simple")
for name in sys.argv[2:]:
    spec.match_file(name)
    print(name, flush=True)
"""
RUN = 24
"""Leading `a`s per name: each adds about a third to Python's matching time (24: about 0.75 s a file)."""


def run(argv: list[str], limit: float | None = None) -> tuple[float, float, str, int]:
    """(seconds, peak RSS in MB, output, exit code) of one child process, stopped after `limit` s."""
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True)
        stopper = threading.Timer(limit, child.kill) if limit else None
        if stopper:
            stopper.start()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak memory
        if stopper:
            stopper.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    return time.monotonic() - started, usage.ru_maxrss / 1024, text, child.returncode


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / (1024 * 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=600_000)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--limit", type=float, default=60.0)
    args = parser.parse_args()
    watch = MachineWatch()
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="kbkit-hostile-") as tmp:
        base = Path(tmp)

        bomb = form_bomb_pdf(args.draws)
        (base / "bomb.pdf").write_bytes(bomb)
        seconds, peak, out, _ = run(
            [sys.executable, "-c", BEFORE_PDF, str(base / "bomb.pdf"), str(base / "b.db")]
        )
        chars = int(out.strip().splitlines()[-1])
        rows.append(
            [
                f"PDF form bomb ({len(bomb) / 1024:.1f} KB, {args.draws:,} draws)",
                "before (pypdf defaults)",
                f"{seconds:.1f} s",
                f"{peak:.0f} MB",
                f"{(base / 'b.db').stat().st_size / (1024 * 1024):.2f} MB",
                f"indexed, {chars:,} characters of text",
            ]
        )
        project = base / "pdf"
        write_project(project, "docs")
        (project / "docs" / "bomb.pdf").write_bytes(bomb)
        seconds, peak, out, _ = run([KBKIT, "index", "--root", str(project), "--skipped"])
        reason = next((line.strip() for line in out.splitlines() if "skipped bomb.pdf" in line), out.strip())
        rows.append(
            [
                "",
                "after (kbkit budgets)",
                f"{seconds:.1f} s",
                f"{peak:.0f} MB",
                f"{size_mb(project / '.kbkit'):.2f} MB",
                reason[:90],
            ]
        )

        repeated = repeated_form_pdf()
        (project / "docs" / "bomb.pdf").write_bytes(repeated)
        seconds, peak, out, _ = run([KBKIT, "index", "--root", str(project), "--skipped"])
        reason = next((line.strip() for line in out.splitlines() if "skipped bomb.pdf" in line), out.strip())
        rows.append(
            [
                f"PDF repeated form ({len(repeated) / 1024:.1f} KB, 600,000 draws over 120 pages)",
                "after (kbkit budgets)",
                f"{seconds:.1f} s",
                f"{peak:.0f} MB",
                f"{size_mb(project / '.kbkit'):.2f} MB",
                reason[:90],
            ]
        )

        names = [f"docs/{name}" for name in backtracking_names(args.files, run=RUN)]
        pattern = backtracking_kbignore().strip()
        seconds, peak, out, _ = run([sys.executable, "-c", BEFORE_IGNORE, pattern, *names], args.limit)
        done = len(out.splitlines())
        rows.append(
            [
                f"`.kbignore` `{pattern[:14]}...` over {args.files:,} files",
                "before (Python regex)",
                f"stopped at {seconds:.0f} s",
                f"{peak:.0f} MB",
                "",
                f"{done:,} of {args.files:,} files matched; all: about "
                f"{seconds / max(done, 1) * args.files / 60:.0f} min",
            ]
        )
        project = base / "ignore"
        write_project(project, "docs")
        for name in backtracking_names(args.files, run=RUN):
            (project / "docs" / name).write_text("# a\n")
        (project / "docs" / ".kbignore").write_text(backtracking_kbignore())
        seconds, peak, out, _ = run([KBKIT, "index", "--root", str(project)])
        rows.append(["", "after (RE2)", f"{seconds:.1f} s", f"{peak:.0f} MB", "", out.strip()[:90]])

        (project / "docs" / ".kbignore").write_text("**/" + "a*" * 200 + "b\n")
        seconds, peak, out, code = run([KBKIT, "index", "--root", str(project)])
        rows.append(
            [
                "over-long pattern (404 characters)",
                "after",
                f"{seconds:.1f} s",
                f"{peak:.0f} MB",
                "",
                f"exit {code}: " + out.strip().split(": ", 2)[-1][:80],
            ]
        )
    print_table(["input", "run", "time", "peak memory", "index size", "outcome"], rows, "Hostile files")
    print(f"\n{watch.note()}")


if __name__ == "__main__":
    main()
