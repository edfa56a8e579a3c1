"""The certified best-subset oracle (layer 4): outer approximation, threshold enumeration.

Backends (``highs``, ``gurobi``, ``pyomo``, ``enumerate``) are plugins; the formulation,
bounds, screening, branch and bound and certification live here, once for every backend.
"""
