"""Session memory: the key, one connection attempt to the service, and a bank that goes unused."""

from __future__ import annotations

from kbkit.config import MemorySettings, Settings
from kbkit.diagnostics.base import Context, Finding, ok


def check_memory(ctx: Context) -> list[Finding]:
    if ctx.settings is None:
        return []
    memory = ctx.settings.memory
    if not memory.configured:
        from kbkit.server.memory import not_configured

        what, fix, mistaken = not_configured(memory, ctx.settings.root)
        if not mistaken:
            return ok("memory", f"off: {what}")
        return [Finding("memory", "warn", f"off: {what}", fix)]
    waiting = _memory_trust(ctx.settings)
    if waiting:
        return waiting + _memory_bank(memory)
    return _memory_connection(ctx.settings) + _memory_bank(memory)


def _memory_trust(settings: Settings) -> list[Finding]:
    """[memory] from a tracked file that this member has not allowed: never reached, not even here
    (with trusted values to fall back on, those are what `settings` holds and are checked)."""
    waiting = settings.waiting("memory")
    if waiting is None or waiting.fallback:
        return []
    return [Finding("memory", "warn", f"off: {waiting.what()}", waiting.review)]


def _memory_connection(settings: Settings) -> list[Finding]:
    import anyio

    from kbkit.server.memory import key_problem, probe, read_credential

    memory = settings.memory
    credential = read_credential(memory.credential, settings.root)
    if credential.value is None:
        return [
            Finding(
                "memory",
                "warn",
                f"{key_problem(credential)}; the memory tools are off",
                f"add {memory.credential}=<your key> to .env.local (never to kbkit.toml)",
            )
        ]
    reached, detail = anyio.run(probe, memory, settings.root)
    if reached:
        return ok("memory", detail)
    return [
        Finding("memory", "fail", f"unavailable: {detail}", "see the reason; kb tools keep working meanwhile")
    ]


def _memory_bank(memory: MemorySettings) -> list[Finding]:
    """A bank the user wrote that nothing takes: said, since they expect it to choose the bank."""
    if not memory.bank_ignored:
        return []
    where = "[memory] url has no {bank} in it" if memory.url else "a stdio [memory] command takes none"
    return [
        Finding(
            "memory",
            "warn",
            f"bank = {memory.bank!r} has no effect: {where}",
            "remove bank, or put {bank} in url where the service expects the bank name",
        )
    ]
