"""Hardware: the machine engines (pure-Python reference and C), memory controller, domains, HTM."""
