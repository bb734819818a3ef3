"""The ALFWorld family: text households from the ALFRED benchmark, played through TextWorld's PDDL engine.

Importing this package is cheap; the submodules import textworld/alfworld only when used:

- ``scene``: the plain-data scene model, PDDL rendering and parsing (pure).
- ``generate``: new games from the floor plans shipped in the alfworld wheel (``generate_game``).
- ``walkthrough``: the scripted reference solution and its check in the stock engine.
- ``tasks``: conversions (``game_from_task``, ...) and real data (``dataset_tasks``); ``generated``: the generated
  splits (``generated_tasks``).
- ``engine``: the cached PDDL engine (transcripts identical to textworld's stock one, ~10x faster).
- ``expert``: the walkthrough and the fixed hand-coded (searching) expert.
- ``env``: ``AlfWorldEnv``, registered as ``rla/AlfWorld-v0``.
- ``family``, ``goals``, ``mutations``: the curriculum hooks (describe, rewrite, validate, mutate).
"""

from __future__ import annotations

__all__ = ["FAMILY"]

FAMILY = "alfworld"
