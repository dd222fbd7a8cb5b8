"""`kbkit servers import`: servers a team wrote by hand into its agents' files, literal keys and all,
taken into kbkit.toml with the keys moved to .env.local, then owned by sync."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kbkit.config import load_settings, read_env_file
from kbkit.sync import importer
from kbkit.sync.importer import apply_import, plan_import
from tests.helpers.serve import kbkit_in_process
from tests.helpers.sync import git_repo, run_sync

GITHUB_PAT = "ghp_literalGithubToken1234567890"
WIKI_BEARER = "wiki-literal-bearer-0987654321"
SEARCH_KEY = "sk-search-literal-55555555"
SECRETS = (GITHUB_PAT, WIKI_BEARER, SEARCH_KEY)
KBKIT_TOML = '# the team\'s kbkit\n[kb]\npath = "docs"  # our docs\n[sync]\nclients = {clients}\n'

HAND_WRITTEN = {
    ".mcp.json": {
        "mcpServers": {
            "github": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GITHUB_PAT, "LOG_LEVEL": "debug"},
            },
            "wiki": {
                "type": "http",
                "url": "https://wiki.example/mcp",
                "headers": {"Authorization": f"Bearer {WIKI_BEARER}"},
            },
        }
    },
    ".cursor/mcp.json": {
        "mcpServers": {
            "search": {"url": f"https://search.example/mcp?api_key={SEARCH_KEY}&region=eu"},
            "db": {"command": "db-mcp", "env": {"DB_PASSWORD": "${env:DB_PASSWORD}"}},
        }
    },
}
CODEX = """# my codex config
model = "o4"  # keep me

[mcp_servers.docs]
command = "docs-mcp"
env_vars = ["DOCS_TOKEN"]

