"""The TRL environment adapter: direct use on rla envs, pickling, and a real GRPOTrainer run on a tiny model."""

from __future__ import annotations

import math
import pickle

import pytest

from rla_train.adapters.trl_env import (EPISODE_OVER, CodeEnvironment, TextGameEnvironment, environment_factory,
                                        task_dataset)

CODE_TASK = "bundled:sum_to_n"
RIGHT = "n = int(input())\nprint(n * (n + 1) // 2)\n"
WRONG = "n = int(input())\nprint(n * (n - 1) // 2)\n"  # one token away from RIGHT


# --------------------------------------------------------------------- the adapter on its own
def test_code_env_submit_wins_and_then_reports_episode_over():
    env = environment_factory("rla/Code-v0")()
    assert isinstance(env, CodeEnvironment)
    opening = env.reset(task=CODE_TASK, prompt=[{"role": "user", "content": ""}], seed=3)
    assert "sum 1 + 2 + ... + n" in opening
    assert env.get_reward() == 0.0 and not env.done
    verdict = env.submit(env.env.unwrapped.expert_action())
    assert "Accepted" in verdict and "episode is over" in verdict
    assert env.get_reward() == 1.0 and env.done
    assert env.submit(RIGHT) == EPISODE_OVER  # after the end: a message, not an exception
    assert env.get_reward() == 1.0
    env.reset(task=CODE_TASK)  # a reused (pooled) instance starts clean
    assert env.get_reward() == 0.0
    assert "Not accepted" in env.submit(WRONG)
    assert env.get_reward() == 0.0


def test_reset_accepts_task_json_dict_and_id_and_separates_from_prompt():
    factory = environment_factory("rla/Code-v0")
    env = factory()
    task = env.env.unwrapped.get_task(CODE_TASK)
    by_id = env.reset(task=CODE_TASK)
    assert env.reset(task=task.to_json()) == by_id
    assert env.reset(task=task.to_dict()) == by_id
    # appended after a non-empty prompt: TRL concatenates, so the adapter adds the separator
    assert env.reset(task=CODE_TASK, prompt=[{"role": "user", "content": "Solve:"}]) == "\n\n" + by_id
    with pytest.raises(ValueError, match="does not parse"):
        env.reset(task="{not json")


def test_tool_before_reset_is_a_clear_error():
    env = environment_factory("rla/Code-v0")()
    with pytest.raises(RuntimeError, match="reset"):
        env.submit(RIGHT)


def test_only_reset_tool_and_get_reward_are_public_methods():
    # TRL turns every public function of the class (but reset/get_reward) into a tool.
    import inspect

    for cls, tool in ((CodeEnvironment, "submit"), (TextGameEnvironment, "act")):
        public = {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}
        assert public == {"reset", "get_reward", tool}


def test_tool_schema_comes_from_the_docstring():
    from transformers.utils import get_json_schema

    schema = get_json_schema(CodeEnvironment("rla/Code-v0").submit)["function"]
    assert schema["name"] == "submit"
    assert schema["parameters"]["required"] == ["program"]
    assert "Python" in schema["parameters"]["properties"]["program"]["description"]
    act = get_json_schema(TextGameEnvironment("rla/AlfWorld-v0").act)["function"]
    assert act["parameters"]["properties"]["command"]["type"] == "string"


def test_factory_and_instances_pickle():
    factory = environment_factory("rla/Code-v0", mode="multi", max_attempts=2)
    clone = pickle.loads(pickle.dumps(factory))
    env = clone()
    assert isinstance(env, CodeEnvironment) and env.env.unwrapped.max_attempts == 2
    env.reset(task=CODE_TASK)
    restored = pickle.loads(pickle.dumps(env))  # the configuration travels, the episode does not
    assert restored.env.unwrapped.max_attempts == 2
    assert restored.reset(task=CODE_TASK) == env.reset(task=CODE_TASK)
    assert "1 attempt left" in restored.submit(WRONG) and not restored.done


def test_unknown_env_id_suggests_the_closest():
    import gymnasium as gym

    with pytest.raises(gym.error.UnregisteredEnv, match="Did you mean 'rla/Code-v0'"):
        environment_factory("rla/Cod-v0")


