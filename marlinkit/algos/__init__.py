"""Learning algorithms, one per file (CleanRL style), and the exact joint planner MARLIN's tests use."""
