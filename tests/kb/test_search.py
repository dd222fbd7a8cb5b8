"""Search: natural language in, ranked hits out; the token budget and prefixes hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbkit.config import load_settings
from kbkit.errors import QueryError
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import (
    MAX_TERMS,
    SNIPPET_CHARS,
    compile_query,
    fusion,
    marker,
    search,
    search_sql,
    snippet_window,
)
from kbkit.kb.search.translations import mostly_written_in
from tests.helpers.project import make_project


@pytest.fixture
def kb(project: Path):
    base = KnowledgeBase.open(load_settings(project))
    base.scan()
    yield base
    base.close()


def test_queries_become_quoted_or_joined_terms_without_stop_words() -> None:
    compiled = compile_query('What is the "guard" (sequence) AND NOT near*?')
    assert compiled.terms == ("guard", "sequence", "near")
    assert compiled.match == '"guard" OR "sequence" OR "near"'


def test_a_query_of_only_stop_words_still_searches_them() -> None:
    assert compile_query("what is it").terms == ("what", "is", "it")


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_query_is_a_clear_error(text: str) -> None:
    with pytest.raises(QueryError, match="the query is empty"):
        compile_query(text)


def test_punctuation_only_is_a_clear_error() -> None:
    with pytest.raises(QueryError, match="no words"):
        compile_query("?!()**")


def test_titles_and_headings_outrank_body_mentions(tmp_path: Path) -> None:
    files = {
        "body.md": "# Misc\n\nA long page that mentions rollback once among many other words here.\n",
        "title.md": "# Rollback\n\nHow we undo a release.\n",
    }
    root = make_project(tmp_path / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        assert [hit.path for hit in kb.search("rollback").results] == ["title.md", "body.md"]
    finally:
        kb.close()


def test_stemming_matches_other_forms_of_a_word(kb: KnowledgeBase) -> None:
    assert kb.search("deployment rolling").results[0].path == "runbooks/deploy.rst"


def test_hits_carry_path_title_score_snippet_and_uri(kb: KnowledgeBase) -> None:
    (hit,) = kb.search("blue green").results
    assert hit.path == "runbooks/deploy.rst"
    assert hit.title == "Deploying"
    assert hit.score > 0
    assert "**blue**" in hit.snippet
    assert hit.uri == "kb://doc/runbooks/deploy.rst"


def test_path_prefix_narrows_the_hits(kb: KnowledgeBase) -> None:
    assert {hit.path for hit in kb.search("guard sequence docs").results} >= {"adr/0001-guards.md"}
    results = kb.search("guard sequence docs", path_prefix="guide/").results
    assert [hit.path for hit in results] == ["guide/getting-started.md"]


def test_an_unknown_prefix_explains_the_empty_result(kb: KnowledgeBase) -> None:
    result = kb.search("guard", path_prefix="nowhere/")
    assert result.results == []
    assert "no indexed document's path starts with 'nowhere/'" in result.note


def test_no_match_explains_which_words_were_tried(kb: KnowledgeBase) -> None:
    result = kb.search("zeppelin quasar")
    assert result.results == [] and "zeppelin, quasar" in result.note


def test_an_empty_index_says_so(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {})
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        assert "holds no documents" in kb.search("anything").note
    finally:
        kb.close()


def test_max_tokens_cuts_the_list_and_says_so(tmp_path: Path) -> None:
    files = {f"doc{i}.md": f"# Doc {i}\n\nshared words about caching layers {i}\n" for i in range(20)}
    root = make_project(tmp_path / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        full = kb.search("caching layers", limit=20, max_tokens=None)
        cut = kb.search("caching layers", limit=20, max_tokens=200)
        assert len(full.results) == 20 and not full.truncated
        assert 1 <= len(cut.results) < 20 and cut.truncated
        assert "max_tokens=200 cut the list" in cut.note
    finally:
        kb.close()


def test_a_huge_query_is_cut_to_the_phrase_cap_with_a_note(kb: KnowledgeBase) -> None:
    words = " ".join(f"word{i}" for i in range(2000))  # ~10 KB
    result = kb.search(words + " guard")
    assert f"cut to its first {MAX_TERMS} distinct words" in result.note


@pytest.mark.parametrize("limit", [0, 101, -1])
def test_limit_is_bounded(kb: KnowledgeBase, limit: int) -> None:
    with pytest.raises(QueryError, match="limit"):
        kb.search("guard", limit=limit)


def test_the_ranking_sql_is_pinned() -> None:
    weights = ":w_title, :w_name, :w_description, :w_tags, :w_headings, :w_body"
    segmented = weights.replace(",", "_seg,") + "_seg"
    assert f"bm25(documents_fts, {weights}, {segmented})" in search_sql(False)
    assert "substr(d.path, 1, :prefix_len) = :prefix" in search_sql(True)


@settings(max_examples=300, deadline=None)
@given(query=st.text(min_size=1), text=st.text(max_size=2000))
def test_any_query_gives_a_snippet_pattern_that_runs_on_any_text(query: str, text: str) -> None:
    try:
        compiled = compile_query(query)
    except QueryError:
        return
    snippet = snippet_window(text, marker(compiled.terms), "fallback")
    assert isinstance(snippet, str) and len(snippet) <= 2 * SNIPPET_CHARS + 100


def test_snippets_mark_other_forms_of_the_query_words() -> None:
    text = "Before the rollout. We deployed it, then the deployment was checked."
    snippet = snippet_window(text, marker(("deploy",)), "t")
    assert "**deployed**" in snippet and "**deployment**" in snippet


class _FixedDense:
    """A dense ranking (no model) of every page: the cosines given, the other pages far below
    (0.15 and less), as a sentence model scores a question against pages off its topic."""

    languages: frozenset[str] | None = None

    def __init__(
        self,
        kb: KnowledgeBase,
        cosines: dict[str, float],
        at: dict[str, int] | None = None,
        windows: dict[str, dict[int, float]] | None = None,
    ) -> None:
        """`at`: where a page's best vector's text starts (0 when not given); `windows`: a page's
        passage windows (where each one's text starts -> its cosine), else the one at `at`."""
        ids = dict(kb.store.reader().execute("SELECT path, id FROM documents ORDER BY path"))
        rest = {path: 0.15 - 0.001 * rank for rank, path in enumerate(p for p in ids if p not in cosines)}
        ranked = sorted({**cosines, **rest}.items(), key=lambda item: -item[1])
        self._ranking = [(ids[path], cosine, (at or {}).get(path, 0)) for path, cosine in ranked]
        self._windows = {ids[path]: [(at[path], cosines[path])] for path in (at or {})}
        self._windows |= {ids[path]: list(found.items()) for path, found in (windows or {}).items()}
        self.headings: dict[str, float] = {}
        """A passage heading's text (a part of it) -> its cosine (`text_cosines`)."""
        self.looked: list[list[str]] = []
        """The texts each `text_cosines` call was given."""

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]:
        return self._ranking[:limit]

    def passage_cosines(self, query: str, doc_ids: list[int]) -> dict[int, list[tuple[int, float]]]:
        return {doc_id: self._windows[doc_id] for doc_id in doc_ids if doc_id in self._windows}

    def text_cosines(self, query: str, texts: list[str]) -> list[float]:
        """Each text's cosine: that of the first of `headings`' keys it holds, else 0."""
        self.looked.append(texts)
        return [next((c for key, c in self.headings.items() if key in text), 0.0) for text in texts]


