"""The agent loop on large pages: search, then one read. How often the answer is in what was read,
and how many tokens the read cost.

The questions (`bench/agent_loop_questions.json`) each ask about one section of a cpp-docs page
over 50 KB; each names the page, the end of the answer section's heading path and a phrase of that
section (`evidence`). The answer counts as read when the text read is from that page and holds the
phrase inside that section. Three ways of answering, on the same index and questions in one run:

- **kbkit sections**: `search` with the agent defaults (limit 10, max_tokens 4000), then one
  `get_document` of the top hit from its `offset` with the default max_tokens (8,000).
- **whole document (before)**: what kbkit did before sections: the top hit of a document-level
  ranking (BM25 with the reference prior, no passages), read whole from offset 0 (at most 1 MiB).
- **chunks (bm25s)**: a plain chunked-retrieval baseline: every document cut into fixed chunks of
  512 tokens (2,048 characters, kbkit's four characters a token), ranked by bm25s (English stop
  words, Snowball stemmer), the top chunk read.

Tokens are estimated as kbkit estimates them (`estimate_tokens`: JSON characters / 4).

With `--semantic`, hybrid search too (BM25 fused with vectors per passage; the whole of cpp-docs
is embedded first, which takes long: `--project DIR` keeps the index for another run): the
result's offset from the passage its BM25 score and its vector favour together, at the weight
shipped and at others (0: BM25 alone, 1: the vector alone), with and without the second look at
the first hit's headings (docs/adr/0074; over its five best passages, as shipped, or all of them),
whose CPU cost a search it prints too.

Two sets of questions, each run on the same index: `named` (`agent_loop_questions.json`), nearly
all of which name the class and the member, and `plain` (`agent_loop_plain_questions.json`), which
describe what is wanted without naming the member that answers ("stop a timer that was started with
SetTimer on a window", answered by `CWnd::KillTimer`). `--set` picks one or both (side by side);
`--questions FILE` runs that file alone.

`--subset` indexes only the folders most questions are in (SUBSET) and the questions' own pages,
1,325 of 9,753 pages: a hybrid run then embeds a quarter of the windows. Its figures are of that
smaller corpus (fewer pages compete for the top), to compare with each other, not with a full run.

    .venv/bin/python -m bench.agent_loop [--data DIR] [--set named|plain|both] [--questions FILE]
        [--semantic] [--project DIR] [--subset]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench._peers import Bm25sPeer
from bench._util import MachineWatch, data_dir, percentile, print_table, unpack, verdict, write_project
from kbkit.config import load_settings
from kbkit.kb import search as kb_search
from kbkit.kb import semantic
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.reads import DEFAULT_MAX_TOKENS
from kbkit.kb.search import fusion, naming, ranking
from kbkit.kb.sections import Layout
from kbkit.kb.tokens import estimate_tokens

QUESTIONS = Path(__file__).resolve().parent / "agent_loop_questions.json"
PLAIN_QUESTIONS = Path(__file__).resolve().parent / "agent_loop_plain_questions.json"
SETS = {"named": QUESTIONS, "plain": PLAIN_QUESTIONS}
"""The question sets `--set` chooses from: name -> file."""
KB_FOLDER = "cpp-docs"
SUBSET = ("docs/mfc/reference/", "docs/standard-library/")
"""`--subset`: the folders kept (with every question's page)."""
CHUNK_CHARS = 512 * 4
EVERY_PASSAGE = 10_000
"""`HEADING_CANDIDATES` for "every passage": more than any page has (MAX_PAGE_CHUNKS windows)."""
ANSWERED_TARGET = 0.80
MEDIAN_TOKENS_TARGET = 2000


@dataclass(frozen=True)
class Question:
    question: str
    path: str
    section: str
    evidence: str


@dataclass(frozen=True)
class Read:
    """What one way of answering read for a question: a span of one page, and its tokens."""

    path: str
    start: int
    end: int
    tokens: int
    search_tokens: int = 0


Answerer = Callable[[Question], Read | None]


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    items = json.loads(path.read_text(encoding="utf-8"))["questions"]
    return [Question(**item) for item in items]


def answer_spans(kb: KnowledgeBase, question: Question) -> list[tuple[int, int]]:
    """Where the evidence stands inside the answer section (every section whose heading path ends
    with `question.section`); an empty list is a broken question and stops the run."""
    doc = kb.load(question.path)
    layout = Layout(len(doc.text), doc.outline)
    spans = []
    for section in layout.spans:
        if section.path == question.section or section.path.endswith(" > " + question.section):
            at = doc.text.find(question.evidence, section.start, section.end)
            if at >= 0:
                spans.append((at, at + len(question.evidence)))
    return spans


def sections_answerer(
    kb: KnowledgeBase,
    *,
    hybrid: bool = False,
    weight: float | None = None,
    share: float | None = None,
    heading: float | None = None,
    candidates: int | None = None,
    named: bool = False,
) -> Answerer:
    """search (BM25 alone, or `hybrid` with the passages' vectors at `weight` in the choice of a
    hit's passage, the second look at their headings at `heading` (0: none) and the dense score's
    passage share at `share`, and `candidates` the passages given that look; None: as shipped),
    then one read
    from the top hit's offset; with `named`, from whichever of the sections the top hit names (its
    own, or one in `also`) holds the answer: an agent that picks the right name, the most `also`
    can give (docs/adr/0059)."""

    dense = kb.dense_ranker() if hybrid else None
    if hybrid and share is not None:
        assert kb.hybrid is not None, kb.hybrid_off
        dense = semantic.DenseIndex(kb.store, kb.hybrid.encoder(), passage_share=share)

    def answer(question: Question) -> Read | None:
        with (
            patched(fusion, "PASSAGE_VECTOR_WEIGHT", weight),
            patched(fusion, "HEADING_WEIGHT", heading),
            patched(fusion, "HEADING_CANDIDATES", candidates),
        ):
            result = kb_search.search(kb.store, kb.registry, question.question, dense=dense)
        if not result.results:
            return None
        top = result.results[0]
        offset = top.offset
        if named and top.path == question.path:
            spans = answer_spans(kb, question)
            for other in [top.offset, *(section.offset for section in top.also)]:
                end = other + len(kb.load(top.path, offset=other, max_tokens=DEFAULT_MAX_TOKENS).text)
                if any(other <= a and b <= end for a, b in spans):
                    offset = other
                    break
        doc = kb.load(top.path, offset=offset, max_tokens=DEFAULT_MAX_TOKENS)
        return Read(
            top.path,
            offset,
            offset + len(doc.text),
            estimate_tokens(doc.text),
            estimate_tokens(result.to_dict()),
        )

    return answer


@contextmanager
def patched(module: object, name: str, value: float | None) -> Iterator[None]:
    """`module.name` set to `value` for the block (None: left as shipped)."""
    shipped = getattr(module, name)
    setattr(module, name, shipped if value is None else value)
    try:
        yield
    finally:
        setattr(module, name, shipped)


@contextmanager
def document_ranking() -> Iterator[None]:
    """kbkit's ranking as it was before passages: document BM25 and the reference prior alone (no
    passage score, no title named by the query)."""
    weight, boost = ranking.PASSAGE_WEIGHT, naming.NAMED_TITLE_BOOST
    ranking.PASSAGE_WEIGHT, naming.NAMED_TITLE_BOOST = 0.0, 1.0
    try:
        yield
    finally:
        ranking.PASSAGE_WEIGHT, naming.NAMED_TITLE_BOOST = weight, boost


def whole_document_answerer(kb: KnowledgeBase) -> Answerer:
    def answer(question: Question) -> Read | None:
        with document_ranking():
            result = kb.search(question.question)
        if not result.results:
            return None
        top = result.results[0]
        doc = kb.load(top.path)  # offset 0, cut at 1 MiB: what get_document returned before
        return Read(top.path, 0, len(doc.text), estimate_tokens(doc.text), estimate_tokens(result.to_dict()))

    return answer


def prune(folder: Path, keep: set[str]) -> None:
    """Delete the Markdown pages under `folder` outside SUBSET and not in `keep` (for `--subset`)."""
    for path in folder.rglob("*.md"):
        relative = path.relative_to(folder).as_posix()
        if not relative.startswith(SUBSET) and relative not in keep:
            path.unlink()


class Chunks:
    """Fixed-size chunks of every indexed document, ranked by bm25s."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.spans: dict[str, tuple[str, int, int, str]] = {}
        triples = []
        for item in kb.list_servable():
            doc = kb.load(item.path)
            for start in range(0, len(doc.text), CHUNK_CHARS):
                key = f"{item.path}#{start}"
                text = doc.text[start : start + CHUNK_CHARS]
                self.spans[key] = (item.path, start, start + len(text), text)
                triples.append((key, item.title, text))
        self.peer = Bm25sPeer(triples)

    def answerer(self) -> Answerer:
        def answer(question: Question) -> Read | None:
            keys = self.peer.rank(question.question, 1)
            if not keys:
                return None
            path, start, end, text = self.spans[keys[0]]
            return Read(path, start, end, estimate_tokens(text))

        return answer


def pointing(
    kb: KnowledgeBase, questions: list[Question], answers: list[list[tuple[int, int]]]
) -> dict[str, float]:
    """Where search (BM25, agent defaults) puts the right page, and whether a read from that page's
    hit, wherever it ranks, would hold the answer: which passage a hit points at, apart from which
    page comes first."""
    listed, holds = [], []
    for question, spans in zip(questions, answers, strict=True):
        result = kb_search.search(kb.store, kb.registry, question.question)
        hit = next((hit for hit in result.results if hit.path == question.path), None)
        listed.append(hit is not None)
        if hit is not None:
            doc = kb.load(hit.path, offset=hit.offset, max_tokens=DEFAULT_MAX_TOKENS)
            end = hit.offset + len(doc.text)
            holds.append(any(hit.offset <= a and b <= end for a, b in spans))
    return {
        "right page listed": statistics.fmean(listed),
        "hit holds answer": statistics.fmean(holds) if holds else 0.0,
    }


def run(
    answerer: Answerer, questions: list[Question], answers: list[list[tuple[int, int]]]
) -> dict[str, float]:
    hits, tokens, search_tokens, right_page = [], [], [], []
    for question, spans in zip(questions, answers, strict=True):
        read = answerer(question)
        page = read is not None and read.path == question.path
        right_page.append(page)
        hits.append(page and any(read.start <= a and b <= read.end for a, b in spans) if read else False)
        tokens.append(float(read.tokens if read else 0))
        search_tokens.append(float(read.search_tokens if read else 0))
    return {
        "answered": statistics.fmean(hits),
        "right page": statistics.fmean(right_page),
        "p50": percentile(tokens, 50),
        "p90": percentile(tokens, 90),
        "max": max(tokens),
        "search p50": percentile(search_tokens, 50),
    }


Results = dict[str, dict[str, float]]
POINTING = "right page's hit (BM25, anywhere in the top 10)"
SECTIONS_WAY = "kbkit sections (search, then get_document from the hit's offset)"
NAMED_WAY = "  the same, the section named in the reply (the hit's own or one in `also`)"


def run_ways(kb: KnowledgeBase, chunks: Chunks, questions: list[Question], *, hybrid: bool) -> Results:
    """Every way of answering on one set of questions (a broken question stops the run)."""
    answers = [answer_spans(kb, question) for question in questions]
    broken = [q.question for q, spans in zip(questions, answers, strict=True) if not spans]
    if broken:
        raise SystemExit(f"no answer section or evidence found for: {broken}")
    results = {
        SECTIONS_WAY: run(sections_answerer(kb), questions, answers),
        NAMED_WAY: run(sections_answerer(kb, named=True), questions, answers),
        POINTING: pointing(kb, questions, answers),
    }
    if hybrid:
        results["kbkit sections + vectors, the section named in the reply"] = run(
            sections_answerer(kb, hybrid=True, named=True), questions, answers
        )
        for name, weight, share, heading in (
            ("kbkit sections + vectors (hybrid, as shipped)", None, None, None),
            ("  the same, no second look at the headings (heading weight 0)", None, None, 0.0),
            ("  the same, heading weight 0.3", None, None, 0.3),
            ("  the same, heading weight 0.7", None, None, 0.7),
            ("  the same, every passage of the first hit given the second look", None, None, None),
            ("  the same, passage: BM25 alone (vector weight 0)", 0.0, None, None),
            ("  the same, passage: vector weight 0.5", 0.5, None, None),
            ("  the same, passage: the best vector's (vector weight 1)", 1.0, None, None),
            ("  page score from its opening alone (passage share 0)", None, 0.0, None),
            ("  passage share 1 (the best of its passages)", None, 1.0, None),
        ):
            every = EVERY_PASSAGE if "every passage" in name else None
            answerer = sections_answerer(
                kb, hybrid=True, weight=weight, share=share, heading=heading, candidates=every
            )
            results[name] = run(answerer, questions, answers)
        results["  named in the reply, no second look"] = run(
            sections_answerer(kb, hybrid=True, heading=0.0, named=True), questions, answers
        )
    results |= {
        "whole document (before: the top hit read from offset 0)": run(
            whole_document_answerer(kb), questions, answers
        ),
        f"chunks (bm25s, {CHUNK_CHARS // 4}-token chunks, the top chunk read)": run(
            chunks.answerer(), questions, answers
        ),
    }
    return results


def second_look_cost(kb: KnowledgeBase, questions: list[Question]) -> dict[str, list[float]]:
    """CPU milliseconds (every thread of the process) of one hybrid search per question: without
    the second look at the hits' headings, with it on headings never embedded before (its text
    vectors dropped before each search), and with them kept from an earlier search."""
    dense = kb.dense_ranker()
    assert isinstance(dense, semantic.DenseIndex), kb.hybrid_off
    times: dict[str, list[float]] = {"second look off": [], "on, headings new": [], "on, headings kept": []}
    kb_search.search(kb.store, kb.registry, questions[0].question, dense=dense)  # the vectors loaded
    for question in questions:
        for way, heading in (
            ("second look off", 0.0),
            ("on, headings new", None),
            ("on, headings kept", None),
        ):
            if way == "on, headings new":
                dense._texts.clear()
            dense._asked = None  # the query is embedded in every way, as a new search does
            with patched(fusion, "HEADING_WEIGHT", heading):
                started = time.process_time()
                kb_search.search(kb.store, kb.registry, question.question, dense=dense)
                times[way].append((time.process_time() - started) * 1000)
    return times


def print_results(results: Results) -> None:
    rows = []
    for name, numbers in results.items():
        if name == POINTING:
            continue
        rows.append(
            [
                name,
                f"{numbers['answered']:.2f}",
                f"{numbers['right page']:.2f}",
                f"{numbers['p50']:,.0f}",
                f"{numbers['p90']:,.0f}",
                f"{numbers['max']:,.0f}",
                f"{numbers['search p50']:,.0f}" if numbers["search p50"] else "",
            ]
        )
    headers = ["way", "answer read", "top page right", "tokens read p50", "p90", "max", "search reply p50"]
    print_table(headers, rows)
    hits = results[POINTING]
    print(
        f"\nthe right page is in the top 10 for {hits['right page listed']:.2f} of the questions; "
        f"a read from its hit holds the answer for {hits['hit holds answer']:.2f} of those"
    )


def print_side_by_side(by_set: dict[str, Results]) -> None:
    """The main figures of every set in one table, a column per set."""
    names = list(by_set)
    headers = ["way"]
    for metric in ("answer read", "top page right", "tokens read p50"):
        headers += [f"{metric} ({name})" for name in names]
    rows = []
    for way in next(iter(by_set.values())):
        if way == POINTING:
            continue
        row = [way]
        for key, fmt in (("answered", "{:.2f}"), ("right page", "{:.2f}"), ("p50", "{:,.0f}")):
            row += [fmt.format(by_set[name][way][key]) for name in names]
        rows.append(row)
    print_table(headers, rows, "Side by side")
    print_table(
        ["set", "right page in the top 10", "a read from its hit holds the answer"],
        [
            [name, f"{hits['right page listed']:.2f}", f"{hits['hit holds answer']:.2f}"]
            for name, hits in ((name, results[POINTING]) for name, results in by_set.items())
        ],
        POINTING,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the benchmark data folder (default: ../shared/data)")
    parser.add_argument(
        "--set", choices=[*SETS, "both"], default="both", help="which questions: named, plain or both"
    )
    parser.add_argument("--questions", type=Path, help="a questions file, run alone (instead of --set)")
    parser.add_argument(
        "--semantic", action="store_true", help="also hybrid search (vectors per passage): embeds cpp-docs"
    )
    parser.add_argument(
        "--project", type=Path, help="keep the project (its index and vectors) in this folder"
    )
    parser.add_argument(
        "--subset", action="store_true", help="index only SUBSET's folders and the questions' pages"
    )
    args = parser.parse_args(argv)
    archive = data_dir(args.data) / "cpp-docs.tar.gz"
    if args.questions is not None:
        files = {args.questions.stem: args.questions}
    else:
        files = SETS if args.set == "both" else {args.set: SETS[args.set]}
    question_sets = {name: load_questions(path) for name, path in files.items()}
    machine = MachineWatch()
    with tempfile.TemporaryDirectory(prefix="kbkit-agent-loop-") as tmp:
        root = args.project or Path(tmp)
        if not (root / KB_FOLDER).is_dir():
            unpack(archive, root)
            if args.subset:
                prune(root / KB_FOLDER, {q.path for questions in question_sets.values() for q in questions})
        write_project(root, KB_FOLDER)
        if args.semantic:
            with (root / "kbkit.toml").open("a", encoding="utf-8") as config:
                config.write("\n[search]\nsemantic = true\n")
        kb = KnowledgeBase.open(load_settings(root))
        try:
            started = time.perf_counter()
            report = kb.scan()
            index_seconds = time.perf_counter() - started
            embedded = None
            if args.semantic:
                started = time.perf_counter()
                embedded = kb.embed()
                if embedded is None:
                    raise SystemExit(f"hybrid search is off: {kb.hybrid_off}")
                embed_seconds = time.perf_counter() - started
            costs = (
                second_look_cost(kb, [q for questions in question_sets.values() for q in questions])
                if args.semantic
                else None
            )
            chunks = Chunks(kb)
            by_set = {
                name: run_ways(kb, chunks, questions, hybrid=args.semantic)
                for name, questions in question_sets.items()
            }
        finally:
            kb.close()
    counts = ", ".join(f"{len(questions)} {name}" for name, questions in question_sets.items())
    print(
        f"cpp-docs: {report.documents} documents indexed in {index_seconds:.1f} s; "
        f"questions on pages over 50 KB: {counts}"
    )
    if embedded is not None:
        print(
            f"vectors: {embedded.embedded} documents, {embedded.chunks} chunks "
            f"({embedded.reused} reused) in {embed_seconds:.0f} s"
        )
    print(f"machine: {machine.note()}")
    for name, results in by_set.items():
        print(f"\n{name} questions ({len(question_sets[name])})\n")
        print_results(results)
        ours = results[SECTIONS_WAY]
        print(
            f"\ntargets ({name}): answer read >= {ANSWERED_TARGET:.0%}: "
            f"{verdict(ours['answered'] >= ANSWERED_TARGET)}; "
            f"median tokens read <= {MEDIAN_TOKENS_TARGET:,}: {verdict(ours['p50'] <= MEDIAN_TOKENS_TARGET)}"
        )
    if len(by_set) > 1:
        print_side_by_side(by_set)
    if costs is not None:
        print_table(
            ["hybrid search", "CPU ms p50", "p90", "max"],
            [
                [way, f"{percentile(ms, 50):.1f}", f"{percentile(ms, 90):.1f}", f"{max(ms):.1f}"]
                for way, ms in costs.items()
            ],
            "The second look's cost (every question once, all threads of the process)",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
