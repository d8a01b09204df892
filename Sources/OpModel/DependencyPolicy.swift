/// When a dependent may run: after its dependencies *finish* (OperationQueue's rule, the
/// default) or only after they all *succeed* (otherwise it is cancelled).
public enum DependencyPolicy: String, Sendable, Hashable, CaseIterable, Codable {
    case finished
    case succeeded

    public static let allNames = allCases.map(\.rawValue)
}
