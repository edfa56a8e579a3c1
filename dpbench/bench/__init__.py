"""The runner (layer 6): run configuration, planning, the one selector-run path, parallel backends."""
