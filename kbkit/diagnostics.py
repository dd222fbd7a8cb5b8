"""What kbkit says about itself on stderr at every start: what was indexed, what is on, what is off
and why. Never a secret's value: only variable names.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kbkit import __version__
from kbkit.config import Settings
from kbkit.kb.indexer import ScanReport

if TYPE_CHECKING:
    from kbkit.server.memory import MemoryProxy

PREFIX = "[kbkit]"


def _relative(settings: Settings) -> str:
    try:
        return str(settings.kb_path.relative_to(settings.root)) or "."
    except ValueError:
        return str(settings.kb_path)


def describe_scan(report: ScanReport) -> str:
    line = (
        f"index: {report.documents} documents ({report.added} added, {report.changed} changed, "
        f"{report.removed} removed) in {report.seconds:.2f} s"
    )
    if report.skipped:
        top = ", ".join(f"{count} {reason}" for reason, count in report.skip_reasons.most_common(3))
        line += f"; {report.skipped} skipped ({top}; `kbkit index --skipped` lists them)"
    return line


def boot_lines(
    settings: Settings,
    report: ScanReport,
    *,
    transport: str,
    tools: Iterable[str],
    repaired: str | None = None,
    http: Iterable[str] = (),
    watching: bool = False,
    memory: str = "memory: off (not configured: add a [memory] section with url to kbkit.toml)",
) -> list[str]:
    lines = [
        f"kbkit {__version__} (Python {platform.python_version()}), transport: {transport}",
        f"root: {settings.root}, kb folder: {_relative(settings)}",
    ]
    lines += list(http)
    if repaired:
        lines.append(f"index repaired: {repaired}")
    lines += [
        describe_scan(report)
        + ("; watching for changes" if watching else "; not watching (--no-watch or [kb] watch = false)"),
        f"parsers: {', '.join(settings.parsers)}",
        f"tools: {', '.join(tools) or 'none ([server] tools is empty)'}",
        memory,
    ]
    return [f"{PREFIX} {line}" for line in lines]


def memory_line(settings: Settings, proxy: MemoryProxy | None, *, over_http: bool) -> str:
    """The memory boot line: on its way, off and why, or (over HTTP) deliberately not attached."""
    if over_http and not settings.http.memory and settings.memory.configured:
        return (
            "memory: off over HTTP (session memory is one user's state; set [server.http] memory = true "
            "to attach it to this shared server)"
        )
    if proxy is None:
        return "memory: off (not configured: add a [memory] section with url to kbkit.toml)"
    line = proxy.status.line()
    if over_http and proxy.enabled:
        line += "; WARNING: attached over HTTP, every caller shares one memory bank"
    return line
