"""SIGTERM and SIGHUP end a run the way Ctrl-C does: the probing stops, what was measured is
summarised, the simulator is stopped and the manifest says `interrupted`, with `stopped_by`
naming the first signal (SIGINT for Ctrl-C)."""
from __future__ import annotations

import contextlib
import signal
import threading

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interrupt_on_signals(signals=SIGNALS):
    """Within the block, the first of `signals` raises KeyboardInterrupt in the main thread;
    later ones are ignored while the run closes. SIGINT (Ctrl-C) is recorded too and raises
    KeyboardInterrupt each time, as Python's own handler does (a second Ctrl-C cuts the
    closing summary short). Yields the list of signal names received."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum, frame):
        first = not received
        received.append(signal.Signals(signum).name)
        if first or signum == signal.SIGINT:
            raise KeyboardInterrupt(received[0])

    watched = (*signals, signal.SIGINT) if signal.getsignal(signal.SIGINT) is \
        signal.default_int_handler else signals
    old = {s: signal.signal(s, handler) for s in watched}
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)
