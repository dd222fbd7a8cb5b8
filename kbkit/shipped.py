"""The files kbkit ships beside its code and reads at run time: the client templates, the skills
this project ships, and the `kbkit doctor --json` schema.

The repository keeps them at its top level (`templates/`, `skill-sources/`, `docs/doctor.schema.json`);
a built wheel carries them inside the package, under `kbkit/_data/` (pyproject.toml's
force-include, checked by tests/e2e/test_packaging.py). An installed kbkit reads the packaged copy; run
from a checkout (an editable install imports the checkout's kbkit/, which has no `_data/`), it reads
the repository's.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

IN_REPOSITORY: dict[str, str] = {
    "templates": "templates",
    "skills": "skill-sources",
    "doctor.schema.json": "docs/doctor.schema.json",
}
"""Each shipped name (its place under kbkit/_data/ in the wheel) and where the repository keeps it."""


def shipped(name: str) -> Path:
    """The installed copy of a shipped file or folder, else the checkout's.

    kbkit runs from a folder on disk (never from a zip), so the package resource is a real path.
    """
    packaged = Path(str(files("kbkit"))) / "_data" / name
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parent.parent / IN_REPOSITORY[name]
