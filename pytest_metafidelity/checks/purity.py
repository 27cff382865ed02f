"""`purity`: converting has no side effects.

Compares two snapshots, taken just before and just after the conversion
(:func:`~pytest_metafidelity.faithful.check_faithful` takes them and puts
them in ``Conversion.before`` / ``Conversion.after``; other checks' own
probing afterwards does not count):

* every involved real tensor (bases, leaves' grads and subclass inner
  tensors included) is unchanged: shape, strides, offset, dtype, layout,
  device, requires_grad, is_leaf, the version counter, the ``.grad`` object
  and its version, the ``grad_fn`` object, conj/neg bits, the storage object
  and its size, and its bytes (storages up to 1 MiB); for a C++ functional
  tensor, the tensor it wraps (``torch._from_functional_tensor``: the same
  object);
* torch's global state is as it was: grad mode, inference mode, forward-AD
  mode, the dispatch key TLS (included and excluded local sets), the
  functorch interpreter stack, the torch-dispatch and torch-function mode
  stacks, functionalization's reapply-views flag, the default dtype and
  device, and ``fake_tensor_propagate_real_tensors``.

Each query is feature-detected; one torch lacks is left out of both
snapshots.  Without a ``before`` snapshot (a hand-built ``Conversion``) the
check has nothing to compare and reports nothing.
"""

from __future__ import annotations

from ..snapshots import capture, compare
from . import Conversion, Mismatch, check


@check("purity", "conversion leaves the real tensors and torch's global state unchanged")
def purity_check(conv: Conversion) -> list[Mismatch]:
    if conv.inner or conv.before is None:
        return []
    after = conv.after if conv.after is not None else capture(conv.names, conv.real)
    return compare(conv.before, after)
