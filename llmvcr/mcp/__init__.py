"""MCP sessions recorded and replayed beside the model's calls.

Inside ``use_cassette``, ``recording`` and the pytest marker, every client session of the ``mcp``
SDK is recorded into the same cassette as the LLM calls, and replayed from it with no server
started: ``exchange`` (one connection, replayed or recorded whole), ``stdio`` (the stand-in server
process), ``http`` (the streamable HTTP writer task), ``sse`` (the SSE event stream and posts),
``seam`` (where they are wired into the SDK, loaded only when ``mcp`` is imported) and ``relay``
(``llmvcr mcp``, a stdio server wrapped for any client). The entry format is ``llmvcr.wire.mcp``.
"""
