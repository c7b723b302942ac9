#!/usr/bin/env python3
"""An agent loop in Python with toolgate, standard library only.

The model's response goes to toolgate as the API returned it (with the
OpenAI SDK: ``completion.model_dump()``), and toolgate's ``messages`` go back
into the conversation as they come. A turn that holds a call for a person's
approval answers 202; ``Toolgate.batch`` then asks where the batch stands
until it is complete.

  TOOLGATE_URL=http://127.0.0.1:8080 OPENAI_API_KEY=sk-... python3 examples/python/openai_chat.py "Paint the tile at 1,2 red"

OPENAI_BASE_URL (default https://api.openai.com/v1) points it at any server
of the Chat Completions API; OPENAI_MODEL picks the model.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


class ToolgateError(Exception):
    """toolgate answered with a problem (4xx or 5xx)."""


class Toolgate:
    """The few toolgate calls an orchestrator loop makes."""

    def __init__(self, url, api_key=None, poll_seconds=1.0):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.poll_seconds = poll_seconds

    def create_run(self, **options):
        return self._send("POST", "/v1/runs", options)

    def tools(self, run_id, fmt):
        """The run's tools as ``fmt`` (openaiChat, openaiResponses, anthropic, gemini) takes them."""
        query = urllib.parse.urlencode({"format": fmt})
        return self._send("GET", f"/v1/runs/{_quote(run_id)}/tools?{query}")["tools"]

    def batch(self, run_id, body):
        """One model turn, e.g. ``{"openaiChat": completion}``; waits out a turn held for approval."""
        answer = self._send("POST", f"/v1/runs/{_quote(run_id)}/batches", body)
        if answer.get("state") == "awaiting_approval":
            held = ", ".join(f"{a['callId']} ({a['tool']})" for a in answer.get("approvals", []))
            print(f"turn {answer['batchId']} of run {run_id} waits for a person to approve {held}: "
                  f"open /ui, or POST /v1/runs/{run_id}/batches/{answer['batchId']}/approvals",
                  file=sys.stderr, flush=True)
        while answer.get("state") in ("awaiting_approval", "running"):
            time.sleep(self.poll_seconds)
            answer = self._send("GET", f"/v1/runs/{_quote(run_id)}/batches/{_quote(answer['batchId'])}")
        return answer

    def _send(self, method, path, body=None):
        headers = {"accept": "application/json"}
        data = None
        if body is not None:
            headers["content-type"] = "application/json"
            data = json.dumps(body).encode()
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request) as response:
                return json.load(response)
        except urllib.error.HTTPError as err:
            problem = json.load(err)
            raise ToolgateError(f"toolgate answered {err.code}: {problem.get('detail') or problem.get('title')}") from None


def _quote(segment):
    return urllib.parse.quote(segment, safe="")


def chat_completion(base_url, api_key, model, messages, tools):
    """POST /chat/completions: the response as a dict, what the SDK's ``.model_dump()`` gives."""
    body = json.dumps({"model": model, "messages": messages, "tools": tools}).encode()
    request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=body, method="POST",
                                     headers={"content-type": "application/json", "authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request) as response:
        return json.load(response)


def chat_loop(toolgate, base_url, api_key, model, prompt):
    run_id = toolgate.create_run()["runId"]
    tools = toolgate.tools(run_id, "openaiChat")
    messages = [{"role": "user", "content": prompt}]
    while True:
        completion = chat_completion(base_url, api_key, model, messages, tools)
        message = completion["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return message.get("content")
        # The whole completion: toolgate takes the calls, their ids and the usage from it.
        answer = toolgate.batch(run_id, {"openaiChat": completion})
        messages.extend(answer["messages"])
        if not answer["continue"]:
            return None


def main():
    toolgate = Toolgate(os.environ.get("TOOLGATE_URL", "http://127.0.0.1:8080"), os.environ.get("TOOLGATE_API_KEY"),
                        float(os.environ.get("TOOLGATE_POLL_SECONDS", "1")))
    prompt = sys.argv[1] if len(sys.argv) > 1 else "Look at the tile at 1,2."
    print(chat_loop(toolgate, os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"), os.environ["OPENAI_API_KEY"],
                    os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"), prompt))


if __name__ == "__main__":
    main()
