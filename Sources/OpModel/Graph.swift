/// A submission: queues to create or update, and operations.
public struct Graph: Sendable, Hashable {
    public var queues: [QueueSpec]
    public var operations: [OperationSpec]

    public init(queues: [QueueSpec] = [], operations: [OperationSpec] = []) {
        self.queues = queues
        self.operations = operations
    }
}
