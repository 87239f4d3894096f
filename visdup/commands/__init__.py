"""Subcommands of ``visdup``; each module has HELP, add_arguments(parser) and run(args)."""
