"""Case runner shared by the Python gRPC clients of the e2e tests: each case prints "OK <name>"
or "FAIL <name>: <why>"; failures lists the failed ones."""
failures = []


def case(name, skip=False):
    def run(fn):
        if skip:
            return fn
        try:
            fn()
            print(f"OK {name}", flush=True)
        except Exception as e:  # noqa: BLE001
            failures.append(name)
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        return fn
    return run


def expect(cond, what):
    if not cond:
        raise AssertionError(what)
