"""``python -m mindspeed_prof.cli``: the same as ``mindspeed-prof``."""

from __future__ import annotations

import sys

from mindspeed_prof.cli import main

if __name__ == "__main__":  # not in a child process multiprocessing spawns
    sys.exit(main())
