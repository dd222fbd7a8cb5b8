"""Fusion rules for hybrid search, each measured on every set with vectors in one run.

The sets: the real documentation sites of `bench.real_sites` (written blind) and tldr, httpx and
SciFact of `bench.search_quality`. Each rule is swapped in for the shipped fusion (`fusion.fuse`)
or sets BM25's share for a query (the `lexical_weight` option), over the same BM25 rankings and
the same kept vectors. Printed: MRR@10 a set (nDCG@10 for SciFact) with kbkit's default (BM25
alone) first; how many sets a rule keeps at or above the default; and the real sites' questions
pooled, where a rule that only moves coin flips from one site to another shows as no change
(docs/adr/0078).

    .venv/bin/python -m bench.fusion_rules --repos DIR --workdir DIR [--rules a,b] [--data DIR]

`--workdir` holds the projects and the sites' files, as `bench.real_sites --cache DIR --workdir DIR`
and `bench.search_quality --workdir DIR/sets` keep them: each set is embedded once (a first run
embeds them all: about half an hour on two cores), later runs reuse the vectors.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench import real_sites, search_quality
from bench._util import MachineWatch, data_dir, print_table, unpack
from kbkit.config import load_settings
from kbkit.errors import QueryError
from kbkit.kb import search as kb_search
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.evaluation import Asked, Question, load_questions, score
from kbkit.kb.evaluation.metrics import DEPTH
from kbkit.kb.search import DenseRanker, compile_query, fusion
from kbkit.kb.search.ranking import Ranked, add_rows
from kbkit.kb.semantic.model import VOCAB


class Fuse(Protocol):
    """`fusion.fuse`'s signature: what a rule puts in its place."""

    def __call__(
        self,
        conn: sqlite3.Connection,
        lexical: list[Ranked],
        dense: list[tuple[int, float]],
        pool: int,
        *,
        lexical_weight: float = ...,
    ) -> list[Ranked]: ...


@dataclass(frozen=True)
class Rule:
    name: str
    fuse: Fuse | None = None
    """Replaces `fusion.fuse` (None: the shipped fusion)."""
    share: Callable[[str], float | None] = lambda query: None
    """BM25's share for a query (None: the shipped `fusion.lexical_share`)."""


@contextmanager
def fused_by(rule: Rule) -> Iterator[None]:
    """Searches inside the block fuse by `rule` (a measurement, not a setting)."""
    fusion.fuse = rule.fuse or SHIPPED
    try:
        yield
    finally:
        fusion.fuse = SHIPPED


Scores = Callable[[sqlite3.Connection, list[Ranked], list[tuple[int, float]], float], dict[int, float]]
"""What a rule decides: doc_id -> fused score, from the BM25 ranking, the cosines and BM25's share."""
SHIPPED = fusion.fuse


def fused(scores: Scores) -> Fuse:
    """A `fusion.fuse` that ranks the documents of either ranking by `scores`."""

    def fuse(
        conn: sqlite3.Connection,
        lexical: list[Ranked],
        dense: list[tuple[int, float]],
        pool: int,
        *,
        lexical_weight: float = fusion.LEXICAL_WEIGHT,
    ) -> list[Ranked]:
        if not lexical:
            return SHIPPED(conn, lexical, dense, pool, lexical_weight=lexical_weight)
        return fusion.ranked_by(conn, lexical, scores(conn, lexical, dense, lexical_weight), pool)

    return fuse


def first_raised(bonus: float) -> Fuse:
    """BM25's first hit gets `bonus` on top of its fused score: the vectors must beat it by more."""

    def scores(
        conn: sqlite3.Connection, lexical: list[Ranked], dense: list[tuple[int, float]], weight: float
    ) -> dict[int, float]:
        out = fusion.convex_scores(lexical, dense, lexical_weight=weight)
        out[lexical[0].doc_id] += bonus
        return out

    return fused(scores)


def first_kept(floor: float) -> Fuse:
    """BM25's first hit stays first unless its normalised cosine is below `floor`."""

    def scores(
        conn: sqlite3.Connection, lexical: list[Ranked], dense: list[tuple[int, float]], weight: float
    ) -> dict[int, float]:
        out = fusion.convex_scores(lexical, dense, lexical_weight=weight)
        if fusion.normalised(dense).get(lexical[0].doc_id, 0.0) >= floor:
            out[lexical[0].doc_id] = max(out.values()) + 1e-9
        return out

    return fused(scores)


def rescaled(scale: Callable[[list[tuple[int, float]]], dict[int, float]], *, words_too: bool) -> Fuse:
    """The convex combination with the cosines (and with `words_too` BM25's scores) scaled by
    `scale` instead of min-max; a document missing from a ranking gets that ranking's lowest."""

    def scores(
        conn: sqlite3.Connection, lexical: list[Ranked], dense: list[tuple[int, float]], weight: float
    ) -> dict[int, float]:
        pairs = [(hit.doc_id, hit.score) for hit in lexical]
        words = scale(pairs) if words_too else fusion.normalised(pairs)
        meaning = scale(dense)
        low_w, low_m = min(words.values(), default=0.0), min(meaning.values(), default=0.0)
        return {
            d: weight * words.get(d, low_w) + (1 - weight) * meaning.get(d, low_m)
            for d in words.keys() | meaning.keys()
        }

    return fused(scores)


