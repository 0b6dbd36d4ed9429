"""The simulated warehouse: scenarios (validated TOML) and the world that cabins sense and drive."""
