"""The exceptions the package raises: one `LanceError` subclass per `LanceErrorCode`, each also
the built-in exception Python code catches for it; and the checks that turn a C return code
into one."""

from __future__ import annotations

from typing import Mapping

from ._ffi import LIB


class LanceError(Exception):
    """A failed call: `code` is the library's `LanceErrorCode`, `name` its name, `message` the
    library's message. Each code raises one subclass that is also the built-in exception Python
    code catches for it (see `error_class`): an invalid argument is a `ValueError`, a missing
    table, column or row a `LookupError` and `FileNotFoundError`, a timeout a `TimeoutError`, and
    so on. Errors pickle with their code and message, so an error raised in a worker process
    (multiprocessing, concurrent.futures, Spark, Ray) reaches the parent as the same type."""

    def __init__(self, code: int, message: str):
        self.code = code
        self.name = error_code_name(code)
        self.message = message
        super().__init__(f"{self.name}: {message}")
        if isinstance(self, OSError):
            self.errno = _CODE_ERRNO.get(code)

    def __reduce__(self):
        return (_error, (self.code, self.message))


class InvalidArgumentError(LanceError, ValueError):
    """LANCE_ERR_INVALID_ARGUMENT: a bad argument (an unknown column or option, a bad value)."""


class _UnknownKeywordError(InvalidArgumentError, TypeError):
    """A keyword argument the public function does not take: LANCE_ERR_INVALID_ARGUMENT, and
    also the `TypeError` Python raises for an unexpected keyword."""

    def __reduce__(self):
        return (_UnknownKeywordError, (self.code, self.message))


class NotFoundError(LanceError, FileNotFoundError, LookupError):
    """LANCE_ERR_NOT_FOUND: a table, version, namespace, index, column or row that does not exist."""


class LanceIOError(LanceError, OSError):
    """LANCE_ERR_IO: storage failed (network, object store, file system)."""


class NotSupportedError(LanceError, NotImplementedError):
    """LANCE_ERR_NOT_SUPPORTED: the table or the request uses something this library does not do."""


class InternalError(LanceError, RuntimeError):
    """LANCE_ERR_INTERNAL and LANCE_ERR_PANIC: a bug in the library (please report it)."""


class FailedPreconditionError(LanceError, RuntimeError):
    """LANCE_ERR_FAILED_PRECONDITION: the call is not allowed in this state (e.g. a fork after use)."""


class PermissionDeniedError(LanceError, PermissionError):
    """LANCE_ERR_UNAUTHENTICATED and LANCE_ERR_PERMISSION_DENIED: storage refused the credentials."""


class CorruptError(LanceError, OSError):
    """LANCE_ERR_CORRUPT: bytes that cannot be what they claim (a damaged file, a bad token)."""


class LanceTimeoutError(LanceError, TimeoutError):
    """LANCE_ERR_TIMEOUT: the call context's deadline passed."""


class ConflictError(LanceError, RuntimeError):
    """LANCE_ERR_CONFLICT: a commit lost to a concurrent writer it cannot be combined with;
    nothing of it is visible. Plan again at the new version and retry."""


class HostStreamError(LanceError, RuntimeError):
    """LANCE_ERR_HOST_STREAM: the caller's own input stream failed (its batches raised, or a
    batch had another schema than the stream's); nothing was committed. Since 0.11."""


class OutOfRangeError(LanceError, ArithmeticError):
    """LANCE_ERR_OUT_OF_RANGE: a result does not fit its type (an integer SUM beyond int64);
    never a wrapped value. Since 0.12."""


class CancelledError(LanceError, OSError):
    """LANCE_ERR_CANCELLED: the operation was cancelled (a stream's `cancel`, a call context)."""


_ERROR_CLASSES = {
    1: InvalidArgumentError, 2: NotFoundError, 3: LanceIOError, 4: NotSupportedError, 5: InternalError,
    6: InternalError, 7: FailedPreconditionError, 8: PermissionDeniedError, 9: PermissionDeniedError,
    10: CorruptError, 11: LanceTimeoutError, 12: CancelledError, 13: ConflictError,
    14: HostStreamError, 15: OutOfRangeError,
}

# The errno values a failed stream's get_next returns (the C Stream interface; the list in the
# header's lance_dataset_scan_v2 comment, which a test compares) and the codes they stand for,
# so a stream read with `for batch in stream` raises what `poll` raises. EIO (5) also covers
# internal failures; it maps to LanceIOError.
_ERRNO_CODES = {5: 3, 2: 2, 22: 1, 13: 9, 74: 10, 95: 4, 110: 11, 125: 12}
# The errno an error that is also an OSError carries (`e.errno`): the one its stream reports.
_CODE_ERRNO = {2: 2, 3: 5, 8: 13, 9: 13, 10: 74, 11: 110, 12: 125}


def error_class(code: int) -> type:
    """The `LanceError` subclass raised for a `LanceErrorCode` (`LanceError` for an unknown code)."""
    return _ERROR_CLASSES.get(code, LanceError)


def _error(code: int, message: str) -> LanceError:
    return error_class(code)(code, message)


def _choice(kind: str, value, choices: Mapping):
    """`choices[value]`, or InvalidArgumentError naming the valid choices."""
    try:
        return choices[value]
    except (KeyError, TypeError):
        valid = ", ".join(repr(c) for c in choices if c is not None)
        raise _error(1, f"unknown {kind} {value!r}; valid: {valid}") from None


def error_code_name(code: int) -> str:
    """The name of a `LanceErrorCode` value (lance_error_code_name)."""
    return LIB.lance_error_code_name(code).decode()


def _last_error() -> LanceError:
    return _error(LIB.lance_last_error_code(), (LIB.lance_last_error_message() or b"").decode("utf-8", "replace"))


def _check(rc: int) -> None:
    if rc != 0:
        raise _last_error()


def _ptr(p):
    if not p:
        raise _last_error()
    return p
