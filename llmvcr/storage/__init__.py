"""Cassette files: reading and writing them whole, their formats, and what a run leaves behind.

The modules: ``files`` (parse, dump, load), ``writer`` and ``write_queue`` (atomic writes),
``validation`` (the file is whole), ``parse_cache`` and ``yaml_text`` (fast paths), ``formats`` and
``sniff`` (every format llmvcr reads), ``shutdown``, ``runs``, ``kept_timing``.
"""
