"""Every agent's skill folders, as data: the project folder and the user's (global) folder.

Keyed by kbkit's client ids (the ones `[sync] clients` takes) and by the agent names of
`npx skills` 1.7.4, which are accepted as aliases (`gemini-cli` is `gemini`, `kiro-cli` is
`kiro`, `github-copilot` is `vscode`). The folders are the ones `npx skills` installs into, so
both tools put a skill in the same place. `.agents/skills` is the shared folder many agents read
directly: kbkit's canonical copy lives there, and other folders get a link (or a copy) of it.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kbkit.errors import UnknownAgent

CANONICAL_SKILL_DIR = ".agents/skills"
"""Where each skill's canonical copy is installed; many agents read it directly."""


@dataclass(frozen=True)
class Agent:
    id: str
    title: str
    project_dir: str | None
    """Relative to the project root; None when the agent reads no project folder."""
    global_dir: str | None
    """The user's folder: '~' is the home folder, ${VAR:-default} an environment override."""
    aliases: tuple[str, ...] = ()

    def folder(self, *, global_: bool = False, environ: Mapping[str, str] | None = None) -> str | None:
        """The skill folder: relative to the project, or (global) an absolute path."""
        if not global_:
            return self.project_dir
        if self.global_dir is None:
            return None
        return str(expand(self.global_dir, os.environ if environ is None else environ))


def _agent(id: str, title: str, project: str | None, global_: str | None, *aliases: str) -> Agent:
    return Agent(id, title, project, global_, aliases)


