"""Attacks on the guard sequence: every guard has a test that tries to get past it.

Library level (`KnowledgeBase.load` / `load_servable`, `read_resource`, and `read_guarded` with a
race simulated between the check and the open), then end to end through `kbkit serve` with the
real `mcp` client. A secret lives next to the kb folder; no test may ever see it come back.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from kbkit.config import load_settings
from kbkit.errors import DocumentRefused
from kbkit.kb import documents
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.documents import FILE_SIZE_CAP, TEXT_CAP, read_guarded
from kbkit.kb.formats.registry import Registry
from kbkit.kb.uris import doc_uri
from kbkit.server.resources import read_resource
from tests.helpers.project import SAMPLE_DOCS, make_project
from tests.helpers.serve import ERAS, document_text, serve_in_memory, serve_stdio

SECRET = "sk-live-0ddba11-never-leaves-the-project"
SESSION_BOUND = 60
"""Seconds a whole server session may take; a hang fails the test instead of stalling the run."""


# --- fixtures -------------------------------------------------------------------------------------


def write_secrets(root: Path) -> None:
    """Secrets next to the kb folder: the project's .env.local and a folder beside docs/."""
    (root / ".env.local").write_text(f"API_KEY={SECRET}\n", encoding="utf-8")
    (root / "outside").mkdir(exist_ok=True)
    (root / "outside" / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    (root / "outside" / "getting-started.md").write_text(f"# Swapped\n\n{SECRET}\n", encoding="utf-8")


def build_hostile_project(root: Path) -> Path:
    """The sample docs plus one of every trap the guards must catch."""
    make_project(root)
    write_secrets(root)
    docs = root / "docs"
    (docs / "leak.md").symlink_to("../outside/secret.md")
    (docs / "env.md").symlink_to("../.env.local")
    (docs / "abs-link.md").symlink_to(root / "outside" / "secret.md")
    (docs / "inside-link.md").symlink_to("guide/getting-started.md")
    (docs / "dangling.md").symlink_to("nowhere.md")
    (docs / "linked").symlink_to("../outside", target_is_directory=True)
    (docs / "alias").symlink_to("guide", target_is_directory=True)
    (docs / "guide" / "deeper").symlink_to("../../outside", target_is_directory=True)
    os.link(root / "outside" / "secret.md", docs / "stolen.md")
    for name in ("tool.py", ".env", "settings.env", "Makefile", "notes.md.bak", ".md"):
        (docs / name).write_text(f"{SECRET}\n", encoding="utf-8")
    with open(docs / "huge.md", "wb") as handle:  # sparse: 50 MiB + 1 byte in no time and no disk
        handle.truncate(FILE_SIZE_CAP + 1)
    os.mkfifo(docs / "pipe.md")
    (docs / "folder.md").mkdir()
    return root


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return build_hostile_project(tmp_path / "project")


@contextmanager
def open_kb(root: Path, *, scan: bool = True) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase.open(load_settings(root))
    try:
        if scan:
            kb.scan()
        yield kb
    finally:
        kb.close()


@pytest.fixture
def kb(hostile: Path) -> Iterator[KnowledgeBase]:
    with open_kb(hostile) as opened:
        yield opened


def refusal(call: Callable[..., object], *args: object, **kwargs: object) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        call(*args, **kwargs)
    assert SECRET not in str(caught.value)
    return caught.value


def skipped_reasons(root: Path) -> dict[str, str]:
    conn = sqlite3.connect(root / ".kbkit" / "index.db")
    try:
        return dict(conn.execute("SELECT path, reason_code FROM skipped"))
    finally:
        conn.close()


# --- step 1: the path as written ------------------------------------------------------------------

TRAVERSALS = [
    "../.env.local",
    "../outside/secret.md",
    "a/../../x.md",
    "guide/../../.env.local",
    "docs/../../.env.local",
    "guide/../notes.txt",
    "..",
    "../",
    "./notes.txt",
    "./../.env.local",
    "guide/./getting-started.md",
    "guide//getting-started.md",
    "....//.env.local",
    "guide/",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_dot_dot_and_non_canonical_paths_are_refused_as_invalid_by_both_reads(
    kb: KnowledgeBase, path: str
) -> None:
    assert refusal(kb.load, path).reason == "invalid-path"
    assert refusal(kb.load_servable, path).reason == "invalid-path"


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "//etc/passwd", "{root}/.env.local", "{root}/docs/notes.txt", "C:/x.md", "c:\\x.md"],
)
def test_absolute_paths_are_refused_even_when_they_name_a_file_inside_the_kb_folder(
    kb: KnowledgeBase, hostile: Path, path: str
) -> None:
    path = path.format(root=hostile)
    refused = refusal(kb.load, path)
    assert refused.reason == "invalid-path"
    assert "absolute" in str(refused)
    assert refusal(kb.load_servable, path).reason == "invalid-path"


