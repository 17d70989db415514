from runner.cli.main import entry

entry()
