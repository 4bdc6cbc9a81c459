"""Framing and message helpers shared by the sync and asyncio clients."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import msgpack

from .errors import BatchdError, from_wire

PROTOCOL_VERSION = 1
DEFAULT_SOCKET = "/run/batchd/batchd.sock"
MAX_FRAME = 64 << 20
_LEN = struct.Struct(">I")


def socket_path(path: Optional[str] = None) -> str:
    """Return path, else $BATCHD_SOCKET, else /run/batchd/batchd.sock."""
    return path or os.environ.get("BATCHD_SOCKET") or DEFAULT_SOCKET


def encode(msg: Dict[str, Any]) -> bytes:
    body = msgpack.packb(msg, use_bin_type=True)
    return _LEN.pack(len(body)) + body


def decode(body: bytes) -> Dict[str, Any]:
    return msgpack.unpackb(body, raw=False, strict_map_key=False)


def frame_length(header: bytes) -> int:
    (n,) = _LEN.unpack(header)
    if n > MAX_FRAME:
        raise BatchdError(f"frame of {n} bytes from the daemon exceeds {MAX_FRAME}")
    return n


def error_of(msg: Dict[str, Any]) -> Optional[BatchdError]:
    if msg.get("type") == "error":
        return from_wire(msg.get("code", "internal"), msg.get("message", ""))
    return None


def rerank_message(query: str, documents: Sequence[str], model: str = "", top_n: int = 0,
                   keep_alive: Optional[str] = None) -> Dict[str, Any]:
    """The rerank frame (without its id) for both clients."""
    msg: Dict[str, Any] = {"type": "rerank", "query": query, "documents": list(documents)}
    if model:
        msg["model"] = model
    if top_n:
        msg["top_n"] = int(top_n)
    if keep_alive is not None:
        msg["keep_alive"] = str(keep_alive)
    return msg


def submit_message(
    req_id: int,
    prompt: Optional[str],
    tokens: Optional[Sequence[int]],
    stream: bool,
    max_tokens: int = 0,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 0.0,
    min_p: float = 0.0,
    repetition_penalty: float = 0.0,
    seed: int = 0,
    stop: Optional[Sequence[str]] = None,
    stop_token_ids: Optional[Sequence[int]] = None,
    priority: int = 0,
    channel: str = "",
    tags: Optional[Sequence[str]] = None,
    cache_salt: str = "",
    parse_special: Optional[bool] = None,
    messages: Optional[Sequence[Dict[str, Any]]] = None,
    tools: Optional[Sequence[Dict[str, Any]]] = None,
    tool_choice: Optional[Any] = None,
    parallel_tool_calls: Optional[bool] = None,
    reasoning_format: Optional[str] = None,
    chat_template_kwargs: Optional[Dict[str, Any]] = None,
    add_generation_prompt: Optional[bool] = None,
    previous_response_id: str = "",
    store: bool = False,
    frequency_penalty: float = 0.0,
    presence_penalty: float = 0.0,
    ignore_eos: bool = False,
    logprobs: bool = False,
    top_logprobs: int = 0,
    grammar: Optional[str] = None,
    json_schema: Optional[Dict[str, Any]] = None,
    json_schema_strict: bool = True,
    json_object: bool = False,
    regex: Optional[str] = None,
    choice: Optional[Sequence[str]] = None,
    model: str = "",
    keep_alive: Optional[str] = None,
) -> Dict[str, Any]:
    msg: Dict[str, Any] = {"type": "submit", "id": req_id, "stream": stream}
    if model:
        msg["model"] = model  # a name or alias of models(); "" is the default
    if keep_alive is not None:
        msg["keep_alive"] = str(keep_alive)  # "5m", seconds, "0", "-1"
    if messages is not None:
        if prompt is not None or tokens is not None:
            raise ValueError("give one of prompt, tokens and messages")
        # Dicts keep their key order on the wire: templates print tools as written.
        msg["messages"] = list(messages)
        if tools:
            msg["tools"] = list(tools)
        if tool_choice is not None:
            # "auto", "none", "required", a function's name, or OpenAI's object.
            if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required"):
                tool_choice = {"type": "function", "function": {"name": tool_choice}}
            msg["tool_choice"] = tool_choice
        if parallel_tool_calls is not None:
            msg["parallel_tool_calls"] = bool(parallel_tool_calls)
        if reasoning_format:
            msg["reasoning_format"] = reasoning_format
        if chat_template_kwargs:
            msg["chat_template_kwargs"] = dict(chat_template_kwargs)
        if add_generation_prompt is not None:
            msg["add_generation_prompt"] = bool(add_generation_prompt)
        # A stored conversation: messages are its next turn; store keeps this
        # one (result.response_id names it).
        if previous_response_id:
            msg["previous_response_id"] = previous_response_id
        if store:
            msg["store"] = True
    elif previous_response_id or store:
        raise ValueError("previous_response_id and store need messages (a chat)")
    elif tokens is not None:
        msg["tokens"] = list(tokens)
    else:
        msg["prompt"] = prompt or ""
    optional = {
        "max_tokens": max_tokens, "temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p,
        "repetition_penalty": repetition_penalty, "frequency_penalty": frequency_penalty,
        "presence_penalty": presence_penalty, "ignore_eos": ignore_eos, "logprobs": logprobs, "top_logprobs": top_logprobs, "seed": seed, "priority": priority, "channel": channel,
        "stop": list(stop or []), "stop_token_ids": list(stop_token_ids or []), "tags": list(tags or []),
        "cache_salt": cache_salt,
    }
    msg.update({k: v for k, v in optional.items() if v})
    if parse_special is not None:
        msg["parse_special"] = bool(parse_special)
    # Structured output, at most one (the daemon refuses two).
    if grammar:
        msg["grammar"] = grammar
    if json_schema is not None:
        msg["json_schema"] = json_schema
        if not json_schema_strict:
            msg["json_schema_strict"] = False
    if json_object:
        msg["json_object"] = True
    if regex:
        msg["regex"] = regex
    if choice:
        msg["choice"] = list(choice)
    return msg


@dataclass
class Result:
    """A finished request."""

    request_id: int
    text: str = ""
    tokens: List[int] = field(default_factory=list)
    prompt_tokens: List[int] = field(default_factory=list)
    finish_reason: str = ""
    usage: Dict[str, int] = field(default_factory=dict)
    timings: Dict[str, float] = field(default_factory=dict)
    preemptions: int = 0
    # With logprobs=True: per token {token, logprob, text, bytes, top: [...]}.
    logprobs: List[Dict[str, Any]] = field(default_factory=list)
    # The model's <think> block, apart from text; its tool calls:
    # [{id, name, arguments (JSON text)}], finish_reason "tool_calls".
    reasoning: str = ""
    tool_calls: List[Dict[str, Any]] = field(default_factory=list)
    # With store=True: the stored conversation's id, for previous_response_id.
    response_id: str = ""


def finish(result: Result, done: Dict[str, Any], streamed: bool) -> Result:
    if not streamed:
        result.text = done.get("text", "")
        result.tokens = list(done.get("tokens") or [])
        result.prompt_tokens = list(done.get("prompt_tokens") or [])
        result.logprobs = list(done.get("logprobs") or [])
        result.reasoning = done.get("reasoning", "")
    result.tool_calls = [dict(c) for c in (done.get("tool_calls") or [])]
    result.finish_reason = done.get("finish_reason", "")
    result.usage = dict(done.get("usage") or {})
    result.timings = dict(done.get("timings") or {})
    result.preemptions = done.get("preemptions", 0)
    result.response_id = done.get("response_id", "")
    if result.finish_reason == "error":
        raise from_wire(done.get("code", "internal"), done.get("message", ""))
    return result
