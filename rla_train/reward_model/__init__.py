"""The generative reward model: step judgments (votes in ``\\boxed{±1}``), failure diagnoses, unit tests.

* :class:`RewardModel` judges every step of a batch of trajectories ``m`` times in one generate call.
* :class:`VerdictChoiceBackend` lets a tiny model answer by choosing ``\\boxed{+1}`` or ``\\boxed{-1}`` at the
  token where they part (no length bias), keeping each step's probability of "good".
* :class:`NoisyOracleJudge` (``reward_model.kind: noisy_oracle``) votes the family's expert step labels,
  each flipped with probability ``1 - accuracy``: a judge of known accuracy, never trained.
* :class:`RewardModelDiagnoser` turns those judgments into failure summaries for the curriculum.
* :class:`UnitTestWriter`, :func:`run_tests`, :func:`program_correct`: the coding variant, where the
  reward model writes unit tests that run against the policy's programs in the code sandbox.

The rewards computed from votes and pass matrices are pure maths in :mod:`rla_train.signals.rewards`.
"""

from rla_train.reward_model.diagnoser import RewardModelDiagnoser
from rla_train.reward_model.judge import DEFAULT_JUDGE_SAMPLING, JudgeReport, RewardModel, resolve_tasks
from rla_train.reward_model.oracle import NoisyOracleJudge
from rla_train.reward_model.parsing import UNPARSEABLE, judgment_reason, parse_verdict
from rla_train.reward_model.prompts import DEFAULT_MAX_CHARS, DEFAULT_MAX_HISTORY, PROMPT_KINDS, judge_chat
from rla_train.reward_model.unit_tests import (
    DEFAULT_TEST_SAMPLING, GeneratedTest, UnitTestWriter, parse_tests, program_correct, run_tests, trivial_programs,
    trivially_passed, unit_test_chat,
)
from rla_train.reward_model.verdicts import VERDICTS, VerdictChoiceBackend, VerdictGeneration

__all__ = [
    "RewardModel", "JudgeReport", "DEFAULT_JUDGE_SAMPLING", "resolve_tasks",
    "RewardModelDiagnoser",
    "VerdictChoiceBackend", "VerdictGeneration", "VERDICTS", "NoisyOracleJudge",
    "parse_verdict", "judgment_reason", "UNPARSEABLE",
    "judge_chat", "PROMPT_KINDS", "DEFAULT_MAX_HISTORY", "DEFAULT_MAX_CHARS",
    "UnitTestWriter", "GeneratedTest", "parse_tests", "unit_test_chat", "run_tests", "program_correct",
    "trivial_programs", "trivially_passed", "DEFAULT_TEST_SAMPLING",
]
