"""Tests of the dataset loaders, the data cache, the mirror and the split protocols."""
