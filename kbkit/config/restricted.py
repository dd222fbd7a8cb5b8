"""Restricted folders, `[restricted.<name>]`: parts of the kb only some principals of the shared
server may read (docs/adr/0070).

    [restricted.security]
    paths = ["runbooks/security/", "incidents/"]
    tokens = ["alice", "ci-bot"]           # personal token names (`kbkit token`)
    subjects = ["auth0|5f3c"]              # OAuth subjects
    claims = { groups = ["security"] }     # OAuth claim values: any one of them grants

A path names a folder (everything under it) or one file, relative to the kb folder. Paths are
compared without regard to case or Unicode normalization, so a variant spelling (`Security/`,
a decomposed `é`) is restricted as well: a file system that treats them as the same file must not
serve it to someone without the grant. No two restricted folders may overlap, so every document
belongs to at most one of them and its readers are that folder's.

Everything here is pure: the kb layer asks `folder_of` while indexing, the server's guard asks
`readable` for each request.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from pydantic import StrictStr, model_validator

from kbkit.config.fields import Invalid, Names, Section, key

FOLDER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
"""A restricted folder's name: it names an index file and appears in audit lines."""
PUBLIC = ""
"""The partition of everything no restricted folder covers: every principal reads it."""


def canonical(path: str) -> str:
    """`path` as restricted folders compare it: NFC, case-folded, no leading or trailing `/`."""
    return unicodedata.normalize("NFC", path).casefold().strip("/")


def covers(entry: str, path: str) -> bool:
    """Whether the restricted path `entry` (canonical) holds `path` (canonical): the same file or
    folder, or anything under it."""
    return path == entry or path.startswith(entry + "/")


class Restricted(Section):
    """One restricted folder of the kb: who may read it over `kbkit serve --http`."""

    opt_in: ClassVar[bool] = True

    paths: Names = key((), "folders (or files) of the kb only these readers see", example=("security/",))
    tokens: Names = key((), "personal token names that may read them", example=("alice",))
    subjects: Names = key((), "OAuth subjects (sub) that may read them")
    claims: dict[StrictStr, Names] = key(
        {}, "OAuth claims and values: a token with any one of them may read them", example={"groups": ["sec"]}
    )

    @model_validator(mode="after")
    def _paths(self) -> Restricted:
        if not self.paths:
            raise Invalid("lists no paths; name the folders this restriction covers", key="paths")
        for path in self.paths:
            parts = path.strip("/").split("/")
            if not path.strip("/") or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise Invalid(
                    f"{path!r} is not a path relative to the kb folder (no leading '/', '.' or '..')",
                    key="paths",
                )
        return self


def check_restricted(tables: dict[str, Restricted]) -> dict[str, Restricted]:
    """Names an index file may carry, and no path inside another folder's: a document's readers
    are always one folder's."""
    seen: list[tuple[str, str]] = []
    for name, table in tables.items():
        if not FOLDER_NAME.fullmatch(name):
            raise Invalid(
                f"{name!r} is not a restricted folder name; use 1-40 lowercase letters, digits, '_' or '-'",
                key=name,
            )
        for path in map(canonical, table.paths):
            for other_name, other in seen:
                if other_name != name and (covers(other, path) or covers(path, other)):
                    raise Invalid(
                        f"path {path!r} overlaps [restricted.{other_name}]'s {other!r}; a document "
                        "belongs to one restricted folder: move the path into one of them",
                        key=name,
                    )
            seen.append((name, path))
    return tables


@dataclass(frozen=True)
class Reader:
    """What the guard knows of a principal: its kind, name, OAuth subject and claims."""

    kind: str
    """shared, token, oauth or anonymous."""
    name: str
    subject: str = ""
    claims: Mapping[str, tuple[str, ...]] | None = None
    paths: tuple[str, ...] = ()
    """A token narrowed to these kb paths reads nothing else (none: no narrowing)."""


