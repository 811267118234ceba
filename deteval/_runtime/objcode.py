"""Compiled libraries stored as machine code plus the names they define, loaded without parsing bitcode.

numba stores a kernel's object code with its bitcode, and a load parses the
bitcode (about 2.5 ms a kernel) only to list the symbols it defines (1.5 ms
more), which the engine must know before it is asked for an address. Here the
list is stored with the library; the bitcode, needed only when a new compile
links a loaded library in, is parsed then (:class:`LoadedLibrary`).
"""

from __future__ import annotations

import llvmlite.binding as ll
from numba.core.codegen import JITCodeLibrary


def _defined_names(module) -> tuple[str, ...]:
    """What numba's engine records when it adds a module: the functions and globals the module defines."""
    return tuple(g.name for group in (module.functions, module.global_variables) for g in group if not g.is_declaration)


class LoadedLibrary(JITCodeLibrary):
    """A library rebuilt from cached machine code; its bitcode is parsed only if a new compile links it in."""

    _linking_bitcode: bytes | None = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self._linking_bitcode is not None:
            self._shared_module = ll.parse_bitcode(self._linking_bitcode)
            self._linking_bitcode = None
        return super()._get_module_for_linking()


def object_payload(library) -> tuple:
    """``library.serialize_using_object_code()`` plus the names it defines."""
    name, kind, (object_code, bitcode) = library.serialize_using_object_code()
    return name, kind, (object_code, bitcode, _defined_names(library._get_module_for_linking()))


def is_object_payload(value) -> bool:
    """Whether ``value`` has the form :func:`object_payload` gives."""
    if not (isinstance(value, tuple) and len(value) == 3 and value[1] == "object" and isinstance(value[2], tuple)):
        return False
    data = value[2]
    return len(data) == 3 and isinstance(data[0], bytes) and isinstance(data[1], bytes) and isinstance(data[2], tuple)


def unserialize(codegen, libdata):
    """``codegen.unserialize_library`` that reads :func:`object_payload`'s form without parsing bitcode."""
    name, kind, data = libdata
    if kind != "object" or len(data) != 3:
        return type(codegen).unserialize_library(codegen, libdata)
    object_code, bitcode, names = data
    library = codegen.create_library(name)
    if type(library) is not JITCodeLibrary:  # a codegen of its own kind: numba's way
        return type(codegen).unserialize_library(codegen, (name, kind, (object_code, bitcode)))
    library.__class__ = LoadedLibrary  # the same state; one method differs
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._linking_bitcode = bitcode
    library._finalize_final_module()  # the engine loads the object code here
    codegen._engine._defined_symbols.update(names)
    return library
