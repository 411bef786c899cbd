"""Data package: built-in trace-format specs (TOML). No Python lives here."""
