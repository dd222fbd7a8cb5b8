"""Sources as users write them: `owner/repo`, `owner/repo/path`, GitHub URLs, `@ref`, resolved with
real git, offline: github.com is a set of local bare repositories (git's `url.<base>.insteadOf`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.errors import SkillError
from kbkit.skills.files import folder_hash
from kbkit.skills.install import add, check, install, update
from kbkit.skills.lock import read_lock
from kbkit.skills.sources import parse_source
from tests.helpers.skills import FakeGitHub, commit_all, git, new_project
from tests.peers.launch import forked_kbkit


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    return FakeGitHub(tmp_path / "github", monkeypatch)


@pytest.mark.parametrize(
    ("text", "kind", "location", "subpath", "ref"),
    [
        ("acme/skills", "github", "acme/skills", None, None),
        ("acme/skills/tools/lint", "github", "acme/skills", "tools/lint", None),
        ("acme/skills@v2", "github", "acme/skills", None, "v2"),
        ("acme/skills#v2", "github", "acme/skills", None, "v2"),
        ("github:acme/skills", "github", "acme/skills", None, None),
        ("https://github.com/acme/skills", "github", "acme/skills", None, None),
        ("https://github.com/acme/skills.git", "github", "acme/skills", None, None),
        (
            "https://github.com/acme/skills/tree/main/tools/lint",
            "github",
            "acme/skills",
            "tools/lint",
            "main",
        ),
        (
            "https://git.example.test/team/skills.git",
            "git",
            "https://git.example.test/team/skills.git",
            None,
            None,
        ),
        (
            "https://git.example.test/team/skills.git#v1",
            "git",
            "https://git.example.test/team/skills.git",
            None,
            "v1",
        ),
        ("git@git.example.test:team/skills.git", "git", "git@git.example.test:team/skills.git", None, None),
        ("./local/skill", "local", "./local/skill", None, None),
        ("/abs/skill", "local", "/abs/skill", None, None),
    ],
)
def test_sources_are_read_as_npx_skills_reads_them(
    tmp_path: Path, text, kind, location, subpath, ref
) -> None:
    source = parse_source(text, tmp_path)
    assert (source.kind, source.location, source.subpath, source.ref) == (kind, location, subpath, ref)


def test_an_existing_folder_is_local_even_without_dot_slash_and_stored_with_it(tmp_path: Path) -> None:
    (tmp_path / "acme" / "skills").mkdir(parents=True)
    assert parse_source("acme/skills", tmp_path).location == "./acme/skills"
    with pytest.raises(SkillError, match="not a source kbkit knows"):
        parse_source("just-a-word", tmp_path)


@pytest.mark.git
def test_owner_repo_is_fetched_with_git_and_pinned_to_the_commit(tmp_path: Path, github: FakeGitHub) -> None:
    work = github.repo("acme/skills", {"skills/lint-rules": "lint-rules", "skills/deploy": "deploy"})
    head = git("rev-parse", "HEAD", cwd=work)
    root = new_project(tmp_path)
    report = add(load_settings(root), "acme/skills", skills=["lint-rules"])
    assert report.installed == ["lint-rules"]
    entry = json.loads((root / "skills-lock.json").read_text())["skills"]["lint-rules"]
    assert entry == {
        "source": "acme/skills",
        "ref": head,
        "sourceType": "github",
        "skillPath": "skills/lint-rules/SKILL.md",
        "computedHash": folder_hash(work / "skills/lint-rules"),
    }
    assert list(entry) == ["source", "ref", "sourceType", "skillPath", "computedHash"]


@pytest.mark.git
def test_a_repository_whose_root_is_one_skill_can_be_added(tmp_path: Path, github: FakeGitHub) -> None:
    work = github.repo("acme/solo", {"": "solo-skill"})
    root = new_project(tmp_path)
    add(load_settings(root), "https://github.com/acme/solo")
    entry = read_lock(root).entries()["solo-skill"]
    assert entry.skill_path == "SKILL.md" and entry.computed_hash == folder_hash(work)
    assert (root / ".agents/skills/solo-skill/SKILL.md").exists()


@pytest.mark.processes
def test_list_shows_what_a_source_offers_and_skill_or_all_picks(tmp_path: Path, github: FakeGitHub) -> None:
    github.repo("acme/many", {"skills/a-one": "a-one", "skills/b-two": "b-two", "more/c-three": "c-three"})
    root = new_project(tmp_path)
    listed = subprocess.run(
        [*forked_kbkit(), "skills", "add", "acme/many", "--list", "--json", "--root", str(root)],
        capture_output=True,
        text=True,
    )
    assert listed.returncode == 0, listed.stderr
    offered = json.loads(listed.stdout)["offered"]
    assert [(o["name"], o["path"]) for o in offered] == [
        ("c-three", "more/c-three"), ("a-one", "skills/a-one"), ("b-two", "skills/b-two"),
    ]  # fmt: skip
    assert not (root / "skills-lock.json").exists()
    with pytest.raises(
        SkillError, match=r"offers several skills \(c-three, a-one, b-two\); pick with --skill"
    ):
        add(load_settings(root), "acme/many")
    add(load_settings(root), "acme/many", skills=["b-two", "c-three"])
    assert sorted(read_lock(root).entries()) == ["b-two", "c-three"]
    add(load_settings(root), "acme/many/skills", all_skills=True)
    assert sorted(read_lock(root).entries()) == ["a-one", "b-two", "c-three"]
    with pytest.raises(SkillError, match="has no skill named 'nope'"):
        add(load_settings(root), "acme/many", skills=["nope"])


@pytest.mark.git
def test_a_tag_is_kept_as_requested_and_update_follows_it(tmp_path: Path, github: FakeGitHub) -> None:
    work = github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    first = git("rev-parse", "HEAD", cwd=work)
    root = new_project(tmp_path)
    settings = load_settings(root)
    add(settings, "acme/skills@v1")
    assert load_settings(root).skills.refs == {"lint-rules": "v1"}
    (work / "skills/lint-rules/references/notes.md").write_text("# Newer notes\n")
    second = commit_all(work, "two")
    git("tag", "-f", "v1", cwd=work)
    github.push(work, "main", "--tags")
    assert install(settings).refused == [] and read_lock(root).entries()["lint-rules"].commit == first
    report = update(settings)
    assert report.changes and read_lock(root).entries()["lint-rules"].commit == second
    assert (root / ".agents/skills/lint-rules/references/notes.md").read_text() == "# Newer notes\n"
    assert check(settings).problems == []


@pytest.mark.processes
def test_a_source_that_cannot_be_fetched_says_so_in_one_line(tmp_path: Path, github: FakeGitHub) -> None:
    github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    root = new_project(tmp_path)
    result = subprocess.run(
        [*forked_kbkit(), "skills", "add", "acme/skills@no-such-tag", "--root", str(root)],
        capture_output=True,
        text=True,
    )
    # exit 4: the remote's problem, not the input's
    assert result.returncode == 4 and "Traceback" not in result.stderr
    assert result.stderr.startswith("kbkit: error: acme/skills@no-such-tag: cannot fetch no-such-tag")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.git
def test_an_invalid_skill_in_a_source_is_left_out_without_blocking_the_others(
    tmp_path: Path, github: FakeGitHub
) -> None:
    work = github.repo("acme/mixed", {"skills/good-one": "good-one", "skills/Other": "other"})
    assert (work / "skills/Other/SKILL.md").exists()  # its name is not its folder's: invalid
    root = new_project(tmp_path)
    listed = add(load_settings(root), "acme/mixed", list_only=True)
    assert [o["name"] for o in listed.offered] == ["good-one"]
    assert listed.warnings == [
        "left out: skills/Other/SKILL.md: the name 'other' must equal its folder's name 'Other'"
    ]
    assert add(load_settings(root), "acme/mixed", skills=["good-one"]).installed == ["good-one"]
    with pytest.raises(SkillError, match="has no skill named 'other'.*must equal its folder's name"):
        add(load_settings(root), "acme/mixed", skills=["other"])
