"""Translations of one page, told apart by path, and the language a query is written in.

A documentation site in several languages keeps one copy of each page per language, laid out the
way its generator wants: a folder per language (MkDocs' i18n layout, `docs/ja/docs/tutorial/cors.md`;
Docusaurus' `i18n/ja/...`), the default language's copy outside them (VitePress' root locale,
`guide/cors.md` beside `es/guide/cors.md`), or a suffix before the extension (mkdocs-static-i18n,
`cors.ja.md` beside the default language's `cors.md`). Copies of one page match the same code
and names, so they crowd a result list; search keeps one, in the query's language when the site
has it (docs/adr/0056). Which language a query is written in is told by the kb's own copies
(`spoken`): the languages whose copies among the candidates hold its words (docs/adr/0068).
"""

from __future__ import annotations

import re
import sqlite3
import weakref
from dataclasses import dataclass

from kbkit.kb.fields import COLUMNS
from kbkit.kb.search.ranking import Ranked
from kbkit.kb.store import Store

ISO_639_1 = frozenset(
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy "
    "da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu "
    "hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb "
    "lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om "
    "or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw "
    "ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu".split()
)
"""Two-letter language codes: a folder or suffix named so (with an optional region or script,
`pt-br`, `zh-hant`, `zh_TW`) is taken as a language."""
_TAG = re.compile(r"([a-z]{2})(?:[-_][A-Za-z]{2,4})?")
_SUFFIXED = re.compile(r"^(.+)\.([a-z]{2}(?:[-_][A-Za-z]{2,4})?)(\.[A-Za-z0-9]{1,10})$")
DEFAULT = ""
"""The language of a page without a language suffix beside suffixed copies (mkdocs-static-i18n's
default language), or of a page in no language folder."""

SCRIPTS: tuple[tuple[str, frozenset[str]], ...] = (
    ("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]", frozenset({"ja"})),
    ("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]", frozenset({"ko"})),
    ("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]", frozenset({"zh", "ja"})),
    ("[\u0400-\u04ff]", frozenset({"ru", "uk", "be", "bg", "sr", "mk", "kk", "ky", "mn", "tg", "tt"})),
    ("[\u0600-\u06ff]", frozenset({"ar", "fa", "ur", "ps", "ku", "sd", "ug"})),
    ("[\u0590-\u05ff]", frozenset({"he", "yi"})),
    ("[\u0370-\u03ff]", frozenset({"el"})),
    ("[\u0900-\u097f]", frozenset({"hi", "mr", "ne", "sa"})),
    ("[\u0e00-\u0e7f]", frozenset({"th"})),
)
"""A script in the query -> the languages written in it, checked in this order (kana before Han:
a query with kana is Japanese, Han alone may be Chinese or Japanese)."""
_SCRIPTS = tuple((re.compile(pattern), languages) for pattern, languages in SCRIPTS)


@dataclass(frozen=True)
class Copy:
    """Where a path sits among its translations."""

    page: str
    """The path with its language left out (its language folder or suffix): the same for every
    translation of the page, and the path of a default language's copy that has neither
    (`es/guide/a.md` and `guide/a.md`: `guide/a.md`)."""
    language: str
    """Its language tag in lower case (`ja`, `zh-hant`), or DEFAULT."""


def is_language(tag: str) -> bool:
    match = _TAG.fullmatch(tag)
    return match is not None and match.group(1) in ISO_639_1


def copy_of(path: str) -> Copy | None:
    """The page and language of `path` when its folders or file name name a language, else None.
    The first folder named as a language is the copy's language (`docs/ja/docs/x.md`)."""
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):
        if is_language(part):
            return Copy("/".join([*parts[:index], *parts[index + 1 :]]), part.lower().replace("_", "-"))
    suffixed = _SUFFIXED.match(parts[-1])
    if suffixed and is_language(suffixed.group(2)):
        name = suffixed.group(1) + suffixed.group(3)
        return Copy("/".join([*parts[:-1], name]), suffixed.group(2).lower().replace("_", "-"))
    return None


FUNCTION_WORDS = {
    "es": frozenset("el la los las un una unos del al con para por desde y en como cómo que mi".split()),
    "pt": frozenset("o os um uma do da dos das ao com para por em no na e como que meu".split()),
    "fr": frozenset("le les un une des du au aux avec pour par dans et comme comment que mon".split()),
    "de": frozenset("der die das den dem ein eine einen mit für und im zum zur wie von mein".split()),
    "it": frozenset("il lo gli le un una del della con per da nel e come che mio".split()),
    "tr": frozenset("bir ile için ve nasıl bu da de".split()),
}
"""Words that mark a Latin-script query as written in a language other than the default; a
query with none of them (or as many of two languages') is taken as the default language's."""
DEFAULT_LANGUAGES = frozenset({DEFAULT, "en"})
"""The copies a query in no other language prefers: the unsuffixed one, else English."""


