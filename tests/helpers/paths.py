"""Where things are in the checkout, in one place, so a test file can move without its paths."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
PACKAGE = REPO / "kbkit"
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures"
PEERS = TESTS / "peers"
