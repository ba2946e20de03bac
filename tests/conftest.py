# --- hypothesis profiles (nsopt.testing.register_hypothesis_profiles) ----------------------
# "ci" (derandomized, no database: the default) or "explore" (500 random examples), chosen by
# the environment variable NSOPT_HYPOTHESIS_PROFILE, as scipy/conftest.py does.
import os

# Tests check results, not speed: one thread per process keeps numba's and BLAS's thread pools
# from fighting over the cores (pytest-xdist runs one process per core). Must precede the
# first import of numba / numpy's BLAS to take effect.
for _var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from nsopt.testing import register_hypothesis_profiles  # noqa: E402

register_hypothesis_profiles()
settings.load_profile(os.environ.get("NSOPT_HYPOTHESIS_PROFILE", "ci"))
# --- end of hypothesis profiles ---------------------------------------------------------------


@pytest.fixture(scope="session")
def a9a():
    """a9a from the shared data folder as ``(X csr, y)``; skips when the folder is absent."""
    import nsopt

    if nsopt.io.find_data_dir() is None:
        pytest.skip("no data directory (../shared/data or NSOPT_DATA)")
    X, y = nsopt.io.load_dataset("a9a")[:2]
    return X.tocsr(), y