MIXED_PAGES = {
    "deploy.md": "# 部署指南\n\n部署 the service: when a container has no network, do I restart it?\n",
    "other.md": "# 其他\n\n无关的页面: nothing about containers.\n",
    **{f"notes/topic{i}.md": f"# Topic {i}\n\nNotes on subject {i} and its history.\n" for i in range(6)},
}


@pytest.mark.parametrize(
    ("languages", "query", "fused"),
    [
        (frozenset({"en"}), "部署 指南", False),
        (frozenset({"en"}), "部署container指南", False),  # mostly Chinese: a Han character weighs 3 letters
        (frozenset({"en"}), "запустить сервис", False),
        # Latin script: taken as English, "no" and "do" (Portuguese function words) included
        (frozenset({"en"}), "container has no network, do I restart", True),
        (frozenset({"en"}), "部署 the service container", True),  # mostly English
        (frozenset({"en"}), "IL-1β network restart", True),  # a Greek letter in an English name
        (None, "部署 指南", True),  # a model whose languages are not known reads every query
        (frozenset({"zh", "en"}), "部署 指南", True),
    ],
)
def test_a_query_in_a_script_the_model_was_not_trained_on_is_ranked_by_its_words(
    tmp_path: Path, languages: frozenset[str] | None, query: str, fused: bool
) -> None:
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", MIXED_PAGES)))
    try:
        kb.scan()
        dense = _FixedDense(kb, {"other.md": 0.9, "deploy.md": 0.2})
        dense.languages = languages
        alone = [(hit.path, hit.score) for hit in search(kb.store, kb.registry, query).results]
        both = [(hit.path, hit.score) for hit in search(kb.store, kb.registry, query, dense=dense).results]
        assert (both != alone) is fused
    finally:
        kb.close()


