"""The lexical peers kbkit's ranking is compared with, on the same documents and questions.

Each peer is built from `(key, title, text)` triples and answers `rank(query, k)` with keys, best
first. Both are used as their documentation shows for English text: bm25s with its English
stop words and the Snowball stemmer (PyStemmer), tantivy with its `en_stem` tokenizer over a
title and a body field, the query given as plain words (punctuation dropped, since tantivy's
query parser has a syntax of its own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

_WORD = re.compile(r"\w+", re.UNICODE)


class Peer(Protocol):
    name: str

    def rank(self, query: str, k: int) -> list[str]: ...


class Bm25sPeer:
    name = "bm25s"

    def __init__(self, docs: Iterable[tuple[str, str, str]]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        items = list(docs)
        self._keys = [key for key, _, _ in items]
        corpus = [f"{title}\n{text}" for _, title, text in items]
        tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self._stemmer, show_progress=False)
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    def rank(self, query: str, k: int) -> list[str]:
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self._keys))
        results, scores = self._retriever.retrieve(tokens, k=k, show_progress=False)
        return [self._keys[i] for i, score in zip(results[0], scores[0], strict=True) if score > 0]


class TantivyPeer:
    name = "tantivy"

    def __init__(self, docs: Iterable[tuple[str, str, str]]) -> None:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("key", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", stored=False, tokenizer_name="en_stem")
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self._index = tantivy.Index(builder.build())
        writer = self._index.writer(heap_size=128_000_000, num_threads=1)
        for key, title, text in docs:
            writer.add_document(tantivy.Document(key=key, title=title, body=text))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._searcher = self._index.searcher()

    def rank(self, query: str, k: int) -> list[str]:
        words = " ".join(_WORD.findall(query.lower()))
        if not words:
            return []
        parsed = self._index.parse_query(words, ["title", "body"])
        hits = self._searcher.search(parsed, k).hits
        return [self._searcher.doc(address)["key"][0] for _, address in hits]


PeerType = type[Bm25sPeer] | type[TantivyPeer]


def available_peers() -> dict[str, PeerType]:
    """The peers whose packages are installed (`pip install -e ".[bench]"`)."""
    found: dict[str, PeerType] = {}
    peers: tuple[tuple[PeerType, str], ...] = ((Bm25sPeer, "bm25s"), (TantivyPeer, "tantivy"))
    for peer, module in peers:
        try:
            __import__(module)
        except ImportError:
            continue
        found[peer.name] = peer
    return found
