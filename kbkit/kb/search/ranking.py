"""The lexical ranking: BM25 over weighted fields plus each document's best passage, the reference
prior, the pages the query names exactly first, and near-copies of a page (by content) folded
into the best-ranked one. Each rule can be left out for measuring (`rules_off`)."""

from __future__ import annotations

import bisect
import functools
import math
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from kbkit.kb import passages
from kbkit.kb.fields import FTS_COLUMNS, called, reference_counts, reference_keys, stem
from kbkit.kb.search.query import stems

FIELD_WEIGHTS = {"title": 1.5, "name": 2.0, "description": 1.5, "tags": 1.5, "headings": 1.0, "body": 1.0}
"""BM25 weights of the fields (docs/benchmarks.md has the measurements behind them)."""
COLUMN_WEIGHTS = FIELD_WEIGHTS | {f"{name}_seg": weight for name, weight in FIELD_WEIGHTS.items()}
"""A field's segmented words (kbkit/kb/segment.py) weigh what the field weighs."""
PASSAGE_WEIGHT = 1.5
"""A document's best passage score (relative to the best passage's) counts this much beside its
own BM25 score (relative to the best document's); docs/adr/0026 has the measurements."""
REFERENCE_WEIGHT = 0.3
"""The reference prior: a hit's BM25 score is multiplied by 1 + 0.3 ln(1 + n), n being how many
references of other documents name it (a `name` code span by its file name, a link by the folder
and name it resolves to: `fields.reference_keys`). The page others point at (`chmod`, a team's
main runbook) outranks rarer pages that only share a word with the query (docs/adr/0024, 0075 and
docs/benchmarks.md have the measurements). A query of keywords is left to its words (`referenced`)."""


CHANGELOG_WEIGHT = 0.5
"""A change log's score is multiplied by this: one long page that names every feature once (a
700 KB release-notes.md) would otherwise outrank the page about the feature (docs/adr/0056)."""
CHANGELOG_NAMES = frozenset(
    ("changelog", "changes", "release-notes", "release_notes", "releasenotes", "whatsnew", "whats-new")
)
"""File names (without extension, any case) of change logs. `history` and `news` are not among
them: a command's page is often called so (tldr's `history.md`)."""
RELEASE_NOTE = re.compile(
    r"(?:(?:release|changelog|changes|whatsnew|release-notes|version)[-_]?)?v?\d+(?:[._-]\d+)+"
)
"""A file named for one version is that version's notes (pytest's `announce/release-2.2.0.rst`,
`releases/1.4.md`, `whatsnew-3.12`, `v2.0.1`): a change log too (`is_changelog`, docs/adr/0068)."""


RULES = (
    "field weights",
    "passages",
    "named titles",
    "references",
    "change logs",
    "exact matches",
    "near copies",
)
"""The ranking rules `rules_off` can leave out, in the order a search applies them."""
_OFF: ContextVar[frozenset[str]] = ContextVar("ranking_rules_off", default=frozenset())


@contextmanager
def rules_off(*names: str) -> Iterator[None]:
    """Search with the named RULES left out, to measure what each is worth on a set of questions
    (bench.real_sites --ablation). Not a setting: every rule is on outside this block."""
    unknown = sorted(set(names) - set(RULES))
    if unknown:
        raise ValueError(f"no ranking rule named {unknown[0]!r}; the rules are {', '.join(RULES)}")
    token = _OFF.set(frozenset(names))
    try:
        yield
    finally:
        _OFF.reset(token)


def on(rule: str) -> bool:
    """Whether `rule` (one of RULES) applies to this search."""
    return rule not in _OFF.get()


@dataclass(frozen=True)
class Ranked:
    """A candidate document and its score at one step of the ranking."""

    doc_id: int
    path: str
    title: str
    ext: str
    sha256: str
    score: float

    def rescored(self, score: float) -> Ranked:
        return Ranked(self.doc_id, self.path, self.title, self.ext, self.sha256, score)


def search_sql(with_prefix: bool) -> str:
    """The ranking query `search` runs (tests pin its weights and prefix filter)."""
    prefix = "AND substr(d.path, 1, :prefix_len) = :prefix " if with_prefix else ""
    weights = ", ".join(f":w_{name}" for name in FTS_COLUMNS)
    return (
        "SELECT d.id, d.path, d.title, d.ext, d.sha256, "
        f"-bm25(documents_fts, {weights}) AS score "
        "FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid "
        f"WHERE documents_fts MATCH :match {prefix}"
        "ORDER BY score DESC, d.path LIMIT :limit"
    )


