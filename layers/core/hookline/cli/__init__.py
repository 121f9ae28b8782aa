"""The server's operator commands (`hookline keys`, `hookline migrate`), joined to the `hookline` command of
hookline-client through the `hookline.commands` entry point group."""
