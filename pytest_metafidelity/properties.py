"""Every property of a tensor that can differ between real and fake, found by
introspecting the installed torch, and for each how the checks treat it.

The properties (:func:`properties`), in five groups:

* ``MetaTensorDesc`` and ``MetaStorageDesc``: every field of the dataclasses
  torch's converter describes a real tensor and its storage with
  (``torch._subclasses.meta_utils``; ``dataclasses.fields``);
* ``Tensor`` and ``UntypedStorage``: the predicates and flags they expose
  (the names of ``dir()`` starting ``is_``, ``_is_``, ``has_``, ``_has_``,
  ``requires_`` or ``retains_``, and a storage's ``resizable``);
* ``DispatchKey``: every key a tensor's dispatch key set can hold
  (``torch._C._dispatch_keyset_full()``), which together name every special
  state a tensor can carry.

Each has a rule: :class:`Compared` names the check and the attribute its
mismatches are reported under; :class:`Explained` says why it is not (or
need not be) compared.  A property without a rule is *unexplained*: the
project's tests fail on one with the pinned torch, and a newer torch adding
a field, flag or key shows here first.

``python -m pytest_metafidelity.properties`` prints the table (markdown) and
its totals; ``benchmarks/property_coverage.py`` adds what the strategies
draw of each.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Union


@dataclasses.dataclass(frozen=True)
class Compared:
    """Compared by ``check``; a difference is reported as ``attribute``."""

    check: str
    attribute: str
    at: str = ""  # where it is compared, when not on the tensor itself

    def describe(self) -> str:
        where = f" at `{self.at}`" if self.at else ""
        return f"compared: `{self.check}` check, `{self.attribute}`{where}"


@dataclasses.dataclass(frozen=True)
class Explained:
    """Not compared, and why."""

    why: str

    def describe(self) -> str:
        return f"explained: {self.why}"


Rule = Union[Compared, Explained]

GROUPS = ("MetaTensorDesc", "MetaStorageDesc", "Tensor", "UntypedStorage", "DispatchKey",
          "Functionalization")


@dataclasses.dataclass(frozen=True)
class Property:
    group: str  # one of GROUPS
    name: str  # the field, attribute or key name, as introspected
    written: str  # how a user writes it: t.is_conj(), desc.is_conj, DispatchKey.ZeroTensor
    rule: Rule | None  # None: unexplained

    @property
    def compared(self) -> bool:
        return isinstance(self.rule, Compared)


# -- the rules ---------------------------------------------------------------------------

# Reasons shared by several properties.
_NOT_STATE = "a method taking another tensor, not a property of the tensor"
_DATA = "reads the tensor's values (data, not metadata); fakes have none"
_ALLOCATOR = ("the host allocator's state (pinned or shared memory): a fake allocates no "
              "memory; reading it has crashed the process on some strided tensors (read "
              "here only where the storage holds what the tensor reaches)")
_OF_DEVICE = "a function of the device, which the `oracle` check compares (`device`)"
_OF_DTYPE = "a function of the dtype, which `metadata` and `oracle` compare (`dtype`)"
_FUNCTORCH_STATE = ("the functorch interpreter stack at conversion time: global state, not "
                    "the tensor's (the `purity` check requires it unchanged)")


def _c(check: str, attribute: str) -> Compared:
    return Compared(check, attribute)


META_TENSOR_DESC_RULES: dict[str, Rule] = {
    "id": Explained("the describer's numbering of the tensors it saw; tensor identity is "
                    "compared as the `aliasing` check's object partition"),
    "ndim": _c("oracle", "shape"),
    "dtype": _c("metadata", "dtype"),
    "device": _c("oracle", "device"),
    "size": _c("metadata", "shape"),
    "dynamo_dynamic_indices": Explained(
        "an instruction to the converter (torch._dynamo.mark_dynamic), not tensor state; the "
        "symbolic sizes it asks for are compared through their hints (`oracle`, `shape`)"),
    "dynamo_hint_overrides": Explained(
        "an instruction to the converter (torch._dynamo hint overrides), not tensor state"),
    "layout": _c("oracle", "layout"),
    "is_inference": _c("metadata", "is_inference()"),
    "is_leaf": _c("metadata", "is_leaf"),
    "requires_grad": _c("metadata", "requires_grad"),
    "is_sparse": _c("metadata", "is_sparse"),
    "is_mkldnn": _c("oracle", "MkldnnCPU in torch._C._dispatch_keys(t)"),
    "is_functorch_wrapped": _c("wrappers", "is_functorch_wrapped_tensor"),
    "is_batchedtensor": _c("wrappers", "is_batchedtensor"),
    "is_legacy_batchedtensor": Explained(
        "the legacy vmap's BatchedTensor (torch._vmap_internals, key Batched): no public API "
        "makes one any more, so none is drawn"),
    "is_gradtrackingtensor": _c("wrappers", "is_gradtrackingtensor"),
    "is_view": _c("metadata", "_is_view()"),
    "is_nested": _c("oracle", "NestedTensor<backend> in torch._C._dispatch_keys(t)"),
    "nested_int": Explained(
        "the nested int naming a jagged tensor's ragged size is allocated per fake mode: it "
        "differs by design; the offsets it stands for are compared as inner tensors "
        "(`wrappers`)"),
    "is_traceable_wrapper_subclass": _c("wrappers", "traceable wrapper subclass"),
    "is_functional": _c("wrappers", "torch._is_functional_tensor()"),
    "is_conj": _c("metadata", "is_conj()"),
    "is_neg": _c("metadata", "is_neg()"),
    "is_parameter": _c("oracle", "isinstance(nn.Parameter)"),
    "stride": _c("metadata", "stride()"),
    "storage_offset": _c("metadata", "storage_offset()"),
    "storage": _c("aliasing", "storage identity"),
    "sparse_dim": _c("sparse", "sparse_dim()"),
    "dense_dim": _c("sparse", "dense_dim()"),
    "is_coalesced": _c("sparse", "is_coalesced()"),
    "crow_indices": _c("sparse", "index dtype"),
    "col_indices": _c("sparse", "index dtype"),
    "ccol_indices": _c("sparse", "index dtype"),
    "row_indices": _c("sparse", "index dtype"),
    "values": _c("sparse", "_nnz()"),
    # (a functorch wrapper's unwrapped tensor, or a C++ functional tensor's value)
    "unwrapped": Compared("wrappers", "every inner check's attributes", at="….unwrapped"),
    "bdim": _c("wrappers", "batch dim"),
    "base": _c("aliasing", "_base identity"),
    "attrs": _c("wrappers", "__tensor_flatten__ attrs"),
    "opaque_attrs": _c("wrappers", "__tensor_flatten__ context"),
    "creation_meta": _c("autograd", "creation_meta"),
    "grad": _c("metadata", "grad is not None"),
    "ctx": _c("wrappers", "__tensor_flatten__ context"),
    "type": _c("wrappers", "subclass type"),
    "fake_mode": Explained(
        "the mode of an input that is already fake (re-fakeification); a real tensor has "
        "none, and the converter's mode is its own"),
    "view_func": Explained(
        "a function replaying the view, not state; what it builds (view geometry, `_base`, "
        "creation_meta) is compared by `metadata`, `aliasing` and `autograd`, and the "
        "`behaviour` check runs views on both sides"),
    "level": _c("wrappers", "functorch level"),
    "current_level": Explained(_FUNCTORCH_STATE),
    "functorch_stack": Explained(_FUNCTORCH_STATE),
    "autograd_meta_from": _c("autograd", "backward() through a converted non-leaf"),
    "data": _c("oracle", "values"),
}

META_STORAGE_DESC_RULES: dict[str, Rule] = {
    "id": _c("aliasing", "storage identity"),
    "size": _c("storage", "untyped_storage().nbytes()"),
    "data": _c("oracle", "values"),
}

TENSOR_RULES: dict[str, Rule] = {
    "_has_symbolic_sizes_strides": Explained(
        "whether the sizes hold SymInts: a jagged tensor's nested int, and by design a fake's "
        "symbolic sizes under a ShapeEnv; the sizes are compared (through their hints: "
        "`oracle`, `shape`)"),
    "_is_all_true": Explained(_DATA),
    "_is_any_true": Explained(_DATA),
    "_is_view": _c("metadata", "_is_view()"),
    "_is_zerotensor": _c("oracle", "ZeroTensor in torch._C._dispatch_keys(t)"),
    "is_coalesced": _c("sparse", "is_coalesced()"),
    "is_complex": Explained(_OF_DTYPE),
    "is_conj": _c("metadata", "is_conj()"),
    "is_contiguous": _c("oracle", "is_contiguous(memory_format=torch.contiguous_format)"),
    "is_cpu": Explained(_OF_DEVICE),
    "is_cuda": Explained(_OF_DEVICE),
    "is_distributed": Explained("a leftover of THD: always False in ATen"),
    "is_floating_point": Explained(_OF_DTYPE),
    "is_inference": _c("metadata", "is_inference()"),
    "is_ipu": Explained(_OF_DEVICE),
    "is_leaf": _c("metadata", "is_leaf"),
    "is_maia": Explained(_OF_DEVICE),
    "is_meta": Explained(_OF_DEVICE),
    "is_mkldnn": _c("oracle", "MkldnnCPU in torch._C._dispatch_keys(t)"),
    "is_mps": Explained(_OF_DEVICE),
    "is_mtia": Explained(_OF_DEVICE),
    "is_neg": _c("metadata", "is_neg()"),
    "is_nested": _c("oracle", "NestedTensor<backend> in torch._C._dispatch_keys(t)"),
    "is_nonzero": Explained(_DATA),
    "is_pinned": Explained(_ALLOCATOR),
    "is_quantized": _c("oracle", "Quantized<backend> in torch._C._dispatch_keys(t)"),
    "is_same_size": Explained(_NOT_STATE),
    "is_set_to": Explained(_NOT_STATE + "; storage sharing is compared by `aliasing`"),
    "is_shared": Explained(_ALLOCATOR),
    "is_signed": Explained(_OF_DTYPE),
    "is_sparse": _c("metadata", "is_sparse"),
    "is_sparse_csr": _c("oracle", "SparseCsr<backend> in torch._C._dispatch_keys(t)"),
    "is_vulkan": Explained(_OF_DEVICE),
    "is_xla": Explained(_OF_DEVICE),
    "is_xpu": Explained(_OF_DEVICE),
    "requires_grad": _c("metadata", "requires_grad"),
    "requires_grad_": Explained("a method setting the flag, not a property; the flag is "
                                "compared (`metadata`, `requires_grad`)"),
    "retains_grad": _c("autograd", "retains_grad"),
}

UNTYPED_STORAGE_RULES: dict[str, Rule] = {
    "is_cuda": Explained(_OF_DEVICE),
    "is_hpu": Explained(_OF_DEVICE),
    "is_pinned": Explained(_ALLOCATOR),
    "is_shared": Explained(_ALLOCATOR),
    "resizable": _c("storage", "untyped_storage().resizable()"),
    "is_sparse": Explained("a typed-storage leftover: an untyped storage is never sparse "
                           "(a sparse tensor has no storage)"),
    "is_sparse_csr": Explained("a typed-storage leftover: an untyped storage is never sparse "
                               "(a sparse tensor has no storage)"),
}

# Why torch._functionalize_<name> is not read, for those that act on a
# tensor rather than read it, or read what is compared elsewhere (the
# wrappers check reads the others: strategies.tensor_facts.FUNCTIONALIZATION_QUERIES).
_ACTS = "acts on the tensor, reads nothing: "
FUNCTIONALIZATION_NOT_READ: dict[str, str] = {
    "commit_update": _ACTS + "commits a view's pending update to its base",
    "sync": _ACTS + "applies the base's pending updates to the tensor (the converter does, "
            "and `purity` checks what that changes)",
    "replace": _ACTS + "replaces the tensor's value",
    "unsafe_set": _ACTS + "sets the tensor's value in place of another's",
    "mark_mutation_hidden_from_autograd": _ACTS + "marks its mutations hidden from autograd "
                                          "(read back through are_all_mutations_hidden_from_"
                                          "autograd, compared)",
    "mark_storage_changed": _ACTS + "marks its storage changed (read back through "
                            "was_storage_changed, compared)",
    "get_storage_size": "the size of the wrapped value's storage when it was wrapped, before "
                        "and after resizes: that storage's `untyped_storage().nbytes()`, which "
                        "`storage` compares at `….unwrapped` (sized to the tensor by the "
                        "converters: storage-sized-to-tensors), until a mutation replaces the "
                        "value (the mutation record: has_data_mutation, ..., compared)",
    "enable_reapply_views": "sets global state (whether views are reapplied as views), not the "
                            "tensor's; `purity` requires global state unchanged",
}


def functionalization_rule(name: str) -> Rule | None:
    from .strategies.tensor_facts import FUNCTIONALIZATION_QUERIES, functionalization_attribute

    if name in FUNCTIONALIZATION_QUERIES:
        return _c("wrappers", functionalization_attribute(name))
    if name in FUNCTIONALIZATION_NOT_READ:
        return Explained(FUNCTIONALIZATION_NOT_READ[name])
    return None


# Dispatch keys: per-backend keys by functionality (see checks._dispatch_keys),
# the others by name.
_KEY_RULES: dict[str, Rule] = {
    "Conjugate": _c("metadata", "is_conj()"),
    "Negative": _c("metadata", "is_neg()"),
    "Functionalize": _c("wrappers", "torch._is_functional_tensor()"),
    "FuncTorchBatched": _c("wrappers", "is_batchedtensor"),
    "BatchedNestedTensor": _c("wrappers", "is_batchedtensor"),
    "FuncTorchGradWrapper": _c("wrappers", "is_gradtrackingtensor"),
    "Batched": Explained("the legacy vmap's BatchedTensor: no public API makes one any more"),
    "Python": Explained("a FakeTensor is a Python tensor subclass by design; subclass types "
                        "are compared by `wrappers` (`subclass type`)"),
    "PythonTLSSnapshot": Explained("comes with the Python key (above)"),
    "Fake": Explained("the key of the C++ fake tensor mode (TensorImpl::is_fake): no real "
                      "tensor carries it, and the converters checked here (Python's "
                      "FakeTensorMode, MetaConverter) do not set it"),
    "CustomRNGKeyId": Explained("a custom RNG backend's generator state, device-only"),
    "FPGA": Explained("device-only (FPGA)"),
    "Vulkan": Explained("device-only (Vulkan)"),
    "Metal": Explained("device-only (Metal)"),
}
# Keys a mode, a TLS include set or the dispatcher adds to a call; no
# tensor's own key set holds them.
_MODE_KEYS = ("BackendSelect", "FuncTorchDynamicLayerBackMode", "FuncTorchDynamicLayerFrontMode",
              "FuncTorchVmapMode", "VmapMode", "Tracer", "DeferredInit", "PreDispatch",
              "PythonDispatcher", "TESTING_ONLY_GenericWrapper", "TESTING_ONLY_GenericMode")
_COMPARED_BACKENDS = ("CPU", "Meta")  # the devices drawn here (meta: the meta converter's)


def dispatch_key_rule(key: str) -> Rule | None:
    from .checks import _dispatch_keys as keys

    if key in _KEY_RULES:
        return _KEY_RULES[key]
    if key in _MODE_KEYS:
        return Explained("a mode's or the dispatcher's key, never in a tensor's own key set")
    if key in keys.COMPARED_KEYS:
        return _c("oracle", keys.attribute(key))
    functionality, backend = keys.split_key(key)
    if backend is None:
        return None
    if functionality == "Autocast":
        return Explained("autocast keys come with the device (a meta tensor has none); "
                         "`oracle` compares `device`")
    if functionality not in keys.COMPARED_FUNCTIONALITIES:
        return None
    if backend not in _COMPARED_BACKENDS:
        return Explained(f"device-only ({backend}): no such tensor on a CPU build; where one "
                         f"exists `oracle` compares the functionality "
                         f"(`{keys.attribute(functionality)}`) and `device`")
    return _c("oracle", keys.attribute(functionality))


# -- introspection -------------------------------------------------------------------------

_FLAG = re.compile(r"_?(is|has|requires|retains)_|resizable$")


def flag_names(cls: type) -> list[str]:
    """The predicates and flags of ``cls``: names of ``dir(cls)`` starting
    is_, _is_, has_, _has_, requires_ or retains_, and ``resizable`` (a
    storage's: whether it may grow)."""
    return [n for n in dir(cls) if _FLAG.match(n)]


def _written_on(var: str, cls: type, name: str) -> str:
    return f"{var}.{name}()" if callable(getattr(cls, name, None)) else f"{var}.{name}"


def properties() -> list[Property]:
    """Every property of the installed torch, in GROUPS order, with its rule
    (None where there is none)."""
    import torch
    from torch._subclasses import meta_utils

    from .checks._dispatch_keys import all_runtime_keys

    found: list[Property] = []
    for name in (f.name for f in dataclasses.fields(meta_utils.MetaTensorDesc)):
        found.append(Property("MetaTensorDesc", name, f"MetaTensorDesc.{name}",
                              META_TENSOR_DESC_RULES.get(name)))
    for name in (f.name for f in dataclasses.fields(meta_utils.MetaStorageDesc)):
        found.append(Property("MetaStorageDesc", name, f"MetaStorageDesc.{name}",
                              META_STORAGE_DESC_RULES.get(name)))
    for name in flag_names(torch.Tensor):
        found.append(Property("Tensor", name, _written_on("t", torch.Tensor, name),
                              TENSOR_RULES.get(name)))
    for name in flag_names(torch.UntypedStorage):
        found.append(Property("UntypedStorage", name,
                              _written_on("t.untyped_storage()", torch.UntypedStorage, name),
                              UNTYPED_STORAGE_RULES.get(name)))
    for key in all_runtime_keys():
        found.append(Property("DispatchKey", key, f"DispatchKey.{key}", dispatch_key_rule(key)))
    for name in functionalization_names():
        found.append(Property("Functionalization", name, f"torch._functionalize_{name}(t)",
                              functionalization_rule(name)))
    return found


def functionalization_names() -> list[str]:
    """The names of torch's ``torch._functionalize_<name>`` functions, each
    a reading of a functional tensor's state or an action on it."""
    import torch

    prefix = "_functionalize_"
    return [n.removeprefix(prefix) for n in dir(torch)
            if n.startswith(prefix) and callable(getattr(torch, n))]


def unexplained(props: Iterable[Property] | None = None) -> list[Property]:
    return [p for p in (properties() if props is None else props) if p.rule is None]


# -- the table ---------------------------------------------------------------------------


def totals(props: list[Property]) -> dict[str, dict[str, int]]:
    """Per group and in all: properties, compared, explained, unexplained."""
    out: dict[str, dict[str, int]] = {}
    for group in (*GROUPS, "all"):
        rows = [p for p in props if group in ("all", p.group)]
        out[group] = {
            "properties": len(rows),
            "compared": sum(isinstance(p.rule, Compared) for p in rows),
            "explained": sum(isinstance(p.rule, Explained) for p in rows),
            "unexplained": sum(p.rule is None for p in rows),
        }
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(props: list[Property], drawn: dict[str, str] | None = None) -> str:
    """The table, one row per property; ``drawn`` adds a column of what the
    strategies drew of each (keyed by ``written``)."""
    head = ["property", *(["values drawn"] if drawn is not None else []), "rule"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in props:
        rule = p.rule.describe() if p.rule is not None else "**unexplained** (no rule)"
        cells = [f"`{p.written}`", *([drawn.get(p.written, "never read")]
                                     if drawn is not None else []), rule]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def markdown_totals(props: list[Property]) -> str:
    lines = ["| group | properties | compared | explained | unexplained |",
             "|---|---|---|---|---|"]
    for group, n in totals(props).items():
        lines.append(f"| {group} | {n['properties']} | {n['compared']} | {n['explained']} "
                     f"| {n['unexplained']} |")
    return "\n".join(lines)


def main() -> None:
    import torch

    props = properties()
    print(f"Properties of torch {torch.__version__} (`python -m pytest_metafidelity.properties`)")
    print()
    print(markdown_totals(props))
    print()
    print(markdown_table(props))


if __name__ == "__main__":
    main()
