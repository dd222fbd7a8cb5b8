#!/usr/bin/env bash
# Installs everything the test suite uses into this checkout, so that on a fresh machine the whole
# suite runs with nothing skipped: a virtualenv (.venv) with kbkit, its test tools and every extra
# the tests exercise, and the real third-party peers from npm (the MCP Inspector, the reference
# memory server, the `skills` CLI, and the Node 24 they need), pinned by tests/peers/npm's lock; the
# agents' own CLIs (Claude Code, Gemini CLI, Codex, opencode, Qwen Code, Copilot CLI, Amp, Kilo Code,
# Factory droid, Qoder CLI, Auggie, Grok CLI) into tests/peers/agents; and Debian's HAProxy and
# openssl (the `haproxy` tier) when missing.
# Rerunning it brings an existing checkout up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

# Byte-compiling every installed module costs more than it saves here (PIP_NO_COMPILE=1 would
# turn it *on*: pip reads a no- option from the environment as its positive twin's value).
export PIP_COMPILE="${PIP_COMPILE:-0}"
# The system Python does (Debian's too), given its venv module: Debian ships ensurepip, which
# `python3 -m venv` needs for pip, in a package of its own.
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "tests/setup.sh: kbkit needs python3 3.11 or newer on PATH; install it, then rerun" >&2
    exit 1
fi
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    echo "tests/setup.sh: $(command -v python3) cannot make a virtualenv with pip (no ensurepip);" \
        "on Debian or Ubuntu run: sudo apt-get install python3-venv, then rerun" >&2
    exit 1
fi
python3 -m venv .venv
.venv/bin/pip install --quiet -e ".[test,semantic]"
npm ci --prefix tests/peers/npm --no-audit --no-fund --loglevel=error
# The agents' own CLIs (tests marked `agents`), at the versions tests/peers/agents' lock pins. The
# lock names every platform's binary package; `npm ci` refuses it where the registry serves only
# this platform's, so `npm install --no-save` installs the locked versions and leaves the lock as is.
npm install --prefix tests/peers/agents --no-save --no-audit --no-fund --loglevel=error

# Debian's haproxy, and the openssl CLI the TLS test makes its certificate with, when missing.
packages=()
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || packages+=(haproxy)
command -v openssl >/dev/null 2>&1 || packages+=(openssl)
if [ "${#packages[@]}" -gt 0 ]; then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
