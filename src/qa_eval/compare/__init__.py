"""Comparing runs question by question (``runs``): the results' metrics and values (``values``),
repeated trials made one result (``trials``), the runs paired by question (``pairing``), each
metric's tested rows and their Holm adjustment (``rows``), the sign-flip permutation test
(``signflip``), and the comparison shown as a table or as the report's rows (``table``); two JSON
Lines results files compared as columns in bounded memory (``columns``, ``streamed``).
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .rows import holm
    from .runs import compare_runs
    from .signflip import EXACT_MAX_N, MAX_RESAMPLES, sign_flip_test, smallest_p
    from .streamed import compare_files
    from .table import format_table, report_rows
    from .values import default_metrics, lower_is_better

_NAMES = {
    "EXACT_MAX_N": "signflip",
    "MAX_RESAMPLES": "signflip",
    "compare_files": "streamed",
    "compare_runs": "runs",
    "default_metrics": "values",
    "format_table": "table",
    "holm": "rows",
    "lower_is_better": "values",
    "report_rows": "table",
    "sign_flip_test": "signflip",
    "smallest_p": "signflip",
}

__all__ = [
    "EXACT_MAX_N",
    "MAX_RESAMPLES",
    "compare_files",
    "compare_runs",
    "default_metrics",
    "format_table",
    "holm",
    "lower_is_better",
    "report_rows",
    "sign_flip_test",
    "smallest_p",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
