import OpSpec
import Testing

/// Parses `yaml`, expecting failure; returns the problems.
func problems(_ yaml: String) -> [GraphProblem] {
    do {
        _ = try GraphFile.parse(yaml, source: "test.yaml")
        Issue.record("expected the graph to be rejected")
        return []
    } catch {
        return error.problems
    }
}

/// The single problem of `yaml`.
func problem(_ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) -> GraphProblem? {
    let found = problems(yaml)
    #expect(found.count == 1, "\(found)", sourceLocation: sourceLocation)
    return found.first
}

@Suite struct GraphFileErrorTests {
    @Test func unknownFieldWithSuggestion() {
        let p = problem("""
            operations:
              - id: a
                kind: noop
                priorty: high
            """)
        #expect(p?.location == "operations[0] \"a\"")
        #expect(p?.field == "priorty")
        #expect(p?.line == 4)
        #expect(p?.message.hasPrefix("unknown field \"priorty\"; did you mean \"priority\"? (known: id, name, kind,") == true)
    }

    @Test func unknownTopLevelAndQueueFields() {
        let found = problems("""
            queues:
              - {name: q, maxConcurent: 2}
            operation: []
            operations:
              - {id: a, kind: noop, queue: q}
            """)
        #expect(found.map(\.description) == [
            "queues[0] \"q\", field maxConcurent (line 2): unknown field \"maxConcurent\"; did you mean \"maxConcurrent\"? (known: name, maxConcurrent, qos, suspended, share, weights, keyLimit, keyStrategy, rate, burst, keyRate, keyBurst, ageing)",
            "file, field operation (line 3): unknown field \"operation\"; did you mean \"operations\"? (known: queues, operations)",
        ])
    }

    @Test func wrongTypes() {
        let found = problems("""
            operations:
              - id: a
                kind: noop
                parts: two
                barrier: yes please
                after: b
                timeout: soon
                requires: [gpu, [nested]]
            """)
        #expect(found.map(\.description) == [
            "operations[0] \"a\", field parts (line 4): expected a whole number, got a string (\"two\")",
            "operations[0] \"a\", field barrier (line 5): expected true or false, got a string (\"yes please\")",
            "operations[0] \"a\", field after (line 6): expected a list of strings, got a string (\"b\")",
            "operations[0] \"a\", field timeout (line 7): expected a number of seconds, got a string (\"soon\")",
            "operations[0] \"a\", field requires[1] (line 8): expected a string, got a list",
        ])
    }

    @Test func invalidPriorityQoSAndPolicy() {
        let found = problems("""
            operations:
              - {id: a, kind: noop, priority: urgent}
              - {id: b, kind: noop, priority: 3}
              - {id: c, kind: noop, priority: hihg}
              - {id: d, kind: noop, qos: fast}
              - {id: e, kind: noop, policy: always}
            """)
        let expected = "expected one of veryLow, low, normal, high, veryHigh or -8, -4, 0, 4, 8"
        #expect(found.map(\.message) == [
            "invalid priority \"urgent\"; \(expected)",
            "invalid priority 3; \(expected)",
            "invalid priority \"hihg\"; \(expected); did you mean \"high\"?",
            "invalid qos \"fast\"; expected one of userInteractive, userInitiated, default, utility, background",
            "invalid policy \"always\"; expected finished or succeeded",
        ])
        #expect(found.map(\.field) == ["priority", "priority", "priority", "qos", "policy"])
    }

    @Test func negativeAndOutOfRangeNumbers() {
        let found = problems("""
            queues:
              - {name: q, maxConcurrent: -3}
            operations:
              - {id: a, kind: noop, queue: q, retries: -1, lossRetries: -2, parts: 0, timeout: -5}
              - {id: b, command: "true", grace: -1}
            """)
        #expect(found.map { "\($0.field ?? ""): \($0.message)" } == [
            "maxConcurrent: must be -1 (unlimited) or at least 1, got -3",
            "parts: must be at least 1, got 0",
            "retries: must not be negative, got -1",
            "lossRetries: must not be negative, got -2",
            "timeout: must be a positive number of seconds, got -5",
            "grace: must not be negative, got -1",
        ])
    }

    @Test func missingAndDuplicateIDs() {
        let found = problems("""
            operations:
              - {id: a, kind: noop}
              - {kind: noop}
              - {id: a, kind: echo}
            """)
        #expect(found.map(\.description) == [
            "operations[1], field id (line 3): missing id",
            "operations[2] \"a\", field id (line 4): duplicate id \"a\" (first at operations[0])",
        ])
    }

    @Test func unknownDependencies() {
        let found = problems("""
            operations:
              - {id: download, kind: noop}
              - {id: filter, kind: noop, after: [dowload, nothing-like-it, download, download]}
            """)
        #expect(found.map(\.description) == [
            "operations[1] \"filter\", field after[0] (line 3): unknown dependency \"dowload\"; did you mean \"download\"?",
            "operations[1] \"filter\", field after[1] (line 3): unknown dependency \"nothing-like-it\"",
            "operations[1] \"filter\", field after[3] (line 3): dependency \"download\" is listed twice",
        ])
    }

    @Test func cyclesNameTheirMembers() {
        let found = problems("""
            operations:
              - {id: a, kind: noop, after: [c]}
              - {id: b, kind: noop, after: [a]}
              - {id: c, kind: noop, after: [b]}
              - {id: d, kind: noop, after: [a]}
              - {id: self, kind: noop, after: [self]}
            """)
        #expect(found.map(\.description) == [
            "operations[0] \"a\", field after (line 2): dependency cycle: \"a\" → \"c\" → \"b\" → \"a\" (each runs after the next; none could ever start)",
            "operations[4] \"self\", field after (line 6): dependency cycle: \"self\" → \"self\" (each runs after the next; none could ever start)",
        ])
    }

    @Test func commandAndPayloadTogether() {
        let p = problem("""
            operations:
              - id: a
                command: echo hi
                payload: hello
            """)
        #expect(p?.description == "operations[0] \"a\", field command (line 4): has both command and payload; a shell operation's payload is built from command, env, cwd and grace, so give one of them")
    }

    @Test func commandWithAnotherKindAndShellFieldsWithoutCommand() {
        let found = problems("""
            operations:
              - {id: a, kind: echo, command: "echo hi"}
              - {id: b, kind: noop, env: {A: "1"}, cwd: /tmp}
              - {id: c}
            """)
        #expect(found.map(\.description) == [
            "operations[0] \"a\", field kind (line 2): command is only for kind shell, but kind is \"echo\"",
            "operations[1] \"b\", field env (line 3): env is only valid together with command",
            "operations[1] \"b\", field cwd (line 3): cwd is only valid together with command",
            "operations[2] \"c\", field kind (line 4): missing kind (or command, for a shell operation)",
        ])
    }

    @Test func builtinPayloadsAreChecked() {
        let found = problems("""
            operations:
              - {id: a, kind: sleep, payload: soon}
              - {id: b, kind: sleep, payload: -5}
              - {id: c, kind: shell, payload: "ls -l"}
              - {id: d, command: []}
            """)
        #expect(found.map(\.message) == [
            "sleep payload must be a whole number of milliseconds (e.g. 1500), got \"soon\"",
            "sleep payload: milliseconds must be ≥ 0, got -5",
            "shell payload is not valid JSON of the form {\"argv\": [...]} or {\"command\": \"...\"}: The given data was not valid JSON.",
            "argv list is empty or starts with an empty string",
        ].enumerated().map { $0.offset == 2 ? found[2].message : $0.element })
        #expect(found[2].message.hasPrefix("shell payload is not valid JSON"))
        #expect(found.count == 4)
    }

    @Test func burnPayloadIsCheckedLikeSleeps() {
        let found = problems("""
            operations:
              - {id: a, kind: burn, payload: hot}
              - {id: b, kind: burn, payload: 250}
            """)
        #expect(found.map(\.message) == ["burn payload must be a whole number of milliseconds (e.g. 1500), got \"hot\""])
    }

    @Test func undeclaredQueue() {
        let p = problem("""
            queues: [{name: io}]
            operations:
              - {id: a, kind: noop, queue: oi}
              - {id: b, kind: noop}
            """)
        #expect(p?.message == "queue \"oi\" is not declared under queues: (declared: io)")
    }

    @Test func everyProblemAtOnceInLineOrder() {
        let found = problems("""
            operations:
              - {id: a, kind: noop, priority: top}
              - {id: b, kind: noop, after: [zz]}
              - {id: a, kind: noop}
              - {id: c, kind: noop, retries: -1, colour: red}
            """)
        #expect(found.compactMap(\.line) == [2, 3, 4, 5, 5])
    }

    @Test func malformedFiles() {
        #expect(problem("operations: [ {id: a")?.message.hasPrefix("not valid YAML or JSON:") == true)
        #expect(problem("[1, 2]")?.description == "file (line 1): expected a mapping with queues: and operations:, got a list")
        #expect(problem("queues: []")?.message == "missing operations:")
        #expect(problem("")?.message == "the file is empty; expected a mapping with operations:")
        #expect(problem("operations: [5]")?.description == "operations[0] (line 1): expected a mapping (id:, kind:, …), got a whole number (5)")
        #expect(problem("{\"operations\": [{\"id\": \"a\", \"kind\": \"noop\", \"parts\": 1.5}]}")?.message
                    == "expected a whole number, got a number (1.5)")
    }

    @Test func duplicateKeysAndHugeNumbers() {
        let duplicate = problem("""
            operations:
              - id: a
                kind: noop
                id: b
            """)
        #expect(duplicate?.message == "a mapping has the same key twice: id")
        #expect(duplicate?.line != nil)
        #expect(problem("operations: [{id: a, kind: noop, retries: 99999999999999999999}]")?.message
                    == "number 99999999999999999999 is out of range")
    }

    @Test func unreadableFile() {
        do {
            _ = try GraphFile.load(path: "/nonexistent/graph.yaml")
            Issue.record("expected an error")
        } catch {
            #expect(error.source == "/nonexistent/graph.yaml")
            #expect(error.problems.first?.message.hasPrefix("cannot read") == true)
        }
    }
}

