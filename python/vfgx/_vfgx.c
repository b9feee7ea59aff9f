/* _vfgx.c - the C side of the Python package: the module, and the chunks
 * of a Session (_session.c) as objects that export their memory without a
 * copy (the buffer protocol for host and pinned chunks, so
 * numpy.frombuffer aliases them; DLPack and __cuda_array_interface__ for
 * GPU chunks), with the lifetime rules that keep an array from outliving
 * the chunk memory it views:
 *   - a chunk holds a reference to its session, and every export holds a
 *     reference to its chunk: the session is destroyed only after the
 *     last chunk and the last array are gone;
 *   - release() gives the chunk back to the pipeline (release(stream=) from
 *     a CUDA stream, after the work queued on it); it refuses (and
 *     raises BufferError) while an array still views it, and after it no
 *     new export is possible;
 *   - a chunk dropped without release() is given back when its last
 *     reference (arrays included) goes;
 *   - a chunk of a session inherited through fork() refuses every use
 *     and skips its teardown (_session.c says why).
 * The Python C API alone (no binding generator): the surface is small. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dlpack/dlpack.h>
#include <vfgx/vfgx.h>

#include "_vfgx.h"

static PyTypeObject DeviceViewType;

/* --- Chunk ----------------------------------------------------------------- */
int chunk_live(ChunkObject *ch)
{
	if (inherited(ch->pipe))
		return refuse_inherited(ch->pipe);
	if (ch->c)
		return 0;
	PyErr_SetString(PyExc_ValueError, "vfgx chunk: used after release()");
	return -1;
}

static void chunk_give_back(ChunkObject *ch)
{
	if (ch->c && inherited(ch->pipe))
		ch->c = NULL; /* the parent's to give back, not the child's */
	if (ch->c) {
		vfgx_chunk_put(ch->pipe->pl, ch->stream, ch->index);
		ch->c = NULL;
	}
}

static void chunk_dealloc(ChunkObject *ch)
{
	/* no export can be alive: each holds a reference to us */
	chunk_give_back(ch);
	Py_XDECREF(ch->pipe);
	PyObject_Free(ch);
}

/* release(stream=None): with a CUDA stream handle (an int; the package
 * passes CuPy's .ptr or PyTorch's .cuda_stream), the chunk goes back once
 * the work queued on that stream so far is done (vfgx_chunk_stream_put),
 * with no wait here. */
static PyObject *chunk_release(ChunkObject *ch, PyObject *args, PyObject *kw)
{
	static char *names[] = { "stream", NULL };
	PyObject *stream = Py_None;
	void *cs = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:release", names, &stream))
		return NULL;
	if (inherited(ch->pipe)) {
		refuse_inherited(ch->pipe);
		return NULL;
	}
	if (stream != Py_None) {
		cs = PyLong_AsVoidPtr(stream);
		if (!cs && PyErr_Occurred())
			return NULL;
	}
	if (ch->exports) {
		PyErr_Format(PyExc_BufferError,
			     "vfgx chunk: %zd array(s) still view its memory; delete them before release()",
			     ch->exports);
		return NULL;
	}
	if (stream == Py_None || !ch->c) {
		chunk_give_back(ch);
		Py_RETURN_NONE;
	}
	if (vfgx_chunk_stream_put(ch->pipe->pl, ch->stream, ch->index, cs)) {
		PyErr_SetString(PyExc_OSError, vfgx_last_error(ch->pipe->ctx));
		return NULL;
	}
	ch->c = NULL;
	Py_RETURN_NONE;
}

static int host_side(ChunkObject *ch)
{
	return ch->c->mem != VFGX_MEM_GPU;
}

/* The buffer protocol: host and pinned chunks' data, packets x bytes. */
static int chunk_getbuffer(ChunkObject *ch, Py_buffer *view, int flags)
{
	if (chunk_live(ch))
		return -1;
	if (!host_side(ch)) {
		PyErr_SetString(PyExc_BufferError,
				"vfgx chunk: GPU memory; use chunk.data (DLPack, __cuda_array_interface__)");
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)ch, ch->c->data,
			      (Py_ssize_t)ch->c->packets * ch->c->payload_bytes, 0, flags))
		return -1;
	ch->exports++;
	return 0;
}

