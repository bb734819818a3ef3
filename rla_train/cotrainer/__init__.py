"""The co-trainer: builds a run from its config, then loops rollout -> judge -> signals -> updates -> pool.

* :mod:`~rla_train.cotrainer.play_setup`: what a run plays with (model, agent, backends, judge, env specs,
  held-out evaluation), shared with ``benchmarks.evaluate`` so an evaluation plays as the run did;
* :mod:`~rla_train.cotrainer.components`: everything a run is made of (the above, the task pool's feeder, the
  two trainers), built once;
* :mod:`~rla_train.cotrainer.loop`: the loop itself (``train(config)``), warm starts, evaluations;
* :mod:`~rla_train.cotrainer.policy_update`: one update through TRL's GRPO loss, optimizer and scheduler;
* :mod:`~rla_train.cotrainer.checkpoint` and :mod:`~rla_train.cotrainer.run_dir`: what a run leaves on disk;
* :mod:`~rla_train.cotrainer.run_log`, :mod:`~rla_train.cotrainer.pool_metrics` and
  :mod:`~rla_train.cotrainer.plots`: its metrics, the pool's scalars and the learning-curves picture;
* :mod:`~rla_train.cotrainer.trackers`: the experiment trackers the metrics are mirrored to (``output.report_to``);
* :mod:`~rla_train.cotrainer.lora`: LoRA adapters for either model (``use_peft``).
"""
