#!/usr/bin/env python3
"""What an open dashboard asks of opcoord's HTTP side, for the e2e benchmark (docs/BENCHMARKS.md "http"):
every second the summary (what /api/live pushes), a page of the operation table and /metrics, until
killed or --seconds pass. Prints the number of rounds and failed requests at the end."""
import sys, time, urllib.request

def main():
    base = sys.argv[1].rstrip("/")
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 600
    rounds = failures = 0
    deadline = time.monotonic() + 10
    while True:   # the HTTP side may still be starting
        try:
            urllib.request.urlopen(base + "/healthz", timeout=2).read()
            break
        except Exception:
            if time.monotonic() > deadline:
                print("the HTTP side did not answer within 10 s", flush=True)
                sys.exit(1)
            time.sleep(0.05)
    print("ready", flush=True)
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            start = time.monotonic()
            for path in ("/api/summary", "/api/ops?limit=200", "/metrics"):
                try:
                    urllib.request.urlopen(base + path, timeout=10).read()
                except Exception:
                    failures += 1
            rounds += 1
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
    except KeyboardInterrupt:
        pass
    print(f"rounds={rounds} failures={failures}", flush=True)

if __name__ == "__main__":
    main()
