// Handler authors write `import WorkerRuntime` only: the dispatch record and the context use
// the vocabulary's priority and QoS (OpModel, re-exported by OpSpec) and OpSpec's outcome and payload types.
@_exported import OpSpec
