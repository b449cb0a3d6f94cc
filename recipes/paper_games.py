"""Launch the `paper-games` preset: `python recipes/paper_games.py [overrides]`, same as
`spade train --recipe paper-games [overrides]`. The preset itself is `spade.config.PAPER_GAMES`."""

import sys

from spade.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["train", "--recipe", "paper-games", *sys.argv[1:]]))
