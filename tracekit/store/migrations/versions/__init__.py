"""Sequential store revisions: 0001_initial, 0002_..."""