def script_languages(query: str) -> frozenset[str] | None:
    """The languages written in the first script of SCRIPTS that `query` holds; None for a query
    in the Latin script alone (or in none of these)."""
    for pattern, languages in _SCRIPTS:
        if pattern.search(query):
            return languages
    return None


WORDLIKE_SCRIPTS = 3
"""SCRIPTS[:3] (kana, Hangul, Han) write a syllable or a word a character: each counts as this
many letters of an alphabet when `mostly_written_in` weighs a query's scripts."""


def mostly_written_in(query: str) -> frozenset[str] | None:
    """The languages of the script of SCRIPTS most of `query` is written in; None when most of it
    is in the Latin script. A Greek letter in an English claim (`IL-1β`, `NF-κB`) or one Chinese
    word in an English question leaves it English; `用WebSocket实现实时聊天` is Chinese."""
    counts = [len(pattern.findall(query)) for pattern, _ in _SCRIPTS]
    latin = sum(char.isalpha() for char in query) - sum(counts)
    weights = [count * (WORDLIKE_SCRIPTS if index < 3 else 1) for index, count in enumerate(counts)]
    weight = max(weights)
    languages = _SCRIPTS[weights.index(weight)][1]
    return languages if weight and weight >= latin else None


def query_languages(query: str) -> frozenset[str]:
    """The languages `query` may be written in: from its script (Japanese for kana, Korean for
    Hangul, Chinese or Japanese for Han alone, ...), and for the Latin script from its function
    words (FUNCTION_WORDS), else the default language (DEFAULT_LANGUAGES)."""
    written = script_languages(query)
    if written is not None:
        return written
    words = set(query.lower().split())
    counts = {language: len(words & marks) for language, marks in FUNCTION_WORDS.items()}
    best = max(counts.values())
    found = [language for language, count in counts.items() if count == best]
    return frozenset(found) if best and len(found) == 1 else DEFAULT_LANGUAGES


PROSE_COLUMNS = tuple(name for name in COLUMNS if name != "name")
"""Where a copy's words are looked for when telling a query's language: not its file name, which
every translation of a page shares."""


@dataclass(frozen=True)
class Written:
    """The languages a query is written in, as far as they can be told."""

    languages: frozenset[str]
    """Language codes or tags (`zh-hant`); `speaks` matches a copy's tag against them."""
    tied: bool = False
    """Copies in each of these languages hold the query's words alike (`modo MPA`: Spanish and
    Portuguese): either may be meant, so `fold` keeps a copy in each."""


def spoken(conn: sqlite3.Connection, query: str, terms: tuple[str, ...], ranked: list[Ranked]) -> Written:
    """The languages `query` is written in, told by the kb's own copies among the candidates
    (`ranked`: copies by folder or suffix, the rest DEFAULT), in the languages its script allows
    (script_languages; any for the Latin script): each of its `terms` counts for the languages
    whose candidates hold it, a word every such language holds for none, a word one language
    alone holds the most (1 / the languages holding it). The languages counted most win
    ("personalizar color del nombre hero": the Spanish copies hold `personalizar` and `nombre`,
    the English ones neither; "实现实时聊天": the simplified Chinese copies, not the traditional or
    Japanese ones). Where the words tell nothing, the script's languages, or for the Latin script
    the function words, else DEFAULT_LANGUAGES (query_languages), decide as they did; of tied
    winners, those these name. One full-text lookup a term, only when the candidates are copies
    in two of the allowed languages."""
    written = script_languages(query)
    fallback = query_languages(query)
    language = {hit.doc_id: (copy_of(hit.path) or Copy(hit.path, DEFAULT)).language for hit in ranked}
    present = {name for name in language.values() if written is None or speaks(name, written)}
    if len(present) < 2 or not terms:
        return Written(fallback)
    columns = " ".join(PROSE_COLUMNS)
    counts = dict.fromkeys(present, 0.0)
    for term in terms:
        quoted = term.replace('"', '""')
        rows = conn.execute(
            "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?", (f'{{{columns}}} : "{quoted}"',)
        )
        holding = {language[doc_id] for (doc_id,) in rows if doc_id in language} & present
        if holding and holding != present:
            for name in holding:
                counts[name] += 1 / len(holding)
    best = max(counts.values())
    if best == 0:
        return Written(fallback)
    winners = frozenset(name for name, count in counts.items() if count == best)
    named = frozenset(name for name in winners if name in fallback) or winners
    return Written(named, tied=len(named) > 1)


