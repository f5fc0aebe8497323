"""``python -m mixdbg``: the same entry point as the ``mixdbg`` console script."""

import sys

from mixdbg.cli import main

sys.exit(main())
