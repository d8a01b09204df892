"""The package's examples against a real cluster."""
from __future__ import annotations

import subprocess
import sys

from conftest import HERE, Cluster

EXAMPLES = HERE.parent / "examples"


def test_typed_swift_operations_from_python_each_way(cluster: Cluster) -> None:
    # Swift handles the typed ops (example-worker), Python the op that depends on them.
    swift = cluster.launch([str(cluster.bin / "example-worker"), "--connect", cluster.endpoint, "--name", "swift-typed",
                            "--slots", "2"], "swift-typed")
    cluster.wait_registered("swift-typed", swift)
    r = subprocess.run([sys.executable, str(EXAMPLES / "typed_interop.py"), "client", cluster.endpoint],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr + cluster.logs()
    assert r.stdout.endswith("OK\n") and "'countTooSmall': {'_0': 0}" in r.stdout, r.stdout
    # Python handles the typed kinds: what a Swift client would submit, as its JSON form.
    swift.kill()
    swift.wait(10)
    cluster.python_worker_script([str(EXAMPLES / "typed_interop.py"), "worker", cluster.endpoint], "py-typed-interop")
    c = cluster.admin()
    run = c.run()
    ok = run.add("SquareRoots", {"count": 4})
    bad = run.add("SquareRoots", {"count": 0})
    run.submit()
    assert abs(ok.result(timeout=30) - (0 + 1 + 2 ** 0.5 + 3 ** 0.5)) < 1e-9
    out = bad.outcome(timeout=30)
    assert out.error == 'count must be at least 1 (was 0)\nopq-typed/1 ' \
        '{"error":"failure","type":"SquareRootsError","value":{"countTooSmall":{"_0":0}}}'
