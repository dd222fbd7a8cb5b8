"""The same pages in every file format kbkit reads, side by side: cost of indexing and search quality.

About 60 Markdown pages are written again as HTML (rendered with Python-Markdown, inside a page
with a site header, navigation and footer that kbkit should leave out), as Jupyter notebooks
(markdown cells, and a code cell per fenced block) and, when the kbkit under test has their
parsers (kbkit.catalog.filetypes.FILE_TYPES), as .docx, .pptx, .xlsx and .odt. A format whose
parser or writer library is missing is skipped and named.

Each format gets a kb of its pages alone. Indexing runs in a fresh process per format and round
(peak RSS is that process's), formats in a rotated order each round, and the median round is
reported: time, time per MB of source files and peak RSS. Then known-item search over each kb
with the same questions: success@5 (an answer in the top 5) and MRR@10.

- `--corpus tldr` (default): the tldr pages that answer the questions of
  bench/data/tldr_questions.tsv (bench/search_quality.py), filled up with other pages.
- `--corpus cpp-docs`: 60 random Microsoft C++ docs pages (larger, with tables and code); each
  question is one of a page's own second-level headings, answered by that page.

    python -m bench.formats [--corpus tldr|cpp-docs] [--pages 60] [--rounds 3] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench._util import PROJECT_ROOT, MachineWatch, data_dir, print_table, rerun, unpack, write_project
from bench.search_quality import answers_match, load_questions
from kbkit.catalog.filetypes import FILE_TYPES
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.formats.markdown import parse_markdown
from kbkit.kb.sections import clean_title

Page = tuple[str, str, str]
"""(path without extension, title, Markdown body without front matter)."""
Question = tuple[str, list[str]]
"""(question, acceptable answers as bench/search_quality.py's answers_match reads them)."""

_FENCE = re.compile(r"^(`{3,}|~{3,})([^\n`]*)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


# -- pages and questions ------------------------------------------------------------------------------


def tldr_pages(data: Path, work: Path, count: int, seed: int) -> tuple[list[Page], list[Question]]:
    unpack(data / "tldr-en.tar.gz", work)
    pages_root = work / "tldr-en" / "pages"
    questions = load_questions()
    chosen: list[Path] = []
    for _, answers in questions:
        for answer in answers:
            candidates = (
                [pages_root / f"{answer}.md"]
                if "/" in answer
                else [pages_root / "common" / f"{answer}.md", pages_root / "linux" / f"{answer}.md"]
            )
            found = next((path for path in candidates if path.is_file()), None)
            if found is not None:
                if found not in chosen and len(chosen) < count:
                    chosen.append(found)
                break
    others = sorted(set((pages_root / "common").glob("*.md")) - set(chosen))
    chosen += random.Random(seed).sample(others, max(0, count - len(chosen)))
    pages = [_page(path, str(path.relative_to(pages_root).with_suffix(""))) for path in chosen]
    stems = [stem for stem, _, _ in pages]
    kept = [
        (text, answers)
        for text, answers in questions
        if any(answers_match(s + ".md", answers) for s in stems)
    ]
    return pages, kept


def cpp_pages(data: Path, work: Path, count: int, seed: int) -> tuple[list[Page], list[Question]]:
    unpack(data / "cpp-docs.tar.gz", work)
    docs = work / "cpp-docs" / "docs"
    files = sorted(docs.rglob("*.md"))
    every = Counter(h.lower() for path in files for h in set(_headings(_page(path, "")[2], 2)))
    rng = random.Random(seed)
    pages: list[Page] = []
    questions: list[Question] = []
    for path in rng.sample(files, len(files)):
        if len(pages) == count:
            break
        stem = f"p{len(pages):02d}-{path.stem}"
        page = _page(path, stem)
        # a heading no other page of the corpus has ("Inheritance Hierarchy" is on hundreds):
        heads = [h for h in _headings(page[2], 2) if len(h.split()) >= 2 and every[h.lower()] == 1]
        if not page[1] or not heads or len(page[2]) < 2000:
            continue
        pages.append(page)
        questions.append((rng.choice(heads), [stem + ".md"]))
    return pages, questions


def _page(path: Path, stem: str) -> Page:
    parsed = parse_markdown(path.read_bytes())
    return stem, parsed.title or stem.rsplit("/", 1)[-1], parsed.body


def _headings(body: str, level: int) -> list[str]:
    text = _FENCE.sub("", body)
    found = (_HEADING.match(line) for line in text.splitlines())
    return [clean_title(m.group(2)) for m in found if m and len(m.group(1)) == level]


# -- writers -------------------------------------------------------------------------------------------


def write_md(page: Page, path: Path) -> None:
    _, title, body = page
    path.write_text(f"---\ntitle: {json.dumps(title)}\n---\n{body}", encoding="utf-8")


def write_html(page: Page, path: Path) -> None:
    import html

    import markdown

    _, title, body = page
    rendered = markdown.markdown(body, extensions=["tables", "fenced_code"])
    path.write_text(
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        '<link rel="stylesheet" href="/site.css"><script>window.analytics = "track";</script></head>\n'
        '<body><header><a href="/">Docs home</a><nav><a href="/a">Guides</a> <a href="/b">Reference</a>'
        f"</nav></header>\n<main>\n{rendered}\n</main>\n"
        "<footer>Copyright the authors. Licensed CC BY 4.0.</footer></body></html>\n",
        encoding="utf-8",
    )


def write_ipynb(page: Page, path: Path) -> None:
    _, title, body = page
    cells: list[dict[str, object]] = []
    pos = 0

    def markdown_cell(text: str) -> None:
        if text.strip():
            cells.append(
                {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n").splitlines(True)}
            )

    for match in _FENCE.finditer(body):
        markdown_cell(body[pos : match.start()])
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": match.group(3).rstrip("\n").splitlines(True),
            }
        )
        pos = match.end()
    markdown_cell(body[pos:])
    metadata = {
        "title": title,
        "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
    }
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": metadata, "cells": cells}
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


def _blocks(body: str) -> list[tuple[int, str]]:
    """(heading level or 0, text) for each heading, paragraph and code block of a Markdown body."""
    blocks: list[tuple[int, str]] = []
    pos = 0
    for match in [*_FENCE.finditer(body), None]:
        end = match.start() if match else len(body)
        for paragraph in re.split(r"\n\s*\n", body[pos:end]):
            heading = _HEADING.match(paragraph.strip())
            if heading and "\n" not in paragraph.strip():
                blocks.append((len(heading.group(1)), heading.group(2)))
            elif paragraph.strip():
                blocks.append((0, paragraph.strip()))
        if match:
            blocks.append((0, match.group(3).rstrip("\n")))
            pos = match.end()
    return blocks


def write_docx(page: Page, path: Path) -> None:
    import docx

    _, title, body = page
    document = docx.Document()
    document.core_properties.title = title
    for level, text in _blocks(body):
        if level:
            document.add_heading(text, level=min(level, 9))
        else:
            document.add_paragraph(text)
    document.save(str(path))


def write_pptx(page: Page, path: Path) -> None:
    import pptx

    _, title, body = page
    deck = pptx.Presentation()
    deck.core_properties.title = title
    slide = None
    for level, text in _blocks(body):
        if level or slide is None:
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = text if level else title
            if level:
                continue
        frame = slide.placeholders[1].text_frame
        frame.text = (frame.text + "\n" + text).strip("\n")
    deck.save(str(path))


def write_xlsx(page: Page, path: Path) -> None:
    import openpyxl

    _, title, body = page
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "page"
    book.properties.title = title
    section = title
    for level, text in _blocks(body):
        if level:
            section = text
            continue
        for line in text.splitlines():
            if line.strip():
                sheet.append([section, line])
    book.save(str(path))


def write_odt(page: Page, path: Path) -> None:
    from odf import text as odf_text
    from odf.opendocument import OpenDocumentText

    _, title, body = page
    document = OpenDocumentText()
    for level, content in _blocks(body):
        if level:
            document.text.addElement(odf_text.H(outlinelevel=level, text=content))
        else:
            for line in content.splitlines():
                document.text.addElement(odf_text.P(text=line))
    document.save(str(path))


WRITERS: dict[str, tuple[Callable[[Page, Path], None], str]] = {
    "md": (write_md, "markdown"),
    "html": (write_html, "markdown"),
    "ipynb": (write_ipynb, "json"),
    "docx": (write_docx, "docx"),
    "pptx": (write_pptx, "pptx"),
    "xlsx": (write_xlsx, "openpyxl"),
    "odt": (write_odt, "odf"),
}
"""Format -> its writer and the module the writer needs."""


# -- measuring -------------------------------------------------------------------------------------------


def index_once(root: Path) -> dict[str, float]:
    """Run in a child process: index `root` from nothing and report the time and peak RSS."""
    for stale in (root / ".kbkit").glob("index.db*"):
        stale.unlink()
    started = time.perf_counter()
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        elapsed = time.perf_counter() - started
        reasons = [reason for _, reason in kb.store.skipped()]
        text = kb.store.reader().execute("SELECT coalesce(sum(text_size), 0) FROM documents").fetchone()[0]
    finally:
        kb.close()
    peak = peak_rss_mb()
    return {
        "seconds": elapsed,
        "peak_mb": peak,
        "skipped": len(reasons),
        "reason": reasons[0] if reasons else "",
        "text_bytes": text,
        "added": report.added,
    }


def peak_rss_mb() -> float:
    """This process's peak RSS since it started: VmHWM, which exec resets (getrusage's ru_maxrss
    keeps the forking parent's RSS at fork time, which the child never used)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ranked(root: Path, questions: list[Question]) -> list[list[str]]:
    kb = KnowledgeBase.open(load_settings(root))
    try:
        return [
            [hit.path for hit in kb.search(text, limit=10, max_tokens=None).results] for text, _ in questions
        ]
    finally:
        kb.close()


def quality(questions: list[Question], results: list[list[str]]) -> tuple[float, float]:
    hits5, rr = [], []
    for (_, answers), paths in zip(questions, results, strict=True):
        stems = [path.rsplit(".", 1)[0] + ".md" for path in paths[:10]]
        first = next((i for i, stem in enumerate(stems) if answers_match(stem, answers)), None)
        hits5.append(first is not None and first < 5)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
    return statistics.fmean(hits5), statistics.fmean(rr)


def hostile_files() -> dict[str, Callable[[Path], None]]:
    """Files built to break the HTML and notebook budgets, and the worst ones within them."""

    def notebook(cells: list[dict[str, object]]) -> bytes:
        return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}).encode()

    def output(text: object) -> dict[str, object]:
        stream = {"output_type": "stream", "name": "stdout", "text": text}
        return {"cell_type": "code", "source": "run()", "outputs": [stream], "metadata": {}}

    def sparse(path: Path) -> None:
        with path.open("wb") as file:
            file.write(notebook([output("x")]))
            file.truncate(500 * 1024 * 1024)

    return {
        "100,000 nested divs.html": lambda p: p.write_bytes(
            b"<body>" + b"<div>" * 100_000 + b"</div>" * 100_000
        ),
        "499,000 tags.html": lambda p: p.write_bytes(b"<body>" + b"<p>x</p>" * 499_000),
        "12 MiB of text and 490,000 tags.html": lambda p: p.write_bytes(
            b"<body>" + b"<p>x</p>" * 490_000 + b"<p>" + b"word " * (12 * 1024 * 1024 // 5) + b"</p>"
        ),
        "240 runs of 2,000 nested headers.html": lambda p: p.write_bytes(
            b"<body>" + (b"<header>x" * 2000 + b"</header>" * 2000 + b"<p>own</p>") * 240
        ),
        "one tag of 100,000 attributes.html": lambda p: p.write_bytes(
            b"<p " + b" ".join(b"a%d" % n for n in range(100_000)) + b">x</p>"
        ),
        "160,000 tags of 2 attributes.html": lambda p: p.write_bytes(
            b"<body>" + b'<p class="note" id=n>x</p>' * 160_000
        ),
        "45 MB of one-letter lines.html": lambda p: p.write_bytes(
            b"<body><p>" + b"a\n" * 22_500_000 + b"</p>"
        ),
        "16 MB of backticks in a pre.html": lambda p: p.write_bytes(b"<pre>" + b"`" * 16_000_000 + b"</pre>"),
        "45 MB of text.html": lambda p: p.write_bytes(b"<body><p>" + b"lorem ipsum " * 3_750_000 + b"</p>"),
        "binary.html": lambda p: p.write_bytes(bytes(range(256)) * 40_000),
        "500 MB output (sparse).ipynb": sparse,
        "45 MB output.ipynb": lambda p: p.write_bytes(notebook([output("y" * 45_000_000)])),
        "1.9M values, 40 MB.ipynb": lambda p: p.write_bytes(
            notebook([output(["ab"] * 1_900_000), output("z" * 30_000_000)])
        ),
        "2.1M values.ipynb": lambda p: p.write_bytes(notebook([output(["ab"] * 2_100_000)])),
        "not JSON.ipynb": lambda p: p.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 1000),
    }


def run_hostile(work: Path) -> None:
    rows: list[list[str]] = []
    for name, write in hostile_files().items():
        root = work / f"hostile-{len(rows)}"
        write_project(root, "docs")
        target = root / "docs" / name.replace(" ", "-").replace(",", "")
        write(target)
        child = subprocess.run(
            rerun(__spec__.name, "--index-once", str(root)),
            capture_output=True,
            text=True,
            check=True,
            cwd=PROJECT_ROOT,
        )
        run = json.loads(child.stdout)
        outcome = (
            f"skipped: {run['reason']}"
            if run["skipped"]
            else f"indexed, {run['text_bytes'] / 1e6:.1f} MB text"
        )
        size = target.stat().st_size / 1e6
        rows.append([name, f"{size:.0f}", f"{run['seconds']:.2f}", f"{run['peak_mb']:.0f}", outcome[:110]])
        target.unlink()
    print_table(["file", "MB", "index s", "peak RSS MB", "outcome"], rows, title="hostile files, one kb each")


def available(fmt: str) -> str | None:
    """Why `fmt` cannot be measured here, or None."""
    if fmt not in FILE_TYPES:
        return "no parser in this kbkit"
    module = WRITERS[fmt][1]
    try:
        __import__(module)
    except ImportError:
        return f"writer library {module!r} not installed"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("tldr", "cpp-docs"), default="tldr")
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path)
    parser.add_argument("--hostile", action="store_true", help="index files built to break the budgets")
    parser.add_argument("--index-once", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.index_once:
        print(json.dumps(index_once(args.index_once)))
        return
    watch = MachineWatch()
    if args.hostile:
        with tempfile.TemporaryDirectory(prefix="kbkit-hostile-") as tmp:
            run_hostile(Path(tmp))
        print(f"\nmachine: {watch.note()}")
        return
    with tempfile.TemporaryDirectory(prefix="kbkit-formats-") as tmp:
        work = Path(tmp)
        pick = tldr_pages if args.corpus == "tldr" else cpp_pages
        pages, questions = pick(data_dir(args.data), work / "src", args.pages, args.seed)
        formats, missing = [], {}
        for fmt in WRITERS:
            why = available(fmt)
            if why is None:
                formats.append(fmt)
            else:
                missing[fmt] = why
        roots: dict[str, Path] = {}
        sizes: dict[str, int] = {}
        for fmt in formats:
            root = work / fmt
            write_project(root, "docs")
            for page in pages:
                target = root / "docs" / f"{page[0]}.{fmt}"
                target.parent.mkdir(parents=True, exist_ok=True)
                WRITERS[fmt][0](page, target)
            roots[fmt] = root
            sizes[fmt] = sum(p.stat().st_size for p in (root / "docs").rglob(f"*.{fmt}"))
        runs: dict[str, list[dict[str, float]]] = {fmt: [] for fmt in formats}
        for round_no in range(args.rounds):
            order = formats[round_no % len(formats) :] + formats[: round_no % len(formats)]
            for fmt in order:
                child = subprocess.run(
                    rerun(__spec__.name, "--index-once", str(roots[fmt])),
                    cwd=PROJECT_ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs[fmt].append(json.loads(child.stdout))
        rows = []
        for fmt in formats:
            middle = sorted(runs[fmt], key=lambda run: run["seconds"])[len(runs[fmt]) // 2]
            success, mrr = quality(questions, ranked(roots[fmt], questions))
            mb = sizes[fmt] / 1e6
            rows.append(
                [
                    fmt,
                    f"{int(middle['added'])} ({int(middle['skipped'])})",
                    f"{mb:.2f}",
                    f"{middle['text_bytes'] / 1e6:.2f}",
                    f"{middle['seconds']:.2f}",
                    f"{middle['seconds'] / mb:.2f}",
                    f"{max(run['peak_mb'] for run in runs[fmt]):.0f}",
                    f"{success:.3f}",
                    f"{mrr:.3f}",
                ]
            )
    print_table(
        [
            "format",
            "indexed (skipped)",
            "files MB",
            "text MB",
            "index s",
            "s per MB",
            "peak RSS MB",
            "success@5",
            "MRR@10",
        ],
        rows,
        title=(
            f"{args.corpus}: {len(pages)} pages in each format, {len(questions)} known-item questions; "
            f"median of {args.rounds} rounds, formats rotated each round"
        ),
    )
    for fmt, why in missing.items():
        print(f"  skipped {fmt}: {why}")
    print(f"\nmachine: {watch.note()}")


if __name__ == "__main__":
    main()
