"""``python -m gpc_compare`` runs the command line (same as ``gpc-compare``)."""

import sys

from .cli import main

sys.exit(main())
