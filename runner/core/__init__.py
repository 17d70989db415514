"""The base every layer may import: exit codes, errors, secret redaction."""
