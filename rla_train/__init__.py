"""rla_train: generation backends, agents, the rollout engine, the generative reward model and the co-trainer.

Heavy dependencies (torch, transformers, trl, vllm) are imported only by the modules that need them.
"""
