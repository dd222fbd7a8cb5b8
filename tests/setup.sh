#!/usr/bin/env bash
# Installs everything the test suite uses into this checkout, so that on a fresh machine the whole
# suite runs with nothing skipped: a virtualenv (.venv) with kbkit, its test tools and every extra
# the tests exercise, and the real third-party peers from npm (the MCP Inspector, the reference
# memory server, the `skills` CLI, and the Node 24 they need), pinned by tests/peers/npm's lock; the
# agents' own CLIs (Claude Code, Gemini CLI, Codex, opencode, Qwen Code, Copilot CLI, Amp, Kilo Code,
# Factory droid, Qoder CLI, Auggie, Grok CLI, Kimi Code) into tests/peers/agents, and Mistral Vibe
# and OpenHands (PyPI, Python 3.12 or newer) into tests/peers/agents/python; and Debian's HAProxy
# and openssl (the `haproxy` tier) when missing.
# Rerunning it brings an existing checkout up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

# Byte-compiling every installed module costs more than it saves here (PIP_NO_COMPILE=1 would
# turn it *on*: pip reads a no- option from the environment as its positive twin's value).
export PIP_COMPILE="${PIP_COMPILE:-0}"
# Said when no Python 3.12 or newer is found; tests/peers/agents.py fails with the same words under CI.
PYTHON_AGENTS_MISSING="no Python 3.12 or newer found (python3.13, python3.12, /root/.pyenv/versions/3.1x, pyenv), so Mistral Vibe and OpenHands are not installed"
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
# The agents whose CLI is a Python package that needs Python 3.12 or newer (Mistral Vibe, OpenHands):
# each in a virtualenv of its own under tests/peers/agents/python (their pins conflict), at the
# versions its .txt there pins (installed with --no-deps: the file lists every package).
newer=""
for candidate in python3.13 python3.12 /root/.pyenv/versions/3.1[2-9]*/bin/python; do
    if "$candidate" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
        newer="$candidate"
        break
    fi
done
if [ -z "$newer" ] && command -v pyenv >/dev/null 2>&1; then
    for version in 3.13 3.12; do
        newer="$(pyenv which "python$version" 2>/dev/null)" && break || newer=""
    done
fi
if [ -n "$newer" ]; then
    for pins in tests/peers/agents/python/*.txt; do
        venv="${pins%.txt}"
        [ -x "$venv/bin/python" ] || "$newer" -m venv "$venv"
        "$venv/bin/pip" install --quiet --no-deps -r "$pins"
    done
else
    echo "tests/setup.sh: $PYTHON_AGENTS_MISSING" >&2
fi

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
