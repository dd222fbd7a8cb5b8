"""Session-memory tools proxied from a remote memory MCP server (Hindsight-style).

On only when `[memory]` names an upstream and its credential is in the environment (or
`.env.local`). A supervisor task owns the upstream connection: it connects, lists the tools,
offers the allowed ones beside the kb tools, probes the connection, and reconnects with backoff
when it breaks, announcing every change of the tool list to clients; a memory call that finds it
down asks for an attempt at once instead of waiting out the backoff. The kb side never waits on
it: a memory call has its own timeout and fails with a clear tool error when the upstream is away.

The credential is read afresh, stripped and checked, at every connection attempt, so a rotated
key is picked up without a restart. It is never logged and never put in an error: every line
kbkit says or returns about the upstream goes through `Redactor` (docs/adr/0018). A stdio
upstream gets the key, the variables `[memory] env` names, and a safe base environment; never
kbkit's own. Replies are bounded: over MAX_REPLY_BYTES the upstream is not read further, and text
over RESULT_TEXT_CAP is cut with a notice.

The parts: `proxy` (the tools offered and each call), `declarations` (what agents read about
each tool), `connection` (connect, probe, reconnect, and failures in words), `keys` (the
credential and a stdio upstream's environment), `redaction` and `bounds`.
"""

from kbkit.server.memory.bounds import RESULT_TEXT_CAP
from kbkit.server.memory.connection import probe
from kbkit.server.memory.keys import key_problem, not_configured, read_credential
from kbkit.server.memory.proxy import MemoryProxy, offered_names
from kbkit.server.memory.redaction import Redactor

__all__ = [
    "RESULT_TEXT_CAP",
    "MemoryProxy",
    "Redactor",
    "key_problem",
    "not_configured",
    "offered_names",
    "probe",
    "read_credential",
]
