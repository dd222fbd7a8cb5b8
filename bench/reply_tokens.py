"""What a search reply costs the model, per kind of agent, before and after the text block became a
rendering of the hits instead of a second copy of the JSON (docs/adr/0069).

Agents differ in which part of a tool result they hand the model (docs/clients.md): the structured
content only (Claude Code, Codex), the text blocks only (Gemini CLI, opencode), or both (Qwen Code,
which sends the structured content as compact JSON beside the text unless a text block is that very
JSON). For each question of a real set, `search` is called as an agent calls it (limit 5 and 10,
default max_tokens) and each part is counted with kbkit's own estimate (`estimate_tokens`: four
characters of JSON a token): the structured content as compact JSON, the text block as it is
now (`search_text`) and as it was (the same JSON, `json.dumps` with its default separators).
Medians over the questions. Sets: httpx (its 23 pages, bench/data/httpx-docs, 54 questions) and
tldr (the 7,4xx English pages of `tldr-en.tar.gz`, 74 questions, hits with folded near-copies).

    python -m bench.reply_tokens [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._util import PROJECT_ROOT, data_dir, indexed_corpus, print_table, scan_project, write_project
from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.tokens import estimate_tokens
from kbkit.server.rendering import search_text
from kbkit.server.tools import KB_TOOLS

LIMITS = (5, 10)


def questions(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in lines if line and not line.startswith("#")]


@contextmanager
def httpx_project() -> Iterator[tuple[Path, int]]:
    with tempfile.TemporaryDirectory(prefix="kbkit-reply-httpx-") as tmp:
        root = Path(tmp)
        shutil.copytree(PROJECT_ROOT / "bench" / "data" / "httpx-docs", root / "docs")
        write_project(root, "docs")
        yield root, scan_project(root).documents


def costs(data: dict[str, Any]) -> dict[str, int]:
    """Tokens each kind of agent hands its model, before and after."""
    structured = estimate_tokens(data)
    before_text = estimate_tokens(json.dumps(data, ensure_ascii=False))
    after_text = estimate_tokens(search_text(data))
    return {
        "structured only": structured,
        "text only, before": before_text,
        "text only, now": after_text,
        "both, before": structured + before_text,
        "both, now": structured + after_text,
    }


def measure(root: Path, asked: list[str], limit: int) -> dict[str, float]:
    kb = KnowledgeBase.open(load_settings(root))
    try:
        rows = []
        for question in asked:
            reply = KB_TOOLS["search"].call(kb, {"query": question, "limit": limit})
            assert reply.structured_content is not None
            rows.append(costs(reply.structured_content))
    finally:
        kb.close()
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    data = data_dir(args.data)
    sets = {
        "httpx": (httpx_project(), questions(PROJECT_ROOT / "bench" / "data" / "httpx_questions.tsv")),
        "tldr": (
            indexed_corpus(data / "tldr-en.tar.gz", "tldr-en/pages", "kbkit-reply-tldr-"),
            questions(PROJECT_ROOT / "bench" / "data" / "tldr_questions.tsv"),
        ),
    }
    rows = []
    for name, (project, asked) in sets.items():
        with project as (root, _):
            for limit in LIMITS:
                found = measure(root, asked, limit)
                rows.append(
                    [name, str(limit), *(f"{found[key]:.0f}" for key in found)]
                    + [f"{1 - found['text only, now'] / found['text only, before']:.0%}"]
                )
    headers = ["set", "hits", *costs({"results": [], "truncated": False}), "text saved"]
    print_table(headers, rows, title="Search reply tokens handed to the model (median per question)")


if __name__ == "__main__":
    main()
