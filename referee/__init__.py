"""The Aegis referee: the pure rules engine and, around it, the match runner.

The engine modules (:mod:`referee.cards`, :mod:`referee.actions`, :mod:`referee.options`,
:mod:`referee.game`, :mod:`referee.match`, :mod:`referee.records`, :mod:`referee.selfplay`)
do no I/O, read no clock and use randomness only through an explicit seeded RNG.
"""
