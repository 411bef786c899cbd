"""Data package: built-in classification rules and tables (TOML). No Python lives here."""
