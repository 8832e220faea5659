"""TensorFlow's exception classes (tf.errors): one per status code, each an OpError."""

__all__ = ["OpError", "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
           "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "ResourceExhaustedError",
           "FailedPreconditionError", "AbortedError", "OutOfRangeError", "UnimplementedError", "InternalError",
           "UnavailableError", "DataLossError", "UnauthenticatedError", "OK", "CANCELLED", "UNKNOWN",
           "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
           "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
           "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED", "error_code_from_exception_type",
           "exception_type_from_error_code"]

(OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED,
 RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS,
 UNAUTHENTICATED) = range(17)


class OpError(Exception):
    """A failed step or operation: `node_def`, `op` (when known), `message` and `error_code`."""

    def __init__(self, node_def, op, message, error_code):
        super(OpError, self).__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message


def _make(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)
    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc})


CancelledError = _make("CancelledError", CANCELLED, "The operation or step was cancelled (a closed queue, a closed session).")
UnknownError = _make("UnknownError", UNKNOWN, "An error without a better code.")
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT, "An operation received an invalid argument.")
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired (RunOptions.timeout_in_ms).")
NotFoundError = _make("NotFoundError", NOT_FOUND, "A requested entity (a file, a node) was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, "An entity that should be new exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, "The caller may not do this.")
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED, "Out of memory or another resource.")
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION,
                                "The system is not in the state the operation needs (an uninitialized variable).")
AbortedError = _make("AbortedError", ABORTED, "The operation was aborted (a concurrency conflict, a re-formed group).")
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE, "Iterated past the end (a closed, empty queue).")
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED, "The operation is not supported.")
InternalError = _make("InternalError", INTERNAL, "An invariant of the runtime was broken.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, "A peer or service cannot be reached now.")
DataLossError = _make("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED, "Missing or bad credentials.")

_CODE_TO_CLASS = {CANCELLED: CancelledError, UNKNOWN: UnknownError, INVALID_ARGUMENT: InvalidArgumentError,
                  DEADLINE_EXCEEDED: DeadlineExceededError, NOT_FOUND: NotFoundError,
                  ALREADY_EXISTS: AlreadyExistsError, PERMISSION_DENIED: PermissionDeniedError,
                  RESOURCE_EXHAUSTED: ResourceExhaustedError, FAILED_PRECONDITION: FailedPreconditionError,
                  ABORTED: AbortedError, OUT_OF_RANGE: OutOfRangeError, UNIMPLEMENTED: UnimplementedError,
                  INTERNAL: InternalError, UNAVAILABLE: UnavailableError, DATA_LOSS: DataLossError,
                  UNAUTHENTICATED: UnauthenticatedError}
_CLASS_TO_CODE = {c: k for k, c in _CODE_TO_CLASS.items()}


def exception_type_from_error_code(error_code):
    return _CODE_TO_CLASS[error_code]


def error_code_from_exception_type(cls):
    return _CLASS_TO_CODE[cls]


def _from_status(code, message):
    """The exception for a C++ Status (called by _actorflow's translator)."""
    return _CODE_TO_CLASS.get(code, UnknownError)(None, None, message)
