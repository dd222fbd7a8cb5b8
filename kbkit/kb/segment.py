"""Words for the scripts written without spaces between them, as the index and the query see them.

FTS5's unicode61 tokenizer cuts text at spaces and punctuation: a run of Han or kana characters
(`部署指南`), a Thai sentence or a Korean word with its particle (`파일을`) is one token, found only
by a query repeating it whole. So beside each field the index holds that field's *segmented*
words (kbkit/kb/fields.py, kbkit/kb/passages.py: the `*_seg` columns), and a query's words in
those scripts become the same pieces (kbkit/kb/search/query.py):

- Han and kana (Chinese, Japanese): overlapping bigrams of each run, a lone character as itself
  (Lucene's CJKAnalyzer); `部署` then finds `部署指南`.
- Hangul (Korean): the same bigrams, so `파일` finds `파일을` whatever particle follows; a
  Korean query word is searched as a phrase of the bigrams of its stem, the particle or ending
  dropped (`korean_stem`: `파일을` -> 파일, `설정에서` -> 설정), so it finds `파일이` and `설정의`
  too. The index needs nothing more: a stem's bigrams are among its word's.
- Thai, Lao, Khmer and Myanmar: overlapping bigrams of characters, combining marks kept with the
  letter they sit on (the tokenizer keeps them: `token_chars`).
- Latin letters or digits glued to such a run (`使用kubectl部署`) as words of their own.

The text served (snippets, passages, get_document) is the original: only tokens are added.
docs/adr/0053 has the measurements behind bigrams over the dictionary segmenters, 0072 those
behind the Korean stem over a morphological analyzer.
"""

from __future__ import annotations

import functools
import operator
import re
import unicodedata
from collections.abc import Iterator

