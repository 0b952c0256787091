from . import memory  # noqa: F401
from .mstx import mstx  # noqa: F401

AVAILABLE = True


def is_available():
    return AVAILABLE
