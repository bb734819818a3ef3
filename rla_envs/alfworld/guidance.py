"""Which scene edit a failure diagnosis asks for: diagnoses + direction -> ranked mutation names (pure).

The curriculum's diagnosers summarise why a task's runs failed, one sentence each:

* :class:`~rla_envs.curriculum.diagnosers.RuleDiagnoser`: ``"3/4 failed runs never found the apple"``,
  ``"saw the apple but never took it"``, ``"looped over repeated states (e.g. 'go to cabinet 1' x3 ...)"``,
  ``"repeated invalid actions"``, ``"ran out of steps (30 steps)"``,
  ``"had steps judged wrong (first: step 3 'go to cabinet 2', 4 in all)"``;
* ``rla_train``'s ``RewardModelDiagnoser``: ``"2/4 failed runs: step judged bad by all 3 judgments:
  'go to countertop 1' (x2 in all) — the apple is in the fridge"``.

:func:`read_diagnosis` turns one sentence into :class:`Cue` s (what went wrong, in how many of the failed
runs, and the step's action when a step was judged); :func:`guided_edits` ranks the edits of
``mutations.CATALOGUE[direction]`` that answer them.

**Easier** removes the obstacle the runs hit:

==================================  ====================================================================
cue                                 edits, best first
==================================  ====================================================================
never found the target, bad         more_target_copies, hint_in_goal, place_in_open_receptacle,
``go to`` / ``open`` / ``examine``  open_target_receptacles
saw it but never took it            more_target_copies, remove_distractors
bad ``take``                        remove_distractors, more_target_copies
bad ``put`` / ``move``              remove_empty_receptacles, remove_distractors
bad ``clean/heat/cool/use`` step    hint_in_goal, remove_distractors (the catalogue has no edit that
                                    simplifies the treatment itself; ignored for task types without one)
looped                              remove_empty_receptacles, hint_in_goal
repeated invalid actions            remove_distractors
ran out of steps                    remove_empty_receptacles, hint_in_goal, more_target_copies
==================================  ====================================================================

The easier search edits are ordered by what they measurably did (``benchmarks.perf.guided_rewrites.edit_effects``
on the 14 ``valid_seen`` pick-and-place tasks a 6-step sweep policy fails, 16 rollouts per child): more copies
moved success by +0.10 on average and the hint by +0.75 (often past the band), while moving the target into
view or opening its receptacle moved it by <= +0.06 (they save one ``open`` step; the search still visits
receptacle after receptacle), and removing distractors by 0.00 even where the runs "saw the target but
never took it" (for a searching agent that is usually the step budget ending on arrival). The hint comes
second because it tends to overshoot the band a slight rewrite should land in.

**Harder** pushes on the weakness the (rare) failures of a task that is too easy show: runs that lost
the target while searching -> hide it (``hide_in_closed_receptacle``, ``move_to_crowded_receptacle``,
``add_receptacles``, ``fewer_target_copies``); runs that saw it and took something else -> crowd it
(``add_distractors``, ``fewer_target_copies``); and so on (:data:`HARDER_EDITS`).

Specific cues (what the run did to the target, which step was wrong) rank before generic ones (looped,
ran out of steps, invalid actions), which nearly every failed run shows; within a tier the cue seen in
more of the failed runs ranks first, then the diagnoser's own order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Cue", "CUE_KINDS", "EASIER_EDITS", "HARDER_EDITS", "read_diagnosis", "action_kind", "guided_edits"]

#: What a cue can say about the failed runs. The first six are specific, the last three generic.
CUE_KINDS = ("not_found", "not_taken", "bad_search", "bad_take", "bad_place", "bad_treatment",
             "looped", "invalid", "out_of_steps")
_GENERIC = frozenset({"looped", "invalid", "out_of_steps"})

_REVEAL = ("more_target_copies", "hint_in_goal", "place_in_open_receptacle", "open_target_receptacles")
#: Easier edits per cue kind, best first.
EASIER_EDITS: dict[str, tuple[str, ...]] = {
    "not_found": _REVEAL,
    "bad_search": _REVEAL,
    "not_taken": ("more_target_copies", "remove_distractors"),
    "bad_take": ("remove_distractors", "more_target_copies"),
    "bad_place": ("remove_empty_receptacles", "remove_distractors"),
    "bad_treatment": ("hint_in_goal", "remove_distractors"),
    "looped": ("remove_empty_receptacles", "hint_in_goal"),
    "invalid": ("remove_distractors",),
    "out_of_steps": ("remove_empty_receptacles", "hint_in_goal", "more_target_copies"),
}
_HIDE = ("hide_in_closed_receptacle", "move_to_crowded_receptacle", "add_receptacles", "fewer_target_copies")
#: Harder edits per cue kind, best first.
HARDER_EDITS: dict[str, tuple[str, ...]] = {
    "not_found": _HIDE,
    "bad_search": _HIDE,
    "not_taken": ("add_distractors", "fewer_target_copies"),
    "bad_take": ("add_distractors", "fewer_target_copies"),
    "bad_place": ("add_receptacles", "add_distractors"),
    "bad_treatment": ("add_distractors", "remove_hint"),
    "looped": ("move_to_crowded_receptacle", "add_receptacles"),
    "invalid": ("add_distractors",),
    "out_of_steps": ("move_to_crowded_receptacle", "hide_in_closed_receptacle", "add_receptacles"),
}
_EDITS = {"easier": EASIER_EDITS, "harder": HARDER_EDITS}
#: Task types with a treatment step (clean, heat, cool, or switching a lamp on).
_TREATED_TYPES = frozenset({"pick_clean_then_place_in_recep", "pick_heat_then_place_in_recep",
                            "pick_cool_then_place_in_recep", "look_at_obj_in_light"})

_COUNT = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s+failed runs?\b")
_QUOTED = re.compile(r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\"""")
_PHRASES = (("never found the", "not_found"), ("but never took it", "not_taken"),
            ("looped over repeated states", "looped"), ("repeated invalid actions", "invalid"),
            ("ran out of steps", "out_of_steps"))
