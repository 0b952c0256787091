"""``python -m mindspeed_prof.cli``: the same as ``mindspeed-prof``."""

from __future__ import annotations

import sys

from mindspeed_prof.cli import main

sys.exit(main())
