"""Exceptions that dpbench shows to a user as one line, without a traceback."""


class DPBenchError(Exception):
    """A user-facing error.

    The message names the problem *and* what would fix it. The command-line interface
    prints it on one line and exits with status 2.
    """


class UserInputError(DPBenchError, ValueError):
    """Invalid data, parameters or options (NaN in X, s >= p, epsilon <= 0, ...)."""


class UnknownNameError(UserInputError, KeyError):
    """An unknown method, generator, solver or data set name.

    Parameters
    ----------
    kind : str
        What was looked up ("method", "generator", ...).
    name : str
        The name that was not found.
    known : iterable of str
        The names that are registered; listed in the message with the closest match.
    """

    def __init__(self, kind, name, known):
        import difflib

        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        # "loss" + "s" read "losss" in `--loss nonsense`'s message
        plural = kind + ("es" if kind.endswith("s") else "s")
        super().__init__(
            f"unknown {kind} {name!r}; known {plural}: {', '.join(known) or '(none)'}.{hint}"
        )
        self.kind, self.name, self.known = kind, name, known

    def __str__(self):  # KeyError would otherwise quote the message
        return self.args[0]


class SolverLimitError(DPBenchError):
    """A solver backend refused the model (licence size limit, missing solver)."""
