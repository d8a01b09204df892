// `opworker`'s whole command line (--connect, --slots, --name, --tags, --key, --allow-kinds, …; see
// --help) plus your operations' kinds.
import DistributedOperationWorker
import MyOperations

try await OpWorker.main(operations: [CountWords.self])
