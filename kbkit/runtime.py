"""Whether kbkit can run here: the platform calls the guards rely on and the third-party modules
kbkit imports. The console script (kbkit/entry.py) refuses to start without them; `kbkit doctor`
reports the dependency check. The standard library only, so it is safe before the checks pass."""

from __future__ import annotations

import importlib.util
import os
import sys

from kbkit import DISTRIBUTION

REQUIRED = (
    "typer",
    "rich",
    "tomlkit",
    "jinja2",
    "mcp",
    "mcp_types",
    "dotenv",
    "yaml",
    "pathspec",
    "re2",
    "uvicorn",
    "starlette",
    "watchfiles",
    "pyuca",
    "markdown_it",
    "anyio",
    "pydantic",
    "httpx2",
    "sse_starlette",
    "jwt",
)
"""Every third-party module kbkit imports (tests/e2e/test_packaging.py keeps this list complete)."""

OPTIONAL = ("pypdf", "docx", "pptx", "openpyxl", "lxml")
"""Imported only by a parser that reports itself missing (`kbkit doctor`, `index --skipped`)."""

SEMANTIC = ("numpy", "onnxruntime", "tokenizers", "onnx")
"""The `semantic` extra's modules, imported only when `[search] semantic = true` and all are installed
(otherwise the boot lines and doctor say hybrid search is off, and why)."""


def unsupported_platform() -> str | None:
    """Why kbkit cannot run on this platform, or None.

    The guards open every folder and file relative to a folder handle with O_NOFOLLOW
    (docs/adr/0003) and the index writer takes an flock: POSIX calls that Windows lacks.
    """
    if os.name != "posix":
        return f"{sys.platform} is not supported"
    missing = [flag for flag in ("O_NOFOLLOW", "O_DIRECTORY") if not hasattr(os, flag)]
    if os.open not in os.supports_dir_fd or os.stat not in os.supports_dir_fd:
        missing.append("opening files relative to a folder handle (dir_fd)")
    if missing:
        return f"this system lacks {', '.join(missing)}"
    return None


def missing_dependency() -> str | None:
    """The first required module that is not installed (found without importing it: start-up stays fast)."""
    for module in REQUIRED:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def reinstall_hint() -> str:
    """How to repair the environment that runs this kbkit (pipx, uv tool, a venv: this interpreter's)."""
    return f"{sys.executable} -m pip install {DISTRIBUTION} (in a checkout of kbkit: pip install -e .)"
