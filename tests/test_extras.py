"""Optional parts: a missing extra is one line naming what to install."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

from qa_eval.errors import QaEvalError
from qa_eval.extras import MissingExtra, available, require


def test_require_imports_an_installed_module() -> None:
    assert require("json", "anything").dumps([1]) == "[1]"
    assert available("json")


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("jinja2", "report"),
        ("pyoxigraph", "rdf"),
        ("openai", "judge"),
        ("onnxruntime", "embeddings"),
    ],
)
def test_missing_module_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, extra: str
) -> None:
    real = importlib.util.find_spec
    top = module.split(".")[0]
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == top else real(name, *a)
    )
    with pytest.raises(MissingExtra) as caught:
        require(module, "this feature")
    message = str(caught.value)
    assert isinstance(caught.value, QaEvalError)
    assert "\n" not in message
    assert f"pip install 'qa-eval[{extra}]'" in message
    assert message.startswith("this feature needs the optional package")


def test_tokenizer_is_shipped_and_checked() -> None:
    from importlib import resources

    from qa_eval.judge import embeddings

    data = resources.files("qa_eval").joinpath("data", embeddings._TOKENIZER_FILE).read_bytes()
    assert embeddings._checked(data, embeddings.TOKENIZER_SHA256, "tok") == data
    with pytest.raises(embeddings.EmbeddingUnavailable, match="SHA-256"):
        embeddings._checked(data + b" ", embeddings.TOKENIZER_SHA256, "tok")


def test_a_package_not_found_is_searched_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only a package found is remembered: one installed after a "no" is found by the next ask.
    name = "qa_eval_extras_probe_package"
    assert not available(name)
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert available(f"{name}.sub")
    assert available(name)


def test_a_package_found_before_is_asked_again_of_another_finder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The remembered answer holds for the finder that gave it: a stand-in (a test's
    # monkeypatch) or a package blocked in sys.modules is not answered from memory.
    assert available("json")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert not available("json")
    monkeypatch.undo()
    assert available("json")
    monkeypatch.setitem(sys.modules, "json", None)
    assert not available("json")
