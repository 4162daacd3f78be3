"""How far to trust the judge: its values against people's labels (``measure``: the report), the
judges read (``judges``), one judge's figures on one metric (``figures``), the annotators against
each other (``annotators``), judges compared with each other (``comparisons``), the labels files
(``labels``), the statistics (``stats``), data drawn with a known agreement (``simulate``) and the
report as text (``table``). See docs/agreement.md.
"""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .judges import Judge, load_judges
    from .labels import Label, Labels, labels_from_records, read_labels
    from .measure import AgreementReport, agreement
    from .table import format_report

_NAMES = {
    "AgreementReport": "measure",
    "Judge": "judges",
    "Label": "labels",
    "Labels": "labels",
    "agreement": "measure",
    "format_report": "table",
    "labels_from_records": "labels",
    "load_judges": "judges",
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