def lexical(conn: sqlite3.Connection, match: str, prefix: str, pool: int) -> list[Ranked]:
    """The `pool` documents BM25 ranks best for the MATCH expression `match`."""
    weighed = on("field weights")
    params: dict[str, object] = {
        f"w_{name}": COLUMN_WEIGHTS[name] if weighed else 1.0 for name in FTS_COLUMNS
    }
    params |= {"match": match, "limit": pool}
    if prefix:
        params |= {"prefix": prefix, "prefix_len": len(prefix)}
    return [Ranked(*row) for row in conn.execute(search_sql(bool(prefix)), params)]


def combined(
    conn: sqlite3.Connection, ranked: list[Ranked], best: dict[int, passages.Best], pool: int
) -> list[Ranked]:
    """Each document's BM25 score and its best passage's, each relative to the best of its kind,
    added up (the passage's at PASSAGE_WEIGHT): a long page whose one section answers the query
    competes with pages that match all over. Documents found only by a passage join the ranking."""
    top_doc = max((hit.score for hit in ranked), default=0.0) or 1.0
    top_passage = max((found.score for found in best.values()), default=0.0) or 1.0
    known = {hit.doc_id: hit for hit in ranked}
    add_rows(conn, known, [doc_id for doc_id in best if doc_id not in known])
    scores = {doc_id: hit.score / top_doc for doc_id, hit in known.items()}
    for doc_id, found in best.items() if on("passages") else ():
        if doc_id in scores:
            scores[doc_id] += PASSAGE_WEIGHT * found.score / top_passage
    order = sorted(scores, key=lambda doc_id: (-scores[doc_id], known[doc_id].path))
    return [known[doc_id].rescored(scores[doc_id]) for doc_id in order[:pool]]


def add_rows(conn: sqlite3.Connection, known: dict[int, Ranked], doc_ids: list[int]) -> None:
    """Add the documents `doc_ids` to `known`, with score 0."""
    for start in range(0, len(doc_ids), 500):
        ids = ",".join(str(doc_id) for doc_id in doc_ids[start : start + 500])
        for row in conn.execute(f"SELECT id, path, title, ext, sha256 FROM documents WHERE id IN ({ids})"):
            doc_id, path, title, ext, sha256 = row
            known[doc_id] = Ranked(doc_id, path, title, ext, sha256, 0.0)


def referenced(conn: sqlite3.Connection, ranked: list[Ranked], *, keywords: bool = False) -> list[Ranked]:
    """`ranked` with the reference prior applied to each score, in its new order. Not for a query of
    keywords (no stop word: `CompiledQuery.keywords`): "badge component" names what it wants, and
    on a documentation site the pages everyone links to (the site's config, a section's index)
    would push the page called so down; a sentence ("how do I change file permissions") describes,
    and the page others point at is the likelier answer (docs/adr/0067)."""
    if keywords:
        return ranked
    keys = {hit.doc_id: reference_keys(hit.path) for hit in ranked}
    counts = reference_counts(conn, sorted({key for named in keys.values() for key in named}))
    if not counts:
        return ranked
    weighed = [
        hit.rescored(
            hit.score
            * (1 + REFERENCE_WEIGHT * math.log1p(sum(counts.get(key, 0) for key in keys[hit.doc_id])))
        )
        for hit in ranked
    ]
    return sorted(weighed, key=lambda hit: (-hit.score, hit.path))


NEAR_COPY = 0.9
"""Two documents are near-copies when at least this share of their word shingles is shared (Jaccard):
a page copied with a word or a link changed, never two pages that only share a file name and
title (`go/getting-started.md`, `rust/getting-started.md`; docs/adr/0064)."""
SHINGLE_WORDS = 3
"""Words in a shingle: one changed word changes at most this many shingles."""
SKETCH = 8
"""A document's smallest shingle hashes stand for it when its near-copies are looked for (two texts
sharing 90% of their shingles share nearly all of these): a hit is compared in full only with the
kept hits sharing one (MinHash's bottom-k sketch)."""
COMPARED_CHARS = 4000
"""The characters compared at each end of a document (its opening and its close): a search compares
a few pages, never whole manuals (documents whose stored texts differ in size by more than
NEAR_COPY allows never are)."""


