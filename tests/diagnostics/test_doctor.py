"""`kbkit doctor`: each check with its broken condition made real, the JSON schema, and docs/troubleshooting.md's
troubleshooting table kept equal to the check list."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from kbkit.diagnostics import CHECKS, check_parsers, run_checks, troubleshooting_table
from tests.helpers.memory import KEY, MemoryUpstream
from tests.helpers.paths import REPO
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process, serve_with_no_client
from tests.helpers.trust import trust_project

SCHEMA = json.loads((REPO / "docs" / "doctor.schema.json").read_text())


def git_project(tmp_path: Path, extra: str = "") -> Path:
    root = make_project(
        tmp_path / "repo", config=f'[kb]\npath = "docs"\n[sync]\nclients = ["claude-code"]\n{extra}'
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def doctor(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return kbkit_in_process("doctor", "--root", str(root), *args, env=env)


def by_check(root: Path, env: dict | None = None) -> dict[str, list[dict]]:
    report = json.loads(doctor(root, "--json", env=env).stdout)
    jsonschema.validate(report, SCHEMA)
    out: dict[str, list[dict]] = {}
    for item in report["checks"]:
        out.setdefault(item["check"], []).append(item)
    return out


def ready(tmp_path: Path) -> Path:
    root = git_project(tmp_path)
    for command in ("index", "sync"):
        assert kbkit_in_process(command, "--root", str(root)).returncode == 0
    return root


@pytest.mark.git
def test_a_healthy_project_is_all_ok_with_exit_code_0(tmp_path: Path) -> None:
    root = ready(tmp_path)
    result = doctor(root)
    assert result.returncode == 0, result.stdout
    assert "FAIL" not in result.stdout and "WARN" not in result.stdout


@pytest.mark.git
def test_json_output_follows_the_documented_schema_and_names_every_check(tmp_path: Path) -> None:
    root = ready(tmp_path)
    report = json.loads(doctor(root, "--json").stdout)
    jsonschema.validate(report, SCHEMA)
    assert {item["check"] for item in report["checks"]} == {check.name for check in CHECKS}
    assert report["status"] == "ok"


@pytest.mark.git
def test_a_deleted_virtualenv_in_mcp_json_is_a_failure_with_exit_code_1(tmp_path: Path) -> None:
    root = ready(tmp_path)
    data = json.loads((root / ".mcp.json").read_text())
    data["mcpServers"]["kb"]["command"] = str(tmp_path / "deleted-venv" / "bin" / "kbkit")
    (root / ".mcp.json").write_text(json.dumps(data))
    result = doctor(root)
    assert result.returncode == 1
    assert "client-commands: .mcp.json runs" in result.stdout and "no longer exists" in result.stdout
    assert "fix: reinstall kbkit in this checkout, then run kbkit sync" in result.stdout


def test_a_missing_pypdf_is_a_warning_that_says_how_to_install_it(project: Path, monkeypatch) -> None:
    from kbkit.config import load_settings
    from kbkit.diagnostics import Context

    monkeypatch.setitem(sys.modules, "pypdf", None)  # `import pypdf` now fails as if uninstalled
    with pytest.raises(ImportError):
        import pypdf  # noqa: F401
    (finding,) = check_parsers(Context(project, load_settings(project)))
    assert finding.status == "warn" and "pypdf is not installed" in finding.finding
    assert "pip install pypdf" in finding.fix


@pytest.mark.processes
def test_a_wrong_memory_key_is_reported_as_rejected(tmp_path: Path) -> None:
    peer = MemoryUpstream(tmp_path).start()
    try:
        root = git_project(tmp_path, f'[memory]\nurl = "{peer.url}"\ntimeout = 5\n')
        (memory,) = by_check(root, env={"HINDSIGHT_API_KEY": "hsk_wrong_key_000"})["memory"]
        assert memory["status"] == "fail" and "key rejected" in memory["finding"]
        assert "hsk_wrong_key_000" not in json.dumps(memory)
        (memory,) = by_check(root, env={"HINDSIGHT_API_KEY": KEY})["memory"]
        assert memory["status"] == "ok" and "listed 6 tools" in memory["finding"]
    finally:
        peer.kill()


@pytest.mark.git
def test_a_bank_set_for_a_memory_url_without_a_bank_is_said_to_do_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbkit.config import load_settings
    from kbkit.diagnostics import Context, check_memory

    monkeypatch.delenv("HINDSIGHT_API_KEY", raising=False)  # no key: the check makes no connection
    memory = '[memory]\nurl = "http://127.0.0.1:1/mcp"\n'
    root = git_project(tmp_path, memory)
    (key,) = check_memory(Context(root, load_settings(root)))
    assert "HINDSIGHT_API_KEY is not set" in key.finding  # nothing about a bank nobody wrote
    (root / "kbkit.toml").write_text((root / "kbkit.toml").read_text() + 'bank = "team"\n')
    assert len(check_memory(Context(root, load_settings(root)))) == 1  # the bank waits for trust
    trust_project(root)
    key, bank = check_memory(Context(root, load_settings(root)))
    assert bank.status == "warn"
    assert bank.finding == "bank = 'team' has no effect: [memory] url has no {bank} in it"
    assert bank.fix and "{bank}" in bank.fix


@pytest.mark.git
def test_a_stale_output_and_a_hand_edit_are_sync_warnings(tmp_path: Path) -> None:
    root = ready(tmp_path)
    (root / ".mcp.json").unlink()
    (finding, *steps) = by_check(root)["sync"]
    assert finding["status"] == "warn" and ".mcp.json: missing" in finding["finding"]
    assert steps and all(step["finding"].startswith("step in the agent: ") for step in steps)
    assert kbkit_in_process("sync", "--root", str(root)).returncode == 0
    data = json.loads((root / ".mcp.json").read_text())
    data["mcpServers"]["kb"]["args"].append("--extra")
    (root / ".mcp.json").write_text(json.dumps(data))
    finding, *_ = by_check(root)["sync"]
    assert "edited by hand" in finding["finding"]


@pytest.mark.git
def test_a_tampered_skill_is_a_failure(tmp_path: Path) -> None:
    root = ready(tmp_path)
    skill = root / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Use for the demo.\n---\nDo it.\n")
    assert kbkit_in_process("skills", "add", "./skills/demo", "--root", str(root)).returncode == 0
    (root / ".agents" / "skills" / "demo" / "SKILL.md").write_text("tampered\n")
    findings = by_check(root)["skills"]
    assert (
        findings[0]["status"] == "fail"
        and "the installed copy was changed (SKILL.md)" in findings[0]["finding"]
    )


@pytest.mark.git
def test_a_corrupt_index_and_stale_documents_are_reported(tmp_path: Path) -> None:
    root = ready(tmp_path)
    (root / "docs" / "new.md").write_text("# New\n")
    (finding,) = by_check(root)["index"]
    assert finding["status"] == "warn" and "1 stale" in finding["finding"]
    db = root / ".kbkit" / "index.db"
    db.write_bytes(b"garbage" * 1000)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    (finding,) = by_check(root)["index"]
    assert finding["status"] == "fail" and "unreadable" in finding["finding"]
    assert db.read_bytes().startswith(b"garbage")  # the doctor looks; it does not repair


@pytest.mark.git
def test_a_state_folder_that_cannot_be_written_is_a_failure(tmp_path: Path) -> None:
    root = git_project(tmp_path)
    (root / ".kbkit").write_text("a file where the state folder belongs")
    (finding,) = by_check(root)["state"]
    assert finding["status"] == "fail" and "is not writable" in finding["finding"]


@pytest.mark.git
def test_a_broken_kbkit_toml_is_a_failure_naming_the_key(tmp_path: Path) -> None:
    root = git_project(tmp_path, "[parsers]\nenabld = []\n")
    findings = run_checks(root)
    (config,) = [f for f in findings if f.check == "config"]
    assert config.status == "fail" and "[parsers.enabld]" in config.finding and "'enabled'" in config.finding


@pytest.mark.processes
def test_a_missing_dependency_stops_the_command_with_one_line_not_a_traceback(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text("import sys\nsys.modules['tomlkit'] = None\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    # importlib sees tomlkit as absent: exactly what a half-built virtualenv looks like
    result = subprocess.run(
        [sys.executable, "-c", "from kbkit.entry import main; main()", "index"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 3  # the environment (docs/commands.md's exit codes)
    assert result.stderr.startswith("kbkit: error: dependencies not installed: tomlkit - run:")
    assert "Traceback" not in result.stderr


def test_the_troubleshooting_table_is_written_from_the_check_list() -> None:
    readme = (REPO / "docs" / "troubleshooting.md").read_text()
    start, end = "<!-- troubleshooting:start -->\n", "<!-- troubleshooting:end -->"
    table = readme.split(start, 1)[1].split(end, 1)[0]
    assert table == troubleshooting_table()


@pytest.mark.wheel
@pytest.mark.timeout(900)  # pip installing into a fresh virtualenv on a loaded machine
def test_the_readme_run_command_works_in_a_clean_copy_with_a_fresh_virtualenv(
    tmp_path: Path, wheelhouse: Path
) -> None:
    """The newcomer's path: the first README command, verbatim, in a copy of the repository."""
    readme = (REPO / "README.md").read_text()
    run_command = readme.split("## Set-up", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    copy = tmp_path / "kbkit"
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in files:
        if (REPO / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, copy / rel)
    # Verbatim, with pip settings from the environment only: packages from the run's wheelhouse
    # (resolved from the indexes once for every install of the run), and no byte-compiling of every
    # installed module at install time (kbkit's imports are compiled as they are first imported).
    pip_settings = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse), "PIP_COMPILE": "0"}
    result = subprocess.run(
        ["bash", "-c", run_command],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **pip_settings},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "docs/adr/0003-one-guard-sequence.md" in result.stdout
        or "0003-one-guard-sequence.md" in result.stdout
    )


