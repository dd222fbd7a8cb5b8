"""The skills kit, with real files and real git: pin, restore, verify, and refuse what does not match."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import kbkit_command, make_project

from kbkit.config import load_settings
from kbkit.skills.install import HashMismatch, add, check, install, remove, update
from kbkit.skills.lock import folder_hash, read_lock
from kbkit.skills.spec import SkillError, read_skill

SKILL = "---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nDo the thing.\n"


def write_skill(
    folder: Path, name: str | None = None, description: str = "Use when testing.", extra: str = ""
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = SKILL.format(name=name or folder.name, description=description)
    if extra:
        text = text.replace("---\n#", extra + "---\n#", 1)
    (folder / "SKILL.md").write_text(text)
    (folder / "references").mkdir(exist_ok=True)
    (folder / "references" / "notes.md").write_text(f"# Notes for {folder.name}\n")
    return folder


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def project(tmp_path: Path, agents: str = '["claude-code"]', mode: str = "symlink") -> Path:
    root = make_project(
        tmp_path / "repo", config=f'[kb]\npath = "docs"\n[skills]\nagents = {agents}\nmode = "{mode}"\n'
    )
    git("init", "-q", cwd=root)
    return root


def skill_repo(tmp_path: Path) -> Path:
    """A git repository holding two skills, with a branch and a tag."""
    repo = tmp_path / "skill-source"
    write_skill(repo / "skills" / "deploy-checklist", description="Use before a deploy.")
    write_skill(repo / "skills" / "review-rules", description="Use when reviewing.")
    git("init", "-q", "-b", "main", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "one", cwd=repo)
    git("tag", "v1", cwd=repo)
    return repo


def commit_all(repo: Path, message: str) -> str:
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-am", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


def test_a_local_skill_is_pinned_installed_and_linked_relatively(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_skill(root / "skills" / "kb-usage")
    settings = load_settings(root)
    add(settings, "skills/kb-usage")
    lock = json.loads((root / "skills-lock.json").read_text())
    assert lock == {
        "version": 1,
        "skills": {
            "kb-usage": {
                "computedHash": folder_hash(root / "skills" / "kb-usage"),
                "source": "./skills/kb-usage",
                "sourceType": "local",
            }
        },
    }
    assert list(lock["skills"]["kb-usage"]) == sorted(lock["skills"]["kb-usage"])
    canonical = root / ".agents" / "skills" / "kb-usage"
    assert (canonical / "references" / "notes.md").read_text() == "# Notes for kb-usage\n"
    link = root / ".claude" / "skills" / "kb-usage"
    assert link.is_symlink() and os.readlink(link) == "../../.agents/skills/kb-usage"
    assert (link / "SKILL.md").read_text().startswith("---\nname: kb-usage")
    ignored = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "check-ignore",
            ".agents/skills/kb-usage/SKILL.md",
            ".claude/skills/kb-usage",
        ],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == [".agents/skills/kb-usage/SKILL.md", ".claude/skills/kb-usage"]
    assert check(settings).problems == []


def test_copy_mode_copies_into_each_agent_folder(tmp_path: Path) -> None:
    root = project(tmp_path, agents='["claude-code", "windsurf", "cursor"]', mode="copy")
    write_skill(root / "skills" / "kb-usage")
    add(load_settings(root), "skills/kb-usage")
    for folder in (".claude/skills", ".windsurf/skills"):
        copy = root / folder / "kb-usage"
        assert copy.is_dir() and not copy.is_symlink()
        assert folder_hash(copy) == folder_hash(root / "skills" / "kb-usage")
    assert not (root / ".cursor" / "skills").exists()  # Cursor reads .agents/skills itself


@pytest.mark.parametrize("ref_kind", ["branch", "tag", "commit"])
def test_a_git_skill_is_pinned_at_a_branch_tag_or_commit_with_the_resolved_commit(
    tmp_path: Path, ref_kind
) -> None:
    source = skill_repo(tmp_path)
    head = git("rev-parse", "HEAD", cwd=source)
    ref = {"branch": "main", "tag": "v1", "commit": head}[ref_kind]
    root = project(tmp_path)
    add(load_settings(root), str(source), skill="review-rules", ref=ref)
    entry = json.loads((root / "skills-lock.json").read_text())["skills"]["review-rules"]
    assert entry["sourceType"] == "git" and entry["ref"] == ref and entry["commit"] == head
    assert entry["skillPath"] == "skills/review-rules/SKILL.md"
    assert entry["computedHash"] == folder_hash(source / "skills" / "review-rules")
    assert (root / ".claude/skills/review-rules/SKILL.md").exists()


def test_a_second_clone_restores_exactly_the_same_install_from_the_lock(tmp_path: Path) -> None:
    source = skill_repo(tmp_path)
    root = project(tmp_path, agents='["claude-code", "kiro"]')
    write_skill(root / "skills" / "kb-usage")
    settings = load_settings(root)
    add(settings, "skills/kb-usage")
    add(settings, str(source), skill="deploy-checklist", ref="v1")
    git("add", "-A", cwd=root)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "kb", cwd=root)
    clone = tmp_path / "clone"
    git("clone", "-q", str(root), str(clone), cwd=tmp_path)
    assert not (clone / ".agents").exists()  # installs are not committed
    result = subprocess.run(
        [*kbkit_command(), "skills", "install", "--root", str(clone)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for name in ("kb-usage", "deploy-checklist"):
        assert folder_hash(clone / ".agents/skills" / name) == folder_hash(root / ".agents/skills" / name)
        for folder in (".claude/skills", ".kiro/skills"):
            assert os.readlink(clone / folder / name) == os.readlink(root / folder / name)
    assert subprocess.run([*kbkit_command(), "skills", "check", "--root", str(clone)]).returncode == 0


def test_a_tampered_installed_file_is_caught_by_check_with_the_path(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_skill(root / "skills" / "kb-usage")
    add(load_settings(root), "skills/kb-usage")
    (root / ".agents/skills/kb-usage/references/notes.md").write_text("injected instructions\n")
    result = subprocess.run(
        [*kbkit_command(), "skills", "check", "--root", str(root)], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "kb-usage: the installed copy was changed (references/notes.md)" in result.stderr
    install(load_settings(root))  # restore from the (unchanged) source
    assert check(load_settings(root)).problems == []


def test_a_force_pushed_tag_is_refused_by_install_and_accepted_by_update(tmp_path: Path) -> None:
    source = skill_repo(tmp_path)
    root = project(tmp_path)
    settings = load_settings(root)
    add(settings, str(source), skill="review-rules", ref="v1")
    (source / "skills/review-rules/SKILL.md").write_text(
        SKILL.format(name="review-rules", description="Changed.")
    )
    moved = commit_all(source, "two")
    git("tag", "-f", "v1", cwd=source)
    with pytest.raises(HashMismatch, match=r"v1 moved from .* to .*SKILL.md"):
        install(settings)
    assert any("moved from" in p for p in check(settings).problems)
    report = update(settings, "review-rules")
    assert report.changes and read_lock(root)["review-rules"].commit == moved
    assert "Changed." in (root / ".agents/skills/review-rules/SKILL.md").read_text()


def test_a_changed_local_source_is_reported_and_update_repins_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_skill(root / "skills" / "kb-usage")
    settings = load_settings(root)
    add(settings, "skills/kb-usage")
    (root / "skills/kb-usage/references/notes.md").write_text("# Notes, revised\n")
    assert any("changed since it was locked" in p for p in check(settings).problems)
    with pytest.raises(HashMismatch, match="references/notes.md"):
        install(settings)
    assert update(settings).changes
    assert check(settings).problems == []


def test_remove_unpins_and_deletes_the_installed_copies(tmp_path: Path) -> None:
    root = project(tmp_path)
    write_skill(root / "skills" / "kb-usage")
    settings = load_settings(root)
    add(settings, "skills/kb-usage")
    remove(settings, "kb-usage")
    assert read_lock(root) == {}
    assert not (root / ".agents/skills/kb-usage").exists()
    assert not (root / ".claude/skills/kb-usage").is_symlink()


def test_sync_check_fails_when_installed_skills_are_out_of_date(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "kbkit.toml").write_text(
        (root / "kbkit.toml").read_text() + '[sync]\nclients = ["claude-code"]\n'
    )
    write_skill(root / "skills" / "kb-usage")
    add(load_settings(root), "skills/kb-usage")
    subprocess.run([*kbkit_command(), "sync", "--root", str(root)], check=True, capture_output=True)
    assert subprocess.run([*kbkit_command(), "sync", "--check", "--root", str(root)]).returncode == 0
    (root / ".agents/skills/kb-usage/SKILL.md").write_text("tampered")
    result = subprocess.run(
        [*kbkit_command(), "sync", "--check", "--root", str(root)], capture_output=True, text=True
    )
    assert result.returncode == 1 and "skills: kb-usage" in result.stderr


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("# no frontmatter\n", "no YAML frontmatter"),
        ("---\n---\nbody\n", "the frontmatter is empty"),
        ("---\nname: x\n\tdescription: tabbed\n---\n", "line 3: the YAML does not parse"),
        ("---\nname: [unclosed\n---\n", "the YAML does not parse"),
        ("---\nname: other-name\ndescription: d\n---\n", "must equal its folder's name"),
        ("---\nname: caf\u00e9\ndescription: d\n---\n", "must be 1-64 of a-z"),
        ("---\nname: -lead\ndescription: d\n---\n", "no leading, trailing or double hyphen"),
        ("---\nname: dou--ble\ndescription: d\n---\n", "double hyphen"),
        ("---\nname: s\n---\n", "description is missing"),
        ("---\nname: s\ndescription: " + "x" * 1025 + "\n---\n", "at most 1024"),
        ("---\nname: s\ndescription: d\ncompatibility: " + "x" * 501 + "\n---\n", "compatibility"),
        ("---\nname: s\ndescription: d\n", "not closed"),
    ],
)
def test_frontmatter_edge_cases_are_errors_with_a_reason(tmp_path: Path, text: str, fragment: str) -> None:
    name = (
        "dou--ble"
        if "dou--ble" in text
        else "-lead"
        if "-lead" in text
        else "caf\u00e9"
        if "caf" in text
        else "s"
    )
    folder = tmp_path / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(text)
    with pytest.raises(SkillError, match=fragment):
        read_skill(folder)


def test_unknown_keys_warn_and_known_client_extensions_are_accepted(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path / "s", extra="disable-model-invocation: true\nargument-hint: '[file]'\nflavour: x\n"
    )
    skill = read_skill(folder)
    assert len(skill.warnings) == 1 and "'flavour'" in skill.warnings[0]


def test_the_folder_hash_follows_its_definition(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "s")
    (folder / "Z-upper.md").write_text("Z")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ignored")
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "x.js").write_text("ignored")
    (folder / "link.md").symlink_to(folder / "SKILL.md")
    files = sorted(
        (
            p.relative_to(folder).as_posix()
            for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink() and not {".git", "node_modules"} & set(p.parts)
        ),
        key=lambda rel: rel.encode(),
    )
    assert files == ["SKILL.md", "Z-upper.md", "references/notes.md"]
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode() + (folder / rel).read_bytes())
    assert folder_hash(folder) == digest.hexdigest()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_installed_skills_are_offered_as_prompts_and_resources(tmp_path: Path, mode: str) -> None:
    from conftest import serve_stdio
    from mcp.shared.exceptions import MCPError

    root = project(tmp_path)
    write_skill(root / "skills" / "kb-usage", description="Use when reading the team's docs.")
    add(load_settings(root), "skills/kb-usage")
    async with serve_stdio(root, mode) as client:
        prompts = (await client.list_prompts()).prompts
        assert [(p.name, p.description) for p in prompts] == [
            ("skill.kb-usage", "Use when reading the team's docs.")
        ]
        prompt = await client.get_prompt("skill.kb-usage")
        assert prompt.messages[0].role == "user"
        assert prompt.messages[0].content.text == "# kb-usage\n\nDo the thing.\n"
        listed = [r.uri for r in (await client.list_resources()).resources]
        assert listed[:2] == ["skill://kb-usage/SKILL.md", "skill://kb-usage/references/notes.md"]
        notes = (await client.read_resource("skill://kb-usage/references/notes.md")).contents[0]
        assert notes.text == "# Notes for kb-usage\n" and notes.mime_type == "text/markdown"
        for uri in (
            "skill://kb-usage/../../kbkit.toml",
            "skill://kb-usage/missing.md",
            "skill://nope/SKILL.md",
        ):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert refused.value.code == -32602
        with pytest.raises(MCPError):
            await client.get_prompt("skill.nope")
