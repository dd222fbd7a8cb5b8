"""The packaged model made to compute in int8, once per machine and package version.

The packaged `model.onnx` stores int8 weights but casts them to float32 when it loads: every matrix
product runs in float32. Here its weights are read back as float32 (each int8 tensor times its
per-channel scale) and onnxruntime's dynamic quantization writes the same weights, per channel, as
int8 products (MatMulInteger: activations quantized as each run goes). That takes a few seconds,
so the result is kept in a cache folder named after the package's version and RECIPE: a new
version of the package, or of the recipe, makes it again (docs/adr/0073).

The model is made in a child process: reading and rewriting the weights takes about 600 MB for a
moment and would leave a serving process some 150 MB larger for good. onnx and onnxruntime's
quantization tools are imported there only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from kbkit.errors import SemanticUnavailable

RECIPE = "int8-compute-1"
"""Names how the int8 model is made: part of the cache folder and of the vectors' model key."""


def cache_root() -> Path:
    """Where derived models are kept: `$XDG_CACHE_HOME/kbkit/models`, else `~/.cache/kbkit/models`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbkit" / "models"


def int8_model(source: Path, name: str, cache: Path | None = None) -> Path:
    """The int8-compute model of `source`, kept as `cache/name/model.onnx`; made when missing.
    `name` carries the package version, so another version makes its own. Raises
    SemanticUnavailable, saying why, when it cannot be made or kept."""
    target = (cache or cache_root()) / name / "model.onnx"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(prefix=".model-", suffix=".onnx", dir=target.parent)
        os.close(handle)
    except OSError as exc:
        raise SemanticUnavailable(
            f"the int8 model cannot be kept in {target.parent} ({exc.strerror or exc}); "
            "make that folder writable, or set XDG_CACHE_HOME to one that is"
        ) from None
    try:
        _quantize(source, Path(scratch))
        os.replace(scratch, target)  # whole or not at all, whichever process finishes first
    except SemanticUnavailable:
        raise
    except Exception as exc:  # onnx and the quantizer raise their own kinds; all mean "not made"
        said = " ".join(str(exc).split())[:300]  # one line, however the library words it
        raise SemanticUnavailable(f"the int8 model cannot be made from {source} ({said})") from None
    finally:
        Path(scratch).unlink(missing_ok=True)
    return target


MAKE_SECONDS = 600
"""How long the child making the model may take (a few seconds on a 2-core machine)."""


def _quantize(source: Path, target: Path) -> None:
    """`make` in a child process of this Python, started in the cache folder with `-P`, so no
    module of the working folder (a checkout's `onnx.py`) is imported in its place. Raises with
    the child's last line when it fails."""
    here = str(Path(__file__).resolve().parents[3])  # the folder kbkit is imported from
    path = os.pathsep.join(part for part in (here, os.environ.get("PYTHONPATH", "")) if part)
    code = (
        "import sys\nfrom kbkit.kb.semantic.quantized import make\n"
        "try:\n    make(sys.argv[1], sys.argv[2])\n"
        "except Exception as exc:\n    sys.exit(' '.join(str(exc).split()) or type(exc).__name__)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-c", code, str(source), str(target)],
            cwd=target.parent,
            env={**os.environ, "PYTHONPATH": path},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=MAKE_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"not done in {MAKE_SECONDS} s") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit status {done.returncode}")


def make(source: str, target: str) -> None:
    """What the child runs: the packaged weights read back as float32, written as int8 products."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(source)
    _dequantize_weights(model)
    quantize_dynamic(
        model, target, per_channel=True, weight_type=QuantType.QInt8, extra_options={"MatMulConstBOnly": True}
    )


def _dequantize_weights(model: Any) -> None:
    """Fold each `Cast(int8 weight) * scale` of the graph into one float32 weight, in place, so the
    quantizer sees plain float products to rewrite."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    graph = model.graph
    weights = {item.name: item for item in graph.initializer}
    users: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    folded: dict[str, Any] = {}
    spent: set[str] = set()
    dropped: set[int] = set()
    for node in graph.node:
        source = weights.get(node.input[0]) if node.op_type == "Cast" else None
        if source is None or source.data_type != TensorProto.INT8:
            continue
        after = users.get(node.output[0], [])
        if len(after) != 1 or after[0].op_type != "Mul":
            continue
        mul = after[0]
        scale = weights.get(next(name for name in mul.input if name != node.output[0]))
        if scale is None:
            continue
        value = numpy_helper.to_array(source).astype(np.float32) * numpy_helper.to_array(scale)
        folded[mul.output[0]] = numpy_helper.from_array(value.astype(np.float32), mul.output[0])
        spent.update({source.name, scale.name})
        dropped.update({id(node), id(mul)})
    if not folded:
        raise SemanticUnavailable("its weights are not int8 with a scale, as the packaged model's are")
    kept_nodes = [node for node in graph.node if id(node) not in dropped]
    kept_weights = [item for item in graph.initializer if item.name not in spent]
    del graph.node[:]
    graph.node.extend(kept_nodes)
    del graph.initializer[:]
    graph.initializer.extend([*kept_weights, *folded.values()])
