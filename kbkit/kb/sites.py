"""What a documentation site's own config says: which generator builds it (Hugo, Docusaurus,
VitePress, mdBook, Sphinx, MkDocs), so its pages are read in that generator's syntax
(formats/markup.py), and where its folders are.

Where the pages are (`docs_dir`, Hugo's `content/`, mdBook's `src/`, ...: what `kbkit init`
offers as the kb folder), and which folders hold templates, not pages (MkDocs' `theme:
custom_dir:`, Hugo's `layouts/`, which the indexer does not index: their files are what pages are
rendered with, even the ones without a template statement, such as a partial of sponsor links).
Configs are read with patterns, never loaded or run: MkDocs files carry `!!python/name:` tags that
a safe loader refuses, and conf.py and docusaurus.config.js are programs (docs/adr/0060, 0064).
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from kbkit.errors import KbkitError
from kbkit.fsutil import read_text_file
from kbkit.kb.formats.markup import DOCUSAURUS, HUGO, MDBOOK, MKDOCS, PLAIN, SPHINX, VITEPRESS, Markup

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


def template_folders(folder: Path, names: set[str], rel_dir: str) -> list[str]:
    """The folders beside a site's config in `folder` (whose entries are `names`) that hold its
    templates, not pages, relative to the kb root like `rel_dir`: MkDocs' `custom_dir`, Hugo's
    HUGO_TEMPLATE_FOLDERS. Only a folder holding a config's name is looked at closer."""
    found: list[str] = []
    for name in MKDOCS_FILES:
        if name in names and not (folder / name).is_symlink():
            text = read_config(folder / name)
            if text is not None and (theme := theme_folder(text, rel_dir)) is not None:
                found.append(theme)
    site = site_in(folder, names) if names.intersection(HUGO_FILES + HUGO_LEGACY_FILES) else None
    if site is not None and site.generator == HUGO:
        prefix = f"{rel_dir}/" if rel_dir else ""
        found += [prefix + name for name in HUGO_TEMPLATE_FOLDERS if name in names]
    return found


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


HUGO_FILES = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json")
HUGO_LEGACY_FILES = ("config.toml", "config.yaml", "config.yml")
"""Hugo's older config names: a site's only when a Hugo folder (`content/`, `layouts/`) is beside."""
DOCUSAURUS_FILES = tuple(f"docusaurus.config.{ext}" for ext in ("js", "ts", "mjs", "cjs", "mts"))
VITEPRESS_FILES = tuple(f".vitepress/config.{ext}" for ext in ("js", "ts", "mjs", "mts", "cjs"))
MDBOOK_FILES = ("book.toml",)
SPHINX_FILES = ("conf.py",)
_SPHINX_MARKS = ("extensions", "html_theme", "source_suffix", "master_doc", "root_doc")
"""A `conf.py` naming one of these is Sphinx's (a project may have another conf.py)."""
_HUGO_FOLDERS = ("content", "layouts", "archetypes")
HUGO_TEMPLATE_FOLDERS = ("layouts", "archetypes", "themes")
"""Beside a Hugo config: its templates, page blueprints and themes, never pages (as MkDocs'
custom_dir, docs/adr/0064)."""

_SOURCE_SUFFIX = re.compile(r"^source_suffix\s*=\s*([\[{(][^\]})]*[\]})]|[^\n]*)", re.MULTILINE)
_SUFFIX_ITEM = re.compile(r"""['"]\.(\w+)['"]\s*(?::\s*['"](\w+)['"])?""")
_CONTENT_DIR = re.compile(r"""^\s*contentDir\s*[:=]\s*['"]?([^'"\n#]+?)['"]?\s*$""", re.MULTILINE)
_MDBOOK_SRC = re.compile(r"""^\s*src\s*=\s*['"]([^'"\n]+)['"]""", re.MULTILINE)


@dataclass(frozen=True)
class Site:
    """A documentation site found by its generator's config."""

    generator: str
    """One of markup.GENERATORS."""
    config: Path
    content: Path
    """The folder its pages are built from: Hugo's `content/`, Docusaurus' `docs/`, mdBook's
    `src/`, Sphinx's conf.py folder, MkDocs' `docs_dir`, VitePress' folder holding `.vitepress/`."""
    named: bool = False
    """Whether the config names `content` (`docs_dir: docs`), rather than it being the default."""
    rst_extensions: frozenset[str] = frozenset()
    """Sphinx: the extensions `source_suffix` maps to reStructuredText besides `rst`."""

    @property
    def markup(self) -> Markup:
        return Markup(self.generator, self.rst_extensions)


def site_in(folder: Path, present: set[str] | None = None) -> Site | None:
    """The site whose config is directly in `folder` (whose entries' names are `present`, when
    the caller listed it), or None. No file is opened in a folder holding no config's name."""
    if present is None:
        try:
            present = {entry.name for entry in os.scandir(folder)}
        except OSError:
            return None
    for names, reader in _READERS:
        for name in names:
            if name.split("/", 1)[0] not in present:
                continue
            path = folder / name
            if path.is_file() and not path.is_symlink():
                found = reader(path, read_config(path) or "")
                if found is not None:
                    return found
    return None


def _hugo(path: Path, text: str) -> Site | None:
    folder = path.parent
    if path.name in HUGO_LEGACY_FILES and not any((folder / name).is_dir() for name in _HUGO_FOLDERS):
        return None
    named = _CONTENT_DIR.search(text)
    return Site(HUGO, path, _below(folder, named.group(1).strip() if named else "content"), bool(named))


def _docusaurus(path: Path, text: str) -> Site | None:
    return Site(DOCUSAURUS, path, path.parent / "docs")


def _vitepress(path: Path, text: str) -> Site | None:
    return Site(VITEPRESS, path, path.parent.parent)


