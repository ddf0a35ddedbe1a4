"""The ALFWorld text engine (alfworld + textworld) behind an HTTP server that speaks the
AgentGym ALFWorld protocol. See ``server.py`` for the routes and ``__main__.py`` to start it."""

__all__ = ["__version__"]
__version__ = "0.1.0"
