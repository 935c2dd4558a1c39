"""Hydra plugin package of treebench (Hydra loads plugins only from the hydra_plugins namespace)."""
