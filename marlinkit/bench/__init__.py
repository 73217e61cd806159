"""Speed benchmarks behind ``python -m marlinkit bench <target>``; each module has ``command(args) -> dict``."""
