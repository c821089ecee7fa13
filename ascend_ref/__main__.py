"""``python -m ascend_ref`` = the ``ascend-ref`` command (:func:`ascend_ref.cli.main`).

Importing this module (a doctest or documentation tool walking the package) runs nothing."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
