"""Recipes written from tensors' metadata, for tensors our strategies did not build.

:func:`describe_as_recipe` writes Python that rebuilds what the checks
compare: storages (shared where the tensors share them, with their bytes when
small enough to print), sizes, strides and offsets; views as ``as_strided`` of
their base, made under ``no_grad`` or ``inference_mode`` where the view was;
conj and neg bits; ``requires_grad``, non-leaves (an in-place op against a
tensor requiring grad gives a tensor a history without moving its storage),
``retain_grad()``, ``grad_dtype`` and ``.grad`` of any layout; version counters
shared outside a view tree (``detach()`` of the tensor sharing it, then ``set_``);
``nn.Parameter`` and ``nn.Buffer``; sparse COO and compressed layouts through
their index and value tensors; MKLDNN tensors through ``to_mkldnn()`` of
their dense values; quantized tensors through ``_make_per_tensor_quantized_tensor``
/ ``_make_per_channel_quantized_tensor`` of ``int_repr()`` and their
quantization parameters; traceable wrapper subclasses through
``__tensor_flatten__``/``__tensor_unflatten__``, imported from their module;
jagged nested tensors through ``nested_tensor_from_jagged``; C++ functional
tensors through ``torch._to_functional_tensor`` of the value they wrap.

What cannot be rebuilt is listed in :attr:`DescribedRecipe.missing`, one
line naming the tensor and what it lacks; :mod:`pytest_metafidelity.reproducer`
shows that list
instead of code that would pass.  What is rebuilt without something metadata
does not show (the op that made a subclass view, how a functional tensor was
mutated, ...) is listed in :attr:`DescribedRecipe.approximations`; a recipe
with neither list gives the same outcome (tests/test_described.py).

:func:`recipe_for` is the recipe of any tensors: the one our strategies
attached to them, else one written here.
"""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from typing import TYPE_CHECKING, Any, Sequence

from .recipe import Recipe, recipe_of
from .tensor_facts import (COMPRESSED_LAYOUTS, bytes_reached, creation_meta, layout_name,
                           is_zero_tensor, leaf_view_reached, opaque_attributes,
                           storage_is_shared, storage_too_small, version_partition)
from .torch_errors import release_frames

if TYPE_CHECKING:
    import torch

# Storages up to this size are rebuilt with their bytes (values matter to the
# checks of carried real tensors); larger ones, and meta storages, are empty.
MAX_STORAGE_BYTES_KEPT = 4096

DESCRIBED = "described"  # the recipe's kind


@dataclasses.dataclass(frozen=True)
class DescribedRecipe(Recipe):
    """A recipe written from metadata.  ``missing``: tensors it cannot build
    (None in its lines); ``approximations``: what it builds without (a
    likely cause when the rebuilt tensors do not give the same outcome)."""

    missing: tuple[str, ...] = ()
    approximations: tuple[str, ...] = ()


def describe_as_recipe(tensors: Sequence["torch.Tensor"]) -> DescribedRecipe:
    """A recipe rebuilding ``tensors`` from their metadata and, for storages
    of at most MAX_STORAGE_BYTES_KEPT bytes, their contents."""
    d = _Describer()
    names = [d.tensor(t, f"tensor {i}") for i, t in enumerate(tensors)]
    d.finish()
    return DescribedRecipe(tuple(d.lines), tuple(names), tuple(sorted(d.imports)), (),
                           (DESCRIBED,), tuple(d.missing), tuple(d.approximations))


def _torch() -> Any:
    import torch

    return torch


