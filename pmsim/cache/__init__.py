"""Caches, the persistence tracker and the C core that runs their hot paths."""
