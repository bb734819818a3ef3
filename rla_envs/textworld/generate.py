"""Build TextWorld game files from a task spec: textworld's own generators, cached on disk.

A spec is plain JSON data (see :func:`normalize_spec`). Building one runs the generator that the spec
names with its seed, applies the spec's overrides (a new quest, a new objective, hints) and compiles
the game with Inform 7. The result is cached under ``cache_dir("textworld", "games", <spec hash>)``,
so each spec is generated once per machine; the folder is filled in a temporary directory and renamed
into place, so a crash never leaves half a game behind.

textworld keeps global generator state and is not thread-safe: generate in processes
(:func:`build_many` does), never in threads.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any

from rla_envs.core.errors import DataNotFound, InvalidTask, TaskGenerationError
from rla_envs.core.files import cache_dir
from rla_envs.core.task import thaw
from rla_envs.textworld.game import check_expert_wins, normalize_command, walkthrough_of

__all__ = [
    "GENERATORS", "normalize_spec", "spec_key", "game_path", "build_game_file", "build_many",
    "load_game", "hint_text",
]

# Settings each generator accepts, with their defaults. tw-custom is textworld.generator.make_game
# (random map + quest); tw-simple and tw-cooking are textworld.challenges.
GENERATORS: dict[str, dict[str, Any]] = {
    "tw-custom": {"nb_rooms": 3, "nb_objects": 6, "quest_length": 3, "quest_breadth": 1},
    "tw-simple": {"rewards": "sparse", "goal": "detailed", "test": False},
    "tw-cooking": {"recipe": 1, "take": 0, "go": 1, "open": False, "cook": False, "cut": False,
                   "recipe_seed": 0, "split": None},
}
_SPEC_KEYS = {"generator", "settings", "seed", "game_file", "quest", "objective", "hints"}
EXPERT_STEP_LIMIT = 50  # generated games must be winnable within the env's default max_steps
_FORMAT_VERSION = 1  # bump when a change here changes the games a spec builds


def normalize_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Check a TextWorld task spec and fill in defaults; raise ``InvalidTask`` saying what to fix.

    A spec has exactly one base:

    * ``{"generator": "tw-custom" | "tw-simple" | "tw-cooking", "settings": {...}, "seed": int}`` —
      regenerated from textworld's generator (settings not given take the defaults in ``GENERATORS``);
    * ``{"game_file": "/path/game.z8"}`` — a game compiled by textworld, with its ``.json`` beside it.

    and optional overrides: ``"quest"`` (list of commands from the start; the game is won in the state
    they reach), ``"objective"`` (the text shown as the goal) and ``"hints"`` (how many walkthrough
    commands the objective reveals, default 0).
    """
    spec = dict(thaw(spec))
    unknown = set(spec) - _SPEC_KEYS
    if unknown:
        raise InvalidTask(f"textworld spec has unknown keys {sorted(unknown)}; allowed keys: {sorted(_SPEC_KEYS)}")
    if ("generator" in spec) == ("game_file" in spec):
        raise InvalidTask("a textworld spec needs exactly one of 'generator' (with 'seed') or 'game_file', "
                          f"got keys {sorted(spec)}")
    out: dict[str, Any] = {}
    if "generator" in spec:
        name = spec["generator"]
        if name not in GENERATORS:
            raise InvalidTask(f"unknown textworld generator {name!r}; expected one of {sorted(GENERATORS)}")
        settings = dict(spec.get("settings") or {})
        bad = set(settings) - set(GENERATORS[name])
        if bad:
            raise InvalidTask(f"{name} settings {sorted(bad)} are not supported; known: {sorted(GENERATORS[name])}")
        for key, value in settings.items():
            default = GENERATORS[name][key]
            expected = type(default) if default is not None else (str, type(None))
            if not isinstance(value, expected) or (isinstance(value, bool) and not isinstance(default, bool)):
                raise InvalidTask(f"{name} setting {key!r} must be like {default!r}, got {value!r}")
        if not isinstance(spec.get("seed"), int) or isinstance(spec.get("seed"), bool):
            raise InvalidTask(f"a generated textworld spec needs an integer 'seed', got {spec.get('seed')!r}")
        out.update(generator=name, settings={**GENERATORS[name], **settings}, seed=int(spec["seed"]))
    else:
        if not isinstance(spec["game_file"], str) or not spec["game_file"] or "\x00" in spec["game_file"]:
            raise InvalidTask(f"'game_file' must be the path of a .z8 game (a string), got {spec['game_file']!r:.80}")
        path = Path(spec["game_file"]).expanduser().resolve()
        if path.suffix == ".ulx":
            raise InvalidTask(f"{path}: Glulx (.ulx) games need textworld < 1.7; recompile it as .z8 with tw-make")
        if path.suffix != ".z8":
            raise InvalidTask(f"game_file must be a .z8 game compiled by textworld, got {path.name!r}")
        if not path.is_file() or not path.with_suffix(".json").is_file():
            raise DataNotFound(f"textworld game {path} (and the .json textworld writes beside it) must both exist")
        out["game_file"] = str(path)
    if spec.get("quest") is not None:
        quest = spec["quest"]
        if not isinstance(quest, (list, tuple)) or not quest or not all(isinstance(c, str) for c in quest):
            raise InvalidTask(f"'quest' must be a non-empty list of command strings, got {quest!r}")
        out["quest"] = [normalize_command(c) for c in quest]
    if spec.get("objective") is not None:
        if not isinstance(spec["objective"], str):
            raise InvalidTask(f"'objective' must be a string, got {type(spec['objective']).__name__}")
        out["objective"] = spec["objective"].strip()
    hints = spec.get("hints", 0)
    if not isinstance(hints, int) or isinstance(hints, bool) or hints < 0:
        raise InvalidTask(f"'hints' must be an integer >= 0, got {hints!r}")
    if hints:
        out["hints"] = hints
    return out


