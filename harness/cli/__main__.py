"""``python -m harness.cli``: the command line."""

from harness.cli.commands import main

if __name__ == "__main__":
    raise SystemExit(main())
