"""Experts for ALFWorld games: who to imitate for demonstrations, and what to label each step with.

Two experts, one interface (:class:`Expert`: ``reset(observation, state)``, then
``act(observation, state, last_action) -> command | None`` once per step):

- :class:`HandCodedExpert` — alfworld's hand-coded TextWorld expert (``HandCodedTWAgent``), which
  **searches**: it visits receptacles in the order its object priors suggest, opens what is closed,
  takes the target when it sees it, then heats/cools/cleans and places it. It never reads where a
  hidden object is, so its demonstrations show search and recovery, and it re-plans from whatever
  the agent actually did, so it labels any step of any trajectory (DAgger-style). Three fixes (see
  :class:`_PolicyFixes`): the stock expert only recognises ``put`` as the placing verb, but ALFWorld
  0.4 games say ``move``, so after placing the first object of ``pick_two_obj_and_place`` it still
  believed it held it and never fetched the second one; and searching a second time, it revisited
  every receptacle it had already looked into (now visited last), which cost ~10% of pick-two
  kitchens their 50-step budget; and it searched for a pan, pot, bowl or box (classes that are also
  movable receptacles) by visiting every receptacle in the intro's order, ignoring its priors. It also
  no longer closes what it opened (``close_opened=False``).
- :class:`WalkthroughExpert` — the game's scripted walkthrough. Privileged (it walks straight to the
  hidden object) and open-loop: once the agent leaves the walkthrough it has no label (``None``).

The easiest way to use them is through the env: ``gym.make("rla/AlfWorld-v0", expert="handcoded")``
adds ``info["expert_action"]`` at reset and after every step, and :func:`collect_demonstration`
plays the expert's actions and returns the transcript.

Not thread-safe: the hand-coded policies draw from the ``random`` module of alfworld's expert
module, which :class:`HandCodedExpert` points at its own seeded generator while it acts.
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rla_envs.core.errors import InvalidTask
from rla_envs.core.task import Task, thaw

__all__ = ["EXPERTS", "Expert", "HandCodedExpert", "WalkthroughExpert", "make_expert", "Demonstration",
           "collect_demonstration"]

#: Expert names accepted by :func:`make_expert` and the env's ``expert`` argument.
EXPERTS = ("handcoded", "walkthrough")
FALLBACK_ACTION = "look"  # what alfworld's AlfredExpert suggests when its expert's command is not admissible


@runtime_checkable
class Expert(Protocol):
    """What the env needs from an expert.

    ``state`` is the engine's game state (a dict with ``feedback``, ``admissible_commands`` and, for
    the hand-coded expert, ``facts``).
    """

    def reset(self, observation: str, state: Mapping[str, Any]) -> None:
        """Start a new episode from its first observation."""

    def act(self, observation: str, state: Mapping[str, Any], last_action: str | None) -> str | None:
        """The expert's next command given what the agent did last (None at the first step), or None."""


# --------------------------------------------------------------------------- hand-coded
@contextlib.contextmanager
def _expert_random(rng: random.Random):
    """Make alfworld's expert module draw from ``rng`` instead of the global ``random`` module."""
    from alfworld.agents.expert import handcoded_expert

    saved = handcoded_expert.random
    handcoded_expert.random = rng
    try:
        yield
    finally:
        handcoded_expert.random = saved


