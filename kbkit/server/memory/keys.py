"""The memory service's key: read afresh at every connection attempt, stripped and checked, and
never shown; and the environment a stdio upstream gets (the key, the named variables, a safe base).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kbkit.config import ENV_FILE, MemorySettings, load_env, read_env_file
from kbkit.server.team import LOCALE_VARIABLES

__all__ = [
    "LOCALE_VARIABLES",
    "Credential",
    "key_problem",
    "not_configured",
    "read_credential",
    "upstream_env",
]


@dataclass(frozen=True)
class Credential:
    name: str
    value: str | None
    """The key, stripped and checked; None when it cannot be used (see `problem`)."""
    source: str
    """Where it came from, for hints: "the environment" or the .env.local path."""
    problem: str | None = None
    raw: str | None = None

    def hint(self) -> str:
        if self.source == "the environment":
            return f"{self.name} in the environment (it wins over {ENV_FILE})"
        return f"{self.name} in {self.source}"


def read_credential(name: str, root: Path | None, environ: Mapping[str, str] | None = None) -> Credential:
    """The key as it is now: the environment first, then .env.local (config.load_env's order)."""
    environ = os.environ if environ is None else environ
    values = load_env(root, environ) if root is not None else dict(environ)
    source = "the environment" if name in environ or root is None else str(root / ENV_FILE)
    raw = values.get(name)
    if raw is None:
        return Credential(name, None, source, "not set", None)
    key = raw.strip()
    if not key:
        return Credential(name, None, source, "empty", raw)
    bad = next((i for i, c in enumerate(key) if not "!" <= c <= "~"), None)
    if bad is not None:
        return Credential(
            name,
            None,
            source,
            f"holds a character a key cannot have at position {bad + 1} (a space, a control "
            "character or a non-ASCII letter)",
            raw,
        )
    return Credential(name, key, source, None, raw)


def not_configured(settings: MemorySettings, root: Path | None) -> tuple[str, str, bool]:
    """Why memory is off when [memory] names no upstream (no url, no command), the fix, and whether
    that looks like a mistake: a [memory] table without its url, or the key waiting in .env.local
    with nothing to use it. The one wording for the boot line, the proxy's status and the doctor."""
    written = sorted(settings.model_fields_set)
    if written:
        what = f"[memory] has no url ({', '.join(written)} set, but no service to use them)"
        fix = 'add url = "https://..." (or a command) to [memory] in kbkit.toml'
    else:
        what = "not configured (session memory is optional)"
        fix = "add a [memory] section with url to kbkit.toml"
    unused_key = root is not None and settings.credential in read_env_file(root)
    if unused_key:
        what += f"; {settings.credential} in {ENV_FILE} is unused until then"
        fix += f", or remove {settings.credential} from {ENV_FILE}"
    return what, fix, bool(written) or unused_key


def key_problem(credential: Credential) -> str:
    """Why the key cannot be used, and what to do, without showing it."""
    name = credential.name
    if credential.problem == "not set":
        return f"{name} is not set: add {name}=<your key> to {ENV_FILE} or export it"
    if credential.problem == "empty":
        return f"{credential.hint()} is empty: put your key after the = sign"
    return f"{credential.hint()} {credential.problem}: set it again"


def upstream_env(
    settings: MemorySettings, root: Path | None, environ: Mapping[str, str], key: str
) -> dict[str, str]:
    """What a stdio upstream gets on top of the SDK's safe base: locale, the named variables, the
    key. Never kbkit's own environment: it may hold other secrets (docs/adr/0018)."""
    named = load_env(root, environ) if root is not None else dict(environ)
    env = {name: environ[name] for name in LOCALE_VARIABLES if name in environ}
    env.update({name: named[name] for name in settings.env if name in named})
    env[settings.credential] = key
    return env
