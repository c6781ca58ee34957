"""Mutation fuzzing of eagle3-lint's analysis pipeline on real vLLM releases (see harness.py)."""
