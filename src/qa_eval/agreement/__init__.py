"""How far to trust the judge: its values against people's labels (``measure``), the labels
files (``labels``), the statistics (``stats``), data drawn with a known agreement (``simulate``)
and the report as text (``table``). See docs/agreement.md.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .labels import Label, Labels, labels_from_records, read_labels
    from .measure import AgreementReport, Judge, agreement, load_judges
    from .table import format_report

_NAMES = {
    "AgreementReport": "measure",
    "Judge": "measure",
    "Label": "labels",
    "Labels": "labels",
    "agreement": "measure",
    "format_report": "table",
    "labels_from_records": "labels",
    "load_judges": "measure",
    "read_labels": "labels",
}

__all__ = [
    "AgreementReport",
    "Judge",
    "Label",
    "Labels",
    "agreement",
    "format_report",
    "labels_from_records",
    "load_judges",
    "read_labels",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
