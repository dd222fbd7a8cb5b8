"""A memory MCP server for the tests: Hindsight's tool names, schemas and habits, on 127.0.0.1.

Built with the SDK like a real upstream: streamable HTTP, a bearer key checked on every request,
`retain` / `recall` / `reflect` plus bank-management tools (so allowlists matter), a `search`
tool (so a clash with kb's own tool can be seen), and Hindsight's habit of reporting some
failures as ordinary results (`{"status": "error"}`, `{"error": ...}` with isError false).

    python tests/peers/memory_server.py (--port 8765 | --fd FD) --key KEY [--slow-recall SECONDS] [--header-log FILE]
        [--key-file FILE] [--huge-recall BYTES] [--json-response] [--tools-file FILE]
    python tests/peers/memory_server.py --stdio [--env-dump FILE] [--huge-recall BYTES] [--die-on-retain] [--echo-key]

`--key-file` reads the accepted key from a file at every request (a key rotated upstream);
`--huge-recall` makes recall answer with that many bytes of text; `--stdio` serves on stdin/stdout,
checking the key in $HINDSIGHT_API_KEY, and `--env-dump` writes the environment it was given as JSON;
`--die-on-retain` exits in the middle of a retain (a connection dropped during a write); `--echo-key`
makes reflect fail with the key it was given quoted in every form. `--tools-file` lists the tools in
a JSON file (a real service's tools/list, e.g. tests/fixtures/hindsight-1.1.0-tools.json) instead of
the ones below; calls behave as below.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import mcp.types as types
import uvicorn
from mcp.server import Server

MEMORIES: list[dict[str, Any]] = []

TOOLS = [
    types.Tool(
        name="retain",
        description="Store a memory in the bank.",
        input_schema={
            "type": "object",
            "properties": {
                "content": {"type": "string"},
                "context": {"type": "string"},
                "timestamp": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "metadata": {"type": "object"},
                "document_id": {"type": "string"},
            },
            "required": ["content"],
        },
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
    ),
    types.Tool(
        name="recall",
        description="Recall memories relevant to a query.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_tokens": {"type": "integer", "default": 4096},
                "budget": {"type": "string", "enum": ["low", "mid", "high"]},
                "types": {"type": "array", "items": {"type": "string"}},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["query"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="reflect",
        description="Reflect on memories with an LLM.",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string"}, "context": {"type": "string"}},
            "required": ["query"],
        },
    ),
    types.Tool(name="list_banks", description="List banks.", input_schema={"type": "object"}),
    types.Tool(name="delete_bank", description="Delete a bank.", input_schema={"type": "object"}),
    types.Tool(
        name="search",
        description="Search memories (clashes with kb's own search).",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
    ),
]


def build(
    slow_recall: float,
    huge_recall: int = 0,
    die_on_retain: bool = False,
    echo_key: bool = False,
    tools: list[types.Tool] | None = None,
) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS if tools is None else tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "reflect" and echo_key:  # an upstream that quotes the key it got, every way
            key = os.environ.get("HINDSIGHT_API_KEY", "")
            forms = [key, repr(key), json.dumps(key), quote(key, safe=""), quote_plus(key), key[:12]]
            raise ValueError("invalid key: " + " | ".join(forms))
        if params.name == "retain" and die_on_retain:
            os._exit(3)
        if params.name == "recall" and huge_recall:
            return types.CallToolResult(content=[types.TextContent(text="m" * huge_recall)])
        if params.name == "retain":
            if not args.get("content"):
                data: dict[str, Any] = {"error": "content must not be empty"}
            else:
                MEMORIES.append({"content": args["content"], "tags": args.get("tags", [])})
                data = {"status": "ok", "id": len(MEMORIES)}
        elif params.name == "recall":
            if slow_recall:
                await anyio.sleep(slow_recall)
            words = set(str(args.get("query", "")).lower().split())
            hits = [m for m in MEMORIES if words & set(m["content"].lower().split())]
            data = {"results": hits}
        elif params.name == "reflect":
            data = {"status": "error", "message": "no LLM is configured for reflect"}
        elif params.name == "search":
            data = {"results": [], "from": "memory"}
        elif params.name == "list_banks":
            data = {"banks": ["default"]}
        else:
            raise ValueError(f"unknown tool {params.name}")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(data))])

    return Server("test-memory", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


class RequireKey:
    def __init__(self, app: Any, key: str, header_log: str | None, key_file: str | None) -> None:
        self.app, self.key, self.header_log, self.key_file = app, key.encode(), header_log, key_file

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(b"authorization", b"")
            if self.header_log:
                with open(self.header_log, "ab") as log:
                    log.write(sent + b"\n")
            key = Path(self.key_file).read_bytes().strip() if self.key_file else self.key
            if not hmac.compare_digest(sent, b"Bearer " + key):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"detail": "invalid API key"}'})
                return
        await self.app(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--fd", type=int, help="serve on this inherited socket, bound by the caller")
    parser.add_argument("--key")
    parser.add_argument("--key-file", help="the accepted key is read from this file at every request")
    parser.add_argument("--slow-recall", type=float, default=0.0)
    parser.add_argument("--huge-recall", type=int, default=0, help="recall answers with this many bytes")
    parser.add_argument("--json-response", action="store_true", help="plain JSON replies instead of SSE")
    parser.add_argument("--header-log", help="append every Authorization header received to this file")
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout")
    parser.add_argument("--env-dump", help="write the environment this process was given to this file")
    parser.add_argument("--die-on-retain", action="store_true")
    parser.add_argument("--echo-key", action="store_true", help="reflect fails quoting the key it got")
    parser.add_argument("--tools-file", help="list the tools in this JSON file instead of TOOLS")
    args = parser.parse_args()
    tools = None
    if args.tools_file:
        tools = [types.Tool.model_validate(tool) for tool in json.loads(Path(args.tools_file).read_text())]
    server = build(args.slow_recall, args.huge_recall, args.die_on_retain, args.echo_key, tools)
    if args.stdio:
        if args.env_dump:
            Path(args.env_dump).write_text(json.dumps(dict(os.environ)))
        anyio.run(_serve_stdio, server)
        return
    app = RequireKey(
        server.streamable_http_app(streamable_http_path="/mcp/default/", json_response=args.json_response),
        args.key,
        args.header_log,
        args.key_file,
    )
    if args.fd is None:
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
    else:  # the caller bound the port and keeps its number: nothing can take it in between
        config = uvicorn.Config(app, log_level="warning")
        uvicorn.Server(config).run(sockets=[socket.socket(fileno=args.fd)])


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    if not os.environ.get("HINDSIGHT_API_KEY"):
        raise SystemExit("memory_server: HINDSIGHT_API_KEY is not set")
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    main()
