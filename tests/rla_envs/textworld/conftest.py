"""Shared fixtures: a few generated TextWorld games in a session-wide temporary cache."""

from __future__ import annotations

import os

import pytest

TEST_LEVELS = ("custom-2", "simple", "cooking-1")


@pytest.fixture(scope="session")
def tw_cache(tmp_path_factory):
    """Point RLA_CACHE at a temporary directory for the whole session (games are generated once)."""
    path = tmp_path_factory.mktemp("rla-cache")
    old = os.environ.get("RLA_CACHE")
    os.environ["RLA_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("RLA_CACHE", None)
    else:
        os.environ["RLA_CACHE"] = old


@pytest.fixture(scope="session")
def tw_tasks(tw_cache):
    """One generated game per level in TEST_LEVELS (about 10 s on 2 cores)."""
    from rla_envs.textworld.tasks import default_tasks

    return default_tasks(games_per_level=1, levels=TEST_LEVELS, progress=False)


@pytest.fixture()
def tw_env(tw_tasks):
    """The unwrapped rla/TextWorld-v0 env playing the test tasks."""
    from rla_envs.textworld.env import TextWorldEnv

    env = TextWorldEnv(tasks=tw_tasks)
    yield env
    env.close()
