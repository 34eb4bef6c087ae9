"""``python -m opboost`` runs the command line."""

import sys

from opboost.compose.cli import main

sys.exit(main())
