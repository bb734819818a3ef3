"""Registers the desktop family (``rla/OSWorld-v0``): what it is and which hooks it offers; imports nothing heavy."""

from rla_envs.core.registry import FamilySpec, register_family

SPEC = register_family(FamilySpec(
    name="desktop",
    env_ids={"rla/OSWorld-v0": "rla_envs.desktop.env:OSWorldEnv"},
    agent="desktop",
    task_family="rla_envs.desktop.family:DesktopFamily",
))
