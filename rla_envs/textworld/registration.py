"""Registers the TextWorld family (``rla/TextWorld-v0``): what it is and which hooks it offers (light)."""

from rla_envs.core.registry import FamilySpec, register_family

SPEC = register_family(FamilySpec(
    name="textworld",
    env_ids={"rla/TextWorld-v0": "rla_envs.textworld.env:TextWorldEnv"},
    agent="text_game",
    text_game=True,
    task_family="rla_envs.textworld.family:TextWorldFamily",
    step_labels="rla_envs.textworld.oracle:textworld_step_labels",
))
