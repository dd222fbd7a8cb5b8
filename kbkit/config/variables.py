"""`${NAME}` references in a team server's command, env, url and headers, and their resolution.

A team server's entry in kbkit.toml names its secrets (`Bearer ${WIKI_TOKEN}`); their values live
in the environment or the project's `.env.local` (the environment wins) and are substituted only
at launch, by kbkit, in the process that starts the server. The syntax is one form only,
`${NAME}` with NAME a variable name: no defaults, no nesting, no escapes, so a value can be read
at a glance and a mistake (`${TOKEN`, `${my token}`) is refused when the config is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
REFERENCE = re.compile(r"\$\{(" + NAME + r")\}")
OPENING = "${"


class BadReference(ValueError):
    """A `${` that does not start a well-formed `${NAME}`."""


@dataclass(frozen=True)
class Unset(Exception):
    """Variables a value names that neither the environment nor `.env.local` sets."""

    names: tuple[str, ...]


def references(text: str) -> list[str]:
    """The variable names `text` refers to, in order; BadReference for a malformed `${`."""
    found: list[str] = []
    at = 0
    while (start := text.find(OPENING, at)) >= 0:
        match = REFERENCE.match(text, start)
        if match is None:
            end = text.find("}", start)
            shown = text[start:] if end < 0 else text[start : end + 1]
            if end < 0:
                raise BadReference(f"{shown[:40]!r} opens ${{ without a closing }}; write ${{NAME}}")
            raise BadReference(
                f"{shown[:40]!r} is not a variable reference; write ${{NAME}} (letters, digits, _)"
            )
        found.append(match.group(1))
        at = match.end()
    return found


def all_references(values: Iterable[str]) -> list[str]:
    """Every name the values refer to, each once, in order of first use."""
    return list(dict.fromkeys(name for value in values for name in references(value)))


def substitute(text: str, values: Mapping[str, str]) -> str:
    """`text` with each `${NAME}` replaced; Unset names every variable missing or empty."""
    missing = [name for name in references(text) if not values.get(name)]
    if missing:
        raise Unset(tuple(dict.fromkeys(missing)))
    return REFERENCE.sub(lambda match: values[match.group(1)], text)


def substitute_all(items: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]:
    """A mapping's values substituted; Unset names every variable missing across all of them."""
    missing = [name for value in items.values() for name in references(value) if not values.get(name)]
    if missing:
        raise Unset(tuple(dict.fromkeys(missing)))
    return {key: substitute(value, values) for key, value in items.items()}


def strings(*groups: Iterable[str] | Mapping[str, str]) -> Iterator[str]:
    """Every string of lists and of mappings' values (what may hold a reference)."""
    for group in groups:
        yield from (group.values() if isinstance(group, Mapping) else group)
