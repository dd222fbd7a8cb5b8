"""Settings: `kbkit.toml` (tracked), `kbkit.local.toml` (personal overlay), `.env.local` (secrets).

`model.py` says which keys exist, their types, defaults and meaning; `load.py` reads the files
into a `Settings` (`settings.py`), to which `trust.py` applies the trust rule; `docs.py` writes
docs/configuration.md's key table and `kbkit init`'s kbkit.toml from the model. Everything else
reads a `Settings`; nothing else parses these files.
"""

from kbkit.config.load import (
    check_option,
    find_root,
    load_env,
    load_settings,
    read_env_file,
)
from kbkit.config.model import KB_TOOL_NAMES, Http, KbkitConfig, Memory
from kbkit.config.settings import CONFIG_FILE, ENV_FILE, LOCAL_CONFIG_FILE, STATE_DIR, Settings

MemorySettings = Memory
"""The `[memory]` section, under the name the memory proxy knows it by."""

__all__ = [
    "CONFIG_FILE",
    "ENV_FILE",
    "KB_TOOL_NAMES",
    "LOCAL_CONFIG_FILE",
    "STATE_DIR",
    "Http",
    "KbkitConfig",
    "Memory",
    "MemorySettings",
    "Settings",
    "check_option",
    "find_root",
    "load_env",
    "load_settings",
    "read_env_file",
]
