"""The treebench test suite."""
