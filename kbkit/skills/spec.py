"""SKILL.md per the Agent Skills spec, judged as its reference validator (`skills-ref`) judges it.

The frontmatter is read the way `skills-ref` reads it (StrictYAML): every value is text
(`description: yes` is the word "yes", `name: 123` the name "123"), a key given twice, flow style
(`{...}`, `[...]`), anchors, aliases and tags are errors. The name is NFKC-normalized, at most 64
characters, lowercase letters (any script) and digits with single hyphens between them, and equal
to its folder's name. Keys outside the spec are errors for `skills-ref`; kbkit reports them as
warnings (known client extensions silently) unless asked to be strict.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import re

    import yaml

from kbkit.errors import SkillError

SKILL_FILE = "SKILL.md"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
CLIENT_EXTENSION_KEYS = frozenset(
    {"disable-model-invocation", "user-invocable", "argument-hint", "model", "version", "when_to_use"}
)
"""Keys that known clients (Claude Code and others) add; accepted without a warning unless strict."""


@dataclass
class Skill:
    name: str
    description: str
    frontmatter: dict[str, Any]
    body: str
    warnings: list[str] = field(default_factory=list)


def name_problem(name: object) -> str | None:
    """Why `name` is not a skill name by the spec's rule (None when it is one)."""
    if not isinstance(name, str) or not name.strip():
        return "the name must be a non-empty string"
    name = unicodedata.normalize("NFKC", name.strip())
    if len(name) > MAX_NAME:
        return f"the name {name!r} is {len(name)} characters; at most {MAX_NAME}"
    if name != name.lower():
        return f"the name {name!r} must be lowercase"
    if name.startswith("-") or name.endswith("-") or "--" in name:
        return f"the name {name!r} has a leading, trailing or double hyphen"
    if not all(ch.isalnum() or ch == "-" for ch in name):
        return f"the name {name!r} may hold only letters, digits and hyphens"
    return None


def parse_skill(text: str, shown: str, folder_name: str | None, *, strict: bool = False) -> Skill:
    """Parse and validate SKILL.md text; every error found is in the one SkillError raised."""
    meta, body = split_frontmatter(text, shown)
    errors, warnings = problems_of(meta, folder_name, strict=strict)
    if errors:
        raise SkillError(f"{shown}: " + "; ".join(errors))
    name = unicodedata.normalize("NFKC", meta["name"].strip())
    return Skill(name, meta["description"].strip(), meta, body, [f"{shown}: {w}" for w in warnings])


def split_frontmatter(text: str, shown: str) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError(
            f"{shown}: no YAML frontmatter; start the file with a line '---', name and description"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SkillError(f"{shown}: the frontmatter is not closed by a line '---'")
    meta = _load_yaml("".join(lines[1:end]), shown)
    return meta, "".join(lines[end + 1 :])


def problems_of(
    meta: dict[str, Any], folder_name: str | None, *, strict: bool = False
) -> tuple[list[str], list[str]]:
    """(errors, warnings) for parsed frontmatter, as `skills-ref` sees them (strict: exactly)."""
    errors: list[str] = []
    warnings: list[str] = []
    extra = sorted(set(meta) - SPEC_KEYS)
    if strict and extra:
        errors.append(f"keys outside the spec: {', '.join(extra)}")
    elif extra:
        unknown = [key for key in extra if key not in CLIENT_EXTENSION_KEYS]
        warnings += [f"unknown frontmatter key {key!r} (clients may ignore it)" for key in unknown]
    if "name" not in meta:
        errors.append("name is missing")
    else:
        problem = name_problem(meta["name"])
        if problem:
            errors.append(problem)
        elif folder_name is not None:
            name = unicodedata.normalize("NFKC", meta["name"].strip())
            if unicodedata.normalize("NFKC", folder_name) != name:
                errors.append(f"the name {name!r} must equal its folder's name {folder_name!r}")
    description = meta.get("description")
    if "description" not in meta:
        errors.append("description is missing")
    elif not isinstance(description, str) or not description.strip():
        errors.append("description must be non-empty text")
    elif len(description) > MAX_DESCRIPTION:
        errors.append(f"description is {len(description)} characters; at most {MAX_DESCRIPTION}")
    compatibility = meta.get("compatibility")
    if "compatibility" in meta and (
        not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY
    ):
        errors.append(f"compatibility must be text of at most {MAX_COMPATIBILITY} characters")
    if "metadata" in meta and not isinstance(meta["metadata"], dict):
        warnings.append("metadata should be a mapping of keys to text")
    return errors, warnings


def _load_yaml(text: str, shown: str) -> dict[str, Any]:
    """YAML as StrictYAML reads it: text values only, no duplicates, no flow style, anchors or tags."""
    import yaml  # imported when a skill is read, not whenever kbkit starts

    def fail(where: yaml.Mark | None, why: str) -> SkillError:
        line = f"line {where.line + 2}: " if where is not None else ""
        return SkillError(f"{shown}: {line}{why}")

    refused = {
        yaml.FlowMappingStartToken: "flow style ({...}) is not allowed; write one key per line",
        yaml.FlowSequenceStartToken: "flow style ([...]) is not allowed; write a block list or text",
        yaml.AnchorToken: "YAML anchors (&) are not allowed",
        yaml.AliasToken: "YAML aliases (*) are not allowed",
        yaml.TagToken: "YAML tags (!) are not allowed",
    }
    try:
        for token in yaml.scan(text, Loader=_loader()):
            why = refused.get(type(token))
            if why:
                raise fail(token.start_mark, why)
        meta = yaml.load(text, Loader=_loader())  # a SafeLoader: no objects are constructed
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise fail(mark, f"the YAML does not parse ({getattr(exc, 'problem', None) or exc})") from None
    except _Duplicate as exc:
        raise fail(exc.mark, f"the key {exc.key!r} is given twice") from None
    if meta is None or meta == "":
        raise SkillError(f"{shown}: the frontmatter is empty; it needs name and description")
    if not isinstance(meta, dict):
        raise SkillError(f"{shown}: the frontmatter must be a YAML mapping (name: ..., description: ...)")
    return meta


class _Duplicate(Exception):
    def __init__(self, key: str, mark: yaml.Mark | None) -> None:
        self.key, self.mark = key, mark


def _make_loader() -> type[yaml.SafeLoader]:
    import yaml

    class TextLoader(yaml.SafeLoader):
        """SafeLoader with no implicit types: every scalar stays the text it was written as."""

        yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, object]:
            seen: set[object] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise _Duplicate(str(key), key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=True)

    return TextLoader


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    return _make_loader()
