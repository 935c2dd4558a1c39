"""Dataset sources, one module each; a dataset config names its loader with ``_target_``."""
