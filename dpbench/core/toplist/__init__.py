"""The swap levels of the best support and the exact top-R list: the shared preparation of ``topr`` and ``mistakes``.

* :mod:`dpbench.core.toplist.levels` -- the optimum S1, the single swaps in closed form, the
  minimum of each level t = |S \\ S1| and the closed-form enumeration of a small level;
* :mod:`dpbench.core.toplist.toplist` -- the top-R list, a k-way merge over the levels;
* :mod:`dpbench.core.toplist.roots` -- its seeded bar and the per-root threshold enumeration of a level;
* :mod:`dpbench.core.toplist.listings` -- the large levels listed below the bar: the list's sources
  and the first boxes of ``mistakes``.

The names a selector uses are re-exported here (and through :mod:`dpbench.api` as
``dpbench.api.toplist``).
"""

from dpbench.core.toplist.levels import (LEVEL_ENUM_LIMIT, SWAP_LEVEL_NODE_LIMIT, UNCERTIFIED_CALL, level_lower_bounds,
                                         level_minima, level_minima_advice, level_optimum, level_size, lex_order,
                                         level_optimum_within, limit_advice, max_level, optimum,
                                         single_swap_scores)
from dpbench.core.toplist.listings import (LevelBoxes, LevelListings, default_list_length, list_large_levels,
                                          listed_level_boxes)
from dpbench.core.toplist.toplist import TopList, top_list

__all__ = [
    "LEVEL_ENUM_LIMIT", "SWAP_LEVEL_NODE_LIMIT", "UNCERTIFIED_CALL", "LevelBoxes", "LevelListings", "TopList", "default_list_length",
    "level_lower_bounds", "level_minima", "list_large_levels", "listed_level_boxes",
    "level_minima_advice", "level_optimum", "level_optimum_within", "level_size", "lex_order", "limit_advice", "max_level", "optimum", "single_swap_scores",
    "top_list",
]
