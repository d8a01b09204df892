// What users write is the shared vocabulary (OpModel: OperationSpec, QueueSpec, Graph, QoS, priority,
// dependency policy, built-in kinds); `import OpSpec` names it too, as it did before it moved there.
@_exported import OpModel
