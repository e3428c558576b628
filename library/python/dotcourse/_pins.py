"""The registration cache: NumPy arrays passed again are pinned (see the package's docstring)."""
from __future__ import annotations

import collections
import threading
import weakref
from typing import Any, Dict, List, Tuple

PIN_MIN = 1 << 20  # bytes: below this a staged copy costs less than registering


class PinCache:
    """Arrays seen once (weak references: a candidate never keeps memory alive), and arrays
    registered with the library (strong references, in least-recently-used order)."""

    def __init__(self, core: Any, capacity: int, max_bytes: int) -> None:
        self.core = core  # the extension's Core: register(ptr, bytes) -> status, unregister(ptr) raises
        self.capacity, self.max_bytes = capacity, max_bytes
        self.lock = threading.Lock()
        self.entries: "collections.OrderedDict[Tuple[int, int], List[Any]]" = collections.OrderedDict()  # (ptr, nbytes) -> [array, uses]
        self.seen: "collections.OrderedDict[Tuple[int, int], Any]" = collections.OrderedDict()  # (ptr, nbytes) -> weakref to the array
        self.refused: "collections.OrderedDict[Tuple[int, int], Any]" = collections.OrderedDict()  # (ptr, nbytes) -> weakref: registration failed
        self.bytes = 0
        self.churn = 0  # registered arrays evicted after fewer than 4 uses
        self.stopped = False
        self.by_id: "Dict[int, Tuple[int, int]]" = {}  # id(array) -> its key in entries, for the registered arrays (see known)

    def known(self, a: Any) -> "int | None":
        """A registered array's data pointer, its use counted as see() counts it, without reading
        a.ctypes (about a microsecond per array); None for any other array. The entry holds the
        array, so its id is not reused and its data cannot move (ndarray.resize refuses an array
        with other references, unless told refcheck=False, which NumPy documents as unsafe)."""
        key = self.by_id.get(id(a))
        if key is None:
            return None
        entry = self.entries[key]
        entry[1] += 1
        self.entries.move_to_end(key)
        return int(key[0])

    def see(self, a: Any, ptr: int) -> None:
        if self.known(a) is not None:  # registered: one more use
            return
        key = (ptr, a.nbytes)
        entry = self.entries.get(key)
        if self.stopped or a.nbytes > self.max_bytes:
            return
        bad = self.refused.get(key)
        if bad is not None and bad() is a:
            return
        ref = self.seen.get(key)
        if ref is None or ref() is not a:  # first sighting (or another array at a reused address)
            self._note(key, a)
            return
        del self.seen[key]
        if entry is not None:  # a dead array's registration at the same address: drop it first
            self._evict(key)
        while self.entries and (len(self.entries) >= self.capacity or self.bytes + a.nbytes > self.max_bytes):
            self._evict(next(iter(self.entries)))
        if self.stopped:
            return
        if self.core.register(ptr, a.nbytes) != 0:
            self.refused[key] = weakref.ref(a)  # e.g. a page shared with a registered array: staged
            while len(self.refused) > 4 * self.capacity:
                self.refused.popitem(last=False)
            return
        self.entries[key] = [a, 1]
        self.by_id[id(a)] = key
        self.bytes += a.nbytes

    def second(self, a: Any, ptr: int) -> None:
        """`a`'s second sighting at ptr, the first having been noted by the extension's fast path
        (which keeps first sightings itself, so that a new array costs no Python call): registers
        it as see() registers an array seen before."""
        if self.known(a) is not None:
            return
        self._note((ptr, a.nbytes), a)
        self.see(a, ptr)

    def _note(self, key: Tuple[int, int], a: Any) -> None:
        """A first sighting: a weak reference, at most 4 x capacity of them, the oldest dropped."""
        self.seen[key] = weakref.ref(a)
        self.seen.move_to_end(key)
        while len(self.seen) > 4 * self.capacity:
            self.seen.popitem(last=False)

    def _evict(self, key: Tuple[int, int]) -> None:
        a, uses = self.entries.pop(key)
        del self.by_id[id(a)]
        self.bytes -= a.nbytes
        self.core.unregister(key[0])
        if uses < 4:
            self.churn += 1
            if self.churn >= 3:
                self.stopped = True  # the arrays rotate through more than the cache holds

    def clear(self) -> None:
        with self.lock:
            while self.entries:
                self._evict(next(iter(self.entries)))
            self.seen.clear()
            self.refused.clear()
            self.churn, self.stopped = 0, False
