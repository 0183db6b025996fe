"""The Simulation lab page: fake classifiers with a known calibration map (``render_lab``)."""
