"""Built-in generators plugins of dpbench, one module each."""
