"""``python -m deteval``: the command line."""

import sys

try:
    from deteval.cli import main
    from deteval.cli.leave import leave
except KeyboardInterrupt:  # Ctrl-C while the modules load: the same one line and status as during a run
    sys.stderr.write("deteval: interrupted\n")
    sys.exit(130)

leave(main())
