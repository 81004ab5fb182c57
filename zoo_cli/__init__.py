"""The `zoo` command line (`zoo_cli.main`), one module per subcommand; it imports zoo_tasks/
and zoo/, never the other way round."""
