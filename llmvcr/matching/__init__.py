"""Canonical JSON, the request hash, matchers, ignore paths and placeholders (see ``rules``).

The package keeps the names ``llmvcr.matching`` always had; ``as_recorded`` matches as the
recorder did, ``diff`` explains a divergence, ``jsonpath`` and ``multipart`` read bodies.
"""

from .rules import (
    BUILTIN_MATCHERS as BUILTIN_MATCHERS,
)
from .rules import (
    DEFAULT_FINGERPRINTER as DEFAULT_FINGERPRINTER,
)
from .rules import (
    DEFAULT_MATCH_ON as DEFAULT_MATCH_ON,
)
from .rules import (
    Fingerprinter as Fingerprinter,
)
from .rules import (
    MatcherFn as MatcherFn,
)
from .rules import (
    MatcherSpec as MatcherSpec,
)
from .rules import (
    Normalised as Normalised,
)
from .rules import (
    Placeholder as Placeholder,
)
from .rules import (
    canonical_json as canonical_json,
)
from .rules import (
    default_request_hash as default_request_hash,
)
from .rules import (
    hash_bytes as hash_bytes,
)
from .rules import (
    last_user_message as last_user_message,
)
from .rules import (
    placeholder as placeholder,
)
from .rules import (
    register_matcher as register_matcher,
)
