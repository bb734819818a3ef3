"""Adapters that let other trainers use rla envs directly (TRL's ``environment_factory``)."""