static void chunk_releasebuffer(ChunkObject *ch, Py_buffer *view)
{
	(void)view;
	ch->exports--;
}

static PyBufferProcs chunk_as_buffer = {
	.bf_getbuffer = (getbufferproc)chunk_getbuffer,
	.bf_releasebuffer = (releasebufferproc)chunk_releasebuffer,
};

#define CHUNK_U64(name, expr) \
	static PyObject *chunk_##name(ChunkObject *ch, void *closure) \
	{ \
		(void)closure; \
		if (chunk_live(ch)) \
			return NULL; \
		return PyLong_FromUnsignedLongLong(expr); \
	}
CHUNK_U64(stream, ch->c->stream)
CHUNK_U64(index, ch->c->index)
CHUNK_U64(seq, ch->c->first)
CHUNK_U64(packets, ch->c->packets)
CHUNK_U64(payload_bytes, ch->c->payload_bytes)
CHUNK_U64(present_count, ch->c->present_count)
CHUNK_U64(missing, ch->c->missing)
CHUNK_U64(flags, ch->c->flags)
CHUNK_U64(ring_slot, ch->c->ring_slot)
CHUNK_U64(ready_ns, ch->c->ready_ns)
CHUNK_U64(first_seq, ch->c->first_seq)
CHUNK_U64(hdr_ts, ch->c->hdr_ts)
CHUNK_U64(bytes, ch->c->bytes)
CHUNK_U64(missing_bytes, ch->c->missing_bytes)
CHUNK_U64(hdr_flags, ch->c->hdr_flags)
CHUNK_U64(last_packet_ns, ch->c->last_packet_ns)
CHUNK_U64(late, __atomic_load_n(&ch->c->late, __ATOMIC_RELAXED))
/* addresses, for tests that prove no copy was made */
CHUNK_U64(data_ptr, (uintptr_t)ch->c->data)
CHUNK_U64(present_ptr, (uintptr_t)ch->c->present)
CHUNK_U64(lens_ptr, (uintptr_t)ch->c->lens)

static PyObject *chunk_mem(ChunkObject *ch, void *closure)
{
	(void)closure;
	if (chunk_live(ch))
		return NULL;
	return PyUnicode_FromString(vfgx_mem_kind_name(ch->c->mem));
}

static PyObject *chunk_released(ChunkObject *ch, void *closure)
{
	(void)closure;
	return PyBool_FromLong(ch->c == NULL);
}

static PyObject *chunk_exports(ChunkObject *ch, void *closure)
{
	(void)closure;
	return PyLong_FromSsize_t(ch->exports);
}

/* --- a view of GPU memory: DLPack and __cuda_array_interface__ ---------- */
typedef struct {
	PyObject_HEAD
	ChunkObject *chunk; /* a reference, and one export while alive */
	void *ptr;
	int64_t shape[2];
	int ndim;
	uint8_t bits;       /* element size */
	int device;
} DeviceViewObject;

static void view_dealloc(DeviceViewObject *v)
{
	if (v->chunk) {
		v->chunk->exports--;
		Py_DECREF(v->chunk);
	}
	PyObject_Free(v);
}

static PyObject *make_view(ChunkObject *ch, void *ptr, int ndim, int64_t d0,
			   int64_t d1, uint8_t bits)
{
	DeviceViewObject *v = PyObject_New(DeviceViewObject, &DeviceViewType);

	if (!v)
		return NULL;
	v->chunk = (ChunkObject *)Py_NewRef((PyObject *)ch);
	ch->exports++;
	v->ptr = ptr;
	v->ndim = ndim;
	v->shape[0] = d0;
	v->shape[1] = d1;
	v->bits = bits;
	v->device = (int)vfgx_chunk_conf(ch->pipe->pl)->gpu_id;
	return (PyObject *)v;
}

static int view_live(DeviceViewObject *v)
{
	if (v->chunk && inherited(v->chunk->pipe))
		return refuse_inherited(v->chunk->pipe);
	if (v->chunk && v->chunk->c)
		return 0;
	PyErr_SetString(PyExc_ValueError, "vfgx chunk: used after release()");
	return -1;
}

