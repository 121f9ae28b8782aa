"""The use cases: submit, promote, execute, reap. They depend on ports, never on adapters."""
