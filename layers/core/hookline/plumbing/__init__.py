"""Plumbing: settings from the environment, the composition root, invocation deadlines."""
