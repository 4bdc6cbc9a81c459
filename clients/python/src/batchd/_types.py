"""Typed results of stats and health, as the daemon sends them (ipc/wire)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")


def _build(cls: Type[T], data: Optional[Dict[str, Any]]) -> T:
    """Build cls from a decoded map, keeping known keys (nested types too)."""
    data = data or {}
    kwargs: Dict[str, Any] = {}
    hints = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for name, f in hints.items():
        if name not in data:
            continue
        value = data[name]
        sub = _NESTED.get((cls.__name__, name))
        if sub is not None and isinstance(value, dict):
            value = _build(sub, value)
        elif sub is not None and isinstance(value, list):
            value = [_build(sub, v) for v in value]
        kwargs[name] = value
    return cls(**kwargs)  # type: ignore[call-arg]


class _Mapping:
    """Item access too (``stats["running"]``), for code written against dicts."""

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


@dataclass
class Dist(_Mapping):
    """A latency distribution over the recent samples, in seconds."""

    count: int = 0
    mean: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    p99: float = 0.0


@dataclass
class Plan(_Mapping):
    device: str = ""
    profile: str = ""
    kv_blocks: int = 0
    block_size: int = 0
    kv_cache_type: str = ""
    kv_bytes_per_token: int = 0
    sliding_window: int = 0
    kv_window_tables: int = 0
    kv_block_layers: int = 0
    max_context: int = 0
    max_num_seqs: int = 0
    max_num_batched_tokens: int = 0
    threads: int = 0
    warnings: List[str] = field(default_factory=list)


@dataclass
class RequestInfo(_Mapping):
    """A request in flight: who, where, how far (never its text)."""

    id: int = 0
    uid: int = 0
    user: str = ""
    channel: str = ""
    state: str = ""
    age_s: float = 0.0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    max_tokens: int = 0
    cancel_requested: bool = False


@dataclass
class Stats(_Mapping):
    """The daemon's figures (see ipc/wire/stats.go for every field)."""

    state: str = ""
    mode: str = ""
    policy: str = ""
    max_num_seqs: int = 0
    max_num_batched_tokens: int = 0
    running: int = 0
    waiting: int = 0
    running_by_channel: Dict[str, int] = field(default_factory=dict)
    waiting_by_channel: Dict[str, int] = field(default_factory=dict)
    kv_blocks_total: int = 0
    kv_blocks_used: int = 0
    kv_blocks_cached: int = 0
    kv_usage: float = 0.0
    kv_window_blocks_used: int = 0
    kv_window_blocks_cached: int = 0
    block_size: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    preemptions: int = 0
    steps: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    forward_tokens: int = 0
    forward_seconds: float = 0.0
    tokens_per_sec: float = 0.0
    batch_sizes: List[int] = field(default_factory=list)
    mean_batch_size: float = 0.0
    sleeping: bool = False
    sleeps: int = 0
    wakes: int = 0
    last_wake_seconds: float = 0.0
    submitted: int = 0
    rejected: int = 0
    finished: Dict[str, int] = field(default_factory=dict)
    controller: Optional[Dict[str, Any]] = None
    ttft: Dist = field(default_factory=Dist)
    inter_token: Dist = field(default_factory=Dist)
    queue_time: Dist = field(default_factory=Dist)
    e2e: Dist = field(default_factory=Dist)
    plan: Plan = field(default_factory=Plan)
    config: Dict[str, Any] = field(default_factory=dict)
    reloads: int = 0
    reload_errors: int = 0
    last_reload_error: str = ""
    restart_needed: List[str] = field(default_factory=list)
    connections: Dict[str, Any] = field(default_factory=dict)
    reload_held: List[str] = field(default_factory=list)
    requests: List[RequestInfo] = field(default_factory=list)


@dataclass
class ModelInfo(_Mapping):
    path: str = ""
    format: str = ""
    arch: str = ""
    dim: int = 0
    layers: int = 0
    vocab: int = 0
    context: int = 0
    chat: str = ""        # the chat template's name, "" when chat is off
    chat_error: str = ""  # why chat is off


@dataclass
class Health(_Mapping):
    """The daemon's state: loading, ready, sleeping or draining."""

    state: str = ""
    version: str = ""
    model: Optional[ModelInfo] = None


_NESTED = {
    ("Stats", "ttft"): Dist, ("Stats", "inter_token"): Dist, ("Stats", "queue_time"): Dist, ("Stats", "e2e"): Dist,
    ("Stats", "plan"): Plan, ("Stats", "requests"): RequestInfo, ("Health", "model"): ModelInfo,
}


def stats_of(msg: Dict[str, Any]) -> Stats:
    return _build(Stats, msg.get("stats"))


def health_of(msg: Dict[str, Any]) -> Health:
    return _build(Health, msg)
