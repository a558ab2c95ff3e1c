"""The Aegis referee: the pure rules (:mod:`referee.rules`) and, around them, the match runner.

:mod:`referee.rules` does no I/O, reads no clock and uses randomness only through an explicit
seeded RNG. :mod:`referee.records` (the record format and its verifier),
:mod:`referee.selfplay` (in-process policies) and :mod:`referee.seeds` are pure too and sit on
top of it; the rest of the package starts bot processes and talks to them.
"""
