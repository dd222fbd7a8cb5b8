"""The one error boundary of the `kbkit` command: every failure becomes one line and an exit code.

Commands raise the library's errors and never catch them; `KbkitGroup.invoke` (the group every
command runs under) turns a `KbkitError` into `kbkit: error: <what is wrong>; <what to do>` with
the exit code its class means (kbkit.errors.ExitCode), a stray OSError into an environment
error naming the file, and anything else into one line that says to rerun with --debug. With
--debug (or KBKIT_DEBUG=1) the traceback comes first. Never a traceback otherwise.

A reader that closes stdout early (`kbkit doctor | head -1`) is not an error: the output stops
quietly and the exit code is 141, what a shell reports for a command stopped by SIGPIPE (git,
coreutils), so a pipeline under `set -o pipefail` treats kbkit as it treats them.
"""

from __future__ import annotations

import os
import re
import select
import sys
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
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # what is still buffered is written here, where a closed pipe is caught
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # a command's own exit code, and typer's usage errors (exit 2)
        except BrokenPipeError as exc:
            if not stdout_closed():
                raise typer.Exit(self._explained(ctx, exc)) from None
            quiet_stdout()
            raise typer.Exit(int(ExitCode.CLOSED_PIPE)) from None
        except (Exception, KeyboardInterrupt) as exc:
            raise typer.Exit(self._explained(ctx, exc)) from None

    @staticmethod
    def _explained(ctx: Context, exc: BaseException) -> int:
        """Print the one line for `exc` (the traceback first with --debug); return the exit code."""
        line, code = explain(exc)
        if ctx.params.get("debug"):
            traceback.print_exception(exc)
        typer.echo(line, err=True)
        return int(code)


def stdout_closed() -> bool:
    """Whether stdout is a pipe nobody reads any more (its reader exited), rather than some other
    pipe kbkit wrote to breaking: poll reports an error on a write end whose read end is closed."""
    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so what is still buffered is dropped when the interpreter
    flushes at exit instead of raising there ("Exception ignored ... BrokenPipeError")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
    finally:
        os.close(devnull)


def exit_code_table() -> str:
    """docs/commands.md's exit-code table, written from kbkit.errors.ExitCode (a test keeps them equal)."""
    rows = ["| code | meaning |", "| --- | --- |"]
    rows += [f"| {code.value} | {code.meaning} |" for code in ExitCode]
    return "\n".join(rows) + "\n"


def _one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ", text).strip()
