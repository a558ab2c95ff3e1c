"""The rules of Aegis, and nothing else: cards, actions, rules options, a game, a match.

These modules import only the standard library and each other. They do no I/O, read no
clock and use randomness only through an explicit seeded RNG; every other part of aegis-ref
asks them what is legal and what an action does.
"""
