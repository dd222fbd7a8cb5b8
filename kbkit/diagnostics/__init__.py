"""What kbkit says about itself: the boot lines `kbkit serve` prints at every start (`boot`), and
`kbkit doctor`'s checks, a module per family, run in order by `runner` (whose list also writes
docs/troubleshooting.md's table). Never a secret's value: only variable names.
"""

from kbkit.diagnostics.base import Check, Context, Finding
from kbkit.diagnostics.boot import PREFIX, boot_lines, describe_excluded, describe_scan, memory_line
from kbkit.diagnostics.memory import check_memory
from kbkit.diagnostics.runner import CHECKS, doctor_report, run_checks, troubleshooting_table, worst_status
from kbkit.diagnostics.search import check_parsers

__all__ = [
    "CHECKS",
    "PREFIX",
    "Check",
    "Context",
    "Finding",
    "boot_lines",
    "check_memory",
    "check_parsers",
    "describe_excluded",
    "describe_scan",
    "doctor_report",
    "memory_line",
    "run_checks",
    "troubleshooting_table",
    "worst_status",
]
