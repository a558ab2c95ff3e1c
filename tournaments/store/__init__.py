"""The results store: one SQLite file per tournament, and the only module that runs SQL."""