class _Describer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.imports: set[str] = set()
        self.missing: list[str] = []
        self.approximations: list[str] = []
        self.storages: dict[int, str] = {}
        self.tensors: dict[int, str] = {}
        self.described: list[tuple[str, "torch.Tensor"]] = []
        # storages smaller than their tensors reach: name -> bytes
        self.shrunk: dict[str, int] = {}
        # id of a view tree's root -> that of the root it was detached from
        # (the two share one version counter)
        self.shared_version_counters: dict[int, int] = {}
        # ids of views built requiring grad from a base that does not
        self.grad_views: set[int] = set()
        # tensors made while describing (an MKLDNN tensor's dense values),
        # kept alive so that no later one reuses their storage's address
        self.kept: list["torch.Tensor"] = []
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter - 1}"

    def lack(self, name: str, path: str, what: str) -> None:
        """``name`` cannot be built at all (it is None in the recipe)."""
        self.missing.append(f"{path} ({name}): {what}")

    def approximate(self, name: str, path: str, what: str) -> None:
        """``name`` is built, but without ``what``."""
        self.approximations.append(f"{path} ({name}): {what}")

    def finish(self) -> None:
        """Shrink the storages set_ grew; name the version counters shared
        outside a view tree that were not built shared (another dtype or
        device, a subclass, an inference tensor)."""
        for sname, nbytes in self.shrunk.items():
            self.lines.append(f"{sname}.resize_({nbytes})  # smaller than its tensors reach, "
                              "as given")
        strided = [(n, t) for n, t in self.described
                   if type(t) in (_torch().Tensor, _torch().nn.Parameter)]
        labels = version_partition([t for _, t in strided])
        for (name, t), label in zip(strided, labels):
            if label is None:
                continue
            other, u = strided[label]
            if self._counter_group(t) != self._counter_group(u):
                self.approximations.append(
                    f"{name} shares its version counter with {other} outside a view (as after "
                    "detach()): rebuilt with its own")

    def _counter_group(self, t: "torch.Tensor") -> int:
        """Which version counter ``t`` is built with: its view tree's root's,
        joined to another's where it was detached from it."""
        key = id(_root(t))
        while self.shared_version_counters.get(key, key) != key:
            key = self.shared_version_counters[key]
        return key

    # -- one tensor --------------------------------------------------------
    def tensor(self, t: "torch.Tensor", path: str) -> str:
        """The name bound to ``t`` (described once; ``t.grad`` may be ``t``)."""
        if id(t) in self.tensors:
            return self.tensors[id(t)]
        name = self.fresh("t")
        self.tensors[id(t)] = name
        self.described.append((name, t))
        try:
            self._describe(name, t, path)
        except Exception as e:  # a tensor whose metadata cannot be read
            release_frames(e)
            self.lines.append(f"{name} = None  # not rebuilt")
            self.lack(name, path, f"a {type(t).__name__} whose metadata could not be read "
                                  f"({type(e).__name__}: {e})")
        return name

    def _describe(self, name: str, t: "torch.Tensor", path: str) -> None:
        torch = _torch()
        if t.is_nested:
            self._nested(name, t, path)
            return
        if torch._is_functional_tensor(t):
            self._functional(name, t, path)
            return
        if t.is_inference() and not t._is_view():
            self.lines.append("with torch.inference_mode():")
            at = len(self.lines)
            self._body(name, t, path)
            self.lines[at:] = ["    " + line for line in self.lines[at:]]
        else:
            self._body(name, t, path)
        if self.lines[-1].endswith("# not rebuilt"):
            return
        self._bits(name, t)
        self._autograd(name, t, path)

    def _bits(self, name: str, t: "torch.Tensor") -> None:
        """The conj and neg bits: a view has its base's already (as_strided
        keeps them; conj() and _neg_view toggle); a tensor that is not a view
        is detached from the view that set them."""
        view = t._is_view() and t._base is not None
        has = (t._base.is_conj(), t._base.is_neg()) if view else (False, False)
        toggled = False
        if t.is_conj() != has[0]:
            self.lines.append(f"{name} = {name}.conj()  # conj bit")
            toggled = True
        if t.is_neg() != has[1]:
            self.lines.append(f"{name} = torch._neg_view({name})  # neg bit")
            toggled = True
        if toggled and not view:
            self.lines.append(f"{name} = {name}.detach()  # not a view")

    def _body(self, name: str, t: "torch.Tensor", path: str) -> None:
        from torch.utils._python_dispatch import is_traceable_wrapper_subclass

        torch = _torch()
        parameter = isinstance(t, torch.nn.Parameter)
        traceable = is_traceable_wrapper_subclass(t)
        if not traceable and type(t) not in (torch.Tensor, torch.nn.Parameter):
            self.lines.append(f"{name} = None  # not rebuilt")
            self.lack(name, path, f"{type(t).__qualname__} is not a traceable wrapper subclass "
                                  "(no __tensor_flatten__): its state cannot be read")
        elif t._is_view() and t._base is not None and not parameter:
            # A view of a Parameter is a plain Tensor, as as_strided makes it.
            view_type = torch.Tensor if type(t._base) is torch.nn.Parameter else type(t._base)
            if type(t) is not view_type:
                self.lines.append(f"{name} = None  # not rebuilt")
                self.lack(name, path, f"a {type(t).__qualname__} view of a "
                                      f"{type(t._base).__qualname__}")
            elif t.is_quantized and _per_channel(t._base):
                self.lines.append(f"{name} = None  # not rebuilt")
                self.lack(name, path, f"a view of a {t._base.qscheme()} quantized tensor "
                                      "(as_strided takes only per-tensor quantized ones)")
            else:
                self._view(name, t, path)
        elif traceable:
            self._subclass(name, t, path)
        elif t.layout == torch.sparse_coo:
            self._sparse_coo(name, t, path)
        elif layout_name(t) in COMPRESSED_LAYOUTS:
            self._sparse_compressed(name, t, path)
        elif t.is_quantized:
            self._quantized(name, t, path)
        elif t.layout == torch.strided and is_zero_tensor(t):
            self._zero_tensor(name, t, path)
        elif t.layout == torch.strided:
            self._strided(name, t)
        elif getattr(t, "is_mkldnn", False):
            self._mkldnn(name, t, path)
        else:
            self.lines.append(f"{name} = None  # not rebuilt")
            self.lack(name, path, f"layout {t.layout} is not rebuilt")
        if parameter and not self.lines[-1].endswith("# not rebuilt"):
            self.lines.append(f"{name} = torch.nn.Parameter({name}, "
                              f"requires_grad={t.requires_grad})")
        elif getattr(t, "_is_buffer", False) and not self.lines[-1].endswith("# not rebuilt"):
            if hasattr(t, "persistent"):
                self.lines.append(f"{name} = torch.nn.Buffer({name}, "
                                  f"persistent={bool(t.persistent)})")
            else:  # marked by hand
                self.lines.append(f"{name}._is_buffer = True")

    def _strided(self, name: str, t: "torch.Tensor") -> None:
        storage = t.untyped_storage()
        key = storage._cdata
        if key not in self.storages:
            sname = self.fresh("s")
            self.storages[key] = sname
            self.lines.append(f"{sname} = {_storage_expr(storage)}")
        dev = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
        sharing = self._version_counter_of(t)
        if sharing is not None and _same_geometry(t, sharing[1]):
            # detach() alone: set_ would bump the counter, which forbids
            # using a view made under no_grad from the tensor sharing it.
            self.lines.append(f"{name} = {sharing[0]}.detach()  # shares its version counter")
            return
        empty = (f"{sharing[0]}.detach()" if sharing is not None  # shares its version counter
                 else f"torch.empty(0, dtype={t.dtype}{dev})")
        self.lines.append(
            f"{name} = {empty}.set_("
            f"{self.storages[key]}, {t.storage_offset()}, {tuple(t.shape)}, {tuple(t.stride())})")
        if storage_too_small(t):  # set_ needs the bytes: grown, shrunk back at the end
            sname = self.storages[key]
            needed = bytes_reached(t.shape, t.stride(), t.storage_offset(), t.element_size())
            self.shrunk.setdefault(sname, storage.nbytes())
            self.lines.insert(len(self.lines) - 1, f"{sname}.resize_(max({sname}.nbytes(), "
                                                   f"{needed}))")

    def _zero_tensor(self, name: str, t: "torch.Tensor", path: str) -> None:
        """``torch._efficientzerotensor`` of its shape (its storage holds no
        data: nothing to copy, and ``set_`` onto it would make a plain
        tensor); a leaf zero tensor is contiguous at offset 0 unless
        ``detach()`` of a view made it."""
        dev = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
        self.lines.append(f"{name} = torch._efficientzerotensor({tuple(t.shape)}, "
                          f"dtype={t.dtype}{dev})")
        if t.stride() != _contiguous_strides(t.shape) or t.storage_offset() != 0:
            self.approximate(name, path, f"a zero tensor's strides {tuple(t.stride())} and "
                                         f"offset {t.storage_offset()} (rebuilt contiguous)")

    def _version_counter_of(self, t: "torch.Tensor") -> "tuple[str, torch.Tensor] | None":
        """The name of a tensor described already (and that tensor), of
        ``t``'s dtype and device, whose version counter ``t`` shares outside
        a view tree (as ``detach()`` makes it share): ``detach()`` of it,
        then ``set_`` unless their geometry is the same, builds ``t`` with
        that counter.  None if there is none, or if ``set_`` would be needed
        while a view made under no_grad shares that counter (the bump would
        forbid its use)."""
        torch = _torch()
        if type(t) is not torch.Tensor or t.is_inference():
            return None
        candidates: list[tuple[str, "torch.Tensor"]] = []
        for other, u in self.described:
            if (u is t or type(u) not in (torch.Tensor, torch.nn.Parameter) or u.is_sparse
                    or u.dtype != t.dtype or u.device != t.device or _root(u) is _root(t)
                    or u.is_inference() or not self._built(other)):
                continue
            if version_partition([u, t])[1] == 0:
                candidates.append((other, u))
        # One with t's geometry (detach() alone), else one set_ may bump.
        found = next((c for c in candidates if _same_geometry(t, c[1])), None) or next(
            (c for c in candidates if not self._no_grad_view_sharing(c[1])), None)
        if found is not None:
            self.shared_version_counters[id(t)] = self._counter_group(found[1])
        return found

    def _no_grad_view_sharing(self, u: "torch.Tensor") -> bool:
        """Whether a view made under no_grad, described already, shares
        ``u``'s version counter."""
        group = self._counter_group(u)
        return any(v._is_view() and "NO_GRAD_MODE" in str(creation_meta(v) or "")
                   and self._counter_group(v) == group for _, v in self.described)

    def _built(self, name: str) -> bool:
        """Whether the lines so far bind ``name`` to a tensor (not while it
        is still being described, nor when it is not rebuilt)."""
        return any(line.lstrip().startswith(f"{name} = ") and not line.endswith("# not rebuilt")
                   for line in self.lines)

    def _view(self, name: str, t: "torch.Tensor", path: str) -> None:
        base = self.tensor(t._base, f"{path}._base")
        source = _reinterpreted(base, t._base, t.dtype)
        if layout_name(t._base).startswith("sparse"):
            # A dense view of a sparse tensor is of its values (as_strided of the
            # sparse tensor has no kernel); as_strided of them is a view of it too.
            source = f"{base}.values()"
        if (t.requires_grad and not t.is_leaf and not t._base.requires_grad
                and type(t) is _torch().Tensor):
            # requires_grad_() was called on a view (a leaf) of a base that
            # does not require grad, and t was made from that view: t is
            # then a non-leaf whose _base is the root.  Made from that leaf
            # view, found in t's graph, t's backward reaches it as the real
            # one does; where the graph does not name it, an alias of the
            # base ([...]) stands in for that view.
            leaf = leaf_view_reached(t)
            if leaf is not None:
                source = _reinterpreted(self.tensor(leaf, f"{path}.<leaf view>"), leaf, t.dtype)
            else:
                source = f"{source}[...].requires_grad_()"
            self.grad_views.add(id(t))
        made = f"{name} = {source}.as_strided({tuple(t.shape)}, {tuple(t.stride())}, " \
               f"{t.storage_offset()})"
        how = str(creation_meta(t) or "")
        if t.is_inference() or "INFERENCE_MODE" in how:
            self.lines += ["with torch.inference_mode():", "    " + made]
        elif "NO_GRAD_MODE" in how:
            self.lines += ["with torch.no_grad():", "    " + made]
        elif "MULTI_OUTPUT_NODE" in how:  # made by unbind/split/chunk
            self.lines.append(made + ".unsqueeze(0).unbind(0)[0]  # a multi-output view")
        elif "IN_CUSTOM_FUNCTION" in how:  # a custom autograd.Function returned it
            self.imports.add("from pytest_metafidelity.strategies.example_functions import "
                             "ViewOfInput")
            at = made.index(" = ") + 3
            self.lines.append(f"{made[:at]}ViewOfInput.apply({made[at:]})"
                              "  # a view a custom autograd.Function returned")
        else:
            self.lines.append(made)
            if how and "DEFAULT" not in how:
                self.approximate(name, path, f"the view's creation_meta {how} (rebuilt as "
                                             "DEFAULT)")
        from torch.utils._python_dispatch import is_traceable_wrapper_subclass

        if is_traceable_wrapper_subclass(t):
            self.approximate(name, path, "the view op that made it (rebuilt as as_strided; a "
                                         "converter replays a subclass view's own view "
                                         "function)")

    def _subclass(self, name: str, t: "torch.Tensor", path: str) -> None:
        cls = type(t)
        source = _importable(cls)
        attrs, ctx = t.__tensor_flatten__()
        ctx_source = _literal(ctx)
        if source is None or ctx_source is None:
            self.lines.append(f"{name} = None  # not rebuilt")
            why = (f"{cls.__qualname__} cannot be imported from {cls.__module__!r}"
                   if source is None else
                   f"its __tensor_flatten__ context {ctx!r} has no repr that evaluates to it")
            self.lack(name, path, f"a {cls.__qualname__}: {why}")
            return
        opaque = {}
        for a, value in opaque_attributes(t):
            value_source = _enum_member(value)
            if value_source is None:
                self.lines.append(f"{name} = None  # not rebuilt")
                self.lack(name, path, f"a {cls.__qualname__}: its opaque attribute {a} holds "
                                      f"{value!r}, which is no importable Enum member")
                return
            self.imports.add(value_source[0])
            opaque[a] = value_source[1]
        self.imports.add(source)
        inner = {a: opaque[a] if a in opaque else self.tensor(getattr(t, a), f"{path}.{a}")
                 for a in attrs}
        args = ", ".join(f"{a!r}: {n}" for a, n in inner.items())
        self.lines.append(f"{name} = {cls.__qualname__}.__tensor_unflatten__("
                          f"{{{args}}}, {ctx_source}, {tuple(t.shape)}, {tuple(t.stride())})")

    def _nested(self, name: str, t: "torch.Tensor", path: str) -> None:
        """A jagged nested tensor: nested_tensor_from_jagged over its values,
        offsets and lengths (a view of the values, as torch makes it), with
        its ragged dimension and cached min/max sequence lengths; then the
        autograd state the values do not give it."""
        torch = _torch()
        if t.layout != torch.jagged:
            self.lines.append(f"{name} = None  # not rebuilt")
            self.lack(name, path, f"a nested tensor of layout {t.layout} (only torch.jagged "
                                  "is rebuilt)")
            return
        parts = [self.tensor(t._values, f"{path}._values"),
                 self.tensor(t._offsets, f"{path}._offsets")]
        lengths = t._lengths
        parts.append("None" if lengths is None else self.tensor(lengths, f"{path}._lengths"))
        cache = t._metadata_cache or {}
        seqlens = [f"{k}={_seqlen(cache[k])}" for k in ("min_seqlen", "max_seqlen") if k in cache]
        self.lines.append(f"{name} = torch.nested.nested_tensor_from_jagged("
                          f"{', '.join(parts)}, jagged_dim={t._ragged_idx}"
                          f"{''.join(', ' + s for s in seqlens)})")
        if t.requires_grad and not t._values.requires_grad:
            if t.is_leaf:
                self.lines.append(f"{name}.requires_grad_()")
            else:
                self.approximate(name, path, "a history its values do not have (rebuilt as a "
                                             "leaf)")

    def _functional(self, name: str, t: "torch.Tensor", path: str) -> None:
        """A C++ functional tensor: torch._to_functional_tensor of the value
        it wraps, with its requires_grad; a view of one is as_strided of its
        functional base, in the strides of the value it wraps (functionalization
        materialises views: a view_copy of the base's value)."""
        torch = _torch()
        value = torch._from_functional_tensor(t)
        if t._is_view() and t._base is not None:
            base = self.tensor(t._base, f"{path}._base")
            room = torch._from_functional_tensor(t._base).untyped_storage().nbytes()
            stride = tuple(value.stride())
            if bytes_reached(value.shape, stride, 0, value.element_size()) > room:
                stride = (0,) * value.dim()  # as many elements as the base has
            self.lines.append(f"{name} = {base}.as_strided({tuple(value.shape)}, {stride}, 0)")
            self.approximate(name, path, "the view op that made it (rebuilt as as_strided of "
                                         "its base: other values)")
        else:
            inner = self.tensor(value, f"torch._from_functional_tensor({path})")
            self.lines.append(f"{name} = torch._to_functional_tensor({inner})")
            if t.requires_grad and t.is_leaf:
                self.lines.append(f"{name}.requires_grad_()")
            elif t.requires_grad:  # as torch._mirror_autograd_meta_to gives it
                source = inner if value.requires_grad else "torch.empty(0, requires_grad=True)"
                self.lines.append(f"torch._mirror_autograd_meta_to({source}, {name})")
        self._functionalization_record(name, t, path)

    def _functionalization_record(self, name: str, t: "torch.Tensor", path: str) -> None:
        """What functionalization recorded of ``t``'s mutations, made again
        by mutations that change nothing (or marked where torch can mark it):
        of its metadata, its storage and its data."""
        torch = _torch()

        def recorded(query: str) -> bool:
            fn = getattr(torch, f"_functionalize_{query}", None)
            return fn is not None and bool(fn(t))

        if recorded("has_metadata_mutation"):
            self.lines.append(f"{name}.as_strided_({tuple(t.shape)}, {tuple(t.stride())}, "
                              f"{t.storage_offset()})  # its metadata mutated (as it is already)")
            self.approximate(name, path, "how its metadata was mutated (rebuilt as as_strided_ "
                                         "to the geometry it has)")
        if recorded("was_storage_changed"):
            self.lines.append(f"torch._functionalize_mark_storage_changed({name})  # set_()")
            self.approximate(name, path, "how its storage was changed (marked changed)")
        if recorded("has_data_mutation"):
            # After a conversion synced it, a mutation through a view left
            # pending looks the same as a direct one.
            copy = f"{name}.copy_({name})  # mutated (its value already)"
            if recorded("are_all_mutations_under_no_grad_or_inference_mode"):
                self.lines += ["with torch.no_grad():", "    " + copy]
            else:
                self.lines.append(copy)
            if recorded("are_all_mutations_hidden_from_autograd"):
                self.lines.append(f"torch._functionalize_mark_mutation_hidden_from_autograd({name})")
            self.approximate(name, path, "how it was mutated (rebuilt as mutated directly; "
                                         "a view's mutation left pending before a conversion "
                                         "synced it looks the same)")

    def _plain(self, t: "torch.Tensor", path: str) -> str:
        """An index or value tensor of a sparse one: its storage, not its view-ness."""
        name = self.fresh("t")
        self._strided(name, t)
        return name

    def _values(self, t: "torch.Tensor", values: "torch.Tensor", path: str,
                what: str = "sparse") -> str:
        """The values of a sparse COO ``t``; for a non-leaf they require grad,
        so that the constructor gives ``t`` its history (``mul_`` would not
        keep its nnz: it drops the entries of an empty one). Compressed
        layouts keep ``mul_``: their constructor has no complex autograd."""
        name = self._plain(values, path)
        if t.grad_fn is not None:
            self.lines.append(f"{name}.requires_grad_()  # the {what} tensor is a non-leaf")
        return name

    def _sparse_coo(self, name: str, t: "torch.Tensor", path: str) -> None:
        indices, values = self._plain(t._indices(), path), self._values(t, t._values(), path)
        self.lines.append(
            f"{name} = torch.sparse_coo_tensor({indices}, {values}, {tuple(t.shape)}, "
            f"is_coalesced={t.is_coalesced()}, check_invariants=False)")

    def _sparse_compressed(self, name: str, t: "torch.Tensor", path: str) -> None:
        torch = _torch()
        if t.layout in (torch.sparse_csr, torch.sparse_bsr):
            compressed, plain = t.crow_indices(), t.col_indices()
        else:
            compressed, plain = t.ccol_indices(), t.row_indices()
        parts = [self._plain(x, path) for x in (compressed, plain, t.values())]
        self.lines.append(
            f"{name} = torch.sparse_compressed_tensor({', '.join(parts)}, {tuple(t.shape)}, "
            f"layout={t.layout}, check_invariants=False)")

    def _mkldnn(self, name: str, t: "torch.Tensor", path: str) -> None:
        """``to_mkldnn()`` of its values, dense; a non-leaf is converted from
        dense values requiring grad (ToMkldnnBackward0), as ``_values``
        makes a sparse non-leaf."""
        dense = t.detach().to_dense()
        self.kept.append(dense)  # its storage's identity keys the storages described
        self.lines.append(f"{name} = {self._values(t, dense, path, 'MKLDNN')}.to_mkldnn()")

    def _quantized(self, name: str, t: "torch.Tensor", path: str) -> None:
        """``torch._make_per_tensor_quantized_tensor`` /
        ``_make_per_channel_quantized_tensor`` of its integer values
        (``int_repr()``) and quantization parameters: contiguous, on a
        storage of its own."""
        torch = _torch()
        scheme = t.qscheme()
        ints = t.int_repr()
        if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            parts = [ints]
            made = "torch._make_per_tensor_quantized_tensor({0}, " \
                   f"{t.q_scale()!r}, {t.q_zero_point()})"
        elif scheme in (torch.per_channel_affine, torch.per_channel_affine_float_qparams):
            parts = [ints, t.q_per_channel_scales(), t.q_per_channel_zero_points()]
            made = "torch._make_per_channel_quantized_tensor({0}, {1}, {2}, " \
                   f"{t.q_per_channel_axis()})"
        else:
            self.lines.append(f"{name} = None  # not rebuilt")
            self.lack(name, path, f"a quantized tensor of qscheme {scheme}")
            return
        self.kept.extend(parts)  # their storages' identities key the storages described
        self.lines.append(f"{name} = {made.format(*(self._plain(x, path) for x in parts))}")
        if (tuple(t.stride()) != tuple(ints.stride()) or t.storage_offset()
                or t.untyped_storage().nbytes() != ints.untyped_storage().nbytes()):
            self.approximate(name, path, "its strides, storage offset and storage size "
                                         "(rebuilt contiguous, on a storage of its own)")

    # -- autograd ----------------------------------------------------------
    def _autograd(self, name: str, t: "torch.Tensor", path: str) -> None:
        rebuilt_requires_grad = self._requires_grad_as_built(t)
        if t.requires_grad and t.is_leaf and not rebuilt_requires_grad:
            self.lines.append(f"{name}.requires_grad_()")
        elif (t.grad_fn is not None and not t._is_view() and t.layout != _torch().sparse_coo
              and not t.is_mkldnn):
            # An in-place op against a tensor requiring grad: a history,
            # the same storage, the same values.
            self.lines.append(f"{name}.mul_(torch.ones((), dtype={t.dtype}, "
                              "requires_grad=True))  # a non-leaf")
        elif t.requires_grad != rebuilt_requires_grad:
            self.approximate(name, path, f"requires_grad={t.requires_grad} on a view whose base "
                                  f"has requires_grad={not t.requires_grad}")
        if t.grad_fn is not None and t.retains_grad:
            self.lines.append(f"{name}.retain_grad()")
        if t.is_leaf and t.requires_grad and hasattr(t, "grad_dtype") and t.grad_dtype != t.dtype:
            self.lines.append(f"{name}.grad_dtype = {t.grad_dtype}")  # None: any
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # .grad of a non-leaf warns
            grad = t.grad
        if grad is not None:
            self.lines.append(f"{name}.grad = {self.tensor(grad, f'{path}.grad')}")

    def _requires_grad_as_built(self, t: "torch.Tensor") -> bool:
        """Whether the lines so far give ``t`` requires_grad: a view inherits
        it from its base (made under no_grad too: a leaf then)."""
        if isinstance(t, _torch().nn.Parameter) or id(t) in self.grad_views:
            return t.requires_grad
        if t.is_mkldnn:  # a non-leaf is converted from values requiring grad
            return t.grad_fn is not None
        if t._is_view() and t._base is not None and not t.is_inference():
            return t._base.requires_grad
        return False


