"""What an agent reads about each memory tool. Every word of a tools/list sits in the agent's
context for the whole session, and memory services write long, persuasive descriptions (Hindsight's
retain, recall and reflect cost about 1,570 tokens). With `[memory] descriptions = "short"` kbkit
says what retain, recall and reflect do in a sentence of its own, keeps the first sentence of any
other tool's description, and cuts each input-schema text to its first sentence, less what the
schema says anyway ("Optional", "(default: ...)"). It drops what means nothing more than its
absence (`"default": null`, `"additionalProperties": true`, `null` as an optional property's
other type), the output schema (kbkit may cut a long reply, which then no longer matches it) and
the upstream's own `_meta`. Property names, types, required, enums, other defaults and nesting
are kept as they are (docs/adr/0025). "upstream" passes the service's declarations on untouched.
"""

from __future__ import annotations

import re
from typing import Any

import mcp.types as types

KNOWN_DESCRIPTIONS = {
    "retain": "Store a fact, decision or preference in long-term memory for later sessions.",
    "recall": "Search long-term memory for the stored facts that match a query.",
    "reflect": "Answer a question by reasoning over all of long-term memory (slower than recall).",
}
"""kbkit's words for the tools every memory service of this kind offers, by upstream name."""
TOOL_TEXT_LIMIT = 160
"""Characters of another tool's own description kept: its first sentence, at most this long."""
PARAMETER_TEXT_LIMIT = 60
"""Characters kept of a parameter's description: its first sentence, at most this long."""

SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
"""JSON Schema keywords whose value maps names to schemas."""
SCHEMA_VALUES = (
    "items",
    "prefixItems",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
)
"""Keywords whose value is a schema or a list of schemas."""
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")
_REDUNDANT = re.compile(r"^\s*Optional[:,]?\s+|\s*\(default:[^)]*\)", re.IGNORECASE)
"""What a parameter's text repeats of its schema: "Optional" (it is not in `required`) and
"(default: ...)" (its `default` says it)."""
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def declared(tool: types.Tool, upstream_name: str, descriptions: str) -> types.Tool:
    """The tool as kbkit lists it: untouched for "upstream", else with short descriptions."""
    if descriptions == "upstream":
        return tool
    text = KNOWN_DESCRIPTIONS.get(upstream_name) or first_sentence(tool.description or "", TOOL_TEXT_LIMIT)
    return tool.model_copy(
        update={
            "description": text or None,
            "input_schema": short_schema(tool.input_schema),
            "output_schema": None,
            "meta": None,
        }
    )


def first_sentence(text: str, limit: int) -> str:
    """The first sentence of `text` (of its first paragraph), cut at a word within `limit`."""
    paragraph = text.strip().split("\n\n", 1)[0]
    at = 0
    for end in _SENTENCE_END.finditer(paragraph):
        if not paragraph[: end.end()].endswith(_ABBREVIATIONS):
            at = end.end()
            break
    sentence = " ".join((paragraph[:at] if at else paragraph).split())
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:-(")
    return cut + "…"


def short_schema(schema: Any, *, optional: bool = False) -> Any:
    """`schema` with every description text cut to its first sentence, every `"default": null`
    dropped, and an optional property's `anyOf [T, null]` written as T (leaving it out says "none"
    as well as null does); names, types, required, enums and nesting stay. Walks the schema
    keywords only, so a property named "description" or "default", a default or an enum value is
    never taken for one."""
    if not isinstance(schema, dict):
        return schema
    if optional:
        schema = without_null(schema)
    out: dict[str, Any] = {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    for keyword, value in schema.items():
        if (keyword == "default" and value is None) or (keyword == "additionalProperties" and value is True):
            continue  # what a schema means when the keyword is absent
        if keyword == "description" and isinstance(value, str):
            out[keyword] = first_sentence(_REDUNDANT.sub("", value), PARAMETER_TEXT_LIMIT)
        elif keyword == "properties" and isinstance(value, dict):
            out[keyword] = {
                name: short_schema(sub, optional=name not in required) for name, sub in value.items()
            }
        elif keyword in SCHEMA_MAPS and isinstance(value, dict):
            out[keyword] = {name: short_schema(sub) for name, sub in value.items()}
        elif keyword in SCHEMA_VALUES:
            out[keyword] = (
                [short_schema(s) for s in value] if isinstance(value, list) else short_schema(value)
            )
        else:
            out[keyword] = value
    return out


def without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [T, {"type": "null"}], ...}` as T with the rest of its keywords; else as it is."""
    options = schema.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return schema
    (kept,) = [option for option in options if option != {"type": "null"}]
    if not isinstance(kept, dict) or set(kept) & (set(schema) - {"anyOf"}):
        return schema
    return {**{key: value for key, value in schema.items() if key != "anyOf"}, **kept}
