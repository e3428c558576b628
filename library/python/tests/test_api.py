"""The package as its users meet it, without a GPU and without the library: the public names, the
version, the Status enum and the exceptions, integer arguments, and every bad input of every
producer (NumPy, __array_interface__, __cuda_array_interface__, DLPack versioned and legacy), each
refused with one wording. A stand-in library records what would reach the C API."""
import ctypes
import pathlib
import pickle
import re

import numpy as np
import pytest

import dotcourse
from dotcourse import Status, _arrays

# ---- the public surface ------------------------------------------------------------------------


def test_public_names_and_nothing_else():
    for name in dotcourse.__all__:
        assert hasattr(dotcourse, name), name
    public = {n for n in dir(dotcourse) if not n.startswith("_")}
    assert public <= set(dotcourse.__all__), f"public but not in __all__: {public - set(dotcourse.__all__)}"
    for helper in ("os", "sys", "ctypes", "pathlib", "threading", "collections", "weakref"):
        assert helper not in dir(dotcourse), f"dir(dotcourse) shows the module {helper}"
    assert dotcourse.TooLargeError.__module__ == "dotcourse"


def test_typed_package():
    assert (pathlib.Path(dotcourse.__file__).parent / "py.typed").is_file(), "py.typed missing (PEP 561)"
    assert dotcourse.Context.dot.__annotations__, "Context.dot has no type hints"
    stubs = sorted(pathlib.Path(dotcourse.__file__).parent.glob("_core.pyi"))
    assert stubs and "def dot(" in stubs[0].read_text(), "the extension's type stub (_core.pyi) is missing"


def test_version_is_the_one_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", dotcourse.__version__), dotcourse.__version__
    source = pathlib.Path(__file__).resolve().parents[2] / "packaging" / "version.cmake"
    if source.is_file():  # the repository's one version
        found = re.search(r"set\(DOTCOURSE_VERSION ([^)]+)\)", source.read_text())
        assert found and found.group(1) == dotcourse.__version__
    try:
        import importlib.metadata as md
        installed = md.version("dotcourse")
    except Exception:  # noqa: BLE001 - not installed: used from the source folder
        installed = None
    if installed is not None and "site-packages" in dotcourse.__file__:
        assert installed == dotcourse.__version__


def test_an_installed_package_never_looks_into_build(monkeypatch, tmp_path):
    monkeypatch.delenv("DOTCOURSE_LIB", raising=False)
    here = pathlib.Path(dotcourse.__file__).resolve().parent
    found = dotcourse.library_path()
    if dotcourse._lib._source_tree_root() is None:  # installed (ci_wheel.sh): the wheel's own library
        assert found == here / "libdotcourse.so", f"an installed package took {found}"
    else:
        assert found is None or found == here / "libdotcourse.so" or "build" in found.parts
    monkeypatch.setenv("DOTCOURSE_LIB", str(tmp_path / "elsewhere.so"))
    assert dotcourse.library_path() == tmp_path / "elsewhere.so"


def test_the_source_tree_is_recognised_only_as_such(monkeypatch, tmp_path):
    fake_pkg = tmp_path / "site-packages" / "dotcourse"
    fake_pkg.mkdir(parents=True)
    monkeypatch.setattr(dotcourse._lib, "_HERE", fake_pkg)
    assert dotcourse._lib._source_tree_root() is None
    monkeypatch.delenv("DOTCOURSE_LIB", raising=False)
    assert dotcourse.library_path() is None
    with pytest.raises(OSError, match="libdotcourse.so not found"):
        monkeypatch.setattr(dotcourse._lib, "_lib", None)
        dotcourse._lib.load()


def test_docstrings_are_numpydoc_and_not_float32_only():
    for fn in (dotcourse.Context, dotcourse.Context.dot, dotcourse.check_host_arrays):
        doc = fn.__doc__ or ""
        for section in ("Parameters", "Raises"):
            assert f"{section}\n" in doc, f"{fn.__qualname__}: no {section} section"
        assert "float64" in doc or fn is dotcourse.Context
    assert "Returns\n" in dotcourse.Context.dot.__doc__


