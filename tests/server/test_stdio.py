"""The MCP surface, driven by the real `mcp` client against `kbkit serve` in a subprocess, in both eras."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from kbkit.server.rendering import read_line, search_text
from tests.helpers.project import make_project
from tests.helpers.serve import ERAS, document_text, serve_stdio

pytestmark = [pytest.mark.anyio, pytest.mark.processes]

EXPECTED_TOOLS = ["search", "get_document"]


@pytest.mark.parametrize("mode", ERAS)
async def test_both_eras_list_the_kb_tools_with_schemas_and_read_only_annotations(
    project: Path, mode: str
) -> None:
    async with serve_stdio(project, mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == EXPECTED_TOOLS
        for tool in tools:
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            assert tool.annotations.read_only_hint is True
            assert tool.annotations.open_world_hint is False
        search = tools[0]
        assert search.input_schema["required"] == ["query"]
        assert search.input_schema["properties"]["limit"]["maximum"] == 100


@pytest.mark.parametrize("mode", ERAS)
async def test_search_returns_ranked_hits_with_uris_and_structured_content(project: Path, mode: str) -> None:
    async with serve_stdio(project, mode) as client:
        result = await client.call_tool("search", {"query": "How does the guard sequence work?"})
        assert not result.is_error
        data = result.structured_content
        assert data["results"][0]["path"] == "adr/0001-guards.md"
        assert data["results"][0]["uri"] == "kb://doc/adr/0001-guards.md"
        assert data["results"][0]["title"] == "One guard sequence"
        assert result.content[0].text == search_text(data)  # the same hits in plain lines


@pytest.mark.parametrize("mode", ERAS)
async def test_get_document_reads_any_registered_file_and_reports_size(project: Path, mode: str) -> None:
    (project / "docs" / ".kbignore").write_text("private/\n")
    (project / "docs" / "private").mkdir()
    (project / "docs" / "private" / "secret-plan.md").write_text("# Plan\n\nignored but readable\n")
    async with serve_stdio(project, mode) as client:
        result = await client.call_tool("get_document", {"path": "private/secret-plan.md"})
        assert not result.is_error, result.content
        data = result.structured_content
        assert document_text(result) == "# Plan\n\nignored but readable\n"
        assert result.content[0].text == read_line(data)  # what the read holds, for agents that read text
        assert data["media_type"] == "text/markdown"
        assert data["truncated"] is False
        assert data["size"] == len(b"# Plan\n\nignored but readable\n")
        assert "uri" not in data  # not offered as a resource: it is ignored
        listed = [r.uri for r in (await client.list_resources()).resources]
        assert "kb://doc/private/secret-plan.md" not in listed
        with pytest.raises(MCPError) as refused:
            await client.read_resource("kb://doc/private/secret-plan.md")
        assert refused.value.code == -32602


@pytest.mark.parametrize("mode", ERAS)
async def test_resources_list_pages_with_cursors_and_carries_metadata(tmp_path: Path, mode: str) -> None:
    files = {f"area{i % 3}/doc-{i:03}.md": f"# Doc {i}\n\nbody {i}\n" for i in range(230)}
    root = make_project(tmp_path / "p", files)
    async with serve_stdio(root, mode) as client:
        uris, cursor, pages = [], None, 0
        while True:
            page = await client.list_resources(cursor=cursor)
            pages += 1
            uris += [r.uri for r in page.resources]
            for resource in page.resources:
                assert resource.mime_type == "text/markdown"
                assert resource.size and resource.size > 0
                assert resource.title.startswith("Doc ")
                assert resource.annotations.last_modified
            cursor = page.next_cursor
            if not cursor:
                break
        assert pages == 3
        assert len(uris) == 230 == len(set(uris))
        assert uris == sorted(uris)
        with pytest.raises(MCPError) as bad:
            await client.list_resources(cursor="not-a-cursor")
        assert bad.value.code == -32602


@pytest.mark.parametrize("mode", ERAS)
async def test_resource_read_returns_text_with_media_type_and_templates_are_listed(
    project: Path, mode: str
) -> None:
    async with serve_stdio(project, mode) as client:
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["kb://doc/{+path}", "kb://topic/{+prefix}", "skill://{name}/{+path}"]
        doc = (await client.read_resource("kb://doc/runbooks/deploy.rst")).contents[0]
        assert doc.mime_type == "text/x-rst"
        assert "blue green" in doc.text
        topic = (await client.read_resource("kb://topic/adr")).contents[0]
        assert topic.mime_type == "text/markdown"
        assert "kb://doc/adr/0001-guards.md" in topic.text
        assert "getting-started" not in topic.text


@pytest.mark.parametrize("mode", ERAS)
async def test_percent_encoded_paths_round_trip(tmp_path: Path, mode: str) -> None:
    root = make_project(tmp_path / "p", {"notes/what's new (2026) é.md": "# New\n\nthings\n"})
    async with serve_stdio(root, mode) as client:
        (resource,) = (await client.list_resources()).resources
        assert resource.uri == "kb://doc/notes/what%27s%20new%20%282026%29%20%C3%A9.md"
        text = (await client.read_resource(resource.uri)).contents[0].text
        assert text == "# New\n\nthings\n"


async def test_server_tools_allowlist_narrows_the_tool_list(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", config='[kb]\npath = "docs"\n[server]\ntools = ["search"]\n')
    async with serve_stdio(root) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["search"]
        with pytest.raises(MCPError):
            await client.call_tool("get_document", {"path": "notes.txt"})


@pytest.mark.parametrize("mode", ERAS)
async def test_narrowing_parsers_without_reindexing_stops_offering_those_rows(
    project: Path, mode: str
) -> None:
    async with serve_stdio(project, mode) as client:
        assert "kb://doc/notes.txt" in [r.uri for r in (await client.list_resources()).resources]
    # Narrow the parsers, but serve from the same index without letting a scan remove the rows.
    (project / "kbkit.toml").write_text('[kb]\npath = "docs"\n[parsers]\nenabled = ["md", "rst"]\n')
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase

    kb = KnowledgeBase.open(load_settings(project))
    try:
        assert "notes.txt" not in [d.path for d in kb.list_servable()]
        hit = kb.search("write-ahead logging").results[0]
        assert hit.path == "notes.txt" and hit.uri is None
        assert kb.servable("notes.txt") is None
    finally:
        kb.close()


async def test_boot_lines_go_to_stderr_and_name_what_was_indexed(project: Path, tmp_path: Path) -> None:
    (project / "docs" / "broken.md").write_bytes(b"\xff\xfe\x00binary")  # a UTF-16 mark, then odd bytes
    log = tmp_path / "stderr.log"
    async with serve_stdio(project, stderr_path=log) as client:
        await client.list_tools()
        await client.call_tool("search", {"query": "guard"})  # waits for the start-up scan on a small kb
    lines = log.read_text().splitlines()
    assert all(line.startswith("[kbkit] ") for line in lines), lines
    text = "\n".join(lines)
    assert "transport: stdio" in text
    assert f"root: {project.resolve()}" in text
    index_line = next(line for line in lines if line.startswith("[kbkit] index: "))
    assert index_line.startswith(
        "[kbkit] index: none indexed yet (a new index); brought up to date in the background"
    )
    assert "parsers: md, markdown, txt, rst, pdf, docx, pptx, xlsx, odt, odp, ods, html, htm, ipynb" in text
    assert "memory: off" in text
    finished = next(line for line in lines if "indexing finished:" in line)
    assert finished.startswith("[kbkit] indexing finished: 4 documents in ")
    assert "(4 added, 0 changed, 0 removed); 1 skipped (1 undecodable" in finished
    assert lines.index(finished) > next(i for i, line in enumerate(lines) if "memory: off" in line)


async def test_boot_lines_count_the_documents_already_indexed_before_opening_the_index(
    project: Path, tmp_path: Path
) -> None:
    from kbkit.config import load_settings
    from kbkit.kb.base import KnowledgeBase

    settings = load_settings(project)
    kb = KnowledgeBase.open(settings)
    try:
        kb.scan()
    finally:
        kb.close()
    (project / "docs" / "later.md").write_text("# Later\n\nWritten after the last index run.\n")
    log = tmp_path / "stderr.log"
    async with serve_stdio(project, stderr_path=log) as client:
        await client.call_tool("search", {"query": "later"})  # waits for the start-up scan
    lines = log.read_text().splitlines()
    index_line = next(line for line in lines if line.startswith("[kbkit] index: "))
    assert index_line.startswith(
        "[kbkit] index: 4 documents already indexed; brought up to date in the background"
    )
    assert any(line.startswith("[kbkit] indexing finished: 5 documents in ") for line in lines), lines

    settings.index_path.write_bytes(b"not an index " * 1000)  # damaged: opening it rebuilds it
    async with serve_stdio(project, stderr_path=log) as client:
        await client.call_tool("search", {"query": "later"})
    lines = log.read_text().splitlines()
    index_line = next(line for line in lines if line.startswith("[kbkit] index: "))
    assert index_line.startswith(
        "[kbkit] index: documents not counted (the index is unreadable: file is not a database); "
        "brought up to date in the background"
    )
    assert any(line.startswith("[kbkit] index repaired: ") for line in lines), lines
    assert lines.index(index_line) < next(i for i, line in enumerate(lines) if "index repaired" in line)
