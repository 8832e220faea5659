"""TensorFlow's dtypes: `tf.float32`, `tf.as_dtype`, ... over actorflow's DataType enum (TensorFlow's numbers)."""

import builtins

import numpy as np

from actorflow import _actorflow

__all__ = ["DType", "as_dtype", "float16", "half", "float32", "float64", "double", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "bool", "string", "complex64", "complex128", "resource", "variant",
           "bfloat16"]


class DType(object):
    """A tensor's element type (TensorFlow's tf.DType)."""

    __slots__ = ("_enum",)

    def __init__(self, enum):
        self._enum = int(enum)

    @property
    def as_datatype_enum(self):
        return self._enum

    @property
    def base_dtype(self):
        return _BY_ENUM[self._enum - 100] if self._enum > 100 else self

    @property
    def is_ref_dtype(self):
        return self._enum > 100

    @property
    def _as_ref(self):
        return as_dtype(self._enum + 100 if self._enum < 100 else self._enum)

    @property
    def name(self):
        return _NAMES.get(self.base_dtype._enum, _actorflow.dtype_name(self._enum)) + ("_ref" if self.is_ref_dtype else "")

    @property
    def as_numpy_dtype(self):
        return _actorflow.numpy_dtype(self.base_dtype._enum).type

    @property
    def is_floating(self):
        return self.base_dtype._enum in (1, 2, 19, 14)

    @property
    def is_integer(self):
        return self.base_dtype._enum in (3, 4, 5, 6, 9, 17, 22, 23)

    @property
    def is_unsigned(self):
        return self.base_dtype._enum in (4, 17, 22, 23)

    @property
    def is_bool(self):
        return self.base_dtype._enum == 10

    @property
    def is_complex(self):
        return self.base_dtype._enum in (8, 18)

    @property
    def size(self):
        return _actorflow.dtype_size(self.base_dtype._enum)

    @property
    def min(self):
        t = self.as_numpy_dtype
        return np.finfo(t).min if self.is_floating else np.iinfo(t).min

    @property
    def max(self):
        t = self.as_numpy_dtype
        return np.finfo(t).max if self.is_floating else np.iinfo(t).max

    def is_compatible_with(self, other):
        return self.base_dtype == as_dtype(other).base_dtype

    def __index__(self):
        return self._enum

    def __int__(self):
        return self._enum

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return self._enum == as_dtype(other)._enum
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return self._enum

    def __repr__(self):
        return "tf." + self.name

    __str__ = lambda self: "<dtype: %r>" % self.name


_NAMES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 7: "string", 8: "complex64",
          9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 18: "complex128", 19: "float16", 20: "resource",
          21: "variant", 22: "uint32", 23: "uint64"}
_BY_ENUM = {e: DType(e) for e in _NAMES}
_BY_ENUM.update({e + 100: DType(e + 100) for e in _NAMES})
_BY_NAME = {n: _BY_ENUM[e] for e, n in _NAMES.items()}
_BY_NAME.update({"float": _BY_ENUM[1], "double": _BY_ENUM[2], "half": _BY_ENUM[19]})

float32 = _BY_ENUM[1]
float64 = double = _BY_ENUM[2]
int32 = _BY_ENUM[3]
uint8 = _BY_ENUM[4]
int16 = _BY_ENUM[5]
int8 = _BY_ENUM[6]
string = _BY_ENUM[7]
complex64 = _BY_ENUM[8]
int64 = _BY_ENUM[9]
bool = _BY_ENUM[10]  # noqa: A001 (TensorFlow's name)
bfloat16 = _BY_ENUM[14]
uint16 = _BY_ENUM[17]
complex128 = _BY_ENUM[18]
float16 = half = _BY_ENUM[19]
resource = _BY_ENUM[20]
variant = _BY_ENUM[21]
uint32 = _BY_ENUM[22]
uint64 = _BY_ENUM[23]

for _e, _n in _NAMES.items():  # TensorFlow's reference dtypes: tf.float32_ref, ...
    globals()[_n + "_ref"] = _BY_ENUM[_e + 100]
    __all__.append(_n + "_ref")
_BY_NAME.update({n + "_ref": _BY_ENUM[e + 100] for e, n in _NAMES.items()})

_PY_TYPES = {float: float32, int: int32, builtins.bool: _BY_ENUM[10], str: string, bytes: string}


def as_dtype(type_value):
    """A DType from a DType, an enum number, a name ("float32"), a numpy dtype or type, or a Python type."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, (int, np.integer)) and not isinstance(type_value, np.bool_):
        if int(type_value) in _BY_ENUM:
            return _BY_ENUM[int(type_value)]
    elif isinstance(type_value, str):
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
        if type_value.startswith("DT_") and type_value[3:].lower() in _BY_NAME:
            return _BY_NAME[type_value[3:].lower()]
    elif isinstance(type_value, type) and type_value in _PY_TYPES:
        return _PY_TYPES[type_value]
    else:
        try:
            enum = _actorflow.dtype_of_numpy(np.dtype(type_value))
            if enum:
                return _BY_ENUM[enum]
        except TypeError:
            pass
    raise TypeError("Cannot convert value %r to a TensorFlow DType." % (type_value,))