def test_status_enum_matches_the_header():
    # The library's public header (library/include/dotcourse/dotcourse.h, beside python/).
    header = pathlib.Path(__file__).resolve().parents[2] / "include" / "dotcourse" / "dotcourse.h"
    if not header.is_file():
        pytest.skip("dotcourse.h is not in the repository around the tests (installed package)")
    text = header.read_text()
    for status in Status:
        name = "DOTCOURSE_OK" if status is Status.OK else f"DOTCOURSE_ERROR_{status.name}"
        assert re.search(rf"{name} = {int(status)}\b", text), f"{name} = {int(status)} not in dotcourse.h"
    for code, name in _arrays.DTYPE_NAMES.items():
        assert re.search(rf"DOTCOURSE_{name.upper()} = {code}\b", text), name


@pytest.mark.parametrize("status, cls, bases", [
    (Status.INVALID_ARGUMENT, dotcourse.InvalidArgumentError, (ValueError,)),
    (Status.TOO_LARGE, dotcourse.TooLargeError, (ValueError,)),
    (Status.INVALID_HANDLE, dotcourse.InvalidHandleError, (ValueError,)),
    (Status.NO_GPU, dotcourse.NoGpuError, ()),
    (Status.OUT_OF_MEMORY, dotcourse.OutOfMemoryError, (MemoryError,)),
    (Status.CUDA, dotcourse.CudaError, ()),
    (Status.INTERNAL, dotcourse.InternalError, ()),
])
def test_each_status_has_its_exception(status, cls, bases):
    e = dotcourse._errors.error_for(int(status), "what happened")
    assert type(e) is cls and isinstance(e, dotcourse.DotcourseError)
    for base in bases:
        assert isinstance(e, base)
    assert e.status is status and e.message == "what happened"
    assert str(e) == f"dotcourse {status.name}: what happened"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is cls and back.status is status and back.message == "what happened"


def test_unknown_status_is_kept():
    e = dotcourse._errors.error_for(99, "new")
    assert type(e) is dotcourse.DotcourseError and e.status == 99 and "99" in str(e)


# ---- integer arguments --------------------------------------------------------------------------

class FakeLib:
    """Stands in for the compiled extension with its library open: records each C call it would make
    and answers OK (or raises `fail`'s status as the extension does). Its Core has no fast path:
    every dot takes the package's Python route (_dot_any), whose checks these tests read."""

    def __init__(self):
        self.calls = []
        self.fail = {}  # function name -> (status, message)
        lib = self

        class Core:
            def __init__(self, owner, device, n_max, cpu_threads):
                lib._call("create", device, n_max)
                self.owner, self.closed, self.n_max, self.record = owner, False, n_max, None

            def dot(self, x, y, where="auto"):
                codes = {"auto": 0, "cpu": 1, "gpu": 2}
                if type(where) is not str or where not in codes:
                    raise ValueError(f"where must be 'auto', 'cpu' or 'gpu', not {where!r}")
                if self.closed:
                    raise dotcourse._errors.closed()
                return self.owner._dot_any(x, y, codes[where])

            def dot_ptr(self, px, py, n, code):
                lib._call("dot", px, py, n)
                return 0.0

            def dot_device(self, px, py, n, stream):
                lib._call("dot_device", px, py, n, stream)
                return 0.0

            def dot_typed(self, px, tx, py, ty, n, stream):
                lib._call("dot_typed", px, tx, py, ty, n, stream)
                return 7.0

            def dot_typed_host(self, px, tx, py, ty, n):
                lib._call("dot_typed_host", px, tx, py, ty, n)
                return 7.0

            def register(self, p, nbytes):
                lib.calls.append(("register", p, nbytes))
                return 0

            def unregister(self, p):
                lib._call("unregister", p)

            def get_plan(self):
                lib._call("get_plan")
                return (False, 1, "", [])

            def set_fast(self, numpy_from, numpy_below, pin_from, pins):
                pass

            def set_last(self, call):
                self.record = call

            def last(self):
                return self.record

            def close(self):
                self.closed = True
                lib._call("destroy")

        self.Core = Core

    def _call(self, name, *args):
        self.calls.append((name,) + args)
        status, message = self.fail.get(name, (0, ""))
        if status:
            raise dotcourse._errors.error_for(status, message)

    def accumulator(self, tx, ty):
        ints = (_arrays.INT8, _arrays.BOOL)
        return _arrays.INT64 if tx in ints and ty in ints else (
            _arrays.FLOAT64 if _arrays.FLOAT64 in (tx, ty) else _arrays.FLOAT32)

    def last_error(self):
        return ""

    def status_string(self, status):
        return "status"


