"""Bad input never kills the server: damaged files, garbage queries, wrong arguments, forged cursors.

Most tests drive `kbkit serve` with the real `mcp` client and end by checking the same session
still answers a normal search. The query compiler and `KnowledgeBase.search` are also fuzzed with
hypothesis at the library level, against a real FTS5 table.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import sqlite3
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import anyio
import pypdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from kbkit.config import load_settings
from kbkit.errors import QueryError
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import MAX_LIMIT, MAX_TERMS, compile_query
from kbkit.kb.uris import doc_uri
from tests.helpers.project import SAMPLE_DOCS, make_project
from tests.helpers.serve import ERAS, document_text, serve_in_memory, serve_stdio
from tests.peers.launch import forked_kbkit

SESSION_BOUND = 60
"""Seconds a whole server session may take; a hang fails the test instead of stalling the run."""
CLI_BOUND = 30


def pdf_bytes(*, encrypted: bool = False) -> bytes:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(200, 200)
    if encrypted:
        writer.encrypt(user_password="pw", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def damaged_files() -> dict[str, bytes]:
    real = pdf_bytes()
    return {
        "corrupt.pdf": random.Random(1234).randbytes(8192),
        "truncated.pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R",
        "half.pdf": real[: len(real) // 2],
        "encrypted.pdf": pdf_bytes(encrypted=True),
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "latin1.md": "# Café\n\nrésumé, naïve\n".encode("latin-1"),
        "utf16.txt": "hello in UTF-16".encode("utf-16")[:-1],  # a byte-order mark, then half a character
    }


DAMAGED = {
    "corrupt.pdf": ("unparsable", "PDF could not be read"),
    "truncated.pdf": ("unparsable", "PDF could not be read"),
    "half.pdf": ("unparsable", "PDF could not be read"),
    "encrypted.pdf": ("unparsable", "encrypted"),
    "binary.md": ("undecodable", "binary data"),
    "latin1.md": ("undecodable", "not valid UTF-8"),
    "utf16.txt": ("undecodable", "not valid UTF-16"),
}
"""Each damaged file: the reason code the index records and what get_document says."""


def skipped_rows(root: Path) -> dict[str, tuple[str, str]]:
    conn = sqlite3.connect(root / ".kbkit" / "index.db")
    try:
        rows = conn.execute("SELECT path, reason_code, reason FROM skipped")
        return {path: (code, reason) for path, code, reason in rows}
    finally:
        conn.close()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*forked_kbkit(), *args], capture_output=True, text=True, timeout=CLI_BOUND, check=False
    )


async def assert_still_searching(client: Client) -> None:
    result = await client.call_tool("search", {"query": "How does the guard sequence work?"})
    assert not result.is_error, result.content
    assert result.structured_content["results"][0]["path"] == "adr/0001-guards.md"


# --- damaged files ---------------------------------------------------------------------------------


@pytest.mark.processes
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_damaged_files_are_skipped_with_a_reason_and_the_session_keeps_serving(
    tmp_path: Path, mode: str
) -> None:
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, **damaged_files()})
    log = tmp_path / "stderr.log"
    with anyio.fail_after(SESSION_BOUND):
        async with serve_stdio(root, mode, stderr_path=log) as client:
            for path, (_, says) in DAMAGED.items():
                result = await client.call_tool("get_document", {"path": path})
                assert result.is_error, path
                assert says in result.content[0].text, (path, result.content[0].text)
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(doc_uri(path))
                assert refused.value.code == -32602
            listed = {r.uri for r in (await client.list_resources()).resources}
            assert listed == {doc_uri(path) for path in SAMPLE_DOCS}
            await assert_still_searching(client)
    assert f"{len(DAMAGED)} skipped (" in log.read_text()
    rows = skipped_rows(root)
    assert {path: code for path, (code, _) in rows.items()} == {p: code for p, (code, _) in DAMAGED.items()}
    for path, (_, says) in DAMAGED.items():
        assert says in rows[path][1]
    listing = run_cli("index", "--root", str(root), "--skipped")
    assert listing.returncode == 0, listing.stderr
    for path, (_, says) in DAMAGED.items():
        line = next(
            line for line in listing.stdout.splitlines() if line.strip().startswith(f"skipped {path}:")
        )
        assert says in line


@pytest.mark.anyio
async def test_a_zero_byte_document_is_an_empty_document_not_a_failure(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, "empty.md": b"", "blank.txt": b""})
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(root) as client:
            for path in ("empty.md", "blank.txt"):
                result = await client.call_tool("get_document", {"path": path})
                assert not result.is_error, result.content
                assert document_text(result) == ""
                assert result.structured_content["size"] == 0
                read = await client.read_resource(doc_uri(path))
                assert read.contents[0].text == ""
            await assert_still_searching(client)
    assert "empty.md" not in skipped_rows(root)


def write_badly_named_files(docs: Path) -> None:
    """Names that are not UTF-8: legal on Linux, unencodable as text (Python hands them over as surrogates)."""
    base = os.fsencode(docs)
    with open(base + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# Cafe\n\nlatin-1 name\n")
    os.mkdir(base + b"/bad\xffdir")
    with open(base + b"/bad\xffdir/inner.md", "wb") as handle:
        handle.write(b"# Inner\n\nunder a latin-1 folder\n")


def test_a_scan_over_files_whose_names_are_not_utf8_does_not_raise(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_badly_named_files(root / "docs")
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        assert report.documents == len(SAMPLE_DOCS)
        assert {d.path for d in kb.list_servable()} == set(SAMPLE_DOCS)
    finally:
        kb.close()


@pytest.mark.processes
@pytest.mark.anyio
async def test_the_server_starts_and_serves_when_the_kb_holds_files_whose_names_are_not_utf8(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_badly_named_files(root / "docs")
    with anyio.fail_after(SESSION_BOUND):
        async with serve_stdio(root) as client:
            listed = {r.uri for r in (await client.list_resources()).resources}
            assert listed == {doc_uri(path) for path in SAMPLE_DOCS}
            await assert_still_searching(client)


@pytest.mark.parametrize(
    "body",
    [
        "# a" + " " * 4000 + "x\n",
        "".join("`" * width + "\n" for width in range(3000, 2, -1)),
    ],
    ids=["heading-line-of-spaces", "unclosed-fences-of-shrinking-width"],
)
@pytest.mark.processes
def test_pathological_markdown_is_indexed_in_bounded_time(tmp_path: Path, body: str) -> None:
    """One small hostile Markdown file must not stall the indexer (and so the server's boot)."""
    import threading

    from kbkit.kb.formats.markdown import parse_markdown

    # the parser alone, in this process (milliseconds when linear), so the bound excludes start-up
    parser = threading.Thread(target=parse_markdown, args=(body.encode(),), daemon=True)
    parser.start()
    parser.join(timeout=5)
    if parser.is_alive():
        pytest.fail("parsing one hostile Markdown file took over 5 s (regex backtracking in the parser)")
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, "hostile.md": body})
    done = subprocess.run(
        [*forked_kbkit(), "index", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"{len(SAMPLE_DOCS) + 1} documents" in done.stdout


def test_hostile_front_matter_is_kept_as_text_and_never_executed(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    bomb = "".join(
        f"{n}: &{n} [{', '.join(['*' + prev] * 9)}]\n" for prev, n in zip("abcdefg", "bcdefgh", strict=True)
    )
    files = {
        "tag.md": f"---\ntitle: !!python/object/apply:os.system ['touch {canary}']\n---\n# Tagged\n\nbody\n",
        "bomb.md": "---\na: &a [x, x, x, x, x, x, x, x, x]\n" + bomb + "title: *h\n---\n# Bomb\n\nbody\n",
        "deep.md": "---\ntitle: " + "[" * 5000 + "]" * 5000 + "\n---\n# Deep\n\nbody\n",
        "broken.md": "---\ntitle: [unclosed\n---\n# Broken\n\nbody\n",
        "dict.md": "---\ntitle: {a: 1}\n---\n# Dict\n\nbody\n",
    }
    root = make_project(tmp_path / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        report = kb.scan()
        assert report.documents == len(files) and report.skipped == 0
        titles = {d.path: d.title for d in kb.list_servable()}
        assert titles == {
            "tag.md": "Tagged",
            "bomb.md": "Bomb",
            "deep.md": "Deep",
            "broken.md": "Broken",
            "dict.md": "Dict",
        }
        assert "[unclosed" in kb.load("broken.md").text
    finally:
        kb.close()
    assert not canary.exists()


# --- garbage queries -------------------------------------------------------------------------------

FINDS_THE_GUARDS_DOC = [
    "guard*",
    "^guard",
    "title:guard",
    "body:guard",
    '"guard sequence"',
    '"unbalanced guard',
    "((guard",
    "guard))",
    "guard AND",
    "NEAR(guard sequence, 2)",
    "-guard +sequence",
    "{title body}: guard",
    "guard' OR '1'='1",
    "guard\x00sequence",
    "\x07guard\x1b[0m",
    "🔥 guard 🔥",
    "GUARD",
    "gúärd",
]

ANSWERED = [
    "AND OR NOT NEAR",
    "NOT",
    "the and of",
    "SELECT * FROM documents; --",
    "\x1b[31mred\x1b[0m",
    "知识库",
    "ÅNGSTRÖM café",
    "a" * 5000,
]

REFUSED = [
    "",
    " ",
    "\t\n",
    "!!!",
    "?!.,;:()[]{}<>",
    '"',
    "'",
    '""',
    "*",
    "^",
    "()",
    "🔥🔥",
    "\x00\x01\x02\x7f",
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_garbage_queries_get_results_or_a_tool_error_never_a_protocol_error(
    tmp_path: Path, mode: str
) -> None:
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, "cjk.md": "# 知识库\n\n团队的文档。\n"})
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(root, mode) as client:
            for query in FINDS_THE_GUARDS_DOC:
                result = await client.call_tool("search", {"query": query})
                assert not result.is_error, (query, result.content)
                assert result.structured_content["results"][0]["path"] == "adr/0001-guards.md", query
            for query in ANSWERED:
                result = await client.call_tool("search", {"query": query})
                assert not result.is_error, (query, result.content)
                assert isinstance(result.structured_content["results"], list)
            cjk = await client.call_tool("search", {"query": "知识库"})
            assert cjk.structured_content["results"][0]["path"] == "cjk.md"
            for query in REFUSED:
                result = await client.call_tool("search", {"query": query})
                assert result.is_error, query
                assert "query" in result.content[0].text
            await assert_still_searching(client)


@pytest.mark.anyio
async def test_a_long_query_is_answered_and_its_note_says_it_was_cut(tmp_path: Path) -> None:
    long_query = "guard " + " ".join(f"term{i}" for i in range(2000))
    huge_query = "guard sequence " * 20_000
    assert len(long_query) > 10_000 and len(huge_query) > 250_000
    root = make_project(tmp_path / "p")
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(root) as client:
            result = await client.call_tool("search", {"query": long_query})
            assert not result.is_error, result.content
            data = result.structured_content
            assert data["results"][0]["path"] == "adr/0001-guards.md"
            assert f"cut to its first {MAX_TERMS} distinct words" in data["note"]
            huge = await client.call_tool("search", {"query": huge_query})
            assert not huge.is_error
            assert huge.structured_content["results"][0]["path"] == "adr/0001-guards.md"
            await assert_still_searching(client)


# --- invalid arguments and cursors -----------------------------------------------------------------

BAD_ARGUMENTS = [
    ("search", {"query": "guard", "limit": 0}, "limit"),
    ("search", {"query": "guard", "limit": MAX_LIMIT + 1}, "limit"),
    ("search", {"query": "guard", "limit": 1000}, "limit"),
    ("search", {"query": "guard", "limit": -1}, "limit"),
    ("search", {"query": "guard", "limit": 10**30}, "limit"),
    ("search", {"query": "guard", "limit": 2.5}, "limit"),
    ("search", {"query": "guard", "limit": None}, "limit"),
    ("search", {"query": "guard", "limit": [5]}, "limit"),
    ("search", {"query": "guard", "max_tokens": 0}, "max_tokens"),
    ("search", {"query": "guard", "max_tokens": "lots"}, "max_tokens"),
    ("search", {"query": "guard", "path_prefix": 5}, "path_prefix"),
    ("search", {"query": "guard", "bogus": 1}, "bogus"),
    ("search", {"query": 123}, "query"),
    ("search", {"query": None}, "query"),
    ("search", {"query": ["guard"]}, "query"),
    ("search", {"query": {"text": "guard"}}, "query"),
    ("search", {"q": "guard"}, "query"),
    ("search", {}, "query"),
    ("search", None, "query"),
    ("get_document", {}, "path"),
    ("get_document", {"path": 5}, "path"),
    ("get_document", {"path": None}, "path"),
    ("get_document", {"path": ["notes.txt"]}, "path"),
    ("get_document", {"file": "notes.txt"}, "file"),
    ("get_document", {"path": "notes.txt", "offset": -1}, "offset"),
    ("get_document", {"path": "notes.txt", "offset": "x"}, "offset"),
    ("get_document", {"path": "notes.txt", "offset": 1.5}, "offset"),
    ("get_document", {"path": "notes.txt", "mode": "raw"}, "mode"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_invalid_tool_arguments_come_back_as_tool_errors_naming_the_argument(
    project: Path, mode: str
) -> None:
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(project, mode) as client:
            for tool, arguments, names in BAD_ARGUMENTS:
                result = await client.call_tool(tool, arguments)
                assert result.is_error, (tool, arguments)
                text = result.content[0].text
                assert f"invalid arguments for {tool}" in text, (arguments, text)
                assert names in text, (arguments, text)
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("delete_everything", {"path": "notes.txt"})
            assert unknown.value.code == -32602
            await assert_still_searching(client)


@pytest.mark.anyio
async def test_arguments_of_the_wrong_json_type_are_refused_not_coerced(project: Path) -> None:
    """The declared schema says integer/string; `true` and `"5"` are neither (search() itself refuses bools)."""
    wrong_types = [
        ("search", {"query": "guard", "limit": True}),
        ("search", {"query": "guard", "limit": "5"}),
        ("search", {"query": "guard", "max_tokens": "4000"}),
        ("get_document", {"path": "notes.txt", "offset": "0"}),
        ("get_document", {"path": "notes.txt", "offset": False}),
    ]
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(project) as client:
            coerced = []
            for tool, arguments in wrong_types:
                result = await client.call_tool(tool, arguments)
                if not result.is_error:
                    coerced.append((tool, arguments))
                else:
                    assert f"invalid arguments for {tool}" in result.content[0].text
            await assert_still_searching(client)
    assert coerced == [], f"accepted despite the declared schema: {coerced}"


def cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


BAD_CURSORS = [
    "not-a-cursor",
    "!!!",
    "é",
    "x" * 100_000,
    cursor(b"not json"),
    cursor(b"\xff\xfe\x00"),
    cursor(b'{"after": 5}'),
    cursor(b'{"after": null}'),
    cursor(b'{"before": "a"}'),
    cursor(b"{}"),
    cursor(b"[1]"),
    cursor(b'"after"'),
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_an_invalid_resources_list_cursor_is_invalid_params(project: Path, mode: str) -> None:
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(project, mode) as client:
            for bad in BAD_CURSORS:
                with pytest.raises(MCPError) as refused:
                    await client.list_resources(cursor=bad)
                assert refused.value.code == -32602, bad[:40]
                assert "invalid cursor" in refused.value.message
            assert len((await client.list_resources()).resources) == len(SAMPLE_DOCS)
            await assert_still_searching(client)


@pytest.mark.anyio
async def test_a_forged_cursor_holding_unencodable_or_deeply_nested_json_is_invalid_params(
    project: Path,
) -> None:
    forged = {
        "lone surrogate": cursor(b'{"after": "\\ud800"}'),  # valid JSON, but no UTF-8 for SQLite
        "nested arrays": cursor(b"[" * 100_000 + b"]" * 100_000),  # past the decoder's recursion limit
        "nested objects": cursor(b'{"after": ' * 50_000 + b'"a"' + b"}" * 50_000),
    }
    codes = {}
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(project) as client:
            for label, bad in forged.items():
                with pytest.raises(MCPError) as refused:
                    await client.list_resources(cursor=bad)
                codes[label] = (refused.value.code, refused.value.message[:80])
            await assert_still_searching(client)
    assert {label: code for label, (code, _) in codes.items()} == dict.fromkeys(forged, -32602), codes


# --- library level: the query compiler and search, fuzzed -----------------------------------------

FTS5_SYNTAX = st.sampled_from(
    [
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(",
        "*",
        "^",
        '"',
        "'",
        "(",
        ")",
        ":",
        "title:",
        "body:guard",
        "{title body}:",
        "-",
        "+",
        '""',
        "\\",
        "\x00",
        "_",
        "ö",
        "a\u0301",
        "知识",
        "🙂",
        "Ⅷ",
        "²",
        "ﬁ",
        "İ",
    ]
)
QUERY_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=())),  # anything, lone surrogates included
    st.lists(st.one_of(FTS5_SYNTAX, st.text(max_size=8)), max_size=16).map(" ".join),
    st.lists(FTS5_SYNTAX, max_size=16).map("".join),
)


@cache
def fts5_table() -> sqlite3.Connection:
    """An FTS5 table tokenized exactly as the index is."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(title, headings, body, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO t VALUES ('One guard sequence', 'Guards', 'every read goes through it')")
    return conn


@settings(max_examples=400, deadline=None)
@given(text=QUERY_TEXT)
def test_compile_query_refuses_or_yields_an_expression_that_fts5_match_accepts(text: str) -> None:
    try:
        compiled = compile_query(text)
    except QueryError:
        return
    assert 1 <= len(compiled.terms) <= MAX_TERMS
    fts5_table().execute("SELECT rowid FROM t WHERE t MATCH ?", (compiled.match,)).fetchall()


def test_raw_user_text_would_break_fts5_so_the_compiler_is_what_keeps_it_safe() -> None:
    """The control for the property above: these strings are FTS5 syntax errors when passed as is."""
    for text in ['"unbalanced', "((guard", "guard AND", "NEAR(", "title:", "-guard", "guard^"]:
        with pytest.raises(sqlite3.OperationalError):
            fts5_table().execute("SELECT rowid FROM t WHERE t MATCH ?", (text,)).fetchall()
        compiled = compile_query(text)
        fts5_table().execute("SELECT rowid FROM t WHERE t MATCH ?", (compiled.match,)).fetchall()


@pytest.fixture(scope="module")
def search_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    files = {
        **SAMPLE_DOCS,
        "cjk.md": "# 知识库\n\n团队的文档。\n",
        "accents.md": "# Ångström\n\nnaïve café\n",
    }
    root = make_project(tmp_path_factory.mktemp("fuzz") / "p", files)
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    yield kb
    kb.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=QUERY_TEXT,
    limit=st.one_of(st.integers(-5, MAX_LIMIT + 50), st.booleans()),
    prefix=st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["adr", "adr/", "/guide", "x", ""])),
    max_tokens=st.one_of(st.none(), st.integers(-10, 20_000)),
)
def test_search_never_raises_anything_but_query_error(
    search_kb: KnowledgeBase, query: str, limit: int, prefix: str | None, max_tokens: int | None
) -> None:
    try:
        result = search_kb.search(query, limit=limit, path_prefix=prefix, max_tokens=max_tokens)
    except QueryError:
        return
    assert 1 <= limit <= MAX_LIMIT and not isinstance(limit, bool)
    assert len(result.results) <= limit
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("prefix", ["\ud800", "adr/\udce9"])
def test_search_with_a_path_prefix_that_is_not_valid_unicode_refuses_or_finds_nothing(
    search_kb: KnowledgeBase, prefix: str
) -> None:
    try:
        result = search_kb.search("guard", path_prefix=prefix)
    except QueryError:
        return
    assert result.results == []
