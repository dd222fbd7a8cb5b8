"""What `kbkit serve` writes on stderr, as README says it: with `--log-format json` every line is
JSON (the boot and status lines too, not only the audit lines), and refusals held back by the
audit's rate limit are counted at shutdown even when no later refusal comes to carry the count."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx2
import pytest

from kbkit.errors import ExitCode
from tests.helpers.http import INITIALIZE, JSON_HEADERS, HttpServer, auth_headers
from tests.helpers.serve import kbkit_command


def json_lines(text: str) -> list[dict[str, object]]:
    lines = [line for line in text.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}\nin:\n{text}") from None
    return parsed


@pytest.mark.processes
def test_log_format_json_makes_the_stdio_boot_and_status_lines_json(project: Path) -> None:
    done = subprocess.run(
        [*kbkit_command(), "serve", "--root", str(project), "--log-format", "json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stderr)
    messages = [str(event["message"]) for event in events if event["event"] == "status"]
    assert messages[0].startswith("kbkit ") and "transport: stdio" in messages[0]
    assert any(message.startswith("memory: off") for message in messages)
    assert all(not message.startswith("[kbkit]") for message in messages)


@pytest.mark.processes
def test_log_format_json_makes_every_http_stderr_line_json(project: Path) -> None:
    server = HttpServer(project, args=("--log-format", "json"))
    try:
        server.wait_ready()
        answer = httpx2.post(
            server.url, json=INITIALIZE, headers={**JSON_HEADERS, **auth_headers()}, timeout=30
        )
        assert answer.status_code == 200
    finally:
        assert server.stop() == ExitCode.INTERRUPTED, server.stderr()
    events = json_lines(server.stderr())
    kinds = {event["event"] for event in events}
    assert {"status", "mcp_request"} <= kinds, kinds
    assert any(str(event.get("message", "")).startswith("http: http://127.0.0.1:") for event in events)
    assert any(str(event.get("message", "")).startswith("stopped:") for event in events)


@pytest.mark.processes
def test_refusals_held_back_by_the_rate_limit_are_counted_at_shutdown(project: Path) -> None:
    server = HttpServer(project)
    try:
        server.wait_ready()
        for _ in range(3):  # within one interval: the first is logged, the other two held back
            refused = httpx2.post(
                server.url,
                json=INITIALIZE,
                headers={**JSON_HEADERS, **auth_headers("wrong-token-0123456789")},
            )
            assert refused.status_code == 401
    finally:
        server.stop()
    audit = [line for line in server.stderr().splitlines() if "[kbkit] audit " in line]
    assert len(audit) == 2, server.stderr()
    assert " - (-) " in audit[0] and " 401 " in audit[0]
    assert "2 more refused (401) not logged in the last" in audit[1], audit[1]


def test_log_format_json_makes_the_http_stacks_warnings_json_too() -> None:
    """The rate-limited handler every warning of the HTTP stack goes through, in JSON mode."""
    import io
    import logging

    from kbkit.server.logs import OneLineFormatter, RateLimitedHandler

    stream = io.StringIO()
    handler = RateLimitedHandler(stream)
    handler.setFormatter(OneLineFormatter("json"))
    record = logging.LogRecord(
        "uvicorn.error", logging.WARNING, __file__, 1, "Invalid HTTP request", None, None
    )
    handler.handle(record)
    (event,) = json_lines(stream.getvalue())
    assert event["event"] == "status" and event["message"] == "(uvicorn.error) Invalid HTTP request"


def test_refusals_held_back_are_counted_when_their_interval_ends_with_no_refusal_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The timer: no later refusal and no shutdown, yet the count is printed once the interval is over."""
    from kbkit.server.auth import audit as audit_module
    from kbkit.server.auth.audit import Audit, Entry
    from tests.helpers.wait import wait_until

    monkeypatch.setattr(audit_module, "REFUSED_INTERVAL", 0.2)
    lines: list[str] = []
    audit = Audit("text", lines.append)
    for _ in range(4):
        audit.record(Entry("-", "-", "POST", None, 401, 10, 1.0))
    wait_until(lambda: len(lines) == 2, timeout=30, what="the held-back count")
    assert "3 more refused (401) not logged in the last" in lines[1], lines
    audit.close()
    assert len(lines) == 2  # nothing held back any more: shutdown adds no line
