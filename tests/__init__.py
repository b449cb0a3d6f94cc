"""The test suite; shared helpers live in tests/support/, shared fixtures in tests/conftest.py."""
