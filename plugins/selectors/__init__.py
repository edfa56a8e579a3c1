"""Built-in selectors plugins of dpbench, one module each."""