@Suite struct GraphFileValueTests {
    @Test func defaultsAndAllFields() throws {
        let graph = try GraphFile.parse("""
            queues:
              - {name: q, maxConcurrent: 3, qos: utility, suspended: true}
            operations:
              - {id: a, kind: noop}
              - id: 7
                name: seven
                kind: custom
                payload: {size: 3, tags: [x, "y"], on: true, ratio: 0.5, none: null}
                after: [a]
                priority: veryHigh
                qos: background
                queue: q
                parts: 4
                policy: succeeded
                retries: 2
                lossRetries: 0
                timeout: 1.5
                requires: [gpu, ssd]
                barrier: true
              - id: s
                command: [ls, -l]
                env: {LANG: C, N: 5}
                cwd: /tmp
                grace: 0.5
            """)
        #expect(graph.queues == [QueueSpec(name: "q", maxConcurrent: 3, qos: .utility, suspended: true)])
        #expect(graph.operations[0] == OperationSpec(id: "a", kind: "noop"))
        #expect(graph.operations[0].name == "a" && graph.operations[0].queue == "default" && graph.operations[0].lossRetries == 3)
        let seven = graph.operations[1]
        #expect(seven == OperationSpec(id: "7", name: "seven", queue: "q", kind: "custom",
                                       payload: Array(#"{"size":3,"tags":["x","y"],"on":true,"ratio":0.5,"none":null}"#.utf8),
                                       after: ["a"], priority: .veryHigh, qos: .background, parts: 4, policy: .succeeded,
                                       retries: 2, lossRetries: 0, timeout: 1.5, requires: ["gpu", "ssd"], barrier: true))
        #expect(graph.operations[2].kind == "shell")
        #expect(try ShellCommand.decode(graph.operations[2].payload)
                    == .argv(["ls", "-l"], env: ["LANG": "C", "N": "5"], cwd: "/tmp", grace: 0.5))
    }

    @Test func graphsBuiltInCodeAreValidatedToo() {
        let graph = Graph(operations: [
            OperationSpec(id: "a", kind: "noop", after: ["b"]),
            OperationSpec(id: "b", kind: "noop", after: ["a"], retries: -1),
        ])
        #expect(graph.problems().map(\.description) == [
            "operations[1] \"b\", field retries: must not be negative, got -1",
            "operations[0] \"a\", field after: dependency cycle: \"a\" → \"b\" → \"a\" (each runs after the next; none could ever start)",
        ])
        #expect(throws: GraphFileError.self) { try graph.validate() }
    }

    @Test func longChainsDoNotOverflow() {
        let n = 50_000
        var ops = (0..<n).map { OperationSpec(id: "op\($0)", kind: "noop", after: $0 == 0 ? [] : ["op\($0 - 1)"]) }
        #expect(Graph(operations: ops).problems().isEmpty)
        ops[0].after = ["op\(n - 1)"]
        let found = Graph(operations: ops).problems()
        #expect(found.count == 1 && found[0].message.hasPrefix("dependency cycle: \"op0\" → \"op49999\" → \"op49998\""))
    }
}

