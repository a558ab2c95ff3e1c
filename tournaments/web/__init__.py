"""The web service of a run (``aegis-ref serve``): live standings, matches, replays and bot
pages over HTTP, and the versioned JSON API behind them (``docs/running-a-tournament.md``).

:mod:`tournaments.web.data` builds the API's documents from the store,
:mod:`tournaments.web.app` serves them (Starlette), :mod:`tournaments.web.server` runs it
(uvicorn, TLS)."""
