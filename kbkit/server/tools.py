"""The kb tools: `search` and `get_document`. Computation goes here; reading is a resource.

Each tool is one `KbTool`: its MCP declaration (schemas derived from the pydantic models
below, so the schema and the validation cannot disagree), the function that runs it, and how
its result goes on the wire: every reply fits one message of the transport (docs/adr/0017).
`search` sends its result as structured content and, for agents that read text, as a few plain
lines a hit (kbkit/server/rendering.py), dropping hits that would not fit; `get_document` sends the
document's text in its structured content and as its own text block after a line saying what the
read holds, cut where the reply would not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kbkit.errors import KbkitError
from kbkit.kb import reads
from kbkit.kb.search import DEFAULT_LIMIT, DEFAULT_MAX_TOKENS, MAX_LIMIT, MIN_MAX_TOKENS
from kbkit.kb.uris import doc_uri
from kbkit.server.grants import Readable
from kbkit.server.rendering import read_line, search_text
from kbkit.server.replies import longest_fitting, result_size


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # "5" is not an integer; the schema says so


class SearchArgs(_Args):
    query: str = Field(description="What to look for, in plain words; punctuation and operators are fine.")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Most hits to return.")
    path_prefix: str = Field("", description="Only documents whose path starts with this.")
    max_tokens: int = Field(
        DEFAULT_MAX_TOKENS,
        ge=MIN_MAX_TOKENS,
        description="Token budget for the reply; hits past it are dropped.",
    )

    @field_validator("path_prefix", mode="before")
    @classmethod
    def _no_prefix(cls, value: object) -> object:
        """null means no prefix, as it did when the schema allowed it (the schema says string:
        some agents show an optional string offered as string-or-null as of unknown type)."""
        return "" if value is None else value


class OtherSection(BaseModel):
    section: str
    offset: int


class SearchHit(BaseModel):
    path: str
    title: str
    score: float
    section: str
    offset: int
    snippet: str
    uri: str = ""
    folded: list[str] = []
    translations: list[str] = []
    also: list[OtherSection] = []


class SearchOutput(BaseModel):
    results: list[SearchHit]
    truncated: bool
    note: str = ""


class GetDocumentArgs(_Args):
    path: str = Field(description="Path relative to the kb folder, as `search` returns it.")
    offset: int = Field(0, ge=0, description="Start here: a search hit's offset, or next_offset.")
    max_tokens: int = Field(
        reads.DEFAULT_MAX_TOKENS,
        ge=reads.MIN_MAX_TOKENS,
        le=reads.MAX_MAX_TOKENS,
        description="Token budget for the text.",
    )


class DocumentOutput(BaseModel):
    # The text is also the result's last text block: Claude Code and Codex hand their model only the
    # structured content, Gemini CLI and opencode only the text blocks (docs/adr/0069).
    path: str
    uri: str = ""
    media_type: str
    section: str
    truncated: bool
    size: int
    offset: int
    next_offset: int = 0
    note: str = ""
    text: str


IndexingNote = Callable[[], str | None]
"""How far a running scan has got ("indexing: 4,200 of 9,753 documents"), or None when none runs."""


def _search(kb: Readable, args: SearchArgs, indexing: IndexingNote) -> dict[str, Any]:
    pending = indexing()  # asked first: the search then covers at least what the note counts
    result = kb.search(
        args.query, limit=args.limit, path_prefix=args.path_prefix, max_tokens=args.max_tokens
    ).to_dict()
    if pending and result["results"]:
        result["note"] = "; ".join(
            part
            for part in (f"{pending}; results cover only what is indexed so far", result.get("note"))
            if part
        )
    elif pending:  # "nothing matches" is not an answer yet: say why instead
        result["note"] = f"{pending}; nothing indexed so far matches: search again when indexing has finished"
    return result


def _get_document(kb: Readable, args: GetDocumentArgs, indexing: IndexingNote) -> dict[str, Any]:
    doc = kb.load(args.path, offset=args.offset, max_tokens=args.max_tokens)
    out: dict[str, Any] = {
        "path": doc.path,
        "media_type": doc.media_type,
        "section": doc.section,
        "text": doc.text,
        "truncated": doc.truncated,
        "size": doc.size,
        "offset": doc.offset,
    }
    if kb.servable(doc.path) is not None:
        out["uri"] = doc_uri(doc.path)
    if doc.next_offset is not None:
        out["next_offset"] = doc.next_offset
        out["note"] = _read_on(doc.next_offset, section_end=doc.stop == "section")
    return out


def _search_result(data: dict[str, Any]) -> types.CallToolResult:
    """The hits as structured content, and as plain lines for agents that hand the model the text."""
    return types.CallToolResult(content=[types.TextContent(text=search_text(data))], structured_content=data)


def _search_reply(data: dict[str, Any]) -> types.CallToolResult:
    """Hits past what one reply holds are dropped, and the note says so."""
    hits = data["results"]

    def reply(count: int) -> types.CallToolResult:
        if count == len(hits):
            return _search_result(data)
        cut = f"the reply holds {count} of {len(hits)} hits (the most one message carries); lower limit"
        note = f"{data['note']}; {cut}" if data.get("note") else cut
        return _search_result({**data, "results": hits[:count], "truncated": True, "note": note})

    return reply(longest_fitting(len(hits), lambda count: result_size(reply(count))))


def _document_reply(data: dict[str, Any]) -> types.CallToolResult:
    """The text in the structured content and in its own text block (agents read one or the other,
    docs/adr/0069), cut where the whole reply would outgrow one message; the cut is said."""
    meta = {key: value for key, value in data.items() if key != "text"}
    text = data["text"]

    def reply(count: int) -> types.CallToolResult:
        if count == len(text):
            return _document_result(meta, text)
        cut = meta | {"truncated": True, "next_offset": meta["offset"] + count}
        return _document_result(cut | {"note": _read_on(cut["next_offset"])}, text[:count])

    return reply(longest_fitting(len(text), lambda count: result_size(reply(count))))


def _document_result(meta: dict[str, Any], text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=read_line(meta)), types.TextContent(text=text)],
        structured_content={**meta, "text": text},
    )


def _read_on(next_offset: int, *, section_end: bool = False) -> str:
    if section_end:
        return f"that is the whole section; the document goes on at offset={next_offset}"
    return f"the text was cut; call get_document again with offset={next_offset} for the rest"


@dataclass(frozen=True)
class KbTool:
    name: str
    title: str
    description: str
    args: type[_Args]
    output: type[BaseModel]
    run: Callable[[Readable, Any, IndexingNote], dict[str, Any]]
    reply: Callable[[dict[str, Any]], types.CallToolResult]

    def declaration(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=_schema(self.args),
            output_schema=_without_defaults(_schema(self.output)),
            # Read-only says it all: the destructive and idempotent hints mean something only for
            # tools that write, and the title is said above. Every word here is in every agent's context.
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )

    def call(
        self, kb: Readable, arguments: dict[str, Any] | None, indexing: IndexingNote = lambda: None
    ) -> types.CallToolResult:
        """Run the tool; bad arguments and refusals come back as tool errors the model can read."""
        try:
            args = self.args.model_validate(arguments or {})
        except ValidationError as exc:
            return tool_error(f"invalid arguments for {self.name}: {_explain(exc)}")
        try:
            data = self.run(kb, args, indexing)
        except KbkitError as exc:
            return tool_error(str(exc))
        return self.reply(data)


KB_TOOLS: dict[str, KbTool] = {
    tool.name: tool
    for tool in (
        KbTool(
            name="search",
            title="Search the knowledge base",
            description=(
                "Ranked search of the team's docs, one hit per document: its best-matching section "
                "(heading path), offset, snippet, and on large pages `also` (other matching sections). "
                "Read the one that fits with get_document(path, offset)."
            ),
            args=SearchArgs,
            output=SearchOutput,
            run=_search,
            reply=_search_reply,
        ),
        KbTool(
            name="get_document",
            title="Read a document",
            description=(
                "Read a file under the kb folder by its path (indexed or not). From a search hit's "
                "offset it returns that section with its subsections; from 0 it reads the document "
                "from the start. At most max_tokens of text; next_offset says where to read on. It "
                "replies with a header line, then the text."
            ),
            args=GetDocumentArgs,
            output=DocumentOutput,
            run=_get_document,
            reply=_document_reply,
        ),
    )
}
"""Every tool the kb side can offer; `[server] tools` picks from these."""


def tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    definitions = schema.pop("$defs", {})
    inlined: dict[str, Any] = _inline(schema, definitions)
    return inlined


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    """A schema with each `$ref` to its `$defs` replaced by the definition: the names and the
    indirection cost every agent tokens (kbkit's models are not recursive)."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(definitions[node["$ref"].rsplit("/", 1)[-1]], definitions)
        return {k: _inline(v, definitions) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, definitions) for v in node]
    return node


def _without_defaults(node: Any) -> Any:
    """An output schema without pydantic's `default`s: they say what kbkit fills in when a field is
    left out of a reply, which is kbkit's business, not the reader's."""
    if isinstance(node, dict):
        return {k: _without_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_without_defaults(v) for v in node]
    return node


def _strip_titles(node: Any) -> Any:
    """pydantic adds a `title` to every node; they cost every agent tokens and say nothing."""
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _explain(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
