"""Restricted folders as configuration: who reads which folder, overlaps refused, a commit that
widens a grant waiting for the operator's trust, and the doctor's account of them (docs/adr/0070)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.config.model import KbkitConfig
from kbkit.config.restricted import PUBLIC, Reader
from tests.helpers.http import personal_tokens
from tests.helpers.project import make_project
from tests.helpers.trust import trust_project

FILES = {"guide.md": "# Guide\n\ntext\n", "security/keys.md": "# Keys\n\ntext\n"}
CONFIG = """[kb]
path = "docs"

[restricted.security]
paths = ["security/"]
tokens = ["alice"]
claims = { groups = ["sec"] }
"""


def folders(config: dict) -> KbkitConfig:
    return KbkitConfig.model_validate({"restricted": config})


def test_a_path_belongs_to_its_restricted_folder_whatever_its_case_or_normalization() -> None:
    found = load_folders({"security": {"paths": ["Sécurité/"], "tokens": ["alice"]}})
    for path in ("sécurité/a.md", "SÉCURITÉ/a.md", "se\u0301curite\u0301/a.md", "Sécurité"):
        assert found.folder_of(path) == "security", path
    for path in ("securite/a.md", "sécurité-old/a.md", "a/sécurité/b.md"):
        assert found.folder_of(path) == PUBLIC, path
    assert found.withheld_prefix("Sécurité/deep/a.md") == "Sécurité"


def test_readers_are_tokens_subjects_or_claim_values_and_nobody_else() -> None:
    found = load_folders(
        {
            "security": {
                "paths": ["security/"],
                "tokens": ["alice"],
                "subjects": ["u1"],
                "claims": {"groups": ["sec"]},
            }
        }
    )
    granted = [
        Reader("token", "alice"),
        Reader("oauth", "u1", "u1"),
        Reader("oauth", "bob", "bob", {"groups": ("eng", "sec")}),
    ]
    refused = [
        Reader("token", "mallory"),
        Reader("shared", "shared"),
        Reader("anonymous", "anonymous"),
        Reader("oauth", "alice", "alice"),  # a subject named like a granted token is not that token
        Reader("token", "u1"),
        Reader("oauth", "eve", "eve", {"roles": ("sec",)}),
    ]
    for reader in granted:
        assert "security" in found.readable(reader), reader
    for reader in refused:
        assert found.readable(reader) == {PUBLIC}, reader
    assert found.readable(None) == {PUBLIC, "security"}  # stdio: the member's own checkout


@pytest.mark.parametrize(
    "config",
    [
        {"a": {"paths": ["security/"]}, "b": {"paths": ["security/keys/"]}},
        {"a": {"paths": ["Security"]}, "b": {"paths": ["security/x.md"]}},
        {"a": {"paths": ["../etc"]}},
        {"a": {"paths": ["/abs"]}},
        {"a": {"paths": []}},
        {"Bad Name": {"paths": ["x/"]}},
    ],
)
def test_overlapping_or_malformed_restricted_folders_are_refused(config: dict) -> None:
    with pytest.raises(ValueError):
        folders(config)


def load_folders(config: dict):  # type: ignore[no-untyped-def]
    from kbkit.config.restricted import Folders

    return Folders.of(folders(config).restricted)


@pytest.mark.git
def test_a_widened_grant_in_a_commit_waits_for_the_operators_trust(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", FILES, CONFIG)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "kbkit.toml"], check=True)
    trust_project(root)  # the operator trusted the tracked file as it was
    for widened in (
        CONFIG.replace('tokens = ["alice"]', 'tokens = ["alice", "mallory"]'),
        CONFIG.replace('["sec"]', '["sec", "everyone"]'),
        CONFIG.replace('paths = ["security/"]', 'paths = ["security/keys/"]'),
        CONFIG.replace("[restricted.security]", "[restricted.renamed]"),
    ):
        (root / "kbkit.toml").write_text(widened, encoding="utf-8")
        settings = load_settings(root)
        assert settings.waiting("restricted") is not None, widened
        readers = settings.restricted.readable(Reader("token", "mallory"))
        assert readers == {PUBLIC}, widened
        assert settings.restricted.folder_of("security/keys.md") != PUBLIC, widened
        assert settings.restricted.folder_of("security/other.md") != PUBLIC, widened
        everyone = settings.restricted.readable(Reader("oauth", "x", "x", {"groups": ("everyone",)}))
        assert everyone == {PUBLIC}, widened
    narrowed = CONFIG.replace('tokens = ["alice"]', "tokens = []").replace(
        '"security/"', '"security/", "hr/"'
    )
    (root / "kbkit.toml").write_text(narrowed, encoding="utf-8")
    settings = load_settings(root)
    assert settings.waiting("restricted") is None
    assert settings.config.restricted["security"].tokens == ()
    assert settings.restricted.folder_of("hr/pay.md") == "security"


def test_the_doctor_lists_each_restricted_folder_and_a_grant_that_names_nobody(tmp_path: Path) -> None:
    from kbkit.diagnostics import run_checks

    root = make_project(
        tmp_path / "p", FILES, CONFIG.replace('tokens = ["alice"]', 'tokens = ["alice", "ghost"]')
    )
    personal_tokens(root, "alice")
    findings = [f for f in run_checks(root) if f.check == "grants"]
    assert any(f.status == "ok" and "security/" in f.finding and "token alice" in f.finding for f in findings)
    warned = [f for f in findings if f.status == "warn"]
    assert any("ghost" in f.finding and f.fix for f in warned)
    assert any("[server.http.oauth] is not set" in f.finding for f in warned)  # claims without OAuth
