"""`python -m spade`: the same as the `spade` command."""

from spade.cli import main

raise SystemExit(main())