def test_a_query_of_keywords_gives_its_words_a_larger_share_of_the_fusion(tmp_path: Path) -> None:
    """Vectors rank a few keywords worse than a sentence (docs/adr/0062): BM25 weighs 0.6 for
    them, 0.5 for a sentence; a benchmark's own weight overrides both."""
    assert compile_query("container network restart").keywords
    assert not compile_query("how do I restart the network of a container").keywords
    assert fusion.lexical_share(True, None) == fusion.KEYWORDS_LEXICAL_WEIGHT == 0.6
    assert fusion.lexical_share(False, None) == fusion.LEXICAL_WEIGHT == 0.5
    assert fusion.lexical_share(True, 0.3) == 0.3
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", MIXED_PAGES)))
    try:
        kb.scan()
        dense = _FixedDense(kb, {"other.md": 0.9, "deploy.md": 0.2})

        def scored(query: str, weight: float | None) -> list[tuple[str, float]]:
            found = search(kb.store, kb.registry, query, dense=dense, lexical_weight=weight).results
            return [(hit.path, hit.score) for hit in found]

        keywords = "container network restart"
        assert scored(keywords, None) == scored(keywords, 0.6) != scored(keywords, 0.5)
        sentence = "how do I restart the network of a container"
        assert scored(sentence, None) == scored(sentence, 0.5) != scored(sentence, 0.6)
    finally:
        kb.close()


@pytest.mark.parametrize(
    ("query", "languages"),
    [
        ("用WebSocket实现实时聊天", {"zh", "ja"}),
        ("WebSocketでリアルタイムチャット", {"ja"}),
        ("netlify 계정에", {"ko"}),
        ("บังคับ การเข้ารหัส", {"th"}),
        ("ابدأ نشاطا بتحديد", {"ar", "fa", "ur", "ps", "ku", "sd", "ug"}),
        ("Deletion of αvβ8 does not result in a spontaneous inflammatory phenotype", None),
        ("Mice without IFN-γ or its receptor are resistant to EAM", None),
        ("ressourcen yaml", None),
        ("", None),
        ("1234 -- !!", None),
    ],
)
def test_the_script_most_of_a_query_is_written_in(query: str, languages: set[str] | None) -> None:
    assert mostly_written_in(query) == (None if languages is None else frozenset(languages))


