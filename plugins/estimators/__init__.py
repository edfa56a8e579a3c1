"""Built-in estimators (plugin kind ``estimator``): private estimation after selection."""
