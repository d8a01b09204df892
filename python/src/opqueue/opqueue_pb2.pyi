from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DEPENDENCY_POLICY_FINISHED: DependencyPolicy
DEPENDENCY_POLICY_SUCCEEDED: DependencyPolicy
DESCRIPTOR: _descriptor.FileDescriptor
ERROR_CODE_BUSY: ErrorCode
ERROR_CODE_INTERNAL: ErrorCode
ERROR_CODE_INVALID_ARGUMENT: ErrorCode
ERROR_CODE_MALFORMED: ErrorCode
ERROR_CODE_NOT_FOUND: ErrorCode
ERROR_CODE_NOT_LEADER: ErrorCode
ERROR_CODE_REJECTED: ErrorCode
ERROR_CODE_TOO_LARGE: ErrorCode
ERROR_CODE_UNAUTHORIZED: ErrorCode
ERROR_CODE_UNEXPECTED: ErrorCode
ERROR_CODE_UNKNOWN_COMMAND: ErrorCode
ERROR_CODE_UNSPECIFIED: ErrorCode
ERROR_CODE_UNSUPPORTED_VERSION: ErrorCode
KEY_STRATEGY_CANCEL_IN_PROGRESS: KeyStrategy
KEY_STRATEGY_CANCEL_NEWEST: KeyStrategy
KEY_STRATEGY_UNSPECIFIED: KeyStrategy
KEY_STRATEGY_WAIT: KeyStrategy
OP_STATE_DISPATCHED: OpState
OP_STATE_EXECUTING: OpState
OP_STATE_FINISHED: OpState
OP_STATE_PENDING: OpState
OP_STATE_READY: OpState
OP_STATE_UNSPECIFIED: OpState
QOS_BACKGROUND: QoS
QOS_DEFAULT: QoS
QOS_UNSPECIFIED: QoS
QOS_USER_INITIATED: QoS
QOS_USER_INTERACTIVE: QoS
QOS_UTILITY: QoS
SHARE_MODE_FIFO: ShareMode
SHARE_MODE_KEY: ShareMode
SHARE_MODE_RUN: ShareMode
SHARE_MODE_SUBMITTER: ShareMode
SHARE_MODE_UNSPECIFIED: ShareMode
SUBMIT_PROBLEM_CYCLE: SubmitProblem
SUBMIT_PROBLEM_DUPLICATE_ID: SubmitProblem
SUBMIT_PROBLEM_INVALID_FIELD: SubmitProblem
SUBMIT_PROBLEM_LIMIT: SubmitProblem
SUBMIT_PROBLEM_NO_WORKER_KIND: SubmitProblem
SUBMIT_PROBLEM_UNKNOWN_DEPENDENCY: SubmitProblem
SUBMIT_PROBLEM_UNSPECIFIED: SubmitProblem

class Ack(_message.Message):
    __slots__ = ["affected", "epoch", "left_alone", "not_found"]
    AFFECTED_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEFT_ALONE_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    affected: int
    epoch: int
    left_alone: int
    not_found: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, affected: _Optional[int] = ..., not_found: _Optional[_Iterable[str]] = ..., left_alone: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class AttemptLog(_message.Message):
    __slots__ = ["attempt", "finished_us", "outcome", "part", "stderr", "stderr_dropped", "stdout", "stdout_dropped", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_US_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    STDERR_DROPPED_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    STDOUT_DROPPED_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    finished_us: int
    outcome: str
    part: int
    stderr: bytes
    stderr_dropped: int
    stdout: bytes
    stdout_dropped: int
    worker_id: str
    def __init__(self, attempt: _Optional[int] = ..., part: _Optional[int] = ..., worker_id: _Optional[str] = ..., outcome: _Optional[str] = ..., stdout: _Optional[bytes] = ..., stderr: _Optional[bytes] = ..., stdout_dropped: _Optional[int] = ..., stderr_dropped: _Optional[int] = ..., finished_us: _Optional[int] = ...) -> None: ...

class Cancel(_message.Message):
    __slots__ = ["epoch", "records"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    records: _containers.RepeatedCompositeFieldContainer[CancelRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[CancelRecord, _Mapping]]] = ..., epoch: _Optional[int] = ...) -> None: ...

class CancelOps(_message.Message):
    __slots__ = ["cascade", "op_ids", "queue", "reason", "run"]
    CASCADE_FIELD_NUMBER: _ClassVar[int]
    OP_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    cascade: bool
    op_ids: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    reason: str
    run: str
    def __init__(self, op_ids: _Optional[_Iterable[str]] = ..., cascade: bool = ..., queue: _Optional[str] = ..., reason: _Optional[str] = ..., run: _Optional[str] = ...) -> None: ...

