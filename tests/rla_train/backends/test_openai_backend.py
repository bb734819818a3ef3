"""Tests for OpenAICompatibleBackend against a real local HTTP server serving canned OpenAI-format answers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rla_envs.core.errors import RlaError
from rla_train.backends import BackendError, SamplingParams, make_backend
from rla_train.backends.openai_backend import OpenAICompatibleBackend
from rla_train.backends.base import render_plain


class FakeServer:
    """An OpenAI-compatible server in a thread: records requests, can fail, delay, and count concurrency."""

    def __init__(self):
        self.requests: list[dict] = []
        self.fail_statuses: list[int] = []  # statuses to answer with, one per request, before answering 200
        self.delay_s = 0.0
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization")})
                    status = server.fail_statuses.pop(0) if server.fail_statuses else 200
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    time.sleep(server.delay_s)
                    payload = server.answer(self.path, body) if status == 200 else {"error": "model exploded"}
                finally:
                    with server.lock:
                        server.in_flight -= 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    @staticmethod
    def answer(path: str, body: dict) -> dict:
        """Canned choices (in reverse index order, as servers may send them): choice 1 hits the length limit."""
        as_ids = body.get("return_tokens_as_token_ids", False)
        words_of = (lambda j: ["reply", str(j), "to", body["messages"][-1]["content"]]) if path.endswith(
            "/chat/completions") else (lambda j: ["completion", str(j), "of", body["prompt"]])
        choices = []
        for j in reversed(range(body["n"])):
            words = words_of(j)
            tokens = [f"token_id:{100 + k}" if as_ids else w for k, w in enumerate(words)]
            logprobs = [-0.1 * (k + 1) for k in range(len(words))]
            finish = "length" if j == 1 else ("stop" if j == 0 else "eos_token")
            if path.endswith("/chat/completions"):
                choices.append({"index": j, "finish_reason": finish,
                                "message": {"role": "assistant", "content": " ".join(words)},
                                "logprobs": {"content": [{"token": t, "logprob": lp, "top_logprobs": []}
                                                         for t, lp in zip(tokens, logprobs)]}})
            else:
                choices.append({"index": j, "finish_reason": finish, "text": " ".join(words),
                                "logprobs": {"tokens": tokens, "token_logprobs": logprobs}})
        return {"id": "x", "object": "list", "choices": choices}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    """A fresh fake OpenAI-compatible server for each test."""
    fake = FakeServer()
    yield fake
    fake.close()


def make(server, **kwargs):
    kwargs.setdefault("retry_backoff_s", 0.0)
    return OpenAICompatibleBackend(server.url, "tiny-served", **kwargs)


CHAT = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "look"}]


def test_chat_request_fields_and_parsed_samples(server):
    backend = make(server, api_key="secret")
    sampling = SamplingParams(max_new_tokens=7, temperature=0.5, top_p=0.9, stop=("\n",), seed=3)
    [generation] = backend.generate([CHAT], n=3, sampling=sampling)
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer secret"
    assert request["body"] == {"model": "tiny-served", "messages": CHAT, "n": 3, "max_tokens": 7, "temperature": 0.5,
                               "top_p": 0.9, "stop": ["\n"], "seed": 3, "logprobs": True}
    assert [s.text for s in generation.samples] == ["reply 0 to look", "reply 1 to look", "reply 2 to look"]
    assert [s.finish_reason for s in generation.samples] == ["stop", "length", "stop"]
    assert generation.samples[0].logprobs == pytest.approx([-0.1, -0.2, -0.3, -0.4])
    assert generation.samples[0].token_ids == [] and generation.prompt_ids == []  # not reported
    assert generation.prompt == render_plain(CHAT) and "user: look" in generation.prompt


def test_text_prompts_use_completions_and_token_ids_when_reported(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = make(server, extra_body={"return_tokens_as_token_ids": True, "top_k": 5})
    [generation] = backend.generate(["Once upon"], n=2, sampling=SamplingParams(max_new_tokens=4))
    [request] = server.requests
    assert request["path"] == "/v1/completions" and request["auth"] is None
    body = request["body"]
    assert body["prompt"] == "Once upon" and body["logprobs"] == 1 and body["n"] == 2 and body["top_k"] == 5
    assert "stop" not in body and "seed" not in body
    first, second = generation.samples
    assert first.text == "completion 0 of Once upon" and first.token_ids == [100, 101, 102, 103]
    assert first.logprobs == pytest.approx([-0.1, -0.2, -0.3, -0.4])
    assert (first.finish_reason, second.finish_reason) == ("stop", "length")
    assert generation.prompt == "Once upon"


def test_batch_runs_concurrently_and_answers_in_order(server):
    server.delay_s = 0.3
    backend = make(server, max_concurrency=4)
    prompts = [[{"role": "user", "content": f"prompt {i}"}] for i in range(4)] + ["text prompt"]
    start = time.perf_counter()
    generations = backend.generate(prompts, n=1)
    elapsed = time.perf_counter() - start
    assert [g.samples[0].text for g in generations] == [f"reply 0 to prompt {i}" for i in range(4)] + \
        ["completion 0 of text prompt"]
    assert server.max_in_flight >= 2 and elapsed < 5 * 0.3  # 5 sequential requests would take 1.5 s


def test_server_error_is_retried(server):
    server.fail_statuses = [500, 503]
    backend = make(server, max_retries=2)
    [generation] = backend.generate([CHAT], n=1)
    assert generation.samples[0].text == "reply 0 to look" and len(server.requests) == 3


def test_persistent_server_error_raises_a_clear_backend_error(server):
    server.fail_statuses = [500] * 10
    backend = make(server, max_retries=2)
    with pytest.raises(BackendError) as caught:
        backend.generate([CHAT], n=1)
    message = str(caught.value)
    assert "500" in message and f"{server.url}/chat/completions" in message and "model exploded" in message
    assert isinstance(caught.value, RlaError) and isinstance(caught.value, RuntimeError)
    assert len(server.requests) == 3  # one try + two retries


def test_client_error_is_not_retried(server):
    server.fail_statuses = [400]
    with pytest.raises(BackendError, match="HTTP 400"):
        make(server).generate(["x"], n=1)
    assert len(server.requests) == 1


def test_unreachable_server_raises_backend_error():
    backend = OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m", max_retries=1, retry_backoff_s=0.0, timeout_s=2)
    with pytest.raises(BackendError, match="is the server running"):
        backend.generate(["x"])


def test_make_backend_openai_and_bad_arguments(server):
    backend = make_backend("openai", base_url=server.url, model="tiny-served")
    assert backend.generate(["hi"])[0].samples[0].text == "completion 0 of hi"
    backend.close()
    with pytest.raises(ValueError, match="http"):
        OpenAICompatibleBackend("localhost:8000", "m")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAICompatibleBackend(server.url, "m", max_concurrency=0)
