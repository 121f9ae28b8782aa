"""The HTTP adapter: the callback client and outbound address safety."""
