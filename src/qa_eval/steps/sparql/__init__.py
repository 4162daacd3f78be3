"""Compare SPARQL SELECT / ASK results (application/sparql-results+json).

Definition (QA-evaluation README of graphrag-eval, "SPARQL queries comparison"): the actual result
matches the reference when some injective mapping of the reference's ``required_columns`` onto the
actual result's columns makes the projected rows equal:

* ``ordered: true``  - the row sequences are equal;
* ``ordered: false`` and ``ignore_duplicates: true`` (default) - the row sets are equal;
* ``ordered: false`` and ``ignore_duplicates: false`` - the row multisets are equal.

Reference columns not listed in ``required_columns`` are optional and ignored; extra actual columns
are ignored. ASK results match when both booleans are equal. Edge cases follow the original: both
results empty -> 1.0 when the actual result has at least as many columns as are required; one of
them empty -> 0.0; no required columns -> 1.0. The score is 1.0 or 0.0.

Where qa-eval is stricter or more exact than the original (see docs/compatibility.md):

* A row is a tuple of RDF terms, not the concatenation of their strings, so ("ab", "c") and
  ("a", "bc") are different rows.
* Terms are typed: an IRI never equals a literal with the same text; a language-tagged literal
  equals only a literal with the same (case-insensitive) tag; a plain literal equals an
  ``xsd:string`` literal (RDF 1.1).
* Numeric literals of every XSD numeric type compare by value, so ``1``^^xsd:integer equals
  ``1.0``^^xsd:decimal. A decimal, double or float value equals another number when they differ
  by at most 1e-8 (the README's precision), or by at most 1e-15 of the larger magnitude, where
  doubles cannot resolve 1e-8 (beyond 10^7); two integers compare exactly. Values closer than
  that are chained within a column (single linkage), so equality stays an equivalence. ``INF``,
  ``-INF`` and ``NaN`` are values like any other: NaN equals NaN here, since the two results hold
  the same term.
* Blank nodes are scoped to one result, so any blank node equals any other.

Algorithm: each column is read at most once into a vector of canonical values; a reference's
required columns are read when the dataset loads (``prepare_reference``). In a result of more than
64 rows an actual column is first tried on its first 16 cells: each must have the reference
column's kind (IRI, number, ...) and occur in the reference column (at the same row, when
ordered), or the column cannot match and is never read in full. In a smaller result the
candidates for a reference column are the actual columns whose first cell has its kind. When that
leaves one candidate per reference column, all different (the common case), one projection of
the candidates decides. Otherwise a reference column can only map
to a candidate whose whole column has the same sequence (ordered), set (set semantics) or multiset
(bag semantics) of values, and the mapping is found by backtracking over those, checking the
partial projection after each step: O(rows x columns) overall, instead of the original's
enumeration of every permutation of every column subset.

Numbers are hashed by their exact value, so the search above is exact-value equality. Only when
it finds no mapping and some non-integer number has a neighbour within the tolerance (one sort of
the distinct numbers of both results) are the numbers of each chain of close values replaced by
one representative and the search run again, without the sampling shortcut.

The parts: reading results into typed columns is ``terms``, the matching ``match``, the one-line
explanations ``explain``; this package's face names what they offer.
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .explain import explain_sparql_results
    from .match import (
        ABS_TOLERANCE,
        REL_TOLERANCE,
        SparqlReference,
        compare_sparql_results,
        numbers_close,
        prepare_reference,
    )
    from .terms import SparqlResultError, parse_sparql_json

_NAMES = {
    "ABS_TOLERANCE": "match",
    "REL_TOLERANCE": "match",
    "SparqlReference": "match",
    "SparqlResultError": "terms",
    "compare_sparql_results": "match",
    "explain_sparql_results": "explain",
    "numbers_close": "match",
    "parse_sparql_json": "terms",
    "prepare_reference": "match",
}

__all__ = [
    "ABS_TOLERANCE",
    "REL_TOLERANCE",
    "SparqlReference",
    "SparqlResultError",
    "compare_sparql_results",
    "explain_sparql_results",
    "numbers_close",
    "parse_sparql_json",
    "prepare_reference",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