API_PAGES = {
    "authentication.md": "# Authentication\n\nAn example: `httpx.DigestAuth(user, password)` answers the "
    "server's digest challenge.\n",
    "clients.md": "# Clients\n\nAn httpx client keeps connections and settings between requests, and sends "
    "credentials for you; for example a token.\n",
    "quickstart.md": "# QuickStart\n\nAn httpx example: make a request, read the response, pass credentials "
    "with auth=.\n",
    "proxies.md": "# Proxies\n\nSend httpx requests through a proxy that asks for a password, for example.\n",
    **{f"notes/topic{i}.md": f"# Topic {i}\n\nNotes on subject {i} and its history.\n" for i in range(12)},
}
"""A small API reference (and unrelated notes, so that common words weigh something in BM25)."""


@pytest.fixture
def api_kb(tmp_path: Path):
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", API_PAGES)))
    kb.scan()
    yield kb
    kb.close()


def _fused(kb: KnowledgeBase, query: str, cosines: dict[str, float]) -> list[str]:
    return [hit.path for hit in search(kb.store, kb.registry, query, dense=_FixedDense(kb, cosines)).results]


@pytest.mark.parametrize(
    "query, cosines",
    [
        # What motivated it: an identifier only one page holds (BM25's top hit leads its second by
        # half its score) while the dense ranking likes two other pages a little more. Equal-weight
        # reciprocal-rank fusion put the page second.
        ("httpx.DigestAuth example", {"proxies.md": 0.52, "quickstart.md": 0.51, "authentication.md": 0.50}),
        # the dense ranking puts it fourth, a little behind pages that share only "example"
        (
            "DigestAuth example",
            {"proxies.md": 0.55, "quickstart.md": 0.50, "clients.md": 0.48, "authentication.md": 0.45},
        ),
    ],
)
def test_fusion_keeps_a_strong_unique_bm25_hit_where_bm25_alone_puts_it(
    api_kb: KnowledgeBase, query: str, cosines: dict[str, float]
) -> None:
    lexical = [hit.path for hit in api_kb.search(query).results]
    assert lexical[0] == "authentication.md"
    assert _fused(api_kb, query, cosines)[0] == "authentication.md"


def test_fusion_lets_a_confident_dense_ranking_lead_when_bm25_is_unsure(api_kb: KnowledgeBase) -> None:
    """Not BM25 with a veto: when its top two are close and the dense ranking is sure, meaning decides."""
    query = "httpx example credentials"
    assert [hit.path for hit in api_kb.search(query).results][:2] == ["quickstart.md", "clients.md"]
    cosines = {"clients.md": 0.65, "proxies.md": 0.40, "authentication.md": 0.38, "quickstart.md": 0.36}
    assert _fused(api_kb, query, cosines)[0] == "clients.md"


FILLER = " ".join(["Further notes that say the same thing again at some length."] * 70)
HANDBOOK = (
    "# Handbook\n\nHow the team works.\n\n"
    f"## Deploys\n\nShip it with the deploy script and watch the dashboards. A release goes out on Tuesdays. "
    f"{FILLER}\n\n"
    f"## Holidays\n\nBook days off in the calendar a month ahead. {FILLER}\n\n"
    f"## Onboarding\n\nA new colleague gets a laptop and a buddy. {FILLER}\n"
)
"""Three sections each a hit can point at (the page is over sections.ANCHOR_CHARS)."""


