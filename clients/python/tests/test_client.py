from __future__ import annotations

import asyncio
import json
import subprocess
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

import batchd
from conftest import models_dir, start, wait_idle


def max_tokens(g: dict) -> int:
    return g["steps"] + 1 - len(g["prompt_tokens"])


def golden_args(g: dict) -> dict:
    """A golden's limits: its length and, where run.c stopped on BOS, that
    stop too (a GGUF model ends on its end-of-generation set only, as
    llama.cpp does)."""
    args = {"max_tokens": max_tokens(g)}
    if g["stop"] == "bos":
        args["stop_token_ids"] = [1]
    return args


def test_goldens_sync(daemon, goldens):
    with batchd.Client(daemon) as c:
        for g in goldens:
            r = c.generate(g["prompt"], **golden_args(g))
            assert r.tokens == g["output_tokens"]
            assert r.prompt_tokens == g["prompt_tokens"]
            assert r.text == g["text"]
            assert r.finish_reason == ("stop" if g["stop"] == "bos" else "length")
            assert "".join(c.stream(g["prompt"], **golden_args(g))) == g["text"]


def test_goldens_async(daemon, goldens):
    async def main():
        async with await batchd.AsyncClient.connect(daemon) as c:
            for g in goldens:
                r = await c.generate(g["prompt"], **golden_args(g))
                assert r.tokens == g["output_tokens"] and r.text == g["text"]
                parts = [t async for t in c.stream(g["prompt"], **golden_args(g))]
                assert "".join(parts) == g["text"]

    asyncio.run(main())


def test_concurrent_streams_from_threads(daemon, goldens):
    errors = []

    with batchd.Client(daemon) as c:
        def work(i: int) -> None:
            g = goldens[i % len(goldens)]
            try:
                text = "".join(c.stream(g["prompt"], **golden_args(g)))
                assert text == g["text"], (i, text)
            except Exception as e:  # noqa: BLE001 - collected and re-raised below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors


def test_sixteen_async_streams(daemon, goldens):
    async def one(c, g):
        return "".join([t async for t in c.stream(g["prompt"], **golden_args(g))])

    async def main():
        async with await batchd.AsyncClient.connect(daemon) as c:
            gs = [goldens[i % len(goldens)] for i in range(16)]
            texts = await asyncio.gather(*(one(c, g) for g in gs))
            assert texts == [g["text"] for g in gs]

    asyncio.run(main())


def test_breaking_out_of_a_stream_cancels(daemon):
    with batchd.Client(daemon) as c:
        before = c.stats()["finished"].get("cancelled", 0)
        for i, _ in enumerate(c.stream("Once upon a time", max_tokens=400)):
            if i == 2:
                break
        s = wait_idle(daemon)
        assert s["finished"].get("cancelled", 0) == before + 1


def test_async_break_and_task_cancel(daemon):
    async def main():
        async with await batchd.AsyncClient.connect(daemon) as c:
            before = (await c.stats())["finished"].get("cancelled", 0)
            agen = c.stream("Once upon a time", max_tokens=400)
            async for _ in agen:
                break
            await agen.aclose()

            started = asyncio.Event()

            async def consume():
                async for _ in c.stream("Lily", max_tokens=400):
                    started.set()

            task = asyncio.create_task(consume())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(500):
                s = await c.stats()
                if s["running"] == 0 and s["finished"].get("cancelled", 0) == before + 2:
                    return
                await asyncio.sleep(0.02)
            raise AssertionError(f"requests not cancelled: {s}")

    asyncio.run(main())


def test_cancel_by_id(daemon):
    with batchd.Client(daemon) as c, batchd.Client(daemon) as other:
        s = c.stream("Once upon a time", max_tokens=450).start()
        assert s.request_id > 0
        other.cancel(s.request_id)
        rest = "".join(s)
        assert s.result.finish_reason == "cancelled"
        assert s.result.text == rest
        with pytest.raises(batchd.NotFound):
            other.cancel(s.request_id)
    wait_idle(daemon)


