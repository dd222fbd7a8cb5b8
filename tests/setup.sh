#!/usr/bin/env bash
# Installs everything the test suite uses into this checkout, so that on a fresh machine the whole
# suite runs with nothing skipped: a virtualenv (.venv) with kbkit, its test tools and every extra
# the tests exercise, and the real third-party peers from npm (the MCP Inspector, the reference
# memory server, the `skills` CLI, and the Node 24 they need), pinned by tests/peers/npm's lock; and the agents'
# own CLIs (Claude Code, Gemini CLI, Codex, opencode, Qwen Code, Copilot CLI) into tests/peers/agents.
# Rerunning it brings an existing checkout up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

# Byte-compiling every installed module costs more than it saves here (PIP_NO_COMPILE=1 would
# turn it *on*: pip reads a no- option from the environment as its positive twin's value).
export PIP_COMPILE="${PIP_COMPILE:-0}"
python3 -m venv .venv
.venv/bin/pip install --quiet -e ".[test,semantic]"
npm ci --prefix tests/peers/npm --no-audit --no-fund --loglevel=error
# The agents' own CLIs (tests marked `agents`), at the versions tests/peers/agents' lock pins. The
# lock names every platform's binary package; `npm ci` refuses it where the registry serves only
# this platform's, so `npm install --no-save` installs the locked versions and leaves the lock as is.
npm install --prefix tests/peers/agents --no-save --no-audit --no-fund --loglevel=error
