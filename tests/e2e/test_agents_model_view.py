"""What an agent's model is handed of kbkit's tool results, seen by the model itself.

Each agent's own CLI runs one headless turn offline against a scripted model on loopback
(tests/peers/fake_model.py): the model calls `search`, then `get_document`, and the requests it
gets afterwards hold each tool result exactly as the agent passed it on. Claude Code hands its
model the structured content only, Gemini CLI the text blocks only, Qwen Code both
(docs/clients.md, "What reaches the model"). Either way the document's text must arrive, and
the search hits must be there once in the form that agent reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_agents import synced
from tests.helpers.serve import kbkit_command
from tests.peers import agents
from tests.peers.fake_model import tool_results

PORT = 18095
"""The scripted model's port inside the run's own network namespace."""
FAKE_MODEL = Path(agents.__file__).resolve().parent / "fake_model.py"
MARK = "PAPAYA-42"
"""A phrase only the document's text holds: it reached the model when a tool result has it."""
PAGE = f"# Blue-green deploys\n\n## Switching traffic\n\nFlip the router to green. The word is {MARK}.\n"
pytestmark = [pytest.mark.agents, pytest.mark.xdist_group("agents")]


def _claude(home: Path) -> tuple[list[str], dict[str, str]]:
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    argv = ["-p", "find how we switch traffic", "--allowedTools", "mcp__kb__search", "mcp__kb__get_document"]
    return argv, {
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{PORT}",
        "ANTHROPIC_API_KEY": "offline",
        "ENABLE_TOOL_SEARCH": "false",  # else MCP tools wait behind its tool search
        "MCP_CONNECTION_NONBLOCKING": "false",  # else a headless turn may start before kb connects
        "MCP_TIMEOUT": "120000",  # its start-up wait for a server (ms): kb on a loaded machine is slow
        "MCP_CONNECT_TIMEOUT_MS": "120000",  # how long a blocking start waits (default 5 s), then goes on
    }


def _gemini(home: Path) -> tuple[list[str], dict[str, str]]:
    (home / ".gemini").mkdir(parents=True)
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(auth))
    return ["-p", "find how we switch traffic", "--yolo"], {
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{PORT}",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


def _qwen(home: Path) -> tuple[list[str], dict[str, str]]:
    (home / ".qwen").mkdir(parents=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps({"tools": {"toolSearch": {"enabled": False}}}))
    return ["-p", "find how we switch traffic", "--auth-type", "openai", "--yolo"], {
        "OPENAI_API_KEY": "offline",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{PORT}/v1",
        "OPENAI_MODEL": "fake",
    }


AGENTS: dict[str, tuple[str, Callable[[Path], tuple[list[str], dict[str, str]]], tuple[str, ...]]] = {
    "claude-code": ("claude", _claude, ()),
    "gemini": ("gemini", _gemini, ()),
    "qwen": ("qwen", _qwen, ("mcp", "approve", "kb")),
}
SEES = {"claude-code": "structured", "gemini": "text", "qwen": "both"}


def beside_the_model(argv: list[str], log: Path) -> list[str]:
    """`argv`, run beside the scripted model in the same network namespace."""
    script = (
        f'"{sys.executable}" -I "{FAKE_MODEL}" {PORT} "{log}" "switching traffic" deploy.md & model=$!; '
        f'"{sys.executable}" -c "import socket,time\nwhile True:\n try: socket.create_connection((\'127.0.0.1\',{PORT})).close(); break\n except OSError: time.sleep(0.05)"; '
        '"$@"; code=$?; kill $model; exit $code'
    )
    return ["/bin/sh", "-c", script, "sh", *argv]


def handed(log: Path) -> list[str]:
    """The text of each tool result in the last request that carried the most of them."""
    best: list[dict[str, Any]] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        body = json.loads(line)["body"]
        turns = body.get("messages") or body.get("input") or body.get("contents") or []
        if tool_results(turns) >= len(best):
            best = list(_results(turns))
    return [json.dumps(result, ensure_ascii=False) for result in best]


def _results(node: Any) -> Any:
    if isinstance(node, list):
        for item in node:
            yield from _results(item)
    elif isinstance(node, dict):
        if tool_results([node]) and not any(tool_results([value]) for value in node.values()):
            yield node
        else:
            for value in node.values():
                yield from _results(value)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("client", list(AGENTS))
def test_the_model_gets_the_hits_once_and_the_document_s_text(client: str, tmp_path: Path) -> None:
    root = synced(tmp_path / "project", "local")
    (root / "docs" / "deploy.md").write_text(PAGE, encoding="utf-8")
    done = subprocess.run([*kbkit_command(), "index", "--root", str(root)], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    cli, setup, after = AGENTS[client]
    home = tmp_path / "home"
    home.mkdir()
    argv, extra = setup(home)
    if "PYTHONPATH" in os.environ:  # a checkout's own code, for the server the agent starts
        extra["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env = agents.agent_env(home, **extra)
    executable = str(agents.executable(cli))
    if after:
        assert agents.run([executable, *after], cwd=root, env=env)[0] == 0
    log = tmp_path / "model.jsonl"
    code, text = agents.run(beside_the_model([executable, *argv], log), cwd=root, env=env)
    assert code == 0, text
    results = handed(log)
    assert len(results) == 2, (results, text)
    search, read = results
    json_hit, text_hit = '\\"path\\":\\"deploy.md\\"', "path=deploy.md offset="
    assert (json_hit in search) == (SEES[client] in ("structured", "both")), search
    assert (text_hit in search) == (SEES[client] in ("text", "both")), search
    assert MARK in read, read