@pytest.mark.parametrize(
    "path", ["..\\.env.local", "..\\outside\\secret.md", "~/.env.local", "$HOME/.env.local", "..;/.env.local"]
)
def test_shell_and_windows_spellings_of_escape_are_plain_names_that_do_not_exist(
    kb: KnowledgeBase, path: str
) -> None:
    assert refusal(kb.load, path).reason in ("not-found", "unsupported-type")
    refusal(kb.load_servable, path)


@pytest.mark.parametrize("path", ["notes.txt\x00.md", "\x00", "guide/\x00/x.md", "notes.txt\x00"])
def test_a_nul_byte_anywhere_in_a_path_is_refused(kb: KnowledgeBase, path: str) -> None:
    refused = refusal(kb.load, path)
    assert refused.reason == "invalid-path"
    assert "NUL" in str(refused)
    assert refusal(kb.load_servable, path).reason == "invalid-path"


@pytest.mark.parametrize("path", ["", " ", "\t\n", "   \r\n  "])
def test_empty_and_blank_paths_are_refused(kb: KnowledgeBase, path: str) -> None:
    refused = refusal(kb.load, path)
    assert refused.reason == "invalid-path"
    assert "empty" in str(refused)
    assert refusal(kb.load_servable, path).reason == "invalid-path"


@pytest.mark.parametrize("path", ["\ud800.md", "guide/\udfff.md", "caf\udce9.md"])
def test_a_path_that_is_not_valid_unicode_is_refused_rather_than_raising(
    kb: KnowledgeBase, path: str
) -> None:
    """Lone surrogates cannot be encoded for the OS or SQLite: a refusal, never UnicodeEncodeError."""
    refusal(kb.load, path)
    refusal(kb.load_servable, path)


@pytest.mark.parametrize("path", ["x" * 300 + ".md", "d/" * 3000 + "x.md", "notes.txt/x.md"])
def test_overlong_deep_or_file_as_folder_paths_are_refused_not_raised(kb: KnowledgeBase, path: str) -> None:
    refusal(kb.load, path)
    refusal(kb.load_servable, path)


# --- URIs: decoding is not a check ----------------------------------------------------------------

BAD_URIS = [
    "kb://doc/..%2F..%2Fsecret.md",
    "kb://doc/..%2F.env.local",
    "kb://doc/%2e%2e/.env.local",
    "kb://doc/%2E%2E%2F.env.local",
    "kb://doc/%2e%2e%2foutside%2fsecret.md",
    "kb://doc/guide%2F..%2F..%2F.env.local",
    "kb://doc/../.env.local",
    "kb://doc/%2Fetc%2Fpasswd",
    "kb://doc//etc/passwd",
    "kb://doc/%252e%252e%252f.env.local",
    "kb://doc/notes.txt%00.md",
    "kb://doc/%00",
    "kb://doc/",
    "kb://doc/%20%20",
    "kb://doc/%ff",
    "kb://doc/%ED%A0%80.md",
    "kb://doc/notes.txt#/../../.env.local",
    "kb://doc/leak.md",
    "kb://doc/linked/secret.md",
    "kb://doc/stolen.md",
    "kb://doc/tool.py",
    "kb://doc/huge.md",
    "kb://doc/pipe.md",
    "kb://doc/folder.md",
    "kb://topic/..",
    "kb://topic/%2e%2e",
    "kb://topic/..%2F..",
    "kb://topic/%2e%2e%2foutside",
    "kb://topic/%00",
    "kb://topic/linked",
    "KB://doc/notes.txt",
    "file:///etc/passwd",
    "kb://doc",
    "",
]


