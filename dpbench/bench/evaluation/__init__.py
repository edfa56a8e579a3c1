"""Evaluation layer (5): support metrics and reference supports. Selectors never see it."""
