"""The generative reward model: judge prompts, verdict parsing, one batched judge call, failure diagnoses."""

from __future__ import annotations

import re

import pytest

from rla_envs.core.task import Task
from rla_envs.core.trajectory import Trajectory
from rla_envs.curriculum.diagnosers import Diagnoser
from rla_train.backends.scripted import ScriptedBackend
from rla_train.reward_model import (
    JudgeReport, RewardModel, RewardModelDiagnoser, judge_chat, judgment_reason, parse_verdict,
)
from rla_train.rollout.episode import Episode

KITCHEN = Task(family="alfworld", instruction="put a clean apple in fridge.", spec={"task_type": "clean"},
               meta={"target": "apple"})
START = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
         "you see a countertop 1, a fridge 1, a sinkbasin 1.\n\nYour task is to: put a clean apple in fridge.")
ADMISSIBLE = ["go to countertop 1", "go to fridge 1", "go to sinkbasin 1", "look", "inventory"]


def kitchen_run(actions, *, won=False, task=KITCHEN, cls=Trajectory):
    """A hand-built ALFWorld-like run: each action answered by a plausible observation."""
    observations, infos = [START], [{"admissible_actions": ADMISSIBLE, "won": False, "step": 0}]
    for step, action in enumerate(actions, 1):
        if action.startswith("go to "):
            observations.append(f"You arrive at {action[6:]}. On the {action[6:]}, you see nothing.")
        elif action == "take apple 1 from fridge 1":
            observations.append("You pick up the apple 1 from the fridge 1.")
        else:
            observations.append("Nothing happens.")
        infos.append({"admissible_actions": ADMISSIBLE, "won": won and step == len(actions), "step": step,
                      "invalid_action": observations[-1] == "Nothing happens."})
    extra = {"task": task} if cls is Episode else {}
    return cls(task_id=task.id, observations=observations, actions=list(actions), infos=infos, won=won, **extra)


def judged_action(prompt: str) -> str:
    """The action of the step a rendered judge prompt asks about."""
    match = re.search(r"\(the one to judge\):\n> (.*)", prompt)
    return match.group(1) if match else ""


def go_to_is_bad(prompt: str) -> str:
    """Judge: "go to" steps are bad, "open"/"take" good, anything else gets a malformed answer."""
    action = judged_action(prompt)
    if action.startswith("go to"):
        return f"The agent wanders to {action[6:]} although the apple is elsewhere. \\boxed{{-1}}"
    if action.startswith(("open", "take")):
        return "This gets the apple closer to the fridge. \\boxed{1}"
    return "I am not sure what to say \\boxed{maybe}"


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("text, vote", [
    ("Good move. \\boxed{1}", 1),
    ("Good move. \\boxed{+1}", 1),
    ("Bad move. \\boxed{-1}", -1),
    ("Bad move. \\boxed{\u22121}", -1),            # Unicode minus
    ("Bad move. \\boxed{ -1 }", -1),
    ("Answer with \\boxed{1} or \\boxed{-1}. It loops. \\boxed{-1}", -1),   # the last box decides
    ("\\boxed{-1} was my first thought, but it is fine: \\boxed{1}", 1),
    ("\\boxed{1} then a broken \\boxed{", 0),     # the last box is malformed: unparseable
    ("It looks fine.", 0),
    ("\\boxed{0}", 0),
    ("\\boxed{2}", 0),
    ("\\boxed{yes}", 0),
    ("", 0),
    (None, 0),
])
def test_parse_verdict(text, vote):
    assert parse_verdict(text) == vote


def test_judgment_reason_is_the_text_before_the_last_box_collapsed_and_short():
    assert judgment_reason("  The agent\n goes   to the fridge. \\boxed{1}") == "The agent goes to the fridge."
    long = "word " * 100 + "so it is a bad step. \\boxed{-1}"
    reason = judgment_reason(long, limit=60)
    assert len(reason) <= 60 and reason.startswith("...") and reason.endswith("so it is a bad step.")


# --------------------------------------------------------------------------- prompts

