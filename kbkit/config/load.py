"""Read kbkit.toml, overlay kbkit.local.toml, validate against the model, and say which file is wrong.

Each value remembers the file it came from, so an error names kbkit.local.toml when the bad key
is there. pydantic's errors are translated here, once, into one line with the key and the fix.
"""

from __future__ import annotations

import io
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from dotenv import dotenv_values
from pydantic import TypeAdapter, ValidationError

from kbkit.config import repo, trust
from kbkit.config.fields import Invalid, Section, nearest
from kbkit.config.model import (
    KbkitConfig,
    keys,
    section_at,
    sections,
)
from kbkit.config.servers import TeamServer
from kbkit.config.settings import (
    CONFIG_FILE,
    ENV_FILE,
    LOCAL_CONFIG_FILE,
    Settings,
    origin_of,
)
from kbkit.errors import ConfigError
from kbkit.fsutil import read_text_file


def find_root(start: Path | None = None) -> Path:
    """The nearest folder, from `start` upwards, that holds kbkit.toml.

    Anything named kbkit.toml counts (a folder, a dangling link): reading it then says what is
    wrong with it, instead of a parent folder's file being used behind the user's back.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if os.path.lexists(folder / CONFIG_FILE):
            return folder
    raise ConfigError(
        f"no {CONFIG_FILE} in {here} or any folder above it",
        fix="run `kbkit init` in your project or pass --root DIR",
    )


def load_settings(
    root: Path | None = None, *, environ: Mapping[str, str] | None = None, as_written: bool = False
) -> Settings:
    """Read and validate the configuration of the project at `root` (or the nearest one).

    What the tracked files changed that this member has not trusted is set back to what they did
    trust (or off), and listed in `pending` (trust.py); `as_written` skips that, for `kbkit trust`
    itself, which shows and records the values as written."""
    root = find_root() if root is None else Path(root).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--root {root} is not a folder", fix="pass the project folder")
    tracked = _read_toml(root / CONFIG_FILE)
    if tracked is None:
        raise ConfigError(f"no {CONFIG_FILE} in {root}", fix=f"run `kbkit init --root {root}` to create one")
    merged: dict[str, Any] = {}
    origins: dict[str, Path] = {}
    sources = [root / CONFIG_FILE]
    _overlay(merged, tracked, root / CONFIG_FILE, origins, ())
    local = _read_toml(root / LOCAL_CONFIG_FILE)
    if local is not None:
        _overlay(merged, local, root / LOCAL_CONFIG_FILE, origins, ())
        sources.append(root / LOCAL_CONFIG_FILE)
    try:
        config = KbkitConfig.model_validate(merged)
    except ValidationError as exc:
        raise _translate(exc.errors()[0], origins) from None

    kb_file = origin_of(origins, ("kb", "path"))
    kb_path = _kb_folder(root, config.kb.path, kb_file)
    if not kb_path.is_dir():
        what = "is not a folder" if kb_path.exists() else "does not exist"
        raise ConfigError(
            f"the knowledge-base folder {kb_path} {what}",
            file=kb_file,
            key="kb.path",
            fix="create it or set [kb] path to your docs folder",
        )
    settings = Settings(
        root=root,
        kb_path=kb_path,
        config=config,
        env=load_env(root, environ),
        sources=tuple(sources),
        origins=origins,
        tracked_files=frozenset(
            {CONFIG_FILE, *repo.tracked(root, [LOCAL_CONFIG_FILE] if local is not None else [])}
        ),
    )
    return settings if as_written else trust.apply(settings)


def check_option(option: str, dotted: str, value: object) -> None:
    """A command-line value that stands in for a config key (`--port` for server.http.port),
    checked by that key's own rule in the model: the same limits, the same one-line message."""
    *parents, name = dotted.split(".")
    section = _section_at(tuple(parents))
    assert section is not None and name in section.model_fields, dotted
    info = section.model_fields[name]
    try:
        rule: Any = Annotated[info.annotation, *info.metadata]  # the key's type and its limits
        TypeAdapter(rule).validate_python(value)
    except ValidationError as exc:
        error = {**exc.errors()[0], "loc": (*parents, name)}
        raise _translate(error, {dotted: Path(option)}) from None


def _kb_folder(root: Path, value: str, file: str) -> Path:
    try:
        folder = Path(value).expanduser()
        return (folder if folder.is_absolute() else root / folder).resolve()
    except (RuntimeError, ValueError, OSError) as exc:  # ~nosuchuser, a NUL byte, a symlink loop
        raise ConfigError(
            f"{value!r} is not a usable folder path ({exc})",
            file=file,
            key="kb.path",
            fix="set [kb] path to your docs folder, relative to kbkit.toml",
        ) from None


