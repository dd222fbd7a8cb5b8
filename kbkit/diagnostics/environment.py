"""The environment kbkit runs in: the interpreter and the packages it needs."""

from __future__ import annotations

import platform
import sys

from kbkit.diagnostics.base import Context, Finding, ok


def check_python(ctx: Context) -> list[Finding]:
    return ok("python", f"Python {platform.python_version()} at {sys.executable}")


def check_dependencies(ctx: Context) -> list[Finding]:
    from kbkit.runtime import missing_dependency, reinstall_hint

    module = missing_dependency()
    if module is not None:
        return [
            Finding(
                "dependencies",
                "fail",
                f"dependencies not installed: {module}",
                f"run: {reinstall_hint()}",
            )
        ]
    return ok("dependencies", "every required package imports")
