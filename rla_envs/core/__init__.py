"""Shared core of every rla env family: Task, errors, text spaces, the TaskEnv base and family hooks."""

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

__all__ = [
    "Task", "TaskEnv", "Transition", "PrintableText", "TaskFamily", "get_family",
    "RlaError", "TaskError", "TaskNotFound", "InvalidTask", "RewriteRejected", "TaskGenerationError",
    "ResetNeeded", "InvalidFile", "DataNotFound", "MissingDependency",
]
