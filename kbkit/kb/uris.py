"""The kb:// URI scheme: `kb://doc/<path>` for a document, `kb://topic/<prefix>` for a folder.

Paths are percent-encoded per segment with `/` kept, so every URI names one path and decoding
is exact. Decoded paths still go through the guard sequence; decoding is not a check.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

DOC_PREFIX = "kb://doc/"
TOPIC_PREFIX = "kb://topic/"
DOC_TEMPLATE = "kb://doc/{+path}"
TOPIC_TEMPLATE = "kb://topic/{+prefix}"


def doc_uri(path: str) -> str:
    return DOC_PREFIX + quote(path, safe="/")


def parse_doc_uri(uri: str) -> str | None:
    """The document path a `kb://doc/` URI names, or None when it is not one."""
    if not uri.startswith(DOC_PREFIX):
        return None
    return unquote(uri[len(DOC_PREFIX) :], errors="strict")


def parse_topic_uri(uri: str) -> str | None:
    if not uri.startswith(TOPIC_PREFIX):
        return None
    return unquote(uri[len(TOPIC_PREFIX) :], errors="strict").strip("/")
