"""What search and indexing can read: the search mode (BM25 or hybrid) and the parsers enabled."""

from __future__ import annotations

import importlib.util
import sys

from kbkit.catalog.filetypes import LIBRARIES
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
                    f"hybrid, BM25 + {kb.hybrid.files.shown}; no index yet",
                    "run kbkit index",
                )
            ]
        fine, line = kb.describe_search()
    finally:
        kb.close()
    finding = line.removeprefix("search: ")
    if fine:
        return ok("search", finding)
    waiting = ctx.settings.waiting("search.model")  # the finding says what waits; the fix, how to allow it
    fix = (
        "run kbkit index (kbkit serve embeds in the background)"
        if kb.hybrid is not None
        else waiting.review
        if waiting is not None and kb.hybrid_off == waiting.line()
        else f"{kb.hybrid_off}; or set [search] semantic = false"
    )
    return [Finding("search", "warn", finding, fix)]


def check_parsers(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    types: list[str] = []
    missing: dict[str, None] = {}
    for name in ctx.settings.parsers:
        absent = [
            dist for module, dist in LIBRARIES.get(name, ()) if importlib.util.find_spec(module) is None
        ]
        if absent:
            types.append(name)
            missing.update(dict.fromkeys(absent))
    if types:
        verb = "is" if len(types) == 1 else "are"
        return [
            Finding(
                "parsers",
                "warn",
                f"{', '.join(types)} {verb} enabled but {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not installed: those files are skipped",
                f"run: {sys.executable} -m pip install {' '.join(missing)}, or drop {', '.join(types)} "
                "from [parsers] enabled",
            )
        ]
    return ok("parsers", ", ".join(ctx.settings.parsers) + " usable")
