"""The machine engines: :mod:`.reference` (the pure-Python timed and functional engines, the
executable specification) and :mod:`.native_engine` (the C engine, the default backend)."""
