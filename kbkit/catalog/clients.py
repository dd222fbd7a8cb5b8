"""The client table: every agent kbkit writes a config for, as data.

Adding a client is one row here and, when its entry has a new shape, one template in
templates/. Everything else (rendering, merging, pre-approval, ownership, gitignore, doctor,
docs/sync.md's client table) reads this table. Each row's facts and their sources: docs/clients.md.
"""

from __future__ import annotations

from kbkit.catalog.client import (
    DIRECT_HTTP,
    PERSONAL_TOKEN_VAR,
    RELAY,
    REMOTE_TRANSPORTS,
    START_UP_SECONDS,
    TOKEN_VAR,
    Approval,
    Client,
    ToolKeys,
)

__all__ = [
    "ALIASES",
    "CLIENTS",
    "DEFAULT_CLIENTS",
    "DIRECT_HTTP",
    "PERSONAL_TOKEN_VAR",
    "RELAY",
    "REMOTE_AUTHS",
    "REMOTE_TRANSPORTS",
    "SIGN_IN",
    "START_UP_SECONDS",
    "TOKEN_VAR",
    "Approval",
    "Client",
    "ToolKeys",
    "canonical",
    "clients_table",
    "tool_keys_table",
]

CLIENTS: dict[str, Client] = {
    client.name: client
    for client in (
        Client(
            "claude-code",
            "Claude Code",
            ".mcp.json",
            "json",
            ("mcpServers",),
            "typed",
            "${{{var}}}",
            approval=Approval(
                "list", ("permissions", "allow"), "mcp__{server}__{tool}", ".claude/settings.local.json"
            ),
            caveat="trust the folder and approve the project server when Claude Code asks (or in /mcp)",
            source="code.claude.com/docs: mcp (project scope), settings (permissions), iam",
        ),
        Client(
            "cursor",
            "Cursor",
            ".cursor/mcp.json",
            "json",
            ("mcpServers",),
            "plain",
            "${{env:{var}}}",
            source="cursor.com/docs/context/mcp",
        ),
        Client(
            "vscode",
            "VS Code",
            ".vscode/mcp.json",
            "json",
            ("servers",),
            "typed",
            "${{env:{var}}}",
            caveat="start VS Code from a shell that has MCP_TOKEN: it expands ${env:MCP_TOKEN} in the "
            "headers from its own environment",
            caveat_when="http",
            source="code.visualstudio.com/docs/copilot/reference/mcp-configuration",
        ),
        Client(
            "zed",
            "Zed",
            ".zed/settings.json",
            "jsonc",
            ("context_servers",),
            "plain",
            None,
            caveat="trust the project in Zed: servers from project settings start only in a trusted worktree",
            source="zed.dev/docs/ai/mcp",
        ),
        Client(
            "codex",
            "Codex CLI",
            ".codex/config.toml",
            "toml",
            ("mcp_servers",),
            "codex",
            "names",
            extra=(("startup_timeout_sec", START_UP_SECONDS),),
            tool_keys=ToolKeys("enabled_tools", "disabled_tools"),
            caveat="trust the project in Codex: it reads .codex/config.toml only in trusted projects",
            source="openai/codex codex-rs/config/src/mcp_types.rs, docs/config.md",
        ),
        Client(
            "gemini",
            "Gemini CLI",
            ".gemini/settings.json",
            "json",
            ("mcpServers",),
            "gemini",
            "${{{var}}}",
            approval=Approval("list", ("tools", "allowed"), "mcp_{server}_{tool}"),
            tool_keys=ToolKeys("includeTools", "excludeTools"),
            caveat="trust the folder when Gemini CLI asks (or /permissions): in an untrusted folder it "
            "starts no project server",
            source="google-gemini/gemini-cli docs/tools/mcp-server.md, docs/cli/trusted-folders.md; "
            "Gemini CLI 0.61.0 run offline",
            end_of_life="Google stopped serving Gemini CLI to free, Google AI Pro and Ultra users on "
            "2026-06-18 (Code Assist Standard/Enterprise and paid API keys keep it); its successor is "
            'Antigravity CLI: add "antigravity-cli" to [sync] clients',
        ),
        Client(
            "opencode",
            "opencode",
            "opencode.json",
            "json",
            ("mcp",),
            "opencode",
            "{{env:{var}}}",
            extra=(("timeout", START_UP_SECONDS * 1000),),
            source="opencode.ai/docs/mcp-servers",
        ),
        Client(
            "devin",
            "Devin",
            ".devin/mcp_config.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            approval=Approval(
                "list", ("permissions", "allow"), "mcp__{server}__{tool}", ".devin/config.local.json"
            ),
            source="docs.devin.ai/cli/extensibility/mcp/configuration, .../mcp/overview",
        ),
        Client(
            "kiro",
            "Kiro",
            ".kiro/settings/mcp.json",
            "json",
            ("mcpServers",),
            "plain",
            "${{{var}}}",
            approval=Approval("entry", ("autoApprove",), "{tool}"),
            tool_keys=ToolKeys(deny="disabledTools"),
            caveat="approve MCP_TOKEN in Kiro's settings: Kiro expands ${MCP_TOKEN} only for variables "
            "you approved",
            caveat_when="http",
            source="kiro.dev/docs/mcp/configuration, kiro.dev/docs/mcp/security",
        ),
        Client(
            "junie",
            "JetBrains Junie",
            ".junie/mcp/mcp.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            http=False,
            source="jetbrains.com/help/junie/model-context-protocol-mcp.html",
        ),
        Client(
            "claude-desktop",
            "Claude Desktop",
            ".agents/tool-cfg/claude-desktop.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            user_config="claude_desktop_config.json (Settings > Developer > Edit Config)",
            http=False,
            source="modelcontextprotocol.io/quickstart/user",
        ),
        Client(
            "devin-desktop",
            "Devin Desktop (Windsurf)",
            ".agents/tool-cfg/windsurf.json",
            "json",
            ("mcpServers",),
            "server-url",
            "${{env:{var}}}",
            user_config="~/.codeium/windsurf/mcp_config.json",
            source="docs.windsurf.com/windsurf/cascade/mcp (Windsurf renamed Devin Desktop, 2026-06: "
            "the MCP file is unchanged)",
            aliases=("windsurf",),
        ),
        Client(
            "cline",
            "Cline",
            ".agents/tool-cfg/cline.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            user_config="cline_mcp_settings.json (Cline > MCP Servers > Configure)",
            source="docs.cline.bot/mcp/configuring-mcp-servers",
        ),
        Client(
            "roo",
            "Roo Code",
            ".roo/mcp.json",
            "json",
            ("mcpServers",),
            "roo",
            "${{env:{var}}}",
            approval=Approval("entry", ("alwaysAllow",), "{tool}"),
            caveat="turn on auto-approval of MCP tools in Roo Code: alwaysAllow applies only then",
            caveat_when="preapprove",
            source="RooCodeInc/Roo-Code src/services/mcp/McpHub.ts, src/core/auto-approval/index.ts",
            end_of_life="Roo Code was shut down on 2026-05-15 (its repository is archived): the "
            "extension keeps reading .roo/mcp.json, but gets no fixes; its notice points to Zoo Code "
            "and Cline",
        ),
        Client(
            "kilo",
            "Kilo Code",
            ".kilo/kilo.json",
            "json",
            ("mcp",),
            "opencode",
            None,  # Kilo CLI 7.7.7, run offline, skips a project file that uses {env:VAR}: relay only
            extra=(("timeout", START_UP_SECONDS * 1000),),
            approval=Approval("map", ("permission",), "{server}_{tool}", sanitize=True),
            source="Kilo-Org/kilocode packages/kilo-docs/pages/automate/mcp/using-in-kilo-code.md, "
            "packages/opencode/src/mcp/index.ts; Kilo CLI 7.7.7 run offline",
        ),
        Client(
            "qwen",
            "Qwen Code",
            ".qwen/settings.json",
            "json",
            ("mcpServers",),
            "gemini",
            "${{{var}}}",
            extra=(("discoveryTimeoutMs", START_UP_SECONDS * 1000),),
            tool_keys=ToolKeys("includeTools", "excludeTools"),
            caveat="run `qwen mcp approve {server}` (Qwen Code 0.24 and later; again after kbkit sync "
            "changes the entry, as the approval is bound to it): Qwen Code starts a project server only "
            "once approved; before 0.24: trust the folder if folder trust is on",
            source="QwenLM/qwen-code docs/users/features/mcp.md, "
            "docs/users/configuration/trusted-folders.md; Qwen Code 0.24.4 run offline",
        ),
        Client(
            "copilot-cli",
            "GitHub Copilot CLI",
            ".mcp.json",
            "json",
            ("mcpServers",),
            "typed",
            "${{{var}}}",
            caveat="confirm folder trust when Copilot CLI first starts here: it skips project servers "
            "in untrusted folders",
            source="github/docs content/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers.md",
        ),
        Client(
            "amp",
            "Amp",
            ".amp/settings.json",
            "json",
            ("amp.mcpServers",),
            "plain",
            None,
            caveat="run `amp mcp approve {server}` (again after kbkit sync changes the entry, as the "
            "approval is bound to it): Amp starts a workspace server only after approval",
            source="ampcode.com/manual (Workspace settings, MCP); Amp run offline",
        ),
        Client(
            "crush",
            "Crush",
            ".crush.json",
            "json",
            ("mcp",),
            "typed",
            "${{{var}}}",
            extra=(("timeout", START_UP_SECONDS),),
            approval=Approval("list", ("permissions", "allowed_tools"), "mcp_{server}_{tool}"),
            source="charmbracelet/crush internal/config/config.go, internal/agent/tools/mcp/init.go, "
            "internal/agent/tools/mcp-tools.go",
        ),
        Client(
            "factory",
            "Factory droid",
            ".factory/mcp.json",
            "json",
            ("mcpServers",),
            "typed",
            "${{{var}}}",
            tool_keys=ToolKeys("enabledTools", "disabledTools"),
            source="docs.factory.ai/cli/configuration/mcp (Factory-AI/factory "
            "docs/cli/configuration/mcp.mdx); droid 0.225.2's own schema (enabledTools, disabledTools)",
        ),
        Client(
            "continue",
            "Continue",
            ".continue/mcpServers/kb.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            caveat="use Continue in agent mode: MCP tools are offered only there",
            source="continuedev/continue docs/customize/deep-dives/mcp.mdx",
            end_of_life="Continue's team joined Cursor and continuedev/continue is read-only after its "
            "final release: Continue keeps reading .continue/mcpServers, but gets no fixes",
            server_file=".continue/mcpServers/{server}.json",
        ),
        Client(
            "trae",
            "Trae",
            ".trae/mcp.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            caveat="turn on Enable Project MCP in Trae's settings (Settings > MCP)",
            source="docs.trae.ai / volcengine.com/docs/86677 (MCP: project-level MCP Server)",
        ),
        Client(
            "warp",
            "Warp",
            ".warp/.mcp.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            caveat="start the {server} server once in Warp (Settings > Agents > MCP servers): Warp does not "
            "start project servers by itself",
            source="warpdotdev/docs src/content/docs/agent-platform/capabilities/mcp.mdx",
        ),
        Client(
            "antigravity",
            "Google Antigravity",
            ".agents/tool-cfg/antigravity.json",
            "json",
            ("mcpServers",),
            "server-url",
            None,
            user_config="Antigravity's raw MCP config (Agent panel > ... > MCP Servers > Manage MCP Servers "
            "> View raw config), then Refresh",
            source="docs.silabs.com/mcp (Antigravity setup); langchain-ai/docs #1609 (serverUrl); "
            "Google's own page not found: env references unverified",
        ),
        Client(
            "antigravity-cli",
            "Antigravity CLI",
            ".agents/mcp_config.json",
            "json",
            ("mcpServers",),
            "server-url",
            None,
            source="stbenjam/skillsaw docs/rules/antigravity-mcp-valid.md (measured against agy 1.1.26); "
            "Google's own page not found: env references unverified",
        ),
        Client(
            "jetbrains-ai",
            "JetBrains AI Assistant",
            ".agents/tool-cfg/jetbrains-ai.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            user_config="Settings | Tools | AI Assistant | Model Context Protocol (MCP) > Add > As JSON, "
            "level: current project",
            source="jetbrains.com/help/ai-assistant/mcp.html (2026.1: stdio and streamable HTTP)",
        ),
        Client(
            "augment",
            "Augment (Auggie)",
            ".augment/settings.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            source="@augmentcode/auggie 0.36.0 (its bundle: .augment/settings.json and "
            "settings.local.json per workspace); Auggie run offline",
        ),
        Client(
            "goose",
            "Goose",
            ".agents/tool-cfg/goose.json",
            "json",
            ("extensions",),
            "goose",
            None,
            user_config="~/.config/goose/config.yaml, under extensions: (YAML reads this JSON as it is)",
            source="aaif-goose/goose documentation/docs/guides/config-files.md",
        ),
        Client(
            "kimi",
            "Kimi Code CLI",
            ".kimi-code/mcp.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            extra=(("startupTimeoutMs", START_UP_SECONDS * 1000),),
            caveat="trust the folder when Kimi Code asks: it reads .kimi-code/mcp.json only in a trusted "
            "workspace",
            source="@moonshot-ai/kimi-code 2.1.0 (npm) dist/main.mjs (loadMcpServersDetailed: "
            "<cwd>/.kimi-code/mcp.json over <project root>/.mcp.json over ~/.kimi-code/mcp.json, the "
            "project files only in a trusted workspace; startupTimeoutMs default 30 s); the PyPI "
            "kimi-cli it replaced is archived",
        ),
        Client(
            "mistral-vibe",
            "Mistral Vibe",
            ".vibe/config.toml",
            "toml-tables",
            ("mcp_servers",),
            "vibe",
            None,
            http=False,
            extra=(("startup_timeout_sec", START_UP_SECONDS),),
            caveat="trust the folder when Mistral Vibe asks: it reads .vibe/config.toml only in a trusted "
            "folder",
            source="mistral-vibe 3.0.3 (PyPI) vibe/core/config/models.py (MCPStdio, startup_timeout_sec "
            "default 10 s), vibe/core/config/layers/project.py, vibe/core/trusted_folders.py",
        ),
        Client(
            "openhands",
            "OpenHands CLI",
            ".agents/tool-cfg/openhands.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            user_config="~/.openhands/mcp.json",
            source="openhands 1.16.0 (PyPI) openhands_cli/mcp/mcp_utils.py",
        ),
        Client(
            "firebender",
            "Firebender",
            "firebender.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            source="docs.firebender.com/context/syntax, /api-reference/syntax (project firebender.json; "
            "a personal ~/.firebender/firebender.json server of the same name wins)",
        ),
        Client(
            "visual-studio",
            "Visual Studio",
            ".vs/mcp.json",
            "json",
            ("servers",),
            "typed",
            None,
            caveat="enable the {server} tools in Copilot Chat's tool picker (agent mode): Visual Studio "
            "starts MCP tools disabled",
            source="MicrosoftDocs/visualstudio-docs docs/ide/mcp-servers.md (<SOLUTIONDIR>\\.vs\\mcp.json)",
        ),
        Client(
            "qoder",
            "Qoder CLI",
            ".mcp.json",
            "json",
            ("mcpServers",),
            "typed",
            "${{{var}}}",
            caveat="trust the folder and approve the project server when Qoder CLI asks: it keeps .mcp.json "
            "servers pending until approved",
            source="@qoder-ai/qodercli 1.1.52 (its bundle: .mcp.json, enabledProjectMcpServers, "
            "${VAR} expansion); Qoder CLI run offline",
        ),
        Client(
            "grok-cli",
            "Grok CLI (vibe-kit)",
            ".grok/settings.json",
            "json",
            ("mcpServers",),
            "grok",
            None,
            http=False,
            source="@vibe-kit/grok-cli 0.0.34 dist/mcp/config.js, dist/mcp/client.js, "
            "dist/utils/settings-manager.js; Grok CLI run offline",
        ),
        Client(
            "rovodev",
            "Rovo Dev CLI",
            ".agents/tool-cfg/rovodev.json",
            "json",
            ("mcpServers",),
            "plain",
            None,
            user_config="~/.rovodev/mcp.json (`acli rovodev mcp` opens it)",
            source="support.atlassian.com/rovo/docs/connect-to-an-mcp-server-in-rovo-dev-cli",
        ),
        Client(
            "bob",
            "IBM Bob",
            ".bob/mcp.json",
            "json",
            ("mcpServers",),
            "roo",
            None,
            approval=Approval("entry", ("alwaysAllow",), "{tool}"),
            source="bob.ibm.com/docs/ide/configuration/mcp/mcp-in-bob; ibm.com/docs (ADS: Bob's "
            "alwaysAllow, streamable-http)",
        ),
    )
}

ALIASES: dict[str, str] = {alias: client.name for client in CLIENTS.values() for alias in client.aliases}
"""A renamed agent's old id, accepted wherever a client name is (`[sync] clients`, `--only`)."""


def canonical(name: str) -> str:
    """The row's id for a client name or one of its aliases (an unknown name is returned as it is)."""
    return ALIASES.get(name, name)


SIGN_IN: dict[str, str] = {
    "claude-code": "run /mcp in Claude Code, pick {server} and choose Authenticate (a browser opens)",
    "cursor": "open Cursor Settings > MCP and click Connect (or Login) beside {server} (a browser opens)",
    "vscode": "start {server} from .vscode/mcp.json; VS Code asks you to sign in (Accounts menu)",
    "codex": "run `codex mcp login {server}` (a browser opens)",
    "gemini": "run /mcp auth {server} in Gemini CLI (a browser opens)",
}
"""With `[sync] remote_auth = "oauth"`: the clients that sign in to a remote MCP server by themselves
(OAuth 2.1 with protected resource metadata), and how; they get a plain URL entry (no header, no
token). The others run `kbkit connect` with a personal token. Sources: docs/clients.md."""
REMOTE_AUTHS = ("token", "oauth")
"""`[sync] remote_auth`: token (a bearer from .env.local or the environment) or oauth (docs/adr/0032)."""

DEFAULT_CLIENTS = ["claude-code", "cursor", "vscode", "zed", "codex"]
"""What teams run in late 2026 (docs/clients.md, "The default"): Gemini CLI left the default when Google
stopped serving it to free, Pro and Ultra users (2026-06-18); Antigravity CLI is not in it while its
project file is confirmed only by third-party measurements."""


def clients_table() -> str:
    """docs/sync.md's client table, written from CLIENTS (a test keeps the page equal to it)."""
    rows = [
        "| client | `[sync] clients` name | file kbkit writes | step in the agent | source |",
        "| --- | --- | --- | --- | --- |",
    ]
    for client in CLIENTS.values():
        where = f"`{client.path}`" + (f" (copy into {client.user_config})" if client.user_level else "")
        step = client.step("kb") or "none"
        if client.caveat and client.caveat_when == "http":
            step = f'with `remote_transport = "http"`: {step}'
        elif client.caveat and client.caveat_when == "preapprove":
            step = f"for pre-approval: {step}"
        rows.append(f"| {client.title} | `{client.name}` | {where} | {step} | {client.source} |")
    return "\n".join(rows) + "\n"


def tool_keys_table() -> str:
    """docs/servers.md's table of the agents' own per-server tool filters, written from CLIENTS."""
    rows = ["| agent | only these (`tools`) | never these (`exclude_tools`) |", "| --- | --- | --- |"]
    for client in CLIENTS.values():
        keys = client.tool_keys
        if keys is not None:
            allow, deny = (f"`{key}`" if key else "none (kbkit's only)" for key in (keys.allow, keys.deny))
            rows.append(f"| {client.title} | {allow} | {deny} |")
    return "\n".join(rows) + "\n"
