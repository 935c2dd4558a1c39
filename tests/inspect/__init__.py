"""Tests of model inspection: drawing, rules, importances and refitting a stored run."""
