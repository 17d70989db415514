"""The emulator's pure core (no HTTP serving)."""
