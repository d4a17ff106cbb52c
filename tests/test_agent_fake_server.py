"""The fake OpenAI server other tests rely on: non-streaming answers, process mode, control endpoints."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai

from tests.support.fake_openai import FakeOpenAI, prefix_extension_problem, prompt_bytes

SCRIPT = Path(__file__).parent / "support" / "fake_openai.py"


def test_non_streaming_completion_with_tool_calls_and_cache_figures():
    with FakeOpenAI([{"tool_calls": [{"id": "t1", "name": "f", "arguments": {"a": 1}}]}]) as fake:
        fake.add({"content": "plain"})
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        messages = [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "q"}]
        first = client.chat.completions.create(model="m", messages=messages)
        call = first.choices[0].message.tool_calls[0]
        assert (call.id, call.function.name, call.function.arguments) == ("t1", "f", '{"a": 1}')
        assert first.choices[0].finish_reason == "tool_calls"
        assert first.usage.prompt_tokens_details.cached_tokens == 0
        second = client.chat.completions.create(
            model="m", messages=[*messages, {"role": "user", "content": "r"}]
        )
        assert second.choices[0].message.content == "plain"
        assert second.usage.prompt_tokens_details.cached_tokens >= 100
        assert prefix_extension_problem(fake.requests[0].body, fake.requests[1].body) is None


def test_prompt_bytes_are_raw_slices():
    body = b'{"model":"m","messages":[{"role":"user","content":"caf\xc3\xa9"}],"tools":[{"x":1}]}'
    assert prompt_bytes(body) == b'[{"x":1}]\n{"role":"user","content":"caf\xc3\xa9"}'


def test_prefix_extension_problem_spots_a_rewritten_message():
    a = b'{"messages":[{"role":"system","content":"A"},{"role":"user","content":"x"}],"tools":[]}'
    b = b'{"messages":[{"role":"system","content":"B"},{"role":"user","content":"x"},{"role":"user"}],"tools":[]}'
    c = b'{"messages":[{"role":"system","content":"A"},{"role":"user","content":"x"},{"role":"user"}],"tools":[1]}'
    d = b'{"messages":[{"role":"system","content":"A"},{"role":"user","content":"x"},{"role":"user"}],"tools":[]}'
    assert "differ at offset" in prefix_extension_problem(a, b)
    assert "after `messages`" in prefix_extension_problem(a, c)
    assert prefix_extension_problem(a, d) is None
    assert "no new messages" in prefix_extension_problem(a, a)


def test_exhausted_script_answers_500():
    with FakeOpenAI() as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        except openai.InternalServerError as exc:
            assert "fake script exhausted" in str(exc)
        else:
            raise AssertionError("expected HTTP 500")


def test_runs_as_a_process_with_a_script_file(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"responses": [{"content": "from file"}], "default": {"content": "d"}})
    )
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "from file"
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "z"}]
        )
        assert reply.choices[0].message.content == "d"
        root = base_url.removesuffix("/v1")
        request = urllib.request.Request(
            f"{root}/_fake/script", data=json.dumps([{"content": "added"}]).encode(), method="POST"
        )
        assert json.load(urllib.request.urlopen(request))["remaining"] == 1
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "y"}]
        )
        assert reply.choices[0].message.content == "added"
        recorded = json.load(urllib.request.urlopen(f"{root}/_fake/requests"))
        completions = [r for r in recorded if r["path"].endswith("/chat/completions")]
        assert [json.loads(r["body"])["messages"][0]["content"] for r in completions] == [
            "q",
            "z",
            "y",
        ]
    finally:
        process.terminate()
        process.wait(10)
    assert process.returncode == 0
