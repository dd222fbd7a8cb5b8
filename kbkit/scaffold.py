"""`kbkit init`: a commented starter kbkit.toml, the kb folder and the managed .gitignore block."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kbkit.config import CONFIG_FILE, load_settings, trust
from kbkit.config.docs import starter_config
from kbkit.errors import ConfigError
from kbkit.fsutil import atomic_write_text
from kbkit.kb.sites import Site, find_sites, markup_of
from kbkit.sync.gitignore import managed_entries, update_gitignore

NEXT_STEPS = (
    "put your documents in the kb folder",
    "kbkit index    (build the search index)",
    "kbkit sync     (write every agent's MCP config)",
    "kbkit doctor   (check it all)",
    "restart your agents so they load the kb server",
)
"""What `kbkit init` tells the user to do next: the real path from here to an agent using the kb."""

__all__ = ["NEXT_STEPS", "InitResult", "init_project", "starter_config"]


DEFAULT_KB_PATH = "docs"
GENERATOR_NAMES = {
    "hugo": "Hugo",
    "docusaurus": "Docusaurus",
    "vitepress": "VitePress",
    "mdbook": "mdBook",
    "sphinx": "Sphinx",
    "mkdocs": "MkDocs",
}


@dataclass(frozen=True)
class Suggestion:
    """A folder a site generator's config names as its pages' (kb/sites.py): offered when a kb
    folder was given or the default one holds documents, taken when neither."""

    folder: str
    """Relative to the project root, as --kb-path takes it."""
    why: str
    documents: int


@dataclass
class InitResult:
    config_written: bool
    kb_folder_created: bool
    gitignore_changed: bool
    config_path: Path
    kb_folder: Path
    config_existed: bool = False
    """kbkit.toml was there before: with --force and the same text it is "unchanged", not "kept"."""
    documents: int = 0
    """Files in the kb folder that `kbkit index` would index."""
    suggestion: Suggestion | None = None
    outside: bool = False
    """The kb folder is outside the project folder (an existing one: init creates none there)."""
    found: Suggestion | None = None
    """The site's content folder init took as the kb folder (no --kb-path, no documents in docs/)."""


def init_project(root: Path, *, kb_path: str | None = None, force: bool = False) -> InitResult:
    """Write the starter kbkit.toml (unless one exists, or with `force`), the kb folder and .gitignore.
    Without `kb_path`: `docs`, unless it holds no documents and a site generator's config names
    another folder that does (Hugo's `content/`, mdBook's `src/`, ...): that one is taken."""
    root = root.resolve()
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--root {root} is not a folder", fix="pass the project folder")
    config = root / CONFIG_FILE
    existed = os.path.lexists(config)
    found = None
    if kb_path is None:
        default = (root / DEFAULT_KB_PATH).resolve()
        if (force or not existed) and not count_documents(default, ()):
            found = suggest_kb_folder(root, default, 0, ())
        kb_path = found.folder if found is not None else DEFAULT_KB_PATH
    kb_folder = (root / kb_path).resolve()
    if (force or not existed) and not kb_folder.is_relative_to(root) and not kb_folder.is_dir():
        raise ConfigError(
            f"--kb-path {kb_path} is outside the project folder {root}, and kbkit init creates no "
            "folder there",
            fix="give a folder inside the project, or create the shared folder first and rerun",
        )
    written = False
    if force or not existed:
        written = atomic_write_text(config, starter_config(kb_path))
    created = written and not kb_folder.exists()
    if created:
        kb_folder.mkdir(parents=True)
    if written and not kb_folder.is_relative_to(root):  # chosen on this member's own command line
        as_written = trust.config_parts(load_settings(root, as_written=True))
        trust.allow(root, [part for part in as_written if part.key == "kb.path"])
    settings = load_settings(root)  # the file kept or written must load: say so now, not at first use
    changed = update_gitignore(root, managed_entries(settings))
    documents = count_documents(settings.kb_path, settings.exclude_dirs)
    return InitResult(
        config_written=written,
        kb_folder_created=created,
        gitignore_changed=changed,
        config_path=config,
        kb_folder=settings.kb_path,
        config_existed=existed,
        documents=documents,
        suggestion=None
        if found
        else suggest_kb_folder(root, settings.kb_path, documents, settings.exclude_dirs),
        outside=not settings.kb_path.is_relative_to(root),
        found=found,
    )


def count_documents(folder: Path, exclude_dirs: tuple[str, ...]) -> int:
    """How many files under `folder` `kbkit index` would index (registered types, ignore rules kept)."""
    from kbkit.kb.formats.registry import Registry
    from kbkit.kb.ignore import IgnoreRules
    from kbkit.kb.indexer import walk

    if not folder.is_dir():
        return 0
    try:
        rules = IgnoreRules.load(folder, exclude_dirs)
    except ConfigError:
        rules = IgnoreRules(exclude_dirs)
    return sum(1 for _ in walk(folder, Registry(markup=markup_of(folder)), rules))


def suggest_kb_folder(
    root: Path, chosen: Path, documents: int, exclude_dirs: tuple[str, ...]
) -> Suggestion | None:
    """The folder a documentation site generator of the project builds its pages from (Hugo's
    `content/`, Docusaurus' `docs/`, mdBook's `src/`, Sphinx's conf.py folder, MkDocs' `docs_dir`),
    when it is not the one chosen: the one with the most documents."""
    best: Suggestion | None = None
    for site in find_sites(root):
        folder = site.content.resolve()
        if folder == chosen:
            return None  # the chosen folder is one a documentation tool names: nothing to offer
        if not folder.is_relative_to(root) or not folder.is_dir():
            continue
        count = count_documents(folder, exclude_dirs)
        if count and (best is None or count > best.documents):
            best = Suggestion(str(folder.relative_to(root)), _why(site, root), count)
    return best


def _why(site: Site, root: Path) -> str:
    """Where the folder comes from: `docs_dir of docs/en/mkdocs.yml`, `Hugo's pages, by hugo.toml`."""
    where = site.config.relative_to(root)
    if site.generator == "mkdocs":
        return f"docs_dir of {where}" if site.named else f"MkDocs' default docs_dir beside {where}"
    return f"{GENERATOR_NAMES[site.generator]}'s pages, by {where}"
