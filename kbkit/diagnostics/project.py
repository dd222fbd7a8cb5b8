"""The project's own files: kbkit.toml, the state folder and the index in it."""

from __future__ import annotations

import os
import tempfile

from kbkit.diagnostics.base import Context, Finding, kb_folder, ok
from kbkit.errors import KbkitError
from kbkit.fsutil import private_folder


def check_config(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return [
            Finding(
                "config",
                "fail",
                ctx.config_error or "kbkit.toml could not be read",
                "fix what the message names (kbkit init writes a starter kbkit.toml)",
            )
        ]
    sources = ", ".join(p.name for p in ctx.settings.sources)
    return ok("config", f"{sources} valid; kb folder {kb_folder(ctx.settings)}")


def check_state_dir(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    state = ctx.settings.state_dir
    try:
        private_folder(state)
        with tempfile.NamedTemporaryFile(dir=state, prefix=".doctor-"):
            pass
    except OSError as exc:
        return [
            Finding(
                "state",
                "fail",
                f"{state} is not writable ({exc.strerror or exc})",
                f"make {state} a folder the user running kbkit can write (the index lives there)",
            )
        ]
    return ok("state", f"{state} is writable")


def check_index(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    from kbkit.kb.formats.registry import Registry
    from kbkit.kb.ignore import IgnoreRules
    from kbkit.kb.indexer import count_stale
    from kbkit.kb.sites import markup_of
    from kbkit.kb.store import Store

    settings = ctx.settings
    if not os.path.lexists(settings.index_path):
        return [
            Finding("index", "warn", "no index yet", "run kbkit index (kbkit serve also builds it at start)")
        ]
    store = Store(settings.index_path)
    problem = store.problem() or store.fts_problem()  # a look: the doctor repairs nothing
    if problem == "older":
        return [
            Finding(
                "index",
                "warn",
                "the index was made by an older kbkit",
                "run kbkit index (or start kbkit serve): it upgrades the index in place",
            )
        ]
    if problem and problem != "new":
        fix = "run kbkit index: it rebuilds the index from the documents"
        if "symbolic link" in problem:
            fix = f"remove the link ({settings.index_path}), then run kbkit index"
        return [Finding("index", "fail", problem, fix)]
    try:
        rules = IgnoreRules.load(settings.kb_path, settings.exclude_dirs)
        stale = count_stale(
            store, settings.kb_path, Registry(settings.parsers, markup_of(settings.kb_path)), rules
        )
        total = store.count_documents()
        store.close()
    except KbkitError as exc:
        return [Finding("index", "fail", str(exc), "run kbkit index")]
    if stale:
        return [
            Finding(
                "index",
                "warn",
                f"{total} documents indexed, {stale} stale (changed since indexing)",
                "run kbkit index, or keep kbkit serve running: it watches and reindexes",
            )
        ]
    return ok("index", f"{total} documents indexed, none stale")
