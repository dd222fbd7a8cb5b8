"""What a documentation site's own config says about its folders (MkDocs' `mkdocs.yml`).

Two facts are read: where the pages are (`docs_dir`, which `kbkit init` offers as the kb folder)
and where the theme's overrides are (`theme: custom_dir:`, which the indexer does not index: its
files are the templates and partials pages are rendered with, not pages, even the ones without
a template statement, such as a partial of sponsor links). The file is read with a pattern, not
a YAML loader: MkDocs files carry `!!python/name:` tags that a safe loader refuses.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from kbkit.errors import KbkitError
from kbkit.fsutil import read_text_file

MKDOCS_FILES = ("mkdocs.yml", "mkdocs.yaml")
MAX_CONFIG_BYTES = 256 * 1024
"""A site config larger than this is not read (FastAPI's is 9 KB)."""

_VALUE = r"""\s*['"]?([^'"#\n]+?)['"]?\s*(?:#.*)?$"""
DOCS_DIR = re.compile(r"^docs_dir:" + _VALUE, re.MULTILINE)
_CUSTOM_DIR = re.compile(r"^[ \t]+custom_dir:" + _VALUE, re.MULTILINE)


def read_config(path: Path) -> str | None:
    """The text of a site config, or None when it is missing, too large or not text."""
    try:
        return read_text_file(path, limit=MAX_CONFIG_BYTES)
    except (KbkitError, OSError):
        return None


def theme_folder(config_text: str, config_dir: str) -> str | None:
    """The theme's folder a config names (`theme: custom_dir: overrides`), as a path relative to
    the kb root like `config_dir` (the folder the config is in, "" for the root); None when it
    names none or one that is not below `config_dir`."""
    found = _CUSTOM_DIR.search(config_text)
    if found is None:
        return None
    joined = posixpath.normpath(posixpath.join(config_dir, found.group(1).strip()))
    below = joined.startswith(config_dir + "/") if config_dir else not joined.startswith(("..", "/"))
    return joined if below and joined not in (".", config_dir) else None
