"""The graphs of the generate tests: the power-grid demo and a graph with the hard parts
(labels in many languages, two entities with one label, a label shared across classes, blank
nodes, typed literals (decimal, date, gYear), multi-valued properties, entities without labels,
a class with one instance)."""

from __future__ import annotations

from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "powergrid" / "graph.ttl"

HARD = """\
@prefix ex: <https://example.org/hard#> .
@prefix c: <https://example.org/hard/city/> .
@prefix p: <https://example.org/hard/person/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

ex:City rdfs:label "city"@en, "Stadt"@de .
ex:population rdfs:label "population"@en, "Einwohnerzahl"@de .

c:berlin a ex:City ; rdfs:label "Berlin"@en, "Berlin"@de, "Berlín"@es, "Berlino"@it ;
    ex:population 3645000 ; ex:area "891.7"^^xsd:decimal ; ex:founded "1237"^^xsd:gYear ;
    ex:twin c:paris, c:madrid ; ex:address [ ex:street "Unter den Linden" ] .
c:paris a ex:City ; rdfs:label "Paris"@en, "Paris"@de, "París"@es ;
    ex:population 2161000 ; ex:area "105.4"^^xsd:decimal ; ex:founded "0250"^^xsd:gYear ;
    ex:twin c:berlin, c:rome .
c:madrid a ex:City ; rdfs:label "Madrid"@en, "Madrid"@de ;
    ex:population 3223000 ; ex:area "604.3"^^xsd:decimal ; ex:founded "0865"^^xsd:gYear ;
    ex:twin c:berlin .
c:rome a ex:City ; rdfs:label "Rome"@en, "Rom"@de, "Roma"@it ;
    ex:population 2873000 ; ex:area "1285.0"^^xsd:decimal ; ex:founded "-0752"^^xsd:gYear ;
    ex:twin c:paris .
c:springfield-il a ex:City ; rdfs:label "Springfield" ; ex:population 114000 ;
    ex:area "170.0"^^xsd:decimal .
c:springfield-ma a ex:City ; rdfs:label "Springfield" ; ex:population 155000 ;
    ex:area "85.0"^^xsd:decimal .
c:nolabel a ex:City ; ex:population 1000 ; ex:area "1.0"^^xsd:decimal .
c:munich a ex:City ; rdfs:label "München"@de ; ex:population 1488000 ;
    ex:area "310.4"^^xsd:decimal .

p:ada a ex:Person ; skos:prefLabel "Ada Lovelace"@en ; ex:born "1815-12-10"^^xsd:date ;
    ex:livesIn c:paris ; ex:speaks "English"@en, "French"@en, "Italian"@en .
p:alan a ex:Person ; skos:prefLabel "Alan Turing"@en ; ex:born "1912-06-23"^^xsd:date ;
    ex:livesIn c:berlin ; ex:speaks "English"@en, "German"@en .
p:grace a ex:Person ; skos:prefLabel "Grace Hopper"@en ; ex:born "1906-12-09"^^xsd:date ;
    ex:livesIn c:rome ; ex:speaks "English"@en .
p:paris a ex:Person ; rdfs:label "Paris" ; ex:born "1990-01-01"^^xsd:date ; ex:livesIn c:madrid ;
    ex:speaks "Spanish"@en, "English"@en .
p:anon a ex:Person ; ex:born "1950-05-05"^^xsd:date ; ex:livesIn c:rome .

ex:earth a ex:Planet ; rdfs:label "Earth"@en, "Erde"@de ; ex:radiusKm "6371.0"^^xsd:decimal .
"""


@pytest.fixture
def hard(tmp_path: Path) -> Path:
    """The graph with the hard parts, as a Turtle file."""
    path = tmp_path / "hard.ttl"
    path.write_text(HARD, encoding="utf-8")
    return path