@pytest.mark.parametrize("uri", BAD_URIS)
def test_a_hostile_uri_is_refused_with_invalid_params_and_leaks_nothing(kb: KnowledgeBase, uri: str) -> None:
    with pytest.raises(MCPError) as refused:
        read_resource(kb, uri)
    assert refused.value.code == INVALID_PARAMS
    assert SECRET not in refused.value.message


def test_the_same_reads_succeed_when_the_uri_is_honest(kb: KnowledgeBase) -> None:
    """The control for the test above: the refusals are the guards, not a broken reader."""
    assert "blue green" in read_resource(kb, "kb://doc/runbooks/deploy.rst").contents[0].text
    assert "kb://doc/adr/0001-guards.md" in read_resource(kb, "kb://topic/adr").contents[0].text


# --- step 2: symlinks and hard links --------------------------------------------------------------


@pytest.mark.parametrize("name", ["leak.md", "env.md", "abs-link.md", "inside-link.md", "dangling.md"])
def test_a_symlinked_file_is_refused_wherever_it_points_and_is_never_indexed(
    kb: KnowledgeBase, name: str
) -> None:
    refused = refusal(kb.load, name)
    assert refused.reason == "symlink"
    assert "symbolic link" in str(refused)
    assert kb.servable(name) is None
    assert refusal(kb.load_servable, name).reason == "not-servable"


@pytest.mark.parametrize(
    "path",
    ["linked/secret.md", "linked/getting-started.md", "alias/getting-started.md", "guide/deeper/secret.md"],
)
def test_a_symlinked_parent_folder_is_refused_wherever_it_points(kb: KnowledgeBase, path: str) -> None:
    refused = refusal(kb.load, path)
    assert refused.reason == "symlink"
    assert "symbolic link" in str(refused)
    assert refusal(kb.load_servable, path).reason == "not-servable"


def test_no_folder_behind_a_symlink_is_indexed(kb: KnowledgeBase) -> None:
    listed = {d.path for d in kb.list_servable()}
    assert listed == set(SAMPLE_DOCS)
    assert kb.search(SECRET).results == []


def test_a_hard_link_to_a_file_outside_is_refused_and_skipped_with_its_reason(
    kb: KnowledgeBase, hostile: Path
) -> None:
    assert os.stat(hostile / "docs" / "stolen.md").st_nlink == 2
    refused = refusal(kb.load, "stolen.md")
    assert refused.reason == "hard-link"
    assert "hard link" in str(refused)
    assert refusal(kb.load_servable, "stolen.md").reason == "not-servable"
    assert skipped_reasons(hostile)["stolen.md"] == "hard-link"


