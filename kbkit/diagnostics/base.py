"""What every check is made of: the finding, what it looks at, how docs/troubleshooting.md lists it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kbkit.config import Settings


def kb_folder(settings: Settings) -> str:
    """The kb folder as people wrote it: relative to the project root when it is inside it."""
    try:
        return str(settings.kb_path.relative_to(settings.root)) or "."
    except ValueError:
        return str(settings.kb_path)


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    """ok | warn | fail"""
    finding: str
    fix: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def line(self) -> str:
        text = f"{self.status}: {self.check}: {self.finding}"
        return f"{text} - fix: {self.fix}" if self.fix else text


@dataclass
class Context:
    """What the checks look at; each check loads what it needs and records it here for the next."""

    root: Path | None
    settings: Settings | None = None
    config_error: str | None = None


@dataclass(frozen=True)
class Check:
    name: str
    symptom: str
    cause: str
    fix: str
    run: Callable[[Context], list[Finding]]
    at_boot: bool = False
    """Also run by `kbkit serve` at start; only its warnings and failures are printed."""


def ok(check: str, finding: str) -> list[Finding]:
    return [Finding(check, "ok", finding)]
