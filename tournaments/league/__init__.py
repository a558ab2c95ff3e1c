"""A league: bot manifests, uploads, the store of submissions, and the loop that takes them
in and plays them."""
