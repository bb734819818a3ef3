"""Shared core of every rla env family: Task, Trajectory, errors, text spaces, TaskEnv, family hooks, registry."""

from rla_envs.core.env import TaskEnv, Transition
from rla_envs.core.errors import (
    DataNotFound,
    InvalidFile,
    InvalidTask,
    MissingDependency,
    ResetNeeded,
    RewriteRejected,
    RlaError,
    TaskError,
    TaskGenerationError,
    TaskNotFound,
)
from rla_envs.core.family import TaskFamily, get_family
from rla_envs.core.spaces import PrintableText
from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory, play_episode

__all__ = [
    "Task", "Trajectory", "play_episode", "TaskEnv", "Transition", "PrintableText", "TaskFamily", "get_family",
    "RlaError", "TaskError", "TaskNotFound", "InvalidTask", "RewriteRejected", "TaskGenerationError",
    "ResetNeeded", "InvalidFile", "DataNotFound", "MissingDependency",
]