def test_alfworld_act_lists_commands_and_wins_with_the_expert():
    factory = environment_factory("rla/AlfWorld-v0", n_per_type=1, task_types=["pick_and_place_simple"],
                                  expert=True)
    rows = task_dataset("rla/AlfWorld-v0", 1, n_per_type=1, task_types=["pick_and_place_simple"])
    env = factory()
    row = rows[0]
    assert env.reset(**row) is None  # the row's prompt already shows the opening text
    opening = row["prompt"][-1]["content"]
    assert "Your task is to:" in opening and "Admissible commands:" in opening
    reply = env.act("do a barrel roll")
    assert "Nothing happens." in reply and env.info["invalid_action"]
    for _ in range(50):
        if env.done:
            break
        reply = env.act(env.env.unwrapped.expert_action())
    assert env.get_reward() == 1.0 and "You solved the task" in reply
    assert env.act("look") == EPISODE_OVER


# --------------------------------------------------------------------- a real GRPOTrainer run
class _ScriptedGeneration:
    """Makes a model's ``generate`` answer from a script while its forward pass (log-probs, loss) stays real.

    A random tiny model never writes a well-formed tool call, and one taught a call by a few SFT steps writes it or
    not depending on float rounding (that test failed in every fresh clone). The trainer's side is what is under
    test: GRPOTrainer must run our ``environment_factory`` tools on what was generated, collect the env's reward and
    update the real weights. So the first turn of row ``i`` is ``first_turns[i % len(first_turns)]`` and every
    later turn (after the tool's reply) is ``later_turn``; prompts are left-padded as TRL passes them.
    """

    def __init__(self, tokenizer, first_turns, later_turn):
        self.tokenizer = tokenizer
        self.first_turns = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in first_turns]
        self.later_turn = tokenizer(later_turn, add_special_tokens=False)["input_ids"]
        self.tool_response = tokenizer("<tool_response>", add_special_tokens=False)["input_ids"]
        self.calls = 0

    def _is_later_turn(self, row) -> bool:
        ids, pattern = row.tolist(), self.tool_response
        return any(ids[k:k + len(pattern)] == pattern for k in range(len(ids) - len(pattern) + 1))

    def __call__(self, input_ids, attention_mask=None, generation_config=None, **kwargs):
        import torch

        self.calls += 1
        completions = [self.later_turn if self._is_later_turn(row) else self.first_turns[i % len(self.first_turns)]
                       for i, row in enumerate(input_ids)]
        width = max(len(ids) for ids in completions)
        pad = self.tokenizer.pad_token_id
        tail = torch.tensor([ids + [pad] * (width - len(ids)) for ids in completions], dtype=input_ids.dtype)
        return torch.cat([input_ids, tail.to(input_ids.device)], dim=1)


def test_grpo_trainer_trains_on_the_code_env(tiny_model_path, tmp_path, monkeypatch):
    import json

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from rla_train.adapters.trl_env import with_tool_template

    torch.set_num_threads(1)
    torch.manual_seed(0)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = with_tool_template(AutoTokenizer.from_pretrained(tiny_model_path))
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    dataset = task_dataset("rla/Code-v0")
    dataset = dataset.filter(lambda row: row["task_id"] == CODE_TASK)
    assert len(dataset) == 1
    # Half the rollouts submit the right program, half the wrong one: the env's rewards are 1, 0, 1, 0, so the group
    # has a non-zero advantage and the update must change the weights.
    calls = [f'<tool_call>\n{json.dumps({"name": "submit", "arguments": {"program": program}})}\n</tool_call>'
             "<|im_end|>" for program in (RIGHT, WRONG)]
    script = _ScriptedGeneration(tokenizer, calls, "Submitted.<|im_end|>")
    monkeypatch.setattr(model, "generate", script)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}

    args = GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=256, max_tool_calling_iterations=1, temperature=1.0, learning_rate=1e-2,
        logging_steps=1,
        use_cpu=True, bf16=False, fp16=False, report_to="none", save_strategy="no", seed=0,
    )
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer, train_dataset=dataset,
                          environment_factory=environment_factory("rla/Code-v0"))
    trainer.train()

    assert trainer.state.global_step == 2 and script.calls >= 4  # two turns (call, then after the tool) per step
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2 and all(math.isfinite(entry["loss"]) for entry in logs)
    rewards = [entry["rewards/CodeEnvironment/mean"] for entry in logs]
    assert rewards == [0.5, 0.5], rewards  # the env graded each submission: right 1.0, wrong 0.0
    assert all(entry["tools/call_frequency"] > 0.0 for entry in logs)
    changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    assert changed, "no parameter changed"