def test_a_hybrid_hit_points_at_the_passage_its_words_and_its_vector_favour_together(
    tmp_path: Path,
) -> None:
    pages = {
        "handbook.md": HANDBOOK,
        "release.md": "# Release script\n\nThe deploy script ships a release: deploy script, release, ship.\n",
        **{f"notes/topic{i}.md": f"# Topic {i}\n\nNotes on subject {i}.\n" for i in range(6)},
    }
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", pages)))
    try:
        kb.scan()
        deploys, holidays = HANDBOOK.index("## Deploys"), HANDBOOK.index("## Holidays")
        onboarding = HANDBOOK.index("## Onboarding")

        def offset(query: str, **likes: float) -> int:
            """Where the handbook's hit points when its sections' windows score `likes`."""
            starts = {"deploys": deploys, "holidays": holidays, "onboarding": onboarding}
            windows = {starts[name] + 20: cosine for name, cosine in likes.items()}
            dense = _FixedDense(kb, {"handbook.md": 0.8, "release.md": 0.5}, windows={"handbook.md": windows})
            hits = search(kb.store, kb.registry, query, dense=dense).results
            return next(hit.offset for hit in hits if hit.path == "handbook.md")

        # "book" is in Holidays, "laptop" in Onboarding: close in words, so the vector decides
        assert offset("book a laptop", holidays=0.3, onboarding=0.7) == onboarding
        assert offset("book a laptop", holidays=0.7, onboarding=0.3) == holidays
        # one section holds the words, the vectors are unsure: the words decide
        assert offset("watch the dashboards", deploys=0.3, holidays=0.45) == deploys
        # no section holds the words: the vector decides
        assert offset("vacation", holidays=0.6, onboarding=0.3) == holidays
        bm25_alone = search(kb.store, kb.registry, "book a laptop").results
        assert next(hit.offset for hit in bm25_alone if hit.path == "handbook.md") in (holidays, onboarding)
    finally:
        kb.close()


TIMER_FILLER = " ".join(["Further remarks that say the same thing again at some length."] * 42)
CLOCK = "# Clock Class\n\nA kitchen clock with a timer.\n\n" + "\n".join(
    f"## Clock::{name}\n\n{text} {TIMER_FILLER}\n"
    for name, text in (
        ("StartTimer", "Starts a timer: it counts down and rings; a timer started again starts over."),
        ("KillTimer", "Kills the timer event set by an earlier call to StartTimer; the timer never rings."),
        ("OnTimer", "Called each time a timer rings."),
        ("SetVolume", "Sets how loud the bell is."),
        ("SetTime", "Sets the hour shown."),
    )
)
"""A reference page whose members are sections a hit can point at (over sections.ANCHOR_CHARS)."""


def test_a_plain_words_question_lands_on_the_member_it_describes_not_the_one_it_names_as_context(
    tmp_path: Path,
) -> None:
    """The question "stop a timer started with StartTimer" names StartTimer as what the asker did, and
    shares more words with its section; the section it describes is KillTimer's, which a sentence
    model finds closer. A question that asks about StartTimer keeps StartTimer's section."""
    notes = {f"notes/topic{i}.md": f"# Topic {i}\n\nNotes on subject {i}.\n" for i in range(12)}
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", {"clock.md": CLOCK, **notes})))
    try:
        kb.scan()
        start, kill = CLOCK.index("## Clock::StartTimer"), CLOCK.index("## Clock::KillTimer")
        on_timer = CLOCK.index("## Clock::OnTimer")
        likes = {start + 30: 0.3, kill + 30: 0.8, on_timer + 30: 0.3}
        dense = _FixedDense(kb, {"clock.md": 0.8}, windows={"clock.md": likes})

        def hit(query: str, ranker: _FixedDense | None = dense) -> str:
            return search(kb.store, kb.registry, query, dense=ranker).results[0].section

        question = "stop a timer that was started with StartTimer so it never rings"
        assert hit(question, None) == "Clock Class > Clock::StartTimer"  # BM25 alone: the words
        assert hit(question) == "Clock Class > Clock::KillTimer"
        # named as what is asked about: the member's section, whatever the vectors like
        assert hit("StartTimer: what happens when the timer rings") == "Clock Class > Clock::StartTimer"
    finally:
        kb.close()


@pytest.fixture
def clock_kb(tmp_path: Path):
    notes = {f"notes/topic{i}.md": f"# Topic {i}\n\nNotes on subject {i}.\n" for i in range(12)}
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", {"clock.md": CLOCK, **notes})))
    kb.scan()
    yield kb
    kb.close()