class _PolicyFixes:
    """Mixin for alfworld's TW policies: three fixes of the stock hand-coded expert.

    1. ``move X to Y`` is the placing action of ALFWorld 0.4 games; the stock tracker looks for
       ``put`` only, so it never emptied its hands after placing (fatal for pick_two_obj_and_place).
    2. Searching again for an object class (the second object of a pick-two task, or after a wrong
       pick), it revisits receptacles it has already looked into; here those come last, and one where
       it saw an instance it has not taken comes first. Objects never move by themselves, so this
       uses only what the agent itself observed.
    3. An object class that is also a movable receptacle (pan, pot, bowl, box, ...) was searched for as
       a receptacle type: with none of that type among the room's receptacles, the stock policy fell
       back to visiting every receptacle in the intro's order, without priors and without fix 2.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen_empty: set[str] = set()  # receptacles seen to hold nothing (the stock memory skips them)

    def observe(self, obs):
        super().observe(obs)
        if "you see nothing" in obs and obs.startswith(("You arrive at", "You open the", "On the")):
            self.seen_empty.add(self.curr_recep)

    close_opened = True  # the stock habit of closing every receptacle it opened (one step each)

    def update_state_tracking(self, game_state, last_action):
        if last_action.startswith("move "):
            last_action = "put " + last_action[len("move "):]
        super().update_state_tracking(game_state, last_action)
        if not self.close_opened:
            self.action_backlog = [a for a in self.action_backlog if not a.startswith("close ")]

    def get_list_of_receptacles_of_type(self, recep_cls):
        # Movable receptacle classes (pan, pot, bowl, box, ...) are in the stock RECEPTACLES list, so the
        # stock search looks for a receptacle *named* "pan 1", finds none, and visits every receptacle in
        # the intro's order, ignoring its priors and fix 2 (the cause of most remaining pick-two and pan
        # failures). When no receptacle of the class is in the room, search for it like an object.
        found = super().get_list_of_receptacles_of_type(recep_cls)
        if not found and recep_cls in self.OBJECT_TO_VAL_RECEPTACLE:
            return self.get_list_of_receptacles_to_search_for_object_cls(recep_cls)
        return found

    def get_list_of_receptacles_to_search_for_object_cls(self, obj_cls):
        # The stock search visits the end of this list first: [other receptacles] + [likely receptacles].
        likely = super().get_list_of_receptacles_to_search_for_object_cls(obj_cls)
        order = [r for r in self.receptacles if r not in likely] + likely

        def seen_there(receptacle):
            return f" {obj_cls} " in self.obs_at_recep.get(receptacle, "")

        looked = set(self.obs_at_recep) | self.seen_empty
        searched = [r for r in order if r in looked and not seen_there(r)]
        unsearched = [r for r in order if r not in looked]
        return searched + unsearched + [r for r in order if seen_there(r)]


@functools.lru_cache(maxsize=1)
def _fixed_policy_classes() -> dict[str, type]:
    """alfworld's TextWorld policy classes, by class name, with :class:`_PolicyFixes` mixed in."""
    from alfworld.agents.expert import handcoded_expert_tw as tw

    classes = {}
    for name in dir(tw):
        base = getattr(tw, name)
        if isinstance(base, type) and name.endswith("TWPolicy"):
            classes[name] = type(name.replace("TWPolicy", "FixedPolicy"), (_PolicyFixes, base), {})
    return classes


PDDL_PARAM_DEFAULTS = {"parent_target": "", "toggle_target": "", "mrecep_target": "", "object_sliced": False}
"""What ALFWorld's data holds for a ``pddl_params`` key the task type does not use (the policies read every key)."""


def _task_params(task_type: str, pddl_params: Mapping[str, Any]) -> dict[str, Any]:
    """The hand-coded expert's task parameters, normalised as ``HandCodedAgent.reset`` does."""
    from alfworld.gen import constants

    params = {**PDDL_PARAM_DEFAULTS, **dict(pddl_params), "task_type": task_type}
    return {key: value.lower() if value in constants.OBJECTS else value for key, value in params.items()}


def _make_hand_coded_agent(max_steps: int):
    from alfworld.agents.expert import HandCodedTWAgent

    class _FixedHandCodedTWAgent(HandCodedTWAgent):
        """``HandCodedTWAgent`` that takes task parameters directly and uses the fixed policies."""

        def get_task_policy(self, task_param):
            class_name = task_param["task_type"].replace("_", " ").title().replace(" ", "") + "TWPolicy"
            try:
                return _fixed_policy_classes()[class_name]
            except KeyError:
                raise InvalidTask(f"the hand-coded expert has no policy for task type {task_param['task_type']!r}; "
                                  f"known: {sorted(_fixed_policy_classes())}") from None

        def reset(self, task_params):  # the stock reset reads traj_data.json next to a game file
            self.task_params = task_params
            self.policy = self.get_task_policy(task_params)(task_params, max_steps=self.max_steps)

    return _FixedHandCodedTWAgent(max_steps=max_steps)