@pytest.fixture
def fake(monkeypatch):
    lib = FakeLib()
    monkeypatch.setattr(dotcourse._lib, "load", lambda: lib)
    return lib


@pytest.mark.parametrize("n_max", [1024, np.int64(1024), np.uint64(1024), np.int32(1024), np.array(1024)])
def test_n_max_any_integer(fake, n_max):
    with dotcourse.Context(n_max) as ctx:
        assert ctx.n_max == 1024 and type(ctx.n_max) is int
    assert fake.calls[0] == ("create", 0, 1024)


@pytest.mark.parametrize("kwargs, err, text", [
    ({"n_max": 2 ** 64 + 5}, ValueError, "n_max must be between 1 and 18446744073709551615 \\(got 18446744073709551621\\)"),
    ({"n_max": 2 ** 64}, ValueError, "n_max must be between"),
    ({"n_max": 0}, ValueError, "n_max must be between 1"),
    ({"n_max": -1}, ValueError, "n_max must be between 1"),
    ({"n_max": 1024.0}, TypeError, "n_max must be an integer"),
    ({"n_max": "1024"}, TypeError, "n_max must be an integer"),
    ({"n_max": True}, TypeError, "not a bool"),
    ({"n_max": np.float64(8)}, TypeError, "n_max must be an integer"),
    ({"n_max": 8, "device": -1}, ValueError, "device must be between 0"),
    ({"n_max": 8, "device": 2 ** 31}, ValueError, "device must be between 0"),
    ({"n_max": 8, "device": 0.0}, TypeError, "device must be an integer"),
    ({"n_max": 8, "pin_arrays": -1}, ValueError, "pin_arrays must be between 0"),
    ({"n_max": 8, "pin_bytes": 2 ** 64}, ValueError, "pin_bytes must be between 0"),
])
def test_bad_integer_arguments_are_refused_before_the_library(fake, kwargs, err, text):
    with pytest.raises(err, match=text) as e:
        dotcourse.Context(**kwargs)
    if err is ValueError:
        assert isinstance(e.value, dotcourse.InvalidArgumentError)
    assert fake.calls == [], "nothing may reach the library (ctypes would wrap 2**64 + 5 to 5)"


def test_library_failures_raise_their_subclass(fake):
    fake.fail["create"] = (int(Status.OUT_OF_MEMORY), "dotcourse_create: 4 TiB do not fit")
    with pytest.raises(MemoryError, match="4 TiB") as e:
        dotcourse.Context(1 << 40)
    assert isinstance(e.value, dotcourse.OutOfMemoryError) and e.value.message == "dotcourse_create: 4 TiB do not fit"
    fake.fail.clear()
    with dotcourse.Context(16) as ctx:
        for status, cls in ((Status.CUDA, dotcourse.CudaError), (Status.TOO_LARGE, dotcourse.TooLargeError),
                            (Status.INTERNAL, dotcourse.InternalError)):
            fake.fail["dot"] = (int(status), "from the library")
            with pytest.raises(cls, match="from the library"):
                ctx.dot(np.ones(4, np.float32), np.ones(4, np.float32), where="gpu")  # small n: "auto" takes NumPy


# ---- the array adapter: what reaches the C API --------------------------------------------------

