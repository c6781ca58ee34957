"""Guarded sample plugin."""
