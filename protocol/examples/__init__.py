"""Example bots written with the Python SDK (:mod:`protocol.sdk`)."""