def test_host_pairs_reach_the_right_entry_point(fake):
    with dotcourse.Context(100) as ctx:
        x32, y32 = np.ones(10, np.float32), np.ones(10, np.float32)
        assert isinstance(ctx.dot(x32, y32, where="gpu"), float)  # small n: "auto" takes NumPy
        assert fake.calls[-1] == ("dot", x32.ctypes.data, y32.ctypes.data, 10)
        x64, m = np.ones(10), np.ones(10, bool)
        assert ctx.dot(x64, m) == 7.0
        assert fake.calls[-1] == ("dot_typed_host", x64.ctypes.data, _arrays.FLOAT64, m.ctypes.data, _arrays.BOOL, 10)
        i8 = np.ones(10, np.int8)
        got = ctx.dot(i8, m)
        assert got == 7 and type(got) is int, "an integer pair gives a Python int"
        assert ctx.dot(np.ones(10, np.float16), x32) == 7.0
        assert fake.calls[-1][2] == _arrays.FLOAT16 and fake.calls[-1][4] == _arrays.FLOAT32

        class HostProducer:  # anything with __array_interface__: read in place, no copy
            def __init__(self, a):
                self.a = a
                self.__array_interface__ = a.__array_interface__
        assert isinstance(ctx.dot(HostProducer(x32), HostProducer(y32)), float)
        assert fake.calls[-1] == ("dot", x32.ctypes.data, y32.ctypes.data, 10)
        ctx.dot(HostProducer(np.ones(10, np.int8)), x32)
        assert fake.calls[-1][0] == "dot_typed_host"


def test_ml_dtypes_bfloat16_on_the_host(fake):
    ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    with dotcourse.Context(100) as ctx:
        b = np.ones(10, ml.bfloat16)
        ctx.dot(b, np.ones(10, np.float32))
        assert fake.calls[-1][2] == _arrays.BFLOAT16


class FakeCAI:
    def __init__(self, **cai):
        self.__cuda_array_interface__ = dict({"version": 3, "data": (0x7000, False), "strides": None}, **cai)


def test_cuda_array_interface_pairs(fake):
    with dotcourse.Context(100) as ctx:
        x, y = FakeCAI(shape=(8,), typestr="<f4", stream=5), FakeCAI(shape=(8,), typestr="<f4", stream=5)
        ctx.dot(x, y)
        assert fake.calls[-1] == ("dot_device", 0x7000, 0x7000, 8, 5)
        ctx.dot(FakeCAI(shape=(8,), typestr="<f2"), FakeCAI(shape=(8,), typestr="|b1", stream=2))
        assert fake.calls[-1] == ("dot_typed", 0x7000, _arrays.FLOAT16, 0x7000, _arrays.BOOL, 8, 2)
        big = FakeCAI(shape=(1000,), typestr="<f4")  # device arrays are not limited by n_max
        ctx.dot(big, big)
        assert fake.calls[-1][3] == 1000


# ---- DLPack, versioned and legacy, built by hand -------------------------------------------------

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_NAMES = {True: ctypes.create_string_buffer(b"dltensor_versioned"), False: ctypes.create_string_buffer(b"dltensor")}


