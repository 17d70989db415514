"""The job: trigger, wait, analyses, and the verdict policy every output reads."""