def _clock_dense(kb: KnowledgeBase, **likes: float) -> _FixedDense:
    """The clock page first, its members' windows scored `likes` (by member name)."""
    windows = {CLOCK.index(f"## Clock::{name}") + 30: cosine for name, cosine in likes.items()}
    return _FixedDense(kb, {"clock.md": 0.8}, windows={"clock.md": windows})


QUIET = "make a timer go quiet for good"
"""Shares only "timer" with the member that answers it (KillTimer) and with two that do not."""


def test_a_hybrid_hits_leading_passages_get_a_second_look_at_their_headings(
    clock_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window's vector mixes a member's summary with the rest of its section; the heading and
    summary line alone say what the member does (docs/adr/0074). Among the hit's best passages by
    words and windows, the query's likeness to their headings decides; a passage outside them
    does not get in however like its heading is."""
    dense = _clock_dense(clock_kb, StartTimer=0.5, KillTimer=0.5, OnTimer=0.5, SetVolume=0.5, SetTime=0.5)

    def section() -> str:
        return search(clock_kb.store, clock_kb.registry, QUIET, dense=dense).results[0].section

    assert section() == "Clock Class > Clock::StartTimer"  # the headings all alike: the words decide
    dense.headings = {"Kills the timer": 0.6, "Starts a timer": 0.2}
    assert section() == "Clock Class > Clock::KillTimer"
    assert all(len(texts) <= fusion.HEADING_CANDIDATES for texts in dense.looked)
    assert any("Clock::Kill Timer Kills the timer event" in text for text in dense.looked[-1])
    monkeypatch.setattr(fusion, "HEADING_WEIGHT", 0.0)
    looked = len(dense.looked)
    assert section() == "Clock Class > Clock::StartTimer"  # without the second look
    assert len(dense.looked) == looked  # and no model run
    monkeypatch.setattr(fusion, "HEADING_WEIGHT", 0.5)
    monkeypatch.setattr(fusion, "HEADING_CANDIDATES", 2)
    dense.headings = {"Sets the hour": 0.99}  # SetTime's: not among the two best by words
    assert section() != "Clock Class > Clock::SetTime"


def test_a_member_the_query_names_keeps_its_passage_against_a_stronger_vector(tmp_path: Path) -> None:
    """The dense evidence may move a hit to another passage, but not away from the member the
    query names whole: `Gadget::Stop` stays the answer to a question naming Stop."""
    filler = " ".join(["More remarks that repeat the same thing at some length."] * 100)
    page = (
        f"# Gadget Class\n\nA gadget.\n\n## Gadget::Start\n\nStarts the engine of the gadget. {filler}\n\n"
        f"## Gadget::Stop\n\nStops the engine of the gadget and shuts its fuel valve. {filler}\n\n"
        f"## Gadget::Reset\n\nResets its counters. {filler}\n"
    )
    pages = {
        "gadget.md": page,
        "engine.md": "# Engine notes\n\n"
        + "Stop the gadget engine, shut the fuel valve, pull the choke. " * 8
        + "\n",
        **{f"notes/topic{i}.md": f"# Topic {i}\n\nNotes on subject {i}.\n" for i in range(6)},
    }
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", pages)))
    try:
        kb.scan()
        start, stop = page.index("## Gadget::Start"), page.index("## Gadget::Stop")
        dense = _FixedDense(kb, {"gadget.md": 0.8, "engine.md": 0.5}, at={"gadget.md": start + 20})

        def offset(query: str) -> int:
            hits = search(kb.store, kb.registry, query, dense=dense).results
            return next(hit.offset for hit in hits if hit.path == "gadget.md")

        assert offset("Gadget Stop engine fuel valve choke") == stop  # named: the lexical passage stays
        assert offset("gadget engine") == start  # nothing named, weak lexical evidence: the vector's
    finally:
        kb.close()
