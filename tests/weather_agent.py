"""The agent loop several tests and the viewer benchmark record: each question is a tool call, a
multi-KB tool result, and an answer (the linear layout's and the viewer's workload)."""

from __future__ import annotations

from typing import Any

SYSTEM = "You plan trips. Check the weather before you suggest anything, and say which tool told you. " * 22
TOOLS = [
    {
        "name": "get_weather",
        "description": "The forecast for a city: temperature, wind and rain for the next three days.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def agent(client: Any, questions: int, word: str = "like") -> list[str]:
    """An agent loop: each question is a tool call, a multi-KB tool result, and an answer."""
    messages: list[dict[str, Any]] = []
    answers = []

    def call() -> Any:
        reply = client.messages.create(
            model="claude-test", max_tokens=256, system=SYSTEM, tools=TOOLS, messages=messages
        )
        blocks = [
            {"type": "text", "text": b.text}
            if b.type == "text"
            else {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
            for b in reply.content
        ]
        messages.append({"role": "assistant", "content": blocks})
        return reply

    for q in range(questions):
        messages.append(
            {"role": "user", "content": f"What is the weather {word if q == 1 else 'like'} for trip {q}?"}
        )
        tool = next(b for b in call().content if b.type == "tool_use")
        forecast = "".join(f"day {d}: sunny, 21 C, wind 3 m/s from the west, no rain.\n" for d in range(40))
        result = {"type": "tool_result", "tool_use_id": tool.id, "content": f"Trip {q}\n{forecast}"}
        messages.append({"role": "user", "content": [result]})
        answers.append(call().content[0].text)
    return answers
