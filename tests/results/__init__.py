"""Tests of the result store, the ledger, the record index and the cost model."""
