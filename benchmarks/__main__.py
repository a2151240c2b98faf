"""``python -m benchmarks``: see :mod:`benchmarks.run`; ``python -m benchmarks suite``: :mod:`benchmarks.suite`;
``python -m benchmarks linear``: :mod:`benchmarks.linear`; ``python -m benchmarks proxy``: :mod:`benchmarks.proxy`;
``python -m benchmarks view``: :mod:`benchmarks.view`; ``python -m benchmarks tools``: :mod:`benchmarks.tools`;
``python -m benchmarks mcp``: :mod:`benchmarks.mcp`; ``python -m benchmarks modules``: :mod:`benchmarks.modules`."""

import sys

if sys.argv[1:2] == ["linear"]:
    from .linear import main as linear_main

    raise SystemExit(linear_main(sys.argv[2:]))

if sys.argv[1:2] == ["proxy"]:
    from .proxy import main as proxy_main

    raise SystemExit(proxy_main(sys.argv[2:]))
if sys.argv[1:2] == ["mcp"]:
    from .mcp import main as mcp_main

    raise SystemExit(mcp_main(sys.argv[2:]))
if sys.argv[1:2] == ["view"]:
    from .view import main as view_main

    raise SystemExit(view_main(sys.argv[2:]))

if sys.argv[1:2] == ["tools"]:
    from .tools import main as tools_main

    raise SystemExit(tools_main(sys.argv[2:]))

if sys.argv[1:2] == ["modules"]:
    from .modules import main as modules_main

    raise SystemExit(modules_main(sys.argv[2:]))

if sys.argv[1:2] == ["suite"]:
    from .suite import main as suite_main

    raise SystemExit(suite_main(sys.argv[2:]))

from .run import main

raise SystemExit(main())
