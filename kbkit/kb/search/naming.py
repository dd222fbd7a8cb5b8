"""What a query names (docs/adr/0026): a page whose title it names whole, a member a heading is
about. Such a page is raised, and such a passage is pointed at over a neighbour sharing more words."""

from __future__ import annotations

import re

from kbkit.kb import passages
from kbkit.kb.search.query import stems
from kbkit.kb.search.ranking import Ranked
from kbkit.kb.sections import SEPARATOR

NAMED_TITLE_BOOST = 1.2
"""A document whose title the query names whole (`named`: "list Class" for "std::list: what type
...") has its score multiplied by this, before the reference prior: a question about a class's
member is about that class's page, not a sibling page sharing its words (docs/adr/0026)."""
NAMED_PASSAGES = 3
NAMED_SHARE = 0.8
"""Among a document's first NAMED_PASSAGES candidates scoring at least NAMED_SHARE of the best,
the first whose heading path names a member the query names whole (`multimap::insert` for
"multimap insert with a hint") is chosen over one that only shares words (`emplace_hint`)."""


CONTEXT_WORDS = frozenset("with by via using from after through".split())
"""A name right after one of these is what the asker already has, not what they ask for: "stop a
timer that was started with SetTimer" wants `KillTimer`, so `SetTimer`'s section is not chosen for
being named (`targets`)."""
_IDENTIFIER = re.compile(r"[a-z0-9][A-Z]|_|::")
"""A word written as code names: camelCase, snake_case or a `::` path."""


def targets(query: str) -> frozenset[str]:
    """The query's `stems` without the names it gives as context: an identifier (`_IDENTIFIER`)
    right after a CONTEXT_WORDS word. What the naming rules compare a heading path with."""
    words = query.split()
    kept = [
        word
        for before, word in zip(["", *words], words, strict=False)
        if not (before.lower() in CONTEXT_WORDS and _IDENTIFIER.search(word))
    ]
    return frozenset(stems(" ".join(kept)))


def named(name: str, query_stems: frozenset[str]) -> bool:
    """Whether a query (its `stems`) names `name` whole: `name` has words and every one of them
    is among the query's. "CComboBox::Create: which style..." names the page "CComboBox Class",
    "multimap insert with a hint" names `multimap::insert` and "hash_map lower_bound" names
    `hash_map::lower_bound` (or "hash map lower bound": snake_case is split). A camelCase word
    counts whole: "get the text alignment" does not name `GetTextAlign`, since its parts (Get,
    Set, Send, Message) are common enough to name the wrong member: "install a timer that sends
    WM_TIMER messages" would name `SendMessage` (docs/benchmarks.md)."""
    seen = False
    for stem_ in stems(name):
        if stem_ not in query_stems:
            return False
        seen = True
    return seen


def names_member(section: str, query_stems: frozenset[str]) -> bool:
    """Whether a query names a member a heading path is about: a heading below the page's title
    whose name (after its last `::`) the query names whole (`named`), unless the page's title
    names it too (a class's constructor, `deque::deque`, is named by every question on `deque`)."""
    title, *headings = section.split(SEPARATOR)
    title_stems = frozenset(stems(title))
    for heading in headings:
        name = heading.rsplit("::", 1)[-1]
        if named(name, query_stems) and not named(name, title_stems):
            return True
    return False


def named_titles(ranked: list[Ranked], query_stems: frozenset[str]) -> list[Ranked]:
    """`ranked` with the score of each document whose title the query names (`named`) raised by
    NAMED_TITLE_BOOST, in its new order."""
    raised = [
        hit.rescored(hit.score * NAMED_TITLE_BOOST) if named(hit.title, query_stems) else hit
        for hit in ranked
    ]
    return sorted(raised, key=lambda hit: (-hit.score, hit.path))


def chosen(
    pool: dict[int, list[passages.Best]], doc_ids: list[int], query_stems: frozenset[str]
) -> dict[int, passages.Best]:
    """doc_id -> the passage each hit points at: among its passages in the index-wide pool (best
    first), the first of the leading ones whose heading path names a member the query names whole
    (`names_member`), else the best. No query: at most NAMED_PASSAGES headings looked at a hit."""
    out = {}
    for doc_id in doc_ids:
        found = pool.get(doc_id)
        if found:
            leading = [item for item in found[:NAMED_PASSAGES] if item.score >= NAMED_SHARE * found[0].score]
            naming = (item for item in leading if names_member(item.section, query_stems))
            out[doc_id] = next(naming, found[0])
    return out
