"""The skill's reference page (skill-sources/using-the-kb/references/tools-and-resources.md) says
it is what the server really accepts and returns: every argument with its default, and every field
of a reply, checked against the schemas the server lists, so a field added to a tool cannot go
unmentioned where agents read about it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.project import make_project
from tests.helpers.serve import bounded_session

pytestmark = pytest.mark.anyio

PAGE = Path(__file__).resolve().parents[2] / "skill-sources/using-the-kb/references/tools-and-resources.md"


def tool_section(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"## Tool `{name}`")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def documented_arguments(section: str) -> dict[str, str]:
    """argument -> its default column, from the section's argument table."""
    rows = re.findall(r"^\| `(\w+)` \| \w+ \| ([^|]+?) \|", section, re.MULTILINE)
    return dict(rows)


def as_written(schema: dict[str, Any], name: str, required: list[str]) -> str:
    if name in required:
        return "required"
    default = schema.get("default")
    return "none" if default in ("", None) else str(default)


async def listed_tools(tmp_path: Path) -> dict[str, Any]:
    async with bounded_session(make_project(tmp_path / "p")) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("name", ["search", "get_document"])
async def test_every_argument_and_default_of_the_reference_is_the_servers(tmp_path: Path, name: str) -> None:
    tool = (await listed_tools(tmp_path))[name]
    properties = tool.input_schema["properties"]
    required = tool.input_schema.get("required", [])
    written = documented_arguments(tool_section(name))
    assert set(written) == set(properties), (written, sorted(properties))
    for argument, default in written.items():
        assert default == as_written(properties[argument], argument, required), argument


@pytest.mark.parametrize("name", ["search", "get_document"])
async def test_every_field_of_a_reply_is_described_in_the_reference(tmp_path: Path, name: str) -> None:
    tool = (await listed_tools(tmp_path))[name]
    schema = tool.output_schema
    assert schema is not None
    fields = set(schema["properties"])
    if name == "search":  # a hit's fields are the reply's too
        hit = schema["properties"]["results"]["items"]
        fields |= set(hit["properties"]) | set(hit["properties"]["also"]["items"]["properties"])
    section = tool_section(name)
    missing = sorted(field for field in fields - {"results"} if not re.search(f"`{field}[`:]", section))
    assert not missing, f"fields the reference page does not describe: {missing}"
