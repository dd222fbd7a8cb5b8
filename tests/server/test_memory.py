"""Session-memory tools proxied from a real memory MCP server, enabled per available credential."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from kbkit.server.auth.tokens import create
from tests.helpers.http import TEST_TOKEN, HttpServer, http_client
from tests.helpers.memory import KB_TOOLS, KEY, MEMORY_TOOLS, PEER, MemoryUpstream
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, serve_in_memory, serve_stdio
from tests.helpers.wait import closed_port, eventually
from tests.peers.node import SERVER_MEMORY, require

pytestmark = pytest.mark.anyio


@pytest.fixture
def upstream(tmp_path: Path):
    peer = MemoryUpstream(tmp_path).start()
    yield peer
    peer.kill()


def memory_project(tmp_path: Path, url: str, extra: str = "") -> Path:
    config = f'[kb]\npath = "docs"\n[memory]\nurl = "{url}"\ntimeout = 3\n{extra}'
    return make_project(tmp_path / "project", config=config)


def names(tools: list[types.Tool]) -> list[str]:
    return [tool.name for tool in tools]


@pytest.mark.processes
@pytest.mark.parametrize("mode", ERAS)
async def test_with_the_key_the_allowed_memory_tools_sit_beside_the_kb_tools(
    tmp_path, upstream, mode
) -> None:
    root = memory_project(tmp_path, upstream.url)
    async with serve_stdio(root, mode, env={"HINDSIGHT_API_KEY": KEY}) as client:
        tools = (await client.list_tools()).tools
        assert names(tools) == KB_TOOLS + MEMORY_TOOLS  # list_banks, delete_bank, search: not allowed
        recall = next(tool for tool in tools if tool.name == "recall")
        assert recall.input_schema["required"] == ["query"]
        assert recall.annotations.read_only_hint is True
        stored = await client.call_tool("retain", {"content": "we chose WAL mode for the index"})
        assert not stored.is_error
        found = await client.call_tool("recall", {"query": "WAL"})
        assert "we chose WAL mode" in found.content[0].text
        reflected = await client.call_tool("reflect", {"query": "why WAL?"})
        assert reflected.is_error  # upstream said {"status": "error"} as an ordinary result
        assert "no LLM is configured" in reflected.content[0].text
        empty = await client.call_tool("retain", {"content": ""})
        assert empty.is_error  # upstream said {"error": ...}
        assert not (await client.call_tool("search", {"query": "guard"})).is_error  # kb's own search
    stderr = (root / "serve-stderr.log").read_text()
    assert "memory: on (3 tools from" in stderr
    assert KEY not in stderr


@pytest.mark.processes
async def test_a_url_with_no_bank_in_it_serves_the_memory_tools(tmp_path, upstream, monkeypatch) -> None:
    monkeypatch.delenv("HINDSIGHT_API_KEY", raising=False)
    root = memory_project(tmp_path, f"http://127.0.0.1:{upstream.port}/mcp/default/")
    (root / ".env.local").write_text(f"HINDSIGHT_API_KEY={KEY}\n")
    async with serve_in_memory(root) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS + MEMORY_TOOLS
        assert not (await client.call_tool("retain", {"content": "no bank in the url"})).is_error


@pytest.mark.processes
async def test_a_name_that_clashes_with_a_kb_tool_is_prefixed_never_shadowing_it(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url, 'tools = ["recall", "search"]\n')
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        assert names((await client.list_tools()).tools) == [*KB_TOOLS, "recall", "memory_search"]
        kb_hit = await client.call_tool("search", {"query": "guard sequence"})
        assert kb_hit.structured_content["results"][0]["path"] == "adr/0001-guards.md"
        memory_hit = await client.call_tool("memory_search", {"query": "x"})
        assert '"from": "memory"' in memory_hit.content[0].text


@pytest.mark.processes
async def test_a_prefix_renames_every_memory_tool(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url, 'prefix = "mem_"\n')
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        assert names((await client.list_tools()).tools) == [
            *KB_TOOLS,
            "mem_retain",
            "mem_recall",
            "mem_reflect",
        ]
        assert not (await client.call_tool("mem_retain", {"content": "x"})).is_error


@pytest.mark.processes
async def test_without_the_key_memory_tools_are_absent_and_the_boot_line_says_which_variable(
    tmp_path, upstream
):
    root = memory_project(tmp_path, upstream.url)
    env = {k: v for k, v in os.environ.items() if k != "HINDSIGHT_API_KEY"}
    async with serve_stdio(root, env={**env, "HINDSIGHT_API_KEY": ""}) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS
    stderr = (root / "serve-stderr.log").read_text()
    assert (
        "memory: off (HINDSIGHT_API_KEY in the environment (it wins over .env.local) is empty: put your key "
        "after the = sign)" in stderr
    )
    assert not upstream.header_log.exists()  # never contacted


@pytest.mark.processes
async def test_a_key_set_nowhere_reads_as_not_set(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url)
    env = {k: v for k, v in os.environ.items() if k != "HINDSIGHT_API_KEY"}
    async with serve_stdio(root, env=env) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("recall", {"query": "x"})
    assert "session memory is off: HINDSIGHT_API_KEY is not set" in unknown.value.message
    assert (
        "memory: off (HINDSIGHT_API_KEY is not set: add HINDSIGHT_API_KEY=<your key> to .env.local"
        in (root / "serve-stderr.log").read_text()
    )


@pytest.mark.processes
async def test_the_key_can_live_in_env_local(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url)
    (root / ".env.local").write_text(f"HINDSIGHT_API_KEY={KEY}\n")
    async with serve_stdio(root) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS + MEMORY_TOOLS


@pytest.mark.processes
async def test_a_wrong_key_is_reported_as_rejected_and_kb_keeps_working(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url)
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": "hsk_wrong_key_999"}) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS
        assert not (await client.call_tool("search", {"query": "guard"})).is_error
    stderr = (root / "serve-stderr.log").read_text()
    assert "memory: unavailable (key rejected:" in stderr and "HTTP 401" in stderr
    assert "hsk_wrong_key_999" not in stderr


@pytest.mark.processes
async def test_an_unreachable_host_is_reported_as_such(tmp_path) -> None:
    with closed_port() as port:
        root = memory_project(tmp_path, f"http://127.0.0.1:{port}/mcp/{{bank}}/")
        async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
            assert names((await client.list_tools()).tools) == KB_TOOLS
    assert (
        "memory: unavailable (host unreachable: cannot connect to" in (root / "serve-stderr.log").read_text()
    )


@pytest.mark.processes
async def test_a_url_that_is_not_an_mcp_endpoint_is_reported_as_such(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, f"http://127.0.0.1:{upstream.port}/not-mcp/{{bank}}/")
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS
    assert "memory: unavailable (not an MCP endpoint:" in (root / "serve-stderr.log").read_text()


@pytest.mark.processes
@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_that_comes_up_later_adds_its_tools_and_clients_are_told(tmp_path, mode) -> None:
    peer = MemoryUpstream(tmp_path)
    root = memory_project(tmp_path, peer.url)
    told = anyio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification | types.ToolListChangedNotification):
            inner = getattr(message, "root", message)
            if isinstance(inner, types.ToolListChangedNotification):
                told.set()

    try:
        async with serve_stdio(
            root, mode, env={"HINDSIGHT_API_KEY": KEY}, message_handler=on_message
        ) as client:
            assert names((await client.list_tools()).tools) == KB_TOOLS
            if mode == "legacy":
                peer.start()
                with anyio.fail_after(30):
                    await told.wait()
            else:
                async with client.listen(tools_list_changed=True) as subscription:
                    peer.start()
                    with anyio.fail_after(30):
                        async for _event in subscription:
                            break
            assert names((await client.list_tools()).tools) == KB_TOOLS + MEMORY_TOOLS
            assert not (await client.call_tool("recall", {"query": "x"})).is_error
    finally:
        peer.kill()


@pytest.mark.processes
async def test_an_upstream_killed_mid_session_fails_fast_then_recovers_without_a_restart(tmp_path, upstream):
    root = memory_project(tmp_path, upstream.url)
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        assert not (await client.call_tool("retain", {"content": "before"})).is_error
        upstream.kill()
        for _ in range(3):
            with anyio.fail_after(30):  # never a hang (the 3 s per-call timeout is the slow test's)
                failed = await client.call_tool("recall", {"query": "before"})
            assert failed.is_error
            assert "memory" in failed.content[0].text
            assert KEY not in failed.content[0].text
        assert not (await client.call_tool("search", {"query": "guard"})).is_error  # kb side untouched
        upstream.start()

        async def recovered() -> bool:
            return not (await client.call_tool("retain", {"content": "after"})).is_error

        await eventually(recovered, timeout=60, step=0.5)
        assert names((await client.list_tools()).tools) == KB_TOOLS + MEMORY_TOOLS


@pytest.mark.processes
async def test_a_slow_upstream_times_out_and_the_kb_side_is_unaffected(tmp_path) -> None:
    peer = MemoryUpstream(tmp_path, slow_recall=30).start()
    root = memory_project(tmp_path, peer.url)
    try:
        async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
            results = {}

            async def slow() -> None:
                results["recall"] = await client.call_tool("recall", {"query": "x"})

            def requests_received() -> int:  # the peer logs the headers of each request it gets
                return len(peer.header_log.read_bytes().splitlines()) if peer.header_log.exists() else 0

            before = requests_received()
            async with anyio.create_task_group() as group:
                group.start_soon(slow)

                async def recall_arrived() -> bool:
                    return requests_received() > before

                await eventually(recall_arrived, what="the recall to reach the upstream")
                assert not (await client.call_tool("search", {"query": "guard"})).is_error
                assert "recall" not in results  # the search did not wait behind the hung recall
            assert results["recall"].is_error
            assert "did not answer within 3 s" in results["recall"].content[0].text
    finally:
        peer.kill()


@pytest.mark.processes
async def test_over_http_memory_is_not_attached_by_default(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url)
    server = HttpServer(root, env={"HINDSIGHT_API_KEY": KEY}).wait_ready()
    try:
        async with http_client(server.url) as client:
            assert names((await client.list_tools()).tools) == KB_TOOLS
        assert "memory: off over HTTP" in server.stderr()
    finally:
        server.stop()


@pytest.mark.processes
async def test_over_http_the_switch_attaches_memory_with_a_warning_and_never_forwards_the_client_token(
    tmp_path, upstream
) -> None:
    root = memory_project(tmp_path, upstream.url, "")
    (root / "kbkit.local.toml").write_text("[server.http]\nmemory = true\n")  # the operator's own switch
    server = HttpServer(root, env={"HINDSIGHT_API_KEY": KEY}).wait_ready()
    try:
        async with http_client(server.url, "auto") as client:
            assert names((await client.list_tools()).tools) == KB_TOOLS + MEMORY_TOOLS
            assert not (await client.call_tool("retain", {"content": "shared"})).is_error
        log = server.stderr()
        assert "WARNING: attached over HTTP" in log and KEY not in log
    finally:
        server.stop()
    seen = set(upstream.header_log.read_bytes().splitlines())
    assert seen == {f"Bearer {KEY}".encode()}
    assert TEST_TOKEN.encode() not in upstream.header_log.read_bytes()


@pytest.mark.processes
@pytest.mark.parametrize("mode", ERAS)
async def test_a_read_token_is_not_offered_the_memory_tools_it_would_be_refused(
    tmp_path, upstream, mode
) -> None:
    """tools/list per caller: a `read` token sees the kb tools only (a call to a memory tool is a
    403 at the gate), a `memory` token sees both; the same server, the same session kind."""
    root = memory_project(tmp_path, upstream.url, "")
    (root / "kbkit.local.toml").write_text("[server.http]\nmemory = true\n")  # the operator's own switch
    tokens = root / ".kbkit" / "tokens.json"
    reader, writer = create(tokens, "reader", "read", None), create(tokens, "writer", "memory", None)
    server = HttpServer(root, token=None, env={"HINDSIGHT_API_KEY": KEY}).wait_ready()
    try:
        listed = {}
        for name, token in (("reader", reader), ("writer", writer)):
            async with http_client(server.url, mode, {"Authorization": f"Bearer {token}"}) as client:
                listed[name] = names((await client.list_tools()).tools)
        assert listed == {"reader": KB_TOOLS, "writer": KB_TOOLS + MEMORY_TOOLS}
    finally:
        server.stop()


@pytest.mark.npm
async def test_a_third_party_stdio_upstream_from_npm_works(tmp_path) -> None:
    node, entry = require(SERVER_MEMORY, "@modelcontextprotocol/server-memory")
    own = (  # the user's own file: a command there needs no kbkit trust
        f'[memory]\ncommand = ["{node}", "{entry}"]\ntimeout = 10\n'
        'tools = ["create_entities", "read_graph"]\nenv = ["MEMORY_FILE_PATH"]\n'
    )
    root = make_project(tmp_path / "project")
    (root / "kbkit.local.toml").write_text(own, encoding="utf-8")
    env = {"HINDSIGHT_API_KEY": KEY, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    async with serve_stdio(root, env=env) as client:
        assert names((await client.list_tools()).tools) == [*KB_TOOLS, "create_entities", "read_graph"]
        created = await client.call_tool(
            "create_entities",
            {
                "entities": [
                    {"name": "index", "entityType": "decision", "observations": ["SQLite in WAL mode"]}
                ]
            },
        )
        assert not created.is_error, created.content
        graph = await client.call_tool("read_graph", {})
        assert "SQLite in WAL mode" in graph.content[0].text


# -- hostile and odd input ----------------------------------------------------------------------


def stdio_memory_project(tmp_path: Path, *peer_args: str, extra: str = "") -> Path:
    """A stdio memory command in kbkit.local.toml: the user's own, so it runs without kbkit trust."""
    command = json.dumps([sys.executable, str(PEER), "--stdio", *peer_args])
    root = make_project(tmp_path / "project")
    (root / "kbkit.local.toml").write_text(
        f"[memory]\ncommand = {command}\ntimeout = 10\n{extra}", encoding="utf-8"
    )
    return root


