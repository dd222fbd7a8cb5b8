"""What search and indexing can read: the search mode (BM25 or hybrid) and the parsers enabled."""

from __future__ import annotations

import importlib.util
import sys

from kbkit.diagnostics.base import Context, Finding, ok


def check_search(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.kb.base import KnowledgeBase
    from kbkit.kb.store import Store

    kb = KnowledgeBase(ctx.settings, Store(ctx.settings.index_path))  # read-only: repairs nothing
    try:
        if kb.hybrid is not None and not ctx.settings.index_path.exists():
            return [
                Finding(
                    "search",
                    "warn",
                    f"hybrid, BM25 + {kb.hybrid.files.name}; no index yet",
                    "run kbkit index",
                )
            ]
        fine, line = kb.describe_search()
    finally:
        kb.close()
    finding = line.removeprefix("search: ")
    if fine:
        return ok("search", finding)
    fix = (
        "run kbkit index (kbkit serve embeds in the background)"
        if kb.hybrid is not None
        else f"{kb.hybrid_off}; or set [search] semantic = false"
    )
    return [Finding("search", "warn", finding, fix)]


def check_parsers(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    if "pdf" in ctx.settings.parsers and importlib.util.find_spec("pypdf") is None:
        return [
            Finding(
                "parsers",
                "warn",
                "pdf is enabled but pypdf is not installed: PDFs are skipped",
                f"run: {sys.executable} -m pip install pypdf, or drop pdf from [parsers] enabled",
            )
        ]
    return ok("parsers", ", ".join(ctx.settings.parsers) + " usable")
