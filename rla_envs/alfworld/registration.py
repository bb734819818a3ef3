"""Registers the ALFWorld family (``rla/AlfWorld-v0``): what it is and which hooks it offers; imports nothing heavy."""

from rla_envs.core.registry import FamilySpec, register_family

SPEC = register_family(FamilySpec(
    name="alfworld",
    env_ids={"rla/AlfWorld-v0": "rla_envs.alfworld.env:AlfWorldEnv"},
    agent="text_game",
    text_game=True,
    task_family="rla_envs.alfworld.family:AlfWorldFamily",
    splits=("valid_seen", "valid_unseen"),
    split_option="split",
    expert_options={"expert": "handcoded"},  # the searching hand-coded expert (it does not know where objects are)
    step_labels="rla_envs.alfworld.planner:alfworld_step_labels",
    generate_tasks="rla_envs.alfworld.generated:generated_task_sample",
))
