import SchedulerCore
import WireProtocol

extension ReplyError {
    /// The wire code of each refusal cause: the one place a core refusal becomes an ERROR code.
    var wireCode: WireErrorCode {
        switch self {
        case .notFound: .notFound
        case .invalid: .invalidArgument
        }
    }
}
