"""Shared test settings."""

import marlinkit  # noqa: F401  (first: its numerics pins must be set before NumPy's OpenBLAS and torch load)
import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Our networks are tiny: a second torch thread only adds contention on 2-core machines (~10x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