class HandCodedExpert:
    """alfworld's hand-coded, searching TextWorld expert, with its ``move`` bug fixed and seeded.

    Args:
        task_type: one of the six ALFWorld task types (``"pick_two_obj_and_place"``, ...).
        pddl_params: the task's ``pddl_params`` (``object_target``, ``parent_target``, ``toggle_target``, ...).
        seed: seeds its random choices (which of several visible targets to take, and its escape from
            loops), so the same game and actions give the same suggestions.
        max_steps: after this many suggestions it gives up (``act`` returns None), as alfworld's does.
        close_opened: close each receptacle after looking into it, as the stock expert does. Off by
            default: it costs a step per receptacle and pushed ~5% of kitchen tasks past 50 steps.

    ``act`` returns an admissible command, ``"look"`` when its own command is not admissible (what
    alfworld's ``AlfredExpert`` does), or None once it has given up (out of steps or out of ideas).
    The state passed to ``reset``/``act`` needs ``feedback``, ``admissible_commands`` and ``facts``
    (an :class:`~rla_envs.alfworld.engine.AlfWorldEngine` state with ``EnvInfos(facts=True)``).
    """

    def __init__(self, task_type: str, pddl_params: Mapping[str, Any], *, seed: int | None = 0,
                 max_steps: int = 200, close_opened: bool = False):
        if not isinstance(task_type, str):
            raise InvalidTask(f"the hand-coded expert needs a task type string, got {type(task_type).__name__}")
        if not isinstance(pddl_params, Mapping) or "object_target" not in pddl_params:
            raise InvalidTask(f"the hand-coded expert needs pddl_params with an 'object_target', got {pddl_params!r}")
        self.task_type = task_type
        self.params = _task_params(task_type, thaw(pddl_params))
        self.seed = seed
        self.max_steps = max_steps
        self.close_opened = close_opened
        self._agent = _make_hand_coded_agent(max_steps)
        self._agent.reset(self.params)  # fails early on an unknown task type
        self._rng = random.Random(seed)
        self._stand_in: tuple[str, str] | None = None  # (command played, command the policy asked for)
        self.gave_up = False
        self.failure = ""  # why it gave up, if it did

    @classmethod
    def from_task(cls, task: Task, **options: Any) -> "HandCodedExpert":
        """The expert for an alfworld Task (its spec's ``task_type`` and ``pddl_params``); options as above."""
        spec = thaw(task.spec)
        if "task_type" not in spec or "pddl_params" not in spec:
            raise InvalidTask(f"task {task.id} has no spec['task_type'] / spec['pddl_params']; the hand-coded expert "
                              f"needs both (spec keys: {sorted(spec)})")
        return cls(spec["task_type"], spec["pddl_params"], **options)

    def reset(self, observation: str, state: Mapping[str, Any] | None = None) -> None:
        """Start an episode: read the receptacles from the first observation."""
        self._agent.reset(self.params)
        self._agent.policy.close_opened = self.close_opened
        self._rng = random.Random(self.seed)
        self._stand_in = None
        self.gave_up = False
        self.failure = ""
        self._agent.observe(observation)

    def _give_up(self, reason: str) -> None:
        self.gave_up = True
        self.failure = reason
        return None

    def act(self, observation: str, state: Mapping[str, Any], last_action: str | None) -> str | None:
        """The next command, given the game state after ``last_action`` (None at the first step)."""
        from alfworld.agents.expert import HandCodedAgentFailed, HandCodedAgentTimeout

        if self.gave_up:
            return None
        if self._stand_in is not None and (last_action or "").strip() == self._stand_in[0]:
            last_action = self._stand_in[1]  # the policy asked to go there; tell it that it did
        self._stand_in = None
        game_state = {"feedback": observation, "admissible_commands": list(state["admissible_commands"]),
                      "facts": state["facts"], "won": bool(state.get("won"))}
        try:
            with _expert_random(self._rng):
                command = self._agent.act(game_state, 0, game_state["won"], last_action or "")
        except (HandCodedAgentFailed, HandCodedAgentTimeout) as exc:
            return self._give_up(f"{type(exc).__name__} after {self._agent.policy.steps} steps")
        except (IndexError, KeyError, ValueError) as exc:  # the stock policies assume, e.g., a receptacle exists
            return self._give_up(f"the hand-coded policy failed: {type(exc).__name__}: {exc}")
        return self._admissible(command, game_state["admissible_commands"])

    def _admissible(self, command: str, admissible: Sequence[str]) -> str:
        """``command`` if the game accepts it, else what stands in for it.

        Receptacles that share a location (stacked drawers, a row of shelves) make ``go to`` the second
        one inadmissible: the agent already stands there. The stock expert then loops on that ``go to``;
        here ``examine`` it instead, and the next step tells the policy it went there.
        """
        if command in admissible:
            return command
        if command.startswith("go to "):
            examine = "examine " + command[len("go to "):]
            if examine in admissible:
                self._stand_in = (examine, command)
                return examine
        return FALLBACK_ACTION


