"""Synchronous client: one connection, safe to share between threads."""

from __future__ import annotations

import queue
import socket
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence

from . import _protocol as p
from ._types import Health, Stats, health_of, stats_of
from .errors import BatchdError, ConnectionClosed

_CLOSED = object()


class Client:
    """A connection to batchd.

    >>> with Client() as c:                      # doctest: +SKIP
    ...     print(c.generate("Once upon a time", max_tokens=20).text)
    """

    def __init__(self, path: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self.path = p.socket_path(path)
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise ConnectionClosed(f"cannot connect to {self.path}: {e}") from e
        self._wlock = threading.Lock()
        self._lock = threading.Lock()
        self._next = 0
        self._queues: Dict[int, "queue.Queue[Any]"] = {}
        self._error: Optional[BatchdError] = None
        self._fatal: Optional[BatchdError] = None
        self._reader = threading.Thread(target=self._read, name="batchd-reader", daemon=True)
        self._reader.start()
        try:
            self.server = self._call({"type": "hello", "version": p.PROTOCOL_VERSION, "client": "batchd-python"})
        except BaseException:
            self.close()
            raise

    # -- plumbing -------------------------------------------------------

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed("the daemon closed the connection")
            buf += chunk
        return bytes(buf)

    def _read(self) -> None:
        try:
            while True:
                msg = p.decode(self._recv_exact(p.frame_length(self._recv_exact(4))))
                with self._lock:
                    q = self._queues.get(msg.get("id", 0))
                    if q is None and msg.get("id", 0) == 0 and msg.get("type") == "error":
                        # Connection-level (a refused peer, a bad frame): everyone sees it.
                        self._fatal = p.error_of(msg)
                        targets = list(self._queues.values())
                    else:
                        targets = [q] if q is not None else []
                for t in targets:
                    t.put(msg)
        except (OSError, BatchdError, ValueError) as e:
            err = e if isinstance(e, ConnectionClosed) else ConnectionClosed(str(e))
            with self._lock:
                self._error = self._fatal or err
                targets = list(self._queues.values())
            for t in targets:
                t.put(_CLOSED)

    def _open(self) -> "tuple[int, queue.Queue[Any]]":
        with self._lock:
            if self._error is not None:
                raise self._error
            self._next += 1
            q: "queue.Queue[Any]" = queue.Queue()
            self._queues[self._next] = q
            return self._next, q

    def _close_call(self, req_id: int) -> None:
        with self._lock:
            self._queues.pop(req_id, None)

    def _send(self, msg: Dict[str, Any]) -> None:
        data = p.encode(msg)
        with self._wlock:
            try:
                self._sock.sendall(data)
            except OSError as e:
                # The daemon may have said why before hanging up: let the reader see it.
                if threading.current_thread() is not self._reader:
                    self._reader.join(timeout=2)
                raise self._fatal or ConnectionClosed(str(e)) from e

    def _get(self, q: "queue.Queue[Any]") -> Dict[str, Any]:
        try:
            msg = q.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError("no reply from batchd") from None
        if msg is _CLOSED:
            raise self._error or ConnectionClosed("connection closed")
        err = p.error_of(msg)
        if err is not None:
            raise err
        return msg

    def _call(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        req_id, q = self._open()
        try:
            self._send(dict(msg, id=req_id))
            return self._get(q)
        finally:
            self._close_call(req_id)

    # -- API --------------------------------------------------------------

    def generate(self, prompt: Optional[str] = None, *, tokens: Optional[Sequence[int]] = None, **params: Any) -> p.Result:
        """Run a request and return the whole result.

        params: max_tokens, temperature, top_k, top_p, min_p,
        repetition_penalty, frequency_penalty, presence_penalty, seed, stop,
        stop_token_ids, priority, channel, parse_special (False keeps
        special-token text as text); messages, tools, tool_choice,
        parallel_tool_calls, reasoning_format, chat_template_kwargs and
        add_generation_prompt for a chat (see chat).
        """
        return self._run(prompt, tokens, params)

    def chat(self, messages: Sequence[Dict[str, Any]], **params: Any) -> p.Result:
        """Run a chat: messages (OpenAI-style dicts, role and content) are
        rendered with the model's chat template. params as for generate,
        with tools (OpenAI-style; the model's calls come back parsed in
        result.tool_calls), tool_choice ("auto", "none", "required" or a
        function's name), parallel_tool_calls, reasoning_format ("none"
        keeps a <think> block in text; by default it is result.reasoning),
        chat_template_kwargs and add_generation_prompt (default True);
        store=True keeps the conversation (result.response_id) and
        previous_response_id=ID continues one, messages being its next turn."""
        return self._run(None, None, dict(params, messages=messages))

    def stream_chat(self, messages: Sequence[Dict[str, Any]], **params: Any) -> "Stream":
        """Stream a chat's text deltas, as stream does for a prompt."""
        return Stream(self._deltas(None, None, dict(params, messages=messages)))

    def stream(self, prompt: Optional[str] = None, *, tokens: Optional[Sequence[int]] = None, **params: Any) -> "Stream":
        """Return an iterator of text deltas, yielded as they arrive. Leaving
        the loop early (break, an exception) cancels the request on the
        daemon. The Stream's request_id is set once the daemon accepts it, and
        its result (usage, finish reason) once it ends."""
        return Stream(self._deltas(prompt, tokens, params))

    def _deltas(self, prompt: Optional[str], tokens: Optional[Sequence[int]], params: Dict[str, Any]) -> Iterator[Any]:
        req_id, q = self._open()
        done = False
        try:
            self._send(p.submit_message(req_id, prompt, tokens, True, **params))
            acc = self._get(q)
            result = p.Result(request_id=acc.get("request_id", 0))
            yield result
            while True:
                msg = self._get(q)
                if msg["type"] == "token":
                    result.text += msg.get("text", "")
                    result.reasoning += msg.get("reasoning", "")
                    result.tokens.extend(msg.get("tokens") or [])
                    result.logprobs.extend(msg.get("logprobs") or [])
                    yield msg.get("text", "")
                elif msg["type"] == "done":
                    done = True
                    p.finish(result, msg, streamed=True)
                    return
        finally:
            if not done:
                self._abandon(req_id)
            self._close_call(req_id)

    def _run(self, prompt: Optional[str], tokens: Optional[Sequence[int]], params: Dict[str, Any]) -> p.Result:
        req_id, q = self._open()
        done = False
        try:
            self._send(p.submit_message(req_id, prompt, tokens, False, **params))
            acc = self._get(q)
            result = p.Result(request_id=acc.get("request_id", 0))
            while True:
                msg = self._get(q)
                if msg["type"] == "done":
                    done = True
                    return p.finish(result, msg, streamed=False)
        finally:
            if not done:
                self._abandon(req_id)
            self._close_call(req_id)

    def _abandon(self, req_id: int) -> None:
        try:
            with self._lock:
                self._next += 1
                cid = self._next
            self._send({"type": "cancel", "id": cid, "target": req_id})
        except BatchdError:
            pass

    def cancel(self, request_id: int) -> None:
        """Cancel a request by its server-wide id (Result.request_id)."""
        self._call({"type": "cancel", "request_id": request_id})

    def stats(self) -> Stats:
        """The daemon's figures, typed (item access works too)."""
        return stats_of(self._call({"type": "stats"}))

    def health(self) -> Health:
        return health_of(self._call({"type": "health"}))

    def embed(self, input: Any, *, model: str = "", dimensions: int = 0, truncate: bool = True,
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
        return [list(v) for v in ((self._call(msg)).get("embeddings") or [])]

    def rerank(self, query: str, documents: List[str], *, model: str = "", top_n: int = 0,
               keep_alive: Optional[str] = None) -> List[Dict[str, Any]]:
        """Scores of documents against query by a reranker, best first:
        [{"index": i, "score": s}], the best top_n of them (0: all)."""
        msg = p.rerank_message(query, documents, model, top_n, keep_alive)
        return [dict(r) for r in ((self._call(msg)).get("results") or [])]

    def models(self) -> List[Dict[str, Any]]:
        """Every model the daemon knows: {name, state, path, bytes, requests, ...}."""
        return list((self._call({"type": "models"})).get("models") or [])

    def running(self) -> List[Dict[str, Any]]:
        """The models loaded now."""
        return list((self._call({"type": "ps"})).get("models") or [])

    def load(self, model: str, keep_alive: Optional[str] = None) -> None:
        """Load model (returns once it is) and keep it keep_alive once idle."""
        msg: Dict[str, Any] = {"type": "load", "model": model}
        if keep_alive is not None:
            msg["keep_alive"] = str(keep_alive)
        self._call(msg)

    def unload(self, model: str) -> None:
        """Unload model once no request runs on it."""
        self._call({"type": "unload", "model": model})

    def reload(self) -> Dict[str, Any]:
        """Re-read the daemon's config file, as SIGHUP does (admins only):
        {"applied": bool, "restart_needed": [...]}; an invalid file raises."""
        r = self._call({"type": "reload"})
        return {"applied": r.get("applied", False), "restart_needed": list(r.get("restart_needed") or [])}

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._reader.is_alive() and threading.current_thread() is not self._reader:
            self._reader.join(timeout=5)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Stream:
    """Text deltas of one request (see Client.stream)."""

    def __init__(self, gen: Iterator[Any]) -> None:
        self._gen = gen
        self.result: Optional[p.Result] = None
        self.request_id = 0

    def _start(self) -> None:
        if self.result is None:
            self.result = next(self._gen)
            self.request_id = self.result.request_id

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> str:
        self._start()
        return next(self._gen)

    def start(self) -> "Stream":
        """Submit now and wait until accepted (iteration does this on demand)."""
        self._start()
        return self

    def close(self) -> None:
        """Stop reading; cancels the request if it is still running."""
        self._gen.close()

    def __del__(self) -> None:
        self._gen.close()
