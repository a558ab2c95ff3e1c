"""Example tournament configs (YAML files shipped with the package)."""