@functools.lru_cache(maxsize=1 << 12)
def shingles(text: str) -> frozenset[int]:
    """The hashes of `text`'s runs of SHINGLE_WORDS words (lower case), or of its words when fewer.
    Kept by text: the same candidates come back search after search."""
    words = text.lower().split()
    if len(words) < SHINGLE_WORDS:
        return frozenset({hash(tuple(words))})
    return frozenset(map(hash, zip(*(words[i:] for i in range(SHINGLE_WORDS)), strict=False)))


def near_copies(first: frozenset[int], second: frozenset[int]) -> bool:
    """Whether two shingle sets share at least NEAR_COPY of their union."""
    if min(len(first), len(second)) < NEAR_COPY * max(len(first), len(second)):
        return False
    return len(first & second) >= NEAR_COPY * len(first | second)


def fold(
    conn: sqlite3.Connection, ranked: list[Ranked], limit: int
) -> tuple[list[Ranked], dict[int, list[str]]]:
    """The first `limit` hits that are not near-copies of a hit ranked above them: the same bytes,
    or text whose shingles mostly agree (NEAR_COPY), whatever their names and titles. Returns the
    kept hits, in order, and for each the paths folded into it. Only documents of nearly the same
    size are compared, and only their ends (COMPARED_CHARS): a few reads per search."""
    sizes = _text_sizes(conn, [hit.doc_id for hit in ranked])
    texts = _Ends(conn, [hit.doc_id for hit in ranked], sizes)
    kept: list[Ranked] = []
    folded: dict[int, list[str]] = {}
    by_bytes: dict[str, int] = {}
    order: dict[int, int] = {}  # doc_id -> its place among the kept hits
    by_size: list[tuple[int, int]] = []  # (text size, doc_id) of the kept hits, in order of size
    by_sketch: dict[int, list[int]] = {}  # a shingle among a kept hit's SKETCH smallest -> those hits
    for hit in ranked:
        if len(kept) >= limit:
            break
        first = by_bytes.get(hit.sha256)
        size = sizes.get(hit.doc_id, 0)
        mine: frozenset[int] = frozenset()
        marks: list[int] = []
        if first is None and texts.compared(hit.doc_id):
            mine = texts.signature(hit.doc_id)
            marks = sorted(mine)[:SKETCH]
            low = bisect.bisect_left(by_size, (math.ceil(size * NEAR_COPY), -1))
            high = bisect.bisect_right(by_size, (math.floor(size / NEAR_COPY), sys.maxsize))
            sized = {doc_id for _, doc_id in by_size[low:high]}
            sharing = {doc_id for shingle in marks for doc_id in by_sketch.get(shingle, ())}
            alike = sorted(sized & sharing, key=lambda doc_id: order[doc_id])
            first = next((doc_id for doc_id in alike if near_copies(mine, texts.signature(doc_id))), None)
        if first is not None:
            folded.setdefault(first, []).append(hit.path)
            continue
        by_bytes[hit.sha256] = hit.doc_id
        order[hit.doc_id] = len(kept)
        bisect.insort(by_size, (size, hit.doc_id))
        for shingle in marks:
            by_sketch.setdefault(shingle, []).append(hit.doc_id)
        kept.append(hit)
    return kept, folded


class _Ends:
    """The shingles of candidates' ends (COMPARED_CHARS), read when first compared, a batch at a time."""

    BATCH = 16

    def __init__(self, conn: sqlite3.Connection, doc_ids: list[int], sizes: dict[int, int]) -> None:
        self.conn = conn
        order = sorted(doc_ids, key=lambda doc_id: sizes.get(doc_id, 0))
        alike = {
            doc_id
            for low, high in zip(order, order[1:], strict=False)
            if sizes.get(low, 0) >= NEAR_COPY * sizes.get(high, 0)
            for doc_id in (low, high)
        }
        self.pending = [doc_id for doc_id in doc_ids if doc_id in alike]
        """The candidates with another of nearly their size, in rank order: the only ones compared."""
        self.compared_ids = frozenset(self.pending)
        self.signatures: dict[int, frozenset[int]] = {}

    def compared(self, doc_id: int) -> bool:
        """Whether another candidate is near `doc_id` in size: only then its text is read."""
        return doc_id in self.compared_ids

    def signature(self, doc_id: int) -> frozenset[int]:
        if doc_id not in self.signatures:
            batch = [doc_id, *(other for other in self.pending if other not in self.signatures)]
            batch = batch[: self.BATCH]
            ends = _ends(self.conn, batch)
            self.signatures.update((other, shingles(ends.get(other, ""))) for other in batch)
        return self.signatures[doc_id]


