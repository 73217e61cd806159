"""Speed benchmarks behind ``python -m marlinkit bench <target>`` that call no experiment; each target module has
``command(args) -> dict``, and :mod:`.measure` holds the update timing and GEMM measurements ``bench maddpg`` uses.
The benchmarks built on an experiment's configuration are in :mod:`marlinkit.commands`."""