def _per_channel(t: "torch.Tensor") -> bool:
    torch = _torch()
    return t.is_quantized and t.qscheme() not in (torch.per_tensor_affine,
                                                  torch.per_tensor_symmetric)


def _seqlen(value: Any) -> int:
    """A nested tensor's cached min/max sequence length: an int, or a
    tensor holding it in its shape (torch's _store_val_in_tensor)."""
    return value if isinstance(value, int) else int(value.shape[0])


def _contiguous_strides(shape: Any) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _same_geometry(t: "torch.Tensor", u: "torch.Tensor") -> bool:
    """Whether ``u.detach()`` has ``t``'s storage, offset, sizes and strides."""
    return (t.untyped_storage()._cdata == u.untyped_storage()._cdata
            and t.storage_offset() == u.storage_offset() and t.shape == u.shape
            and t.stride() == u.stride())


def _root(t: "torch.Tensor") -> "torch.Tensor":
    return t._base if t._is_view() and t._base is not None else t


def _importable(cls: type) -> str | None:
    """``from module import Name`` for ``cls``, or None when that import
    does not give ``cls`` back (classes in __main__ or in functions)."""
    module, qualname = cls.__module__, cls.__qualname__
    if "<locals>" in qualname or module == "__main__":
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return f"from {module} import {qualname.split('.')[0]}" if found is cls else None


