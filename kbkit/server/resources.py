"""Documents as resources: `kb://doc/<path>` and `kb://topic/<prefix>`.

Listing and reading stand on one query (`KnowledgeBase.list_servable` / `servable`): the
listing offers exactly what a read accepts, and a read of anything else is refused with
-32602 even when the file exists on disk (docs/adr/0002). Every reply fits one message of the
transport (docs/adr/0017): a page ends early, a text or a topic listing is cut, and a cut is said.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from kbkit.errors import KbkitError
from kbkit.kb.documents import IndexedDocument, check_path, truncation_notice
from kbkit.kb.formats.registry import ALL_PARSERS
from kbkit.kb.uris import DOC_TEMPLATE, TOPIC_TEMPLATE, doc_uri, parse_doc_uri, parse_topic_uri
from kbkit.server.caching import version_meta
from kbkit.server.grants import Readable, View
from kbkit.server.replies import RESULT_LIMIT, encoded_size, fit_text, longest_fitting, result_size
from kbkit.server.skills import URI_PREFIX as SKILL_URI_PREFIX
from kbkit.server.skills import URI_TEMPLATE as SKILL_TEMPLATE
from kbkit.server.skills import SkillShelf

PAGE_SIZE = 100
TOPIC_LIMIT = 500
"""A topic listing names at most this many documents, and says when there are more."""


def list_resources(
    kb: Readable, cursor: str | None, shelf: SkillShelf | None = None
) -> types.ListResourcesResult:
    """Documents in path order, PAGE_SIZE a page; the first page also carries the installed skills' files."""
    after = _decode_cursor(cursor) if cursor else None
    rows = kb.list_servable(after=after, limit=PAGE_SIZE + 1)
    skills = shelf.resources() if shelf is not None and cursor is None else []
    listed = [_resource(row) for row in rows[:PAGE_SIZE]]

    def page(count: int) -> types.ListResourcesResult:
        more = count < len(rows)  # a page that would not fit one reply ends early; the cursor goes on
        return types.ListResourcesResult(
            resources=[*skills, *listed[:count]],
            next_cursor=_encode_cursor(rows[count - 1].path) if more and count else None,
        )

    return page(max(1, longest_fitting(len(listed), lambda count: result_size(page(count)))))


def list_templates() -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(
                uri_template=DOC_TEMPLATE,
                name="document",
                title="A document of the knowledge base",
                description="One indexed document by its path under the kb folder (percent-encoded, / kept).",
            ),
            types.ResourceTemplate(
                uri_template=TOPIC_TEMPLATE,
                name="topic",
                title="The documents under a folder",
                description="A Markdown list of the indexed documents under a kb folder, with their URIs.",
                mime_type="text/markdown",
            ),
            types.ResourceTemplate(
                uri_template=SKILL_TEMPLATE,
                name="skill-file",
                title="A file of an installed skill",
                description="SKILL.md or another file of a skill installed in .agents/skills.",
            ),
        ]
    )


def read_resource(kb: Readable, uri: str, shelf: SkillShelf | None = None) -> types.ReadResourceResult:
    if shelf is not None and uri.startswith(SKILL_URI_PREFIX):
        return shelf.read(uri)
    try:
        path = parse_doc_uri(uri)
        if path is not None:
            return _read_document(kb, uri, path)
        folder = parse_topic_uri(uri)
        if folder is not None:
            return _read_topic(kb, uri, folder)
    except UnicodeDecodeError:
        raise MCPError(INVALID_PARAMS, f"{uri!r} is not a valid kb:// URI (bad percent-encoding)") from None
    except KbkitError as exc:
        raise MCPError(INVALID_PARAMS, f"resource not available: {exc}", {"uri": uri}) from None
    raise MCPError(
        INVALID_PARAMS,
        f"unknown resource {uri!r}: kbkit serves kb://doc/<path> and kb://topic/<folder>",
        {"uri": uri},
    )


def read_alike(view: View, uri: str) -> bool:
    """Whether every principal reading `uri` gets the same (a skill's file, a document outside the
    restricted folders): a host may then share what it keeps of it."""
    if uri.startswith(SKILL_URI_PREFIX):
        return True
    try:
        path = parse_doc_uri(uri)
    except UnicodeDecodeError:
        return False
    return view.everyone_reads(path)


def _read_document(kb: Readable, uri: str, path: str) -> types.ReadResourceResult:
    doc = kb.load_servable(path)
    row = kb.servable(path)
    meta = version_meta(row.sha256) if row is not None else None

    def result(text: str) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=doc.media_type, text=text, _meta=meta)]
        )

    def notice(shown: str) -> str:
        return truncation_notice(
            "This document's text",
            doc.text_size,
            shown,
            f"Read the rest with the get_document tool, path={doc.path!r}, offset={len(shown)}.",
        )

    largest_notice = notice(doc.text)  # a longer text only lengthens the numbers in it
    shown = fit_text(doc.text, _room(result(largest_notice)))
    if len(shown) < len(doc.text) or doc.truncated:
        return result(shown + notice(shown))
    return result(shown)


def _room(rest: types.ReadResourceResult) -> int:
    """What more text may take, encoded, in front of the text `rest` already holds."""
    return RESULT_LIMIT - result_size(rest) + encoded_size("")


def _read_topic(kb: Readable, uri: str, folder: str) -> types.ReadResourceResult:
    if folder:
        check_path(folder)
    rows = kb.list_servable(folder=folder, limit=TOPIC_LIMIT + 1)
    if not rows:
        raise MCPError(INVALID_PARAMS, f"no indexed documents under {folder!r}", {"uri": uri})
    heading = folder or "the knowledge base"
    entries = [f"- [{row.title}]({doc_uri(row.path)}) `{row.path}` ({row.size} bytes)" for row in rows]

    def listing(count: int) -> types.ReadResourceResult:
        lines = [f"# Documents under {heading}", "", *entries[:count]]
        if count < len(rows):
            lines += [
                "",
                f"[kbkit: TRUNCATED. Only the first {count} documents are listed; "
                "use resources/list or a deeper folder for the rest.]",
            ]
        text = "\n".join(lines) + "\n"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    limit = min(len(rows), TOPIC_LIMIT)
    return listing(longest_fitting(limit, lambda count: result_size(listing(count))))


def _resource(row: IndexedDocument) -> types.Resource:
    parser = ALL_PARSERS.get(row.ext)
    modified = datetime.fromtimestamp(row.mtime_ns / 1e9, UTC).isoformat(timespec="seconds")
    return types.Resource(
        uri=doc_uri(row.path),
        name=row.path,
        title=row.title,
        mime_type=parser.media_type if parser else "text/plain",
        size=row.size,
        annotations=types.Annotations(last_modified=modified),
        _meta=version_meta(row.sha256),
    )


def _encode_cursor(after: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode()


def _decode_cursor(cursor: str) -> str:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode()))["after"]
        if not isinstance(value, str):
            raise TypeError
        value.encode("utf-8")
        return value
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeError, RecursionError):
        raise MCPError(
            INVALID_PARAMS, "invalid cursor: pass back the nextCursor of the previous page"
        ) from None
