"""Exceptions mapping the daemon's error codes (see ipc/PROTOCOL.md)."""

from __future__ import annotations


class BatchdError(Exception):
    """Base of every error the client raises. ``code`` is the wire code."""

    code = "internal"

    def __init__(self, message: str = "", code: str | None = None) -> None:
        super().__init__(message or self.code)
        if code is not None:
            self.code = code


class InvalidRequest(BatchdError):
    code = "invalid_argument"


class NotFound(BatchdError):
    code = "not_found"


class PermissionDenied(BatchdError):
    code = "permission_denied"


class ResourceExhausted(BatchdError):
    code = "resource_exhausted"


class QueueFull(ResourceExhausted):
    """The daemon's waiting queue is full; retry later."""

    code = "queue_full"


class Unavailable(BatchdError):
    code = "unavailable"


class InternalError(BatchdError):
    code = "internal"


class ConnectionClosed(Unavailable):
    """The connection to the daemon ended."""


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidRequest, NotFound, PermissionDenied, ResourceExhausted, QueueFull, Unavailable, InternalError)
}


def from_wire(code: str, message: str) -> BatchdError:
    """Return the exception for a wire error code."""
    return _BY_CODE.get(code, BatchdError)(message, code)
