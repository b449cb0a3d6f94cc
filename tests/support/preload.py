"""A lighter sandbox preload for tests whose programs never import math_verify."""

from __future__ import annotations

from spade.sandbox import SandboxConfig

LIGHT_PRELOAD = tuple(m for m in SandboxConfig().preload if m != "math_verify")
"""The default preload without math_verify: importing it (sympy, latex2sympy) is ~0.55 s of the
~0.75 s of CPU a zygote takes to start here, and the suite starts ~200 sandboxes. For the loop
tests (scripted programs) and the hostile programs (what they test is the OS layers, not what is
importable); the default preload is what every other sandbox test, the bundled environments and
the stdlib test run with."""
