import DistributedOperationWorker
import TypedTestOperations

// opworker plus the typed test operations, in one line (what a user's worker looks like).
try await OpWorker.main(operations: typedTestWorkerOperations)