def _mdbook(path: Path, text: str) -> Site | None:
    named = _MDBOOK_SRC.search(text)
    return Site(MDBOOK, path, _below(path.parent, named.group(1).strip() if named else "src"), bool(named))


def _sphinx(path: Path, text: str) -> Site | None:
    if not any(mark in text for mark in _SPHINX_MARKS):
        return None
    return Site(SPHINX, path, path.parent, rst_extensions=frozenset(rst_suffixes(text)))


def _mkdocs(path: Path, text: str) -> Site | None:
    named = DOCS_DIR.search(text)
    return Site(MKDOCS, path, _below(path.parent, named.group(1).strip() if named else "docs"), bool(named))


def rst_suffixes(conf_py: str) -> list[str]:
    """The extensions besides `rst` a Sphinx conf.py's `source_suffix` reads as reStructuredText:
    `".txt"`, `[".rst", ".txt"]` or `{".txt": "restructuredtext", ".md": "markdown"}`."""
    found = _SOURCE_SUFFIX.search(conf_py)
    if found is None:
        return []
    items = _SUFFIX_ITEM.findall(found.group(1))
    return sorted(
        {ext.lower() for ext, kind in items if kind in ("", "restructuredtext") and ext.lower() != "rst"}
    )


def _below(folder: Path, relative: str) -> Path:
    """`relative` under `folder`, or `folder` itself when it would leave it."""
    joined = posixpath.normpath(relative)
    return folder if joined.startswith(("..", "/")) or joined == "." else folder / joined


_READERS = (
    (HUGO_FILES + HUGO_LEGACY_FILES, _hugo),
    (DOCUSAURUS_FILES, _docusaurus),
    (VITEPRESS_FILES, _vitepress),
    (MDBOOK_FILES, _mdbook),
    (MKDOCS_FILES, _mkdocs),
    (SPHINX_FILES, _sphinx),
)


SITE_DEPTH = 2
"""How far above and below the kb folder a site's config is looked for: Hugo's config sits above
`content/`, mdBook's above `src/`, Sphinx's conf.py often in `docs/` or `docs/source/`."""


def find_sites(root: Path, depth: int = SITE_DEPTH + 1) -> list[Site]:
    """Sites whose config is in `root` or at most `depth` folders down (hidden folders,
    `node_modules` and a site's own template folders skipped), nearest first. One listing of each
    folder, no file's metadata read: it runs each time a kb is opened."""
    found: list[Site] = []
    folders = [root]
    skipped = ("node_modules", *HUGO_TEMPLATE_FOLDERS)
    for level in range(depth + 1):
        children: list[Path] = []
        for folder in folders:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            site = site_in(folder, {entry.name for entry in entries})
            if site is not None:
                found.append(site)
            if level < depth:
                children += sorted(
                    Path(entry.path)
                    for entry in entries
                    if entry.is_dir(follow_symlinks=False)
                    and not entry.name.startswith((".", "_"))
                    and entry.name not in skipped
                )
        folders = children
    return found


def site_of(kb_root: Path) -> Site | None:
    """The site the kb folder belongs to: a config in it or up to SITE_DEPTH folders above it
    (whose content folder holds the kb folder), else the nearest below it."""
    kb_root = kb_root.resolve()
    for folder in (kb_root, *list(kb_root.parents)[:SITE_DEPTH]):
        site = site_in(folder)
        if site is not None and (folder == kb_root or kb_root.is_relative_to(site.content.resolve())):
            return site
    below = find_sites(kb_root, SITE_DEPTH) if kb_root.is_dir() else []
    return below[0] if below else None


def markup_of(kb_root: Path) -> Markup:
    """The syntax the kb's pages are written in: its site's generator's, else plain (PLAIN)."""
    site = site_of(kb_root)
    return PLAIN if site is None else site.markup


SUMMARY = "SUMMARY.md"
_CHAPTER = re.compile(r"\]\(\s*<?([^()\s<>#]+?\.md)(?:#[^)\s]*)?\s*>?\)")
"""A chapter of an mdBook's SUMMARY.md: `- [Title](path/to/chapter.md)` (a draft, `[Title]()`, has none)."""


@dataclass(frozen=True)
class Book:
    """An mdBook under the kb folder: the chapters its SUMMARY.md lists are its pages."""

    src: str
    """Its source folder relative to the kb root ("" for the kb root itself)."""
    chapters: frozenset[str]
    """The listed chapters' paths relative to the kb root."""

    def lists(self, path: str) -> bool:
        """Whether the Markdown file at `path` (relative to the kb root) is a page: outside the
        book's folder, its SUMMARY.md, or a chapter it lists. mdBook builds no other: the rest
        are pieces its pages `{{#include}}`, or drafts left out of the book."""
        inside = not self.src or path.startswith(self.src + "/")
        return (
            not inside
            or not path.endswith(".md")
            or path in self.chapters
            or path.rsplit("/", 1)[-1] == SUMMARY
        )


def book_of(kb_root: Path) -> Book | None:
    """The mdBook the kb folder holds or is, when its SUMMARY.md lists at least one chapter."""
    site = site_of(kb_root)
    if site is None or site.generator != MDBOOK:
        return None
    root, src = kb_root.resolve(), site.content.resolve()
    if not src.is_relative_to(root):
        return None
    text = read_config(src / SUMMARY)
    if not text:
        return None
    chapters = set()
    for target in _CHAPTER.findall(text):
        found = Path(os.path.normpath(src / unquote(target)))
        if found.is_relative_to(root):
            chapters.add(found.relative_to(root).as_posix())
    prefix = src.relative_to(root).as_posix()
    return Book("" if prefix == "." else prefix, frozenset(chapters)) if chapters else None
