"""Shared ALFWorld fixtures: one generated, engine-verified game per task type, cached in a temp dir.

``alfworld_tasks`` costs a few seconds once per session (6 games, each verified in the fast engine;
tests that need textworld's stock engine use it explicitly); every other fixture derives from it.
"""

from __future__ import annotations

import pytest

from rla_envs.alfworld.scene import TASK_TYPES


@pytest.fixture(scope="session")
def alfworld_cache(tmp_path_factory):
    """A private ``RLA_CACHE`` for the session, so tests never read or fill the user's cache."""
    root = tmp_path_factory.mktemp("rla_cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("RLA_CACHE", str(root))
    yield root
    patch.undo()


@pytest.fixture(scope="session")
def alfworld_tasks(alfworld_cache):
    """Six generated ``valid_unseen`` tasks, one per task type (in ``TASK_TYPES`` order), seed 0."""
    from rla_envs.alfworld.generated import generated_tasks

    tasks = generated_tasks("valid_unseen", n_per_type=1, seed=0, workers=2, progress=False)
    assert [t.spec["task_type"] for t in tasks] == list(TASK_TYPES)
    return tasks


@pytest.fixture(scope="session")
def alfworld_games(alfworld_tasks):
    """``{task_type: game.tw-pddl dict}`` for the six tasks of ``alfworld_tasks``."""
    from rla_envs.alfworld.tasks import game_from_task

    return {t.spec["task_type"]: game_from_task(t) for t in alfworld_tasks}
