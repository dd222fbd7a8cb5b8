"""Real projects on disk: a kbkit.toml and a docs folder holding the given files."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from kbkit.errors import KbkitError

SAMPLE_DOCS: dict[str, str | bytes] = {
    "guide/getting-started.md": "---\ntitle: Getting started\n---\n# Getting started\n\n"
    "Install kbkit, then run the indexer over the docs folder.\n\n## Troubleshooting\n\nRead the boot lines.\n",
    "adr/0001-guards.md": "# One guard sequence\n\nEvery read of a document goes through the guard sequence.\n",
    "runbooks/deploy.rst": "Deploying\n=========\n\nRoll out the service with the blue green strategy.\n",
    "notes.txt": "Plain text notes about SQLite write-ahead logging (WAL).\n",
}


def write_files(base: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def make_project(
    root: Path,
    files: Mapping[str, str | bytes] | None = None,
    config: str = '[kb]\npath = "docs"\n',
    *,
    trusted: bool = True,
) -> Path:
    """A project folder with kbkit.toml and a docs/ folder holding `files`. `trusted`: the member
    has reviewed this kbkit.toml and run `kbkit trust` (in this process's state folder), as anyone
    using the project has; tests of the trust rule itself pass False."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "kbkit.toml").write_text(config, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    write_files(root / "docs", SAMPLE_DOCS if files is None else files)
    if trusted:
        from tests.helpers.trust import trust_project

        with contextlib.suppress(KbkitError):  # a config the test means to be refused says so itself
            trust_project(root)
    return root
