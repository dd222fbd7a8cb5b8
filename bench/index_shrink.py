"""The index file's size when most documents leave: 1,660 documents indexed, all but 155 removed,
rescanned; against the same 155 indexed from scratch.

A documentation folder narrowed after the first index (a whole translation set dropped, say) left
the index at its largest: SQLite keeps freed pages and FTS5 keeps a removed document's entries in
its segments until they merge. The scan now merges and vacuums once much was freed
(`Store.reclaim`). The first 1,660 Markdown files of cpp-docs (by path) stand in for a real site;
`--site DIR` takes the real one instead: FastAPI's `docs/` (all 14 languages, 1,660 files kbkit
indexes) narrowed to `docs/en/docs` (155), as a team that first indexed the whole folder would.

    .venv/bin/python -m bench.index_shrink [--data DIR] [--documents 1660] [--kept 155] [--site DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench._util import data_dir, print_table, unpack, write_project
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase


def on_disk(root: Path) -> int:
    """The index file and its write-ahead log, in bytes."""
    return sum(path.stat().st_size for path in (root / ".kbkit").glob("index.db*") if path.is_file())


def row(label: str, documents: int, root: Path, seconds: float) -> list[str]:
    return [label, f"{documents:,} indexed", f"{on_disk(root) / 1e6:.2f} MB", f"{seconds:.2f} s"]


def scan(root: Path) -> tuple[int, float]:
    started = time.perf_counter()
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
    finally:
        kb.close()
    return report.documents, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--documents", type=int, default=1660)
    parser.add_argument("--kept", type=int, default=155)
    parser.add_argument("--site", type=Path, default=None, help="a folder holding FastAPI's docs/")
    args = parser.parse_args(argv)
    if args.site is not None:
        return fastapi(args.site)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    with tempfile.TemporaryDirectory(prefix="kbkit-shrink-") as tmp:
        base = Path(tmp)
        unpack(archive, base / "src")
        pages = sorted((base / "src" / "cpp-docs" / "docs").rglob("*.md"))[: args.documents]
        rows = []
        for name, count in (("shrunk", args.documents), ("fresh", args.kept)):
            root = base / name
            write_project(root, "docs")
            for page in pages[:count]:
                target = root / "docs" / page.relative_to(base / "src" / "cpp-docs" / "docs")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(page, target)
            documents, seconds = scan(root)
            rows.append([name, f"{documents:,} indexed", f"{on_disk(root) / 1e6:.2f} MB", f"{seconds:.2f} s"])
            if name == "shrunk":
                for page in pages[args.kept : args.documents]:
                    (root / "docs" / page.relative_to(base / "src" / "cpp-docs" / "docs")).unlink()
                documents, seconds = scan(root)
                rows.append(
                    [
                        f"{name}, after removing {args.documents - args.kept:,}",
                        f"{documents:,} indexed",
                        f"{on_disk(root) / 1e6:.2f} MB",
                        f"{seconds:.2f} s (the rescan)",
                    ]
                )
        print_table(["index", "documents", "on disk", "scan"], rows, title="index size when documents leave")
    return 0


def fastapi(site: Path) -> int:
    """FastAPI's docs/ indexed whole, then narrowed to docs/en/docs; against docs/en/docs alone."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="kbkit-shrink-") as tmp:
        for name in ("shrunk", "fresh"):
            root = Path(tmp) / name
            write_project(root, "docs")
            shutil.copytree(site / "docs", root / "docs", dirs_exist_ok=True)
            if name == "shrunk":
                documents, seconds = scan(root)
                rows.append(row(name, documents, root, seconds))
            for path in (root / "docs").iterdir():
                if path.name != "en":
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
            for path in (root / "docs" / "en").iterdir():
                if path.name != "docs":
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
            documents, seconds = scan(root)
            label = "shrunk, narrowed to docs/en/docs" if name == "shrunk" else "fresh (docs/en/docs alone)"
            rows.append(row(label, documents, root, seconds))
    print_table(["index", "documents", "on disk", "scan"], rows, title="FastAPI's docs when documents leave")
    return 0


if __name__ == "__main__":
    sys.exit(main())
