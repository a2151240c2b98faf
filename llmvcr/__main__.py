"""``python -m llmvcr``: the command line."""

from .cli import main

raise SystemExit(main())
