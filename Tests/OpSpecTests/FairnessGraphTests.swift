import OpModel
import OpSpec
import Testing

/// A graph file's fair-share fields (A11, docs/GRAPHS.md): read into the specs, each mistake named with its
/// line and field.
@Suite struct FairnessGraphTests {
    @Test func queueAndOperationFieldsAreRead() throws {
        let graph = try GraphFile.parse("""
            queues:
              - name: shared
                share: key
                weights: {team-a: 3, team-b: 1}
                keyLimit: 2
                keyStrategy: cancel-in-progress
                rate: 30/m
                burst: 5
              - {name: plain, maxConcurrent: 2}
              - {name: fast, rate: 100}
            operations:
              - {id: a, kind: noop, queue: shared, share: customer-42, concurrencyKey: "customer-42"}
              - {id: b, kind: noop, queue: plain}
            """)
        #expect(graph.queues[0].fairness == QueueFairness(share: .key, weights: ["team-a": 3, "team-b": 1], keyLimit: 2,
                                                          keyStrategy: .cancelInProgress, rate: RateLimit(perSecond: 0.5, burst: 5)))
        #expect(graph.queues[1].fairness == nil, "no fair-share field: keep the queue's settings")
        #expect(graph.queues[2].fairness == QueueFairness(rate: RateLimit(perSecond: 100)))
        #expect(graph.operations[0].share == "customer-42" && graph.operations[0].concurrencyKey == "customer-42")
        #expect(graph.operations[1].share == nil && graph.operations[1].concurrencyKey == nil)
    }

    @Test func keyRateAndKeyBurstAreRead() throws {
        let graph = try GraphFile.parse("""
            queues:
              - {name: a, keyLimit: 2, keyRate: 10/s, keyBurst: 3}
              - {name: b, keyBurst: 4, keyRate: 30/m, rate: 5}
              - {name: c, keyRate: 2}
            operations:
              - {id: x, kind: noop, queue: a, concurrencyKey: k}
            """)
        #expect(graph.queues[0].fairness == QueueFairness(keyLimit: 2, keyRate: RateLimit(perSecond: 10, burst: 3)))
        #expect(graph.queues[1].fairness == QueueFairness(rate: RateLimit(perSecond: 5), keyRate: RateLimit(perSecond: 0.5, burst: 4)))
        #expect(graph.queues[2].fairness == QueueFairness(keyRate: RateLimit(perSecond: 2)))
        let found = problems("""
            queues:
              - {name: q, keyBurst: 3}
              - {name: r, keyRate: 5/d, keyBurst: 0}
              - {name: s, rate: 1/s, keyBurst: 2}
            operations:
              - {id: x, kind: noop, queue: q}
            """)
        #expect(found.map(\.description) == [
            "queues[0] \"q\", field keyBurst (line 2): keyBurst needs a keyRate: (keyRate: 10/s, keyBurst: 3)",
            "queues[1] \"r\", field keyRate (line 3): unknown rate unit \"/d\" in \"5/d\" (use /s, /m or /h)",
            "queues[1] \"r\", field keyBurst (line 3): must be 1 to 1000000, got 0",
            "queues[2] \"s\", field keyBurst (line 4): keyBurst needs a keyRate: (keyRate: 10/s, keyBurst: 2)",
        ])
    }

    @Test func mistakesNameTheLineAndField() {
        let found = problems("""
            queues:
              - name: q
                share: teams
                weights: {team-a: 0, team-b: 1001}
                keyLimit: -1
                keyStrategy: newest
                rate: 5/d
              - {name: r, burst: 3}
              - {name: s, rate: 0/s, weights: [a]}
            operations:
              - {id: a, kind: noop, queue: q, share: "", concurrencyKey: [x]}
            """)
        #expect(found.map(\.description) == [
            "queues[0] \"q\", field share (line 3): unknown share mode \"teams\" (known: submitter, run, key, fifo)",
            "queues[0] \"q\", field weights.team-a (line 4): must be 1 to 1000, got 0",
            "queues[0] \"q\", field weights.team-b (line 4): must be 1 to 1000, got 1001",
            "queues[0] \"q\", field keyLimit (line 5): must be 0 (no limit) or more, got -1",
            "queues[0] \"q\", field keyStrategy (line 6): unknown key strategy \"newest\" (known: wait, cancel-newest, cancel-in-progress)",
            "queues[0] \"q\", field rate (line 7): unknown rate unit \"/d\" in \"5/d\" (use /s, /m or /h)",
            "queues[1] \"r\", field burst (line 8): burst needs a rate: (rate: 100/s, burst: 3)",
            "queues[2] \"s\", field rate (line 9): must be more than 0 and at most 1000000/s, got \"0/s\"",
            "queues[2] \"s\", field weights (line 9): expected a mapping of share keys to weights (weights: {team-a: 3}), got a list",
            "operations[0] \"a\", field share (line 11): must not be empty (leave share out for none)",
            "operations[0] \"a\", field concurrencyKey (line 11): expected a string, got a list",
        ])
    }

    /// Keys as templates (issue 28 item 3): `{payload.PATH}`, `{env.NAME}` of a shell operation, `{id}`.
    @Test func keyTemplatesTakeTheirValuesFromTheOperation() throws {
        let graph = try GraphFile.parse("""
            operations:
              - id: a
                kind: resize
                payload: {customer: 42, order: {region: eu}}
                concurrencyKey: "customer-{payload.customer}"
                share: "{payload.order.region}/{id}"
              - {id: b, command: "true", env: {TENANT: acme}, concurrencyKey: "{env.TENANT}"}
              - {id: c, kind: noop, concurrencyKey: plain-key}
            """)
        #expect(graph.operations[0].concurrencyKey == "customer-42")
        #expect(graph.operations[0].share == "eu/a")
        #expect(graph.operations[1].concurrencyKey == "acme")
        #expect(graph.operations[2].concurrencyKey == "plain-key")
        let found = problems("""
            operations:
              - {id: a, kind: resize, payload: {customer: 42}, concurrencyKey: "{payload.tenant}"}
              - {id: b, kind: resize, payload: [1, 2], concurrencyKey: "{payload.x}"}
              - {id: c, kind: resize, payload: {o: {x: 1}}, concurrencyKey: "{payload.o}"}
              - {id: d, kind: noop, concurrencyKey: "{env.X}"}
              - {id: e, command: "true", env: {A: "1"}, concurrencyKey: "{env.B}"}
              - {id: f, kind: noop, share: "{user}"}
              - {id: g, kind: noop, share: "a}b"}
              - {id: h, kind: resize, payload: {k: ""}, concurrencyKey: "{payload.k}"}
            """)
        #expect(found.map(\.description) == [
            "operations[0] \"a\", field concurrencyKey (line 2): names {payload.tenant}, but the payload has no field tenant",
            "operations[1] \"b\", field concurrencyKey (line 3): names {payload.x}, but the operation's payload is not a mapping",
            "operations[2] \"c\", field concurrencyKey (line 4): names {payload.o}, which is a mapping, not a scalar",
            "operations[3] \"d\", field concurrencyKey (line 5): names {env.X}, but the operation has no env (env is for shell operations)",
            "operations[4] \"e\", field concurrencyKey (line 6): names {env.B}, but env has no B",
            "operations[5] \"f\", field share (line 7): has an unknown placeholder {user} (known: {payload.FIELD}, {env.NAME}, {id})",
            "operations[6] \"g\", field share (line 8): has an unmatched brace in \"a}b\" (braces are reserved for {payload.FIELD}, {env.NAME} and {id})",
            "operations[7] \"h\", field concurrencyKey (line 9): \"{payload.k}\" expands to an empty key",
        ])
    }

    @Test func ageingIsReadInEachUnitAndItsBoundsAreChecked() throws {
        let graph = try GraphFile.parse("""
            queues:
              - {name: a, ageing: 30s}
              - {name: b, ageing: 250ms, rate: 10/s}
              - {name: c, ageing: 2}
            operations:
              - {id: x, kind: noop, queue: a}
            """)
        #expect(graph.queues.map { $0.fairness?.ageingMicros } == [30_000_000, 250_000, 2_000_000])
        #expect(graph.queues[1].fairness?.rate == RateLimit(perSecond: 10))
        let found = problems("""
            queues:
              - {name: q, ageing: 0.5ms}
              - {name: r, ageing: 2d}
            operations:
              - {id: x, kind: noop, queue: q}
            """)
        #expect(found.map(\.description) == [
            "queues[0] \"q\", field ageing (line 2): must be 1ms to 24h, got \"0.5ms\"",
            "queues[1] \"r\", field ageing (line 3): expected a period like 500ms, 30s, 5m or 1h, got \"2d\"",
        ])
        #expect(try AgeingText.micros("5m").get() == 300_000_000 && (try AgeingText.micros("1h").get()) == 3_600_000_000)
        #expect(AgeingText.text(30_000_000) == "30s" && AgeingText.text(1_500_000) == "1500ms" && AgeingText.text(7_200_000_000) == "2h")
    }

    @Test func ratesInEachUnitAndBack() throws {
        #expect(try RateText.perSecond("100/s").get() == 100)
        #expect(try RateText.perSecond("120/m").get() == 2)
        #expect(try RateText.perSecond(" 36 / h ").get() == 0.01)
        #expect(try RateText.perSecond("2.5").get() == 2.5)
        #expect(throws: RateText.Problem.self) { try RateText.perSecond("fast").get() }
        #expect(RateText.text(100) == "100/s" && RateText.text(0.5) == "30/m" && RateText.text(1.0 / 3600) == "1/h")
    }
}
