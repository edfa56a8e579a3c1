"""``python -m dpbench.cli``: the same as the ``dpbench`` command."""

import sys

from .main import main

sys.exit(main())
