"""``python -m core.cli``: the same as the ``ferry`` console script."""

from core.cli.main import main

raise SystemExit(main())
