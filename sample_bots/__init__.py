"""Sample bots that speak only the Aegis protocol."""