AGENTS: dict[str, Agent] = {
    agent.id: agent
    for agent in (
        _agent("aider-desk", "AiderDesk", ".aider-desk/skills", "~/.aider-desk/skills"),
        _agent("amp", "Amp", ".agents/skills", "${XDG_CONFIG_HOME:-~/.config}/agents/skills"),
        _agent("antigravity", "Antigravity", ".agents/skills", "~/.gemini/antigravity/skills"),
        _agent("antigravity-cli", "Antigravity CLI", ".agents/skills", "~/.gemini/antigravity-cli/skills"),
        _agent("astrbot", "AstrBot", "data/skills", "~/.astrbot/data/skills"),
        _agent(
            "autohand-code", "Autohand Code CLI", ".autohand/skills", "${AUTOHAND_HOME:-~/.autohand}/skills"
        ),
        _agent("augment", "Augment", ".augment/skills", "~/.augment/skills"),
        _agent("bob", "IBM Bob", ".bob/skills", "~/.bob/skills"),
        _agent("claude-code", "Claude Code", ".claude/skills", "${CLAUDE_CONFIG_DIR:-~/.claude}/skills"),
        _agent("openclaw", "OpenClaw", "skills", "~/.openclaw/skills"),
        _agent("claude-desktop", "Claude Desktop", None, None),
        _agent("cline", "Cline", ".agents/skills", "~/.agents/skills"),
        _agent("codearts-agent", "CodeArts Agent", ".codeartsdoer/skills", "~/.codeartsdoer/skills"),
        _agent("codebuddy", "CodeBuddy", ".codebuddy/skills", "~/.codebuddy/skills"),
        _agent("codemaker", "Codemaker", ".codemaker/skills", "~/.codemaker/skills"),
        _agent("codestudio", "Code Studio", ".codestudio/skills", "~/.codestudio/skills"),
        _agent("codex", "Codex", ".agents/skills", "~/.agents/skills"),
        _agent("command-code", "Command Code", ".commandcode/skills", "~/.commandcode/skills"),
        _agent("continue", "Continue", ".continue/skills", "~/.continue/skills"),
        _agent("cortex", "Cortex Code", ".cortex/skills", "~/.snowflake/cortex/skills"),
        _agent("crush", "Crush", ".crush/skills", "~/.config/crush/skills"),
        _agent("cursor", "Cursor", ".agents/skills", "~/.cursor/skills"),
        _agent("deepagents", "Deep Agents", ".agents/skills", "~/.deepagents/agent/skills"),
        _agent("devin", "Devin for Terminal", ".devin/skills", "${XDG_CONFIG_HOME:-~/.config}/devin/skills"),
        _agent("dexto", "Dexto", ".agents/skills", "~/.agents/skills"),
        _agent("factory", "Factory droid", ".agents/skills", "~/.factory/skills", "droid"),
        _agent("eve", "Eve", "agent/skills", None),
        _agent("firebender", "Firebender", ".agents/skills", "~/.firebender/skills"),
        _agent("forgecode", "ForgeCode", ".forge/skills", "~/.forge/skills"),
        _agent("fx", "fx", ".agents/skills", "~/.agents/skills"),
        _agent("gemini", "Gemini CLI", ".agents/skills", "~/.gemini/skills", "gemini-cli"),
        _agent("vscode", "GitHub Copilot", ".agents/skills", "~/.copilot/skills", "github-copilot"),
        _agent("copilot-cli", "GitHub Copilot CLI", ".agents/skills", "~/.copilot/skills"),
        _agent("goose", "Goose", ".goose/skills", "${XDG_CONFIG_HOME:-~/.config}/goose/skills"),
        _agent("grok", "Grok Build", ".grok/skills", "${GROK_HOME:-~/.grok}/skills"),
        _agent("grok-cli", "Grok CLI (vibe-kit)", None, None),
        _agent("jetbrains-ai", "JetBrains AI Assistant", None, None),
        _agent("visual-studio", "Visual Studio", None, None),
        _agent("hermes-agent", "Hermes Agent", ".hermes/skills", "${HERMES_HOME:-~/.hermes}/skills"),
        _agent("inference-sh", "inference.sh", ".inferencesh/skills", "~/.inferencesh/skills"),
        _agent("jazz", "Jazz", ".jazz/skills", "~/.jazz/skills"),
        _agent("junie", "Junie", ".junie/skills", "~/.junie/skills"),
        _agent("iflow-cli", "iFlow CLI", ".iflow/skills", "~/.iflow/skills"),
        _agent("kilo", "Kilo Code", ".agents/skills", "~/.kilo/skills"),
        _agent("kimchi", "Kimchi", ".kimchi/skills", "~/.config/kimchi/harness/skills"),
        _agent("kimi-code-cli", "Kimi Code CLI", ".agents/skills", "~/.agents/skills", "kimi"),
        _agent("kiro", "Kiro CLI", ".kiro/skills", "~/.kiro/skills", "kiro-cli"),
        _agent("kode", "Kode", ".kode/skills", "~/.kode/skills"),
        _agent("lingma", "Lingma", ".lingma/skills", "~/.lingma/skills"),
        _agent("loaf", "Loaf", ".agents/skills", "~/.agents/skills"),
        _agent("mcpjam", "MCPJam", ".mcpjam/skills", "~/.mcpjam/skills"),
        _agent("minimax-code", "MiniMax Code", ".minimax/skills", "~/.minimax/skills"),
        _agent("mistral-vibe", "Mistral Vibe", ".vibe/skills", "${VIBE_HOME:-~/.vibe}/skills"),
        _agent("moxby", "Moxby", ".moxby/skills", "~/.moxby/skills"),
        _agent("mux", "Mux", ".mux/skills", "~/.mux/skills"),
        _agent("opencode", "OpenCode", ".agents/skills", "${XDG_CONFIG_HOME:-~/.config}/opencode/skills"),
        _agent("openhands", "OpenHands", ".openhands/skills", "~/.openhands/skills"),
        _agent("ona", "Ona", ".ona/skills", "~/.ona/skills"),
        _agent("pi", "Pi", ".agents/skills", "~/.agents/skills"),
        _agent("posit-assistant", "Posit Assistant", ".posit/assistant/skills", "~/.posit/assistant/skills"),
        _agent("qoder", "Qoder", ".qoder/skills", "~/.qoder/skills"),
        _agent("qoder-cn", "Qoder CN", ".qoder/skills", "~/.qoder-cn/skills"),
        _agent("qwen", "Qwen Code", ".qwen/skills", "~/.qwen/skills", "qwen-code"),
        _agent("replit", "Replit", ".agents/skills", "${XDG_CONFIG_HOME:-~/.config}/agents/skills"),
        _agent("reasonix", "Reasonix", ".reasonix/skills", "~/.reasonix/skills"),
        _agent("rovodev", "Rovo Dev", ".rovodev/skills", "~/.rovodev/skills"),
        _agent("roo", "Roo Code", ".roo/skills", "~/.roo/skills"),
        _agent("sarvam-code", "Sarvam Code", ".agents/skills", "~/.agents/skills"),
        _agent("tabnine-cli", "Tabnine CLI", ".tabnine/agent/skills", "~/.tabnine/agent/skills"),
        _agent("terramind", "Terramind", ".terramind/skills", "~/.terramind/skills"),
        _agent("tinycloud", "Tinycloud", ".tinycloud/skills", "~/.tinycloud/skills"),
        _agent("trae", "Trae", ".trae/skills", "~/.trae/skills"),
        _agent("trae-cn", "Trae CN", ".trae/skills", "~/.trae-cn/skills"),
        _agent("warp", "Warp", ".agents/skills", "~/.agents/skills"),
        _agent(
            "windsurf",
            "Devin Desktop (Windsurf)",
            ".windsurf/skills",
            "~/.codeium/windsurf/skills",
            "devin-desktop",
        ),
        _agent("zed", "Zed", ".agents/skills", "~/.agents/skills"),
        _agent("zcode", "ZCode", ".zcode/skills", "~/.zcode/skills"),
        _agent("zencoder", "Zencoder", ".zencoder/skills", "~/.zencoder/skills"),
        _agent("zenflow", "Zenflow", ".zencoder/skills", "~/.zencoder/skills"),
        _agent("neovate", "Neovate", ".neovate/skills", "~/.neovate/skills"),
        _agent("pochi", "Pochi", ".pochi/skills", "~/.pochi/skills"),
        _agent("promptscript", "PromptScript", ".agents/skills", None),
        _agent("adal", "AdaL", ".adal/skills", "~/.adal/skills"),
        _agent("universal", "Universal", ".agents/skills", "${XDG_CONFIG_HOME:-~/.config}/agents/skills"),
    )
}
ALIASES: dict[str, str] = {alias: agent.id for agent in AGENTS.values() for alias in agent.aliases}


