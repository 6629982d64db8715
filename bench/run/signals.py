"""SIGTERM and SIGHUP end a run the way Ctrl-C does: the probing stops, what was measured is
summarised, the simulator is stopped and the manifest says `interrupted`."""
from __future__ import annotations

import contextlib
import signal
import threading

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interrupt_on_signals(signals=SIGNALS):
    """Within the block, the first of `signals` raises KeyboardInterrupt in the main thread;
    later ones are ignored while the run closes. Yields the list of signal names received."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum, frame):
        first = not received
        received.append(signal.Signals(signum).name)
        if first:
            raise KeyboardInterrupt(received[0])

    old = {s: signal.signal(s, handler) for s in signals}
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)
