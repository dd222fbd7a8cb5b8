"""The building blocks of the config model: a table, a key, the refusal a validator raises, and the
value types more than one table uses (kbkit/config/model.py and kbkit/config/servers.py build on them)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from kbkit.catalog.clients import CLIENTS


class Invalid(ValueError):
    """A value a validator refuses; `key` names the offending key when the check spans a section."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def nearest(word: str, options: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest option, or ''."""
    match = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def key(default: Any, doc: str, *, example: Any = None) -> Any:
    """One key: its default, its meaning (docs/configuration.md and kbkit init say it), an example."""
    return Field(default=default, description=doc, examples=None if example is None else [example])


def _not_blank(value: str) -> str:
    if not value.strip():
        raise Invalid("must not be empty")
    return value


def known(known: Iterable[str], noun: str) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    options = tuple(known)

    def check(names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if name not in options:
                raise Invalid(f"unknown {noun} {name!r}{nearest(name, options)}; known: {', '.join(options)}")
        return tuple(dict.fromkeys(names))

    return check


Text = Annotated[StrictStr, AfterValidator(_not_blank)]
"""A string that must not be empty."""
Names = tuple[StrictStr, ...]
"""A list of strings in TOML."""
ClientNames = Annotated[Names, AfterValidator(known(CLIENTS, "client"))]
Seconds = Annotated[StrictInt, Field(ge=1, le=3600)]


class Section(BaseModel):
    """A table of kbkit.toml: unknown keys are refused, values are never coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    opt_in: ClassVar[bool] = False
    """Off unless written: `kbkit init` writes the section as a commented block to uncomment."""