# -- what the doctor and the boot lines say when little is set up ------------------------------


@pytest.mark.git
def test_a_memory_table_with_only_a_bank_is_said_to_lack_its_url(tmp_path: Path) -> None:
    root = git_project(tmp_path, '[memory]\nbank = "team"\n')
    (finding,) = by_check(root)["memory"]
    assert finding["status"] == "warn", finding
    assert "[memory] has no url" in finding["finding"] and "no [memory] section" not in finding["finding"]
    assert "add url" in finding["fix"]


@pytest.mark.git
def test_the_memory_key_in_env_local_without_a_memory_url_is_said_to_be_unused(tmp_path: Path) -> None:
    root = git_project(tmp_path)
    (root / ".env.local").write_text("HINDSIGHT_API_KEY=hs-key-0123456789\n")
    (finding,) = by_check(root)["memory"]
    assert finding["status"] == "warn", finding
    assert "HINDSIGHT_API_KEY in .env.local is unused" in finding["finding"]
    assert "hs-key-0123456789" not in json.dumps(finding)


@pytest.mark.git
def test_no_memory_at_all_stays_an_ok_off(tmp_path: Path) -> None:
    (finding,) = by_check(git_project(tmp_path))["memory"]
    assert finding["status"] == "ok" and finding["finding"].startswith("off: not configured"), finding