def _text_sizes(conn: sqlite3.Connection, doc_ids: list[int]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for start in range(0, len(doc_ids), 500):
        ids = ",".join(str(doc_id) for doc_id in doc_ids[start : start + 500])
        sizes.update(conn.execute(f"SELECT id, text_size FROM documents WHERE id IN ({ids})"))
    return sizes


def _ends(conn: sqlite3.Connection, doc_ids: list[int]) -> dict[int, str]:
    """doc_id -> the first and last COMPARED_CHARS characters of its indexed text (all of a short one)."""
    found: dict[int, str] = {}
    for start in range(0, len(doc_ids), 500):
        ids = ",".join(str(doc_id) for doc_id in doc_ids[start : start + 500])
        sql = (
            f"SELECT rowid, CASE WHEN length(body) <= {2 * COMPARED_CHARS} THEN body ELSE "
            f"substr(body, 1, {COMPARED_CHARS}) || ' ' || substr(body, -{COMPARED_CHARS}) END "
            f"FROM documents_fts WHERE rowid IN ({ids})"
        )
        found.update((doc_id, text or "") for doc_id, text in conn.execute(sql))
    return found


def is_changelog(path: str) -> bool:
    """Whether `path` is a change log by its name: CHANGELOG_NAMES, or a RELEASE_NOTE."""
    name = stem(path).lower()
    return name in CHANGELOG_NAMES or RELEASE_NOTE.fullmatch(name) is not None


def changelogs_demoted(ranked: list[Ranked]) -> list[Ranked]:
    """`ranked` with each change log's score multiplied by CHANGELOG_WEIGHT, in its new order.
    Applied to the fusion with vectors as well: the vectors find a release note about a feature as
    close to a question as the feature's page, and would undo it (docs/adr/0068)."""
    if not any(is_changelog(hit.path) for hit in ranked):
        return ranked
    weighed = [
        hit.rescored(hit.score * CHANGELOG_WEIGHT) if is_changelog(hit.path) else hit for hit in ranked
    ]
    return sorted(weighed, key=lambda hit: (-hit.score, hit.path))


@functools.lru_cache(maxsize=1 << 16)
def names_of(path: str, title: str) -> tuple[frozenset[str], ...]:
    """What a document is called, each as the set of its words as the naming rules compare them
    (`stems`, lower-cased first so `VitePress` is one word): its title, its file name (an index
    file's: its folder's, `fields.called`) and its folder and file name together (`widgets/digits.md`:
    "digits widget"). Kept per document: every search weighs a hundred candidates by them."""
    folders, name = called(path)
    names = [title, name] + ([f"{folders[-1]} {name}"] if folders else [])
    return tuple(frozenset(stems(text.lower())) for text in names)


def named_exactly(query: str) -> Callable[[Ranked], bool]:
    """Whether a hit is one the query names exactly (`exact`): also what orders the hits of several
    indexes merged, each ranked by its own scores (kbkit/server/grants.py)."""
    words = frozenset(stems(query.lower()))
    if not words or not on("exact matches"):
        return lambda hit: False
    return lambda hit: words in names_of(hit.path, hit.title)


def exact(ranked: list[Ranked], query: str) -> list[Ranked]:
    """`ranked` with the documents the query names exactly first, each group in its order: one of
    a document's `names_of` is the query's words, no word more and none fewer, stop words and
    question words aside ("what is vitepress" names `what-is-vitepress.md`). Applied after the
    fusion with vectors as well: a page called what was asked for outranks every page that only
    holds the words or means something close, however often others refer to those (docs/adr/0067)."""
    is_named = named_exactly(query)
    named = [hit for hit in ranked if is_named(hit)]
    if not named:
        return ranked
    ids = {hit.doc_id for hit in named}
    return named + [hit for hit in ranked if hit.doc_id not in ids]