def test_errors_map_to_exceptions(daemon):
    with batchd.Client(daemon) as c:
        with pytest.raises(batchd.InvalidRequest):
            c.generate(tokens=[1, 999999])
        # Rejected for its value, not for its encoding (a float64 once failed
        # to decode at all, and this passed for the wrong reason).
        with pytest.raises(batchd.InvalidRequest, match="temperature -1"):
            c.generate("x", temperature=-1.0)
        with pytest.raises(batchd.InvalidRequest):
            list(c.stream("x", channel="warp"))
        assert issubclass(batchd.QueueFull, batchd.ResourceExhausted)
    with pytest.raises(batchd.ConnectionClosed):
        batchd.Client("/nonexistent/batchd.sock")


def test_socket_path_default(monkeypatch):
    monkeypatch.delenv("BATCHD_SOCKET", raising=False)
    assert batchd.socket_path() == "/run/batchd/batchd.sock"
    monkeypatch.setenv("BATCHD_SOCKET", "/tmp/x.sock")
    assert batchd.socket_path() == "/tmp/x.sock"
    assert batchd.socket_path("/a.sock") == "/a.sock"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_permission_denied(batchd_bin):
    # A directory of its own that other users can traverse (pytest's are 0700).
    d = Path(tempfile.mkdtemp(prefix="batchd-perm-"))
    proc = start(batchd_bin, d, '[server]\nsocket_mode = "0666"\nallowed_users = ["root"]\n')
    try:
        pid = os.fork()
        if pid == 0:  # the child becomes nobody and tries to connect
            code = 3
            try:
                os.setgid(65534)
                os.setuid(65534)
                batchd.Client(proc.socket)
                code = 1
            except batchd.PermissionDenied:
                code = 0
            except BaseException:  # noqa: BLE001
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)


def test_parse_special(daemon):
    """Special-token text becomes the token by default (as llama.cpp's
    server); parse_special=False keeps it as text."""
    with batchd.Client(daemon) as c:
        parsed = c.generate("<s>Once", max_tokens=1)
        literal = c.generate("<s>Once", max_tokens=1, parse_special=False)
    assert parsed.prompt_tokens[:2] == [1, 1]
    assert literal.prompt_tokens[0] == 1 and literal.prompt_tokens[1] != 1
    assert len(literal.prompt_tokens) > len(parsed.prompt_tokens)


@pytest.fixture(scope="module")
def qwen_daemon(batchd_bin, tmp_path_factory):
    model = models_dir() / "arch" / "tiny-qwen2.gguf"
    if not model.exists():
        pytest.skip(f"model files not found in {models_dir()}; set BATCHD_TEST_MODELS")
    proc = start(batchd_bin, tmp_path_factory.mktemp("qwen"), model=model)
    yield proc.socket, str(model)
    proc.terminate()
    proc.wait(timeout=30)


def test_chat(qwen_daemon, batchd_bin, tmp_path):
    """chat renders the model's template: its prompt is the tokens of the
    text `batchd template` prints, with special tokens parsed; a streamed
    chat gives the same greedy text; a bad conversation is a typed error."""
    sock, model = qwen_daemon
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(msgs))
    text = subprocess.run([batchd_bin, "template", "--model", model, "--messages", str(conv)],
                          check=True, capture_output=True, text=True).stdout
    assert text.startswith("<|im_start|>system\nBe brief.<|im_end|>") and text.endswith("<|im_start|>assistant\n")
    with batchd.Client(sock) as c:
        chat = c.chat(msgs, max_tokens=8)
        plain = c.generate(text, max_tokens=8)
        streamed = "".join(c.stream_chat(msgs, max_tokens=8))
        with pytest.raises(batchd.InvalidRequest):
            c.chat([{"content": "no role"}])
    assert chat.prompt_tokens == plain.prompt_tokens
    assert chat.text == plain.text == streamed


def test_stored_conversation(qwen_daemon):
    """store=True keeps a chat and names it; previous_response_id continues
    it (the prompt holds the first turn and its answer, so it is longer
    than the second turn alone); an unknown id is NotFound; a prompt
    cannot continue a conversation."""
    sock, _ = qwen_daemon
    with batchd.Client(sock) as c:
        first = c.chat([{"role": "user", "content": "Hi there"}], max_tokens=4, store=True)
        assert first.response_id.startswith("resp_")
        alone = c.chat([{"role": "user", "content": "And then?"}], max_tokens=2)
        nxt = c.chat([{"role": "user", "content": "And then?"}], max_tokens=2, previous_response_id=first.response_id)
        assert nxt.response_id == ""
        assert nxt.usage["prompt_tokens"] > alone.usage["prompt_tokens"] + first.usage["completion_tokens"]
        with pytest.raises(batchd.NotFound):
            c.chat([{"role": "user", "content": "x"}], max_tokens=2, previous_response_id="resp_nope")
        with pytest.raises(ValueError):
            c.generate("x", store=True)


