"""The judge / metric configuration: the original's documented YAML, qa-eval's own keys, the
environment, and errors that name the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from qa_eval.config import GRAPHRAG_SWITCHES, default_config, load_config, parse_config
from qa_eval.errors import InputError
from qa_eval.judge.settings import AZURE_API_VERSION, EmbeddingConfig, GenerationConfig

SECRET = "sk-test-SECRET-123"
EMBED_SECRET = "sk-embed-SECRET-456"

DOCUMENTED: dict[str, Any] = {
    "llm": {
        "generation": {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "temperature": 0.0,
            "max_tokens": 8192,
            "api_key": SECRET,
        },
        "embedding": {
            "provider": "openai",
            "model": "text-embedding-3-small",
            "api_key": EMBED_SECRET,
        },
    }
}


def test_documented_openai_config() -> None:
    config = parse_config(copy.deepcopy(DOCUMENTED), "config.yaml")
    assert config.generation == GenerationConfig(
        provider="openai",
        model="gpt-4o-mini",
        temperature=0.0,
        max_tokens=8192,
        base_url=None,
        api_key=SECRET,
        api_version=None,
    )
    assert config.embedding == EmbeddingConfig(
        provider="openai",
        model="text-embedding-3-small",
        base_url=None,
        api_key=EMBED_SECRET,
        api_version=None,
    )
    assert config.source == "config.yaml"
    assert config.concurrency == 8
    assert config.custom_metrics == ()
    assert config.answer_correctness_prompt is None
    assert all(
        config.enabled(s)
        for s in ("answer_correctness", "answer_relevance", "retrieval_answer", "retrieval_context")
    )


def test_documented_azure_config() -> None:
    config = parse_config(
        {
            "llm": {
                "generation": {
                    "provider": "azure",
                    "model": "graphrag-eval-system-tests-gpt-5.2",
                    "base_url": "https://my-generator.openai.azure.com",
                    "temperature": 0.0,
                    "max_tokens": 8192,
                    "api_key": SECRET,
                },
                "embedding": {
                    "provider": "azure",
                    "model": "graphrag-eval-system-tests-text-embedding-3-small",
                    "api_base": "https://my-embedder.openai.azure.com",
                    "api_key": EMBED_SECRET,
                },
            }
        }
    )
    gen = config.generation
    assert gen is not None
    assert gen.provider == "azure"
    assert gen.base_url == "https://my-generator.openai.azure.com"
    assert gen.api_version == AZURE_API_VERSION
    assert gen.api_key == SECRET
    emb = config.embedding
    assert emb.provider == "azure"
    assert emb.base_url == "https://my-embedder.openai.azure.com"
    assert emb.api_key == EMBED_SECRET
    assert emb.api_version == AZURE_API_VERSION


def test_azure_api_version_given_and_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = {"provider": "azure", "base_url": "https://x.openai.azure.com", "api_version": "2025-01"}
    config = parse_config({"llm": {"generation": gen}})
    assert config.generation is not None and config.generation.api_version == "2025-01"
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-06-01")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-env-key")
    config = parse_config(
        {"llm": {"generation": {"provider": "azure", "base_url": "https://x.openai.azure.com"}}}
    )
    assert config.generation is not None
    assert config.generation.api_version == "2024-06-01"
    assert config.generation.api_key == "azure-env-key"


def test_azure_generation_needs_an_endpoint() -> None:
    with pytest.raises(InputError) as info:
        parse_config({"llm": {"generation": {"provider": "azure"}}}, "c.yaml")
    assert info.value.field == "llm.generation.base_url"


def test_azure_endpoint_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://env.openai.azure.com")
    config = parse_config({"llm": {"generation": {"provider": "azure"}}})
    assert config.generation is not None
    assert config.generation.base_url == "https://env.openai.azure.com"


def test_azure_embedding_with_an_openai_judge_has_an_api_version() -> None:
    config = parse_config(
        {
            "llm": {
                "generation": {"provider": "openai", "api_key": SECRET},
                "embedding": {
                    "provider": "azure",
                    "api_base": "https://my-embedder.openai.azure.com",
                    "api_key": EMBED_SECRET,
                },
            }
        }
    )
    assert config.embedding.base_url == "https://my-embedder.openai.azure.com"
    assert config.embedding.api_version == AZURE_API_VERSION
    assert config.embedding.api_key == EMBED_SECRET


def test_embedding_api_base_and_base_url() -> None:
    config = parse_config(
        {"llm": {"generation": {}, "embedding": {"api_base": "http://localhost:8080/v1"}}}
    )
    assert config.embedding.provider == "openai"
    assert config.embedding.model == "text-embedding-3-small"
    assert config.embedding.base_url == "http://localhost:8080/v1"
    config = parse_config({"llm": {"embedding": {"base_url": "http://h/v1", "model": "e5"}}})
    assert config.embedding.base_url == "http://h/v1"
    assert config.embedding.model == "e5"


def test_embedding_inherits_the_judges_endpoint_and_key() -> None:
    config = parse_config(
        {
            "llm": {
                "generation": {"base_url": "http://local/v1", "api_key": SECRET},
                "embedding": {"provider": "openai", "model": "e"},
            }
        }
    )
    assert config.embedding.base_url == "http://local/v1"
    assert config.embedding.api_key == SECRET


def test_no_embedding_section_is_the_offline_model() -> None:
    config = parse_config({"llm": {"generation": {}}})
    assert config.embedding == EmbeddingConfig()
    assert config.embedding.provider == "offline"
    config = parse_config({"llm": {"embedding": {"provider": "offline"}}})
    assert config.embedding.provider == "offline"


def test_generation_api_base_is_accepted() -> None:
    config = parse_config({"llm": {"generation": {"api_base": "http://local:8000/v1"}}})
    assert config.generation is not None
    assert config.generation.base_url == "http://local:8000/v1"


def test_environment_fills_the_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    config = parse_config(
        {"llm": {"generation": {"model": "gpt-4o"}, "embedding": {"provider": "openai"}}}
    )
    assert config.generation is not None
    assert config.generation.api_key == "env-key"
    assert config.generation.base_url == "http://env/v1"
    assert config.embedding.api_key == "env-key"


def test_config_key_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    config = parse_config(copy.deepcopy(DOCUMENTED))
    assert config.generation is not None and config.generation.api_key == SECRET
    assert config.embedding.api_key == EMBED_SECRET


def test_default_config_without_environment() -> None:
    config = default_config()
    assert config.generation is None
    assert config.source == "environment"
    assert load_config(None).generation is None


def test_default_config_with_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    config = default_config()
    assert config.generation is not None
    assert config.generation.model == "gpt-4o-mini"
    assert config.generation.provider == "openai"
    assert config.generation.temperature == 0.0
    assert config.generation.api_key == "env-key"
    assert config.embedding.provider == "offline"
    assert load_config(None).generation == config.generation


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"llm": {"generation": {"modle": "gpt-4o"}}}, "llm.generation.modle"),
        ({"llm": {"embedding": {"provider": "openai", "modl": "x"}}}, "llm.embedding.modl"),
        ({"llm": {"generation": {"temperture": 0.5}}}, "llm.generation.temperture"),
        ({"llm": {"concurency": 2}}, "llm.concurency"),
        ({"lm": {}}, "lm"),
        ({"answer_correctness": {"enabled": False, "promt": "x"}}, "answer_correctness.promt"),
        ({"answer_relevance": {"enabled": False, "prompt": "x"}}, "answer_relevance.prompt"),
        ({"llm": {"prices": {"m": {"input": 1, "cached": 2}}}}, "llm.prices.m.cached"),
    ],
)
def test_unknown_keys_are_rejected(data: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_config(data, "config.yaml")
    assert info.value.field == field
    assert str(info.value).startswith(f"config.yaml: {field}: unknown key")


def test_switches_and_correctness_prompt() -> None:
    prompt = "Compare {actual_answer} with {reference_answer} for {question}; a brace: {{."
    config = parse_config(
        {
            "llm": {"generation": {}},
            "answer_correctness": {"enabled": False, "prompt": prompt},
            "answer_relevance": {"enabled": False},
            "retrieval_context": {"enabled": True},
        }
    )
    assert config.enabled("answer_correctness") is False
    assert config.enabled("answer_relevance") is False
    assert config.enabled("retrieval_context") is True
    assert config.enabled("retrieval_answer") is True
    assert config.answer_correctness_prompt == prompt
    assert config.public()["metrics"] == {
        "answer_correctness": False,
        "answer_relevance": False,
        "retrieval_answer": True,
        "retrieval_context": True,
        **dict.fromkeys(GRAPHRAG_SWITCHES, False),
        "trajectory": True,
        "custom": True,
    }


@pytest.mark.parametrize(
    "block",
    [{"enabled": "no"}, {"enabled": 0}, "off", ["enabled"]],
)
def test_bad_switches_are_rejected(block: Any) -> None:
    with pytest.raises(InputError) as info:
        parse_config({"answer_relevance": block})
    assert info.value.field is not None
    assert info.value.field.startswith("answer_relevance")


@pytest.mark.parametrize(
    "prompt",
    [
        "Compare {question} with {foo}",
        "An unbalanced { brace {actual_answer}",
        "A format spec pads forever: {actual_answer:>999999999}",
        "A conversion shows the repr: {actual_answer!r}",
        "An attribute: {question.__class__}",
    ],
)
def test_bad_correctness_prompts_are_rejected(prompt: str) -> None:
    with pytest.raises(InputError) as info:
        parse_config({"answer_correctness": {"prompt": prompt}}, "c.yaml")
    assert info.value.field == "answer_correctness.prompt"
    if "{foo}" in prompt:
        assert "{foo}" in str(info.value)


def test_correctness_prompt_file_relative_to_the_config(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    text = 'Q: {question}\nR: {reference_answer}\nA: {actual_answer}\nJSON: {{"a": 1}}\n'
    (prompts / "correctness.md").write_text(text, encoding="utf-8")
    path = tmp_path / "config.yaml"
    path.write_text(
        "llm:\n"
        "  generation:\n"
        "    model: gpt-4o-mini\n"
        "answer_correctness:\n"
        "  prompt: prompts/correctness.md\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.answer_correctness_prompt == text
    assert config.source == str(path)
    assert config.generation is not None and config.generation.model == "gpt-4o-mini"


def test_correctness_prompt_file_with_a_bad_placeholder(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("Grade {answer}", encoding="utf-8")
    path = tmp_path / "config.yaml"
    path.write_text("answer_correctness:\n  prompt: p.md\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.field == "answer_correctness.prompt"
    assert "{answer}" in str(info.value)


def test_missing_correctness_prompt_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("answer_correctness:\n  prompt: missing.md\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.field == "answer_correctness.prompt"
    assert "missing.md" in str(info.value)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"llm": {"concurrency": 0}}, "llm.concurrency"),
        ({"llm": {"concurrency": 2.5}}, "llm.concurrency"),
        ({"llm": {"concurrency": True}}, "llm.concurrency"),
        ({"llm": {"generation": {"temperature": "hot"}}}, "llm.generation.temperature"),
        ({"llm": {"generation": {"temperature": -0.5}}}, "llm.generation.temperature"),
        ({"llm": {"generation": {"max_tokens": 0}}}, "llm.generation.max_tokens"),
        ({"llm": {"generation": {"model": 4}}}, "llm.generation.model"),
        ({"llm": {"generation": {"api_key": ["k"]}}}, "llm.generation.api_key"),
        ({"llm": {"timeout": 0}}, "llm.timeout"),
        ({"llm": {"max_attempts": 0}}, "llm.max_attempts"),
        ({"llm": {"relevance_questions": 0}}, "llm.relevance_questions"),
        ({"llm": {"prices": {"m": {"input": "cheap"}}}}, "llm.prices.m.input"),
        ({"llm": {"embedding": {"provider": "  "}}}, "llm.embedding.provider"),
        ({"llm": {"generation": "gpt-4o"}}, "llm.generation"),
        ({"llm": []}, "llm"),
    ],
)
def test_bad_types_are_rejected(data: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_config(data, "config.yaml")
    assert info.value.field == field
    assert f"config.yaml: {field}: " in str(info.value)


def test_config_must_be_a_mapping() -> None:
    with pytest.raises(InputError):
        parse_config(["llm"], "config.yaml")


def test_qa_eval_llm_keys() -> None:
    config = parse_config(
        {
            "llm": {
                "generation": {"provider": "ollama", "model": "llama3", "temperature": 0.3},
                "concurrency": 2,
                "timeout": 10,
                "max_attempts": 3,
                "retry_base": 0,
                "prices": {"llama3": {"input": 0, "output": 0.5}},
                "relevance_questions": 5,
            }
        }
    )
    assert config.generation is not None
    assert config.generation.provider == "ollama"
    assert config.generation.temperature == 0.3
    assert config.generation.max_tokens is None
    assert (config.concurrency, config.timeout, config.max_attempts) == (2, 10.0, 3)
    assert config.retry_base == 0.0
    assert config.prices == {"llama3": {"input": 0.0, "output": 0.5}}
    assert config.relevance_questions == 5


CUSTOM = {
    "name": "sparql_llm_evaluation",
    "inputs": ["question", "reference_answer", "actual_steps"],
    "steps_keys": ["output"],
    "steps_name": "sparql",
    "instructions": "Divide the reference answer into claims {like this} and $that.\n",
    "outputs": {
        "sparql_recall": "fraction 0-1",
        "sparql_precision": "fraction 0-1",
        "sparql_reason": "reason for your evaluation",
    },
}


def test_custom_evaluations_are_kept() -> None:
    config = parse_config({"llm": {"generation": {}}, "custom_evaluations": [CUSTOM]})
    assert config.custom_metrics == (CUSTOM,)
    assert config.public()["custom_metrics"] == ["sparql_llm_evaluation"]


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({**CUSTOM, "outputz": {}}, "outputz"),
        ({**CUSTOM, "inputs": ["answer"]}, "inputs"),
        ({k: v for k, v in CUSTOM.items() if k != "steps_name"}, "steps_name"),
        ({**CUSTOM, "outputs": {"answer_f1": "x"}}, "outputs"),
        ({**CUSTOM, "outputs": {"steps_score": "x"}}, "outputs"),
    ],
)
def test_custom_evaluation_errors_name_the_entry(entry: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        parse_config({"custom_evaluations": [entry]}, "config.yaml")
    assert info.value.field == field
    assert "custom_evaluations[0]" in str(info.value)
    assert str(info.value).startswith("config.yaml: custom_evaluations[0]")


def test_custom_evaluation_errors_name_the_right_entry() -> None:
    bad = {**CUSTOM, "name": "second", "inputs": ["answer"]}
    with pytest.raises(InputError) as info:
        parse_config({"custom_evaluations": [CUSTOM, bad]}, "config.yaml")
    assert "custom_evaluations[1]" in str(info.value)
    assert "custom_evaluations[0]" not in str(info.value)


@pytest.mark.parametrize("value", [{"name": "x"}, "x", [1]])
def test_custom_evaluations_must_be_a_list_of_mappings(value: Any) -> None:
    with pytest.raises(InputError) as info:
        parse_config({"custom_evaluations": value})
    assert info.value.field == "custom_evaluations"


def test_api_keys_never_show(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-ENV-SECRET")
    configs = [
        parse_config(copy.deepcopy(DOCUMENTED)),
        parse_config(
            {
                "llm": {
                    "generation": {
                        "provider": "azure",
                        "base_url": "https://x.openai.azure.com",
                        "api_key": SECRET,
                    },
                    "embedding": {"provider": "azure", "api_base": "https://e", "api_key": "x"},
                }
            }
        ),
        parse_config({"llm": {"generation": {"provider": "azure", "base_url": "https://x"}}}),
    ]
    for config in configs:
        shown = [repr(config), str(config), repr(config.public()), str(config.public())]
        if config.generation is not None:
            shown += [repr(config.generation), str(config.generation.public())]
        shown += [repr(config.embedding), str(config.embedding.public())]
        for text in shown:
            assert SECRET not in text
            assert EMBED_SECRET not in text
            assert "azure-ENV-SECRET" not in text
            assert "api_key" not in text
    public = configs[0].public()
    assert "api_key" not in public["generation"]
    assert "api_key" not in public["embedding"]
    assert public["generation"]["model"] == "gpt-4o-mini"
    assert public["generation"]["max_tokens"] == 8192
    # the keys are still there for the client
    assert configs[0].generation is not None and configs[0].generation.api_key == SECRET


@pytest.mark.parametrize(
    ("url", "shown", "secrets"),
    [
        (
            "https://bob:KEY-in-userinfo-1@judge.example/v1",
            "https://judge.example/v1",
            ["KEY-in-userinfo-1", "bob"],
        ),
        (
            "https://KEY-as-user-only-2@judge.example:8443/v1",
            "https://judge.example:8443/v1",
            ["KEY-as-user-only-2"],
        ),
        (
            "https://judge.example/v1?api-key=KEY-in-query-3&x=1",
            "https://judge.example/v1",
            ["KEY-in-query-3"],
        ),
        (
            "https://judge.example/v1?key=KEY-4&token=TOKEN-5#frag",
            "https://judge.example/v1",
            ["KEY-4", "TOKEN-5"],
        ),
        ("http://[::1]:8080/v1?access_token=TOKEN-6", "http://[::1]:8080/v1", ["TOKEN-6"]),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1", []),
    ],
)
def test_credentials_in_base_url_never_show(url: str, shown: str, secrets: list[str]) -> None:
    from qa_eval.judge.calls import Judge
    from qa_eval.redact import redact

    config = parse_config(
        {
            "llm": {
                "generation": {"base_url": url, "api_key": "k"},
                "embedding": {"provider": "openai", "base_url": url},
            }
        }
    )
    assert config.generation is not None and config.generation.base_url == url  # for the client
    public = config.public()
    assert public["generation"]["base_url"] == shown
    assert public["embedding"]["base_url"] == shown
    judge = Judge(config)
    assert judge.signature()["base_url"] == shown
    request = judge.request([{"role": "user", "content": "x"}], _Reply)
    assert request["base_url"] == shown  # cache keys hold no credentials either
    text = repr(public) + repr(judge.signature()) + repr(request)
    for secret in secrets:
        assert secret not in text
        if len(secret) >= 8:  # and it is redacted wherever it is echoed
            assert secret not in redact(f"error from {url}: {secret}")
    if not secrets:
        assert redact(f"error from {url}") == f"error from {url}"


class _Reply(BaseModel):
    x: int = 0


def test_cache_keys_do_not_depend_on_credentials_in_the_url() -> None:
    from qa_eval.judge.cache.store import request_key
    from qa_eval.judge.calls import Judge

    messages = [{"role": "user", "content": "x"}]
    keys = {
        request_key(
            Judge(parse_config({"llm": {"generation": {"base_url": url}}})).request(
                messages, _Reply
            )
        )
        for url in (
            "https://judge.example/v1",
            "https://bob:one@judge.example/v1",
            "https://judge.example/v1?api-key=two",
        )
    }
    assert len(keys) == 1


def test_every_configured_key_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from qa_eval.redact import REDACTED, redact

    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-env-key-0001")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-env-key-0008")
    parse_config(copy.deepcopy(DOCUMENTED))
    GenerationConfig(api_key="made-directly-0002")
    text = (
        f"keys: {SECRET}, {EMBED_SECRET}, azure-env-key-0001, made-directly-0002; "
        "openai-env-key-0008; "
        "Authorization: Bearer tok.en-0003; authorization=Basic dXNlcjpwYXNz; "
        '{"api-key": "hdr-0004"}; https://u:pw-0005@h/v1?token=tok-0006; '
        "sk-proj-abcdefghijklmnop0007"
    )
    clean = redact(text)
    for secret in (
        SECRET,
        EMBED_SECRET,
        "azure-env-key-0001",
        "made-directly-0002",
        "tok.en-0003",
        "dXNlcjpwYXNz",
        "hdr-0004",
        "pw-0005",
        "tok-0006",
        "abcdefghijklmnop0007",
        "openai-env-key-0008",
    ):
        assert secret not in clean, secret
    assert clean.count(REDACTED) == 11
    assert "Authorization: Bearer [redacted]" in clean
    # A short placeholder key is not a secret worth blanking every occurrence of.
    parse_config({"llm": {"generation": {"api_key": "x"}}})
    assert redact("a text with x in it") == "a text with x in it"


def test_redact_data_for_writers() -> None:
    """The helper a writer can use as its last line of defence: every string of plain data."""
    from qa_eval.redact import redact_data

    GenerationConfig(api_key="writer-key-000999")
    data = {"a": ["x", {"b": "key writer-key-000999 here"}], "n": 1, "t": ("writer-key-000999",)}
    assert redact_data(data) == {
        "a": ["x", {"b": "key [redacted] here"}],
        "n": 1,
        "t": ("[redacted]",),
    }
    clean = {"a": ["x", {"b": "nothing"}], "n": 1.5}
    assert redact_data(clean) is clean  # nothing to redact: not copied


def test_custom_metrics_are_parsed_once_with_the_config_and_kept_by_with_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import qa_eval.config.load as load_module
    import qa_eval.metrics.definitions as definitions_module
    from qa_eval.config import EvalConfig, parse_config

    data = {
        "llm": {"generation": {"provider": "openai", "model": "gpt-4o-mini"}},
        "custom_evaluations": [
            {
                "name": "tone",
                "inputs": ["question", "actual_answer"],
                "instructions": "Rate the tone.",
                "outputs": {"tone_score": "a number from 0 to 1"},
            }
        ],
    }
    calls = []
    real = load_module.parse_custom_metric
    # parse_config's, and EvalConfig's (it imports the parser when a config has custom metrics)
    for module in (load_module, definitions_module):
        monkeypatch.setattr(module, "parse_custom_metric", lambda *a: calls.append(a) or real(*a))
    config = parse_config(data)
    assert len(calls) == 1
    assert [m.name for m in config.custom_definitions] == ["tone"]
    assert config.custom_definitions[0].outputs == {"tone_score": "a number from 0 to 1"}
    copy = config.with_options(concurrency=2, repeats=3)
    assert copy.custom_definitions is config.custom_definitions and len(calls) == 1
    # A config built by hand (or with other definitions swapped in) parses what it was given.
    built = EvalConfig(custom_metrics=(data["custom_evaluations"][0],))
    assert [m.name for m in built.custom_definitions] == ["tone"] and len(calls) == 2
