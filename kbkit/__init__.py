"""kbkit: one MCP server entry for a team's knowledge base, and one way to wire agents to it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kbkit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