# --------------------------------------------------------------------------- walkthrough
class WalkthroughExpert:
    """The game's scripted walkthrough, one command per step while the agent follows it.

    ``act`` returns the next walkthrough command as long as every action so far was the
    walkthrough's; after the first deviation (or past its end) it returns None.
    """

    def __init__(self, walkthrough: Sequence[str]):
        if not walkthrough:
            raise InvalidTask("this game has no walkthrough; use the 'handcoded' expert instead")
        self.walkthrough = [str(command) for command in walkthrough]
        self._position = 0
        self._on_track = True

    @classmethod
    def from_task(cls, task: Task) -> "WalkthroughExpert":
        """The walkthrough expert of an alfworld Task (``spec["walkthrough"]``)."""
        return cls(list(thaw(task.spec).get("walkthrough") or []))

    def reset(self, observation: str = "", state: Mapping[str, Any] | None = None) -> None:
        """Start again from the first walkthrough command."""
        self._position = 0
        self._on_track = True

    def act(self, observation: str, state: Mapping[str, Any] | None, last_action: str | None) -> str | None:
        """The next walkthrough command if the agent has followed it so far, else None."""
        if last_action is not None and self._on_track:
            expected = self.walkthrough[self._position - 1] if self._position else None
            self._on_track = last_action.strip() == expected
        if not self._on_track or self._position >= len(self.walkthrough):
            return None
        command = self.walkthrough[self._position]
        self._position += 1
        return command


def make_expert(name: str, task: Task, *, seed: int | None = 0, **options: Any) -> Expert:
    """The expert called ``name`` (one of :data:`EXPERTS`) for ``task`` (options go to the hand-coded one)."""
    if name == "handcoded":
        return HandCodedExpert.from_task(task, seed=seed, **options)
    if name == "walkthrough":
        return WalkthroughExpert.from_task(task)
    raise ValueError(f"unknown ALFWorld expert {name!r}; expected one of {EXPERTS}")


# --------------------------------------------------------------------------- demonstrations
@dataclass
class Demonstration:
    """One expert episode: the observations seen, the actions taken and the outcome."""

    task_id: str
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    won: bool = False


def collect_demonstration(env: Any, task: Task | Mapping[str, Any] | str | None = None, *,
                          seed: int | None = None) -> Demonstration:
    """Play the expert's suggestions in an AlfWorld env made with ``expert=...`` until the episode ends.

    ``observations[i]`` is what the agent saw before ``actions[i]``; the final observation is the last
    entry of ``observations``. Stops early (``won=False``) if the expert has no suggestion.
    """
    observation, info = env.reset(seed=seed, options=None if task is None else {"task": task})
    if "expert_action" not in info:
        raise ValueError("collect_demonstration needs an env made with an expert, e.g. "
                         "gym.make('rla/AlfWorld-v0', expert='handcoded')")
    demo = Demonstration(task_id=info["task_id"], observations=[observation])
    done = False
    while not done and info["expert_action"] is not None:
        action = info["expert_action"]
        observation, _, terminated, truncated, info = env.step(action)
        demo.actions.append(action)
        demo.observations.append(observation)
        done = terminated or truncated
    demo.won = bool(info["won"])
    return demo
