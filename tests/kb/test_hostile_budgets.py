"""Hostile PDFs and `.kbignore` files: each stage has a budget, and over it the file is skipped
(or the pattern refused) with a line that says why. The files are built here (tests/peers/hostile.py);
the figures for them are in docs/benchmarks.md (bench/hostile.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pathspec
import pypdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbkit.errors import ConfigError, DocumentRefused, KbkitError
from kbkit.kb import ignore
from kbkit.kb.formats.budget import Budget
from kbkit.kb.formats.pdf import parse_pdf
from kbkit.kb.ignore import IgnoreRules
from tests.helpers.project import SAMPLE_DOCS, make_project
from tests.helpers.serve import serve_stdio
from tests.peers.hostile import (
    backtracking_kbignore,
    backtracking_names,
    form_bomb_pdf,
    many_operators_pdf,
    repeated_form_pdf,
    text_pdf,
)
from tests.peers.launch import forked_kbkit

CLI_BOUND = 120
"""Seconds a CLI run may take before the test fails (a backtracking matcher takes hours here)."""


def run_kbkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*forked_kbkit(), *args], capture_output=True, text=True, timeout=CLI_BOUND, check=False
    )


@pytest.fixture
def pages_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the pages whose text extraction started."""
    calls: list[int] = []
    real = pypdf.PageObject.extract_text

    def counting(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", counting)
    return calls


@pytest.fixture
def operators_seen(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every content operator kbkit's budget visitor is handed, forms' own included."""
    seen: list[bytes] = []
    real = pypdf.PageObject.extract_text

    def watched(self: pypdf.PageObject, visitor_operand_before: Callable[..., None]) -> str:
        def visit(operator: bytes, *args: object) -> None:
            seen.append(operator)
            visitor_operand_before(operator, *args)

        return real(self, visitor_operand_before=visit)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", watched)
    return seen


# -- PDF --------------------------------------------------------------------------------------------


@pytest.mark.processes
def test_a_pdf_drawing_one_form_600000_times_is_skipped_with_its_reason_and_the_index_stays_small(
    tmp_path: Path,
) -> None:
    bomb = form_bomb_pdf(600_000)
    assert len(bomb) < 8 * 1024
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, "bomb.pdf": bomb})
    done = run_kbkit("index", "--root", str(root), "--skipped")
    assert done.returncode == 0, done.stderr
    assert "1 skipped (1 over-budget" in done.stdout
    assert "skipped bomb.pdf: the PDF is over kbkit's parsing budget" in done.stdout
    index = root / ".kbkit" / "index.db"
    assert sum(p.stat().st_size for p in index.parent.glob("index.db*")) < 2 * 1024 * 1024
    conn = sqlite3.connect(index)
    try:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == len(SAMPLE_DOCS)
    finally:
        conn.close()


@pytest.mark.processes
@pytest.mark.anyio
async def test_get_document_of_the_form_bomb_is_a_tool_error_and_the_session_keeps_serving(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, "bomb.pdf": form_bomb_pdf(600_000)})
    async with serve_stdio(root) as client:
        refused = await client.call_tool("get_document", {"path": "bomb.pdf"})
        assert refused.is_error
        assert "over kbkit's parsing budget" in refused.content[0].text
        found = await client.call_tool("search", {"query": "guard sequence"})
        assert found.structured_content["results"][0]["path"] == "adr/0001-guards.md"


def test_a_pdf_over_the_page_budget_is_refused_before_any_page_is_read(pages_read: list[int]) -> None:
    with pytest.raises(DocumentRefused, match="has 4 pages, over the 3-page budget") as refused:
        parse_pdf(text_pdf(["one", "two", "three", "four"]), Budget(pdf_pages=3))
    assert refused.value.reason == "over-budget"
    assert pages_read == []


def test_extraction_stops_at_the_page_that_takes_the_text_over_its_budget(pages_read: list[int]) -> None:
    with pytest.raises(DocumentRefused, match="text is over 25 characters by page 3"):
        parse_pdf(text_pdf(["0123456789"] * 6), Budget(text_chars=25))
    assert len(pages_read) == 3


def test_extraction_stops_inside_a_page_once_its_cpu_budget_is_spent(
    pages_read: list[int], operators_seen: list[bytes]
) -> None:
    with pytest.raises(DocumentRefused, match="reading the PDF took over"):
        parse_pdf(form_bomb_pdf(1_000), Budget(cpu_seconds=-1.0))  # spent before the first operator
    assert pages_read == [] and operators_seen == []
    parse_pdf(form_bomb_pdf(10), Budget(cpu_seconds=30.0))
    assert operators_seen.count(b"Do") == 10  # the budget is checked at every operator, forms included


def test_one_form_drawn_600000_times_across_120_pages_is_skipped_once_the_draw_budget_is_spent(
    pages_read: list[int],
) -> None:
    bomb = repeated_form_pdf(pages=120, draws_per_page=5_000)  # pypdf's default cap of forms per page
    assert len(bomb) < 2 * 1024
    with pytest.raises(DocumentRefused, match="draws forms or images over 10,000 times") as refused:
        parse_pdf(bomb)
    assert refused.value.reason == "over-budget"
    assert len(pages_read) == 3  # 10,000 draws are two pages' worth: stopped on the third


def test_a_form_drawn_again_counts_its_operators_again_against_the_operator_budget(
    pages_read: list[int],
) -> None:
    budget = Budget(pdf_operators=1_000)
    parse_pdf(many_operators_pdf(operators=400, draws=2), budget)  # 2 + 2 x 400 operators: within
    with pytest.raises(DocumentRefused, match="over 1,000 content operators") as refused:
        parse_pdf(many_operators_pdf(operators=400, draws=3), budget)  # 3 + 3 x 400: over, in the third draw
    assert refused.value.reason == "over-budget"
    assert len(pages_read) == 2


def test_a_form_over_the_operation_budget_is_refused_at_its_first_draw_not_parsed_again_at_each(
    operators_seen: list[bytes],
) -> None:
    with pytest.raises(DocumentRefused, match="a form in the PDF is over kbkit's parsing budget") as refused:
        parse_pdf(many_operators_pdf(operators=100_000, draws=20))  # 300,000 tokens: over 250,000
    assert refused.value.reason == "over-budget"
    assert operators_seen.count(b"Do") == 1  # refused at the first draw: not parsed again at each


def test_pdfs_within_every_budget_are_read_whole() -> None:
    lines = [f"page {n} of the runbook" for n in range(40)]
    parsed = parse_pdf(text_pdf(lines))
    assert parsed.body.split("\n\n") == lines


# -- .kbignore --------------------------------------------------------------------------------------


@pytest.mark.processes
def test_a_backtracking_kbignore_pattern_over_3000_files_is_matched_in_linear_time(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {name: "# a\n" for name in backtracking_names(3000)}
    files[("a" * 20) + "b.md"] = "# matched by the pattern\n"
    files[".kbignore"] = backtracking_kbignore(stars=15)
    root = make_project(tmp_path / "p", files)
    done = run_kbkit("index", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("index: 3000 documents (3000 added")


@pytest.mark.processes
def test_too_many_patterns_are_refused_with_one_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", SAMPLE_DOCS)
    (root / "docs" / ".kbignore").write_text("# generated\n" + "".join(f"f{n}.md\n" for n in range(1001)))
    done = run_kbkit("index", "--root", str(root))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"kbkit: error: {root.resolve() / 'docs' / '.kbignore'}: 1001 patterns, over the 1000-pattern limit; "
        "ignore whole folders rather than many files"
    ]


def test_a_pattern_over_the_length_limit_is_refused_naming_its_line(tmp_path: Path) -> None:
    long = "**/" + "a*" * 200 + "b"
    with pytest.raises(ConfigError, match=r"^line 3: the pattern '\*\*/a\*a\*.*' is 404 characters, over"):
        IgnoreRules((), ["drafts/", "# a comment", long])


def test_a_kbignore_over_its_size_budget_is_refused_unread(tmp_path: Path) -> None:
    kb = tmp_path / "docs"
    kb.mkdir()
    with open(kb / ".kbignore", "wb") as handle:
        handle.truncate(ignore.MAX_FILE_BYTES + 1)
    with pytest.raises(KbkitError, match="kbkit reads files of at most 262,144 bytes here"):
        IgnoreRules.load(kb, ())


def test_a_kbignore_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    kb = tmp_path / "docs"
    kb.mkdir()
    os.mkfifo(kb / ".kbignore")  # opening it for reading would wait for a writer forever
    with pytest.raises(KbkitError, match=r"\.kbignore"):
        IgnoreRules.load(kb, ())


def test_patterns_that_are_too_complex_together_are_refused_not_half_applied() -> None:
    lines = [
        f"**/x{n}" + "a*" * 120 + "b" for n in range(400)
    ]  # each within bounds; together over RE2's memory
    with pytest.raises(ConfigError, match="too many or too complex"):
        IgnoreRules((), lines)


segments = st.lists(st.sampled_from(["a", "b", "*", "?", "[ab]", "[!a]", "-"]), min_size=1, max_size=4).map(
    "".join
)
patterns = st.builds(
    lambda lead, parts, trail: ("/" if lead else "") + "/".join(parts) + trail,
    st.booleans(),
    st.lists(st.one_of(segments, st.just("**")), min_size=1, max_size=3),
    st.sampled_from(["", "/"]),
)
paths = st.lists(st.text(alphabet="ab-", min_size=1, max_size=4), min_size=1, max_size=4).map("/".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(patterns, min_size=1, max_size=4), st.lists(paths, min_size=1, max_size=5))
def test_the_linear_time_matcher_matches_what_the_backtracking_one_matched(
    lines: list[str], files: list[str]
) -> None:
    """RE2 runs the same translated patterns as Python's engine did, without its exponential cases.
    (Negations are left out: there the two differ in pathspec's own tie-breaking, and RE2's side is
    the one that agrees with git.)"""
    reference = pathspec.GitIgnoreSpec.from_lines(lines, backend="simple")
    rules = IgnoreRules((), lines)
    for path in files:
        assert rules.skips_file(path) == reference.match_file(path), (lines, path)
        assert rules.skips_dir(path, path.rsplit("/", 1)[-1]) == reference.match_file(path + "/")
