"""Installed skills over MCP, for agents without native skill support: each skill is a prompt
(`skill.<name>`: its SKILL.md body as a user message) and its text files are resources
(`skill://<name>/<path>`).

Only skills that verify are offered: named in skills-lock.json, installed in `.agents/skills`,
and hashing to the pinned value. Each skill folder is read once per request, through the skill
file guards (no links followed, regular files only), and what is served is the bytes that were
hashed, so a file changed after the check cannot slip through. Binary files are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import mcp.types as types
from mcp.shared.exceptions import MCPError

from kbkit.catalog.agents import CANONICAL_SKILL_DIR
from kbkit.errors import KbkitError, SkillError
from kbkit.kb.documents import cut_text, truncation_notice
from kbkit.kb.formats.base import decode_text
from kbkit.kb.formats.registry import TextFiles
from kbkit.skills import files
from kbkit.skills.files import Tree
from kbkit.skills.install import installed_problem
from kbkit.skills.lock import read_lock
from kbkit.skills.spec import SKILL_FILE, Skill, parse_skill

PREFIX = "skill."
URI_PREFIX = "skill://"
URI_TEMPLATE = "skill://{name}/{+path}"
MAX_FILES = 200
_TEXT = TextFiles()


@dataclass(frozen=True)
class Served:
    skill: Skill
    tree: Tree

    def text_files(self) -> dict[str, str]:
        """The skill's files that are UTF-8 text, at most MAX_FILES, in path order."""
        out: dict[str, str] = {}
        for rel in sorted(self.tree.files):
            try:
                out[rel] = decode_text(self.tree.files[rel][0])
            except KbkitError:
                continue
            if len(out) == MAX_FILES:
                break
        return out


class SkillShelf:
    def __init__(self, root: Path) -> None:
        self.root = root

    def skills(self) -> list[Served]:
        return self._verified()[0]

    def unverified(self) -> list[str]:
        """One line per locked skill that is not offered, saying why (for boot lines and doctor)."""
        return self._verified()[1]

    def _verified(self) -> tuple[list[Served], list[str]]:
        try:
            entries = read_lock(self.root).entries()
        except KbkitError as exc:
            return [], [f"skills-lock.json cannot be read ({exc})"]
        served, refused = [], []
        for name, entry in entries.items():
            try:
                tree = files.read_tree(Path(self.root, CANONICAL_SKILL_DIR, name), root=self.root)
                if tree.hash() != entry.computed_hash:
                    refused.append(f"{name}: {installed_problem(self.root, name, entry)}")
                    continue
                served.append(
                    Served(parse_skill(tree.text(SKILL_FILE) or "", f"{name}/{SKILL_FILE}", name), tree)
                )
            except SkillError as exc:
                refused.append(f"{name}: not offered ({exc})")
        return served, refused

    def list_prompts(self) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=PREFIX + s.skill.name,
                    title=f"Skill: {s.skill.name}",
                    description=s.skill.description,
                )
                for s in self.skills()
            ]
        )

    def get_prompt(self, name: str) -> types.GetPromptResult:
        served = self._skill(name[len(PREFIX) :] if name.startswith(PREFIX) else None, f"prompt {name!r}")
        return types.GetPromptResult(
            description=served.skill.description,
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(text=served.skill.body.strip() + "\n")
                )
            ],
        )

    def resources(self) -> list[types.Resource]:
        out = []
        for served in self.skills():
            name = served.skill.name
            for rel in served.text_files():
                out.append(
                    types.Resource(
                        uri=f"{URI_PREFIX}{name}/{quote(rel, safe='/')}",
                        name=f"{name}/{rel}",
                        title=f"{name}: {rel}",
                        mime_type=_TEXT.for_path(rel).media_type,
                        size=len(served.tree.files[rel][0]),
                    )
                )
        return out

    def read(self, uri: str) -> types.ReadResourceResult:
        name, _, rel = unquote(uri[len(URI_PREFIX) :]).partition("/")
        served = self._skill(name, uri)
        text = served.text_files().get(rel)
        if text is None:
            raise MCPError(
                types.INVALID_PARAMS, f"{uri!r} is not a text file of skill {name!r}", {"uri": uri}
            )
        shown, cut = cut_text(text)
        if cut:
            text = shown + truncation_notice(
                f"{rel} of skill {name!r}",
                len(text.encode("utf-8")),
                shown,
                f"The whole file is {CANONICAL_SKILL_DIR}/{name}/{rel} in the project.",
            )
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type=_TEXT.for_path(rel).media_type, text=text)
            ]
        )

    def _skill(self, name: str | None, shown: str) -> Served:
        for served in self.skills():
            if served.skill.name == name:
                return served
        raise MCPError(types.INVALID_PARAMS, f"unknown {shown}: no installed and verified skill by that name")
