"""Office files through `kbkit index`: time and peak memory for a generated ~1 MB file of each format.

Each file is written by the library that writes the format (python-docx, python-pptx, openpyxl,
odfpy) from seeded random made-up words, so it compresses like prose, not like a repeated line:
a Word or OpenDocument text of headings, paragraphs and a table every 100 paragraphs; a deck of
slides with bullets (and, in PowerPoint, speaker notes); a workbook of ten sheets of 10 columns
(only the first 200 rows of each are read: docs/adr/0033). A Markdown file of about 1 MB is the
reference row. Each run is `kbkit index` in its own process on a project holding that one file,
so its time and peak memory (max RSS) are its own; the formats are run in turn, `--rounds`
times, and the median is shown.

    .venv/bin/python -m bench.formats_office [--rounds 3] [--size 1.0]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._util import PROJECT_ROOT, MachineWatch, print_table, rerun, write_project

KBKIT = str(Path(sys.executable).parent / "kbkit")
_LETTERS = random.Random(0)
WORDS = [
    "".join(_LETTERS.choice("etaoinshrdlucmfwypvbgk") for _ in range(_LETTERS.randint(2, 10)))
    for _ in range(3000)
]
"""A vocabulary of 3,000 made-up words: text of them compresses about as prose does (3-4 fold)."""


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def docx_file(units: int) -> bytes:
    import docx

    rng = random.Random(1)
    document = docx.Document()
    for n in range(units):
        if n % 20 == 0:
            document.add_heading(words(rng, 4), 1 + (n // 20) % 2)
        document.add_paragraph(words(rng, 40))
        if n % 100 == 99:
            table = document.add_table(rows=6, cols=4)
            for row in table.rows:
                for cell in row.cells:
                    cell.text = words(rng, 2)
    return _saved(document)


def pptx_file(units: int) -> bytes:
    from pptx import Presentation

    rng = random.Random(2)
    deck = Presentation()
    for _ in range(units):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = words(rng, 4)
        body = slide.placeholders[1].text_frame
        body.text = words(rng, 12)
        for _ in range(4):
            body.add_paragraph().text = words(rng, 12)
        slide.notes_slide.notes_text_frame.text = words(rng, 30)
    return _saved(deck)


def xlsx_file(units: int) -> bytes:
    import openpyxl

    rng = random.Random(3)
    book = openpyxl.Workbook(write_only=True)
    for sheet_number in range(10):
        sheet = book.create_sheet(f"Sheet {sheet_number}")
        for _ in range(units // 10):
            sheet.append(
                [words(rng, 3), rng.randint(0, 10**6), rng.random(), *(words(rng, 2) for _ in range(7))]
            )
    return _saved(book)


def odt_file(units: int) -> bytes:
    from odf import table, text
    from odf.opendocument import OpenDocumentText

    rng = random.Random(4)
    document = OpenDocumentText()
    for n in range(units):
        if n % 20 == 0:
            document.text.addElement(text.H(outlinelevel=1 + (n // 20) % 2, text=words(rng, 4)))
        document.text.addElement(text.P(text=words(rng, 40)))
        if n % 100 == 99:
            grid = table.Table(name=f"T{n}")
            for _ in range(6):
                row = table.TableRow()
                for _ in range(4):
                    cell = table.TableCell()
                    cell.addElement(text.P(text=words(rng, 2)))
                    row.addElement(cell)
                grid.addElement(row)
            document.text.addElement(grid)
    return _saved(document)


def odp_file(units: int) -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    rng = random.Random(5)
    deck = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    deck.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    deck.masterstyles.addElement(master)
    for _ in range(units):
        page = Page(masterpagename=master)
        for kind, lines in (("title", [words(rng, 4)]), (None, [words(rng, 30) for _ in range(8)])):
            frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
            if kind:
                frame.setAttrNS(PRESENTATIONNS, "class", kind)
            box = TextBox()
            for line in lines:
                box.addElement(P(text=line))
            frame.addElement(box)
            page.addElement(frame)
        deck.presentation.addElement(page)
    return _saved(deck)


def ods_file(units: int) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    rng = random.Random(6)
    book = OpenDocumentSpreadsheet()
    for sheet_number in range(10):
        sheet = Table(name=f"Sheet {sheet_number}")
        for _ in range(units // 10):
            row = TableRow()
            for _ in range(10):
                cell = TableCell()
                cell.addElement(P(text=words(rng, 2)))
                row.addElement(cell)
            sheet.addElement(row)
        book.spreadsheet.addElement(sheet)
    return _saved(book)


def md_file(units: int) -> bytes:
    rng = random.Random(7)
    parts = [f"## {words(rng, 4)}\n\n" + "\n\n".join(words(rng, 40) for _ in range(20)) for _ in range(units)]
    return "\n\n".join(parts).encode()


def _saved(document: object) -> bytes:
    out = io.BytesIO()
    if hasattr(document, "write"):  # odfpy
        document.write(out)
    else:
        document.save(out)  # type: ignore[attr-defined]
    return out.getvalue()


FORMATS: dict[str, tuple[Callable[[int], bytes], int]] = {
    "md": (md_file, 10),
    "docx": (docx_file, 400),
    "pptx": (pptx_file, 40),
    "xlsx": (xlsx_file, 2000),
    "odt": (odt_file, 400),
    "odp": (odp_file, 40),
    "ods": (ods_file, 2000),
}
"""Format -> (builder, a first guess of its units), scaled to the target size."""


def sized(build: Callable[[int], bytes], guess: int, target: int) -> bytes:
    """A file of about `target` bytes: built at `guess` units, then scaled twice (an empty
    document's own size makes one scaling undershoot)."""
    units, data = guess, build(guess)
    for _ in range(2):
        units = max(1, round(units * target / len(data)))
        data = build(units)
    return data


def index_once(root: Path) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, output) of `kbkit index` on a fresh index."""
    shutil.rmtree(root / ".kbkit", ignore_errors=True)
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(
            [KBKIT, "index", "--root", str(root), "--skipped"], stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(child.pid, 0)
        out.seek(0)
        text = out.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kbkit index failed:\n{text}")
    return time.monotonic() - started, usage.ru_maxrss / 1024, text


def largest_docx(xml_mib: int = 31) -> bytes:
    """A Word file whose document.xml is `xml_mib` MiB of short paragraphs: within the part and
    XML budgets, over the text budget (docs/adr/0033), the costliest Word file kbkit opens."""
    import zipfile

    rng = random.Random(8)
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w='
        b'"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
    )
    parts, size = [head], len(head)
    while size < xml_mib * 1024 * 1024:
        paragraph = f"<w:p><w:r><w:t>{words(rng, 12)}</w:t></w:r></w:p>".encode()
        parts.append(paragraph)
        size += len(paragraph)
    parts.append(b"</w:body></w:document>")
    source = zipfile.ZipFile(io.BytesIO(docx_file(1)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = b"".join(parts) if info.filename == "word/document.xml" else source.read(info)
            target.writestr(info.filename, content)
    return out.getvalue()


EXTRA = {"docx, 31 MiB of XML": ("docx", largest_docx)}
"""Rows beyond the ~1 MB files: name -> (extension, builder)."""


def build_projects(folder: Path, target: int) -> None:
    """A project per format under `folder`, holding its one file."""
    for name, (build, guess) in FORMATS.items():
        root = folder / name
        write_project(root, "docs")
        (root / "docs" / f"file.{name}").write_bytes(sized(build, guess, target))
    for number, (ext, make) in enumerate(EXTRA.values()):
        root = folder / f"extra{number}"
        write_project(root, "docs")
        (root / "docs" / f"file.{ext}").write_bytes(make())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=float, default=1.0, help="target file size in MB")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    target = int(args.size * 1024 * 1024)
    if args.build:
        build_projects(args.build, target)
        return
    watch = MachineWatch()
    with tempfile.TemporaryDirectory() as tmp:
        # Built in a process of its own: a child forked from a process holding the libraries and the
        # files would start with (and report) that process's memory as its own peak.
        subprocess.run(
            rerun(__spec__.name, "--build", tmp, "--size", str(args.size)), check=True, cwd=PROJECT_ROOT
        )
        files = {name: Path(tmp) / name / "docs" / f"file.{name}" for name in FORMATS}
        for number, (label, (ext, _)) in enumerate(EXTRA.items()):
            files[label] = Path(tmp) / f"extra{number}" / "docs" / f"file.{ext}"
        roots = {name: path.parent.parent for name, path in files.items()}
        built = {name: path.stat().st_size for name, path in files.items()}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
        outputs: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, root in roots.items():  # the formats in turn: the machine's load falls on all alike
                seconds, rss, outputs[name] = index_once(root)
                runs[name].append((seconds, rss))
        rows = []
        for name in roots:
            text = _indexed_text(roots[name], files[name].name)
            rows.append(
                [
                    name,
                    f"{built[name] / 1024:.0f} KB",
                    f"{text / 1024:.0f} KB",
                    f"{statistics.median(s for s, _ in runs[name]):.2f} s",
                    f"{statistics.median(r for _, r in runs[name]):.0f} MB",
                    _outcome(outputs[name]),
                ]
            )
    print_table(
        ["format", "file", "text indexed", "kbkit index (median)", "peak RSS (median)", "outcome"],
        rows,
        title=f"kbkit index on one generated file per format, {args.rounds} rounds",
    )
    print(f"\n{watch.note()}")


def _outcome(output: str) -> str:
    """`indexed`, or the reason a file was skipped, from `kbkit index --skipped`."""
    for line in output.splitlines():
        if line.strip().startswith("skipped file."):
            return "skipped: " + line.split(": ", 1)[1][:90]
    return "indexed"


def _indexed_text(root: Path, file_name: str) -> int:
    import sqlite3

    conn = sqlite3.connect(root / ".kbkit" / "index.db")
    try:
        row = conn.execute("SELECT text_size FROM documents WHERE path = ?", (file_name,)).fetchone()
    finally:
        conn.close()
    return int(row[0]) if row else 0


if __name__ == "__main__":
    main()
