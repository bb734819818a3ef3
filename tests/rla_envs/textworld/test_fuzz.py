"""10,000 hostile actions: random text, empty, 1 MB, non-ASCII, separators, meta commands."""

from __future__ import annotations

import random
import string
import time

import pytest

from rla_envs.textworld.game import MAX_COMMAND_CHARS, sanitize_command

HOSTILE = [
    "", " ", "\n", "\t\t", "quit", "Q", "restart", "y", "yes", "undo", "save", "restore", "script", "transcript",
    "tw-trace-actions", "tw-extra-infos score", "again", "g", "oops", "a.b,c;d", "look. look. look",
    "take all", "open all", "日本語のコマンド", "héllo wörld", "👾👾👾", "\u200b\u200b", "Ω" * 500, "x" * 999,
    "x" * 1_000_000, "open\x00door", "\x1b[31mred", "' OR 1=1 --", "%s%s%s%n", "{}[]()<>", "\\", '"quoted"',
]


def _random_action(rng: random.Random, admissible: list[str]) -> str:
    kind = rng.random()
    if kind < 0.3:
        return rng.choice(admissible)
    if kind < 0.5:
        return rng.choice(HOSTILE)
    if kind < 0.75:
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 60)))
    if kind < 0.9:
        return "".join(chr(rng.randint(0x80, 0x2FFFF)) for _ in range(rng.randint(1, 30)))
    return rng.choice(admissible) + rng.choice(["\n", ". ", " then ", ", ", ";"]) + rng.choice(HOSTILE)


def test_ten_thousand_hostile_actions_never_raise_or_hang(tw_env, tw_tasks):
    rng = random.Random(1234)
    _, info = tw_env.reset(seed=0)
    deadline = time.monotonic() + 600  # hang guard only, not a performance assertion
    counts = {"invalid": 0, "valid": 0, "episodes": 1}
    for step in range(10_000):
        action = _random_action(rng, info["admissible_actions"])
        observation, reward, terminated, truncated, info = tw_env.step(action)
        assert isinstance(observation, str) and observation.strip(), repr(action[:50])
        assert isinstance(info["admissible_actions"], list) and reward in (0.0, 1.0)
        counts["invalid" if info["invalid_action"] else "valid"] += 1
        if terminated or truncated:
            _, info = tw_env.reset()
            counts["episodes"] += 1
        assert time.monotonic() < deadline, f"hang guard tripped after {step} steps"
    assert counts["invalid"] > 5_000 and counts["valid"] > 1_000 and counts["episodes"] > 100, counts
    assert "Emulator halted" not in observation


@pytest.mark.parametrize("text, expected", [
    ("Open the Chest. Take key", "open the chest"),
    ("go north\ngo south", "go north"),
    ("take key then go west", "take key"),
    ("bob, go north", "bob"),
    ("éclair", "eclair"),
    ("日本語", ""),
    ("open <door>!!", "open door"),
])
def test_sanitize_command(text, expected):
    assert sanitize_command(text) == expected


def test_sanitize_command_bounds_length():
    assert len(sanitize_command("look " * 10_000)) <= MAX_COMMAND_CHARS