@pytest.mark.processes
def test_the_boot_line_of_a_memory_table_with_only_a_bank_says_the_url_is_missing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[memory]\nbank = "team"\n')
    (root / ".env.local").write_text("HINDSIGHT_API_KEY=hs-key-0123456789\n")
    done = serve_with_no_client(root)
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("[kbkit] memory:")]
    assert "[memory] has no url (bank set" in line and "add a [memory] section" not in line
    assert "HINDSIGHT_API_KEY in .env.local is unused" in line and "hs-key-0123456789" not in done.stderr


@pytest.mark.git
def test_outside_a_git_work_tree_the_doctor_says_so_instead_of_ignored_by_git(tmp_path: Path) -> None:
    root = make_project(tmp_path / "plain", config='[kb]\npath = "docs"\n[sync]\nclients = ["claude-code"]\n')
    assert kbkit_in_process("sync", "--root", str(root)).returncode == 0
    (finding, *_) = by_check(root)["sync"]
    assert "not a git work tree" in finding["finding"], finding
    assert "ignored by git" not in finding["finding"]
    assert ".gitignore block" in finding["finding"]  # and what that means for the generated files


@pytest.mark.git
def test_inside_a_git_work_tree_the_client_configs_are_said_to_be_ignored(tmp_path: Path) -> None:
    (finding, *_) = by_check(ready(tmp_path))["sync"]
    assert finding["finding"].endswith("fresh and ignored by git"), finding


@pytest.mark.git
def test_without_a_skills_lock_the_doctor_does_not_claim_skills_were_verified(tmp_path: Path) -> None:
    (finding,) = by_check(ready(tmp_path))["skills"]
    assert finding["status"] == "ok"
    assert "no skills-lock.json" in finding["finding"] and "verified" not in finding["finding"], finding


@pytest.mark.git
def test_the_doctor_counts_tool_pre_approvals_apart_from_client_configs(tmp_path: Path) -> None:
    (finding, *_) = by_check(ready(tmp_path))["sync"]
    assert finding["finding"].startswith("1 client config and 1 tool pre-approval fresh"), finding


def test_anonymous_mode_with_personal_tokens_is_a_warning_that_says_they_are_ignored(tmp_path: Path) -> None:
    from kbkit.server.auth.tokens import create

    root = make_project(tmp_path / "project")
    (root / ".env.local").write_text("MCP_ALLOW_ANONYMOUS=1\n")
    create(root / ".kbkit" / "tokens.json", "alice", "read", None)
    findings = by_check(root)["auth"]
    warned = [f for f in findings if f["status"] == "warn" and "MCP_ALLOW_ANONYMOUS" in f["finding"]]
    assert warned and "ignores personal tokens created after it started" in warned[0]["finding"]
