"""Python's `openai` client against `dreamgym model serve` on the real local model: what a
Python trainer or tool sees."""

from __future__ import annotations

import json

import openai
import pytest

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def client(server_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server_url, api_key="none", max_retries=0, timeout=120)


def test_lists_the_served_model(client: openai.OpenAI) -> None:
    models = client.models.list()
    assert [model.id for model in models.data] == [MODEL]


def test_chat_with_json_schema_and_logprobs(client: openai.OpenAI) -> None:
    response = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Give a fruit and its colour as JSON."}],
        response_format={
            "type": "json_schema",
            "json_schema": {
                "name": "fruit",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {
                        "fruit": {"type": "string", "maxLength": 20},
                        "colour": {"type": "string", "maxLength": 20},
                    },
                    "required": ["fruit", "colour"],
                    "additionalProperties": False,
                },
            },
        },
        temperature=0,
        max_tokens=60,
        logprobs=True,
        top_logprobs=2,
    )
    choice = response.choices[0]
    assert choice.finish_reason == "stop"
    value = json.loads(choice.message.content)
    assert list(value) == ["fruit", "colour"]
    tokens = choice.logprobs.content
    assert "".join(token.token for token in tokens) == choice.message.content
    assert all(token.logprob <= 0 and len(token.top_logprobs) == 2 for token in tokens)
    assert response.usage.completion_tokens == len(tokens)


def test_completions_echo_scores_the_prompt(client: openai.OpenAI) -> None:
    prompts = ["The sky is blue.", "The sky is made of cheese."]
    response = client.completions.create(
        model=MODEL, prompt=prompts, max_tokens=1, temperature=0, echo=True, logprobs=1
    )
    totals = []
    for choice, prompt in zip(sorted(response.choices, key=lambda c: c.index), prompts):
        assert choice.text.startswith(prompt)
        logprobs = choice.logprobs
        assert logprobs.token_logprobs[0] is None
        # the prompt's tokens: their offsets lie inside the prompt
        inside = [lp for lp, offset in zip(logprobs.token_logprobs, logprobs.text_offset) if offset < len(prompt)]
        totals.append(sum(lp for lp in inside if lp is not None))
    assert totals[0] > totals[1]


def test_errors_are_openai_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], temperature=7
        )
