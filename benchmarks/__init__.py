"""Benchmarks of llmvcr's replay, load, record and import costs; not part of the test suite.

Run ``python -m benchmarks`` from the repository root (``pip install -e '.[bench]'`` first).
"""
