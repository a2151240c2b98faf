"""See a recording: one self-contained HTML page per cassette, folder, failed replay or diff.

``llmvcr view PATH...`` (:func:`write_view`), ``llmvcr diff A B --html FILE`` (:func:`write_diff`)
and the pytest option ``--llmvcr-report=FILE`` (:mod:`llmvcr.view.report`) write it. The page is
built from the neutral view ``llmvcr show`` and the converters use; its HTML, CSS and scripts are
files in this package (``static/``), filled in with the data as a JSON island. Nothing in it
reaches the network.
"""

from __future__ import annotations

from .pages import write_diff, write_divergences, write_view

__all__ = ["write_diff", "write_divergences", "write_view"]