def _enum_member(value: Any) -> tuple[str, str] | None:
    """(the import line, the source) of an ``Enum`` member whose class can be
    imported, or None."""
    import enum

    if not isinstance(value, enum.Enum):
        return None
    source = _importable(type(value))
    if source is None:
        return None
    return source, f"{type(value).__qualname__}.{value.name}"


def _literal(value: Any) -> str | None:
    """Source that evaluates to ``value`` (with torch imported), or None."""
    text = repr(value)
    try:
        same = eval(text, {"torch": _torch()}) == value
    except Exception:
        return None
    return text if same else None


def _reinterpreted(name: str, base: "torch.Tensor", dtype: "torch.dtype") -> str:
    """An expression for a view of ``base`` (named ``name``) in ``dtype``
    from which ``as_strided`` can make a view of any shape.

    A view whose dtype differs from its base's comes from view_as_real,
    view_as_complex, ``.real`` or ``.imag``; the same op is applied to an
    empty alias of the base, so that neither the base's strides nor its
    storage's size constrain it (``view(dtype)`` makes no ``_base``).
    """
    if dtype == base.dtype:
        return name
    empty = f"{name}.as_strided((0,), (1,), 0)"
    if base.is_complex():  # .real keeps working on a base with the conj bit
        return f"{empty}.real" if base.is_conj() else f"torch.view_as_real({empty})"
    return f"torch.view_as_complex({name}.as_strided((0, 2), (2, 1), 0))"


