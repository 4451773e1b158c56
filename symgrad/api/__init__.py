"""Public API layer: transformations, the compiled callable and the trace object."""