def speaks(language: str, languages: frozenset[str]) -> bool:
    """Whether a copy in `language` (a tag, `zh-hant`) is in one of `languages` (codes or tags)."""
    return language in languages or language.split("-")[0] in languages


def fold(ranked: list[Ranked], written: Written) -> tuple[list[Ranked], dict[int, list[str]]]:
    """Keep one copy of each translated page, at the rank of its best-ranked copy: the
    best-ranked copy in the query's languages (`spoken`), else the best-ranked one. When those
    languages tie (`Written.tied`), the best-ranked copy in each of them is kept, the first at the
    page's rank, the others at their own. Returns the kept hits, in order, and for each the
    languages of the copies left out."""
    copies = {hit.doc_id: copy_of(hit.path) or Copy(hit.path, DEFAULT) for hit in ranked}
    groups: dict[str, list[Ranked]] = {}
    for hit in ranked:
        groups.setdefault(copies[hit.doc_id].page, []).append(hit)
    kept: list[Ranked] = []
    others: dict[int, list[str]] = {}
    for hit in ranked:
        group = groups[copies[hit.doc_id].page]
        if len(group) < 2:
            kept.append(hit)
            continue
        each: dict[str, Ranked] = {}
        for copy in group:
            if speaks(_language(copies, copy), written.languages):
                each.setdefault(_language(copies, copy) if written.tied else "", copy)
        chosen = list(each.values()) or [group[0]]
        if group[0] is hit:
            kept.append(chosen[0].rescored(hit.score))
            others[chosen[0].doc_id] = sorted(
                _language(copies, copy) or "default" for copy in group if copy not in chosen
            )
        elif hit in chosen[1:]:
            kept.append(hit)
    return kept, others


def _language(copies: dict[int, Copy], hit: Ranked) -> str:
    return copies[hit.doc_id].language


_COPIES: weakref.WeakKeyDictionary[Store, tuple[int, bool]] = weakref.WeakKeyDictionary()


def has_copies(store: Store) -> bool:
    """Whether any document of the index is a copy (`copy_of`): one read of the paths each time
    another connection has written to it, not one a search."""
    version = store.data_version()
    known = _COPIES.get(store)
    if known is None or known[0] != version:
        paths = store.reader().execute("SELECT path FROM documents").fetchall()
        known = _COPIES[store] = (version, any(copy_of(path) for (path,) in paths))
    return known[1]


def other_languages(
    conn: sqlite3.Connection, hits: list[Ranked], limit: int, *, translated: bool = False
) -> dict[int, list[str]]:
    """doc_id -> the languages of the indexed translations of each of the first `limit` hits that
    is a copy (copy_of), whether or not they matched the query: one scan of the paths, made only
    when a hit is a copy. When the kb is `translated` (`has_copies`), a hit in no language's
    folder is looked up too: the default language's copy on a site that keeps it outside them
    (`guide/a.md` beside `es/guide/a.md`)."""
    wanted: dict[str, int] = {}
    for hit in hits[:limit]:
        found = copy_of(hit.path) or (Copy(hit.path, DEFAULT) if translated else None)
        if found is not None:
            wanted[found.page] = hit.doc_id
    if not wanted:
        return {}
    tails = sorted({_tail(page, suffixed) for page in wanted for suffixed in (False, True)})
    sql = "SELECT id, path FROM documents WHERE " + " OR ".join("path GLOB ?" for _ in tails)
    out: dict[int, set[str]] = {}
    for doc_id, path in conn.execute(sql, tails):
        found = copy_of(path) or Copy(path, DEFAULT)  # the unsuffixed copy of `page.ja.md`
        owner = wanted.get(found.page)
        if owner is not None and owner != doc_id:
            out.setdefault(owner, set()).add(found.language or "default")
    return {doc_id: sorted(languages) for doc_id, languages in out.items()}


def _tail(page: str, suffixed: bool) -> str:
    """A GLOB matching paths that end in `page`'s file name (`*/forms.md`), or in it with a
    language suffix (`*/forms.*.md`); GLOB's own characters in the name taken literally."""
    name = "".join(f"[{char}]" if char in "*?[" else char for char in page.rsplit("/", 1)[-1])
    stem, dot, ext = name.rpartition(".")
    return f"*{stem}.*.{ext}" if suffixed and dot else f"*{name}"
