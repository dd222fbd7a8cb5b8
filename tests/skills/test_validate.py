"""`kbkit skills validate` and validation on add agree with the spec's reference validator,
`skills-ref`, on a table of cases (strict: exactly; by default, keys outside the spec only warn)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import skills_ref  # a pinned test dependency: missing, the suite fails to collect instead of skipping

from kbkit.config import load_settings
from kbkit.errors import SkillError
from kbkit.skills.install import add
from kbkit.skills.validate import validate_folder
from tests.helpers.skills import new_project
from tests.peers.launch import forked_kbkit

D = "description: Use when testing.\n"
CASES: list[tuple[str, str, str]] = [
    ("valid", "demo", "---\nname: demo\n" + D + "---\nbody\n"),
    ("duplicate-name", "demo", "---\nname: demo\nname: demo\n" + D + "---\n"),
    ("description-yes", "demo", "---\nname: demo\ndescription: yes\n---\n"),
    ("numeric-name", "123", "---\nname: 123\n" + D + "---\n"),
    ("non-ascii-name", "café", "---\nname: café\n" + D + "---\n"),
    ("han-name", "日本語", "---\nname: 日本語\n" + D + "---\n"),
    ("ligature-name", "file", "---\nname: ﬁle\n" + D + "---\n"),
    ("uppercase", "Demo", "---\nname: Demo\n" + D + "---\n"),
    ("leading-hyphen", "-demo", "---\nname: -demo\n" + D + "---\n"),
    ("trailing-hyphen", "demo-", "---\nname: demo-\n" + D + "---\n"),
    ("double-hyphen", "de--mo", "---\nname: de--mo\n" + D + "---\n"),
    ("underscore", "de_mo", "---\nname: de_mo\n" + D + "---\n"),
    ("digits", "v2-tools", "---\nname: v2-tools\n" + D + "---\n"),
    ("quoted-spaces", "demo", "---\nname: '  demo  '\n" + D + "---\n"),
    ("not-folder-name", "folder", "---\nname: demo\n" + D + "---\n"),
    ("name-65", "a" * 65, "---\nname: " + "a" * 65 + "\n" + D + "---\n"),
    ("name-64", "a" * 64, "---\nname: " + "a" * 64 + "\n" + D + "---\n"),
    ("empty-description", "demo", "---\nname: demo\ndescription:\n---\n"),
    ("description-1025", "demo", "---\nname: demo\ndescription: " + "x" * 1025 + "\n---\n"),
    ("description-1024", "demo", "---\nname: demo\ndescription: " + "x" * 1024 + "\n---\n"),
    ("compatibility-501", "demo", "---\nname: demo\n" + D + "compatibility: " + "x" * 501 + "\n---\n"),
    ("unknown-key", "demo", "---\nname: demo\n" + D + "flavour: x\n---\n"),
    ("client-key", "demo", "---\nname: demo\n" + D + "disable-model-invocation: true\n---\n"),
    ("flow-mapping", "demo", "---\nname: demo\n" + D + "metadata: {a: b}\n---\n"),
    ("flow-sequence", "demo", "---\nname: demo\n" + D + "allowed-tools: [Read, Grep]\n---\n"),
    ("block-list", "demo", "---\nname: demo\n" + D + "allowed-tools:\n  - Read\n---\n"),
    ("nested-metadata", "demo", "---\nname: demo\n" + D + "metadata:\n  author: x\n  version: 1\n---\n"),
    ("anchor", "demo", "---\nname: &n demo\ndescription: *n\n---\n"),
    ("tag", "demo", "---\nname: !!str demo\n" + D + "---\n"),
    ("no-frontmatter", "demo", "# just a title\n"),
    ("unclosed", "demo", "---\nname: demo\n" + D),
    ("empty-frontmatter", "demo", "---\n---\nbody\n"),
    ("missing-name", "demo", "---\n" + D + "---\n"),
    ("missing-description", "demo", "---\nname: demo\n---\n"),
    ("tab-indent", "demo", "---\nname: demo\n\tdescription: t\n---\n"),
    (
        "license-and-tools",
        "demo",
        "---\nname: demo\n" + D + "license: MIT\nallowed-tools: Bash(git:*) Read\n---\n",
    ),
]


def make(tmp_path: Path, case: str, folder: str, text: str) -> Path:
    skill = tmp_path / case / folder
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(text, encoding="utf-8")
    return skill


@pytest.mark.parametrize(("case", "folder", "text"), CASES, ids=[c[0] for c in CASES])
def test_validation_agrees_with_skills_ref(tmp_path: Path, case: str, folder: str, text: str) -> None:
    skill = make(tmp_path, case, folder, text)
    reference = skills_ref.validate(skill)
    beyond_spec_only = bool(reference) and all(e.startswith("Unexpected fields") for e in reference)
    strict = validate_folder(skill, strict=True)
    assert strict.valid == (not reference), (strict.errors, reference)
    default = validate_folder(skill)
    assert default.valid == (not reference or beyond_spec_only), (default.errors, reference)
    if beyond_spec_only and case != "client-key":
        assert default.warnings  # kbkit still says so


@pytest.mark.git
def test_add_validates_as_the_reference_does(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    make(root / "skill-sources", "dup", "demo", "---\nname: demo\nname: other\n" + D + "---\n")
    with pytest.raises(SkillError, match="line 3: the key 'name' is given twice"):
        add(load_settings(root), "./skill-sources/dup/demo")
    make(root / "skill-sources", "yes", "café", "---\nname: café\ndescription: yes\n---\n")
    assert add(load_settings(root), "./skill-sources/yes/café").installed == ["café"]


@pytest.mark.processes
def test_validate_reports_every_skill_below_a_folder_with_all_their_errors(tmp_path: Path) -> None:
    for case, folder, text in CASES[:8]:
        make(tmp_path / "tree", case, folder, text)
    result = subprocess.run(
        [*forked_kbkit(), "skills", "validate", str(tmp_path / "tree"), "--json"],
        capture_output=True,
        text=True,
    )
    report = json.loads(result.stdout)
    assert result.returncode == 1
    verdicts = {Path(item["path"]).parent.name: item["valid"] for item in report["skills"]}
    assert verdicts == {
        "valid": True, "duplicate-name": False, "description-yes": True, "numeric-name": True,
        "non-ascii-name": True, "han-name": True, "ligature-name": True, "uppercase": False,
    }  # fmt: skip
    upper = next(i for i in report["skills"] if "uppercase" in i["path"])
    assert upper["errors"] == ["the name 'Demo' must be lowercase"]