def test_a_hard_link_between_two_kb_files_refuses_both_names(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    os.link(root / "docs" / "notes.txt", root / "docs" / "notes-copy.txt")
    with open_kb(root) as kb:
        assert refusal(kb.load, "notes.txt").reason == "hard-link"
        assert refusal(kb.load, "notes-copy.txt").reason == "hard-link"
        assert kb.servable("notes.txt") is None


# --- races: what the path check saw is not what gets opened ---------------------------------------


@pytest.fixture
def race(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "race")
    write_secrets(root)
    return root


def test_a_symlink_swapped_in_after_the_path_check_is_refused_by_the_no_follow_open(
    race: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = race / "docs" / "notes.txt"
    assert read_guarded(race / "docs", "notes.txt", Registry()).data.startswith(b"Plain text")
    check = documents._refuse_symlink
    swapped = []

    def check_then_swap(dir_fd: int, name: str, shown: str) -> None:
        check(dir_fd, name, shown)  # the path is a plain file when checked...
        if shown == "notes.txt" and not swapped:
            target.unlink()  # ...and a symlink to the secret when opened
            target.symlink_to(race / ".env.local")
            swapped.append(shown)

    monkeypatch.setattr(documents, "_refuse_symlink", check_then_swap)
    refused = refusal(read_guarded, race / "docs", "notes.txt", Registry())
    assert swapped == ["notes.txt"]
    assert refused.reason == "symlink"


def test_a_hard_link_renamed_over_the_path_after_the_check_is_still_refused(
    race: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = race / "docs"
    check = documents._refuse_symlink
    swapped = []

    def check_then_rename(dir_fd: int, name: str, shown: str) -> None:
        check(dir_fd, name, shown)
        if shown == "notes.txt" and not swapped:
            os.link(race / "outside" / "secret.md", docs / ".incoming")
            os.rename(docs / ".incoming", docs / "notes.txt")  # atomic: the name now is the secret's inode
            swapped.append(shown)

    monkeypatch.setattr(documents, "_refuse_symlink", check_then_rename)
    refused = refusal(read_guarded, docs, "notes.txt", Registry())
    assert swapped == ["notes.txt"]
    assert os.stat(docs / "notes.txt").st_nlink == 2
    assert refused.reason == "hard-link"


def test_a_parent_folder_swapped_for_a_symlink_after_it_was_entered_reads_the_original_file(
    race: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = race / "docs"
    enter = documents._enter
    swapped = []

    def enter_then_swap(dir_fd: int, part: str, shown: str) -> int:
        fd = enter(dir_fd, part, shown)
        if shown == "guide" and not swapped:
            os.rename(docs / "guide", docs / "guide-moved")
            (docs / "guide").symlink_to(race / "outside", target_is_directory=True)
            swapped.append(shown)
        return fd

    monkeypatch.setattr(documents, "_enter", enter_then_swap)
    raw = read_guarded(docs, "guide/getting-started.md", Registry())
    assert swapped == ["guide"]
    assert SECRET.encode() not in raw.data
    assert raw.data == (docs / "guide-moved" / "getting-started.md").read_bytes()


def test_a_file_replaced_after_its_handle_was_checked_is_read_from_the_handle(
    race: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = race / "docs"
    original = (docs / "notes.txt").read_bytes()
    inode = os.stat(docs / "notes.txt").st_ino
    real_fstat = os.fstat
    swapped = []

    def fstat_then_swap(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if info.st_ino == inode and not swapped:
            os.rename(race / "outside" / "secret.md", docs / "notes.txt")
            swapped.append(fd)
        return info

    monkeypatch.setattr(os, "fstat", fstat_then_swap)
    raw = read_guarded(docs, "notes.txt", Registry())
    assert swapped
    assert raw.data == original
    assert SECRET.encode() in (docs / "notes.txt").read_bytes()  # the swap did happen on disk


def test_a_file_that_grows_past_the_cap_while_being_read_is_refused(
    race: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = race / "docs"
    inode = os.stat(docs / "notes.txt").st_ino
    real_fstat = os.fstat
    grown = []

    def fstat_then_grow(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if info.st_ino == inode and not grown:
            with open(docs / "notes.txt", "ab") as handle:
                handle.write(b"x" * 10_000)
            grown.append(fd)
        return info

    monkeypatch.setattr(documents, "FILE_SIZE_CAP", 4096)
    monkeypatch.setattr(os, "fstat", fstat_then_grow)
    refused = refusal(read_guarded, docs, "notes.txt", Registry())
    assert grown
    assert refused.reason == "too-large"


# --- steps 3 and 4: what kind of file --------------------------------------------------------------


@pytest.mark.parametrize("name", ["tool.py", ".env", "settings.env", "Makefile", "notes.md.bak", ".md"])
def test_an_unregistered_extension_is_refused_even_though_the_file_exists(
    kb: KnowledgeBase, name: str
) -> None:
    refused = refusal(kb.load, name)
    assert refused.reason == "unsupported-type"
    assert "serves only" in str(refused) and ".md" in str(refused)
    assert refusal(kb.load_servable, name).reason == "not-servable"


def test_an_extension_is_matched_case_insensitively(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"LOUD.MD": "# Loud\n\nshouting\n"})
    with open_kb(root) as kb:
        assert kb.load("LOUD.MD").text == "# Loud\n\nshouting\n"
        assert kb.load_servable("LOUD.MD").media_type == "text/markdown"


def test_a_parser_disabled_in_config_makes_its_extension_unreadable(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[parsers]\nenabled = ["md"]\n')
    with open_kb(root) as kb:
        assert refusal(kb.load, "notes.txt").reason == "unsupported-type"
        assert refusal(kb.load_servable, "notes.txt").reason == "not-servable"
        assert kb.load("adr/0001-guards.md").title == "One guard sequence"


def test_an_oversized_sparse_file_is_refused_and_skipped_without_being_read(
    kb: KnowledgeBase, hostile: Path
) -> None:
    assert os.stat(hostile / "docs" / "huge.md").st_size == FILE_SIZE_CAP + 1
    refused = refusal(kb.load, "huge.md")
    assert refused.reason == "too-large"
    assert str(FILE_SIZE_CAP) in str(refused)
    assert skipped_reasons(hostile)["huge.md"] == "too-large"
    assert refusal(kb.load_servable, "huge.md").reason == "not-servable"


@pytest.mark.timeout(20)
def test_a_fifo_named_like_a_document_is_refused_without_hanging(kb: KnowledgeBase) -> None:
    """Opening a FIFO for reading blocks until a writer comes; O_NONBLOCK plus fstat must say no first."""
    refused = refusal(kb.load, "pipe.md")
    assert refused.reason == "not-a-file"
    assert "not a regular file" in str(refused)
    assert refusal(kb.load_servable, "pipe.md").reason == "not-servable"


def test_a_directory_named_like_a_document_is_refused(kb: KnowledgeBase) -> None:
    refused = refusal(kb.load, "folder.md")
    assert refused.reason == "not-a-file"
    assert refusal(kb.load_servable, "folder.md").reason == "not-servable"


def test_a_missing_file_is_refused_as_not_found(kb: KnowledgeBase) -> None:
    refused = refusal(kb.load, "guide/absent.md")
    assert refused.reason == "not-found"
    assert "does not exist" in str(refused)


# --- the index bounds resources, not get_document --------------------------------------------------


def test_a_file_created_after_the_scan_is_loaded_but_is_not_servable(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with open_kb(root) as kb:
        (root / "docs" / "late.md").write_text("# Late\n\narrived after the scan\n")
        assert kb.load("late.md").text == "# Late\n\narrived after the scan\n"
        refused = refusal(kb.load_servable, "late.md")
        assert refused.reason == "not-servable"
        assert "get_document" in str(refused)


@pytest.mark.parametrize(
    "config, ignore_file",
    [
        ('[kb]\npath = "docs"\n', "private/\n"),
        ('[kb]\npath = "docs"\nexclude_dirs = ["private"]\n', None),
        ('[kb]\npath = "docs"\nexclude_dirs = ["area/private"]\n', None),
    ],
    ids=["kbignore", "exclude_dirs-name", "exclude_dirs-path"],
)
def test_an_ignored_file_is_loaded_but_is_neither_servable_nor_searchable(
    tmp_path: Path, config: str, ignore_file: str | None
) -> None:
    files = {
        "private/plan.md": "# Plan\n\nzanzibar rollout\n",
        "area/private/plan.md": "# Plan\n\nzanzibar\n",
    }
    root = make_project(tmp_path / "p", {**SAMPLE_DOCS, **files}, config=config)
    if ignore_file:
        (root / "docs" / ".kbignore").write_text(ignore_file)
    path = "area/private/plan.md" if "area/" in config else "private/plan.md"
    with open_kb(root) as kb:
        assert "zanzibar" in kb.load(path).text
        assert refusal(kb.load_servable, path).reason == "not-servable"
        assert path not in {d.path for d in kb.list_servable()}
        assert path not in [hit.path for hit in kb.search("zanzibar").results]


# --- step 5: text over the cap ---------------------------------------------------------------------


def big_text(megabytes: float) -> str:
    """Markdown whose 1 MiB cut falls inside a 4-byte character."""
    head = "# Big\n\naa"  # 9 bytes, so the 4-byte emoji after it straddle every MiB boundary
    lines, size, number = [], len(head), 0
    while size < megabytes * 1024 * 1024:
        line = "🙂🙂🙂🙂 ünïcode line " + f"{number:07}" + "\n"
        lines.append(line)
        size += len(line.encode())
        number += 1
    return head + "🙂" + "".join(lines) + "the end\n"


def test_text_over_the_cap_is_cut_on_a_character_and_read_on_from_next_offset(tmp_path: Path) -> None:
    full = big_text(2.5)
    root = make_project(tmp_path / "p", {"big.md": full})
    with open_kb(root) as kb:
        pieces, offset = [], 0
        for _ in range(10):
            doc = kb.load("big.md", offset=offset)
            assert len(doc.text.encode()) <= TEXT_CAP
            assert doc.text_size == len(full.encode())
            assert doc.offset == offset
            pieces.append(doc.text)
            if not doc.truncated:
                assert doc.next_offset is None
                break
            assert doc.next_offset == offset + len(doc.text)
            offset = doc.next_offset
        assert len(pieces) == 3
        assert "".join(pieces) == full
        assert pieces[-1].endswith("the end\n")
        served = kb.load_servable("big.md")
        assert served.truncated and served.text == pieces[0]


@pytest.mark.parametrize("offset", [-1, 10**9])
def test_an_offset_outside_the_text_is_refused(kb: KnowledgeBase, offset: int) -> None:
    assert refusal(kb.load, "notes.txt", offset=offset).reason == "invalid-offset"


def test_an_offset_at_the_very_end_gives_empty_text_and_no_next_offset(kb: KnowledgeBase) -> None:
    full = kb.load("notes.txt").text
    doc = kb.load("notes.txt", offset=len(full))
    assert (doc.text, doc.truncated, doc.next_offset) == ("", False, None)


# --- secrets: no spelling reaches them -------------------------------------------------------------

SECRET_SPELLINGS = [
    "../.env.local",
    "../outside/secret.md",
    "../kbkit.toml",
    "../.kbkit/index.db",
    "guide/../../.env.local",
    "./../.env.local",
    "{root}/.env.local",
    "{root}/outside/secret.md",
    "..\\.env.local",
    "..%2F.env.local",
    "%2e%2e/.env.local",
    ".env.local",
    "leak.md",
    "env.md",
    "abs-link.md",
    "linked/secret.md",
    "guide/deeper/secret.md",
    "stolen.md",
    ".env",
]


def test_no_spelling_of_a_path_reaches_a_secret_outside_the_kb_folder(
    kb: KnowledgeBase, hostile: Path
) -> None:
    for spelling in SECRET_SPELLINGS:
        path = spelling.format(root=hostile)
        refusal(kb.load, path)
        refusal(kb.load_servable, path)
        with pytest.raises(MCPError) as refused:
            read_resource(kb, doc_uri(path))
        assert refused.value.code == INVALID_PARAMS
        assert SECRET not in refused.value.message
    assert kb.search(SECRET).results == []
    assert kb.search("API_KEY").results == []


def test_with_the_kb_folder_at_the_project_root_the_project_files_stay_unreachable(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "."\n')
    write_secrets(root)
    (root / "kbkit.local.toml").write_text(f'# token = "{SECRET}"\n')
    with open_kb(root) as kb:
        for path in (
            ".env.local",
            "kbkit.toml",
            "kbkit.local.toml",
            ".kbkit/index.db",
            ".kbkit/index.db-wal",
        ):
            assert refusal(kb.load, path).reason in ("unsupported-type", "not-found", "private"), path
            refusal(kb.load_servable, path)
        assert not [d.path for d in kb.list_servable() if d.path.startswith(".kbkit/")]
        assert kb.search("API_KEY").results == []


# --- end to end: the real server, both eras --------------------------------------------------------

REFUSED_PATHS = [
    ("../.env.local", "'..'"),
    ("a/../../x.md", "'..'"),
    ("guide/../../outside/secret.md", "'..'"),
    ("/etc/passwd", "absolute"),
    ("{root}/.env.local", "absolute"),
    ("notes.txt\x00.md", "NUL"),
    ("", "empty"),
    ("   ", "empty"),
    ("guide//getting-started.md", "canonical"),
    ("leak.md", "symbolic link"),
    ("env.md", "symbolic link"),
    ("inside-link.md", "symbolic link"),
    ("linked/secret.md", "symbolic link"),
    ("alias/getting-started.md", "symbolic link"),
    ("stolen.md", "hard link"),
    ("tool.py", "serves only"),
    (".env", "serves only"),
    ("Makefile", "serves only"),
    ("huge.md", "cap"),
    ("pipe.md", "not a regular file"),
    ("folder.md", "not a regular file"),
    ("missing.md", "does not exist"),
]

REFUSED_URIS = [
    "kb://doc/..%2F..%2Fsecret.md",
    "kb://doc/..%2F.env.local",
    "kb://doc/%2e%2e/.env.local",
    "kb://doc/%2E%2E%2Foutside%2Fsecret.md",
    "kb://doc/notes.txt%00.md",
    "kb://doc/%00",
    "kb://doc/",
    "kb://doc/%ff",
    "kb://doc/leak.md",
    "kb://doc/linked/secret.md",
    "kb://doc/stolen.md",
    "kb://doc/tool.py",
    "kb://doc/huge.md",
    "kb://doc/pipe.md",
    "kb://doc/folder.md",
    "kb://topic/..",
    "kb://topic/%2e%2e%2foutside",
    "kb://topic/linked",
    "file:///etc/passwd",
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_the_server_refuses_every_escape_with_a_clear_error_and_keeps_serving(
    hostile: Path, mode: str
) -> None:
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(hostile, mode) as client:
            for spelling, says in REFUSED_PATHS:
                path = spelling.format(root=hostile)
                result = await client.call_tool("get_document", {"path": path})
                text = result.content[0].text
                assert result.is_error, (path, text)
                assert says in text, (path, text)
                assert SECRET not in text
            for uri in REFUSED_URIS:
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri)
                assert refused.value.code == -32602, uri
                assert SECRET not in refused.value.message
            listed = {r.uri for r in (await client.list_resources()).resources}
            assert listed == {doc_uri(path) for path in SAMPLE_DOCS}
            found = await client.call_tool("search", {"query": SECRET})
            assert not found.is_error and found.structured_content["results"] == []
            ok = await client.call_tool("search", {"query": "guard sequence"})
            assert ok.structured_content["results"][0]["path"] == "adr/0001-guards.md"


@pytest.mark.processes
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_unindexed_and_ignored_files_are_read_by_get_document_but_refused_as_resources(
    tmp_path: Path, mode: str
) -> None:
    files = {
        **SAMPLE_DOCS,
        "private/plan.md": "# Plan\n\nignored by kbignore\n",
        "drafts/idea.md": "# Idea\n\nexcluded by exclude_dirs\n",
    }
    # not watching: late.md stays unindexed (a watcher would index it while the test reads it)
    config = '[kb]\npath = "docs"\nexclude_dirs = ["drafts"]\nwatch = false\n'
    root = make_project(tmp_path / "p", files, config=config)
    (root / "docs" / ".kbignore").write_text("private/\n")
    with anyio.fail_after(SESSION_BOUND):
        async with serve_stdio(root, mode) as client:
            await client.list_resources()  # waits for the start-up scan: late.md comes after it
            (root / "docs" / "late.md").write_text("# Late\n\ncreated after the server scanned\n")
            for path, words in [
                ("private/plan.md", "kbignore"),
                ("drafts/idea.md", "exclude_dirs"),
                ("late.md", "created after"),
            ]:
                result = await client.call_tool("get_document", {"path": path})
                assert not result.is_error, result.content
                assert words in document_text(result)
                assert "uri" not in result.structured_content
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(doc_uri(path))
                assert refused.value.code == -32602
                assert "get_document" in refused.value.message
            listed = {r.uri for r in (await client.list_resources()).resources}
            assert listed == {doc_uri(path) for path in SAMPLE_DOCS}
            hits = await client.call_tool("search", {"query": "kbignore exclude_dirs created"})
            assert hits.structured_content["results"] == []


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_a_document_over_the_text_cap_is_cut_with_a_notice_and_read_on_from_next_offset(
    tmp_path: Path, mode: str
) -> None:
    full = big_text(1.3)
    root = make_project(tmp_path / "p", {"big.md": full})
    with anyio.fail_after(SESSION_BOUND):
        async with serve_in_memory(root, mode) as client:
            first = await client.call_tool("get_document", {"path": "big.md"})
            assert not first.is_error
            data = first.structured_content
            assert data["truncated"] is True
            cut = data["next_offset"]
            assert document_text(first) == full[:cut]
            assert len(document_text(first).encode()) <= TEXT_CAP  # and one reply (test_reply_sizes)
            pieces = [full[:cut]]
            while data["truncated"]:
                rest = await client.call_tool(
                    "get_document", {"path": "big.md", "offset": data["next_offset"]}
                )
                assert not rest.is_error
                data = rest.structured_content
                pieces.append(document_text(rest))
            assert "".join(pieces) == full and "next_offset" not in data
            text = (await client.read_resource("kb://doc/big.md")).contents[0].text
            shown, _, notice = text.rpartition("\n\n[kbkit: TRUNCATED")
            assert shown and full.startswith(shown)
            assert f"offset={len(shown)}" in notice and "get_document" in notice
            assert notice.endswith("]")