def spec_key(spec: Mapping[str, Any]) -> str:
    """The cache key of a normalized spec (changes with textworld's version and this module's format)."""
    import textworld

    payload = json.dumps({"spec": spec, "textworld": textworld.__version__, "format": _FORMAT_VERSION},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def game_path(spec: Mapping[str, Any]) -> Path:
    """Where the compiled game of a normalized spec lives (it may not be built yet)."""
    if set(spec) == {"game_file"}:
        return Path(spec["game_file"])
    return cache_dir("textworld", "games") / spec_key(spec) / "game.z8"


def hint_text(walkthrough: Sequence[str], hints: int) -> str:
    """The sentence appended to an objective to reveal the first ``hints`` walkthrough commands."""
    shown = list(walkthrough)[:hints]
    if not shown:
        return ""
    return "Hint: start with " + ", then ".join(f"'{c}'" for c in shown) + "."


def load_game(path: str | os.PathLike):
    """The ``textworld.Game`` stored in the ``.json`` beside a compiled game file."""
    from textworld.generator.game import Game

    json_path = Path(path).with_suffix(".json")
    if not json_path.is_file():
        raise DataNotFound(f"{json_path} is missing; textworld writes it beside the game file when compiling")
    return Game.load(str(json_path))


def _make_base_game(spec: Mapping[str, Any]):
    """Run the generator named by the spec (or load the user's game): a ``textworld.Game``, not compiled."""
    if "game_file" in spec:
        return load_game(spec["game_file"])
    import textworld
    from textworld.generator import make_game

    options = textworld.GameOptions()
    options.seeds = spec["seed"]
    settings = dict(spec["settings"])
    if spec["generator"] == "tw-custom":
        options.nb_rooms = int(settings["nb_rooms"])
        options.nb_objects = int(settings["nb_objects"])
        options.quest_length = int(settings["quest_length"])
        options.quest_breadth = int(settings["quest_breadth"])
        return make_game(options)
    from textworld.challenges import CHALLENGES

    if spec["generator"] == "tw-cooking":
        settings["drop"] = False  # textworld sets no walkthrough for --drop games
    return CHALLENGES[spec["generator"]][1](settings, options)


def _set_quest(game, commands: Sequence[str]) -> None:
    """Make ``commands`` (played from the start) the game's only quest: won in the state they reach."""
    from textworld.generator.game import Event, GameProgression, Quest
    from textworld.generator.inform7 import Inform7Game

    progression = GameProgression(game, track_quests=False)
    inform7 = Inform7Game(game)
    actions = []
    for index, command in enumerate(commands):
        valid = progression.valid_actions
        by_command = dict(zip(inform7.gen_commands_from_actions(valid), valid))
        if command not in by_command:
            raise InvalidTask(f"quest command {index + 1} {command!r} is not possible at that point; "
                              f"possible commands then: {sorted(by_command)[:30]}")
        actions.append(by_command[command])
        progression.update(by_command[command])
    event = Event(actions=actions)
    if event.is_triggering(game.world.state):
        raise InvalidTask(f"the quest {list(commands)} changes nothing: its goal already holds at the start")
    game.quests = [Quest(win_events=[event])]
    game.metadata["walkthrough"] = list(commands)


def _compile(game, folder: Path) -> None:
    import textworld
    from textworld.generator import compile_game

    options = textworld.GameOptions()
    options.path = str(folder / "game.z8")
    options.force_recompile = True
    compile_game(game, options)


def build_game_file(spec: Mapping[str, Any]) -> Path:
    """The compiled game for a spec, generating and compiling it on first use (cached, atomic)."""
    spec = normalize_spec(spec)
    target = game_path(spec)
    if target.is_file() and target.with_suffix(".json").is_file():
        return target
    folder = target.parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        game = _make_base_game(spec)
        if "quest" in spec:
            _set_quest(game, spec["quest"])
        objective = spec.get("objective", game.objective or "")
        hints = hint_text(walkthrough_of(game), spec.get("hints", 0))
        game.objective = f"{objective} {hints}".strip() if hints else objective
        _compile(game, tmp)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process finished the same game first
            if not target.is_file():
                raise
    except Exception as exc:
        if isinstance(exc, InvalidTask):
            raise
        raise TaskGenerationError(f"could not build textworld game for spec {spec}: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _build_one(spec: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """Worker: build one spec (trying later seeds when the generator fails); (spec or None, message)."""

    last_error = ""
    for attempt in range(5):
        candidate = dict(spec)
        if "seed" in candidate:
            candidate["seed"] = spec["seed"] + 7919 * attempt
        try:
            path = build_game_file(candidate)
            check_expert_wins(path, max_steps=EXPERT_STEP_LIMIT)
            return normalize_spec(candidate), ""
        except Exception as exc:  # generator failures vary (QuestGenerationError, AssertionError, ...)
            last_error = f"{type(exc).__name__}: {exc}"
            if "generator" not in spec:
                break
    return None, last_error


def build_many(specs: Sequence[Mapping[str, Any]], *, workers: int | None = None,
               progress: bool = True, description: str = "textworld games") -> list[dict[str, Any]]:
    """Build many specs in worker processes with a progress bar; the specs that built, in order.

    A generated spec whose seed gives no valid game is retried with other seeds; the returned spec
    holds the seed that worked. Raises ``TaskGenerationError`` if any spec could not be built.
    """
    from tqdm.auto import tqdm

    specs = [normalize_spec(s) for s in specs]
    workers = max(1, min(workers or os.cpu_count() or 1, len(specs)))
    results: list[tuple[dict[str, Any] | None, str]] = []
    bar = tqdm(total=len(specs), desc=f"generating {description}", disable=not progress, unit="game")
    try:
        if workers == 1:
            for spec in specs:
                results.append(_build_one(spec))
                bar.update()
        else:
            # fork needs no `if __name__ == "__main__"` guard in the user's script; spawn elsewhere.
            method = "fork" if "fork" in get_all_start_methods() else "spawn"
            with ProcessPoolExecutor(max_workers=workers, mp_context=get_context(method)) as pool:
                for result in pool.map(_build_one, specs):
                    results.append(result)
                    bar.update()
    finally:
        bar.close()
    failed = [(s, msg) for s, (built, msg) in zip(specs, results) if built is None]
    if failed:
        raise TaskGenerationError(f"{len(failed)} of {len(specs)} textworld games could not be generated; "
                                  f"first: {failed[0][0]} -> {failed[0][1]}")
    return [built for built, _ in results]  # type: ignore[misc]