def _storage_expr(storage: Any) -> str:
    """Source for a storage of the same size and device: with the same
    bytes when it is small and its bytes can be read, else uninitialized;
    over a Python buffer where the original may not be resized (memory torch
    did not allocate), in shared memory where the original is."""
    torch = _torch()
    nbytes = storage.nbytes()
    dev = "" if storage.device.type == "cpu" else f", device={str(storage.device)!r}"
    buffer = f"bytearray({nbytes})"
    if 0 < nbytes <= MAX_STORAGE_BYTES_KEPT and storage.device.type != "meta":
        try:
            data = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
            hex_bytes = bytes(data.cpu().tolist()).hex()
        except Exception:  # a storage without readable data
            pass
        else:
            buffer = f"bytearray.fromhex({hex_bytes!r})"
    if not dev and not storage.resizable():
        if nbytes == 0:  # (frombuffer takes no empty buffer)
            return "torch.from_dlpack(torch.empty(0, dtype=torch.uint8)).untyped_storage()"
        return f"torch.frombuffer({buffer}, dtype=torch.uint8).untyped_storage()"
    if buffer.startswith("bytearray.fromhex"):
        to = f".to({str(storage.device)!r})" if dev else ""
        made = f"torch.frombuffer({buffer}, dtype=torch.uint8).clone(){to}.untyped_storage()"
    else:
        made = f"torch.empty({nbytes}, dtype=torch.uint8{dev}).untyped_storage()"
    return made + (".share_memory_()" if not dev and storage_is_shared(storage) else "")


def recipe_for(tensors: Sequence[Any]) -> Recipe:
    """The recipe that rebuilds ``tensors`` in order, outputs renamed if needed."""
    recipes = [recipe_of(t) for t in tensors]
    first = recipes[0] if recipes else None
    if first is not None and all(r is first for r in recipes):
        # Map each tensor to the output it is (the same recipe may have built
        # them in another order, or the user passes a subset).
        with_names = _outputs_matching(first, tensors)
        if with_names is not None:
            return Recipe(first.lines, with_names, first.imports, first.contexts, first.kinds)
    return describe_as_recipe(tensors)


def _outputs_matching(recipe: Recipe, tensors: Sequence[Any]) -> tuple[str, ...] | None:
    if len(tensors) == len(recipe.outputs):
        return recipe.outputs
    return None