def serve_pid(root: Path) -> int:
    """The `kbkit serve --root ROOT` process started from the console script (for its peak
    memory; a forked one's command line is its launcher's)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and str(root).encode() in argv:
            return int(entry.name)
    raise LookupError(f"no kbkit serve for {root}")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise LookupError("VmHWM")


@pytest.mark.processes
async def test_a_stdio_upstream_gets_the_key_the_named_variables_and_a_safe_base_only(tmp_path) -> None:
    dump = tmp_path / "upstream-env.json"
    root = stdio_memory_project(tmp_path, "--env-dump", str(dump), extra='env = ["MEMORY_HOME"]\n')
    (root / ".env.local").write_text("MEMORY_HOME=/srv/memory\nOTHER_SECRET=from-env-local-0123456789\n")
    env = {
        "HINDSIGHT_API_KEY": KEY,
        "MCP_TOKEN": "mcp-token-must-not-travel-0123",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-must-not-travel-0123",
        "LANG": "C.UTF-8",
    }
    async with serve_stdio(root, env=env) as client:
        assert not (await client.call_tool("retain", {"content": "over stdio"})).is_error
    given = json.loads(dump.read_text())
    assert given["HINDSIGHT_API_KEY"] == KEY and given["MEMORY_HOME"] == "/srv/memory"
    assert given["LANG"] == "C.UTF-8" and "PATH" in given
    safe = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE"}
    safe |= {"LC_MESSAGES", "TZ", "TMPDIR", "HINDSIGHT_API_KEY", "MEMORY_HOME"}
    assert set(given) - safe <= {"LC_CTYPE"}, set(given) - safe  # Python may set LC_CTYPE itself
    for secret in ("MCP_TOKEN", "AWS_SECRET_ACCESS_KEY", "OTHER_SECRET"):
        assert secret not in given


@pytest.mark.processes
async def test_a_key_with_a_carriage_return_is_stripped_before_it_is_sent(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url)
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": f"  {KEY}\r"}) as client:  # a CRLF file, sourced
        assert names((await client.list_tools()).tools) == KB_TOOLS + MEMORY_TOOLS
    assert set(upstream.header_log.read_bytes().splitlines()) == {f"Bearer {KEY}".encode()}


@pytest.mark.parametrize(
    "bad", ["hsk_key with_a_space_inside", "hsk_k\x07ey_with_bell_0123", "hsk_ключ_0123456789"]
)
@pytest.mark.processes
async def test_a_key_no_header_can_carry_is_refused_on_read_and_the_url_is_not_blamed(
    tmp_path, upstream, bad
) -> None:
    root = memory_project(tmp_path, upstream.url)
    (root / ".env.local").write_text(f"HINDSIGHT_API_KEY={bad}\n")
    env = {k: v for k, v in os.environ.items() if k != "HINDSIGHT_API_KEY"}
    async with serve_stdio(root, env=env) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS
    stderr = (root / "serve-stderr.log").read_text()
    assert (
        f"memory: off (HINDSIGHT_API_KEY in {root.resolve()}/.env.local holds a character a key cannot have"
        in (stderr)
    )
    assert "url" not in stderr.split("memory: off", 1)[1].splitlines()[0]
    assert bad not in stderr and bad[:8] not in stderr
    assert not upstream.header_log.exists()


def leaky_forms(key: str) -> list[str]:
    """Every way a key has leaked into an error message somewhere."""
    from urllib.parse import quote, quote_plus

    return [key, repr(key), json.dumps(key), quote(key, safe=""), quote_plus(key), key[:8], key[:20]]


def test_the_redactor_takes_out_every_form_of_a_key() -> None:
    from kbkit.server.memory import Redactor

    key = "hsk_live_0123456789/abc+def=ghi\r"
    redact = Redactor()
    redact.add(key)
    for form in leaky_forms(key):
        message = f"upstream said: invalid key {form} (cut here)"
        cleaned = redact(message)
        assert "hsk_live" not in cleaned and "0123456789" not in cleaned, (form, cleaned)
        assert cleaned.startswith("upstream said: invalid key ") and "***" in cleaned
    long = "k" * 400
    redact.add(long)
    cut = f"error: Bearer {long}"[:300]  # a message cut in the middle of the key
    assert "kkkkkkkk" not in redact(cut)
    assert redact("ordinary text hsk_liv") == "ordinary text hsk_liv"  # under 8 characters: left alone


@pytest.mark.processes
async def test_an_upstream_that_echoes_the_key_in_its_errors_leaks_no_form_of_it(tmp_path) -> None:
    root = stdio_memory_project(tmp_path, "--echo-key")
    key = "hsk_echo_0123456789/abc+def"
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": key}) as client:
        refused = await client.call_tool("reflect", {"query": "x"})
        assert refused.is_error
        text = refused.content[0].text
        assert "memory service refused the call" in text
        for form in leaky_forms(key):
            assert form not in text, form
        assert "hsk_echo" not in text
    kbkit_lines = [line for line in (root / "serve-stderr.log").read_text().splitlines() if "[kbkit]" in line]
    assert not [line for line in kbkit_lines if "hsk_echo" in line]


@pytest.mark.processes
async def test_a_rotated_key_is_read_again_and_the_hint_names_where_it_came_from(tmp_path) -> None:
    key_file = tmp_path / "accepted-key"
    key_file.write_text(KEY)
    peer = MemoryUpstream(tmp_path, extra=("--key-file", str(key_file))).start()
    root = memory_project(tmp_path, peer.url)
    env_file = root / ".env.local"
    env_file.write_text(f"HINDSIGHT_API_KEY={KEY}\n")
    env = {k: v for k, v in os.environ.items() if k != "HINDSIGHT_API_KEY"}
    try:
        async with serve_stdio(root, env=env) as client:
            assert not (await client.call_tool("retain", {"content": "before rotation"})).is_error
            key_file.write_text("hsk_rotated_key_9876543210")  # the service rotates the key

            rejected = await client.call_tool("recall", {"query": "x"})
            assert rejected.is_error
            hint = f"check HINDSIGHT_API_KEY in {root.resolve()}/.env.local"
            assert hint in rejected.content[0].text and "refused" not in rejected.content[0].text
            again = await client.call_tool("recall", {"query": "x"})  # reconnects: the old key still
            assert "key rejected: " in again.content[0].text and hint in again.content[0].text
            env_file.write_text("HINDSIGHT_API_KEY=hsk_rotated_key_9876543210\r\n")  # no restart
            recalled = await client.call_tool("recall", {"query": "rotation"})
            assert not recalled.is_error, recalled.content  # the call itself asked for a reconnection
    finally:
        peer.kill()
    assert "hsk_rotated" not in (root / "serve-stderr.log").read_text()


@pytest.mark.processes
async def test_a_key_from_the_environment_is_named_as_such_when_rejected(tmp_path, upstream) -> None:
    root = memory_project(tmp_path, upstream.url)
    (root / ".env.local").write_text(f"HINDSIGHT_API_KEY={KEY}\n")  # shadowed by the environment
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": "hsk_wrong_key_999"}) as client:
        assert names((await client.list_tools()).tools) == KB_TOOLS
    assert (
        "check HINDSIGHT_API_KEY in the environment (it wins over .env.local)"
        in (root / "serve-stderr.log").read_text()
    )


@pytest.mark.processes
@pytest.mark.parametrize("reply", ["sse", "json"])
async def test_a_100_mb_recall_is_refused_with_a_notice_and_kbkit_memory_stays_bounded(
    tmp_path, reply
) -> None:
    extra = ("--huge-recall", str(100 * 1024 * 1024)) + (("--json-response",) if reply == "json" else ())
    peer = MemoryUpstream(tmp_path, extra=extra).start()
    root = memory_project(tmp_path, peer.url)
    (root / "kbkit.toml").write_text((root / "kbkit.toml").read_text().replace("timeout = 3", "timeout = 60"))
    try:
        # The console script: serve_pid finds it by its command line, and its memory is its own.
        async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}, exec_script=True) as client:
            refused = await client.call_tool("recall", {"query": "everything"})
            assert refused.is_error
            assert "reply was over 8 MiB; kbkit stopped reading it" in refused.content[0].text
            assert not (await client.call_tool("retain", {"content": "still connected"})).is_error
            peak = peak_rss_mb(serve_pid(root))
            assert 40 < peak < 300  # it peaked at 550-780 MB reading such replies whole (idle: ~90 MB)
    finally:
        peer.kill()


@pytest.mark.processes
async def test_a_large_recall_is_cut_with_a_stated_notice(tmp_path) -> None:
    from kbkit.server.memory import RESULT_TEXT_CAP

    peer = MemoryUpstream(tmp_path, extra=("--huge-recall", str(2 * 1024 * 1024))).start()
    root = memory_project(tmp_path, peer.url)
    try:
        async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
            result = await client.call_tool("recall", {"query": "everything"})
            assert not result.is_error
            *kept, notice = result.content
            assert sum(len(block.text) for block in kept) == RESULT_TEXT_CAP
            assert notice.text.startswith("[kbkit: the memory service returned 2,097,152 bytes of text")
            assert result.structured_content is None
    finally:
        peer.kill()


@pytest.mark.processes
async def test_a_call_after_the_upstream_returns_reconnects_at_once_instead_of_waiting_the_backoff(
    tmp_path, upstream
) -> None:
    root = memory_project(tmp_path, upstream.url)
    text = (root / "kbkit.toml").read_text().replace("timeout = 3", "timeout = 10")
    (root / "kbkit.toml").write_text(text)
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        assert not (await client.call_tool("retain", {"content": "before"})).is_error
        upstream.kill()
        for _ in range(4):  # each failure doubles the supervisor's backoff (1, 2, 4, 8 s)
            assert (await client.call_tool("recall", {"query": "before"})).is_error
        upstream.start()
        recalled = await client.call_tool("recall", {"query": "before"})
        assert not recalled.is_error, recalled.content  # the first call after the return, not a later one
    lines = [line for line in (root / "serve-stderr.log").read_text().splitlines() if "memory: " in line]
    assert len([line for line in lines if "memory: unavailable" in line]) == 1, (
        lines
    )  # said once, not per retry


@pytest.mark.processes
async def test_a_connection_dropped_during_a_write_reports_the_outcome_as_unknown(tmp_path) -> None:
    root = stdio_memory_project(tmp_path, "--die-on-retain")
    async with serve_stdio(root, env={"HINDSIGHT_API_KEY": KEY}) as client:
        result = await client.call_tool("retain", {"content": "was it stored?"})
        assert result.is_error
        text = result.content[0].text
        assert "The outcome is unknown" in text and "refused" not in text
        assert not (await client.call_tool("search", {"query": "guard"})).is_error


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('url = "http://127.0.0.1:1/mcp/{bank}/"\ntools = []\n', "[memory.tools]: lists no tool"),
        ('url = "http://127.0.0.1:1/mcp/{bank}/"\nprefix = "mem."\n', "[memory.prefix]: use only letters"),
        ('command = ["x"]\nenv = ["NOT A NAME"]\n', "[memory.env]: 'NOT A NAME' is not a variable name"),
    ],
    ids=["no tools", "prefix with a dot", "env not a name"],
)
def test_memory_settings_that_cannot_work_are_config_errors(tmp_path, extra, says) -> None:
    from kbkit.config import load_settings
    from kbkit.errors import ConfigError

    root = make_project(tmp_path / "p", config=f'[kb]\npath = "docs"\n[memory]\n{extra}')
    with pytest.raises(ConfigError) as refused:
        load_settings(root)
    assert says in str(refused.value)


@pytest.mark.processes
async def test_a_memory_tool_called_over_http_without_the_switch_says_why_it_is_missing(tmp_path, upstream):
    root = memory_project(tmp_path, upstream.url)
    server = HttpServer(root, env={"HINDSIGHT_API_KEY": KEY}).wait_ready()
    try:
        async with http_client(server.url) as client:
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("recall", {"query": "x"})
        assert "recall is a session-memory tool" in unknown.value.message
        assert "[server.http] memory = true" in unknown.value.message
    finally:
        server.stop()
