"""The built-in fidelity suite, collected by ``pytest --metafidelity``.

Parametrized by the plugin (``pytest_generate_tests``) over every selected
tensor kind x converter, with ids like ``test_fidelity[sparse_bsr-fake-dynamic]``.
"""

from pytest_metafidelity.suite.runner import fidelity_test

test_fidelity = fidelity_test()
