"""Launch the `tiny-cpu` preset: `python recipes/tiny_cpu.py [overrides]`, same as
`spade train --recipe tiny-cpu [overrides]`. The preset itself is `spade.config.TINY_CPU`."""

import sys

from spade.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["train", "--recipe", "tiny-cpu", *sys.argv[1:]]))
