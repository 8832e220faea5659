"""TensorFlow's static shapes: TensorShape and Dimension (a dimension may be unknown: None)."""

__all__ = ["TensorShape", "Dimension", "as_shape", "unknown_shape"]


class Dimension(object):
    """One dimension of a TensorShape; `value` is None when unknown."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = None if value is None or (isinstance(value, int) and value < 0) else int(value)

    @property
    def value(self):
        return self._value

    def is_compatible_with(self, other):
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def merge_with(self, other):
        other = as_dimension(other)
        if not self.is_compatible_with(other):
            raise ValueError("Dimensions %s and %s are not compatible" % (self, other))
        return self if self._value is not None else other

    def __eq__(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return self._value == other.value

    def __int__(self):
        return self._value

    __index__ = __int__

    def __hash__(self):
        return hash(self._value)

    def __repr__(self):
        return "Dimension(%s)" % repr(self._value)

    def __str__(self):
        return "?" if self._value is None else str(self._value)


def as_dimension(value):
    return value if isinstance(value, Dimension) else Dimension(value)


class TensorShape(object):
    """A static shape: a list of Dimensions, or None dims for an unknown rank."""

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, (int, Dimension)):
            self._dims = [as_dimension(dims)]
        else:
            self._dims = [as_dimension(d) for d in dims]

    @property
    def dims(self):
        return self._dims

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return [d.value for d in self._dims]

    def is_fully_defined(self):
        return self._dims is not None and all(d.value is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d.value
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other.dims is None:
            return True
        return len(self._dims) == len(other.dims) and all(a.is_compatible_with(b) for a, b in zip(self._dims, other.dims))

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are incompatible" % (self, other))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other.dims is None:
            return self
        self.assert_is_compatible_with(other)
        return TensorShape([a.merge_with(b) for a, b in zip(self._dims, other.dims)])

    def assert_has_rank(self, rank):
        if self.ndims not in (None, rank):
            raise ValueError("Shape %s must have rank %d" % (self, rank))

    def with_rank(self, rank):
        return self.merge_with(unknown_shape(rank))

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other.dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other.dims)

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __bool__(self):
        return self._dims is not None

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other.dims if self._dims is None or other.dims is None else \
            [d.value for d in self._dims] == [d.value for d in other.dims]

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return "TensorShape(%s)" % (None if self._dims is None else [d.value for d in self._dims])

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return "(%s,)" % self._dims[0]
        return "(%s)" % ", ".join(str(d) for d in self._dims)


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None):
    return TensorShape(None if rank is None else [None] * rank)