@dataclass
class Asking:
    """The question being asked and the kb's dense ranker: what a rule that embeds more than the
    query (the pages' titles) needs beyond `fusion.fuse`'s arguments."""

    query: str = ""
    dense: DenseRanker | None = None


ASKING = Asking()


def with_titles(share: float) -> Fuse:
    """The cosines mixed with each candidate's title (and its path's words: `generics/impl.md` is
    "generics impl"), embedded at search time: (1 - share) x the page's cosine + share x its
    title's; a page the dense ranking did not return counts its lowest cosine."""

    def scores(
        conn: sqlite3.Connection, lexical: list[Ranked], dense: list[tuple[int, float]], weight: float
    ) -> dict[int, float]:
        if ASKING.dense is None:
            return fusion.convex_scores(lexical, dense, lexical_weight=weight)
        known = {hit.doc_id: hit for hit in lexical}
        add_rows(conn, known, [doc_id for doc_id, _ in dense if doc_id not in known])
        labels = [
            f"{hit.title} ({re.sub(r'[/_.-]+', ' ', hit.path.rsplit('.', 1)[0])})" for hit in known.values()
        ]
        titles = dict(zip(known, ASKING.dense.text_cosines(ASKING.query, labels), strict=True))
        cosines = dict(dense)
        low = min(cosines.values(), default=0.0)
        mixed = [(d, (1 - share) * cosines.get(d, low) + share * titles[d]) for d in known]
        return fusion.convex_scores(lexical, mixed, lexical_weight=weight)

    return fused(scores)


def z_scores(pairs: list[tuple[int, float]]) -> dict[int, float]:
    values = [value for _, value in pairs]
    if len(values) < 2:
        return dict.fromkeys((d for d, _ in pairs), 1.0)
    mean, spread = statistics.fmean(values), statistics.pstdev(values) or 1.0
    return {d: (value - mean) / spread for d, value in pairs}


