"""chronics layer: scenarios from a synthetic generator or grid2op-format folders."""
