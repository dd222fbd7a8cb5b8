"""What agents read about the memory tools, measured on Hindsight 1.1.0's real tools/list
(tests/fixtures/hindsight-1.1.0-tools.json, 36 tools, as the live service answered for one bank):
kbkit's short declarations by default, the service's own with `[memory] descriptions = "upstream"`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from kbkit.server.memory.declarations import PARAMETER_TEXT_LIMIT, declared, first_sentence
from tests.helpers.memory import KB_TOOLS, KEY, MEMORY_TOOLS, MemoryUpstream
from tests.helpers.paths import FIXTURES
from tests.helpers.project import make_project
from tests.helpers.serve import serve_in_memory
from tests.helpers.wait import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.processes]  # the upstream is a forked peer

FIXTURE = FIXTURES / "hindsight-1.1.0-tools.json"
UPSTREAM: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in json.loads(FIXTURE.read_text())}

TOKEN_GOAL = 1500
"""The most the whole tools/list (kb tools + retain, recall, reflect) may cost an agent (never over
2,000). Measured (compact UTF-8 JSON of the tools, 4 characters a token): upstream declarations
2,514 tokens (retain, recall and reflect 1,568, the kb tools 963 then); short ones with today's kb
tools 1,479 (memory 782, kb 698), and 1,499 since get_document's structured content carries its text
(docs/adr/0069)."""
MEMORY_SHORT_CAP = 800
"""The three short memory declarations: 782 tokens measured, against 1,568 upstream."""


def tokens(tools: list[types.Tool]) -> float:
    """About what the tools cost an agent's context: 4 characters a token of their JSON."""
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False)) / 4


def shape(schema: Any) -> Any:
    """A schema without its description texts, null defaults, `additionalProperties: true` and null
    as an optional property's second type: names, types, required, enums, other defaults and nesting."""
    if isinstance(schema, dict):
        out = {
            key: shape(value)
            for key, value in schema.items()
            if not (key == "description" and isinstance(value, str))
            and not (key == "default" and value is None)
            and not (key == "additionalProperties" and value is True)
        }
        for name, sub in out.get("properties", {}).items():
            others = [option for option in sub.get("anyOf", []) if option != {"type": "null"}]
            if name not in schema.get("required", []) and len(others) == 1 and len(sub["anyOf"]) == 2:
                out["properties"][name] = {**{k: v for k, v in sub.items() if k != "anyOf"}, **others[0]}
        return out
    if isinstance(schema, list):
        return [shape(value) for value in schema]
    return schema


def descriptions(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        found = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return found + [text for value in schema.values() for text in descriptions(value)]
    if isinstance(schema, list):
        return [text for value in schema for text in descriptions(value)]
    return []


@pytest.fixture(scope="module")
def hindsight(tmp_path_factory: pytest.TempPathFactory):
    peer = MemoryUpstream(tmp_path_factory.mktemp("hindsight"), extra=("--tools-file", str(FIXTURE))).start()
    yield peer
    peer.kill()


async def tools_listed(tmp_path: Path, peer: MemoryUpstream, extra: str = "") -> list[types.Tool]:
    """tools/list of an in-memory kbkit whose memory upstream is `peer`, once memory is on."""
    config = f'[kb]\npath = "docs"\n[memory]\nurl = "{peer.url}"\n{extra}'
    root = make_project(tmp_path / "project", config=config)
    async with serve_in_memory(root) as client:

        async def memory_on() -> list[types.Tool] | None:
            tools = (await client.list_tools()).tools
            return tools if len(tools) > len(KB_TOOLS) else None

        return await eventually(memory_on, what="the memory tools to be listed")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_API_KEY", KEY)


async def test_short_descriptions_keep_the_whole_tools_list_under_the_token_cap(tmp_path, hindsight) -> None:
    tools = await tools_listed(tmp_path, hindsight)
    assert [tool.name for tool in tools] == KB_TOOLS + MEMORY_TOOLS
    memory = tools[len(KB_TOOLS) :]
    upstream = [types.Tool.model_validate(UPSTREAM[name]) for name in MEMORY_TOOLS]
    assert tokens(memory) <= MEMORY_SHORT_CAP < tokens(upstream)
    assert tokens(tools) <= TOKEN_GOAL
    for tool in memory:
        assert tool.description and len(tool.description) <= 100
        assert all(len(text) <= PARAMETER_TEXT_LIMIT for text in descriptions(tool.input_schema))


async def test_upstream_descriptions_pass_the_services_declarations_on_byte_for_byte(
    tmp_path, hindsight
) -> None:
    tools = await tools_listed(tmp_path, hindsight, 'descriptions = "upstream"\n')
    for tool in tools[len(KB_TOOLS) :]:
        assert tool.description == UPSTREAM[tool.name]["description"]
        assert tool.model_dump(mode="json", by_alias=True, exclude_none=True) == UPSTREAM[tool.name]


async def test_short_declarations_keep_the_shape_of_each_input_schema(tmp_path, hindsight) -> None:
    tools = await tools_listed(tmp_path, hindsight)
    for tool in tools[len(KB_TOOLS) :]:
        original = UPSTREAM[tool.name]["inputSchema"]
        assert tool.input_schema != original  # shortened, yet:
        assert shape(tool.input_schema) == shape(original)
        assert tool.annotations == types.ToolAnnotations.model_validate(UPSTREAM[tool.name]["annotations"])
    for name, upstream in UPSTREAM.items():  # every tool the service has, not only the default three
        short = declared(types.Tool.model_validate(upstream), name, "short")
        assert shape(short.input_schema) == shape(upstream["inputSchema"]), name
        assert len(descriptions(short.input_schema)) == len(descriptions(upstream["inputSchema"])), name


async def test_another_tool_keeps_the_first_sentence_of_its_own_description(tmp_path, hindsight) -> None:
    tools = await tools_listed(tmp_path, hindsight, 'tools = ["recall", "update_memory"]\n')
    assert [tool.name for tool in tools] == [*KB_TOOLS, "recall", "update_memory"]
    assert tools[-1].description == "Edit a memory unit to correct what was extracted."
    assert UPSTREAM["update_memory"]["description"].strip().startswith(tools[-1].description + "\n\n")


def test_a_first_sentence_skips_abbreviations_and_is_cut_at_a_word_within_the_limit() -> None:
    assert first_sentence("Tags to match, e.g. team. More here.", 80) == "Tags to match, e.g. team."
    assert first_sentence("One line\nwrapped. Two.\n\nNext paragraph.", 80) == "One line wrapped."
    assert first_sentence("No full stop at all", 80) == "No full stop at all"
    assert (
        first_sentence("How to match tags - 'any' (any tag), 'all' (all tags)", 30)
        == "How to match tags - 'any'…"
    )
