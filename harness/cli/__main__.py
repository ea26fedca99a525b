"""``python -m mirrordrill.harness.cli``: the command line."""

from mirrordrill.harness.cli.commands import main

if __name__ == "__main__":
    raise SystemExit(main())
