/// The connection options (`Connection`) are declared on each subcommand, where swift-argument-parser
/// wants them; people also write them before the subcommand (`opctl --coordinator X runs`), as with
/// git or kubectl. Those are moved to just after the subcommand's name before parsing, so both orders
/// mean the same; one given again after the subcommand wins (it comes later).
enum GlobalOptions {
    /// The `Connection` options, each taking one value.
    static let names: Set<String> = ["--coordinator", "--request-timeout", "--key", "--coordinator-key"]

    /// `args` (without the program name) with the connection options that precede the first
    /// subcommand moved after it. Anything else before the subcommand (`--help`, an unknown option, an
    /// option without its value) is left where it is, for the parser to handle or refuse.
    static func hoisted(_ args: [String]) -> [String] {
        var leading: [String] = []
        var i = 0
        while i < args.count, args[i].hasPrefix("--") {
            let name = String(args[i].prefix { $0 != "=" })
            guard names.contains(name) else { return args }
            if args[i].contains("=") {
                leading.append(args[i]); i += 1
            } else {
                guard i + 1 < args.count else { return args }
                leading += [args[i], args[i + 1]]; i += 2
            }
        }
        guard !leading.isEmpty, i < args.count else { return args }
        return [args[i]] + leading + args[(i + 1)...]
    }
}
