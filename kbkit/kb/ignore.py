"""What the indexer skips: `[kb] exclude_dirs` and `.kbignore` (gitignore syntax, at the kb root).

These rules bound *indexing*, not access: an ignored file is absent from search and from the
resource listing, but `get_document` still reads it (docs/adr/0001).

Patterns are matched by RE2 (pathspec's `re2` backend), in time linear in the path: Python's
own regex engine backtracks, and `**/a*a*a*...b` took minutes over a few thousand files. The
file itself is bounded in size, pattern count and pattern length (docs/adr/0018).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pathspec
import re2

from kbkit.errors import ConfigError
from kbkit.fsutil import read_text_file

KBIGNORE = ".kbignore"
MAX_FILE_BYTES = 256 * 1024
MAX_PATTERNS = 1_000
MAX_PATTERN_LENGTH = 256
"""Characters per pattern; a path pattern longer than this is not one a person wrote."""


class IgnoreRules:
    def __init__(self, exclude_dirs: Iterable[str] = (), kbignore_lines: Iterable[str] = ()) -> None:
        excludes = [entry.strip("/") for entry in exclude_dirs if entry.strip("/")]
        self._dir_names = frozenset(entry for entry in excludes if "/" not in entry)
        self._dir_paths = frozenset(entry for entry in excludes if "/" in entry)
        lines = list(kbignore_lines)
        rules = [(number, line) for number, line in enumerate(lines, 1) if _is_rule(line)]
        _check_bounds(rules)
        self._spec = _compile(lines) if rules else None

    @classmethod
    def load(cls, kb_root: Path, exclude_dirs: Iterable[str]) -> IgnoreRules:
        path = kb_root / KBIGNORE
        text = read_text_file(path, limit=MAX_FILE_BYTES)
        lines = (text or "").removeprefix("\ufeff").splitlines()
        try:
            return cls(exclude_dirs, lines)
        except ConfigError as exc:
            raise ConfigError(str(exc), file=str(path)) from None

    admits: Callable[[str], bool] = staticmethod(lambda rel: True)
    """Whether a file belongs in this index at all: a partition of the kb (a restricted folder, or
    everything outside them) holds only its own files, and says nothing of the others."""

    def only(self, admits: Callable[[str], bool]) -> IgnoreRules:
        self.admits = admits
        return self

    def skips_dir(self, rel: str, name: str) -> bool:
        """True when the folder at `rel` (relative to the kb root) is not descended into."""
        if name in self._dir_names or rel in self._dir_paths:
            return True
        return self._spec is not None and self._spec.match_file(rel + "/")

    def skips_file(self, rel: str) -> bool:
        return rel == KBIGNORE or (self._spec is not None and self._spec.match_file(rel))


def _compile(lines: list[str]) -> pathspec.GitIgnoreSpec:
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")
    except re2.error:  # the patterns together are over RE2's memory budget
        raise ConfigError(
            "its patterns together are too many or too complex to match; use fewer wildcards, "
            "or ignore whole folders rather than many files"
        ) from None
    except (ValueError, TypeError) as exc:  # pathspec rejects a malformed pattern this way
        raise ConfigError(f"a pattern is not valid gitignore syntax ({exc})") from None


def _check_bounds(rules: list[tuple[int, str]]) -> None:
    if len(rules) > MAX_PATTERNS:
        raise ConfigError(
            f"{len(rules)} patterns, over the {MAX_PATTERNS}-pattern limit; "
            "ignore whole folders rather than many files"
        )
    for number, line in rules:
        if len(line.strip()) > MAX_PATTERN_LENGTH:
            shown = line.strip()[:40] + "..."
            raise ConfigError(
                f"line {number}: the pattern {shown!r} is {len(line.strip())} characters, over the "
                f"{MAX_PATTERN_LENGTH}-character limit; shorten it"
            )


def _is_rule(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")
