"""The command line, on top of everything else (reports/ included)."""
