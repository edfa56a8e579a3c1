"""Built-in solvers plugins of dpbench, one module each."""
