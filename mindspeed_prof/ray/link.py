"""Joining a Ray cluster from a command (``analyse --ray``, ``capture --ray``): one line on failure.

Below both capture and analysis; imports Ray only when called.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TOKEN_NOTICE", "Unreachable", "connect", "without_token_notice"]

_CONNECT_TIMEOUT_S = 3.0

#: Ray's logger and the notice it logs whenever ``ray.init`` starts a local cluster with
#: RAY_AUTH_MODE unset, or joins one with a token at hand: not news to someone who asked for
#: a capture or an analysis.
TOKEN_NOTICE = (
    "ray._private.authentication.authentication_token_setup",
    "Token authentication is enabled for this Ray cluster.",
)


class Unreachable(Exception):
    """The Ray cluster could not be reached; the message is one line."""


def connect(address: str | None) -> None:
    """Join the Ray cluster at ``address`` (None: the one this machine runs, or a local one)."""
    import ray

    if address and address != "auto":
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:  # Ray itself retries for minutes before giving up on a dead address
            socket.create_connection((host or "127.0.0.1", int(port)), _CONNECT_TIMEOUT_S).close()
        except (OSError, ValueError) as err:
            raise Unreachable(f"Ray cluster at {address}: cannot connect ({err})") from None
    if ray.is_initialized():
        return
    try:
        with without_token_notice():
            ray.init(address=address, configure_logging=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as err:
        hint = ""
        if address not in (None, "auto") and "RAY_AUTH_MODE" not in os.environ:
            hint = (
                " (a cluster with token authentication: set RAY_AUTH_MODE=token, and "
                "RAY_AUTH_TOKEN on another machine)"
            )
        raise Unreachable(
            f"Ray cluster at {address or 'auto'}: {str(err).splitlines()[0]}{hint}"
        ) from None


class _DropMessage(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefix)


@contextmanager
def without_token_notice() -> Iterator[None]:
    """Drops exactly Ray's token-authentication notice, only while Ray starts or connects."""
    logger = logging.getLogger(TOKEN_NOTICE[0])
    drop = _DropMessage(TOKEN_NOTICE[1])
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)
