"""AlfWorldEnv: ALFWorld's text households behind the rla TaskEnv contract (``rla/AlfWorld-v0``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rla_envs.core.env import TaskEnv, Transition
from rla_envs.core.errors import DataNotFound, InvalidTask, ResetNeeded, RlaError
from rla_envs.core.task import Task, thaw

__all__ = ["AlfWorldEnv", "SPLITS"]

SPLITS = ("train", "valid_seen", "valid_unseen")


class AlfWorldEnv(TaskEnv):
    """ALFWorld: find, transform and place household objects in a text version of an AI2-THOR room.

    ## Description
    Each task is one ALFWorld game (a PDDL problem of one of six task types: ``pick_and_place_simple``,
    ``look_at_obj_in_light``, ``pick_clean_then_place_in_recep``, ``pick_heat_then_place_in_recep``,
    ``pick_cool_then_place_in_recep``, ``pick_two_obj_and_place``). Games come from real ALFWorld data
    when a data folder is given (``data_path`` or ``$ALFWORLD_DATA``), else they are generated offline
    from the floor plans in the alfworld wheel (seeded, cached on disk). Games run on
    :class:`~rla_envs.alfworld.engine.AlfWorldEngine`, whose text is identical to textworld's stock PDDL
    env + alfworld's ``AlfredDemangler`` at a fraction of the cost; each game is parsed and translated
    once per process and reused across resets.

    ## Action Space
    ``PrintableText``: one text command, e.g. ``"go to countertop 1"``, ``"take apple 1 from countertop 1"``,
    ``"heat apple 1 with microwave 1"``, ``"move apple 1 to fridge 1"``. Commands are matched exactly
    (after stripping outer spaces) against ``info["admissible_actions"]``; anything else — garbage,
    empty text, non-ASCII text, a command that does not apply — is answered ``"Nothing happens."`` and
    flagged ``info["invalid_action"] = True``. Texts longer than ``max_action_length`` or with control
    characters never reach the game and get an explanatory message instead. No action raises.

    ## Observation Space
    ``PrintableText``: ALFWorld's text. After reset: ``"-= Welcome to TextWorld, ALFRED! =-\\n\\nYou are in
    the middle of a room. Looking quickly around you, you see a cabinet 1, ...\\n\\nYour task is to: put a
    clean apple in fridge."``; after a step, the game's answer (``"You arrive at fridge 1. The fridge 1 is
    closed."``).

    ## Rewards
    1.0 on the step that achieves the goal, else 0.0.

    ## Starting State
    ``reset(options={"task": Task | dict | id})`` plays that task; without a task one is drawn from the
    task set with ``self.np_random``. The game itself is deterministic, and the hand-coded expert is
    seeded from ``self.np_random``, so the same seed and actions give the same transcript and labels.

    ## Episode End
    Terminated when the goal holds (ALFWorld games cannot be lost); truncated after ``max_steps``.

    ## Info
    ``task_id``, ``instruction`` (the goal sentence), ``won``, ``step``, ``invalid_action``,
    ``admissible_actions`` (sorted), ``task_type``; with an expert, ``expert_action``: the expert's next
    command (admissible), or None when it has none (the walkthrough expert after a detour, the hand-coded
    expert after giving up). After an invalid action the label is unchanged (the game did not move).

    ## Expert
    ``expert="handcoded"`` (or ``True``): alfworld's searching hand-coded expert with its ``move`` fix,
    the one to imitate (it does not know where hidden objects are). ``expert="walkthrough"``: the
    game's scripted solution (privileged, straight to the hidden object). See
    :func:`rla_envs.alfworld.expert.collect_demonstration` for whole demonstrations.

    ## Arguments
    * ``split``: ``"train"`` (default), ``"valid_seen"`` or ``"valid_unseen"``.
    * ``data_path``: real ALFWorld data (a folder holding ``json_2.1.1``); default ``$ALFWORLD_DATA`` when
      that folder holds ``json_2.1.1``; otherwise generated games are used.
    * ``task_types``: play only these task types (default: all six).
    * ``tasks``: tasks to play instead of the default set (``task_types`` still filters them).
    * ``n_per_type`` (5) / ``task_seed`` (0): size and seed of the generated default set.
    * ``expert``: None (default), ``"handcoded"`` / ``True``, or ``"walkthrough"``.
    * ``max_steps`` (50), ``max_action_length`` (1000), ``render_mode`` (``"ansi"`` or ``"human"``).

    ## Version History
    * v0: initial version (textworld 1.7.0, alfworld 0.4.2; generated games or ALFWorld 2.1.1 data).
    """

    family = "alfworld"

    def __init__(
        self,
        split: str = "train",
        *,
        data_path: str | os.PathLike | None = None,
        task_types: Sequence[str] | None = None,
        tasks: Iterable[Task | Mapping[str, Any]] | None = None,
        n_per_type: int | None = None,
        task_seed: int = 0,
        expert: str | bool | None = None,
        max_steps: int = 50,
        max_action_length: int = 1_000,
        render_mode: str | None = None,
    ):
        from rla_envs.alfworld.expert import EXPERTS
        from rla_envs.alfworld.scene import TASK_TYPES

        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if task_types is not None:
            if isinstance(task_types, str):
                task_types = [task_types]
            unknown = sorted(set(task_types) - set(TASK_TYPES))
            if unknown:
                raise ValueError(f"unknown task types {unknown}; choose from {list(TASK_TYPES)}")
        if expert is True:
            expert = "handcoded"
        elif expert is False:
            expert = None
        if expert is not None and expert not in EXPERTS:
            raise ValueError(f"expert must be None, True or one of {EXPERTS}, got {expert!r}")
        if data_path is not None and not os.path.isdir(data_path):
            raise DataNotFound(f"data_path {os.fspath(data_path)!r} is not a folder; pass the folder that holds "
                               "ALFWorld's json_2.1.1 (or leave data_path unset to use generated games)")
        if n_per_type is not None and n_per_type < 1:
            raise ValueError(f"n_per_type must be >= 1, got {n_per_type}")
        super().__init__(tasks, max_steps=max_steps, max_action_length=max_action_length, render_mode=render_mode)
        self.split = split
        self.data_path = data_path
        self.task_types = None if task_types is None else tuple(task_types)
        self.n_per_type = n_per_type
        self.task_seed = int(task_seed)
        self.expert = expert
        if self._given_tasks is not None and self.task_types is not None:
            self._task_set = self._given_tasks = self._filter(self._given_tasks, "the tasks given")
        self._engine = None
        self._loaded_key: tuple[str, Any] | None = None  # (id, spec) of the game in the engine
        self._state: Mapping[str, Any] | None = None
        self._expert = None
        self._expert_action: str | None = None

    # ----------------------------------------------------------------- family API
    def default_tasks(self) -> Sequence[Task]:
        """Real ALFWorld tasks of the split when data is available, else generated ones (cached on disk)."""
        from rla_envs.alfworld import generated as alfworld_generated
        from rla_envs.alfworld import tasks as alfworld_tasks

        data_root = self._data_root()
        if data_root is not None:
            found = alfworld_tasks.dataset_tasks(data_root, self.split)
            source = f"the ALFWorld data of split {self.split!r}"
        else:
            found = alfworld_generated.generated_tasks(  # only the types played: the same games, fewer to generate
                self.split, self.n_per_type or alfworld_generated.DEFAULT_N_PER_TYPE, self.task_seed,
                task_types=self.task_types)
            source = f"the generated {self.split!r} tasks"
        return self._filter(found, source)

    def _data_root(self) -> str | os.PathLike | None:
        """``data_path``, else ``$ALFWORLD_DATA`` if it holds ALFWorld's json_2.1.1, else None (generate).

        Importing alfworld sets ``$ALFWORLD_DATA`` to ``~/.cache/alfworld`` when it is unset, so the
        variable alone does not mean that the user has the data.
        """
        if self.data_path is not None:
            return self.data_path
        root = os.environ.get("ALFWORLD_DATA")
        if root and (os.path.isdir(os.path.join(root, "json_2.1.1")) or
                     (os.path.basename(os.path.normpath(root)) == "json_2.1.1" and os.path.isdir(root))):
            return root
        return None

    def _filter(self, tasks: Sequence[Task], source: str) -> list[Task]:
        if self.task_types is None:
            return list(tasks)
        kept = [t for t in tasks if _task_type(t) in self.task_types]
        if not kept:
            raise InvalidTask(f"none of the {len(tasks)} tasks in {source} has a task type in {list(self.task_types)}")
        return kept

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        from rla_envs.alfworld.tasks import check_spec, game_from_task

        check_spec(thaw(task.spec), task.id)  # even for the loaded game: the expert reads the spec too
        engine = self._game_engine()
        if self._loaded_key != (task.id, task.spec):  # a dict may keep an id after its spec was edited
            self._loaded_key = None
            engine.load(game_from_task(task))
            self._loaded_key = (task.id, task.spec)
        self._state = engine.reset()
        observation = self._state["feedback"]
        self._expert = self._expert_action = None
        if self.expert is not None:
            from rla_envs.alfworld.expert import make_expert

            self._expert = make_expert(self.expert, task, seed=int(self.np_random.integers(2**31)))
            self._expert.reset(observation, self._state)
            self._expert_action = self._expert.act(observation, self._state, None)
        return observation, self._family_info(task)

    def _play(self, action: str) -> Transition:
        engine = self._game_engine()
        self._state, _, _ = engine.step(action)
        observation = self._state["feedback"]
        invalid = not engine.last_command_applied
        if self._expert is not None and not invalid:
            self._expert_action = self._expert.act(observation, self._state, action.strip())
        return Transition(observation=observation, won=bool(self._state["won"]), invalid_action=invalid,
                          info=self._family_info(self.task))

    def _current_info(self) -> dict[str, Any]:
        return self._family_info(self.task)

    # ----------------------------------------------------------------- helpers
    def _family_info(self, task: Task | None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "admissible_actions": list(self._state["admissible_commands"]) if self._state is not None else [],
            "task_type": _task_type(task) if task is not None else "",
        }
        if self.expert is not None:
            info["expert_action"] = self._expert_action
        return info

    def _game_engine(self):
        if self._engine is None:
            import textworld

            from rla_envs.alfworld.engine import AlfWorldEngine

            infos = textworld.EnvInfos(admissible_commands=True, won=True, facts=self.expert == "handcoded")
            self._engine = AlfWorldEngine(infos)
        return self._engine

    def expert_action(self) -> str:
        """The configured expert's next command (see ``expert``); raises when there is none to give."""
        if self.expert is None:
            raise RlaError("this AlfWorldEnv keeps no expert: make it with expert='handcoded' (or True) "
                           "or expert='walkthrough' to get expert_action() and info['expert_action']")
        if self.task is None:
            raise ResetNeeded("expert_action() needs a running episode; call env.reset() first")
        if self._expert_action is None:
            raise RlaError(f"the {self.expert} expert has no action in this state (it gave up, or the agent "
                           "left the walkthrough); see info['expert_action']")
        return self._expert_action

    @property
    def walkthrough(self) -> list[str]:
        """The current task's scripted solution from the start (privileged: it knows where things are)."""
        if self.task is None:
            return []
        return list(thaw(self.task.spec).get("walkthrough") or [])

    def close(self) -> None:
        """Release the game engine (its private copy of the planner library)."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None
            self._loaded_key = None
        super().close()


def _task_type(task: Task) -> str:
    return str(task.spec.get("task_type") or task.meta.get("task_type") or "")
