"""The `zoo` command line (`tools.main`), one module per subcommand; it imports tasks/ and zoo/,
never the other way round."""
