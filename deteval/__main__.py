"""``python -m deteval``: the command line."""

import sys

from deteval.cli import main

sys.exit(main())