static PyObject *view_cai(DeviceViewObject *v, void *closure)
{
	char typestr[8];

	(void)closure;
	if (view_live(v))
		return NULL;
	snprintf(typestr, sizeof(typestr), "<u%u", v->bits / 8);
	if (v->bits == 8)
		snprintf(typestr, sizeof(typestr), "|u1");
	return v->ndim == 2 ?
		Py_BuildValue("{s:(LL),s:s,s:(KO),s:i,s:O,s:O}", "shape", (long long)v->shape[0],
			      (long long)v->shape[1], "typestr", typestr, "data",
			      (unsigned long long)(uintptr_t)v->ptr, Py_False, "version", 3,
			      "strides", Py_None, "stream", Py_None) :
		Py_BuildValue("{s:(L),s:s,s:(KO),s:i,s:O,s:O}", "shape", (long long)v->shape[0],
			      "typestr", typestr, "data", (unsigned long long)(uintptr_t)v->ptr,
			      Py_False, "version", 3, "strides", Py_None, "stream", Py_None);
}

struct dl_ctx {
	DLManagedTensor t;
	int64_t shape[2];
	PyObject *view; /* keeps the chunk's export alive */
};

static void dl_deleter(DLManagedTensor *t)
{
	struct dl_ctx *d = t->manager_ctx;
	PyGILState_STATE g = PyGILState_Ensure();

	Py_XDECREF(d->view);
	PyMem_RawFree(d);
	PyGILState_Release(g);
}

static void capsule_destructor(PyObject *cap)
{
	/* a capsule nobody consumed still owns its tensor */
	if (PyCapsule_IsValid(cap, "dltensor")) {
		DLManagedTensor *t = PyCapsule_GetPointer(cap, "dltensor");

		if (t && t->deleter)
			t->deleter(t);
	}
}

static PyObject *view_dlpack(DeviceViewObject *v, PyObject *args, PyObject *kw)
{
	struct dl_ctx *d;
	PyObject *cap;

	(void)args, (void)kw; /* stream, max_version, dl_device, copy: the
				* memory is ready (the chunk was handed out
				* after its copy finished); an unversioned
				* tensor is what this DLPack (0.6) makes */
	if (view_live(v))
		return NULL;
	d = PyMem_RawCalloc(1, sizeof(*d));
	if (!d)
		return PyErr_NoMemory();
	d->shape[0] = v->shape[0];
	d->shape[1] = v->shape[1];
	d->view = Py_NewRef((PyObject *)v);
	d->t.dl_tensor.data = v->ptr;
	d->t.dl_tensor.device.device_type = kDLCUDA;
	d->t.dl_tensor.device.device_id = v->device;
	d->t.dl_tensor.ndim = v->ndim;
	d->t.dl_tensor.dtype.code = kDLUInt;
	d->t.dl_tensor.dtype.bits = v->bits;
	d->t.dl_tensor.dtype.lanes = 1;
	d->t.dl_tensor.shape = d->shape;
	d->t.dl_tensor.strides = NULL;
	d->t.manager_ctx = d;
	d->t.deleter = dl_deleter;
	cap = PyCapsule_New(&d->t, "dltensor", capsule_destructor);
	if (!cap)
		dl_deleter(&d->t);
	return cap;
}

static PyObject *view_dlpack_device(DeviceViewObject *v, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("(ii)", (int)kDLCUDA, v->device);
}

static PyObject *view_ptr(DeviceViewObject *v, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong((uintptr_t)v->ptr);
}

static PyMethodDef view_methods[] = {
	{ "__dlpack__", (PyCFunction)(void (*)(void))view_dlpack, METH_VARARGS | METH_KEYWORDS,
	  "DLPack capsule of the device memory (no copy)" },
	{ "__dlpack_device__", (PyCFunction)view_dlpack_device, METH_NOARGS, "(kDLCUDA, device)" },
	{ NULL },
};

static PyGetSetDef view_getset[] = {
	{ "__cuda_array_interface__", (getter)view_cai, NULL, "CUDA array interface v3", NULL },
	{ "ptr", (getter)view_ptr, NULL, "device address", NULL },
	{ NULL },
};

