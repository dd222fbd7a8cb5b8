"""`kbkit serve`."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from kbkit.cli.common import RootOption, open_kb
from kbkit.errors import ExitCode, InputError

if TYPE_CHECKING:
    from kbkit.kb.base import KnowledgeBase


def serve(
    root: RootOption = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str | None, typer.Option("--host", help="HTTP bind address.")] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="HTTP port ([server.http] port); 0 picks a free one.")
    ] = None,
    no_watch: Annotated[bool, typer.Option("--no-watch", help="Do not reindex as files change.")] = False,
    log_format: Annotated[
        str,
        typer.Option(
            "--log-format",
            help="kbkit's stderr lines (boot, status; over HTTP one audit line per request): text or json.",
        ),
    ] = "text",
) -> None:
    """Serve the kb to agents: over stdio (what agents' configs run), or over HTTP with --http.

    Ctrl-C (SIGINT) stops it with exit code 130; on stdio, the end of stdin stops it with 0."""
    import anyio

    from kbkit.diagnostics import PREFIX, boot_lines, memory_line, run_checks
    from kbkit.server.auth.audit import LOG_FORMATS
    from kbkit.server.factory import create_server
    from kbkit.server.logs import status_writer

    if log_format not in LOG_FORMATS:
        raise InputError(f"--log-format {log_format!r} is not known", fix="use text or json")
    say = status_writer(log_format)
    settings, kb = open_kb(root, deferred=True)  # the index is opened in the background (docs/adr/0012)
    sock = None
    interrupted = False
    parts: list[KnowledgeBase] = []  # with restricted folders over HTTP, one index per part
    try:
        plan = None
        if http:
            from kbkit.server.http import bind, plan_http

            plan = plan_http(settings, host, port, "json" if log_format == "json" else "text")
            sock = bind(plan)  # before any line says the server is up
            # with --port 0 the system picked the port: the boot line names it, so whoever
            # started the server learns its address without guessing a free port (and racing for it)
            plan = replace(plan, port=sock.getsockname()[1])
        attach_memory = plan is None or settings.http.memory
        watch = settings.watch and not no_watch
        if plan is not None and settings.restricted.names:  # one index per part (docs/adr/0070)
            kb.close()
            parts = type(kb).partitioned(settings)
            kb = parts[0]
        server = create_server(parts or kb, attach_memory=attach_memory, watch=watch, report=say)
        lines = boot_lines(
            settings,
            transport="http" if plan else "stdio",
            held=kb.peek(),
            tools=settings.server_tools,
            http=plan.describe() if plan else (),
            watching=watch,
            memory=memory_line(settings, server.memory, over_http=plan is not None),
            search=kb.describe_search()[1],
        )
        for part in parts or [kb]:
            part.embed_in_background(log=say)
        checks = run_checks(settings.root, settings=settings, only_boot=True)
        lines += [finding.line() for finding in checks if finding.status != "ok"]
        if plan is None and sys.stdin.isatty():  # started by hand: say what it is waiting for
            lines.append(
                "stdio: waiting for an MCP client on stdin (agents start kbkit serve themselves); "
                "Ctrl-C stops it"
            )
        for line in lines:
            say(line.removeprefix(PREFIX + " "))
        try:
            if plan is not None and sock is not None:  # bound together above
                from kbkit.server.http import serve_http

                interrupted = anyio.run(serve_http, server, plan, sock)
            else:
                from kbkit.server.stdio import serve_stdio

                anyio.run(serve_stdio, server)
        except KeyboardInterrupt:
            interrupted = True
    finally:
        if sock is not None:
            sock.close()
        for part in parts or [kb]:
            part.close()
    if plan is not None:
        say("stopped: in-flight requests finished, index closed")
    elif interrupted:
        say("stopped (Ctrl-C)")
    if interrupted:
        raise typer.Exit(ExitCode.INTERRUPTED)
