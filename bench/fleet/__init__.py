"""A fleet of racks on Ray: `rackclock fleet run` and `rackclock fleet report`."""
