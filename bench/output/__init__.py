"""What a person reads: the terminal table, figures, the HTML report, timelines."""