def test_chat_async(qwen_daemon):
    sock, _ = qwen_daemon

    async def run():
        async with await batchd.AsyncClient.connect(sock) as c:
            r = await c.chat([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], max_tokens=4)
            parts = [d async for d in c.stream_chat([{"role": "user", "content": "Hi"}], max_tokens=4)]
        return r, parts

    r, parts = asyncio.run(run())
    assert r.usage["completion_tokens"] == 4 and "".join(parts) == r.text


def test_logprobs(qwen_daemon):
    """logprobs: one entry per generated token, the greedy token at the top
    of its alternatives; the same whether streamed or not."""
    sock, _ = qwen_daemon
    with batchd.Client(sock) as c:
        r = c.generate("Hello", max_tokens=4, logprobs=True, top_logprobs=3)
        s = c.stream("Hello", max_tokens=4, logprobs=True, top_logprobs=3)
        list(s)
    assert len(r.logprobs) == len(r.tokens) == 4
    for tok, lp in zip(r.tokens, r.logprobs):
        assert lp["token"] == tok == lp["top"][0]["token"] and lp["logprob"] <= 0 and len(lp["top"]) == 3
    assert [lp["logprob"] for lp in s.result.logprobs] == [lp["logprob"] for lp in r.logprobs]


def test_models_load_and_unload(batchd_bin, synth_model, tmp_path):
    """A model from models_dir: listed, loaded, run by name, unloaded."""
    mdir = tmp_path / "models"
    mdir.mkdir()
    (mdir / "other.gguf").symlink_to(synth_model)
    proc = start(batchd_bin, tmp_path, config=f'models_dir = "{mdir}"\n', model=Path(synth_model))
    try:
        with batchd.Client(proc.socket) as c:
            names = {m["name"]: m for m in c.models()}
            assert names["other"]["state"] == "available"
            assert any(m.get("default") for m in names.values())
            c.load("other", keep_alive="-1")
            assert "other" in {m["name"] for m in c.running()}
            r = c.generate("hello", model="other", max_tokens=3, ignore_eos=True)
            assert len(r.tokens) == 3
            c.unload("other")
            assert "other" not in {m["name"] for m in c.running()}
            with pytest.raises(batchd.BatchdError):
                c.generate("hello", model="nope", max_tokens=1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_rerank(batchd_bin, synth_reranker, tmp_path_factory):
    """Scores best first, each with its document's index; top_n keeps the
    best; the same pair scores the same alone; a probability (yes/no head)."""
    proc = start(batchd_bin, tmp_path_factory.mktemp("rerank"), model=Path(synth_reranker))
    try:
        docs = ["a cat sat", "dogs bark at night", "the cat sat on the mat", "rain"]
        with batchd.Client(proc.socket) as c:
            res = c.rerank("where did the cat sit", docs)
            assert sorted(r["index"] for r in res) == [0, 1, 2, 3]
            scores = [r["score"] for r in res]
            assert scores == sorted(scores, reverse=True)
            assert all(0 < s < 1 for s in scores)
            assert c.rerank("where did the cat sit", docs, top_n=2) == res[:2]
            alone = c.rerank("where did the cat sit", [docs[res[0]["index"]]])
            assert alone[0]["score"] == res[0]["score"]
            with pytest.raises(batchd.InvalidRequest):
                c.rerank("q", [])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_embed(synth_daemon):
    """One unit vector per input; dimensions keeps a normalised prefix."""
    with batchd.Client(synth_daemon) as c:
        vecs = c.embed(["hello", "world wide"])
        assert len(vecs) == 2
        for v in vecs:
            assert abs(sum(x * x for x in v) - 1) < 1e-5
        short = c.embed("hello", dimensions=4)
        assert len(short) == 1 and len(short[0]) == 4
        raw = c.embed("hello", normalize=False)
        assert abs(sum(x * x for x in raw[0]) - 1) > 1e-3