def read_env_file(root: Path) -> dict[str, str]:
    """The variables `.env.local` sets (none when there is no such file)."""
    text = read_text_file(root / ENV_FILE)
    if text is None:
        return {}
    # Literally, as agents' env files are read: a password holding `${` reaches the server as written.
    values = dotenv_values(stream=io.StringIO(text.removeprefix("\ufeff")), interpolate=False)
    return {name: value for name, value in values.items() if value is not None}


def load_env(root: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`.env.local` under the real environment: a variable set in the process wins."""
    return {**read_env_file(root), **(os.environ if environ is None else environ)}


def _read_toml(path: Path) -> dict[str, Any] | None:
    fix = "or remove it and run `kbkit init` for a starter" if path.name == CONFIG_FILE else None
    text = read_text_file(path, fix=fix)
    if text is None:
        return None
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"not valid TOML ({exc})", file=path.name, fix="fix the syntax at that line"
        ) from None


def _overlay(
    into: dict[str, Any], data: dict[str, Any], path: Path, origins: dict[str, Path], at: tuple[str, ...]
) -> None:
    """Copy `data` over `into` table by table, recording which file set each key and table."""
    for name, value in data.items():
        here = (*at, name)
        origins[".".join(here)] = path
        if isinstance(value, dict):
            if not isinstance(into.get(name), dict):
                into[name] = {}
            _overlay(into[name], value, path, origins, here)
        else:
            into[name] = value


_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "tuple_type": "a list of strings",
}


def _translate(error: Mapping[str, Any], origins: Mapping[str, Path]) -> ConfigError:
    """One pydantic error as one line: the file, the key, what is wrong and an example of right."""
    loc = tuple(str(part) for part in error["loc"] if not isinstance(part, int))
    item = any(isinstance(part, int) for part in error["loc"])
    kind, value = error["type"], error["input"]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, Invalid) and cause.key:
        loc = (*loc, cause.key)
    file = origin_of(origins, loc)
    dotted = ".".join(loc)
    parent = _section_at(loc[:-1])
    if kind == "extra_forbidden":
        return _unknown(loc, value, parent, file)
    if kind == "model_type":
        return ConfigError(
            f"[{dotted}] must be a table, got {_shown(value)}",
            file=file,
            fix=f"write [{dotted}] on its own line, its keys below it",
        )
    example = _example(parent, loc[-1])
    if kind in _TYPE_NAMES:
        what = "a list of strings" if item else _TYPE_NAMES[kind]
        message = f"must be {what}, got {_shown(value)}" + (" in the list" if item else "")
        return ConfigError(message, file=file, key=dotted, fix=f"for example: {example}")
    if kind in ("greater_than_equal", "less_than_equal"):
        info = parent.model_fields[loc[-1]] if parent else None
        low, high = _bounds(info)
        return ConfigError(f"{value} is out of range ({low} to {high})", file=file, key=dotted)
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "")
        options = [part.strip(" '") for part in expected.replace(" or ", ",").split(",")]
        hint = nearest(value, options) if isinstance(value, str) else ""
        return ConfigError(f"{_shown(value)} is not allowed{hint}; use {expected}", file=file, key=dotted)
    message = str(cause) if cause is not None else error["msg"]
    return ConfigError(message, file=file, key=dotted)


def _unknown(loc: tuple[str, ...], value: Any, parent: type[Section] | None, file: str) -> ConfigError:
    name = loc[-1]
    tables = [dotted for dotted, _ in sections()]
    if len(loc) == 1 and not isinstance(value, dict):
        return ConfigError(
            f"{name!r} is outside any section",
            file=file,
            key=name,
            fix="put keys under a section such as [kb]; sections: " + ", ".join(f"[{t}]" for t in tables),
        )
    if isinstance(value, dict) and parent is not TeamServer:
        dotted = ".".join(loc)
        return ConfigError(
            f"unknown section [{dotted}]{nearest(dotted, tables)}",
            file=file,
            fix="valid sections: " + ", ".join(f"[{t}]" for t in tables),
        )
    valid = [key for key, _ in keys(parent)] if parent else []
    return ConfigError(
        f"unknown key {name!r}{nearest(name, valid)}",
        file=file,
        key=".".join(loc),
        fix=f"valid keys in [{'.'.join(loc[:-1])}]: {', '.join(valid)}",
    )


def _section_at(loc: tuple[str, ...]) -> type[Section] | None:
    return section_at(loc)


def _example(section: type[Section] | None, name: str) -> str:
    from kbkit.config.docs import toml_value  # tomlkit, only when there is an error to explain

    info = section.model_fields.get(name) if section else None
    if info is None:
        return f"{name} = ..."
    return f"{name} = {toml_value(info.examples[0] if info.examples else info.default)}"


def _bounds(info: Any) -> tuple[Any, Any]:
    low = high = None
    for rule in getattr(info, "metadata", []):
        low = getattr(rule, "ge", low)
        high = getattr(rule, "le", high)
    return low, high


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"
