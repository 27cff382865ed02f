"""Settings for the project's own tests (not for users of the plugin).

Here, not at the repository's root: a root conftest.py would also be loaded
by ``pytest --metafidelity`` run from a checkout (it collects the suite
module under the root), and its profile would replace the suite's database
profile there.

Property tests are deterministic under CI: the ``ci`` profile derandomizes
Hypothesis rather than weakening any assertion.  Pick another profile with
``HYPOTHESIS_PROFILE=dev``.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
