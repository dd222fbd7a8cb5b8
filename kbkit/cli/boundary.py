"""The one error boundary of the `kbkit` command: every failure becomes one line and an exit code.

Commands raise the library's errors and never catch them; `KbkitGroup.invoke` (the group every
command runs under) turns a `KbkitError` into `kbkit: error: <what is wrong>; <what to do>` with
the exit code its class means (kbkit.errors.ExitCode), a stray OSError into an environment
error naming the file, and anything else into one line that says to rerun with --debug. With
--debug (or KBKIT_DEBUG=1) the traceback comes first. Never a traceback otherwise.
"""

from __future__ import annotations

import re
import traceback
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from kbkit.errors import ExitCode, KbkitError

if TYPE_CHECKING:
    from typer._click.core import Context  # typer's own click, which TyperGroup.invoke takes

DEBUG_HINT = "rerun with --debug for the traceback"


def explain(exc: BaseException) -> tuple[str, ExitCode]:
    """The line to print for `exc`, and the exit code."""
    if isinstance(exc, KbkitError):
        return f"kbkit: error: {_one_line(str(exc))}", exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return "kbkit: interrupted", ExitCode.INTERRUPTED
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return (
            f"kbkit: error: {where}{exc.strerror or exc}; check that path (its type and permissions) "
            f"and the free space, then rerun ({DEBUG_HINT})",
            ExitCode.ENVIRONMENT,
        )
    detail = _one_line(str(exc))
    return (
        f"kbkit: error: unexpected {type(exc).__name__}"
        + (f": {detail}" if detail else "")
        + f" (a bug in kbkit; {DEBUG_HINT})",
        ExitCode.INTERNAL,
    )


class KbkitGroup(TyperGroup):
    """The top-level command group; its `invoke` wraps every command, sub-groups included."""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # a command's own exit code, and typer's usage errors (exit 2)
        except (Exception, KeyboardInterrupt) as exc:
            line, code = explain(exc)
            if ctx.params.get("debug"):
                traceback.print_exception(exc)
            typer.echo(line, err=True)
            raise typer.Exit(int(code)) from None


def exit_code_table() -> str:
    """docs/commands.md's exit-code table, written from kbkit.errors.ExitCode (a test keeps them equal)."""
    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| {code.value} | {code.meaning} |" for code in ExitCode]
    return "\n".join(rows) + "\n"


def _one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ", text).strip()
