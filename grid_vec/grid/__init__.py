"""grid layer: a pandapower net compiled into arrays, and power-flow backends."""
