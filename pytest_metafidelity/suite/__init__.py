"""The built-in fidelity suite run by ``pytest --metafidelity``."""
