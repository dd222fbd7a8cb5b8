"""User text -> an FTS5 MATCH expression, and the query's words as the naming rules compare them.

`compile_query()` is the one place user text becomes an FTS5 MATCH expression: words are
lower-cased, English stop-words dropped, and each remaining word quoted and OR-joined, so no
input (quotes, operators, parentheses, 10 KB of prose) can be an FTS5 syntax error, and a
natural-language question still ranks the documents sharing most of its words first (BM25).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from kbkit.errors import QueryError
from kbkit.kb import segment
from kbkit.kb.words import split_words

MAX_TERMS = 64
"""At most this many distinct words of a query are searched; the rest are dropped with a note."""

# Lucene's English stop set plus a few question words that carry no topic.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with what which who whom how why when where do does did i you we can "
    "should would could my our your".split()
)
KIND_WORDS = frozenset("class struct structure namespace function functions members enum union".split())
"""Words a reference page's title adds to the name it documents ("list Class", "concurrency
namespace functions"): left out when asking whether a query names a title."""

WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES: tuple[str, ...] = ("ational", "ations", "ation", "ments", "ment", "ings", "ing", "ies", "ied")
_SUFFIXES += ("ers", "er", "ed", "es", "ly", "s", "e", "y")


@dataclass(frozen=True)
class CompiledQuery:
    match: str
    terms: tuple[str, ...]
    dropped_terms: int = 0
    stems: frozenset[str] = frozenset()
    """The query's words as the naming rules compare them (`named`): names split, rough stems."""
    runs: tuple[str, ...] = ()
    """The query's runs of unspaced script (`部署指南`), which a snippet marks whole where it can."""
    keywords: bool = False
    """No stop word: a few keywords (`pretty print json`), not a sentence (fusion.lexical_share)."""


MAX_RUN_CHARS = 64
"""A run of unspaced script longer than this is not looked for whole in snippets (its bigrams are)."""


def compile_query(text: str) -> CompiledQuery:
    """User text -> a MATCH expression that FTS5 always accepts. A word in a script written without
    spaces becomes its pieces (kbkit/kb/segment.py), each a term of its own."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the query is empty; pass a few words describing what you are looking for")
    words = [w.lower() for w in segment.word_pattern().findall(text)]
    if not words:
        raise QueryError("the query has no words to search for (only punctuation); try some words")
    kept = [w for w in words if w not in STOP_WORDS] or words
    unique = list(dict.fromkeys(piece for word in kept for piece, _ in segment.query_pieces(word)))
    terms = unique[:MAX_TERMS]
    match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    runs = dict.fromkeys(run for word in kept for run in segment.unspaced_runs(word))
    runs = {run: None for run in runs if len(run) <= MAX_RUN_CHARS}
    return CompiledQuery(
        match=match,
        terms=tuple(terms),
        dropped_terms=len(unique) - len(terms),
        stems=frozenset(stems(text)),
        runs=tuple(runs)[:MAX_TERMS],
        keywords=len(kept) == len(words),
    )


def stems(text: str) -> Iterator[str]:
    """The words of `text` as the naming rules compare them: names split as words.split_words
    splits them (a camelCase word also kept whole), lower-cased, stop words and KIND_WORDS left
    out, common endings dropped (`rough_stem`)."""
    for word in WORD.findall(split_words(text)):
        word = word.lower()
        if word not in STOP_WORDS and word not in KIND_WORDS:
            yield rough_stem(word)


def rough_stem(term: str) -> str:
    """`term` without a common English ending, so its snippet marks other forms of the word too
    (deploy: deploys, deployed, deployment). Marks only: ranking uses FTS5's Porter stemmer."""
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term
