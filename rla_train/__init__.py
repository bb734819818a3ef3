"""rla_train: the co-trainer (policy + reward model on TRL). Not built yet: see the project issues."""
