"""Registers the code family (``rla/Code-v0``): what it is and which hooks it offers; imports nothing heavy."""

from rla_envs.core.registry import FamilySpec, register_family

SPEC = register_family(FamilySpec(
    name="code",
    env_ids={"rla/Code-v0": "rla_envs.code.env:CodeEnv"},
    agent="code",
    task_family="rla_envs.code.family:CodeFamily",
    splits=("bundled",),
    split_option="source",  # a task source: bundled, humaneval or a JSONL file
))
