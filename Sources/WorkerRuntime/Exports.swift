// Handler authors write `import WorkerRuntime` only: the dispatch record and the context use
// OpSpec's priority, QoS, outcome and payload types.
@_exported import OpSpec
