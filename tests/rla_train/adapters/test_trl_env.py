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
def _teach_tool_call(model, tokenizer, prompt, completions, steps=100):
    """Fit the random tiny model to answer ``prompt`` with one of ``completions`` (so rollouts call the tool).

    Returns the final loss (mean over the completion tokens).
    """
    import torch

    prefix = tokenizer.apply_chat_template(prompt, tools=[CodeEnvironment("rla/Code-v0").submit],
                                           add_generation_prompt=True, tokenize=False)
    prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    batch = [prefix_ids + tokenizer(text, add_special_tokens=False)["input_ids"] for text in completions]
    ids = torch.tensor(batch)
    labels = ids.clone()
    labels[:, :len(prefix_ids)] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


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
    # Random weights never call a tool; teach the model two answers (one right, one wrong, one token apart)
    # so some rollouts win and some lose, and GRPO gets a non-zero advantage.
    calls = [f'<tool_call>\n{json.dumps({"name": "submit", "arguments": {"program": program}})}\n</tool_call>'
             "<|im_end|>" for program in (RIGHT, WRONG)]
    assert _teach_tool_call(model, tokenizer, dataset[0]["prompt"], calls) < 1.0
    before = {name: p.detach().clone() for name, p in model.named_parameters()}

    args = GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=160, max_tool_calling_iterations=1, temperature=0.3, learning_rate=1e-2,
        logging_steps=1,
        use_cpu=True, bf16=False, fp16=False, report_to="none", save_strategy="no", seed=0,
    )
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer, train_dataset=dataset,
                          environment_factory=environment_factory("rla/Code-v0"))
    trainer.train()

    assert trainer.state.global_step == 2
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2 and all(math.isfinite(entry["loss"]) for entry in logs)
    rewards = [entry["rewards/CodeEnvironment/mean"] for entry in logs]
    assert all(0.0 <= r <= 1.0 for r in rewards) and max(rewards) > 0.0, rewards  # the env's reward was collected
    assert max(entry["tools/call_frequency"] for entry in logs) > 0.0
    changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    assert changed, "no parameter changed"
