"""Analyses read from a result (layer 5): reports, curves and operating points, plots, confusion, TIDE,
calibration, LRP, bootstrap intervals, slices and paired comparison."""
