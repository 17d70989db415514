"""The `testsession` command line. Modules here import only argparse at load time, so that
`--help` and `--version` start fast; each handler imports what it needs when it runs."""