def test_text_game_prompt_shows_task_step_result_admissible_and_the_window():
    run = kitchen_run(["go to countertop 1", "go to sinkbasin 1", "look", "go to fridge 1", "open fridge 1"])
    chat = judge_chat(KITCHEN, run, 4, max_history=2)
    assert [m["role"] for m in chat] == ["system", "user"]
    user = chat[1]["content"]
    assert "put a clean apple in fridge." in user
    assert "> open fridge 1" in user and "Nothing happens." in user            # the step and what followed
    assert "Admissible actions at this step: go to countertop 1" in user
    assert "(the last 2 of 4; 2 older omitted)" in user                                   # window says so
    assert "> go to fridge 1" in user and "> look" in user                      # the last 2 earlier steps
    assert "> go to countertop 1\n" not in user                                 # the oldest dropped
    assert user.rstrip().endswith("\\boxed{1} if it is a good step or \\boxed{-1} if it is a bad step.")
    first = judge_chat(KITCHEN, run, 0)[1]["content"]
    assert "none (this is the first step)" in first


def test_code_and_desktop_prompts():
    from rla_envs.code.tasks.bundled import bundled_task

    task = bundled_task("digit_sum")
    run = Trajectory(task_id=task.id, observations=["problem", "Not accepted: your program fails some tests."],
                     actions=["```python\ndef digit_sum(n):\n    return 0\n```"], infos=[{}, {}])
    user = judge_chat(task, run, 0)[1]["content"]
    assert "digit_sum" in user and "return 0" in user and "Not accepted" in user and "```python" in user

    desktop = Task(family="desktop", instruction="Bold the first line.", spec={})
    run = Trajectory(task_id=desktop.id, observations=[{"accessibility_tree": "<window name='mousepad'/>"},
                                                       {"accessibility_tree": "<label name='Bold'/>"}],
                     actions=["pyautogui.hotkey('ctrl', 'b')"], infos=[{}, {}])
    user = judge_chat(desktop, run, 0)[1]["content"]
    assert "Bold the first line." in user and "pyautogui.hotkey('ctrl', 'b')" in user and "label name='Bold'" in user


def test_prompt_errors_name_the_problem():
    run = kitchen_run(["look"])
    with pytest.raises(ValueError, match="Did you mean 'alfworld'"):
        judge_chat(Task(family="alfwrld", instruction="x", spec={}), run, 0)
    with pytest.raises(IndexError, match=r"\[0, 1\)"):
        judge_chat(KITCHEN, run, 1)


# --------------------------------------------------------------------------- judging

def test_one_generate_call_judges_every_step_of_every_trajectory():
    from rla_envs.code.tasks.bundled import bundled_task

    code_task = bundled_task("digit_sum")
    code_run = Trajectory(task_id=code_task.id, observations=["p", "Accepted: your program passes every test."],
                          actions=["def digit_sum(n):\n    return sum(map(int, str(n)))\n"], infos=[{}, {}])
    runs = [kitchen_run(["go to countertop 1", "open fridge 1", "look"]), kitchen_run([]),
            kitchen_run(["take apple 1 from fridge 1", "go to sinkbasin 1"]), code_run]
    backend = ScriptedBackend(go_to_is_bad)
    report = RewardModel(backend, judgments_per_step=3).judge([KITCHEN, KITCHEN, KITCHEN, code_task], runs)

    assert backend.batch_sizes == [6]                 # 3 + 0 + 2 + 1 steps, one call
    assert runs[0].judgments == [[-1, -1, -1], [1, 1, 1], [0, 0, 0]]
    assert runs[1].judgments == []
    assert runs[2].judgments == [[1, 1, 1], [-1, -1, -1]]
    assert runs[3].judgments == [[0, 0, 0]]           # the code prompt has no "> action" line: malformed answer
    assert isinstance(report, JudgeReport)
    assert (report.trajectories, report.steps, report.judgments, report.unparseable) == (4, 6, 18, 6)
    assert report.unparseable_fraction == pytest.approx(6 / 18)
    assert report.texts[0][0][0].endswith("\\boxed{-1}")


