"""Configuration of the co-trainer ``python -m rla_train.run``: dataclasses, YAML files, ``--set`` overrides.

A :class:`TrainConfig` is made of one dataclass per section (``env``, ``policy``, ``reward_model``,
``optimizer``, ``pool``, ``rollout``, ``train``, ``output``, ``scale``); every field carries its ``help`` in its metadata,
as TRL and Hugging Face configs do, so ``--help`` prints each one with its default. Values resolve as
defaults <- YAML file <- ``--set section.field=value`` (values read as YAML: ``1e-6``, ``true``, ``[a, b]``)::

    config = load_config("configs/alfworld-qwen2.5-7b.yaml", ["policy.learning_rate=2e-6", "train.steps=10"])
    config.save(run_dir / CONFIG_FILENAME)        # atomic; TrainConfig.load() reads it back
    config = parse_args(sys.argv[1:])             # python -m rla_train.run [--config F] [--set k=v ...]

``TrainConfig()`` is the CPU default that ``configs/cpu-tiny.yaml`` spells out: a tiny local policy and
reward model, generated ALFWorld tasks, choice actions, a few minutes of training. Checks run when a config
is built (types, choices, ranges, cross-field rules) and say how to fix the value; :meth:`TrainConfig.
check_hardware` (run by :func:`load_config` unless ``check_hardware=False``) checks what this machine must
offer (a GPU for vLLM, the files named).
"""

from rla_train.config.fields import CONFIG_FILENAME, MODES, ConfigError, Mode
from rla_train.config.loading import (TrainConfig, apply_overrides, build_arg_parser, fields_help, load_config,
                                      parse_args, parse_command_line, parse_options, parse_value)
from rla_train.config.sections import (RETIRED_KEYS, SECTIONS, EnvConfig, OptimizerConfig, OutputConfig, PolicyConfig,
                                       PoolSettings, RewardModelConfig, RolloutConfig, RunConfig, ScaleConfig)

__all__ = ["ConfigError", "Mode", "MODES", "SECTIONS", "CONFIG_FILENAME", "EnvConfig", "PolicyConfig", "RewardModelConfig",
           "OptimizerConfig", "RETIRED_KEYS",
           "PoolSettings", "RolloutConfig", "RunConfig", "OutputConfig", "ScaleConfig", "TrainConfig",
           "load_config", "apply_overrides", "build_arg_parser", "parse_args", "parse_command_line", "fields_help",
           "parse_options", "parse_value"]
