"""``python -m ndpack``: the ndpack command (see :mod:`ndpack.cli`)."""

from ndpack.cli import main

raise SystemExit(main())
