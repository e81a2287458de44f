"""The one error type of config checking: a bad key or value, caught by the CLI and printed as one line."""


class ConfigError(ValueError):
    """A bad config key or value; the message names the valid choices."""
