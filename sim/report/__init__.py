"""Reports: a recorded run, or a campaign's results, as one self-contained HTML page."""
