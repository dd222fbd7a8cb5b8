"""Installed skills over MCP, for agents without native skill support: each skill is a prompt
(`skill.<name>`: its SKILL.md body as a user message) and its files are resources
(`skill://<name>/<path>`). Read from the canonical copies in `.agents/skills`, through the guard.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, unquote

import mcp.types as types
from mcp.shared.exceptions import MCPError

from kbkit.errors import KbkitError
from kbkit.kb.documents import extract, read_guarded
from kbkit.kb.parsers import TextFiles
from kbkit.skills.lock import folder_files
from kbkit.skills.spec import Skill, SkillError, read_skill
from kbkit.sync.clients import CANONICAL_SKILL_DIR

PREFIX = "skill."
URI_PREFIX = "skill://"
URI_TEMPLATE = "skill://{name}/{+path}"
MAX_FILES = 200
_TEXT = TextFiles()


class SkillShelf:
    def __init__(self, root: Path) -> None:
        self.folder = root / CANONICAL_SKILL_DIR

    def skills(self) -> list[Skill]:
        if not self.folder.is_dir():
            return []
        found = []
        for child in sorted(self.folder.iterdir()):
            if child.is_dir() and not child.is_symlink() and not child.name.startswith("."):
                try:
                    found.append(read_skill(child))
                except SkillError:
                    continue  # `kbkit skills check` reports it; the server offers only valid skills
        return found

    def list_prompts(self) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(name=PREFIX + s.name, title=f"Skill: {s.name}", description=s.description)
                for s in self.skills()
            ]
        )

    def get_prompt(self, name: str) -> types.GetPromptResult:
        skill = self._skill(name[len(PREFIX) :] if name.startswith(PREFIX) else None, f"prompt {name!r}")
        return types.GetPromptResult(
            description=skill.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=skill.body.strip() + "\n"))
            ],
        )

    def resources(self) -> list[types.Resource]:
        out = []
        for skill in self.skills():
            for rel, path in folder_files(skill.folder)[:MAX_FILES]:
                out.append(
                    types.Resource(
                        uri=f"{URI_PREFIX}{skill.name}/{quote(rel, safe='/')}",
                        name=f"{skill.name}/{rel}",
                        title=f"{skill.name}: {rel}",
                        mime_type=_TEXT.for_path(rel).media_type,
                        size=path.stat().st_size,
                    )
                )
        return out

    def read(self, uri: str) -> types.ReadResourceResult:
        name, _, rel = unquote(uri[len(URI_PREFIX) :]).partition("/")
        skill = self._skill(name, uri)
        if rel not in {r for r, _ in folder_files(skill.folder)[:MAX_FILES]}:
            raise MCPError(types.INVALID_PARAMS, f"{uri!r} is not a file of skill {name!r}", {"uri": uri})
        try:
            doc = extract(read_guarded(skill.folder, rel, _TEXT), _TEXT)
        except KbkitError as exc:
            raise MCPError(types.INVALID_PARAMS, f"resource not available: {exc}", {"uri": uri}) from None
        text = doc.text
        if doc.truncated:
            text += f"\n\n[kbkit: TRUNCATED. Only the first {len(doc.text)} characters of {rel} are shown.]"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=doc.media_type, text=text)]
        )

    def _skill(self, name: str | None, shown: str) -> Skill:
        for skill in self.skills():
            if skill.name == name:
                return skill
        raise MCPError(types.INVALID_PARAMS, f"unknown {shown}: no installed skill by that name")
