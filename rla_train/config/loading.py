"""TrainConfig and how it is read: YAML files, ``--set`` overrides, the command line and ``--help``."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rla_envs.core.errors import did_you_mean
from rla_envs.core.registry import FamilySpec, families, family_spec
from rla_train.agents import agent_kind
from rla_train.config.fields import CONFIG_FILENAME, MODES, SAME_AS_POLICY, ConfigError, Mode, type_name
from rla_train.config.rules import check_sections
from rla_train.config.sections import (RETIRED_KEYS, SECTIONS, EnvConfig, OptimizerConfig, OutputConfig, PolicyConfig,
                                       PoolSettings, RewardModelConfig, RolloutConfig, RunConfig, ScaleConfig)


def _paths() -> list[str]:
    """Every ``section.field`` path (and alias path) a config accepts."""
    paths = []
    for name, cls in SECTIONS.items():
        for spec in dataclasses.fields(cls):
            paths += [f"{name}.{spec.name}"] + ([f"{name}.{spec.metadata['alias']}"] if spec.metadata["alias"] else [])
    return paths


def _unknown(path: str, where: str) -> ConfigError:
    return ConfigError(f"unknown config key {path!r}{where}; expected section.field with a section in "
                       f"{list(SECTIONS)} (python -m rla_train.run --help lists every field).{did_you_mean(path, _paths())}")


def _field_name(section: str, key: str, where: str = "") -> str:
    """The field of ``section`` that ``key`` names (its own name or its alias); ConfigError with a hint if none."""
    for spec in dataclasses.fields(SECTIONS[section]):
        if key in (spec.name, spec.metadata["alias"]):
            return spec.name
    if f"{section}.{key}" in RETIRED_KEYS:
        raise ConfigError(f"config key {section}.{key}{where} was {RETIRED_KEYS[f'{section}.{key}']}")
    raise _unknown(f"{section}.{key}", where)


def _merge(data: dict[str, dict], update: Any, where: str = "") -> None:
    """Put ``update`` (``{section: {field: value}}``) over ``data``; fields are replaced whole (dicts too)."""
    if update is None:
        return
    if not isinstance(update, Mapping):
        raise ConfigError(f"a config{where} must be a mapping of sections ({list(SECTIONS)}), got {type(update).__name__}")
    for section, values in update.items():
        if section not in SECTIONS:
            raise _unknown(str(section), where)
        if not isinstance(values, Mapping):
            raise ConfigError(f"section {section!r}{where} must be a mapping of fields, got {type(values).__name__} "
                              f"{values!r}; write e.g. `{section}:` then indented `field: value` lines")
        seen: dict[str, str] = {}
        for key, value in values.items():
            name = _field_name(section, str(key), where)
            if name in seen:
                raise ConfigError(f"{section}.{name}{where} is given twice (as {seen[name]!r} and {key!r}); keep one")
            seen[name] = str(key)
            data[section][name] = copy.deepcopy(value)


@dataclass
class TrainConfig:
    """Everything ``python -m rla_train.run`` needs; ``TrainConfig()`` is the CPU default (configs/cpu-tiny.yaml)."""

    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": EnvConfig.__doc__})
    policy: PolicyConfig = field(default_factory=PolicyConfig, metadata={"help": PolicyConfig.__doc__})
    reward_model: RewardModelConfig = field(default_factory=RewardModelConfig,
                                            metadata={"help": RewardModelConfig.__doc__})
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig, metadata={"help": OptimizerConfig.__doc__})
    pool: PoolSettings = field(default_factory=PoolSettings, metadata={"help": PoolSettings.__doc__})
    rollout: RolloutConfig = field(default_factory=RolloutConfig, metadata={"help": RolloutConfig.__doc__})
    train: RunConfig = field(default_factory=RunConfig, metadata={"help": RunConfig.__doc__})
    output: OutputConfig = field(default_factory=OutputConfig, metadata={"help": OutputConfig.__doc__})
    scale: ScaleConfig = field(default_factory=ScaleConfig, metadata={"help": ScaleConfig.__doc__})

    def __post_init__(self):
        for name, cls in SECTIONS.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                data = {name: {}}
                _merge(data, {name: value})
                value = cls(**data[name])
            if not isinstance(value, cls):
                raise ConfigError(f"TrainConfig.{name} must be a {cls.__name__} or a mapping, got {type(value).__name__}")
            setattr(self, name, value)
        self.check()

    @property
    def mode(self) -> Mode:
        """What ``train.mode`` uses and trains (see :data:`MODES`)."""
        return MODES[self.train.mode]

    def optimizer_for(self, role: str) -> OptimizerConfig:
        """The optimizer of ``role`` (``"policy"`` or ``"reward_model"``): the shared section with ``ROLE.optimizer`` over it."""
        return self.optimizer.overridden(getattr(self, role).optimizer, f"{role}.optimizer")

    @property
    def family_spec(self) -> FamilySpec:
        """The registered family of ``env.id`` (:class:`~rla_envs.core.registry.FamilySpec`: what it offers)."""
        env_ids = [env_id for spec in families().values() for env_id in spec.env_ids]
        try:
            agent_kind(self.env.id)
        except (KeyError, ValueError) as error:
            raise ConfigError(f"env.id must be the env id of a registered family the co-trainer has an agent for, one "
                              f"of {sorted(env_ids)}, got {self.env.id!r}.{did_you_mean(self.env.id, env_ids)}"
                              + ("" if isinstance(error, KeyError) else f" ({error})")) from None
        return family_spec(self.env.id)

    @property
    def family(self) -> str:
        """The env family's name (``"alfworld"``, ``"textworld"``, ``"code"``, ``"desktop"``, ...) of ``env.id``."""
        return self.family_spec.name

    def check(self) -> None:
        """Cross-section rules (:func:`rla_train.config.rules.check_sections`); each error names the fields and the fix."""
        check_sections(self)

    def check_hardware(self) -> None:
        """Checks of this machine: vLLM importable with a CUDA GPU when a backend is vllm; named files exist."""
        import importlib.util

        mode = self.mode
        uses = {("policy.backend", self.policy.backend)}
        if mode.reward_model:
            uses.add(("reward_model.backend", self.reward_model.backend))
        if mode.adapt_env and self.pool.rewriter == "llm":
            uses.add(("pool.rewriter_backend", self.pool.rewriter_backend))
        for key, backend in sorted(uses):
            if backend != "vllm":
                continue
            import torch

            missing = [what for what, absent in (("a CUDA GPU", not torch.cuda.is_available()),
                                                 ("vllm", importlib.util.find_spec("vllm") is None)) if absent]
            if missing:
                raise ConfigError(f"{key}=vllm needs a CUDA GPU and pip install \"rla[vllm]\"; this machine lacks "
                                  f"{' and '.join(missing)}. On CPU use --set {key}=transformers (with a small model, "
                                  "e.g. policy.model=tiny, or configs/cpu-tiny.yaml)")
        self.check_models()

    def check_models(self) -> None:
        """Every model the run loads is ``tiny``, a model directory or an ``org/name`` hub id (no network used).

        Server model names (backend ``openai``) and ``same-as-*`` are not checked; see
        :func:`rla_train.config.preflight.check_model_name`.
        """
        from rla_train.config.preflight import check_model_name

        mode, rm, pool = self.mode, self.reward_model, self.pool
        named = [("policy.model", self.policy.model, self.policy.backend)]
        if mode.reward_model and rm.kind == "model" and rm.model not in (None, SAME_AS_POLICY):
            named.append(("reward_model.model", rm.model, rm.backend))
        if mode.adapt_env and pool.rewriter == "llm" and pool.rewriter_model not in (None, SAME_AS_POLICY,
                                                                                   "same-as-reward-model"):
            named.append(("pool.rewriter_model", pool.rewriter_model, pool.rewriter_backend))
        for key, name, backend in named:
            if backend != "openai":
                check_model_name(key, name)

    # ----------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{section: {field: value}}``, plain YAML/JSON-ready data."""
        return {name: dataclasses.asdict(getattr(self, name)) for name in SECTIONS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """A config from ``{section: {field: value}}``; missing fields keep their defaults, unknown ones fail."""
        merged: dict[str, dict] = {name: {} for name in SECTIONS}
        _merge(merged, data)
        return cls(**{name: SECTIONS[name](**values) for name, values in merged.items()})

    def to_yaml(self) -> str:
        """The config as a YAML document (every field, in declaration order)."""
        import yaml

        return ("# rla co-trainer config (python -m rla_train.run --config THIS_FILE)\n"
                + yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=120))

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_yaml` to ``path`` atomically (a run records its resolved config beside its checkpoints)."""
        from rla_envs.core.files import atomic_write_text

        return atomic_write_text(path, self.to_yaml())

    @classmethod
    def load(cls, path: str | os.PathLike) -> TrainConfig:
        """The config saved at ``path`` (fields it lacks take today's defaults); no hardware check."""
        return load_config(path, check_hardware=False)


def _read_yaml(path: str | os.PathLike) -> Any:
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist (cwd {os.getcwd()}); pass an existing YAML "
                          f"file, e.g. configs/cpu-tiny.yaml")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {error}") from error


def _merge_file(data: dict[str, dict], path: Path, seen: tuple[Path, ...]) -> None:
    """Put the YAML file at ``path`` over ``data``; a file's ``extends: other.yaml`` (relative to the file) is put
    first, so a variant names only what it changes (configs/alfworld-qwen2.5-7b-lora.yaml)."""
    content = _read_yaml(path)
    if isinstance(content, Mapping) and "extends" in content:
        content = dict(content)
        base = content.pop("extends")
        if not isinstance(base, str) or not base:
            raise ConfigError(f"extends in {str(path)!r} must name a YAML file, got {base!r}")
        base_path = (path.parent / base).resolve()
        if base_path in seen or len(seen) > 8:
            raise ConfigError(f"config files extend each other in a loop or too deep: {[str(p) for p in seen]}")
        _merge_file(data, base_path, (*seen, path.resolve()))
    _merge(data, content, f" in {os.fspath(path)}")


def parse_value(raw: str, where: str) -> Any:
    """A command-line value read as YAML: ``1e-6``, ``true``, ``[a, b]``, ``{k: v}``; other text stays text.

    Raises:
        ConfigError: text that is not valid YAML (``where`` names the flag and value).
    """
    import yaml

    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as error:
        raise ConfigError(f"{where}: the value is not valid YAML ({error}); quote text") from error


def parse_options(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """``["task_types=[pick_and_place_simple]", "max_steps=20"]`` -> a dict, values read as YAML as ``--set`` does.

    Raises:
        ConfigError: a pair without ``=`` or a key, or a value that is not valid YAML (naming ``flag``).
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = str(pair).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} must look like key=value (e.g. {flag} max_steps=30), got {pair!r}")
        options[key.strip()] = parse_value(raw, f"{flag} {pair!r}")
    return options


def apply_overrides(data: dict[str, dict], overrides: Iterable[str]) -> dict[str, dict]:
    """Apply ``section.field=value`` overrides to ``data`` in place (values read as YAML); dict fields take deeper keys."""
    for override in overrides:
        key, sep, raw = str(override).partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) < 2 or not all(parts):
            raise ConfigError(f"--set expects section.field=value (e.g. policy.learning_rate=1e-6), got {override!r}")
        if parts[0] not in SECTIONS:
            raise _unknown(key.strip(), " in --set")
        name = _field_name(parts[0], parts[1], " in --set")
        value = parse_value(raw, f"--set {override!r}")
        if len(parts) == 2:
            data[parts[0]][name] = value
            continue
        target = data[parts[0]].get(name)
        if not isinstance(target, dict):
            raise ConfigError(f"--set {override!r}: {parts[0]}.{name} is not a mapping, so it has no key "
                              f"{'.'.join(parts[2:])!r}; use --set {parts[0]}.{name}=VALUE")
        for part in parts[2:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ConfigError(f"--set {override!r}: {part!r} holds a value, not a mapping")
        target[parts[-1]] = value
    return data


def load_config(path: str | os.PathLike | None = None, overrides: Iterable[str] = (), *,
                check_hardware: bool = True) -> TrainConfig:
    """Defaults <- the YAML file at ``path`` <- ``section.field=value`` overrides, checked (and the machine too).

    Raises:
        ConfigError: an unknown key (with the closest field), a wrong type, a value out of range, a rule between
            fields, or (``check_hardware``) a vLLM backend without a GPU or a named file that is missing.
    """
    data = TrainConfig().to_dict()
    if path is not None:
        _merge_file(data, Path(path), seen=())
    config = TrainConfig.from_dict(apply_overrides(data, overrides))
    if check_hardware:
        config.check_hardware()
    return config


def fields_help(width: int = 100) -> str:
    """Every field, grouped by section: ``section.field (type, default ...)`` and its help, indented."""
    import textwrap

    lines = ["config fields (set in a YAML file as section: {field: value}, or with --set section.field=value):"]
    defaults = TrainConfig().to_dict()
    for section, cls in SECTIONS.items():
        lines += ["", f"{section}: {cls.__doc__}"]
        hints = typing.get_type_hints(cls)
        for spec in dataclasses.fields(cls):
            extra = [f"default: {defaults[section][spec.name]!r}"]
            if spec.metadata["choices"]:
                extra.append("one of: " + ", ".join(spec.metadata["choices"]))
            if spec.metadata["alias"]:
                extra.append(f"alias: {section}.{spec.metadata['alias']}")
            lines.append(f"  {section}.{spec.name} ({type_name(hints[spec.name])}; {'; '.join(extra)})")
            lines += textwrap.wrap(spec.metadata["help"], width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def build_arg_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m rla_train.run``; its ``--help`` documents every config field."""
    parser = argparse.ArgumentParser(
        prog="python -m rla_train.run", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=fields_help(),
        description="Train a policy, its reward model and its tasks together (RLAnything). With no arguments it "
                    "runs the CPU default (configs/cpu-tiny.yaml).")
    parser.add_argument("--config", metavar="FILE", help="YAML config file (see configs/); fields it omits keep "
                                                         "their defaults")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override one field (repeatable); the value is read as YAML: 1e-6, true, [a, b], null")
    parser.add_argument("--resume", metavar="DIR", help=f"continue the run in DIR with the config it recorded "
                                                        f"(DIR/{CONFIG_FILENAME}); --set still applies")
    parser.add_argument("--overwrite", action="store_true", help="start afresh in an output.dir that holds an earlier "
                                                                 "run: its config, checkpoints, metrics and summary "
                                                                 "are removed first (without it such a run is refused)")
    return parser


def parse_args(argv: Sequence[str] | None = None, *, check_hardware: bool = True) -> TrainConfig:
    """The config the command line describes; a bad config exits with status 2 and the fix (argparse style)."""
    return parse_command_line(argv, check_hardware=check_hardware)[0]


def parse_command_line(argv: Sequence[str] | None = None, *,
                       check_hardware: bool = True) -> tuple[TrainConfig, argparse.Namespace]:
    """:func:`parse_args`, plus the parsed arguments (``overwrite``, ``resume``) that are not config fields."""
    parser = build_arg_parser()
    args = parser.parse_args(argv)
    path = args.config
    if args.resume is not None:
        if args.config is not None:
            parser.error(f"--resume uses the config recorded in {args.resume}/{CONFIG_FILENAME}; drop --config "
                         "(change fields with --set)")
        if args.overwrite:
            parser.error("--resume continues the run in DIR and --overwrite clears it; pass one of them")
        path = Path(args.resume) / CONFIG_FILENAME
        if not path.is_file():
            parser.error(f"--resume {args.resume}: no {CONFIG_FILENAME} there; pass the output.dir of an earlier run")
    try:
        config = load_config(path, args.overrides, check_hardware=check_hardware)
    except ConfigError as error:
        parser.error(str(error))
    if args.resume is not None:
        config.train.resume_from = str(args.resume)
    return config, args
