"""Read and change one entry in a client's config file, leaving everything else as it was.

JSON and JSON-with-comments files are edited in place at the entry's text span
(`kbkit.sync.jsonc`), so other servers, other settings, key order, indentation and comments
survive byte for byte. TOML goes through `kbkit.config.tomledit` (tomlkit, with every shape of
the user's file handled and each result checked).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from typing import Any

import tomlkit
import tomlkit.exceptions

from kbkit.config import tomledit
from kbkit.errors import JsoncError, SyncRefused, TomlEditError
from kbkit.sync import jsonc

TOML_TABLES = "toml-tables"
"""A TOML file whose servers are an array of tables, each naming itself (`[[mcp_servers]]` with
`name = "kb"`, Mistral Vibe): an entry's path is (array key, name)."""


class ConfigText:
    """One client file's text and the entry operations on it."""

    def __init__(self, format: str, text: str | None, shown: str) -> None:
        self.format = format
        self.shown = shown
        self.text = text or ""
        self._check()

    def get(self, path: Sequence[str]) -> Any | None:
        if self.format == TOML_TABLES:
            return tomledit.get_named(self.text, path)
        if self.format == "toml":
            node: Any = tomlkit.parse(self.text).unwrap()
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    return None
                node = node[key]
            return node
        return jsonc.get_member(self.text, path) if not self._blank else None

    def set(self, path: Sequence[str], value: Any) -> None:
        if self.format == TOML_TABLES:
            self.text = self._toml(tomledit.set_named, path, value)
        elif self.format == "toml":
            self.text = self._toml(tomledit.set_entry, path, value)
        else:
            self.text = self._json(jsonc.set_member, path, value)

    def delete(self, path: Sequence[str]) -> None:
        if self.format == TOML_TABLES:
            self.text = self._toml(tomledit.delete_named, path)
        elif self.format == "toml":
            self.text = self._toml(tomledit.delete_entry, path)
        else:
            self.text = self._json(jsonc.delete_member, path)

    def holds_nothing_but(self, root_key: Sequence[str]) -> bool:
        """True when the file is empty apart from an empty `root_key` container (ours to delete);
        with no `root_key`, when it is an empty object."""
        if self._blank:
            return True
        toml = self.format in ("toml", TOML_TABLES)
        data = tomlkit.parse(self.text).unwrap() if toml else jsonc.loads(self.text)
        for key in root_key:
            if set(data) - {key}:
                return False
            data = data.get(key, {})
        return data in ({}, [])

    def _toml(self, operation: Callable[..., str], *args: object) -> str:
        try:
            return operation(self.text, *args)
        except TomlEditError as exc:
            raise SyncRefused(f"{self.shown}: {exc}; fix it by hand, then rerun kbkit sync") from None

    def _json(self, operation: Callable[..., str], *args: object) -> str:
        try:
            return operation(self.text, *args)
        except JsoncError as exc:
            raise SyncRefused(f"{self.shown}: {exc}; fix it by hand, then rerun kbkit sync") from None

    @property
    def _blank(self) -> bool:
        """Empty, or (JSON) nothing but comments: there is no entry yet, and set() will start the object."""
        if not self.text.strip():
            return True
        if self.format in ("toml", TOML_TABLES):
            return False
        try:
            jsonc.loads(self.text)
        except JsoncError as exc:
            return "empty document" in str(exc)
        return False

    def _check(self) -> None:
        """Refuse a file that does not parse, before anything is changed."""
        if self._blank:
            return
        try:
            if self.format in ("toml", TOML_TABLES):
                tomlkit.parse(self.text)
                tomllib.loads(self.text)  # the reference parser: what tomlkit lets through, Codex may not
            else:
                data = jsonc.loads(self.text)  # comments are kept wherever clients accept them
                if not isinstance(data, dict):
                    raise SyncRefused(
                        f"{self.shown}: the top level is not an object; kbkit will not touch it"
                    )
        except JsoncError as exc:
            raise SyncRefused(f"{self.shown} does not parse ({exc}); fix it, then rerun kbkit sync") from None
        except tomlkit.exceptions.ParseError as exc:
            raise SyncRefused(
                f"{self.shown} does not parse (line {exc.line}, column {exc.col}: {exc}); "
                "fix it, then rerun kbkit sync"
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise SyncRefused(f"{self.shown} does not parse ({exc}); fix it, then rerun kbkit sync") from None
