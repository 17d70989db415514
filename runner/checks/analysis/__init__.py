"""Root cause analyses: from a failure's message (by_message) and from a real attempt's evidence
(by_evidence)."""
