"""dpbench's built-in plugins, one module each, registered through the ``dpbench`` entry-point group."""
