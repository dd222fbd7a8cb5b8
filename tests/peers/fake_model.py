"""A scripted model on loopback, so an agent's own CLI runs a whole turn offline and shows what its
model is handed of a tool's result (tests/e2e/test_agents_model_view.py).

    python -I fake_model.py PORT LOG QUERY PATH

It speaks the four wire formats the agents use: Anthropic Messages (`/v1/messages`), OpenAI Chat
Completions (`/chat/completions`), OpenAI Responses (`/responses`) and Gemini
(`:generateContent`, `:streamGenerateContent`), streamed or not, as each request asks. Asked with
the `kb` tools on offer, it calls `search` for QUERY, then `get_document` for PATH, then answers
"done"; any other request (a title, a summary) gets "ok". Every request body is appended to LOG as
a JSON line: the requests after each call hold the tool result exactly as the agent handed it on.
Standard library only.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RESULT_MARKS = ("tool_result", "function_call_output")


def tool_results(node: Any) -> int:
    """How many tool results a request carries, in any of the four formats."""
    if isinstance(node, list):
        return sum(tool_results(item) for item in node)
    if not isinstance(node, dict):
        return 0
    own = int(node.get("type") in RESULT_MARKS or node.get("role") == "tool" or "functionResponse" in node)
    return own + sum(tool_results(value) for value in node.values())


def tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if "functionDeclarations" in tool:
            names += [declared["name"] for declared in tool["functionDeclarations"]]
        elif isinstance(tool.get("function"), dict):
            names.append(tool["function"]["name"])
        elif "name" in tool:
            names.append(tool["name"])
    return names


def next_step(body: dict[str, Any], query: str, path: str) -> tuple[str, dict[str, Any]] | str:
    """The tool to call and its arguments, or the answer's text."""
    names = tool_names(body)
    search = next((n for n in names if "kb" in n and n.endswith("search")), None)
    read = next((n for n in names if "kb" in n and n.endswith("get_document")), None)
    if search is None or read is None:
        return "ok"
    done = tool_results(body.get("messages") or body.get("input") or body.get("contents") or [])
    if done == 0:
        return search, {"query": query, "call": 0}
    if done == 1:
        return read, {"path": path, "call": 1}
    return "done"


def call_id(step: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A call's own id (agents drop a call whose id they saw before) and its arguments."""
    arguments = dict(step[1])
    return f"call_{arguments.pop('call')}", arguments


def sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


USAGE = {"input_tokens": 1, "output_tokens": 1}


def anthropic(step: tuple[str, dict[str, Any]] | str, stream: bool) -> tuple[bytes, str]:
    if isinstance(step, str):
        block: dict[str, Any] = {"type": "text", "text": step}
        stop = "end_turn"
    else:
        ident, arguments = call_id(step)
        block = {"type": "tool_use", "id": f"toolu_{ident}", "name": step[0], "input": arguments}
        stop = "tool_use"
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "fake", "stop_sequence": None}
    if not stream:
        return json.dumps(
            {**message, "content": [block], "stop_reason": stop, "usage": USAGE}
        ).encode(), "json"
    start = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
    delta = (
        {"type": "text_delta", "text": block["text"]}
        if block["type"] == "text"
        else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    )
    return sse(
        [
            (
                "message_start",
                {"type": "message_start", "message": {**message, "content": [], "usage": USAGE}},
            ),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": USAGE}),
            ("message_stop", {"type": "message_stop"}),
        ]
    ), "sse"


def chat(step: tuple[str, dict[str, Any]] | str, stream: bool) -> tuple[bytes, str]:
    if isinstance(step, str):
        message: dict[str, Any] = {"role": "assistant", "content": step}
        finish = "stop"
    else:
        ident, arguments = call_id(step)
        call = {
            "id": ident,
            "type": "function",
            "function": {"name": step[0], "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    base = {"id": "chatcmpl-1", "created": 0, "model": "fake"}
    if not stream:
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return json.dumps(
            {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        ).encode(), "json"
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **call} for call in delta["tool_calls"]]
    chunks = [
        {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        },
        {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        },
        {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
    ]
    return sse([*((None, chunk) for chunk in chunks), (None, "[DONE]")]), "sse"


def responses(step: tuple[str, dict[str, Any]] | str, stream: bool) -> tuple[bytes, str]:
    if isinstance(step, str):
        content = [{"type": "output_text", "text": step, "annotations": []}]
        item: dict[str, Any] = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
        item["content"] = content
    else:
        ident, arguments = call_id(step)
        item = {"type": "function_call", "id": f"fc_{ident}", "call_id": ident, "name": step[0]}
        item |= {"arguments": json.dumps(arguments), "status": "completed"}
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    response = {"id": "resp_1", "object": "response", "model": "fake", "status": "completed", "usage": usage}
    if not stream:
        return json.dumps({**response, "output": [item]}).encode(), "json"
    return sse(
        [
            ("response.created", {"type": "response.created", "response": {**response, "output": []}}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            (
                "response.completed",
                {"type": "response.completed", "response": {**response, "output": [item]}},
            ),
        ]
    ), "sse"


def gemini(step: tuple[str, dict[str, Any]] | str, stream: bool) -> tuple[bytes, str]:
    part = (
        {"text": step}
        if isinstance(step, str)
        else {"functionCall": {"name": step[0], "args": call_id(step)[1]}}
    )
    reply = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    }
    return (sse([(None, reply)]), "sse") if stream else (json.dumps(reply).encode(), "json")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    query = path = log = ""

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        step = next_step(body, self.query, self.path_to_read)
        stream = bool(body.get("stream")) or "streamGenerateContent" in self.path
        if self.path.split("?")[0].endswith("/messages"):
            data, kind = anthropic(step, stream)
        elif "/chat/completions" in self.path:
            data, kind = chat(step, stream)
        elif self.path.split("?")[0].endswith("/responses"):
            data, kind = responses(step, stream)
        elif "enerateContent" in self.path:  # generateContent, streamGenerateContent
            data, kind = gemini(step, stream)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if kind == "sse" else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - model lists and the like: nothing here
        data = json.dumps(
            {"object": "list", "data": [{"id": "fake", "object": "model"}], "models": []}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        return

    path_to_read = ""


def main(args: list[str]) -> None:
    port, log, query, path = args
    Handler.log, Handler.query, Handler.path_to_read = log, query, path
    ThreadingHTTPServer(("127.0.0.1", int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
