"""Helpers shared by the test files (importable because pytest's ``pythonpath`` includes ``tests/``).

``cli``: running ``dpbench`` in process and reading its one-line errors and stored rows;
``problems``: the small data sets several subjects test on; ``flip_pair`` and
``audit_controls``: the neighbouring pair and the deliberately broken selectors of the privacy
audits. Fixtures shared by many files are in ``tests/conftest.py``.
"""
