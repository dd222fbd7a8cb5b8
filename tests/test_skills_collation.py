"""The path order of the shared hash, checked against the real `localeCompare` of the Node that
`npx skills` runs on, over a large generated table of names."""

from __future__ import annotations

import json
import random
import subprocess

import pytest
from skills_helpers import require_node

from kbkit.skills.collation import _ascii_key, _collator, sorted_paths

_SORT_JS = """
const names = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const sorted = [...names].sort((a, b) => a.localeCompare(b));
const ties = sorted.slice(1).map((s, i) => sorted[i].localeCompare(s) === 0);
process.stdout.write(JSON.stringify({sorted, ties}));
"""
ASCII = [chr(c) for c in range(0x20, 0x7F)]
LATIN = list("àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßœŒĳĲłŁđĐšŠžŽčČřŘğĞıİşŞ")
COMBINING = ["\u0301", "\u0300", "\u0308", "\u0327", "\u030c"]
OTHER = list(
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВЯαβγδεζηθΑΒΓΩωάέ日本語中文字漢한국어ㄱアイウあいう가나다ｱｲ１２Ａａ"
    "½²ﬁﬂ€£¥©®™°·•…–—“”‘’‚„«»¡¿"
) + ["😀", "🎉", "𝔘", "\u00a0", "\t"]
PREFIXES = ["", "references/", "scripts/", "assets/", "a/", "A/", "é/", "_/", "-/"]


def generated_names(seed: int, count: int, pool: list[str]) -> list[str]:
    rng = random.Random(seed)
    names = {
        "SKILL.md", "skill.md", "Skill.md", "a.md", "A.md", "b.md", "B.md", "_a", "-a", "a-b.md", "a_b.md",
        "ab.md", "a/b", "a b", "notes.md", "notes-extra.md", "notes/x.md", "é.md", "e.md", "f.md", "E.md",
        "É.md", "ä.md", "z.md", "1.md", "10.md", "9.md", "references/notes.md", "scripts/run.sh",
        "assets/logo.png", "README", "readme", ".hidden", "..a", "a\u0001b", "ab",
    }  # fmt: skip
    while len(names) < count:
        body = "".join(rng.choice(pool) for _ in range(rng.randint(1, 8)))
        names.add(rng.choice(PREFIXES) + body)
    return sorted(names)


def node_order(names: list[str], locale: str = "C.UTF-8") -> tuple[list[str], list[bool]]:
    node = require_node()
    env = {"PATH": "/usr/bin:/bin", "LANG": locale, "LC_ALL": locale}
    out = subprocess.run(
        [node, "-e", _SORT_JS], input=json.dumps(names), capture_output=True, text=True, env=env, check=True
    ).stdout
    data = json.loads(out)
    return data["sorted"], data["ties"]


def assert_same_order(ours: list[str], theirs: list[str], ties: list[bool]) -> None:
    """Equal except inside runs `localeCompare` calls equal (their order there is unspecified)."""
    groups, current = [], [theirs[0]]
    for name, tie in zip(theirs[1:], ties, strict=True):
        if tie:
            current.append(name)
        else:
            groups.append(current)
            current = [name]
    groups.append(current)
    position = 0
    for group in groups:
        assert sorted(ours[position : position + len(group)]) == sorted(group), (
            f"order differs at {position}: ours {ours[position : position + 3]!r}, node {group[:3]!r}"
        )
        position += len(group)


@pytest.mark.npm
@pytest.mark.parametrize("seed", [1, 2])
def test_the_order_matches_node_localecompare_on_a_large_generated_table(seed: int) -> None:
    names = generated_names(seed, 6000, ASCII * 3 + LATIN + COMBINING + OTHER)
    theirs, ties = node_order(names)
    assert_same_order(sorted_paths(names), theirs, ties)


@pytest.mark.npm
def test_ascii_names_match_node_exactly_and_need_no_collation_table() -> None:
    names = generated_names(3, 4000, ASCII)
    theirs, ties = node_order(names)
    ours = sorted_paths(names)
    assert_same_order(ours, theirs, ties)
    assert ours == sorted(names, key=lambda n: (_collator()(n), n))  # the fast path is the same order


def test_the_order_is_the_same_under_every_locale_of_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["SKILL.md", "ä.md", "z.md", "a.md", "Z.md", "é.md", "f.md", "ch.md", "d.md"]
    expected = sorted_paths(names)
    for locale in ("C", "sv_SE.UTF-8", "tr_TR.UTF-8", "de_DE.UTF-8"):
        monkeypatch.setenv("LC_ALL", locale)
        assert sorted_paths(names) == expected
    assert expected == ["a.md", "ä.md", "ch.md", "d.md", "é.md", "f.md", "SKILL.md", "z.md", "Z.md"]


def test_the_documented_ascii_rules() -> None:
    # Punctuation before digits before letters; case only breaks ties; '_' before '-' before '/'.
    assert sorted_paths(["b", "B", "a", "A", "1", "_", "-", "/", ".", "~", "$"]) == [
        "_", "-", ".", "/", "~", "$", "1", "a", "A", "b", "B",
    ]  # fmt: skip
    assert sorted_paths(["SKILL.md", "references/notes.md", "assets/x.png", "scripts/run.sh"]) == [
        "assets/x.png", "references/notes.md", "scripts/run.sh", "SKILL.md",
    ]  # fmt: skip
    assert _ascii_key("a\x01b") < _ascii_key("ab")  # control characters are ignored, then code points decide
