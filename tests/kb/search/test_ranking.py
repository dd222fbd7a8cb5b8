"""Change logs by name, and their weight kept when vectors are fused in (docs/adr/0068)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.search import ranking, search
from tests.helpers.dense import FixedDense
from tests.helpers.project import make_project


@pytest.mark.parametrize(
    "path",
    ["CHANGELOG.md", "announce/release-2.2.0.rst", "releases/1.4.md", "whatsnew-3.12.rst", "v2.0.1.md"],
)
def test_a_file_named_for_a_version_is_a_change_log(path: str) -> None:
    assert ranking.is_changelog(path)


@pytest.mark.parametrize("path", ["history.md", "python3.md", "guide/release.md", "http2.md", "2fa.md"])
def test_a_name_with_a_number_is_not(path: str) -> None:
    assert not ranking.is_changelog(path)


def test_a_release_note_stays_below_the_page_when_vectors_prefer_it(tmp_path: Path) -> None:
    files = {
        "how-to/durations.md": "# Test durations\n\nPass --durations to list the slowest tests, profiling them.\n",
        "announce/release-2.2.0.md": "# pytest 2.2.0\n\n" + "New: profiling durations. " * 8 + "\n",
        **{f"notes/note-{n}.md": f"# Note {n}\n\nSunny on day {n}, durations long.\n" for n in range(20)},
    }
    kb = KnowledgeBase.open(load_settings(make_project(tmp_path / "p", files)))
    try:
        kb.scan()
        dense = FixedDense(kb, {"announce/release-2.2.0.md": 0.9, "how-to/durations.md": 0.3})
        assert search(kb.store, kb.registry, "profiling durations", dense=dense).results[0].path == (
            "how-to/durations.md"
        )
        with ranking.rules_off("change logs"):
            first = search(kb.store, kb.registry, "profiling durations", dense=dense).results[0]
            assert first.path == "announce/release-2.2.0.md"
    finally:
        kb.close()
