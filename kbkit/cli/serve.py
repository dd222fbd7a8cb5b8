"""`kbkit serve`."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from kbkit.cli.common import RootOption, open_kb, stderr_line
from kbkit.errors import InputError


def serve(
    root: RootOption = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str | None, typer.Option("--host", help="HTTP bind address.")] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="HTTP port ([server.http] port); 0 picks a free one.")
    ] = None,
    no_watch: Annotated[bool, typer.Option("--no-watch", help="Do not reindex as files change.")] = False,
    log_format: Annotated[
        str, typer.Option("--log-format", help="HTTP audit lines on stderr: text or json (one per request).")
    ] = "text",
) -> None:
    """Serve the kb to agents: over stdio (what agents' configs run), or over HTTP with --http."""
    import anyio

    from kbkit.diagnostics import boot_lines, memory_line, run_checks
    from kbkit.server.factory import create_server

    settings, kb = open_kb(root, deferred=True)  # the index is opened in the background (docs/adr/0012)
    sock = None
    try:
        plan = None
        if http:
            from kbkit.server.auth.audit import LOG_FORMATS
            from kbkit.server.http import bind, plan_http

            if log_format not in LOG_FORMATS:
                raise InputError(f"--log-format {log_format!r} is not known", fix="use text or json")
            plan = plan_http(settings, host, port, "json" if log_format == "json" else "text")
            sock = bind(plan)  # before any line says the server is up
            # with --port 0 the system picked the port: the boot line names it, so whoever
            # started the server learns its address without guessing a free port (and racing for it)
            plan = replace(plan, port=sock.getsockname()[1])
        attach_memory = plan is None or settings.http.memory
        watch = settings.watch and not no_watch
        server = create_server(kb, attach_memory=attach_memory, watch=watch, report=stderr_line)
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
        kb.embed_in_background(log=stderr_line)
        lines += [
            f"[kbkit] {f.line()}"
            for f in run_checks(settings.root, settings=settings, only_boot=True)
            if f.status != "ok"
        ]
        for line in lines:
            typer.echo(line, err=True)
        try:
            if plan is not None and sock is not None:  # bound together above
                from kbkit.server.http import serve_http

                anyio.run(serve_http, server, plan, sock)
            else:
                from kbkit.server.stdio import serve_stdio

                anyio.run(serve_stdio, server)
        except KeyboardInterrupt:
            pass
    finally:
        if sock is not None:
            sock.close()
        kb.close()
    if plan is not None:
        typer.echo("[kbkit] stopped: in-flight requests finished, index closed", err=True)
