"""A cancellation flag that can also wake whoever waits on something else.

``Cancel`` is a ``threading.Event`` (so ``is_set``/``wait`` work as usual)
whose ``set`` also runs callbacks registered with ``on_set``.  The client
session registers the wake-up of a pending request, so a cancelled call is
noticed at once instead of by polling the flag.
"""

import threading
from typing import Callable, List


class Cancel(threading.Event):
    """An Event that calls its ``on_set`` callbacks once, when it is first set."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: List[Callable[[], None]] = []
        self._callbacks_lock = threading.Lock()

    def set(self) -> None:
        with self._callbacks_lock:
            if self.is_set():
                return
            super().set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the flag is set (now, if it already is); return an unsubscribe function."""
        with self._callbacks_lock:
            if not self.is_set():
                self._callbacks.append(callback)
                added = True
            else:
                added = False
        if not added:
            callback()

        def remove() -> None:
            with self._callbacks_lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove
