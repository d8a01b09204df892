/// Names of the kinds every worker has without custom code.
public enum BuiltinKind {
    public static let shell = "shell"
    public static let sleep = "sleep"
    public static let noop = "noop"
    public static let echo = "echo"
    public static let fail = "fail"
    public static let burn = "burn"
    public static let all = [shell, sleep, noop, echo, fail, burn]
}
