"""Tournaments: scheduling, the results store, ratings and standings."""
