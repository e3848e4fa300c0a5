"""graphdoctor's version, declared once: the package (``pyproject.toml`` reads it from here),
the reports it writes and ``graphdoctor --version`` all say this one. A ground module: it
imports nothing, so any stage may import it without importing the package's API."""

__version__ = "0.1.0"