@Suite struct PayloadTests {
    @Test func shellCommandRoundTrips() throws {
        for command in [ShellCommand.argv(["a", "b c"], env: ["K": "V"], cwd: "/x", grace: 1.5), .script("echo $HOME | wc")] {
            #expect(try ShellCommand.decode(command.encoded()) == command)
        }
        #expect(String(decoding: ShellCommand.script("ls /").encoded(), as: UTF8.self) == #"{"command":"ls /"}"#)
        #expect(ShellCommand.script("x").commandLine == ["/bin/sh", "-c", "x"])
    }

    @Test func shellCommandErrors() {
        func message(_ json: String) -> String {
            do { _ = try ShellCommand.decode(Array(json.utf8)); return "ok" } catch { return error.description }
        }
        #expect(message(#"{"argv": ["a"], "command": "b"}"#) == "shell payload: give either argv or command, not both")
        #expect(message(#"{"env": {}}"#) == "shell payload: needs argv (a list) or command (a string)")
        #expect(message(#"{"argv": []}"#) == "shell payload: argv is empty")
        #expect(message(#"{"command": "x", "grace": -1}"#) == "shell payload: grace must be ≥ 0 seconds")
        #expect(message(#"{"argv": "ls"}"#).hasPrefix("shell payload is not valid JSON"))
    }

    @Test func sleepPayloads() throws {
        #expect(try SleepPayload.decode(Array(" 1500\n".utf8)).milliseconds == 1500)
        #expect(try SleepPayload.decode(Array(#"{"milliseconds": 20}"#.utf8)).milliseconds == 20)
        #expect(SleepPayload(milliseconds: 7).encoded() == Array("7".utf8))
        #expect(throws: PayloadError.self) { try SleepPayload.decode(Array("-1".utf8)) }
    }

    @Test func priorityAndQoSNames() {
        #expect(OperationPriority(name: "veryHigh") == .veryHigh && OperationPriority(name: "-4") == .low)
        #expect(OperationPriority(name: "3") == nil)
        #expect(OperationPriority.allCases.map(\.rawValue) == [-8, -4, 0, 4, 8])
        #expect(OperationQoS.allCases.map(\.niceLevel) == [0, 2, 5, 10, 19])
        #expect(OperationQoS.userInteractive > .background)
    }
}
