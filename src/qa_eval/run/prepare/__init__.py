"""Validated, prepared forms of the reference dataset and the responses.

Validation collects every problem with its place (file, record, field) and raises one
``InputError`` whose message is the first problem and a count of the others; ``.problems`` holds
them all. Reference step outputs that are compared structurally (SPARQL JSON, retrieval contexts,
``application/json``) are parsed here once and kept with the step.

The package: ``records`` (``Question``, ``Response``, ``Problems``), ``reference``
(``prepare_reference``) and ``responses`` (``prepare_responses``, ``check_response``).
"""

from typing import TYPE_CHECKING

from ...extras import lazy_face

if TYPE_CHECKING:
    from .records import Problems, Question, Response, response_record
    from .reference import prepare_reference
    from .responses import Seen, Unknown, check_response, prepare_responses

_NAMES = {
    "Problems": "records",
    "Question": "records",
    "Response": "records",
    "Seen": "responses",
    "Unknown": "responses",
    "check_response": "responses",
    "prepare_reference": "reference",
    "prepare_responses": "responses",
    "response_record": "records",
}

__all__ = [
    "Problems",
    "Question",
    "Response",
    "Seen",
    "Unknown",
    "check_response",
    "prepare_reference",
    "prepare_responses",
    "response_record",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
