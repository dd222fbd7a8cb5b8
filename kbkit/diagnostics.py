"""What kbkit says about itself on stderr at every start: what was indexed, what is on, what is off
and why. Never a secret's value: only variable names.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable

from kbkit import __version__
from kbkit.config import Settings
from kbkit.kb.indexer import ScanReport

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
) -> list[str]:
    lines = [
        f"kbkit {__version__} (Python {platform.python_version()}), transport: {transport}",
        f"root: {settings.root}, kb folder: {_relative(settings)}",
    ]
    lines += list(http)
    if repaired:
        lines.append(f"index repaired: {repaired}")
    lines += [
        describe_scan(report),
        f"parsers: {', '.join(settings.parsers)}",
        f"tools: {', '.join(tools) or 'none ([server] tools is empty)'}",
        "memory: off (session memory is not configured)",
    ]
    return [f"{PREFIX} {line}" for line in lines]
