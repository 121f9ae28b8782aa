"""The v1 HTTP API, served by the submit function through Powertools' REST resolver."""
