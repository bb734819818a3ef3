"""The ALFWorld family: text households from the ALFRED benchmark, played through TextWorld's PDDL engine.

Importing this package is cheap; the submodules import textworld/alfworld only when used:

- ``scene``: the plain-data scene model, PDDL rendering and parsing (pure).
- ``generate``: new games from the floor plans shipped in the alfworld wheel (``generate_game``).
- ``walkthrough``: the scripted reference solution and its check in the stock engine.
- ``tasks``: Task sets (``generated_tasks``, ``dataset_tasks``) and ``game_from_task``.
"""

from __future__ import annotations

__all__ = ["FAMILY"]

FAMILY = "alfworld"
