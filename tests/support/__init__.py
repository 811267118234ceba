"""Test support: oracles written from the reference tools' rules, hypothesis strategies, generated data and
the helpers the test files share (imported as ``support.<module>``; ``tests/`` is on the path)."""
