"""asyncio client: one connection, many concurrent requests."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence

from . import _protocol as p
from ._types import Health, Stats, health_of, stats_of
from .errors import BatchdError, ConnectionClosed

_CLOSED = object()


class AsyncClient:
    """A connection to batchd for asyncio code.

    >>> async with await AsyncClient.connect() as c:     # doctest: +SKIP
    ...     async for text in c.stream("Once upon a time", max_tokens=20):
    ...         print(text, end="")
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._next = 0
        self._queues: Dict[int, "asyncio.Queue[Any]"] = {}
        self._error: Optional[BatchdError] = None
        self._fatal: Optional[BatchdError] = None
        self._task = asyncio.get_running_loop().create_task(self._read())
        self.server: Dict[str, Any] = {}

    @classmethod
    async def connect(cls, path: Optional[str] = None) -> "AsyncClient":
        path = p.socket_path(path)
        try:
            reader, writer = await asyncio.open_unix_connection(path)
        except OSError as e:
            raise ConnectionClosed(f"cannot connect to {path}: {e}") from e
        c = cls(reader, writer)
        try:
            c.server = await c._call({"type": "hello", "version": p.PROTOCOL_VERSION, "client": "batchd-python-asyncio"})
        except BaseException:
            await c.close()
            raise
        return c

    async def _read(self) -> None:
        try:
            while True:
                n = p.frame_length(await self._reader.readexactly(4))
                msg = p.decode(await self._reader.readexactly(n))
                q = self._queues.get(msg.get("id", 0))
                if q is not None:
                    q.put_nowait(msg)
                elif msg.get("id", 0) == 0 and msg.get("type") == "error":
                    self._fatal = p.error_of(msg)
                    for t in list(self._queues.values()):
                        t.put_nowait(msg)
        except (OSError, asyncio.IncompleteReadError, BatchdError, ValueError) as e:
            self._error = self._fatal or ConnectionClosed(str(e) or "the daemon closed the connection")
            for t in list(self._queues.values()):
                t.put_nowait(_CLOSED)

    def _open(self) -> "tuple[int, asyncio.Queue[Any]]":
        if self._error is not None:
            raise self._error
        self._next += 1
        q: "asyncio.Queue[Any]" = asyncio.Queue()
        self._queues[self._next] = q
        return self._next, q

    def _send(self, msg: Dict[str, Any]) -> None:
        if self._writer.is_closing():
            raise self._error or ConnectionClosed("connection closed")
        self._writer.write(p.encode(msg))

    async def _get(self, q: "asyncio.Queue[Any]") -> Dict[str, Any]:
        msg = await q.get()
        if msg is _CLOSED:
            raise self._error or ConnectionClosed("connection closed")
        err = p.error_of(msg)
        if err is not None:
            raise err
        return msg

    async def _call(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        req_id, q = self._open()
        try:
            self._send(dict(msg, id=req_id))
            try:
                await self._writer.drain()
            except OSError:
                pass  # the reader reports why the daemon hung up
            return await self._get(q)
        finally:
            self._queues.pop(req_id, None)

    def _abandon(self, req_id: int) -> None:
        self._next += 1
        try:
            self._send({"type": "cancel", "id": self._next, "target": req_id})
        except BatchdError:
            pass

    async def generate(self, prompt: Optional[str] = None, *, tokens: Optional[Sequence[int]] = None, **params: Any) -> p.Result:
        """Run a request and return the whole result. Cancelling the task
        cancels the request on the daemon."""
        req_id, q = self._open()
        done = False
        try:
            self._send(p.submit_message(req_id, prompt, tokens, False, **params))
            await self._writer.drain()
            acc = await self._get(q)
            while True:
                msg = await self._get(q)
                if msg["type"] == "done":
                    done = True
                    return p.finish(p.Result(request_id=acc.get("request_id", 0)), msg, streamed=False)
        finally:
            if not done:
                self._abandon(req_id)
            self._queues.pop(req_id, None)

    async def chat(self, messages: Sequence[Dict[str, Any]], **params: Any) -> p.Result:
        """Run a chat (OpenAI-style messages through the model's template)."""
        return await self.generate(None, messages=messages, **params)

    def stream_chat(self, messages: Sequence[Dict[str, Any]], **params: Any) -> AsyncIterator[str]:
        """Stream a chat's text deltas."""
        return self.stream(None, messages=messages, **params)

    async def stream(self, prompt: Optional[str] = None, *, tokens: Optional[Sequence[int]] = None, **params: Any) -> AsyncIterator[str]:
        """Yield text deltas as they arrive. Leaving the loop early or
        cancelling the task cancels the request on the daemon."""
        req_id, q = self._open()
        done = False
        try:
            self._send(p.submit_message(req_id, prompt, tokens, True, **params))
            await self._writer.drain()
            await self._get(q)  # accepted
            while True:
                msg = await self._get(q)
                if msg["type"] == "token":
                    yield msg.get("text", "")
                elif msg["type"] == "done":
                    done = True
                    p.finish(p.Result(request_id=0), msg, streamed=True)
                    return
        finally:
            if not done:
                self._abandon(req_id)
            self._queues.pop(req_id, None)

    async def cancel(self, request_id: int) -> None:
        await self._call({"type": "cancel", "request_id": request_id})

    async def stats(self) -> Stats:
        """The daemon's figures, typed (item access works too)."""
        return stats_of(await self._call({"type": "stats"}))

    async def health(self) -> Health:
        return health_of(await self._call({"type": "health"}))

    async def embed(self, input: Any, *, model: str = "", dimensions: int = 0, truncate: bool = True,
              normalize: bool = True, keep_alive: Optional[str] = None) -> List[List[float]]:
        """Embeddings of input (a string, or a list of strings), one vector
        per input in order: unit vectors unless normalize is False."""
        texts = [input] if isinstance(input, str) else list(input)
        msg: Dict[str, Any] = {"type": "embed", "input": texts}
        if model:
            msg["model"] = model
        if dimensions:
            msg["dimensions"] = int(dimensions)
        if not truncate:
            msg["truncate"] = False
        if not normalize:
            msg["normalize"] = False
        if keep_alive is not None:
            msg["keep_alive"] = str(keep_alive)
        return [list(v) for v in ((await self._call(msg)).get("embeddings") or [])]

    async def rerank(self, query: str, documents: List[str], *, model: str = "", top_n: int = 0,
               keep_alive: Optional[str] = None) -> List[Dict[str, Any]]:
        """Scores of documents against query by a reranker, best first:
        [{"index": i, "score": s}], the best top_n of them (0: all)."""
        msg = p.rerank_message(query, documents, model, top_n, keep_alive)
        return [dict(r) for r in ((await self._call(msg)).get("results") or [])]

    async def models(self) -> List[Dict[str, Any]]:
        """Every model the daemon knows: {name, state, path, bytes, requests, ...}."""
        return list((await self._call({"type": "models"})).get("models") or [])

    async def running(self) -> List[Dict[str, Any]]:
        """The models loaded now."""
        return list((await self._call({"type": "ps"})).get("models") or [])

    async def load(self, model: str, keep_alive: Optional[str] = None) -> None:
        """Load model (returns once it is) and keep it keep_alive once idle."""
        msg: Dict[str, Any] = {"type": "load", "model": model}
        if keep_alive is not None:
            msg["keep_alive"] = str(keep_alive)
        await self._call(msg)

    async def unload(self, model: str) -> None:
        """Unload model once no request runs on it."""
        await self._call({"type": "unload", "model": model})

    async def reload(self) -> Dict[str, Any]:
        """Re-read the daemon's config file, as SIGHUP does (admins only)."""
        r = await self._call({"type": "reload"})
        return {"applied": r.get("applied", False), "restart_needed": list(r.get("restart_needed") or [])}

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):
            pass

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