def test_episodes_use_their_own_task_and_keep_the_judge_texts():
    other = Task(family="textworld", instruction="find the key.", spec={})
    episodes = [kitchen_run(["go to fridge 1", "open fridge 1"], cls=Episode),
                kitchen_run(["go to countertop 1"], cls=Episode, task=other)]
    backend = ScriptedBackend(go_to_is_bad)
    RewardModel(backend, judgments_per_step=2).judge(None, episodes)
    assert backend.batch_sizes == [3]
    assert episodes[0].judgments == [[-1, -1], [1, 1]]
    assert episodes[0].judgment_texts[1] == ["This gets the apple closer to the fridge. \\boxed{1}"] * 2
    assert "find the key." in backend.prompts_seen[-1]            # the second episode's own task


def test_an_answer_cut_at_the_token_limit_is_unparseable_even_after_quoting_a_box():
    """The policy's action ends in \\boxed{1}; a judge that quotes it and is cut there has given no verdict."""
    from rla_train.backends import SamplingParams
    from rla_train.signals.rewards import consistency_rewards

    quoted = "The agent wrote: go to fridge 1 \\boxed{1}"
    answers = [quoted + " which ignores that the apple is in the sink, so \\boxed{-1}", "Fine step. \\boxed{1}"]
    backend = ScriptedBackend(answers)
    sampling = SamplingParams(max_new_tokens=len(quoted.encode()), temperature=1.0)
    run = kitchen_run(["go to fridge 1 \\boxed{1}"])
    report = RewardModel(backend, judgments_per_step=2, sampling=sampling).judge(KITCHEN, [run])
    cut, whole = report.generations[0][0].samples
    assert (cut.text, cut.finish_reason) == (quoted, "length") and parse_verdict(cut.text) == 1  # its text reads +1
    assert whole.finish_reason == "stop"
    assert run.judgments == [[0, 1]]                              # ... but a cut answer is no vote
    assert (report.unparseable, report.texts[0][0][0]) == (1, quoted)
    assert consistency_rewards(1.0, run.judgments[0]).tolist() == [-1.0, 1.0]   # raw (-2, +1): z-scores -1, +1
    assert parse_verdict("\\boxed{1}", finish_reason="length") == 0
    assert parse_verdict("\\boxed{1}", finish_reason="stop") == 1


def test_judge_validates_its_inputs():
    backend = ScriptedBackend(["\\boxed{1}"])
    with pytest.raises(ValueError, match="judgments_per_step must be an int >= 1"):
        RewardModel(backend, judgments_per_step=0)
    with pytest.raises(TypeError, match="generation backend"):
        RewardModel(object())
    model = RewardModel(backend)
    with pytest.raises(ValueError, match="has no task to judge it by"):
        model.judge(None, [kitchen_run(["look"])])
    with pytest.raises(ValueError, match="one task per trajectory"):
        model.judge([KITCHEN], [kitchen_run(["look"]), kitchen_run(["look"])])
    assert model.judge(KITCHEN, []).judgments == 0 and backend.batch_sizes == []


# --------------------------------------------------------------------------- diagnosis

def test_diagnoser_summarises_steps_every_judgment_called_bad_most_common_first():
    runs = [kitchen_run(["go to countertop 1", "look", "go to countertop 1", "go to sinkbasin 1"]),
            kitchen_run(["go to countertop 1", "inventory"]),
            kitchen_run(["go to countertop 1", "go to sinkbasin 1"]),
            kitchen_run(["look", "open fridge 1"]),
            kitchen_run(["go to fridge 1", "open fridge 1", "take apple 1 from fridge 1"], won=True)]
    backend = ScriptedBackend(go_to_is_bad)
    diagnoser = RewardModelDiagnoser(RewardModel(backend, judgments_per_step=3))
    assert isinstance(diagnoser, Diagnoser)
    summaries = diagnoser.diagnose(KITCHEN, runs)

    assert backend.batch_sizes == [10]               # only the 4 failed runs, in one call
    assert runs[4].judgments is None                 # the won run is not judged
    assert summaries[0].startswith("3/4 failed runs: step judged bad by all 3 judgments: 'go to countertop 1' "
                                   "(x4 in all) — The agent wanders to countertop 1")
    assert summaries[1].startswith("2/4 failed runs: step judged bad by all 3 judgments: 'go to sinkbasin 1'")
    assert len(summaries) == 2                       # "look" got malformed answers, "open" good ones

    # Already judged runs are not judged again; plain Trajectories keep no judge texts, so no reasons then.
    assert diagnoser.diagnose(KITCHEN, runs) == [s.split(" — ")[0] for s in summaries]
    assert backend.batch_sizes == [10]


