"""Python client for batchd, the local LLM inference daemon.

Sync: ``Client``; asyncio: ``AsyncClient``. Errors from the daemon raise the
exceptions below, keyed by the wire error code.
"""

from ._protocol import DEFAULT_SOCKET, Result, socket_path
from ._types import Dist, Health, ModelInfo, Plan, RequestInfo, Stats
from .aio import AsyncClient
from .client import Client, Stream
from .errors import (
    BatchdError,
    ConnectionClosed,
    InternalError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    QueueFull,
    ResourceExhausted,
    Unavailable,
)

__all__ = [
    "AsyncClient", "BatchdError", "Dist", "Health", "ModelInfo", "Plan", "RequestInfo", "Stats", "Client", "ConnectionClosed", "DEFAULT_SOCKET", "InternalError", "InvalidRequest",
    "NotFound", "PermissionDenied", "QueueFull", "ResourceExhausted", "Result", "Stream", "Unavailable", "socket_path",
]
__version__ = "0.1.0"