_VERBS = (("bad_search", ("go to ", "open ", "close ", "examine ", "look", "inventory")),
          ("bad_take", ("take ", "pick up ")),
          ("bad_place", ("put ", "move ")),
          ("bad_treatment", ("clean ", "heat ", "cool ", "use ", "toggle ", "slice ")))


@dataclass(frozen=True)
class Cue:
    """One thing a diagnosis says about the failed runs.

    Attributes:
        kind: one of :data:`CUE_KINDS`.
        share: the fraction of failed runs it concerns (``"3/4 failed runs ..."`` -> 0.75; 1.0 without a count).
        diagnosis: the sentence it was read from.
        action: for ``bad_*`` cues, the judged step's action (``"go to cabinet 2"``), else None.
    """

    kind: str
    share: float
    diagnosis: str
    action: str | None = None


def action_kind(action: str) -> str | None:
    """The ``bad_*`` cue kind of an ALFWorld command judged wrong (``"take apple 1 from ..."`` -> ``"bad_take"``)."""
    text = " ".join(action.lower().split()) + " "
    for kind, verbs in _VERBS:
        if text.startswith(verbs):
            return kind
    return None


def read_diagnosis(diagnosis: str) -> list[Cue]:
    """The cues in one diagnosis sentence (``[]`` for a sentence none of the known phrasings matches)."""
    if not isinstance(diagnosis, str):
        raise TypeError(f"a diagnosis must be a str, got {type(diagnosis).__name__}: {diagnosis!r}")
    count = _COUNT.match(diagnosis)
    share = int(count.group(1)) / int(count.group(2)) if count and int(count.group(2)) > 0 else 1.0
    lowered = diagnosis.lower()
    if "judged" in lowered:  # a step a reward model judged wrong: the first quoted text is its action
        quoted = _QUOTED.search(diagnosis)
        if quoted is None:
            return []
        action = (quoted.group(1) if quoted.group(1) is not None else quoted.group(2)).replace("\\'", "'")
        kind = action_kind(action)
        return [] if kind is None else [Cue(kind, share, diagnosis, action)]
    return [Cue(kind, share, diagnosis) for phrase, kind in _PHRASES if phrase in lowered]


def guided_edits(diagnoses: Sequence[str], direction: str, *, task_type: str | None = None) -> dict[str, list[str]]:
    """The mutations the diagnoses ask for, best first, each with the diagnoses that asked for it.

    ``{mutation name: [diagnosis, ...]}`` in rank order (a dict keeps insertion order); empty when no
    diagnosis is understood. Names come from ``mutations.CATALOGUE[direction]``; whether an edit applies
    to the scene is for the caller to find out. ``task_type`` drops treatment cues for task types that
    have no treatment step (a ``use`` step judged wrong in ``pick_and_place_simple`` says nothing about
    the task).
    """
    if direction not in _EDITS:
        raise ValueError(f"direction must be one of {sorted(_EDITS)}, got {direction!r}")
    if isinstance(diagnoses, str):
        raise TypeError(f"diagnoses must be a sequence of sentences, got one str: {diagnoses!r}; wrap it in a list")
    cues = [cue for diagnosis in diagnoses for cue in read_diagnosis(diagnosis)]
    if task_type is not None and task_type not in _TREATED_TYPES:
        cues = [cue for cue in cues if cue.kind != "bad_treatment"]
    ranked = sorted(enumerate(cues), key=lambda item: (item[1].kind in _GENERIC, -item[1].share, item[0]))
    edits: dict[str, list[str]] = {}
    for _, cue in ranked:
        for name in _EDITS[direction][cue.kind]:
            reasons = edits.setdefault(name, [])
            if cue.diagnosis not in reasons:
                reasons.append(cue.diagnosis)
    return edits