def resolve(names: Iterable[str]) -> tuple[str, ...]:
    """Agent ids for `names` (ids or npx aliases), deduplicated; an unknown name raises UnknownAgent."""
    ids = []
    for name in names:
        agent_id = ALIASES.get(name, name)
        if agent_id not in AGENTS:
            match = difflib.get_close_matches(name, [*AGENTS, *ALIASES], n=1, cutoff=0.6)
            hint = f" (did you mean {match[0]!r}?)" if match else ""
            raise UnknownAgent(f"unknown agent {name!r}{hint}; `kbkit skills agents` lists them")
        if AGENTS[agent_id].project_dir is None and AGENTS[agent_id].global_dir is None:
            raise UnknownAgent(
                f"{AGENTS[agent_id].title} reads no skill folder; add skills in its own settings"
            )
        ids.append(agent_id)
    return tuple(dict.fromkeys(ids))


def expand(folder: str, environ: Mapping[str, str]) -> Path:
    """`${VAR:-default}/rest` and `~/rest` as a path (a set, non-empty VAR wins over the default)."""
    if folder.startswith("${"):
        spec, _, rest = folder[2:].partition("}")
        var, _, default = spec.partition(":-")
        base = (environ.get(var) or "").strip() or default
        folder = base + rest
    home = environ.get("HOME") or str(Path.home())
    return Path(home + folder[1:]) if folder.startswith("~") else Path(folder)
