"""What the rows mean: comparisons, verdicts, series, change points, the nightly check, machines side by side."""