def test_diagnoser_needs_unanimous_votes_and_failed_runs():
    run = kitchen_run(["go to countertop 1", "go to fridge 1"])
    run.judgments = [[-1, -1, 1], [-1, -1, -1]]
    backend = ScriptedBackend(go_to_is_bad)
    diagnoser = RewardModelDiagnoser(RewardModel(backend), max_summaries=1)
    assert diagnoser.diagnose(KITCHEN, [run]) == ["1/1 failed runs: step judged bad by all 3 judgments: "
                                                  "'go to fridge 1'"]
    assert backend.batch_sizes == []
    assert diagnoser.diagnose(KITCHEN, [kitchen_run(["go to fridge 1"], won=True)]) == []
    assert diagnoser.diagnose(KITCHEN, []) == []


def test_diagnoses_fit_the_llm_rewriter_prompt():
    from rla_envs.curriculum.rewriters import build_prompt

    runs = [kitchen_run(["go to countertop 1"]), kitchen_run(["go to countertop 1", "look"])]
    summaries = RewardModelDiagnoser(RewardModel(ScriptedBackend(go_to_is_bad))).diagnose(KITCHEN, runs)
    prompt = build_prompt("A kitchen.", "easier", 0.1, summaries, 1)
    assert "- 2/2 failed runs: step judged bad by all 3 judgments: 'go to countertop 1'" in prompt
    assert all(len(s) < 260 for s in summaries)


def test_diagnoser_on_real_alfworld_runs(tmp_path, monkeypatch):
    """Play a generated ALFWorld game with scripted detours and diagnose the failed runs."""
    pytest.importorskip("alfworld")
    import gymnasium as gym

    from rla_envs.alfworld.generated import generated_tasks

    monkeypatch.setenv("RLA_CACHE", str(tmp_path))
    [task] = [t for t in generated_tasks("valid_unseen", n_per_type=1, seed=0, workers=1, progress=False)
              if t.spec["task_type"] == "pick_and_place_simple"]
    env = gym.make("rla/AlfWorld-v0")
    runs = []
    for offset in range(3):
        observation, info = env.reset(seed=offset, options={"task": task})
        run = Trajectory(task_id=info["task_id"], observations=[observation], infos=[info])
        for step in range(4):
            action = sorted(info["admissible_actions"])[(offset + step) % len(info["admissible_actions"])]
            observation, _, terminated, truncated, info = env.step(action)
            run.actions.append(action)
            run.observations.append(observation)
            run.infos.append(info)
            if terminated or truncated:
                break
        run.won = bool(info["won"])
        runs.append(run)
    env.close()
    backend = ScriptedBackend(go_to_is_bad)
    summaries = RewardModelDiagnoser(RewardModel(backend)).diagnose(task, runs)
    assert backend.batch_sizes == [sum(len(r.actions) for r in runs if not r.won)]
    assert f"Task: {task.instruction.strip()[:20]}" in backend.prompts_seen[0]
    go_tos = [a for r in runs if not r.won for a, votes in zip(r.actions, r.judgments) if a.startswith("go to")]
    assert go_tos and summaries                      # sorted admissible commands start with "go to ..."
    assert summaries[0].startswith(f"{len(runs)}/{len(runs)} failed runs")
    assert all("failed runs: step judged bad by all 3 judgments: 'go to " in s for s in summaries)