_HAN_KANA = (
    "\u3005\u3007\u3021-\u3029\u3038-\u303b\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
_SOUTHEAST = "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"
"""Thai, Lao, Myanmar, Khmer: written without spaces between words."""
_UNSPACED = _HAN_KANA + _HANGUL + _SOUTHEAST
_PIECES = re.compile(
    f"(?P<cjk>[{_HAN_KANA}]+)|(?P<hangul>[{_HANGUL}]+)|(?P<sea>[{_SOUTHEAST}]+)|(?P<word>[^\\W_{_UNSPACED}]+)"
)
_ANY = re.compile(f"[{_UNSPACED}]")
SPACED_LETTER = f"[^\\W{_UNSPACED}]"
"""A word character of the spaced scripts: where a marked Latin word starts and ends."""

MAX_SEGMENTED_CHARS = 8 * 1024 * 1024
"""At most this many characters of segmented words are made from one field (the text is already at
most fields.INDEX_TEXT_CAP bytes: a 4 MiB run of Han characters gives about 5.6 M characters)."""

_GENERIC_MARKS = ((0x300, 0x36F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0xFE20, 0xFE2F))
_KANA_MARKS = (0x3099, 0x309A)


@functools.cache
def token_chars() -> str:
    """The combining marks of the scripts that need them (Thai vowels and tone marks, Devanagari
    vowel signs...): unicode61 would cut a word at each. Latin's combining accents stay out, so
    `remove_diacritics` still folds `café` and `cafe` together."""
    out = []
    for code in range(0x10000):
        if any(low <= code <= high for low, high in _GENERIC_MARKS) or code in _KANA_MARKS:
            continue
        char = chr(code)
        if unicodedata.category(char) in ("Mn", "Mc", "Me") and char not in "'\"":
            out.append(char)
    return "".join(out)


def tokenizer() -> str:
    """The FTS5 tokenize option of every full-text table."""
    return f"porter unicode61 remove_diacritics 2 tokenchars '{token_chars()}'"


def has_unspaced(text: str) -> bool:
    """Whether `text` holds any character of the scripts segmented here (one C-level scan)."""
    return _ANY.search(text) is not None


@functools.cache
def word_pattern() -> re.Pattern[str]:
    """A query word: word characters and the combining marks `token_chars` keeps (Python's `\\w`
    leaves out Thai vowel and tone marks, which would cut a Thai word in pieces)."""
    return re.compile(f"[\\w{_SOUTHEAST}{token_chars()}]+")


@functools.cache
def _clusters() -> re.Pattern[str]:
    return re.compile(f"[^{token_chars()}][{token_chars()}]*|[{token_chars()}]+")


def bigrams(run: str, *, clustered: bool = False) -> list[str]:
    """Lucene CJKAnalyzer's pieces: the overlapping bigrams of `run`, or the lone character. With
    `clustered` (Thai and its neighbours), of letters with their marks, not of code points."""
    units: str | list[str] = _clusters().findall(run) if clustered else run
    if len(units) == 1:
        return [units[0]]
    return list(map(operator.add, units[:-1], units[1:]))  # C-level: a megabyte run in ~0.1 s


def split_run(run: str, kind: str) -> list[str]:
    """The pieces of one run of unspaced script (`kind`: cjk, hangul or sea): its bigrams."""
    return bigrams(run, clustered=kind == "sea")


def segmented(text: str) -> str:
    """The extra words the index holds for `text` ("" when it has no unspaced script): see the
    module docstring. At most about MAX_SEGMENTED_CHARS characters."""
    if not text or not has_unspaced(text):
        return ""
    out: list[str] = []
    size = 0
    previous_end, previous_unspaced = -1, False
    pending_word: str | None = None
    for match in _PIECES.finditer(text):
        kind = match.lastgroup or ""
        glued = match.start() == previous_end
        if kind == "word":
            # A Latin word counts only when glued to an unspaced run: a spaced one is a token already.
            pending_word = None if glued and previous_unspaced else match.group()
            if glued and previous_unspaced:
                out.append(match.group())
                size += len(match.group()) + 1
            previous_unspaced = False
        else:
            if glued and pending_word is not None:
                out.append(pending_word)
                size += len(pending_word) + 1
            pending_word = None
            pieces = " ".join(split_run(match.group()[:MAX_SEGMENTED_CHARS], kind))
            out.append(pieces[: max(0, MAX_SEGMENTED_CHARS - size)])
            size += len(pieces) + 1
            previous_unspaced = True
        previous_end = match.end()
        if size > MAX_SEGMENTED_CHARS:
            break
    return " ".join(out)


KOREAN_ENDINGS: tuple[str, ...] = tuple(
    sorted(
        "을 를 이 가 은 는 에 에서 의 로 으로 와 과 도 만 까지 부터 에게 한테 께 처럼 보다 이나 나 랑 이랑 "
        "라는 이라는 으로서 로서 으로써 로써 에게서 마다 조차 밖에 뿐 하고 이며 며 인 할 한 된 될 하는 하여 "
        "해서 합니다 입니다 하기 기 하려면 려면 으려면".split(),
        key=len,
        reverse=True,
    )
)
"""Korean particles and the endings questions put on a word (`파일을`, `설정에서`, `포맷하기`),
longest first. A list, not a morphological analyzer: on Korean questions whose words carry
particles it finds the page as often as one (docs/adr/0072)."""
MIN_KOREAN_STEM = 2
"""At least this many syllables stay: `추가` and `결과` end in a particle's letter but are whole words."""


def korean_stem(word: str) -> str:
    """`word` without the particle or ending it ends with (KOREAN_ENDINGS): `파일을` -> 파일."""
    for ending in KOREAN_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_KOREAN_STEM:
            return word[: -len(ending)]
    return word


PHRASE_KINDS: frozenset[str] = frozenset(("hangul",))
"""The kinds of run a query searches as one phrase of its pieces, not piece by piece: Hangul, since
Korean is written with spaces and a run is one word (the stem of `클래스를` must be found whole,
not as 클래 and 래스 apart). A run of Han, kana or Thai may be a whole question typed without
spaces, which a phrase would ask for verbatim: those are searched piece by piece (docs/adr/0053
has both measured)."""
MAX_QUERY_RUN = 4096
"""At most this many characters of one run of unspaced script in a query are cut into pieces (a
query searches at most search.MAX_TERMS of them anyway)."""


def query_pieces(word: str) -> Iterator[tuple[str, bool]]:
    """The pieces of one query word (a `\\w+` run), each with whether it is a segmented piece:
    a word without unspaced script is itself; `使用kubectl部署` gives itself (a field holding
    it whole matches it as before), 使用, kubectl and 部署; `파일을` itself and its stem's bigrams
    as a phrase (a stem of two syllables is one bigram: 파일)."""
    yield word, False
    if not has_unspaced(word):
        return
    for match in _PIECES.finditer(word):
        if match.lastgroup == "word":
            yield match.group(), False
        else:
            kind = match.lastgroup or ""
            run = match.group()[:MAX_QUERY_RUN]
            pieces = split_run(korean_stem(run) if kind == "hangul" else run, kind)
            if kind in PHRASE_KINDS and len(pieces) > 1:
                yield " ".join(pieces), True  # searched as a phrase: the pieces side by side
            else:
                for piece in pieces:
                    yield piece, True


def unspaced_runs(text: str) -> Iterator[str]:
    """The runs of unspaced script in `text`, for marking a snippet's whole match first."""
    for match in _PIECES.finditer(text):
        if match.lastgroup != "word":
            yield match.group()
