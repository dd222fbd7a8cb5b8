"""The path order of the shared hash, checked against the real `localeCompare` of the Node that
`npx skills` runs on, over a large generated table of names, and against a hand-written UCA order
in child processes under each locale of the machine."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from kbkit.skills.collation import _ascii_key, _collator, sorted_paths
from tests.helpers.skills import require_node

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


NAMES_UCA_ORDERS_APART = [
    "_x.md", "-x.md", "10.md", "9.md", "a.md", "A.md", "ä.md", "Ä.md", "B.md", "ch.md", "e.md", "é.md",
    "f.md", "references/notes.md", "SKILL.md", "x.md", "z.md", "Z.md",
]  # fmt: skip
"""In UCA order (root collation, docs/adr/0014), written out by hand: punctuation before digits before
letters, digits one by one, accents after the plain letter and case after accents, upper after
lower. Code points would put `-` before digits, upper case before lower, `_` after `Z`, accented
letters after `z`."""

_CHILD = """
import json, locale, sys
locale.setlocale(locale.LC_ALL, "")  # take the locale from the environment, as any program does
from kbkit.skills.collation import sorted_paths
names = json.loads(sys.stdin.read())
print(json.dumps({
    "collate": locale.setlocale(locale.LC_COLLATE),
    "ours": sorted_paths(names),
    "locale's own": sorted(names, key=locale.strxfrm),
}))
"""


def machine_locales() -> list[str]:
    """Every locale `locale -a` lists (C.UTF-8 at least, which every glibc has)."""
    listed = subprocess.run(["locale", "-a"], capture_output=True, text=True, check=False).stdout.split()
    return list(dict.fromkeys(["C.UTF-8", *listed]))


def order_in_a_child(names: list[str], locale: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE")}
    env.update(LANG=locale, LC_ALL=locale)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(names), capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_expected_order_is_not_code_point_order() -> None:
    assert sorted(NAMES_UCA_ORDERS_APART) != NAMES_UCA_ORDERS_APART


@pytest.mark.processes
def test_the_order_is_the_same_under_every_locale_of_the_machine() -> None:
    names = list(reversed(NAMES_UCA_ORDERS_APART))
    seen = {}
    for locale in machine_locales():
        child = order_in_a_child(names, locale)
        assert child["ours"] == NAMES_UCA_ORDERS_APART, f"under {locale}"
        seen[locale] = child["collate"]
    assert "C.UTF-8" in seen, seen
    # The children did run under their locale: C collates by code point, and the hash does not.
    c_locale = order_in_a_child(names, "C")
    assert c_locale["collate"] == "C" and c_locale["locale's own"] == sorted(names)


def test_the_documented_ascii_rules() -> None:
    # Punctuation before digits before letters; case only breaks ties; '_' before '-' before '/'.
    assert sorted_paths(["b", "B", "a", "A", "1", "_", "-", "/", ".", "~", "$"]) == [
        "_", "-", ".", "/", "~", "$", "1", "a", "A", "b", "B",
    ]  # fmt: skip
    assert sorted_paths(["SKILL.md", "references/notes.md", "assets/x.png", "scripts/run.sh"]) == [
        "assets/x.png", "references/notes.md", "scripts/run.sh", "SKILL.md",
    ]  # fmt: skip
    assert _ascii_key("a\x01b") < _ascii_key("ab")  # control characters are ignored, then code points decide
