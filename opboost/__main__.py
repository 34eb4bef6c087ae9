"""``python -m opboost`` runs the command line."""

import sys

from opboost.cli import main

sys.exit(main())