@dataclass(frozen=True)
class Folders:
    """The restricted folders of a configuration, ready to answer per path and per principal."""

    tables: Mapping[str, Restricted]

    @classmethod
    def of(cls, tables: Mapping[str, Restricted]) -> Folders:
        return cls(dict(tables))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.tables)

    def folder_of(self, path: str) -> str:
        """The restricted folder holding `path` (a kb path), or PUBLIC."""
        wanted = canonical(path)
        for name, table in self.tables.items():
            if any(covers(canonical(entry), wanted) for entry in table.paths):
                return name
        return PUBLIC

    def withheld_prefix(self, path: str) -> str | None:
        """The shortest leading part of `path` a restricted folder covers (what a reply says does not
        exist, as it would if the folder were not there), or None when `path` is not restricted."""
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            head = "/".join(parts[:end])
            if self.folder_of(head) != PUBLIC:
                return head
        return None

    def readable(self, reader: Reader | None) -> frozenset[str]:
        """The partitions `reader` may read: PUBLIC and the folders granted to it. None (stdio: the
        member's own checkout) reads everything."""
        if reader is None:
            return frozenset((PUBLIC, *self.tables))
        return frozenset((PUBLIC, *(name for name, table in self.tables.items() if _grants(table, reader))))

    def readers(self, name: str) -> list[str]:
        """Who may read folder `name`, as `kbkit doctor` lists them."""
        table = self.tables[name]
        found = [f"token {t}" for t in table.tokens] + [f"subject {s}" for s in table.subjects]
        found += [f"{claim} = {value}" for claim, values in table.claims.items() for value in values]
        return found


def _grants(table: Restricted, reader: Reader) -> bool:
    if reader.kind == "token":
        return reader.name in table.tokens
    if reader.kind != "oauth":
        return False  # the shared token and anonymous callers read what everybody reads
    if reader.subject and reader.subject in table.subjects:
        return True
    claims = reader.claims or {}
    return any(value in claims.get(claim, ()) for claim, values in table.claims.items() for value in values)


def narrows(now: Mapping[str, Mapping[str, object]], before: Mapping[str, Mapping[str, object]]) -> bool:
    """Whether the restricted folders `now` (as trust records them) allow no one anything `before`
    did not: every folder still there, covering at least its paths, readers no more."""
    for name, old in before.items():
        new = now.get(name)
        if new is None or not _set(old, "paths") <= _set(new, "paths"):
            return False
        for who in ("tokens", "subjects"):
            if not _set(new, who) <= _set(old, who):
                return False
        old_claims, new_claims = _claims(old), _claims(new)
        if any(not set(values) <= set(old_claims.get(claim, ())) for claim, values in new_claims.items()):
            return False
    return True


def narrowest(
    now: Mapping[str, Restricted], before: Mapping[str, Mapping[str, object]]
) -> dict[str, Restricted]:
    """While a widening waits for trust: every folder trusted before, read only by whom both the
    trusted and the current tables allow, and each new folder that overlaps none of them as written."""
    merged: dict[str, Restricted] = {}
    trusted = {name: _table(values) for name, values in before.items()}
    for name, table in trusted.items():
        overlapping = [t for t in now.values() if _overlap(t, table)]
        for other in overlapping:
            table = _intersect(table, other)
        merged[name] = table
    for name, table in now.items():
        if name not in merged and not any(_overlap(table, t) for t in trusted.values()):
            merged[name] = table
    return merged


def _table(values: Mapping[str, object]) -> Restricted:
    return Restricted.model_validate({k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def _overlap(a: Restricted, b: Restricted) -> bool:
    return any(
        covers(canonical(x), canonical(y)) or covers(canonical(y), canonical(x))
        for x in a.paths
        for y in b.paths
    )


def _intersect(a: Restricted, b: Restricted) -> Restricted:
    claims = {c: tuple(v for v in vs if v in b.claims.get(c, ())) for c, vs in a.claims.items()}
    return a.model_copy(
        update={
            "tokens": tuple(t for t in a.tokens if t in b.tokens),
            "subjects": tuple(s for s in a.subjects if s in b.subjects),
            "claims": {c: vs for c, vs in claims.items() if vs},
        }
    )


def _set(values: Mapping[str, object], name: str) -> set[str]:
    found = values.get(name) or []
    return {canonical(str(v)) for v in found} if name == "paths" else {str(v) for v in found}  # type: ignore[attr-defined]


def _claims(values: Mapping[str, object]) -> dict[str, Iterable[str]]:
    found = values.get("claims") or {}
    return {str(k): list(v) for k, v in found.items()} if isinstance(found, Mapping) else {}
