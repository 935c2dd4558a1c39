"""Fault tests: bad data, damaged records, a faulty environment, SLURM failures."""
