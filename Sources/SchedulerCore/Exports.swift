// The core is fed the shared vocabulary (OpModel: OperationSpec, QueueSpec, QoS, priority, dependency
// policy); `import SchedulerCore` names it too, as it did before it moved there.
@_exported import OpModel
