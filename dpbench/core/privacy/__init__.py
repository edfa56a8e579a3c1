"""Privacy layer (2): sensitivities, the log-space exponential mechanism, the canonical Lipschitz top-k."""
