"""Register maps of cooling controller families (data files: *.toml), shipped as package data."""
