"""Runnable examples of using Hookline (the tests run them)."""
