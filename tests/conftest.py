# --- hypothesis profiles (nsopt.testing.register_hypothesis_profiles) ----------------------
# "ci" (derandomized, no database: the default) or "explore" (500 random examples), chosen by
# the environment variable NSOPT_HYPOTHESIS_PROFILE, as scipy/conftest.py does.
import os

from hypothesis import settings

from nsopt.testing import register_hypothesis_profiles

register_hypothesis_profiles()
settings.load_profile(os.environ.get("NSOPT_HYPOTHESIS_PROFILE", "ci"))
# --- end of hypothesis profiles ---------------------------------------------------------------
