"""What search looks at besides the body (file names, front matter), how it folds copies of a page,
and what its scores say."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.fields import MAX_REFERENCES, lead, link_key, name_words, reference_keys, references
from kbkit.kb.schema import REREAD, RESEGMENTED, SCHEMA_VERSION
from tests.helpers.project import make_project
from tests.peers.launch import forked_kbkit

FILLER = "\n\nSome unrelated words about meetings, lunch and the office plants.\n"


@pytest.fixture
def open_kb(tmp_path: Path):
    opened: list[KnowledgeBase] = []

    def factory(files: dict[str, str]) -> KnowledgeBase:
        root = make_project(tmp_path / f"p{len(opened)}", files)
        kb = KnowledgeBase.open(load_settings(root))
        kb.scan()
        opened.append(kb)
        return kb

    yield factory
    for kb in opened:
        kb.close()


def paths(kb: KnowledgeBase, query: str) -> list[str]:
    return [hit.path for hit in kb.search(query).results]


def test_file_name_words_are_searched(open_kb) -> None:
    kb = open_kb(
        {
            "runbooks/rotate-api-key.md": "# Credentials\n\nCreate a new secret and revoke the old one.\n",
            "runbooks/backup.md": "# Backups\n\nCopy the database every night." + FILLER,
        }
    )
    assert paths(kb, "rotate api key") == ["runbooks/rotate-api-key.md"]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("runbooks/rotate-api-key.md", "rotate api key"),
        ("a/snake_case_name.rst", "snake case name"),
        ("getHTTPClient.md", "getHTTPClient get HTTP Client"),
        ("mkfs.ext4.md", "mkfs ext4"),
        ("README", "README"),
    ],
)
def test_file_names_split_on_dashes_underscores_dots_and_case_changes(name: str, words: str) -> None:
    assert name_words(name) == words


def test_front_matter_description_is_searched(open_kb) -> None:
    kb = open_kb(
        {
            "a.md": "---\ntitle: Incident process\ndescription: what to do when production is down\n---\n"
            "# Incident process\n\nPage the on-call engineer." + FILLER,
            "b.md": "# Other\n\nNothing to see here." + FILLER,
        }
    )
    assert paths(kb, "production down") == ["a.md"]


@pytest.mark.parametrize(
    "front_matter",
    ["tags: [postgres, failover]", "tags:\n  - postgres\n  - failover", "keywords: postgres, failover"],
)
def test_front_matter_tags_and_keywords_are_searched(open_kb, front_matter: str) -> None:
    kb = open_kb(
        {
            "db.md": f"---\n{front_matter}\n---\n# Database notes\n\nReplicas and backups." + FILLER,
            "web.md": "# Web notes\n\nReplicas and caches." + FILLER,
        }
    )
    assert paths(kb, "failover") == ["db.md"]


def test_the_opening_prose_stands_in_for_a_missing_description() -> None:
    assert (
        lead("# df\n\n> Display free disk space.\n\n- Example:\n") == "> Display free disk space. - Example:"
    )


def test_copies_of_a_page_in_other_folders_are_folded_into_the_best_one(open_kb) -> None:
    page = (
        "# df\n\n> Display free disk space of file systems, mounted or not, as a table of sizes.\n\n"
        "- Show every file system with sizes in human units:\n\n`df -h`\n\n"
        "- Show the file system holding a given path and its free space:\n\n`df {path}`\n\n"
        "- Show inodes instead of blocks, one line per mounted file system:\n\n`df -i`\n\n"
        "- Leave out the file systems of a given type from the table:\n\n`df -x squashfs`\n"
    )
    kb = open_kb(
        {
            "common/df.md": page.format(path="path/to/file"),
            "linux/df.md": page.format(path="path/to/dir"),
            "osx/df.md": page.format(path="path/to/folder"),
            "common/du.md": "# du\n\n> Disk usage of folders and files.\n",
        }
    )
    result = kb.search("free disk space")
    assert [hit.path for hit in result.results][1:] == ["common/du.md"]
    copies = {result.results[0].path, *result.results[0].folded}
    assert copies == {"common/df.md", "linux/df.md", "osx/df.md"}
    assert "2 near-copies" in result.note
    assert result.to_dict()["results"][0]["folded"] == result.results[0].folded
    assert "folded" not in result.to_dict()["results"][1]


def test_pages_sharing_a_file_name_and_title_but_not_their_text_are_separate_hits(open_kb) -> None:
    kb = open_kb(
        {
            "go/getting-started.md": "# Getting started\n\nInstall the SDK with `go get example.com/sdk`, "
            "then create a client with sdk.NewClient and a context.\n",
            "rust/getting-started.md": "# Getting started\n\nAdd the crate with `cargo add example-sdk`, "
            "then build a client with Client::builder() in an async main.\n",
            "ref/settings.txt": "Settings\n========\n\nEvery setting of the client and its default.\n",
            "topics/settings.txt": "Settings\n========\n\nHow to choose settings for a client in production.\n",
        }
    )
    started = kb.search("getting started", path_prefix="").results
    assert sorted(hit.path for hit in started) == ["go/getting-started.md", "rust/getting-started.md"]
    assert not any(hit.folded for hit in started)
    settings = kb.search("settings client").results
    assert {"ref/settings.txt", "topics/settings.txt"} <= {hit.path for hit in settings}


def test_pages_alike_at_the_start_but_not_at_the_end_are_separate_hits(open_kb) -> None:
    opening = "# Sampling\n\n" + "Traces are sampled at the head of each request by the SDK. " * 80
    kb = open_kb(
        {
            "go/sampling.md": opening + "\n\n" + "Go: set sdktrace.WithSampler on the provider. " * 80,
            "java/sampling.md": opening
            + "\n\n"
            + "Java: call setSampler on SdkTracerProvider builder. " * 80,
        }
    )
    hits = kb.search("sampled head request").results
    assert sorted(hit.path for hit in hits) == ["go/sampling.md", "java/sampling.md"]


def test_identical_files_under_different_names_are_folded(open_kb) -> None:
    text = "# Release steps\n\nTag the release, build the wheel, publish it.\n"
    kb = open_kb(
        {"release.md": text, "old/release-process.md": text, "other.md": "# Other\n\npublish notes\n"}
    )
    hits = kb.search("release wheel").results
    assert len(hits) == 1
    assert {hits[0].path, *hits[0].folded} == {"release.md", "old/release-process.md"}


def test_pages_sharing_only_a_file_name_are_not_folded(open_kb) -> None:
    kb = open_kb(
        {
            "api/index.md": "# API overview\n\nEndpoints for billing.\n",
            "guide/index.md": "# Guide overview\n\nBilling for beginners.\n",
        }
    )
    assert len(kb.search("billing overview").results) == 2


def test_scores_are_relative_to_the_best_hit_even_on_a_tiny_corpus(open_kb) -> None:
    kb = open_kb(
        {
            "rollback.md": "# Rollback\n\nHow to roll back a release: rollback steps.\n",
            "misc.md": "# Misc\n\nA long page that mentions rollback once." + FILLER * 5,
        }
    )
    scores = [hit.score for hit in kb.search("rollback").results]
    assert scores[0] == 1.0
    assert 0 < scores[1] < 1.0


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("See also: `chmod`, `chgrp`.", {"chmod", "chgrp"}),
        ("Run `sudo chown user file` first.", set()),  # a command line, not a name
        (
            "[steps](../runbooks/Rotate-API-Key.md#revoke) and [home](./index.md?x=1)",
            {"runbooks/rotate-api-key", "/pages"},  # by folder and name; an index file is its folder
        ),
        ("[site](https://example.com/chmod.html), [mail](mailto:a@b.c)", set()),  # outside the kb
        ("I am `chown` and I mention `chown` and `CHOWN`.", set()),  # its own name
    ],
)
def test_references_are_name_code_spans_and_relative_link_targets(text: str, names: set[str]) -> None:
    assert references("pages/chown.md", text) == names


@pytest.mark.parametrize(
    ("path", "target", "key"),
    [
        ("docs/a/b.md", "c.md", "a/c"),  # beside the linking file
        ("docs/a/b.md", "../x/y.md#part", "x/y"),
        ("docs/a/b.md", "../x/_index.md", "docs/x"),  # an index file stands for its folder
        ("docs/a/b.md", "../y/", "a/y"),  # a page whose address is a folder: Hugo's `docs/a/b/`
        ("docs/a/_index.md", "y/", "a/y"),  # an index page's address is its folder
        ("docs/a/b.md", "/docs/demo/", "docs/demo"),  # absolute: its last folder compared
        ("docs/a/b.md", "/demo/", "demo"),  # no folder: a name, as a code span
        ("b.md", "../../chmod.md", "chmod"),  # above the kb: a name
        ("b.md", "c.md", "/c"),  # at the kb's top
        ("docs/a/b.md", "#part", None),
        ("docs/a/b.md", "https://example.com/x.md", None),
    ],
)
def test_a_link_is_to_the_folder_and_name_it_resolves_to(path: str, target: str, key: str | None) -> None:
    assert link_key(path, target) == key
    if key is not None:
        target_path = {"a/c": "docs/a/c.md", "docs/demo": "en/docs/demo/_index.md"}.get(key)
        assert target_path is None or key in reference_keys(target_path)


def test_a_link_counts_for_the_page_it_resolves_to_not_every_file_of_its_name(open_kb) -> None:
    tutorial, instrumentation = (
        "# Tutorial\n\nStart the tutorial {0}.\n",
        "# Instrumentation\n\nInstrument {0} code.\n",
    )
    files = {  # two pages of each name alike but for a word (not copies), their matches equal
        "docs/tutorial/_index.md": tutorial.format("here"),
        "docs/python/tutorial.md": tutorial.format("there"),
        "docs/languages/go/instrumentation.md": instrumentation.format("Go"),
        "docs/languages/java/instrumentation.md": instrumentation.format("Java"),
    }
    link = "# Page {0}\n\n[One](/docs/tutorial/), [two](../languages/java/instrumentation.md)." + FILLER
    files |= {f"docs/guide/page-{i}.md": link.format(i) for i in range(3)}
    kb = open_kb(files)
    pages = [path for path in files if "/guide/" not in path]
    ranked = [path for path in paths(kb, "start the tutorial") if path in pages]
    # By file name alone, the links counted for python/tutorial.md and both instrumentation.md
    assert ranked == ["docs/tutorial/_index.md", "docs/python/tutorial.md"]
    ranked = [path for path in paths(kb, "how to instrument code") if path in pages]
    assert ranked == ["docs/languages/java/instrumentation.md", "docs/languages/go/instrumentation.md"]


def test_an_index_whose_links_were_counted_by_file_name_counts_them_again_by_path(tmp_path: Path) -> None:
    files = {"docs/a/page.md": "# Page\n\n[x](../b/topic.md) and `topic`.\n", "docs/b/topic.md": "# Topic\n"}
    settings = load_settings(make_project(tmp_path / "p", files))
    kb = KnowledgeBase.open(settings)
    kb.scan()
    kb.close()
    with sqlite3.connect(settings.index_path) as conn:  # schema 8 named a link by its file name
        conn.execute("UPDATE mentions SET names = 'topic'")
        conn.execute("DELETE FROM referenced")
        conn.execute("INSERT INTO referenced VALUES ('topic', 1)")
        conn.execute("PRAGMA user_version = 8")
    kb = KnowledgeBase.open(settings)
    try:
        conn = kb.store.reader()
        assert conn.execute("SELECT names FROM mentions").fetchall() == [("b/topic\ntopic",)]
        assert sorted(conn.execute("SELECT * FROM referenced")) == [("b/topic", 1), ("topic", 1)]
    finally:
        kb.close()


def test_references_per_document_are_capped() -> None:
    text = " ".join(f"`name{i}`" for i in range(5000))
    assert len(references("a.md", text)) == MAX_REFERENCES


def test_a_query_of_keywords_is_left_to_its_words_by_the_reference_prior(open_kb) -> None:
    page = "# {0}\n\nChange the owner of a file.\n"
    files = {"aaa.md": page.format("aaa"), "zzz.md": page.format("zzz")}
    files |= {f"ref{i}.md": f"# Ref {i}\n\nSee also: `zzz`.{FILLER}" for i in range(3)}
    kb = open_kb(files)
    assert paths(kb, "change the owner")[:2] == ["zzz.md", "aaa.md"]  # a sentence: the prior counts
    assert paths(kb, "change owner")[:2] == ["aaa.md", "zzz.md"]  # keywords: path order, as without it


def test_a_page_other_pages_refer_to_outranks_an_equal_match_and_the_prior_follows_edits(open_kb) -> None:
    page = "# {0}\n\nChange the owner of a file.\n"
    files = {"aaa.md": page.format("aaa"), "zzz.md": page.format("zzz")}
    files |= {f"ref{i}.md": f"# Ref {i}\n\nSee also: `zzz`.{FILLER}" for i in range(3)}
    kb = open_kb(files)
    assert paths(kb, "change the owner")[:2] == [
        "zzz.md",
        "aaa.md",
    ]  # without the prior: path order, aaa first
    for i in range(3):
        (kb.settings.kb_path / f"ref{i}.md").write_text(f"# Ref {i}\n\nSee also: `aaa`.{FILLER}")
    kb.scan()
    assert paths(kb, "change the owner")[:2] == ["aaa.md", "zzz.md"]
    assert kb.store.reader().execute("SELECT * FROM referenced").fetchall() == [("aaa", 3)]
    for i in range(3):
        (kb.settings.kb_path / f"ref{i}.md").unlink()
    kb.scan()
    assert paths(kb, "change the owner")[:2] == ["aaa.md", "zzz.md"]  # no references left: path order again
    conn = kb.store.reader()
    assert conn.execute("SELECT count(*) FROM mentions").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM referenced").fetchone()[0] == 0


@pytest.mark.processes
def test_an_index_from_the_previous_schema_is_upgraded_in_place_keeping_its_vectors(tmp_path: Path) -> None:
    files = {
        "chmod.md": "# chmod\n\nChange file modes.\n",
        "ls.md": "# ls\n\nList files. See also: `chmod`.\n",
    }
    root = make_project(tmp_path / "p", files)
    settings = load_settings(root)
    kb = KnowledgeBase.open(settings)
    kb.scan()
    kb.close()
    with sqlite3.connect(settings.index_path) as conn:  # what schema 3 had: no mentions table
        conn.execute("DROP TABLE mentions")
        conn.execute("DROP TABLE referenced")
        conn.execute("DROP TABLE embeddings")  # nor chunk offsets and keys (schema 5)
        conn.execute(
            "CREATE TABLE embeddings (doc_id INTEGER NOT NULL, chunk INTEGER NOT NULL, sha256 TEXT NOT NULL, "
            "model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (doc_id, chunk))"
        )
        conn.execute("INSERT INTO embeddings VALUES (1, 0, 'sha', 'model', x'00')")
        conn.execute("PRAGMA user_version = 3")
    doctor = subprocess.run(
        [*forked_kbkit(), "doctor", "--root", str(root)], capture_output=True, text=True, timeout=120
    )
    assert "the index was made by an older kbkit" in doctor.stdout
    kb = KnowledgeBase.open(settings)
    try:
        assert (
            kb.store.repaired == f"{RESEGMENTED}; {REREAD}"
        )  # upgraded in place: only the full-text tables made again
        conn = kb.store.reader()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT names FROM mentions").fetchall() == [("chmod",)]
        assert conn.execute("SELECT * FROM referenced").fetchall() == [("chmod", 1)]
        assert conn.execute("SELECT start, key FROM embeddings").fetchall() == [(0, None)]
    finally:
        kb.close()
