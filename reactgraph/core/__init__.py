"""What every layer uses: the exceptions, token usage and usage limits, the settings, bounds on what enters the engine, redaction, the data directory."""
