"""sandman: a memory engine for Claude Code sessions."""

__version__ = "0.1.0"
