"""GPUs asked for but missing are skipped with their reason, and collecting
the suite never initialises CUDA (HypoFuzz forks its workers after it)."""

from __future__ import annotations

import json
import textwrap

import pytest
import torch

QUICK = ["--metafidelity", "--metafidelity-kinds=dense", "--metafidelity-converters=fake",
         "--metafidelity-examples=2", "-p", "no:cacheprovider"]
# A GPU index this machine does not have (cuda:0 where it has none).
MISSING = f"cuda:{torch.cuda.device_count()}"


def test_a_missing_gpu_is_skipped_with_its_reason_and_the_rest_runs(
        pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(*QUICK, f"--metafidelity-devices=cpu,{MISSING}",
                                           "--metafidelity-report=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"metafidelity: {MISSING} skipped: *"])
    doc = json.loads((pytester.path / "out.json").read_text())
    assert doc["options"]["devices"] == ["cpu"]
    (reason,) = doc["environment"]["skipped_devices"].values()
    assert list(doc["environment"]["skipped_devices"]) == [MISSING]
    assert reason.startswith(f"{MISSING} skipped: ") and (
        "CPU-only build" in reason or "GPU" in reason), reason
    assert doc["items"][0]["counts"]["examples"] == 2


def test_only_missing_gpus_skip_the_suite_and_say_why(pytester: pytest.Pytester) -> None:
    asked = "cuda" if MISSING == "cuda:0" else MISSING
    result = pytester.runpytest_subprocess(*QUICK, f"--metafidelity-devices={asked}", "-rs",
                                           "--metafidelity-report=out.json")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED*{MISSING} skipped: *no device left to run the suite on"])
    doc = json.loads((pytester.path / "out.json").read_text())
    assert list(doc["environment"]["skipped_devices"]) == [MISSING] and doc["items"] == []


# Loaded before the plugin resolves its options: a CUDA build with one GPU
# that NVML reports, where every call that initialises CUDA (cuInit through
# cudaGetDeviceCount, torch's lazy init) is recorded.
CUDA_WATCH = textwrap.dedent(
    """
    import torch, torch.cuda

    CALLS = []

    def _watch(name):
        def called(*args, **kwargs):
            CALLS.append(name)
            return 0
        return called

    torch.cuda._is_compiled = lambda: True
    torch.cuda._device_count_nvml = lambda: 1
    torch._C._cuda_getDeviceCount = _watch("cudaGetDeviceCount (cuInit)")
    torch.cuda._lazy_init = _watch("torch.cuda._lazy_init")

    def pytest_sessionfinish(session):
        print("CUDA initialised by:", CALLS)
    """
)


def test_collecting_the_suite_never_initialises_cuda(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CUDA_WATCH)
    result = pytester.runpytest_subprocess("--metafidelity", "--collect-only", "-q",
                                           "-p", "no:cacheprovider", "-s",
                                           "--metafidelity-kinds=dense,view")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*test_fidelity[[]dense-fake[]]*",
                                 "CUDA initialised by: []"])