static PyTypeObject DeviceViewType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vfgx._vfgx.DeviceView",
	.tp_basicsize = sizeof(DeviceViewObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)view_dealloc,
	.tp_methods = view_methods,
	.tp_getset = view_getset,
};

/* data_device(): a view of the data on the GPU (gpu and pinned chunks) */
static PyObject *chunk_device_data(ChunkObject *ch, PyObject *unused)
{
	(void)unused;
	if (chunk_live(ch))
		return NULL;
	if (!ch->c->dev_data) {
		PyErr_SetString(PyExc_ValueError, "vfgx chunk: host memory has no GPU view");
		return NULL;
	}
	return make_view(ch, ch->c->dev_data, 2, ch->c->packets, ch->c->payload_bytes, 8);
}

static PyObject *chunk_device_present(ChunkObject *ch, PyObject *unused)
{
	(void)unused;
	if (chunk_live(ch))
		return NULL;
	if (!ch->c->dev_present) {
		PyErr_SetString(PyExc_ValueError, "vfgx chunk: host memory has no GPU view");
		return NULL;
	}
	return make_view(ch, ch->c->dev_present, 1, (ch->c->packets + 63) / 64, 0, 64);
}

/* The present bitmap and the lengths as host bytes (a copy: small). */
static PyObject *chunk_present_words(ChunkObject *ch, PyObject *unused)
{
	(void)unused;
	if (chunk_live(ch))
		return NULL;
	if (!host_side(ch)) {
		PyErr_SetString(PyExc_ValueError, "vfgx chunk: GPU memory; use device_present()");
		return NULL;
	}
	return PyBytes_FromStringAndSize((const char *)ch->c->present,
					 (Py_ssize_t)((ch->c->packets + 63) / 64) * 8);
}

static PyObject *chunk_lens_bytes(ChunkObject *ch, PyObject *unused)
{
	(void)unused;
	if (chunk_live(ch))
		return NULL;
	if (!host_side(ch)) {
		PyErr_SetString(PyExc_ValueError, "vfgx chunk: GPU memory");
		return NULL;
	}
	return PyBytes_FromStringAndSize((const char *)ch->c->lens,
					 (Py_ssize_t)ch->c->packets * 4);
}

static PyMethodDef chunk_methods[] = {
	{ "release", (PyCFunction)(void (*)(void))chunk_release, METH_VARARGS | METH_KEYWORDS,
	  "give the chunk back (after the work on a CUDA stream handle, with stream=)" },
	{ "device_data", (PyCFunction)chunk_device_data, METH_NOARGS, "GPU view of the data" },
	{ "device_present", (PyCFunction)chunk_device_present, METH_NOARGS, "GPU view of the bitmap" },
	{ "present_words", (PyCFunction)chunk_present_words, METH_NOARGS, "bitmap bytes (host)" },
	{ "lens_bytes", (PyCFunction)chunk_lens_bytes, METH_NOARGS, "slot lengths, uint32 (host)" },
	{ NULL },
};

static PyGetSetDef chunk_getset[] = {
	{ "stream", (getter)chunk_stream, NULL, "stream id", NULL },
	{ "index", (getter)chunk_index, NULL, "the stream's n-th chunk", NULL },
	{ "seq", (getter)chunk_seq, NULL, "packet index of slot 0", NULL },
	{ "packets", (getter)chunk_packets, NULL, "slots", NULL },
	{ "payload_bytes", (getter)chunk_payload_bytes, NULL, "slot size", NULL },
	{ "present_count", (getter)chunk_present_count, NULL, "slots written", NULL },
	{ "missing", (getter)chunk_missing, NULL, "slots never written", NULL },
	{ "flags", (getter)chunk_flags, NULL, "VFGX_CHUNK_* flags", NULL },
	{ "ring_slot", (getter)chunk_ring_slot, NULL, "index % in_flight", NULL },
	{ "ready_ns", (getter)chunk_ready_ns, NULL, "when it became ready", NULL },
	{ "first_seq", (getter)chunk_first_seq, NULL, "extended sequence of its first packet that arrived", NULL },
	{ "hdr_ts", (getter)chunk_hdr_ts, NULL, "the producer header's timestamp of that packet (RTP: the frame's)", NULL },
	{ "bytes", (getter)chunk_bytes, NULL, "payload bytes the chunk spans", NULL },
	{ "missing_bytes", (getter)chunk_missing_bytes, NULL, "bytes of it never written", NULL },
	{ "hdr_flags", (getter)chunk_hdr_flags, NULL, "1: hdr_ts valid, 2: an end-of-chunk mark arrived", NULL },
	{ "last_packet_ns", (getter)chunk_last_packet_ns, NULL, "its last packet's write", NULL },
	{ "late", (getter)chunk_late, NULL, "packets for it that came after it was ready", NULL },
	{ "data_ptr", (getter)chunk_data_ptr, NULL, "address of the data", NULL },
	{ "present_ptr", (getter)chunk_present_ptr, NULL, "address of the bitmap", NULL },
	{ "lens_ptr", (getter)chunk_lens_ptr, NULL, "address of the lengths", NULL },
	{ "mem", (getter)chunk_mem, NULL, "host, pinned or gpu", NULL },
	{ "released", (getter)chunk_released, NULL, "given back", NULL },
	{ "exports", (getter)chunk_exports, NULL, "arrays viewing it", NULL },
	{ NULL },
};

