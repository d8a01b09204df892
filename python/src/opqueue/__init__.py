"""opqueue for Python: a client and a worker for opqueue's coordinator (`opcoord`), over ZeroMQ.

    from opqueue import Client, Worker

The wire protocol is docs/PROTOCOL.md (version 1.10); `opqueue.wire` and `opqueue.opqueue_pb2` are its
framing and schema for those who speak it directly.
"""
from .client import AsyncClient, AsyncOp, AsyncRun, Client, Event, Op, OpStatus, Outcome, Run, WaitResult
from .errors import (AuthenticationFailed, Cancelled, OperationCancelled, OperationFailed, OpqueueError,
                     RequestRefused, SubmitRejected, Timeout, TypedFailure, Unauthorized, UnknownOperation)
from .keys import KeyFileError
from ._worker import Context, Worker, WorkerRefused

__version__ = "1.10.0"
PROTOCOL_VERSION = "1.10"

__all__ = ["AsyncClient", "AsyncOp", "AsyncRun", "AuthenticationFailed", "Cancelled", "Client", "Context", "Event",
           "KeyFileError", "Op", "OpStatus", "OperationCancelled", "OperationFailed", "OpqueueError", "Outcome",
           "RequestRefused", "Run", "SubmitRejected", "Timeout", "TypedFailure", "Unauthorized", "UnknownOperation", "WaitResult",
           "Worker", "WorkerRefused", "__version__", "PROTOCOL_VERSION"]