class CancelRecord(_message.Message):
    __slots__ = ["attempt", "op_id", "reason"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    op_id: str
    reason: str
    def __init__(self, op_id: _Optional[str] = ..., attempt: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ConcurrencyKeyCounts(_message.Message):
    __slots__ = ["holding", "name", "waiting"]
    HOLDING_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    holding: int
    name: str
    waiting: int
    def __init__(self, name: _Optional[str] = ..., holding: _Optional[int] = ..., waiting: _Optional[int] = ...) -> None: ...

class Credit(_message.Message):
    __slots__ = ["credit"]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    credit: int
    def __init__(self, credit: _Optional[int] = ...) -> None: ...

class Disconnect(_message.Message):
    __slots__ = ["epoch", "reason"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    reason: str
    def __init__(self, reason: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class Dispatch(_message.Message):
    __slots__ = ["epoch", "records"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    records: _containers.RepeatedCompositeFieldContainer[DispatchRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[DispatchRecord, _Mapping]]] = ..., epoch: _Optional[int] = ...) -> None: ...

class DispatchRecord(_message.Message):
    __slots__ = ["attempt", "inputs", "kind", "name", "op_id", "part", "payload", "priority", "qos", "token"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    inputs: _containers.RepeatedCompositeFieldContainer[Input]
    kind: str
    name: str
    op_id: str
    part: int
    payload: bytes
    priority: int
    qos: QoS
    token: int
    def __init__(self, op_id: _Optional[str] = ..., part: _Optional[int] = ..., attempt: _Optional[int] = ..., kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., inputs: _Optional[_Iterable[_Union[Input, _Mapping]]] = ..., priority: _Optional[int] = ..., qos: _Optional[_Union[QoS, str]] = ..., name: _Optional[str] = ..., token: _Optional[int] = ...) -> None: ...

class ErrorReply(_message.Message):
    __slots__ = ["code", "command", "epoch", "message", "op_id"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    command: int
    epoch: int
    message: str
    op_id: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., message: _Optional[str] = ..., command: _Optional[int] = ..., op_id: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ["attempt", "cancelled", "fraction", "message", "op_id", "outcome", "run", "sequence", "state", "timestamp_us", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_US_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    cancelled: bool
    fraction: float
    message: str
    op_id: str
    outcome: Outcome
    run: str
    sequence: int
    state: OpState
    timestamp_us: int
    worker_id: str
    def __init__(self, sequence: _Optional[int] = ..., op_id: _Optional[str] = ..., state: _Optional[_Union[OpState, str]] = ..., cancelled: bool = ..., outcome: _Optional[_Union[Outcome, _Mapping]] = ..., timestamp_us: _Optional[int] = ..., attempt: _Optional[int] = ..., worker_id: _Optional[str] = ..., fraction: _Optional[float] = ..., message: _Optional[str] = ..., run: _Optional[str] = ...) -> None: ...

class Events(_message.Message):
    __slots__ = ["epoch", "events"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., epoch: _Optional[int] = ...) -> None: ...

class Finished(_message.Message):
    __slots__ = ["credit", "records", "sent_us"]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SENT_US_FIELD_NUMBER: _ClassVar[int]
    credit: int
    records: _containers.RepeatedCompositeFieldContainer[FinishedRecord]
    sent_us: int
    def __init__(self, records: _Optional[_Iterable[_Union[FinishedRecord, _Mapping]]] = ..., credit: _Optional[int] = ..., sent_us: _Optional[int] = ...) -> None: ...

class FinishedRecord(_message.Message):
    __slots__ = ["at_us", "attempt", "cancelled", "failed", "op_id", "part", "started_at_us", "stderr_dropped", "stderr_tail", "stdout_dropped", "stdout_tail", "succeeded", "token"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_US_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_US_FIELD_NUMBER: _ClassVar[int]
    STDERR_DROPPED_FIELD_NUMBER: _ClassVar[int]
    STDERR_TAIL_FIELD_NUMBER: _ClassVar[int]
    STDOUT_DROPPED_FIELD_NUMBER: _ClassVar[int]
    STDOUT_TAIL_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    at_us: int
    attempt: int
    cancelled: str
    failed: str
    op_id: str
    part: int
    started_at_us: int
    stderr_dropped: int
    stderr_tail: bytes
    stdout_dropped: int
    stdout_tail: bytes
    succeeded: bytes
    token: int
    def __init__(self, op_id: _Optional[str] = ..., part: _Optional[int] = ..., attempt: _Optional[int] = ..., succeeded: _Optional[bytes] = ..., failed: _Optional[str] = ..., cancelled: _Optional[str] = ..., at_us: _Optional[int] = ..., started_at_us: _Optional[int] = ..., stdout_tail: _Optional[bytes] = ..., stderr_tail: _Optional[bytes] = ..., stdout_dropped: _Optional[int] = ..., stderr_dropped: _Optional[int] = ..., token: _Optional[int] = ...) -> None: ...

class Follow(_message.Message):
    __slots__ = ["from_record", "last_crc", "name"]
    FROM_RECORD_FIELD_NUMBER: _ClassVar[int]
    LAST_CRC_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    from_record: int
    last_crc: int
    name: str
    def __init__(self, from_record: _Optional[int] = ..., name: _Optional[str] = ..., last_crc: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Hello(_message.Message):
    __slots__ = ["finished", "kinds", "name", "prefetch", "protocol_version", "running", "sent_us", "slots", "tags"]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREFETCH_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    SENT_US_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    finished: _containers.RepeatedCompositeFieldContainer[FinishedRecord]
    kinds: _containers.RepeatedScalarFieldContainer[str]
    name: str
    prefetch: int
    protocol_version: int
    running: _containers.RepeatedCompositeFieldContainer[PartRef]
    sent_us: int
    slots: int
    tags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protocol_version: _Optional[int] = ..., name: _Optional[str] = ..., slots: _Optional[int] = ..., tags: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[str]] = ..., prefetch: _Optional[int] = ..., running: _Optional[_Iterable[_Union[PartRef, _Mapping]]] = ..., finished: _Optional[_Iterable[_Union[FinishedRecord, _Mapping]]] = ..., sent_us: _Optional[int] = ...) -> None: ...

class HighAvailability(_message.Message):
    __slots__ = ["step_down"]
    STEP_DOWN_FIELD_NUMBER: _ClassVar[int]
    step_down: bool
    def __init__(self, step_down: bool = ...) -> None: ...

class HighAvailabilityReply(_message.Message):
    __slots__ = ["advertise", "elections_won", "enabled", "epoch", "group", "leader", "leader_epoch", "leading", "replication", "serving_left_ms", "standbys", "stepped_down", "store"]
    ADVERTISE_FIELD_NUMBER: _ClassVar[int]
    ELECTIONS_WON_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADING_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    SERVING_LEFT_MS_FIELD_NUMBER: _ClassVar[int]
    STANDBYS_FIELD_NUMBER: _ClassVar[int]
    STEPPED_DOWN_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    advertise: str
    elections_won: int
    enabled: bool
    epoch: int
    group: str
    leader: str
    leader_epoch: int
    leading: bool
    replication: str
    serving_left_ms: int
    standbys: _containers.RepeatedCompositeFieldContainer[StandbyInfo]
    stepped_down: bool
    store: str
    def __init__(self, enabled: bool = ..., leading: bool = ..., leader: _Optional[str] = ..., leader_epoch: _Optional[int] = ..., group: _Optional[str] = ..., advertise: _Optional[str] = ..., store: _Optional[str] = ..., serving_left_ms: _Optional[int] = ..., elections_won: _Optional[int] = ..., stepped_down: bool = ..., standbys: _Optional[_Iterable[_Union[StandbyInfo, _Mapping]]] = ..., replication: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class Input(_message.Message):
    __slots__ = ["dependency_id", "result"]
    DEPENDENCY_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    dependency_id: str
    result: bytes
    def __init__(self, dependency_id: _Optional[str] = ..., result: _Optional[bytes] = ...) -> None: ...

class JournalChunk(_message.Message):
    __slots__ = ["first_record", "frames", "records"]
    FIRST_RECORD_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    first_record: int
    frames: bytes
    records: int
    def __init__(self, first_record: _Optional[int] = ..., records: _Optional[int] = ..., frames: _Optional[bytes] = ...) -> None: ...

class Logs(_message.Message):
    __slots__ = ["attempt", "op_id", "run"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    op_id: str
    run: str
    def __init__(self, op_id: _Optional[str] = ..., run: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class LogsReply(_message.Message):
    __slots__ = ["attempts", "epoch", "evicted", "op_id", "run"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EVICTED_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[AttemptLog]
    epoch: int
    evicted: bool
    op_id: str
    run: str
    def __init__(self, op_id: _Optional[str] = ..., run: _Optional[str] = ..., attempts: _Optional[_Iterable[_Union[AttemptLog, _Mapping]]] = ..., evicted: bool = ..., epoch: _Optional[int] = ...) -> None: ...

class OpOutcome(_message.Message):
    __slots__ = ["op_id", "outcome", "run"]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    op_id: str
    outcome: Outcome
    run: str
    def __init__(self, op_id: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, _Mapping]] = ..., run: _Optional[str] = ...) -> None: ...

class OpStatus(_message.Message):
    __slots__ = ["after", "attempt_errors", "attempts", "cancelled", "dispatched_us", "error", "finished_us", "id", "kind", "name", "outcome", "parts", "parts_done", "priority", "queue", "ready_us", "result_evicted", "result_size", "run", "started_us", "state", "submitted_us", "worker_id", "worker_key", "worker_session"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_ERRORS_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    DISPATCHED_US_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FINISHED_US_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PARTS_DONE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    READY_US_FIELD_NUMBER: _ClassVar[int]
    RESULT_EVICTED_FIELD_NUMBER: _ClassVar[int]
    RESULT_SIZE_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STARTED_US_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_US_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_KEY_FIELD_NUMBER: _ClassVar[int]
    WORKER_SESSION_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedScalarFieldContainer[str]
    attempt_errors: _containers.RepeatedScalarFieldContainer[str]
    attempts: int
    cancelled: bool
    dispatched_us: int
    error: str
    finished_us: int
    id: str
    kind: str
    name: str
    outcome: Outcome
    parts: int
    parts_done: int
    priority: int
    queue: str
    ready_us: int
    result_evicted: bool
    result_size: int
    run: str
    started_us: int
    state: OpState
    submitted_us: int
    worker_id: str
    worker_key: str
    worker_session: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., queue: _Optional[str] = ..., state: _Optional[_Union[OpState, str]] = ..., cancelled: bool = ..., outcome: _Optional[_Union[Outcome, _Mapping]] = ..., worker_id: _Optional[str] = ..., attempts: _Optional[int] = ..., result_size: _Optional[int] = ..., error: _Optional[str] = ..., submitted_us: _Optional[int] = ..., ready_us: _Optional[int] = ..., started_us: _Optional[int] = ..., finished_us: _Optional[int] = ..., priority: _Optional[int] = ..., parts: _Optional[int] = ..., parts_done: _Optional[int] = ..., dispatched_us: _Optional[int] = ..., attempt_errors: _Optional[_Iterable[str]] = ..., worker_session: _Optional[int] = ..., run: _Optional[str] = ..., worker_key: _Optional[str] = ..., kind: _Optional[str] = ..., after: _Optional[_Iterable[str]] = ..., result_evicted: bool = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ["after", "barrier", "concurrency_key", "id", "kind", "loss_retries", "name", "parts", "payload", "policy", "priority", "qos", "queue", "requires", "retries", "retry_delay_max_us", "retry_delay_us", "share", "timeout_us"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    BARRIER_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LOSS_RETRIES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MAX_US_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_US_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_US_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedScalarFieldContainer[str]
    barrier: bool
    concurrency_key: str
    id: str
    kind: str
    loss_retries: int
    name: str
    parts: int
    payload: bytes
    policy: DependencyPolicy
    priority: int
    qos: QoS
    queue: str
    requires: _containers.RepeatedScalarFieldContainer[str]
    retries: int
    retry_delay_max_us: int
    retry_delay_us: int
    share: str
    timeout_us: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., queue: _Optional[str] = ..., kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., after: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., qos: _Optional[_Union[QoS, str]] = ..., parts: _Optional[int] = ..., policy: _Optional[_Union[DependencyPolicy, str]] = ..., retries: _Optional[int] = ..., loss_retries: _Optional[int] = ..., timeout_us: _Optional[int] = ..., requires: _Optional[_Iterable[str]] = ..., barrier: bool = ..., retry_delay_us: _Optional[int] = ..., retry_delay_max_us: _Optional[int] = ..., share: _Optional[str] = ..., concurrency_key: _Optional[str] = ...) -> None: ...

class Outcome(_message.Message):
    __slots__ = ["cancelled", "failed", "succeeded"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    cancelled: str
    failed: str
    succeeded: bytes
    def __init__(self, succeeded: _Optional[bytes] = ..., failed: _Optional[str] = ..., cancelled: _Optional[str] = ...) -> None: ...

class PartRef(_message.Message):
    __slots__ = ["at_us", "attempt", "op_id", "part", "token"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_US_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    at_us: int
    attempt: int
    op_id: str
    part: int
    token: int
    def __init__(self, op_id: _Optional[str] = ..., part: _Optional[int] = ..., attempt: _Optional[int] = ..., at_us: _Optional[int] = ..., token: _Optional[int] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ["records"]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[ProgressRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[ProgressRecord, _Mapping]]] = ...) -> None: ...

class ProgressRecord(_message.Message):
    __slots__ = ["attempt", "done", "fraction", "message", "op_id", "part", "total"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    done: int
    fraction: float
    message: str
    op_id: str
    part: int
    total: int
    def __init__(self, op_id: _Optional[str] = ..., part: _Optional[int] = ..., attempt: _Optional[int] = ..., fraction: _Optional[float] = ..., done: _Optional[int] = ..., total: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class Promote(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class QueueControl(_message.Message):
    __slots__ = ["settings"]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    settings: QueueSettings
    def __init__(self, settings: _Optional[_Union[QueueSettings, _Mapping]] = ...) -> None: ...

class QueueCounts(_message.Message):
    __slots__ = ["cancelled", "dispatched", "executing", "failed", "fairness", "finished", "keys", "keys_omitted", "max_concurrent", "name", "next_token_us", "pending", "qos", "ready", "shares", "shares_omitted", "suspended"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    DISPATCHED_FIELD_NUMBER: _ClassVar[int]
    EXECUTING_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEYS_OMITTED_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_TOKEN_US_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SHARES_FIELD_NUMBER: _ClassVar[int]
    SHARES_OMITTED_FIELD_NUMBER: _ClassVar[int]
    SUSPENDED_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    dispatched: int
    executing: int
    failed: int
    fairness: QueueFairness
    finished: int
    keys: _containers.RepeatedCompositeFieldContainer[ConcurrencyKeyCounts]
    keys_omitted: int
    max_concurrent: int
    name: str
    next_token_us: int
    pending: int
    qos: QoS
    ready: int
    shares: _containers.RepeatedCompositeFieldContainer[ShareCounts]
    shares_omitted: int
    suspended: bool
    def __init__(self, name: _Optional[str] = ..., pending: _Optional[int] = ..., ready: _Optional[int] = ..., executing: _Optional[int] = ..., finished: _Optional[int] = ..., cancelled: _Optional[int] = ..., failed: _Optional[int] = ..., suspended: bool = ..., max_concurrent: _Optional[int] = ..., qos: _Optional[_Union[QoS, str]] = ..., dispatched: _Optional[int] = ..., fairness: _Optional[_Union[QueueFairness, _Mapping]] = ..., shares: _Optional[_Iterable[_Union[ShareCounts, _Mapping]]] = ..., keys: _Optional[_Iterable[_Union[ConcurrencyKeyCounts, _Mapping]]] = ..., shares_omitted: _Optional[int] = ..., keys_omitted: _Optional[int] = ..., next_token_us: _Optional[int] = ...) -> None: ...

class QueueFairness(_message.Message):
    __slots__ = ["ageing_us", "burst", "key_burst", "key_limit", "key_rate_per_second", "key_strategy", "no_ageing", "no_key_rate", "no_rate", "rate_per_second", "replace_weights", "share", "weights"]
    AGEING_US_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    KEY_BURST_FIELD_NUMBER: _ClassVar[int]
    KEY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    KEY_RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    KEY_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    NO_AGEING_FIELD_NUMBER: _ClassVar[int]
    NO_KEY_RATE_FIELD_NUMBER: _ClassVar[int]
    NO_RATE_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    REPLACE_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    ageing_us: int
    burst: int
    key_burst: int
    key_limit: int
    key_rate_per_second: float
    key_strategy: KeyStrategy
    no_ageing: bool
    no_key_rate: bool
    no_rate: bool
    rate_per_second: float
    replace_weights: bool
    share: ShareMode
    weights: _containers.RepeatedCompositeFieldContainer[ShareWeight]
    def __init__(self, share: _Optional[_Union[ShareMode, str]] = ..., weights: _Optional[_Iterable[_Union[ShareWeight, _Mapping]]] = ..., replace_weights: bool = ..., key_limit: _Optional[int] = ..., key_strategy: _Optional[_Union[KeyStrategy, str]] = ..., rate_per_second: _Optional[float] = ..., burst: _Optional[int] = ..., no_rate: bool = ..., ageing_us: _Optional[int] = ..., no_ageing: bool = ..., key_rate_per_second: _Optional[float] = ..., key_burst: _Optional[int] = ..., no_key_rate: bool = ...) -> None: ...

class QueueSettings(_message.Message):
    __slots__ = ["fairness", "max_concurrent", "name", "qos", "suspended"]
    FAIRNESS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    SUSPENDED_FIELD_NUMBER: _ClassVar[int]
    fairness: QueueFairness
    max_concurrent: int
    name: str
    qos: QoS
    suspended: bool
    def __init__(self, name: _Optional[str] = ..., max_concurrent: _Optional[int] = ..., qos: _Optional[_Union[QoS, str]] = ..., suspended: bool = ..., fairness: _Optional[_Union[QueueFairness, _Mapping]] = ...) -> None: ...

class Reject(_message.Message):
    __slots__ = ["code", "reason"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    reason: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ReplicaAck(_message.Message):
    __slots__ = ["durable_record", "received"]
    DURABLE_RECORD_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_FIELD_NUMBER: _ClassVar[int]
    durable_record: int
    received: int
    def __init__(self, received: _Optional[int] = ..., durable_record: _Optional[int] = ...) -> None: ...

class RunInfo(_message.Message):
    __slots__ = ["bytes", "cancelled", "dispatched", "evict_at_us", "executing", "failed", "finished_us", "id", "pending", "ready", "results_evicted", "submitted_us", "submitter", "succeeded", "total"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    DISPATCHED_FIELD_NUMBER: _ClassVar[int]
    EVICT_AT_US_FIELD_NUMBER: _ClassVar[int]
    EXECUTING_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_US_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    RESULTS_EVICTED_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_US_FIELD_NUMBER: _ClassVar[int]
    SUBMITTER_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    cancelled: int
    dispatched: int
    evict_at_us: int
    executing: int
    failed: int
    finished_us: int
    id: str
    pending: int
    ready: int
    results_evicted: bool
    submitted_us: int
    submitter: str
    succeeded: int
    total: int
    def __init__(self, id: _Optional[str] = ..., submitter: _Optional[str] = ..., submitted_us: _Optional[int] = ..., finished_us: _Optional[int] = ..., total: _Optional[int] = ..., pending: _Optional[int] = ..., ready: _Optional[int] = ..., dispatched: _Optional[int] = ..., executing: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., cancelled: _Optional[int] = ..., evict_at_us: _Optional[int] = ..., results_evicted: bool = ..., bytes: _Optional[int] = ...) -> None: ...

class Runs(_message.Message):
    __slots__ = ["after", "limit", "runs"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    after: str
    limit: int
    runs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, runs: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ..., after: _Optional[str] = ...) -> None: ...

class RunsReply(_message.Message):
    __slots__ = ["epoch", "evicted", "next_after", "now_us", "retain_bytes", "retained", "retained_bytes", "runs"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EVICTED_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_FIELD_NUMBER: _ClassVar[int]
    NOW_US_FIELD_NUMBER: _ClassVar[int]
    RETAINED_BYTES_FIELD_NUMBER: _ClassVar[int]
    RETAINED_FIELD_NUMBER: _ClassVar[int]
    RETAIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    evicted: int
    next_after: str
    now_us: int
    retain_bytes: int
    retained: int
    retained_bytes: int
    runs: _containers.RepeatedCompositeFieldContainer[RunInfo]
    def __init__(self, runs: _Optional[_Iterable[_Union[RunInfo, _Mapping]]] = ..., next_after: _Optional[str] = ..., now_us: _Optional[int] = ..., retained: _Optional[int] = ..., evicted: _Optional[int] = ..., retained_bytes: _Optional[int] = ..., retain_bytes: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class SetPriority(_message.Message):
    __slots__ = ["inherit", "op_ids", "priority", "run"]
    INHERIT_FIELD_NUMBER: _ClassVar[int]
    OP_IDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    inherit: bool
    op_ids: _containers.RepeatedScalarFieldContainer[str]
    priority: int
    run: str
    def __init__(self, op_ids: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., inherit: bool = ..., run: _Optional[str] = ...) -> None: ...

class ShareCounts(_message.Message):
    __slots__ = ["dispatched_total", "name", "ready", "running", "weight"]
    DISPATCHED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    dispatched_total: int
    name: str
    ready: int
    running: int
    weight: int
    def __init__(self, name: _Optional[str] = ..., weight: _Optional[int] = ..., ready: _Optional[int] = ..., running: _Optional[int] = ..., dispatched_total: _Optional[int] = ...) -> None: ...

class ShareWeight(_message.Message):
    __slots__ = ["share", "weight"]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    share: str
    weight: int
    def __init__(self, share: _Optional[str] = ..., weight: _Optional[int] = ...) -> None: ...

class SnapshotChunk(_message.Message):
    __slots__ = ["data", "offset", "records_after", "snapshot", "total"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_AFTER_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    offset: int
    records_after: int
    snapshot: int
    total: int
    def __init__(self, snapshot: _Optional[int] = ..., records_after: _Optional[int] = ..., offset: _Optional[int] = ..., total: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class StandbyInfo(_message.Message):
    __slots__ = ["ack_p50_us", "ack_p99_us", "durable_record", "lag_records", "lag_us", "name", "state"]
    ACK_P50_US_FIELD_NUMBER: _ClassVar[int]
    ACK_P99_US_FIELD_NUMBER: _ClassVar[int]
    DURABLE_RECORD_FIELD_NUMBER: _ClassVar[int]
    LAG_RECORDS_FIELD_NUMBER: _ClassVar[int]
    LAG_US_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ack_p50_us: int
    ack_p99_us: int
    durable_record: int
    lag_records: int
    lag_us: int
    name: str
    state: str
    def __init__(self, name: _Optional[str] = ..., durable_record: _Optional[int] = ..., lag_records: _Optional[int] = ..., lag_us: _Optional[int] = ..., state: _Optional[str] = ..., ack_p50_us: _Optional[int] = ..., ack_p99_us: _Optional[int] = ...) -> None: ...

class Started(_message.Message):
    __slots__ = ["parts", "sent_us"]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    SENT_US_FIELD_NUMBER: _ClassVar[int]
    parts: _containers.RepeatedCompositeFieldContainer[PartRef]
    sent_us: int
    def __init__(self, parts: _Optional[_Iterable[_Union[PartRef, _Mapping]]] = ..., sent_us: _Optional[int] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ["after", "limit", "op_ids", "ops", "queue", "run", "states", "with_results", "with_spec", "worker"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    OP_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    WITH_RESULTS_FIELD_NUMBER: _ClassVar[int]
    WITH_SPEC_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    after: str
    limit: int
    op_ids: _containers.RepeatedScalarFieldContainer[str]
    ops: bool
    queue: str
    run: str
    states: _containers.RepeatedScalarFieldContainer[OpState]
    with_results: bool
    with_spec: bool
    worker: str
    def __init__(self, op_ids: _Optional[_Iterable[str]] = ..., queue: _Optional[str] = ..., limit: _Optional[int] = ..., after: _Optional[str] = ..., with_results: bool = ..., ops: bool = ..., run: _Optional[str] = ..., states: _Optional[_Iterable[_Union[OpState, str]]] = ..., worker: _Optional[str] = ..., with_spec: bool = ...) -> None: ...

class StatusReply(_message.Message):
    __slots__ = ["auth_failures", "coordinator_cpu_us", "coordinator_rss_bytes", "epoch", "fenced", "matched", "next_after", "not_found", "now_us", "omitted", "ops", "queues", "replication", "security", "standbys", "total_operations", "unplaceable"]
    AUTH_FAILURES_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_CPU_US_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    NOW_US_FIELD_NUMBER: _ClassVar[int]
    OMITTED_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    SECURITY_FIELD_NUMBER: _ClassVar[int]
    STANDBYS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    UNPLACEABLE_FIELD_NUMBER: _ClassVar[int]
    auth_failures: int
    coordinator_cpu_us: int
    coordinator_rss_bytes: int
    epoch: int
    fenced: int
    matched: int
    next_after: str
    not_found: _containers.RepeatedScalarFieldContainer[str]
    now_us: int
    omitted: _containers.RepeatedScalarFieldContainer[str]
    ops: _containers.RepeatedCompositeFieldContainer[OpStatus]
    queues: _containers.RepeatedCompositeFieldContainer[QueueCounts]
    replication: str
    security: str
    standbys: _containers.RepeatedCompositeFieldContainer[StandbyInfo]
    total_operations: int
    unplaceable: _containers.RepeatedCompositeFieldContainer[Unplaceable]
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueCounts, _Mapping]]] = ..., ops: _Optional[_Iterable[_Union[OpStatus, _Mapping]]] = ..., next_after: _Optional[str] = ..., not_found: _Optional[_Iterable[str]] = ..., now_us: _Optional[int] = ..., fenced: _Optional[int] = ..., total_operations: _Optional[int] = ..., coordinator_rss_bytes: _Optional[int] = ..., coordinator_cpu_us: _Optional[int] = ..., unplaceable: _Optional[_Iterable[_Union[Unplaceable, _Mapping]]] = ..., omitted: _Optional[_Iterable[str]] = ..., matched: _Optional[int] = ..., security: _Optional[str] = ..., auth_failures: _Optional[int] = ..., epoch: _Optional[int] = ..., standbys: _Optional[_Iterable[_Union[StandbyInfo, _Mapping]]] = ..., replication: _Optional[str] = ...) -> None: ...

class Story(_message.Message):
    __slots__ = ["op_id", "run"]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    op_id: str
    run: str
    def __init__(self, op_id: _Optional[str] = ..., run: _Optional[str] = ...) -> None: ...

class StoryEntry(_message.Message):
    __slots__ = ["at_us", "attempt", "detail", "event", "part", "stimulus", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_US_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    STIMULUS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    at_us: int
    attempt: int
    detail: str
    event: str
    part: int
    stimulus: int
    worker_id: str
    def __init__(self, stimulus: _Optional[int] = ..., at_us: _Optional[int] = ..., event: _Optional[str] = ..., part: _Optional[int] = ..., attempt: _Optional[int] = ..., worker_id: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class StoryReply(_message.Message):
    __slots__ = ["entries", "epoch", "op_id", "run", "truncated"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[StoryEntry]
    epoch: int
    op_id: str
    run: str
    truncated: bool
    def __init__(self, op_id: _Optional[str] = ..., run: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[StoryEntry, _Mapping]]] = ..., truncated: bool = ..., epoch: _Optional[int] = ...) -> None: ...

class Submit(_message.Message):
    __slots__ = ["append", "operations", "queues", "run", "submission_key", "submitter"]
    APPEND_FIELD_NUMBER: _ClassVar[int]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_KEY_FIELD_NUMBER: _ClassVar[int]
    SUBMITTER_FIELD_NUMBER: _ClassVar[int]
    append: bool
    operations: _containers.RepeatedCompositeFieldContainer[Operation]
    queues: _containers.RepeatedCompositeFieldContainer[QueueSettings]
    run: str
    submission_key: str
    submitter: str
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueSettings, _Mapping]]] = ..., operations: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., run: _Optional[str] = ..., append: bool = ..., submitter: _Optional[str] = ..., submission_key: _Optional[str] = ...) -> None: ...

class SubmitError(_message.Message):
    __slots__ = ["field", "message", "op_id", "problem", "related"]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    RELATED_FIELD_NUMBER: _ClassVar[int]
    field: str
    message: str
    op_id: str
    problem: SubmitProblem
    related: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, op_id: _Optional[str] = ..., problem: _Optional[_Union[SubmitProblem, str]] = ..., field: _Optional[str] = ..., message: _Optional[str] = ..., related: _Optional[_Iterable[str]] = ...) -> None: ...

class SubmitReply(_message.Message):
    __slots__ = ["accepted", "accepted_count", "duplicate", "epoch", "errors", "run", "unplaceable", "workers"]
    ACCEPTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    UNPLACEABLE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    accepted_count: int
    duplicate: bool
    epoch: int
    errors: _containers.RepeatedCompositeFieldContainer[SubmitError]
    run: str
    unplaceable: _containers.RepeatedCompositeFieldContainer[Unplaceable]
    workers: int
    def __init__(self, accepted: bool = ..., accepted_count: _Optional[int] = ..., errors: _Optional[_Iterable[_Union[SubmitError, _Mapping]]] = ..., unplaceable: _Optional[_Iterable[_Union[Unplaceable, _Mapping]]] = ..., workers: _Optional[int] = ..., run: _Optional[str] = ..., duplicate: bool = ..., epoch: _Optional[int] = ...) -> None: ...

class Unplaceable(_message.Message):
    __slots__ = ["kind", "missing_tags", "no_worker_kind", "op_count", "op_ids", "requires"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MISSING_TAGS_FIELD_NUMBER: _ClassVar[int]
    NO_WORKER_KIND_FIELD_NUMBER: _ClassVar[int]
    OP_COUNT_FIELD_NUMBER: _ClassVar[int]
    OP_IDS_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_FIELD_NUMBER: _ClassVar[int]
    kind: str
    missing_tags: _containers.RepeatedScalarFieldContainer[str]
    no_worker_kind: bool
    op_count: int
    op_ids: _containers.RepeatedScalarFieldContainer[str]
    requires: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[str] = ..., requires: _Optional[_Iterable[str]] = ..., missing_tags: _Optional[_Iterable[str]] = ..., no_worker_kind: bool = ..., op_ids: _Optional[_Iterable[str]] = ..., op_count: _Optional[int] = ...) -> None: ...

class Wait(_message.Message):
    __slots__ = ["op_ids", "queue", "run", "timeout_us", "with_results"]
    OP_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_US_FIELD_NUMBER: _ClassVar[int]
    WITH_RESULTS_FIELD_NUMBER: _ClassVar[int]
    op_ids: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    run: str
    timeout_us: int
    with_results: bool
    def __init__(self, op_ids: _Optional[_Iterable[str]] = ..., queue: _Optional[str] = ..., timeout_us: _Optional[int] = ..., with_results: bool = ..., run: _Optional[str] = ...) -> None: ...

class WaitReply(_message.Message):
    __slots__ = ["cancelled_count", "epoch", "failed_count", "finished", "not_found", "outcomes", "pending", "pending_count", "results_omitted", "succeeded_count", "timed_out"]
    CANCELLED_COUNT_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    FAILED_COUNT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    NOT_FOUND_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    PENDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    RESULTS_OMITTED_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    cancelled_count: int
    epoch: int
    failed_count: int
    finished: bool
    not_found: _containers.RepeatedScalarFieldContainer[str]
    outcomes: _containers.RepeatedCompositeFieldContainer[OpOutcome]
    pending: _containers.RepeatedScalarFieldContainer[str]
    pending_count: int
    results_omitted: _containers.RepeatedScalarFieldContainer[str]
    succeeded_count: int
    timed_out: bool
    def __init__(self, finished: bool = ..., timed_out: bool = ..., outcomes: _Optional[_Iterable[_Union[OpOutcome, _Mapping]]] = ..., pending: _Optional[_Iterable[str]] = ..., not_found: _Optional[_Iterable[str]] = ..., succeeded_count: _Optional[int] = ..., failed_count: _Optional[int] = ..., cancelled_count: _Optional[int] = ..., pending_count: _Optional[int] = ..., results_omitted: _Optional[_Iterable[str]] = ..., epoch: _Optional[int] = ...) -> None: ...

class Watch(_message.Message):
    __slots__ = ["op_ids", "progress", "queue", "run", "stop", "with_results"]
    OP_IDS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    WITH_RESULTS_FIELD_NUMBER: _ClassVar[int]
    op_ids: _containers.RepeatedScalarFieldContainer[str]
    progress: bool
    queue: str
    run: str
    stop: bool
    with_results: bool
    def __init__(self, op_ids: _Optional[_Iterable[str]] = ..., queue: _Optional[str] = ..., stop: bool = ..., with_results: bool = ..., progress: bool = ..., run: _Optional[str] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ["epoch", "heartbeat_interval_ms", "liveness", "worker_id"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    LIVENESS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    heartbeat_interval_ms: int
    liveness: int
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., heartbeat_interval_ms: _Optional[int] = ..., liveness: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class Why(_message.Message):
    __slots__ = ["op_id", "run"]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    op_id: str
    run: str
    def __init__(self, op_id: _Optional[str] = ..., run: _Optional[str] = ...) -> None: ...

class WhyReply(_message.Message):
    __slots__ = ["cancelled", "epoch", "op_id", "reasons", "run", "state", "waiting_on"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WAITING_ON_FIELD_NUMBER: _ClassVar[int]
    cancelled: bool
    epoch: int
    op_id: str
    reasons: _containers.RepeatedScalarFieldContainer[str]
    run: str
    state: OpState
    waiting_on: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, op_id: _Optional[str] = ..., state: _Optional[_Union[OpState, str]] = ..., cancelled: bool = ..., waiting_on: _Optional[_Iterable[str]] = ..., reasons: _Optional[_Iterable[str]] = ..., run: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ["connected_us", "credit", "in_flight", "key_name", "kinds", "last_seen_us", "name", "running", "session", "slots", "tags", "worker_id"]
    CONNECTED_US_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    KEY_NAME_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_US_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    connected_us: int
    credit: int
    in_flight: int
    key_name: str
    kinds: _containers.RepeatedScalarFieldContainer[str]
    last_seen_us: int
    name: str
    running: int
    session: int
    slots: int
    tags: _containers.RepeatedScalarFieldContainer[str]
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., name: _Optional[str] = ..., slots: _Optional[int] = ..., tags: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[str]] = ..., in_flight: _Optional[int] = ..., credit: _Optional[int] = ..., connected_us: _Optional[int] = ..., last_seen_us: _Optional[int] = ..., running: _Optional[int] = ..., session: _Optional[int] = ..., key_name: _Optional[str] = ...) -> None: ...

class Workers(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class WorkersReply(_message.Message):
    __slots__ = ["epoch", "security", "workers"]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    SECURITY_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    security: str
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    def __init__(self, workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., security: _Optional[str] = ..., epoch: _Optional[int] = ...) -> None: ...

class QoS(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OpState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DependencyPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ShareMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class KeyStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SubmitProblem(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
