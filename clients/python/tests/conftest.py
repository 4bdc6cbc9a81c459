"""Fixtures: a real batchd on a temp socket with the stories260K model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

import batchd  # noqa: E402


def models_dir() -> Path:
    return Path(os.environ.get("BATCHD_TEST_MODELS") or ROOT.parent / "shared" / "models")


@pytest.fixture(scope="session")
def goldens():
    path = models_dir() / "stories260K_golden.json"
    if not path.exists():
        pytest.skip(f"model files not found in {models_dir()}; set BATCHD_TEST_MODELS")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def batchd_bin(tmp_path_factory) -> str:
    if os.environ.get("BATCHD_BIN"):
        return os.environ["BATCHD_BIN"]
    out = tmp_path_factory.mktemp("bin") / "batchd"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/batchd"], cwd=ROOT, check=True)
    return str(out)


@pytest.fixture(scope="session")
def synth_model(tmp_path_factory) -> str:
    """A tiny random-weight GGUF from testing/modelgen: for protocol tests
    that need no real weights (they run without ../shared)."""
    out = tmp_path_factory.mktemp("model") / "synth.gguf"
    subprocess.run(["go", "run", "./testing/modelgen", "--out", str(out), "--dim", "64", "--layers", "2", "--heads", "4",
                    "--ffn", "96", "--vocab", "300", "--ctx", "256", "--dtype", "f32", "--seed", "1"],
                   cwd=ROOT, check=True, capture_output=True)
    return str(out)


@pytest.fixture(scope="session")
def synth_reranker(tmp_path_factory) -> str:
    """A tiny random-weight Qwen3-style reranker from testing/modelgen."""
    out = tmp_path_factory.mktemp("rerank") / "rerank.gguf"
    subprocess.run(["go", "run", "./testing/modelgen", "--out", str(out), "--dim", "64", "--layers", "2", "--heads", "4",
                    "--ffn", "96", "--vocab", "300", "--ctx", "256", "--dtype", "f32", "--seed", "2", "--arch", "qwen3",
                    "--rank", "yes,no", "--rank-template", "Query: {query}\nDocument: {document}\nRelevant:"],
                   cwd=ROOT, check=True, capture_output=True)
    return str(out)


@pytest.fixture(scope="session")
def synth_daemon(batchd_bin, synth_model, tmp_path_factory):
    proc = start(batchd_bin, tmp_path_factory.mktemp("synth"), model=Path(synth_model))
    yield proc.socket
    proc.terminate()
    proc.wait(timeout=30)


def start(batchd_bin: str, directory: Path, config: str = "", model: Path | None = None) -> subprocess.Popen:
    directory.chmod(0o755)  # other users reach the socket in the permission test
    sock = directory / "batchd.sock"
    cfg = directory / "batchd.toml"
    cfg.write_text(config)
    model = model or models_dir() / "stories260K.gguf"
    if not model.exists():
        pytest.skip(f"model files not found in {models_dir()}; set BATCHD_TEST_MODELS")
    proc = subprocess.Popen([batchd_bin, "serve", "--config", str(cfg), "--model", str(model), "--socket", str(sock),
                             "--log-level", "warn"])
    deadline = time.time() + 30
    while True:
        try:
            with batchd.Client(str(sock)) as c:
                if c.health()["state"] == "ready":
                    break
        except batchd.BatchdError:
            pass
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("batchd did not become ready")
        time.sleep(0.05)
    proc.socket = str(sock)  # type: ignore[attr-defined]
    return proc


@pytest.fixture(scope="session")
def daemon(batchd_bin, tmp_path_factory):
    # float32 K and V: one golden step is a near tie (logits 5e-4 apart)
    # that half floats may decide either way on some CPUs (the Go backend
    # tests check half floats step by step).
    proc = start(batchd_bin, tmp_path_factory.mktemp("daemon"), config='[engine]\nkv_cache_type = "f32"\n')
    yield proc.socket
    proc.terminate()
    proc.wait(timeout=30)


def wait_idle(sock: str, timeout: float = 10) -> dict:
    deadline = time.time() + timeout
    with batchd.Client(sock) as c:
        while True:
            s = c.stats()
            if s["running"] == 0 and s["kv_blocks_used"] == 0:
                return s
            if time.time() > deadline:
                raise AssertionError(f"daemon not idle: {s}")
            time.sleep(0.02)