[mcp_servers.remote]
url = "https://remote.example/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
"""
OPENCODE = {
    "mcp": {
        "local-tool": {
            "type": "local",
            "command": ["tool-mcp", "--x"],
            "environment": {"API_KEY": "{env:API_KEY}"},
        }
    }
}


def hand_written(tmp_path: Path, clients: str = '["claude-code", "cursor", "codex", "opencode"]') -> Path:
    root = git_repo(tmp_path, [])
    (root / "kbkit.toml").write_text(KBKIT_TOML.format(clients=clients), encoding="utf-8")
    for rel, data in HAND_WRITTEN.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(data, indent=2), encoding="utf-8")
    (root / ".codex").mkdir()
    (root / ".codex" / "config.toml").write_text(CODEX, encoding="utf-8")
    (root / "opencode.json").write_text(json.dumps(OPENCODE), encoding="utf-8")
    return root


def files_holding_a_secret(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.parts and path.name != ".env.local":
            data = path.read_bytes()
            found += [str(path.relative_to(root)) for secret in SECRETS if secret.encode() in data]
    return found


@pytest.mark.git
def test_import_moves_every_literal_key_to_env_local_and_sync_owns_the_entries(tmp_path: Path) -> None:
    root = hand_written(tmp_path)
    assert files_holding_a_secret(root)
    done = kbkit_in_process("servers", "import", "--yes", "--root", str(root))
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((root / "kbkit.toml").read_text())
    servers = config["servers"]
    assert set(servers) == {"github", "wiki", "search", "db", "docs", "remote", "local-tool"}
    assert servers["github"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}",
        "LOG_LEVEL": "debug",
    }
    assert servers["wiki"]["headers"] == {"Authorization": "Bearer ${WIKI_TOKEN}"}
    assert servers["search"]["url"] == "https://search.example/mcp?api_key=${SEARCH_API_KEY}&region=eu"
    assert servers["db"]["env"] == {"DB_PASSWORD": "${DB_PASSWORD}"}  # a reference stays one
    assert servers["docs"]["env"] == {"DOCS_TOKEN": "${DOCS_TOKEN}"}  # Codex's names-only dialect
    assert servers["remote"]["headers"] == {"Authorization": "Bearer ${REMOTE_TOKEN}"}
    assert servers["local-tool"]["env"] == {"API_KEY": "${API_KEY}"}
    assert "# our docs" in (root / "kbkit.toml").read_text()  # comments kept
    assert read_env_file(root) == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": GITHUB_PAT,
        "WIKI_TOKEN": WIKI_BEARER,
        "SEARCH_API_KEY": SEARCH_KEY,
    }
    assert files_holding_a_secret(root) == []
    codex = (root / ".codex" / "config.toml").read_text()
    assert "# my codex config" in codex and 'model = "o4"  # keep me' in codex
    entry = json.loads((root / ".mcp.json").read_text())["mcpServers"]["github"]
    assert entry["args"][-4:-2] == ["run", "github"]
    assert run_sync(root, mode="check").failures == []
    assert "nothing to import" in kbkit_in_process("servers", "import", "--root", str(root)).stdout


@pytest.mark.git
def test_the_dry_run_shows_the_diff_and_the_variables_never_a_value_and_writes_nothing(
    tmp_path: Path,
) -> None:
    root = hand_written(tmp_path)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}
    done = kbkit_in_process("servers", "import", "--dry-run", "--root", str(root))
    assert done.returncode == 0
    assert "+[servers.github]" in done.stdout and "WIKI_TOKEN=<the value from .mcp.json (wiki)" in done.stdout
    assert not any(secret in done.stdout + done.stderr for secret in SECRETS)
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before


@pytest.mark.git
def test_without_a_terminal_or_yes_nothing_is_done(tmp_path: Path) -> None:
    root = hand_written(tmp_path)
    done = kbkit_in_process("servers", "import", "--root", str(root))
    assert done.returncode == 1 and "--yes" in done.stderr
    assert "servers" not in tomllib.loads((root / "kbkit.toml").read_text())


@pytest.mark.git
def test_a_stop_halfway_loses_nothing_and_a_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = hand_written(tmp_path)
    settings = load_settings(root)
    plan = plan_import(settings)
    real = importer.atomic_write_text

    def stop_at_kbkit_toml(path: Path, text: str, **options: Any) -> bool:
        if path.name == "kbkit.toml":
            raise KeyboardInterrupt
        return real(path, text, **options)

    monkeypatch.setattr(importer, "atomic_write_text", stop_at_kbkit_toml)
    with pytest.raises(KeyboardInterrupt):
        apply_import(settings, plan)
    monkeypatch.undo()
    assert read_env_file(root)["WIKI_TOKEN"] == WIKI_BEARER  # the values are safe first
    assert json.loads((root / ".mcp.json").read_text()) == HAND_WRITTEN[".mcp.json"]  # nothing else moved
    done = kbkit_in_process("servers", "import", "--yes", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert read_env_file(root)["WIKI_TOKEN"] == WIKI_BEARER
    assert "WIKI_TOKEN_2" not in read_env_file(root)  # the same value keeps its name
    assert files_holding_a_secret(root) == []


@pytest.mark.git
def test_a_name_env_local_already_uses_for_another_value_gets_a_new_one(tmp_path: Path) -> None:
    root = hand_written(tmp_path)
    (root / ".env.local").write_text("WIKI_TOKEN=someone-elses-token-value\n", encoding="utf-8")
    assert kbkit_in_process("servers", "import", "--yes", "--root", str(root)).returncode == 0
    values = read_env_file(root)
    assert values["WIKI_TOKEN"] == "someone-elses-token-value" and values["WIKI_TOKEN_2"] == WIKI_BEARER
    assert tomllib.loads((root / "kbkit.toml").read_text())["servers"]["wiki"]["headers"] == {
        "Authorization": "Bearer ${WIKI_TOKEN_2}"
    }


@pytest.mark.git
def test_servers_it_cannot_take_are_left_in_place_with_the_reason(tmp_path: Path) -> None:
    root = git_repo(tmp_path, ["claude-code"])
    hand = {
        "mcpServers": {
            "basic": {"type": "http", "url": "https://user:pw@basic.example/mcp"},
            "insecure": {"type": "http", "url": "http://insecure.example/mcp"},
            "fine": {"command": "fine-mcp"},
        }
    }
    (root / ".mcp.json").write_text(json.dumps(hand), encoding="utf-8")
    done = kbkit_in_process("servers", "import", "--yes", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert "left as it is" in done.stderr and "basic" in done.stderr and "insecure" in done.stderr
    assert set(tomllib.loads((root / "kbkit.toml").read_text())["servers"]) == {"fine"}
    kept = json.loads((root / ".mcp.json").read_text())["mcpServers"]
    assert kept["basic"] == hand["mcpServers"]["basic"] and kept["insecure"] == hand["mcpServers"]["insecure"]


ARG_SECRETS = ("ghp_argumentToken1234567890", "hunter2-db-password", "sk-flagvalue-abcdefgh1234")


@pytest.mark.git
def test_secrets_in_a_commands_arguments_move_to_env_local_too(tmp_path: Path) -> None:
    root = git_repo(tmp_path, [])
    (root / "kbkit.toml").write_text(KBKIT_TOML.format(clients='["claude-code"]'), encoding="utf-8")
    args = [
        "--token",
        ARG_SECRETS[0],
        f"postgres://app:{ARG_SECRETS[1]}@db.internal/app",
        f"--api-key={ARG_SECRETS[2]}",
        "--path",
        "/srv/data",
    ]
    servers = {"mcpServers": {"pg": {"command": "pg-mcp", "args": args}}}
    (root / ".mcp.json").write_text(json.dumps(servers), encoding="utf-8")
    dry = kbkit_in_process("servers", "import", "--dry-run", "--root", str(root))
    assert not any(secret in dry.stdout + dry.stderr for secret in ARG_SECRETS)
    target = tmp_path / "secrets" / "env"  # the member keeps .env.local elsewhere, linked
    target.parent.mkdir()
    target.write_text("OTHER=1\n")
    (root / ".env.local").symlink_to(target)
    assert kbkit_in_process("servers", "import", "--yes", "--root", str(root)).returncode == 0
    command = tomllib.loads((root / "kbkit.toml").read_text())["servers"]["pg"]["command"]
    assert command == [
        "pg-mcp",
        "--token",
        "${PG_TOKEN}",
        "postgres://app:${PG_PASSWORD}@db.internal/app",
        "--api-key=${PG_API_KEY}",
        "--path",
        "/srv/data",
    ]
    assert not any(secret in (root / "kbkit.toml").read_text() for secret in ARG_SECRETS)
    assert (root / ".env.local").is_symlink() and set(ARG_SECRETS) <= set(read_env_file(root).values())
    assert load_settings(root).waiting("servers.pg") is None  # imported by the member: theirs


@pytest.mark.git
def test_an_env_local_created_by_import_is_private(tmp_path: Path) -> None:
    import stat

    root = hand_written(tmp_path)
    assert kbkit_in_process("servers", "import", "--yes", "--root", str(root)).returncode == 0
    assert stat.S_IMODE((root / ".env.local").stat().st_mode) == 0o600
