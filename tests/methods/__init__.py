"""Tests of the methods: the estimator contract over the registry and each method's own."""
