"""One module per kind of request a check makes (HTTP, TCP, DNS): how it is performed and what it saw."""