class FakeDLPack:
    """A DLPack producer with no GPU behind it: the capsule is built with ctypes, and the deleter
    counts its calls (it must run exactly once, whatever happens)."""

    def __init__(self, n=8, code=2, bits=32, device_type=2, device_id=0, ptr=0x8000, strides=None, ndim=1,
                 versioned=True, major=1, accepts_max_version=True):
        self.versioned, self.accepts = versioned, accepts_max_version
        self.device = (device_type, device_id)
        self.deleted = 0
        self.asked = []
        self.shape = (ctypes.c_int64 * 2)(n, 1)
        self.strides = (ctypes.c_int64 * 2)(*strides) if strides else None
        cls = _arrays.DLManagedTensorVersioned if versioned else _arrays.DLManagedTensor
        self.managed = cls()
        t = self.managed.dl_tensor
        t.data, t.device_type, t.device_id, t.ndim = ptr, device_type, device_id, ndim
        t.code, t.bits, t.lanes = code, bits, 1
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        if self.strides is not None:
            t.strides = ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
        if versioned:
            self.managed.version.major, self.managed.version.minor = major, 0

        def deleter(_):
            self.deleted += 1
        self.deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(cls))(deleter)
        self.managed.deleter = self.deleter

    def __dlpack__(self, stream=None, **kwargs):
        if "max_version" in kwargs and not self.accepts:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.asked.append(kwargs.get("max_version"))
        versioned = self.versioned and "max_version" in kwargs
        return _capsule_new(ctypes.addressof(self.managed), _NAMES[versioned], None)

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_read_and_released_once(fake, versioned):
    with dotcourse.Context(100) as ctx:
        x = FakeDLPack(versioned=versioned, accepts_max_version=versioned)
        y = FakeDLPack(versioned=versioned, accepts_max_version=versioned, code=0, bits=8, ptr=0x9000)
        assert ctx.dot(x, y) == 7.0
        assert fake.calls[-1] == ("dot_typed", 0x8000, _arrays.FLOAT32, 0x9000, _arrays.INT8, 8, 0)
        assert (x.deleted, y.deleted) == (1, 1)
        assert x.asked == [(1, 0)] if versioned else x.asked == [None]
        b = FakeDLPack(versioned=versioned, code=4, bits=16)  # bfloat16
        ctx.dot(b, FakeDLPack(versioned=versioned, code=6, bits=8))  # bool
        assert fake.calls[-1][2] == _arrays.BFLOAT16 and fake.calls[-1][4] == _arrays.BOOL


@pytest.mark.parametrize("kwargs, err, text", [
    ({"code": 1, "bits": 8}, TypeError, "DLPack type code 1, 8 bits"),         # uint8 is not bool
    ({"code": 2, "bits": 32, "major": 2}, TypeError, "DLPack 2.x"),
    ({"device_type": 13, "device_id": 1}, ValueError, "on GPU 1 and this context on GPU 0"),
    ({"ndim": 2}, ValueError, "1-D"),
    ({"strides": (2,)}, ValueError, "contiguous"),
    ({"ptr": 0x8002}, ValueError, "not a multiple of its element size"),
    ({"n": 9}, ValueError, "equal lengths"),
])
def test_dlpack_bad_inputs_release_the_capsule(fake, kwargs, err, text):
    with dotcourse.Context(100) as ctx:
        good = FakeDLPack()
        bad = FakeDLPack(**kwargs)
        with pytest.raises(err, match=text):
            ctx.dot(good, bad)
        assert bad.deleted == 1 and good.deleted == 1, "every consumed capsule's deleter runs once"
        assert not [c for c in fake.calls if c[0].startswith("dot")]


def test_dlpack_on_the_host_is_refused(fake):
    class HostDL:
        def __dlpack__(self, stream=None, **kw):
            raise AssertionError("not to be consumed")

        def __dlpack_device__(self):
            return (1, 0)
    with dotcourse.Context(100) as ctx:
        with pytest.raises(TypeError, match="device type 1, not CUDA memory"):
            ctx.dot(HostDL(), HostDL())


# ---- one wording per error, whatever the producer and the dtype ----------------------------------

def _producers(n, dtype):
    host = np.ones(n, dtype)
    typestr = host.dtype.str
    code, bits = {"float32": (2, 32), "float64": (2, 64), "int8": (0, 8)}[np.dtype(dtype).name]
    return {"numpy": host,
            "array_interface": type("AI", (), {"__array_interface__": host.__array_interface__})(),
            "cai": FakeCAI(shape=(n,), typestr=typestr),
            "dlpack": FakeDLPack(n=n, code=code, bits=bits),
            "dlpack_legacy": FakeDLPack(n=n, code=code, bits=bits, versioned=False, accepts_max_version=False)}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_unequal_lengths_one_wording(fake, dtype):
    messages = set()
    with dotcourse.Context(100) as ctx:
        for name, x in _producers(8, dtype).items():
            y = _producers(9, "float32")[name]
            with pytest.raises(dotcourse.InvalidArgumentError) as e:
                ctx.dot(x, y)
            messages.add(str(e.value))
    assert messages == {"dotcourse INVALID_ARGUMENT: x has 8 elements and y has 9: a dot product needs equal lengths"}


