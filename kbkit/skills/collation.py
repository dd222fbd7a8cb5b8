"""The order `npx skills` hashes a folder's files in, made explicit and locale-independent.

`npx skills` sorts relative paths with JavaScript's `a.localeCompare(b)`: ICU collation in the
runtime's default locale. Under an English or POSIX locale (what CI machines and containers run)
that is the CLDR root collation: the Unicode Collation Algorithm, non-ignorable, compared to the
tertiary level. kbkit always uses that order, whatever the machine's locale (docs/adr/0014):

- ASCII, exactly (`_ASCII_ORDER`): control characters are ignored; then tab, newline, vertical
  tab, form feed, carriage return, space; punctuation in the order `_-,;:!?.'"()[]{}@*/\\&#%`^+<=>|~$`;
  digits; then letters alphabetically, with case only as a tie-break after everything else has
  compared equal (`a.md` < `A.md` < `ab.md`).
- Everything else: the Unicode Collation Algorithm over the DUCET (`pyuca`, Unicode 10) with the
  CLDR root's one change that shows in file names: curly and low quotes sort as accented forms of
  `'` and `"`.
- Ties (names ICU calls equal, such as ones differing only in ignored control characters) are
  broken by code point, so the order is total.

Known differences from ICU 78 (Node 24): Han ideographs outside the original Unified block
(U+4E00-U+9FA5) sort by code point, where ICU sorts all Han by radical and stroke; characters
assigned after Unicode 10 sort after every other character. tests/skills/test_collation.py checks
the order against the real `localeCompare` on a generated table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

_ASCII_ORDER = "\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
"""ASCII characters with a primary weight, in ICU root order (letters stand for both cases)."""
_ASCII_PRIMARY = {ch: rank + 1 for rank, ch in enumerate(_ASCII_ORDER)}
_ASCII_PRIMARY.update({ch.upper(): _ASCII_PRIMARY[ch] for ch in "abcdefghijklmnopqrstuvwxyz"})

_QUOTE_TAILORING = {"'": "\u2018\u2019\u201a\u201b\u05f3", '"': "\u201c\u201d\u201e\u201f\u2e42\u05f4"}
"""CLDR root: these quotes share the primary weight of the ASCII quote, told apart at the
secondary level, after any combination of the ASCII quote with combining marks."""
_TAILORED_SECONDARY = 0x1000


def sorted_paths(paths: Iterable[str]) -> list[str]:
    """`paths` in `localeCompare` order (ICU root collation), independent of the machine's locale."""
    items = list(paths)
    if all(path.isascii() for path in items):
        return sorted(items, key=_ascii_key)
    collator = _collator()
    return sorted(items, key=lambda path: (collator(path), path))


def _ascii_key(path: str) -> tuple[tuple[int, ...], tuple[bool, ...], str]:
    """Primary weights, then case (lower before upper), then code points: UCA on ASCII."""
    kept = [ch for ch in path if ch in _ASCII_PRIMARY]
    return tuple(_ASCII_PRIMARY[ch] for ch in kept), tuple(ch.isupper() for ch in kept), path


@functools.cache
def _collator() -> Callable[[str], tuple[int, ...]]:
    """The UCA sort-key function with the CLDR root tailoring; built once, when first needed."""
    from pyuca.collator import Collator_10_0_0  # a quarter of a second to load: only for non-ASCII

    collator = Collator_10_0_0()
    for base, quotes in _QUOTE_TAILORING.items():
        primary = collator.table.find_prefix([ord(base)])[1][0][0]
        for rank, quote in enumerate(quotes, start=1):
            collator.table.add([ord(quote)], [[primary, _TAILORED_SECONDARY + rank, 0x0002]])
    sort_key: Callable[[str], tuple[int, ...]] = collator.sort_key  # pyuca is untyped: a tuple of weights
    return sort_key
