"""The real data files shipped with dpbench (installed as the package ``dpbench_data``).

Each data set is a compressed NumPy archive ``<name>.npz`` (arrays ``X``, optionally ``y``,
and ``feature_names``; no pickled objects) next to ``<name>.toml`` with its provenance:
source package and version, original citation, licence, description, shape and the sha256
of the shipped ``.npz``. They are registered as dpbench data sets by the built-in plugin
``dpbench_plugins.datasets``; ``_extract.py`` is the one-off script that produced them.
"""
