"""What the Python test clients share: named cases, checks, the exit status.

A case prints "OK <name>" or "FAIL <name>: <why>"; finish() exits 1 if any failed.
"""
import sys

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


def expect_status(fn, code, what):
    """fn() must raise grpc.RpcError with this status code; returns the error."""
    import grpc
    try:
        fn()
    except grpc.RpcError as e:
        expect(e.code() == code, f"{what}: {e.code()} {e.details()!r}, want {code}")
        return e
    raise AssertionError(f"{what}: succeeded, want {code}")


def finish():
    sys.exit(1 if failures else 0)
