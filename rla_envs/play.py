"""Play an rla env with a built-in agent and print each episode's result.

    python -m rla_envs.play rla/AlfWorld-v0 --agent expert --episodes 10 --seed 0

Ends with a line ``won K/N``. Env constructor arguments go through ``--env-arg key=value``
(e.g. ``--env-arg split=valid_unseen``); values are parsed as JSON when they can be.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np

import rla_envs
from rla_envs.core.errors import did_you_mean

__all__ = ["main", "play_episode"]

AGENTS = ("expert", "random")


def _parse_env_args(pairs: list[str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--env-arg expects key=value, got {pair!r}")
        try:
            kwargs[key] = json.loads(raw)
        except json.JSONDecodeError:
            kwargs[key] = raw
    return kwargs


def _accepts_argument(env_id: str, name: str) -> bool:
    """Whether the env class behind ``env_id`` takes a constructor argument ``name``."""
    env_creator = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)
    return name in inspect.signature(env_creator).parameters


def choose_action(agent: str, env: gym.Env, info: dict[str, Any], rng: np.random.Generator) -> str:
    """The next command of ``agent`` ('expert' or 'random') in the env's current state."""
    if agent == "expert":
        return env.unwrapped.expert_action()
    actions = info.get("admissible_actions") or ["look"]
    return str(actions[int(rng.integers(len(actions)))])


def play_episode(env: gym.Env, agent: str, rng: np.random.Generator, seed: int | None = None,
                 verbose: bool = False) -> dict[str, Any]:
    """Play one episode; return its task id, outcome, step count and wall time."""
    start = time.perf_counter()
    observation, info = env.reset(seed=seed)
    if verbose:
        print(observation)
    total_reward, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        action = choose_action(agent, env, info, rng)
        observation, reward, terminated, truncated, info = env.step(action)
        total_reward += reward
        if verbose:
            print(f"> {action}\n{observation}")
    return {
        "task_id": info["task_id"],
        "task_type": info.get("task_type", ""),
        "won": bool(info["won"]),
        "steps": int(info["step"]),
        "reward": total_reward,
        "seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rla_envs.play", description=__doc__.split("\n\n")[0])
    env_ids = [env_id for spec in rla_envs.families().values() for env_id in spec.env_ids]
    parser.add_argument("env_id", help=f"one of {', '.join(env_ids)}")
    parser.add_argument("--agent", choices=AGENTS, default="expert", help="who plays (default: expert)")
    parser.add_argument("--episodes", type=int, default=5, help="number of episodes (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the task draw and the random agent")
    parser.add_argument("--max-steps", type=int, default=None, help="episode step limit (env default if unset)")
    parser.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="extra env constructor argument, repeatable (e.g. split=valid_unseen)")
    parser.add_argument("--verbose", action="store_true", help="print every observation and action")
    args = parser.parse_args(argv)

    if args.env_id not in gym.registry:
        hint = did_you_mean(args.env_id, env_ids, cutoff=0.3)
        print(f"error: unknown env id {args.env_id!r}.{hint} Known: {', '.join(env_ids)}", file=sys.stderr)
        return 2
    if args.episodes < 1:
        parser.error("--episodes must be >= 1")
    env_kwargs = _parse_env_args(args.env_arg)
    if args.max_steps is not None:
        env_kwargs["max_steps"] = args.max_steps
    if args.agent == "expert" and "expert" not in env_kwargs and _accepts_argument(args.env_id, "expert"):
        env_kwargs["expert"] = True  # envs that keep an expert only on request (ALFWorld: the searching one)

    env = gym.make(args.env_id, **{"disable_env_checker": True, **env_kwargs})  # the checker breaks steps after a failed reset
    rng = np.random.default_rng(args.seed)
    wins = 0
    try:
        for episode in range(args.episodes):
            result = play_episode(env, args.agent, rng, seed=args.seed if episode == 0 else None, verbose=args.verbose)
            wins += result["won"]
            kind = f" type={result['task_type']}" if result["task_type"] else ""
            print(f"episode {episode + 1}/{args.episodes} task={result['task_id']}{kind} "
                  f"won={result['won']} steps={result['steps']} reward={result['reward']:.1f} "
                  f"time={result['seconds']:.2f}s", flush=True)
    finally:
        env.close()
    print(f"won {wins}/{args.episodes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
