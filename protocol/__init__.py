"""The language-neutral Aegis bot protocol: messages, codec, schema and a Python bot SDK."""
