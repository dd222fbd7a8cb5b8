"""Jupyter notebooks (nbformat 4) as Markdown (docs/adr/0034): markdown cells as written, code cells
as fenced blocks in the kernel's language, short text outputs after their cell, the rest left out.

Read with the standard json module after a shape check: nbformat would validate against the full
schema (and bring jsonschema) only to let kbkit read four keys. A file is at most
documents.FILE_SIZE_CAP (50 MiB) by the time it gets here; the budget's JSON value count bounds what
parsing it may build.
"""

from __future__ import annotations

import json
import re

from kbkit.errors import DocumentRefused
from kbkit.kb.formats.base import ParsedText
from kbkit.kb.formats.budget import BUDGET, Budget, Meter
from kbkit.kb.formats.markdown import markdown_headings
from kbkit.kb.formats.markdown_writer import fenced
from kbkit.kb.sections import MAX_OUTLINE, Heading, clean_title

OUTPUT_MAX_CHARS = 2_000
"""A code cell's text output is kept when at most this long, and left out whole when longer:
the head of a long log or table rarely says what the cell does."""
TEXT_OUTPUTS = ("stream", "execute_result")


def parse_notebook(data: bytes, budget: Budget = BUDGET) -> ParsedText:
    """The notebook's cells as Markdown; the outline is its markdown cells' headings."""
    meter = budget.meter("notebook")
    notebook = _load(data, meter)
    cells = _cells(notebook)
    metadata = notebook.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    language = _language(metadata)
    parts: list[str] = []
    found: list[tuple[int, int, str]] = []
    for cell in cells:
        for text, is_markdown in _cell_texts(cell, language):
            if not text.strip():
                continue
            if parts:
                parts.append("\n\n")
                meter.take(2)
            if is_markdown:
                found += [(meter.chars + start, level, raw) for start, level, raw in markdown_headings(text)]
            parts.append(text)
            meter.take(len(text))
    chars = budget.heading_chars
    headings = [Heading(start, level, clean_title(raw[:chars])) for start, level, raw in found]
    headings = [heading for heading in headings if heading.title]
    title = _title(metadata.get("title"), chars) or next((h.title for h in headings if h.level == 1), None)
    title = title or (headings[0].title if headings else None)
    return ParsedText(
        title=title,
        body="".join(parts),
        headings=[heading.title for heading in headings],
        outline=tuple(headings[:MAX_OUTLINE]),
    )


def _load(data: bytes, meter: Meter) -> dict[str, object]:
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    most = meter.budget.notebook_json_values
    if values > most:
        meter.refuse(
            f"the notebook holds over {most:,} JSON values (about {values:,}); "
            "clear its outputs (jupyter nbconvert --clear-output) or split it"
        )
    try:
        notebook = json.loads(data)  # UTF-8/16/32 by the JSON rules; a BOM is refused by them
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DocumentRefused("unparsable", f"the notebook is not JSON ({_first_line(exc)})") from None
    except RecursionError:
        raise DocumentRefused("unparsable", "the notebook's JSON nests too deep to be a notebook") from None
    if not isinstance(notebook, dict):
        raise DocumentRefused("unparsable", "the file is JSON but not a notebook (no top-level object)")
    return notebook


def _cells(notebook: dict[str, object]) -> list[dict[str, object]]:
    major = notebook.get("nbformat")
    cells = notebook.get("cells")
    if major != 4 or not isinstance(cells, list):
        found = f"nbformat {major}" if isinstance(major, int) else "no nbformat"
        raise DocumentRefused(
            "unparsable",
            f"the file is JSON but not an nbformat 4 notebook ({found}, "
            f"{'a cell list' if isinstance(cells, list) else 'no cell list'}); "
            "upgrade it with: jupyter nbconvert --to notebook",
        )
    return [cell for cell in cells if isinstance(cell, dict)]


def _cell_texts(cell: dict[str, object], language: str) -> list[tuple[str, bool]]:
    """A cell's Markdown pieces, each with whether it is the author's Markdown."""
    kind = cell.get("cell_type")
    source = _text(cell.get("source"))
    if kind == "markdown":
        return [(source.strip("\n"), True)]
    if kind == "raw":
        return [(source.strip("\n"), False)]
    if kind != "code":
        return []
    texts = [(fenced(source.strip("\n"), language), False)] if source.strip() else []
    output = _output_text(cell.get("outputs"))
    if output.strip():
        texts.append((fenced(output.strip("\n"), "text"), False))
    return texts


def _output_text(outputs: object) -> str:
    """The cell's stream and result text (text/plain), or "" when over OUTPUT_MAX_CHARS together."""
    if not isinstance(outputs, list):
        return ""
    texts: list[str] = []
    size = 0
    for output in outputs:
        if not isinstance(output, dict) or output.get("output_type") not in TEXT_OUTPUTS:
            continue
        if output.get("output_type") == "stream":
            text = _text(output.get("text"))
        else:
            bundle = output.get("data")
            text = _text(bundle.get("text/plain")) if isinstance(bundle, dict) else ""
        size += len(text)
        if size > OUTPUT_MAX_CHARS:
            return ""
        texts.append(text)
    return "".join(texts)


def _text(value: object) -> str:
    """nbformat's multiline string: one string, or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(item for item in value if isinstance(item, str))
    return ""


def _language(metadata: dict[str, object]) -> str:
    """The kernel's language, for the code fences' info string ("" when the notebook does not say)."""
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key)
        value = section.get(name) if isinstance(section, dict) else None
        if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_+#.-]{1,40}", value):
            return value.lower()
    return ""


def _title(value: object, chars: int) -> str | None:
    return (clean_title(value[:chars]) or None) if isinstance(value, str) else None


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
