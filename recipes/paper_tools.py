"""Launch the `paper-tools` preset: `python recipes/paper_tools.py [overrides]`, same as
`spade train --recipe paper-tools [overrides]`. The preset itself is `spade.config.PAPER_TOOLS`."""

import sys

from spade.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["train", "--recipe", "paper-tools", *sys.argv[1:]]))
