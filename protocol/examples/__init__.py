"""Example bots written with the Python SDK (:mod:`protocol.sdk`).

They are also the bundled bots ``first`` and ``random``: ``sample_bots/first/bot.py`` and
``sample_bots/random/bot.py`` run these classes under their own names (``random`` mixing its
``AEGIS_SEED`` into each match's seed, which a short example leaves out), so the code the
documentation shows is the code that plays."""
