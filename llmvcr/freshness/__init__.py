"""Whether a cassette still tells the truth: ages, live checks, the plan, the budget and the play log.

The modules: ``check`` (findings as a cassette opens and closes), ``verify`` (against the live API),
``plan`` and ``budget`` (what re-recording costs), ``usage`` (tokens and prices), ``playlog``.
"""
