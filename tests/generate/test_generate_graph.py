"""The schema read from the data, labels and languages, ambiguous labels, blank nodes, lenient
loading, and ``--describe``, on the graph with the hard parts."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from qa_eval.cli import main
from qa_eval.generate import GraphSource, describe_graph, generate_reference_file
from qa_eval.generate.engine import SHAPES
from qa_eval.generate.schema import describe_json
from qa_eval.io.files import read_data

pytest.importorskip("pyoxigraph")

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid" / "graph.ttl"

EX = "https://example.org/hard#"


def _questions(path: Path) -> list[dict[str, Any]]:
    return [q for t in read_data(path) for q in t["questions"]]


def test_schema_counts_classes_properties_and_labels(hard: Path) -> None:
    data = describe_json(describe_graph(GraphSource(store=hard)))
    classes = {c["iri"]: c for c in data["classes"]}
    assert set(classes) == {EX + "City", EX + "Person", EX + "Planet"}
    city = classes[EX + "City"]
    assert (city["instances"], city["labelled"], city["word"]) == (8, 6, "city")
    props = {p["iri"]: p for p in city["properties"]}
    assert props[EX + "twin"]["multi_valued"] and props[EX + "twin"]["kind"] == "iri"
    assert props[EX + "twin"]["object_classes"] == {"ex:City": 6}
    assert props[EX + "area"]["kind"] == "numeric"
    assert props[EX + "founded"]["datatypes"] == {"xsd:gYear": 4}
    assert props[EX + "address"]["blank_nodes"] == 1
    assert props[EX + "population"]["word"] == "population"
    assert classes[EX + "Planet"]["instances"] == 1
    assert data["labels"]["rdfs:label"] == {"": 3, "de": 8, "en": 7, "es": 2, "it": 2}
    assert data["labels"]["skos:prefLabel"] == {"en": 3}


def test_words_come_from_labels_in_the_language(hard: Path) -> None:
    data = describe_json(describe_graph(GraphSource(store=hard), "de"))
    city = next(c for c in data["classes"] if c["iri"] == EX + "City")
    assert city["word"] == "Stadt"
    assert city["labelled"] == 7  # München, and the two untagged Springfields
    population = next(p for p in city["properties"] if p["iri"] == EX + "population")
    assert population["word"] == "Einwohnerzahl"


def test_describe_command_text_and_json(hard: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--store", str(hard), "--describe"]) == 0
    text = capsys.readouterr().out
    assert 'ex:City "city": 8 instances, 6 labelled' in text
    assert "multi-valued" in text and "1 blank nodes" in text
    assert main(["generate", "--store", str(hard), "--describe", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["triples"] == 86


@pytest.fixture
def hard_set(hard: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "hard.yaml"
    generate_reference_file(GraphSource(store=hard), out, 60, seed=3)
    return _questions(out)


def test_ambiguous_and_unlabelled_entities_are_never_named(hard_set: list[dict[str, Any]]) -> None:
    named = {e["iri"] for q in hard_set for e in q["generated"]["entities"]}
    city = "https://example.org/hard/city/"
    assert not named & {city + "springfield-il", city + "springfield-ma", city + "nolabel"}
    assert city + "munich" not in named  # a German label only
    assert "https://example.org/hard/person/anon" not in named
    for q in hard_set:
        for step in q["reference_steps"][:-1]:
            for search in step:
                assert search["args"]["query"] != "Springfield"


def test_a_label_shared_across_classes_is_qualified_by_the_class(
    hard_set: list[dict[str, Any]],
) -> None:
    paris = {
        (e["iri"], e["named_by"])
        for q in hard_set
        for e in q["generated"]["entities"]
        if e["label"] == "Paris"
    }
    assert paris  # the city Paris and the person Paris share a label
    assert all(named_by == "class" for _, named_by in paris)
    for q in hard_set:
        for e in q["generated"]["entities"]:
            if e["label"] == "Paris" and e["class"] == "ex:Person":
                assert "person Paris" in q["question_text"]


FOLDED = """\
@prefix ex: <https://example.org/fold#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:oslo a ex:City ; rdfs:label "Oslo"@en ; ex:population 700000 .
ex:oslo2 a ex:City ; rdfs:label "OSLO  " ; ex:population 1000 .
ex:bergen a ex:City ; rdfs:label "bergen"@en ; ex:population 285000 .
ex:bergen-p a ex:Person ; rdfs:label "Bergen" ; ex:age 40 .
ex:zurich a ex:City ; rdfs:label "Zu\\u0308rich" ; ex:population 420000 .
ex:zurich-p a ex:Person ; rdfs:label "Z\\u00fcrich" ; ex:age 30 .
ex:tromso a ex:City ; rdfs:label "Troms\\u00f8" ; ex:population 77000 .
ex:ann a ex:Person ; rdfs:label "Ann" ; ex:age 20 .
"""


def test_labels_that_differ_in_case_whitespace_or_accent_form_are_one_label(
    tmp_path: Path,
) -> None:
    """ "Oslo" and "OSLO " name two cities: neither is named; "bergen" (a city) and "Bergen" (a
    person), and a decomposed and a composed "Zürich", are qualified by their class."""
    graph = tmp_path / "fold.ttl"
    graph.write_text(FOLDED, encoding="utf-8")
    out = tmp_path / "fold.yaml"
    generate_reference_file(GraphSource(store=graph), out, 20, seed=1, shapes=["lookup"])
    named = {
        e["iri"].rsplit("#", 1)[1]: e["named_by"]
        for q in _questions(out)
        for e in q["generated"]["entities"]
    }
    assert "oslo" not in named and "oslo2" not in named
    assert named["tromso"] == "unique" and named["ann"] == "unique"
    for iri in ("bergen", "bergen-p", "zurich", "zurich-p"):
        assert named[iri] == "class"


def test_multi_valued_properties_give_list_questions(hard_set: list[dict[str, Any]]) -> None:
    lists = [q for q in hard_set if q["generated"]["shape"] == "list"]
    assert lists
    for q in lists:
        rows = json.loads(q["reference_steps"][-1][0]["output"])["results"]["bindings"]
        assert len(rows) >= 2
        assert q["reference_answer"].count(",") == len(rows) - 1


def test_no_blank_node_and_no_other_language_in_answers(hard_set: list[dict[str, Any]]) -> None:
    for q in hard_set:
        output = q["reference_steps"][-1][0]["output"]
        if q["generated"]["shape"] not in ("unanswerable",):
            assert '"bnode"' not in output
        for word in ("Berlín", "Berlino", 'Rom"', "München", "Erde"):
            assert word not in q["reference_answer"] and word not in q["question_text"]


def test_typed_literals_are_answered_as_the_graph_holds_them(
    hard_set: list[dict[str, Any]],
) -> None:
    dated = [
        q for q in hard_set if "born" in q["question_text"] and q["generated"]["shape"] == "lookup"
    ]
    for q in dated:
        assert len(q["reference_answer"]) == 10 and q["reference_answer"][4] == "-"


def test_a_note_says_the_templates_are_english_in_a_language_without_templates(
    hard: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "it.yaml"
    assert main(["generate", "--store", str(hard), "-n", "3", "-o", str(out), "--lang", "it"]) == 0
    assert "templates are English" in capsys.readouterr().err
    assert main(["generate", "--store", str(hard), "-n", "3", "-o", str(out), "--lang", "de"]) == 0
    assert "templates are English" not in capsys.readouterr().err


ENGLISH_WORDS = re.compile(r"\b(What|Which|How|the|of|have|has|with|and|or|Is|yes|tied)\b")


def test_german_templates_and_only_german_words(
    hard: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --lang de the questions and answers are German; classes and properties without a
    German label (their word would be an English-looking local name) are left out, and said."""
    out = tmp_path / "de.yaml"
    code = main(["generate", "--store", str(hard), "-n", "30", "-o", str(out), "--lang", "de"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "left out, no label in the language" in printed and "ex:area" in printed
    questions = _questions(out)
    assert len(questions) >= 10
    for q in questions:
        assert not ENGLISH_WORDS.search(q["question_text"]), q["question_text"]
        assert not ENGLISH_WORDS.search(q["reference_answer"]), q["reference_answer"]
        assert "area" not in q["question_text"] and "founded" not in q["question_text"]
    texts = " ".join(q["question_text"] for q in questions)
    assert "Einwohnerzahl" in texts and "Stadt" in texts
    answers = {q["reference_answer"] for q in questions if q["generated"]["shape"] == "boolean"}
    assert answers and answers <= {"ja", "nein"}


@pytest.mark.parametrize(
    ("lang", "words"),
    [
        ("es", ["¿Cuál es el valor de", "elementos de tipo"]),
        ("fr", ["Quelle est la valeur de", "éléments de type"]),
        ("de", ["Welchen Wert hat", "Einträge vom Typ"]),
    ],
)
def test_every_shape_has_templates_in_spanish_french_and_german(
    tmp_path: Path, lang: str, words: list[str]
) -> None:
    """The demo with the config's words for every class and property: every shape is made, in
    the language, with no English template word."""
    config = tmp_path / "words.yaml"
    config.write_text(
        "prefixes: {g: 'https://example.org/grid#'}\nwords:\n"
        + "".join(
            f"  g:{name}: {name.lower()}_{lang}\n"
            for name in [
                "Transformer",
                "Line",
                "Substation",
                "Operator",
                "Region",
                "commissioned",
                "ratedMVA",
                "substation",
                "fromSubstation",
                "lengthKm",
                "operator",
                "toSubstation",
                "voltageKV",
                "region",
                "voltageLevelKV",
                "code",
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / f"{lang}.yaml"
    generate_reference_file(GraphSource(store=DEMO), out, 60, seed=1, language=lang, config=config)
    questions = _questions(out)
    shapes = {q["generated"]["shape"] for q in questions}
    assert shapes == set(SHAPES) and len(questions) == 60
    texts = " ".join(q["question_text"] for q in questions)
    for word in words:
        assert word in texts
    for q in questions:
        assert not ENGLISH_WORDS.search(q["question_text"]), q["question_text"]
        assert not ENGLISH_WORDS.search(q["reference_answer"]), q["reference_answer"]


def test_german_labels_only_with_lang_de(hard: Path, tmp_path: Path) -> None:
    out = tmp_path / "de.yaml"
    generate_reference_file(GraphSource(store=hard), out, 30, seed=1, language="de")
    questions = _questions(out)
    assert questions
    for q in questions:
        for e in q["generated"]["entities"]:
            assert e["label"] in {
                "Berlin",
                "Paris",
                "Madrid",
                "Rom",
                "München",
                "Erde",
                "Springfield",
            }
        assert "Rome" not in q["reference_answer"] and "Earth" not in q["reference_answer"]
        assert q["generated"]["language"] == "de"


def test_lenient_loading_counts_what_it_let_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "dump.ttl.gz"
    text = (
        "@prefix ex: <https://example.org/d#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        'ex:a a ex:Thing ; rdfs:label "Alpha"@en-verylongsubtag ; ex:size 3 .\n'
        'ex:b a ex:Thing ; rdfs:label "Beta" ; ex:size 5 ; ex:next <https://example.org/d#c d> .\n'
        'ex:e a ex:Thing ; rdfs:label "Gamma" ; ex:size 7 .\n'
    )
    graph.write_bytes(gzip.compress(text.encode("utf-8")))
    report = tmp_path / "report.json"
    out = tmp_path / "r.yaml"
    code = main(
        ["generate", "--store", str(graph), "-n", "3", "-o", str(out), "--report-json", str(report)]
    )
    assert code == 0
    assert json.loads(report.read_text())["let_through"] == {"language tag": 1, "IRI": 1}
    assert "let through 1 language tag, 1 IRI" in capsys.readouterr().out
    strict = tmp_path / "strict.yaml"
    assert (
        main(["generate", "--store", str(graph), "-n", "3", "-o", str(strict), "--strict-rdf"]) == 2
    )
    err = capsys.readouterr().err
    assert "RDF does not parse" in err and len(err.strip().splitlines()) == 1
    assert not strict.exists()


def test_config_words_limits_and_exclusions(hard: Path, tmp_path: Path) -> None:
    config = tmp_path / "gen.yaml"
    config.write_text(
        "words: {ex:livesIn: home city, ex:Person: scientist}\n"
        "exclude: {properties: [ex:speaks], classes: [ex:Planet]}\n"
        "max_uses_per_entity: 1\nmax_answers: 2\n",
        encoding="utf-8",
    )
    out = tmp_path / "r.yaml"
    generate_reference_file(GraphSource(store=hard), out, 20, seed=1, config=config)
    questions = _questions(out)
    texts = " ".join(q["question_text"] for q in questions)
    assert "lives in" not in texts and "speaks" not in texts and "planet" not in texts
    assert "home city" in texts or "scientist" in texts
    uses: dict[str, int] = {}
    for q in questions:
        for e in q["generated"]["entities"]:
            uses[e["iri"]] = uses.get(e["iri"], 0) + 1
        rows = (
            json.loads(q["reference_steps"][-1][0]["output"]).get("results", {}).get("bindings", [])
        )
        assert len(rows) <= 2
    assert set(uses.values()) <= {1}


def test_included_classes_are_the_only_ones_read(hard: Path, tmp_path: Path) -> None:
    config = tmp_path / "only.yaml"
    config.write_text("include: {classes: [ex:Person]}\n", encoding="utf-8")
    data = describe_json(describe_graph(GraphSource(store=hard), config=config))
    assert [c["iri"] for c in data["classes"]] == [EX + "Person"]
    assert {p["iri"] for p in data["classes"][0]["properties"]} == {
        EX + "born",
        EX + "livesIn",
        EX + "speaks",
    }