PyTypeObject ChunkType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vfgx._vfgx.Chunk",
	.tp_basicsize = sizeof(ChunkObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)chunk_dealloc,
	.tp_as_buffer = &chunk_as_buffer,
	.tp_methods = chunk_methods,
	.tp_getset = chunk_getset,
};

static PyObject *mod_now_ns(PyObject *self, PyObject *unused)
{
	(void)self, (void)unused;
	return PyLong_FromUnsignedLongLong(vfgx_now_ns());
}

static PyObject *mod_pattern(PyObject *self, PyObject *args)
{
	unsigned int stream, n;
	unsigned long long seq;
	PyObject *b;
	char *p;

	(void)self;
	if (!PyArg_ParseTuple(args, "IKI", &stream, &seq, &n))
		return NULL;
	b = PyBytes_FromStringAndSize(NULL, n);
	if (!b)
		return NULL;
	p = PyBytes_AS_STRING(b);
	for (unsigned int i = 0; i < n; i++)
		p[i] = (char)vfgx_pattern_byte(stream, seq, i);
	return b;
}

static PyMethodDef mod_methods[] = {
	{ "now_ns", mod_now_ns, METH_NOARGS, "libvfgx's clock (chunk timestamps)" },
	{ "pattern", mod_pattern, METH_VARARGS,
	  "pattern(stream, seq, n): the loopback generator's payload bytes" },
	{ NULL },
};

static struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT, .m_name = "vfgx._vfgx",
	.m_doc = "libvfgx bindings (use the vfgx package)", .m_size = -1,
	.m_methods = mod_methods,
};

PyMODINIT_FUNC PyInit__vfgx(void);

PyMODINIT_FUNC PyInit__vfgx(void)
{
	PyObject *m;

	if (PyType_Ready(&SessionType) || PyType_Ready(&ChunkType) ||
	    PyType_Ready(&DeviceViewType) || PyType_Ready(&RecorderType))
		return NULL;
	if (pthread_atfork(NULL, NULL, after_fork_in_child))
		return PyErr_NoMemory();
	m = PyModule_Create(&moddef);
	if (!m)
		return NULL;
	ConfigError = PyErr_NewExceptionWithDoc("vfgx.ConfigError",
		"a bad configuration, with .message, .file, .line and .column", PyExc_ValueError, NULL);
	if (!ConfigError || PyModule_AddObjectRef(m, "ConfigError", ConfigError) ||
	    PyModule_AddObjectRef(m, "Session", (PyObject *)&SessionType) ||
	    PyModule_AddObjectRef(m, "Chunk", (PyObject *)&ChunkType) ||
	    PyModule_AddObjectRef(m, "Recorder", (PyObject *)&RecorderType) ||
	    PyModule_AddIntConstant(m, "CHUNK_COMPLETE", VFGX_CHUNK_COMPLETE) ||
	    PyModule_AddStringConstant(m, "SOURCE_INCLUDE", VFGX_SOURCE_INCLUDE) ||
	    PyModule_AddStringConstant(m, "INSTALL_INCLUDE", VFGX_INSTALL_INCLUDE)) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
