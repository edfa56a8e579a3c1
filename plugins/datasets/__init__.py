"""Built-in datasets plugins of dpbench, one module each."""
