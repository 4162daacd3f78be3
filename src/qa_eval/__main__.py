"""``python -m qa_eval``: the same as the ``qa-eval`` command."""

import sys

from .cli import main

sys.exit(main())
