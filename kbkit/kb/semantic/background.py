"""`Hybrid`: hybrid search for one knowledge base. The model is loaded on first use; embedding
passes run in the foreground for `kbkit index`, or on a background thread while serving, woken
after each scan.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kbkit.errors import KbkitError
from kbkit.kb.semantic.dense import DenseIndex
from kbkit.kb.semantic.embedding import EmbedReport, ProgressFn, embed_pending
from kbkit.kb.semantic.encoder import Encoder
from kbkit.kb.semantic.model import ModelFiles
from kbkit.kb.semantic.status import finished_line, progress_lines
from kbkit.kb.store import Store


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
        """How far a pass has got, logged (`status.progress_lines`) when there is a log."""
        return None if self._log is None else progress_lines(self._log)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
