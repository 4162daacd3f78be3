"""Optional parts: a missing extra is one line naming what to install."""

from __future__ import annotations

import importlib.util

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
