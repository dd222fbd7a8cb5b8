"""`Settings`: the validated configuration of one project, and the names of the files it comes from.

Kept apart from reading (load.py) so that the trust rule (trust.py), which load.py applies to
every `Settings` it returns, can name the type without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kbkit.config.model import Http, Kb, KbkitConfig, Memory, Search, Server, Skills, Sync
from kbkit.config.restricted import Folders
from kbkit.config.servers import TeamServer

CONFIG_FILE = "kbkit.toml"
LOCAL_CONFIG_FILE = "kbkit.local.toml"
ENV_FILE = ".env.local"
STATE_DIR = ".kbkit"
TRUST_COMMAND = "kbkit trust"


OFF_MEANS = {"sync.remote_url": "agents use the local kb server", "search.model": "search runs on BM25 alone"}
"""What a part that is off means, where "it is off" would not say it."""


@dataclass(frozen=True)
class Pending:
    """One part of the tracked configuration that changed since this member trusted it (or was
    never trusted): the rule and its wording live in trust.py; this is what everyone else reads."""

    key: str
    """The part, as `kbkit trust KEY` names it: "memory", "servers.wiki", "sync.remote_url", ..."""
    title: str
    """How people know it: "[memory]", "[servers.wiki]", "skills-lock.json"."""
    source: str
    """The tracked file it comes from."""
    changed: tuple[str, ...]
    """The keys that differ from what was trusted (every key, when it was never trusted)."""
    fallback: bool
    """The values last trusted stay in use meanwhile; else the part is off until trusted."""
    new: bool = False

    @property
    def review(self) -> str:
        return f"review it with `{TRUST_COMMAND} --show`, then run `{TRUST_COMMAND} {self.key}`"

    def what(self) -> str:
        """What happened, in one phrase: never a value (a value may be a URL the member did not choose)."""
        if self.new:
            return f"{self.title} from {self.source} is not trusted on this machine yet"
        return f"{self.title} changed in {self.source} since you trusted it ({', '.join(self.changed)})"

    @property
    def meanwhile(self) -> str:
        off = OFF_MEANS.get(self.key, "it is off")
        kept = "the settings you trusted stay in use" if self.fallback else off
        return f"{kept} until you allow it"

    def line(self) -> str:
        """The one line every refusal, boot line and doctor finding says."""
        return f"{self.what()}; {self.meanwhile}: {self.review}"


@dataclass(frozen=True)
class Settings:
    """The validated configuration of one project, plus where it lives and its environment.

    New code reads a key as `settings.<section>.<key>` (e.g. `settings.sync.remote_url`); the
    short names below (`server_name`, `sync_clients`, ...) are the same values under the names
    the code has always used.
    """

    root: Path
    """The project root: the folder holding kbkit.toml (absolute, resolved)."""
    kb_path: Path
    """The knowledge-base folder (absolute, resolved)."""
    config: KbkitConfig = field(default_factory=KbkitConfig)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The process environment over `.env.local` (real variables win). Never printed."""
    sources: tuple[Path, ...] = ()
    """The files read, in overlay order."""
    origins: Mapping[str, Path] = field(default_factory=dict, repr=False)
    """Dotted key (or table) -> the file that set it; keys left at their default are absent."""
    tracked_files: frozenset[str] = frozenset({CONFIG_FILE})
    """The names of the files read that git tracks (team input): kbkit.toml always, kbkit.local.toml
    when someone committed it (`git add -f`)."""
    pending: tuple[Pending, ...] = ()
    """What the tracked files changed that waits for this member's `kbkit trust`; the values in
    `config` are the trusted ones meanwhile (docs/adr/0063)."""

    @property
    def kb(self) -> Kb:
        return self.config.kb

    @property
    def server(self) -> Server:
        return self.config.server

    @property
    def http(self) -> Http:
        return self.config.server.http

    @property
    def sync(self) -> Sync:
        return self.config.sync

    @property
    def skills(self) -> Skills:
        return self.config.skills

    @property
    def memory(self) -> Memory:
        return self.config.memory

    @property
    def search(self) -> Search:
        return self.config.search

    @property
    def restricted(self) -> Folders:
        """The kb's restricted folders, `[restricted.<name>]`: who may read them over HTTP."""
        return Folders.of(self.config.restricted)

    @property
    def servers(self) -> Mapping[str, TeamServer]:
        """The team's other MCP servers, `[servers.<name>]`, by name."""
        return self.config.servers

    @property
    def exclude_dirs(self) -> tuple[str, ...]:
        return self.config.kb.exclude_dirs

    @property
    def watch(self) -> bool:
        return self.config.kb.watch

    @property
    def parsers(self) -> tuple[str, ...]:
        return self.config.parsers.enabled

    @property
    def server_name(self) -> str:
        return self.config.server.name

    @property
    def server_tools(self) -> tuple[str, ...]:
        return self.config.server.tools

    @property
    def sync_clients(self) -> tuple[str, ...]:
        return self.config.sync.clients

    @property
    def sync_remote_url(self) -> str:
        return self.config.sync.remote_url

    @property
    def skills_agents(self) -> tuple[str, ...]:
        return self.config.skills.agents

    @property
    def skills_mode(self) -> str:
        return self.config.skills.mode

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def index_path(self) -> Path:
        return self.state_dir / "index.db"

    def origin(self, dotted: str) -> str:
        """The name of the file a key's value came from (kbkit.toml for defaults)."""
        return origin_of(self.origins, tuple(dotted.split(".")))

    def tracked(self, prefix: str) -> bool:
        """Whether a tracked file set `prefix` or any key below it (a table merged key by key from
        both files counts as tracked when either part of it comes from a tracked file)."""
        below = prefix + "."
        return any(
            path.name in self.tracked_files
            for dotted, path in self.origins.items()
            if dotted == prefix or dotted.startswith(below)
        )

    def waiting(self, key: str) -> Pending | None:
        """What of part `key` (e.g. "memory", "servers.wiki") waits for `kbkit trust`, if anything."""
        return next((item for item in self.pending if item.key == key), None)


def origin_of(origins: Mapping[str, Path], loc: tuple[str, ...]) -> str:
    for depth in range(len(loc), 0, -1):
        found = origins.get(".".join(loc[:depth]))
        if found is not None:
            return found.name
    return CONFIG_FILE
