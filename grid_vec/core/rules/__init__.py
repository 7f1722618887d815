"""The rule systems of the game, one module each, written once over the env axis: topology
actions (``actions``), redispatch (``dispatch``), storage (``storage``), maintenance and
hazards (``outages``), the opponent (``opponent``) and the env's own steps
(``heuristics``)."""
