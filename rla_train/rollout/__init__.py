"""Rollouts: agents play rla envs with a generation backend, one batched generate call per turn."""