def median_floor(pairs: list[tuple[int, float]]) -> dict[int, float]:
    values = sorted(value for _, value in pairs)
    if not values or values[-1] - values[len(values) // 2] <= 1e-12:
        return dict.fromkeys((d for d, _ in pairs), 1.0)
    high, low = values[-1], values[len(values) // 2]
    return {d: max(0.0, (value - low) / (high - low)) for d, value in pairs}


def unread_share(vocabulary: frozenset[str]) -> Callable[[str], float | None]:
    """BM25 at 0.8 for a query half of whose words the model's vocabulary lacks whole (`capsys
    readouterr`): the model reads it as word pieces."""

    def share(query: str) -> float | None:
        words = [word for word in "".join(c if c.isalnum() else " " for c in query.lower()).split()]
        unread = sum(word not in vocabulary for word in words)
        return 0.8 if words and unread * 2 >= len(words) else None

    return share


def shares(sentence: float, keywords: float) -> Callable[[str], float | None]:
    return lambda query: keywords if compile_query(query).keywords else sentence


def rules() -> list[Rule]:
    vocabulary = frozenset(VOCAB.read_text(encoding="utf-8").split())
    return [
        Rule("shipped: min-max, BM25 0.5 (keywords 0.6)"),
        Rule("BM25 0.6 (keywords 0.7)", share=shares(0.6, 0.7)),
        Rule("BM25 0.8 for words the model lacks", share=unread_share(vocabulary)),
        Rule("cosines as z-scores", rescaled(z_scores, words_too=False)),
        Rule("both as z-scores", rescaled(z_scores, words_too=True)),
        Rule("cosines above their median", rescaled(median_floor, words_too=False)),
        *(Rule(f"cosines mixed with the title's at {share}", with_titles(share)) for share in (0.15, 0.3)),
        Rule("BM25's first kept unless its cosine is in the bottom 30 %", first_kept(0.3)),
        *(Rule(f"BM25's first hit + {bonus:.2f}", first_raised(bonus)) for bonus in (0.05, 0.1, 0.15)),
    ]


@dataclass
class Measured:
    """One set's questions over one kept project, and how a ranking of paths is scored."""

    name: str
    kb: KnowledgeBase
    queries: list[str]
    judge: Callable[[list[list[str]]], float]
    real_site: bool = False


def ask(kb: KnowledgeBase, query: str, *, hybrid: bool, share: float | None) -> list[str]:
    try:
        if hybrid:
            ASKING.query, ASKING.dense = query, kb.dense_ranker()
            hits = kb.search(query, limit=DEPTH, max_tokens=None, lexical_weight=share).results
        else:
            hits = kb_search.search(kb.store, kb.registry, query, limit=DEPTH, max_tokens=None).results
    except QueryError:
        return []
    return [hit.path for hit in hits]


def opened(root: Path, kb_path: str) -> KnowledgeBase:
    search_quality.write_project(root, kb_path, semantic=True)
    kb = KnowledgeBase.open(load_settings(root, as_written=True))  # the bench wrote it: nothing to trust
    kb.scan()
    kb.embed()
    return kb


def site_sets(repos: Path, workdir: Path) -> Iterator[Measured]:
    for site in real_sites.load_sites():
        kb_folder = real_sites.materialize(site, repos, workdir)
        kb, _ = real_sites.open_indexed(workdir / f"{site.name}-hybrid", kb_folder, hybrid=True)
        for lang in site.languages:
            questions = load_questions(real_sites.DATA / f"{site.name}.{lang}.toml").questions

            def judge(ranked: list[list[str]], questions: tuple[Question, ...] = questions) -> float:
                asked = [
                    Asked(q, tuple((path,) for path in paths))
                    for q, paths in zip(questions, ranked, strict=True)
                ]
                return score(asked).mrr_at_10

            yield Measured(f"{site.name} {lang}", kb, [q.text for q in questions], judge, real_site=True)


def kept(workdir: Path, name: str, kb_path: str, fill: Callable[[Path], None]) -> KnowledgeBase:
    """A set's project as `bench.search_quality --workdir` keeps it (filled once), opened."""
    with search_quality.project_dir(workdir / "sets", name) as (root, new):
        if new:
            fill(root)
        return opened(root, kb_path)


def known_item_sets(data: Path, workdir: Path) -> Iterator[Measured]:
    questions = search_quality.load_questions()
    yield Measured(
        "tldr",
        kept(workdir, "tldr", search_quality.TLDR_PAGES, lambda root: unpack(data / "tldr-en.tar.gz", root)),
        [text for text, _ in questions],
        lambda ranked: search_quality.known_item_metrics(questions, ranked)[0]["MRR@10"],
    )
    httpx = search_quality.load_questions(search_quality.HTTPX_QUESTIONS)
    yield Measured(
        "httpx",
        kept(workdir, "httpx", "docs", lambda root: search_quality.write_httpx(root / "docs")),
        [text for text, _ in httpx],
        lambda ranked: search_quality.known_item_metrics(httpx, ranked)[0]["MRR@10"],
    )
    qrels, claims = search_quality.scifact_claims(data / "scifact")
    ids = list(qrels)
    yield Measured(
        "SciFact (nDCG@10)",
        kept(
            workdir,
            "scifact",
            "docs",
            lambda root: search_quality.write_scifact(data / "scifact", root / "docs"),
        ),
        [claims[query_id] for query_id in ids],
        lambda ranked: statistics.fmean(
            search_quality.ndcg_at([Path(p).stem for p in paths], qrels[q])
            for q, paths in zip(ids, ranked, strict=True)
        ),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", type=Path, default=os.environ.get("KBKIT_SITE_REPOS"))
    parser.add_argument("--workdir", type=Path, required=True, help="the kept projects (see above)")
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument("--rules", help="comma-separated rule numbers from 0 (default: all)")
    args = parser.parse_args(argv)
    if args.repos is None:
        parser.error("pass --repos DIR (or set KBKIT_SITE_REPOS): the folder holding the sites' repositories")
    chosen = rules()
    if args.rules:
        chosen = [chosen[int(number)] for number in args.rules.split(",")]
    machine = MachineWatch()
    workdir = args.workdir.expanduser().resolve()
    sets = [
        *site_sets(args.repos.expanduser().resolve(), workdir),
        *known_item_sets(data_dir(args.data), workdir),
    ]
    default = {s.name: s.judge([ask(s.kb, q, hybrid=False, share=None) for q in s.queries]) for s in sets}
    figures: dict[str, dict[str, float]] = {}
    for rule in chosen:
        with fused_by(rule):
            figures[rule.name] = {
                s.name: s.judge([ask(s.kb, q, hybrid=True, share=rule.share(q)) for q in s.queries])
                for s in sets
            }
        print(f"{rule.name}: done", file=sys.stderr, flush=True)
    for s in sets:
        s.kb.close()
    sizes = {s.name: len(s.queries) for s in sets if s.real_site}

    def pooled(values: dict[str, float]) -> float:
        return sum(values[name] * count for name, count in sizes.items()) / sum(sizes.values())

    rows = [["kbkit default (BM25)", *(f"{default[s.name]:.3f}" for s in sets), "", f"{pooled(default):.3f}"]]
    for name, values in figures.items():
        above = sum(values[s.name] >= default[s.name] - 1e-9 for s in sets)
        rows.append(
            [
                name,
                *(f"{values[s.name]:.3f}" for s in sets),
                f"{above} of {len(sets)}",
                f"{pooled(values):.3f}",
            ]
        )
    print(f"machine: {machine.note()}\n\nHybrid search's fusion rules: MRR@10 (SciFact: nDCG@10)\n")
    print_table(["rule", *(s.name for s in sets), "sets at or above default", "real sites pooled"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
