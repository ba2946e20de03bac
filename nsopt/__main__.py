"""``python -m nsopt``: the same program as the ``nsopt`` command (see :mod:`nsopt.cli`)."""
import sys

from .cli import main

sys.exit(main())