@pytest.mark.parametrize("bad, err, text", [
    (np.ones(8, np.int32), TypeError, "x has dtype int32; dotcourse takes float64, float32, float16, bfloat16, int8 or bool"),
    (np.ones(8, np.uint8), TypeError, "x has dtype uint8; dotcourse takes"),
    (np.ones(8, np.complex64), TypeError, "x has dtype complex64; dotcourse takes"),
    (np.ones(8, ">f8"), TypeError, "x has dtype >f8; dotcourse takes"),
    (np.ones((2, 4), np.float32), ValueError, "x has shape \\(2, 4\\); dotcourse takes 1-D vectors"),
    (np.float32(3.0) * np.ones((), np.float32), ValueError, "x has shape \\(\\); dotcourse takes 1-D"),
    (np.ones(16, np.float64)[::2], ValueError, "x is not contiguous \\(strides \\(16,\\) bytes\\)"),
    ([1.0] * 8, TypeError, "x is a builtins.list, not an array dotcourse reads"),
    ("abc", TypeError, "x is a builtins.str"),
    (None, TypeError, "x is a builtins.NoneType"),
])
def test_bad_host_inputs(fake, bad, err, text):
    with dotcourse.Context(100) as ctx:
        with pytest.raises(err, match=text):
            ctx.dot(bad, np.ones(8, np.float32))
        with pytest.raises(err, match=text.replace("x ", "y ", 1)):
            ctx.dot(np.ones(8, np.float32), bad)
    assert not [c for c in fake.calls if c[0].startswith("dot")]


def test_places_streams_size_and_closed(fake):
    with dotcourse.Context(100) as ctx:
        with pytest.raises(TypeError, match="one of x and y is on the GPU and the other on the host"):
            ctx.dot(FakeCAI(shape=(8,), typestr="<f4"), np.ones(8, np.float32))
        with pytest.raises(dotcourse.InvalidArgumentError, match="different streams"):
            ctx.dot(FakeCAI(shape=(8,), typestr="<f4", stream=5), FakeCAI(shape=(8,), typestr="<f4", stream=6))
        for dtype in ("float32", "float64"):  # the float32 path and the typed path: the same error
            big = np.ones(101, dtype)
            with pytest.raises(dotcourse.TooLargeError,
                               match="n = 101 is larger than this context's n_max = 100") as e:
                ctx.dot(big, big)
            assert isinstance(e.value, ValueError) and e.value.status is Status.TOO_LARGE
        with pytest.raises(ValueError, match="misaligned|not a multiple"):
            ctx.dot(FakeCAI(shape=(8,), typestr="<f4", data=(0x7001, False)), FakeCAI(shape=(8,), typestr="<f4"))
    with pytest.raises(dotcourse.InvalidHandleError, match="closed"):
        ctx.dot(np.ones(8, np.float32), np.ones(8, np.float32))
    with pytest.raises(dotcourse.InvalidHandleError):
        ctx.unpin()
    assert fake.calls[-1] == ("destroy",)


def test_check_host_arrays(fake):
    assert dotcourse.check_host_arrays(np.ones(5), np.ones(5, np.int8), np.int64(5)) == 5
    with pytest.raises(dotcourse.TooLargeError):
        dotcourse.check_host_arrays(np.ones(6), np.ones(6), 5)
    with pytest.raises(TypeError, match="check_host_arrays checks host arrays"):
        dotcourse.check_host_arrays(FakeCAI(shape=(8,), typestr="<f4"), np.ones(8), 100)
    assert fake.calls == [], "check_host_arrays needs no library"
