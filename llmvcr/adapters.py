"""The old import path of :mod:`llmvcr.clients`, kept working."""

from .clients import create_recording_adapter, create_replay_adapter

__all__ = ["create_recording_adapter", "create_replay_adapter"]
