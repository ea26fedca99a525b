"""The command line's exit codes, shared by every command module (harness.cli.commands and harness.cli.bench)."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_HARNESS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_CODES_HELP = ("exit codes: 0 passed; 1 an expectation failed; 2 usage (bad argument or drill file); "
                   "3 the harness failed (the drill could not run: set-up error, crash; summary.json 'error' "
                   "says why); 130 interrupted")
