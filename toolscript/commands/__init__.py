"""One module per ``toolscript`` subcommand; see ``toolscript.cli`` for the contract."""
