"""One module per ``toolscript`` subcommand; see ``toolscript.cli.frame`` for the contract."""
