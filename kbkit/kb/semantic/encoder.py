"""The embedding model run by onnxruntime (no torch): token ids in, unit vectors out.

numpy, onnxruntime and tokenizers are imported only inside `Encoder`, so a kbkit without the
`semantic` extra, or with `semantic = false`, never loads them.
"""

from __future__ import annotations

from typing import Any

from kbkit.errors import SemanticUnavailable
from kbkit.kb.semantic.chunks import CHUNK_TOKENS, Chunk, Chunker, Section, stored_model
from kbkit.kb.semantic.model import ModelFiles
from kbkit.kb.semantic.quantized import int8_model

RUN_TOKENS = 512
"""Tokens per model run, padding included: a run is up to this many chunks' worth of similar-length
chunks (4 full chunks, more short ones). Small runs cost less CPU per chunk than large ones on a
2-core machine and bound the model's working memory (docs/benchmarks.md)."""


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
        self.onnx = int8_model(files.onnx, files.int8_as) if files.int8_as else files.onnx
        """The file the model runs from: the int8-compute one when the model is the packaged default."""
        try:
            self._session = ort.InferenceSession(
                str(self.onnx), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own kinds for a bad file; all mean "unusable"
            raise SemanticUnavailable(f"the model {self.onnx} cannot be loaded ({exc})") from None
        self._inputs = {item.name for item in self._session.get_inputs()}
        specials = tokenizer.encode("").ids  # [CLS] [SEP] for BERT: what encode() wraps a text in
        self._prefix: tuple[int, ...] = tuple(specials[:1])
        self._suffix: tuple[int, ...] = tuple(specials[1:])
        self._chunker = Chunker(tokenizer, self._prefix, self._suffix)
        self.model_key = stored_model(files.identity)
        """Stored with every vector: vectors of another model, or of another TEXT_VIEW, are recomputed."""
        self.runs = 0
        """Model runs so far, and the rows (chunks or queries) they embedded."""
        self.rows = 0
        self.dimensions = int(self._run([(*self._prefix, *self._suffix)]).shape[1])
        self.runs = self.rows = 0

    def chunks(self, title: str, body: str, sections: list[Section] | None = None) -> list[Chunk]:
        """The pieces embedded for a document (`Chunker.chunks`), tokenized by this model's tokenizer."""
        return self._chunker.chunks(title, body, sections)

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
