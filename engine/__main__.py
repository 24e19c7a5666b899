"""``python -m engine``: the ``cdp-engine`` command, also where the install's scripts folder is not on PATH.

Only ``python -m engine`` runs this file; ``import engine`` does not load it (nor the CLI).
"""

import sys

from engine.cli import main

sys.exit(main())
