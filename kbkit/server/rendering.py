"""The text block of a tool result: what an agent that reads text hands its model.

Agents differ in which part of a result reaches the model (docs/clients.md): Claude Code and Codex
give it the structured content and drop the text, Gemini CLI and opencode give it the text blocks
only, Qwen Code both. A text block that repeated the JSON doubled what the last two cost, so it is
a rendering of the same result in a few plain lines: for each hit its title, the `path` and
`offset` to pass to get_document, its section and snippet; a note only where it says something
the lines do not (docs/adr/0069).
"""

from __future__ import annotations

from typing import Any

from kbkit.kb.search.results import legend


def search_text(data: dict[str, Any]) -> str:
    """A search result as plain lines: one numbered block per hit, then the note, if any."""
    hits: list[dict[str, Any]] = data["results"]
    blocks = [_hit_lines(rank, hit) for rank, hit in enumerate(hits, 1)]
    if not hits:
        blocks.append("no hits")
    note = _without_legend(data.get("note", ""), hits)
    if note:
        blocks.append(f"note: {note}")
    return "\n".join(blocks)


def _hit_lines(rank: int, hit: dict[str, Any]) -> str:
    where = f"path={hit['path']} offset={hit['offset']}"
    if hit["section"] and hit["section"] != hit["title"]:
        where += f" section: {hit['section']}"
    lines = [f"{rank}. {_one_line(hit['title'])}", where]
    if hit["snippet"]:
        lines.append(_one_line(hit["snippet"]))
    if hit.get("also"):
        lines.append("also: " + "; ".join(f"{o['section']} (offset={o['offset']})" for o in hit["also"]))
    if hit.get("folded"):
        lines.append("near-copies folded here: " + ", ".join(hit["folded"]))
    if hit.get("translations"):
        lines.append("translated into: " + ", ".join(hit["translations"]))
    return "\n   ".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _without_legend(note: str, hits: list[dict[str, Any]]) -> str:
    """The note less what explains the JSON's `folded` and `translations` (each hit's lines say it)."""
    folds = sum(len(hit.get("folded", ())) for hit in hits)
    translated = sum(bool(hit.get("translations")) for hit in hits)
    parts = note.split("; ") if note else []
    for explained in legend(folds, translated):
        said = explained.split("; ")
        for start in range(len(parts) - len(said) + 1):
            if parts[start : start + len(said)] == said:
                del parts[start : start + len(said)]
                break
    return "; ".join(parts)


def read_line(meta: dict[str, Any]) -> str:
    """What a read holds, in one line before its text: the path, where the read starts, the
    section, and the note saying where to read on, if the text goes on."""
    line = f"{meta['path']} ({meta['media_type']}, {meta['size']} bytes) from offset={meta['offset']}"
    if meta["section"]:
        line += f" section: {meta['section']}"
    if meta.get("note"):
        line += f"\nnote: {meta['note']}"
    return line
