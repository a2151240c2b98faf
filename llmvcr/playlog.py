"""The import path of :class:`llmvcr.freshness.playlog.PlayLog` the README names, kept working."""

from .freshness.playlog import PlayLog

__all__ = ["PlayLog"]
