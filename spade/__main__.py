"""`python -m spade`: the same as the `spade` command."""

from spade.cli.main import main

raise SystemExit(main())
