/* _vfgx.c - the C side of the Python package: a Pipeline over libvfgx
 * (config from YAML text, ports, start/stop, stats), its chunks as objects
 * that export their memory without a copy (the buffer protocol for host
 * and pinned chunks, so numpy.frombuffer aliases them; DLPack and
 * __cuda_array_interface__ for GPU chunks), and the lifetime rules that
 * keep an array from outliving the chunk memory it views:
 *   - a chunk holds a reference to its pipeline, and every export holds a
 *     reference to its chunk: the pipeline is destroyed only after the
 *     last chunk and the last array are gone;
 *   - release() gives the chunk back to the pipeline (release(stream=) from
 *     a CUDA stream, after the work queued on it); it refuses (and
 *     raises BufferError) while an array still views it, and after it no
 *     new export is possible;
 *   - a chunk dropped without release() is given back when its last
 *     reference (arrays included) goes;
 *   - a Pipeline belongs to the process that made it: in a child of
 *     fork() it and its chunks are inherited memory without the threads
 *     that run them, so every use raises one RuntimeError and their
 *     teardown is skipped (destroying a condition variable the parent's
 *     threads waited on hangs the child at exit);
 *   - a pipeline runs once: start() after stop() and stop() before
 *     start() raise RuntimeError.
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

static PyObject *ConfigError;

/* How many fork()s this process is from the one that loaded the module:
 * each object keeps the value it was made in, and differs from it in a
 * child (pthread_atfork, so os.fork and any C library's fork count). */
static volatile unsigned long fork_generation;

static void after_fork_in_child(void)
{
	fork_generation++;
}

/* --- Pipeline -------------------------------------------------------------- */

static PyTypeObject PipelineType, DeviceViewType;

/* exc.name = v (a new reference, consumed); -1 on failure */
static int set_attr(PyObject *exc, const char *name, PyObject *v)
{
	int ret = v ? PyObject_SetAttrString(exc, name, v) : -1;

	Py_XDECREF(v);
	return ret;
}

/* "file:line:col: message" -> ConfigError(message) with .message,
 * .file, .line and .column (None where the message has no position) */
static PyObject *config_error(const char *msg)
{
	char file[512] = "";
	unsigned line = 0, col = 0;
	PyObject *exc;
	int n = 0;

	if (sscanf(msg, "%511[^:]:%u:%u: %n", file, &line, &col, &n) < 3 || !n)
		file[0] = 0, line = col = 0;
	exc = PyObject_CallFunction(ConfigError, "s", msg);
	if (!exc)
		return NULL;
	if (set_attr(exc, "message", PyUnicode_FromString(msg)) ||
	    set_attr(exc, "file", file[0] ? PyUnicode_FromString(file) : Py_NewRef(Py_None)) ||
	    set_attr(exc, "line", line ? PyLong_FromUnsignedLong(line) : Py_NewRef(Py_None)) ||
	    set_attr(exc, "column", col ? PyLong_FromUnsignedLong(col) : Py_NewRef(Py_None))) {
		Py_DECREF(exc);
		return NULL;
	}
	PyErr_SetObject(ConfigError, exc);
	Py_DECREF(exc);
	return NULL;
}

int inherited(const PipelineObject *p)
{
	return p->owner_pid && p->generation != fork_generation;
}

/* One line for every use of an inherited pipeline or chunk. */
int refuse_inherited(const PipelineObject *p)
{
	PyErr_Format(PyExc_RuntimeError,
		     "vfgx.Pipeline: made in process %ld and inherited through fork(); a child cannot use it (make a new vfgx.Pipeline in the child)",
		     p->owner_pid);
	return -1;
}

static void pipeline_close(PipelineObject *p)
{
	/* a child's copy: the parent's threads are not here to end, and
	 * destroying what they waited on would hang; the process's exit
	 * frees the memory */
	if (inherited(p)) {
		p->pl = NULL;
		p->nb_ports = 0;
		p->cfg = NULL;
		p->ctx = NULL;
		return;
	}
	if (p->pl) {
		Py_BEGIN_ALLOW_THREADS
		vfgx_pipeline_destroy(p->pl);
		Py_END_ALLOW_THREADS
		p->pl = NULL;
	}
	for (uint16_t i = 0; i < p->nb_ports; i++)
		vfgx_port_close(p->ports[i]);
	p->nb_ports = 0;
	vfgx_config_destroy(p->cfg);
	p->cfg = NULL;
	if (p->ctx)
		vfgx_ctx_destroy(p->ctx);
	p->ctx = NULL;
}

static int pipeline_init(PipelineObject *p, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "yaml", "name", NULL };
	const char *yaml, *name = "<python>";
	Py_ssize_t len;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|s", kwlist, &yaml, &len, &name))
		return -1;
	if (p->ctx) {
		PyErr_SetString(PyExc_RuntimeError, "vfgx.Pipeline: already initialised");
		return -1;
	}
	p->generation = fork_generation;
	p->owner_pid = (long)getpid();
	if (vfgx_ctx_create(&p->ctx)) {
		PyErr_NoMemory();
		return -1;
	}
	vfgx_log_set_level(p->ctx, VFGX_LOG_ERROR);
	if (vfgx_config_load_string(p->ctx, yaml, (size_t)len, name, &p->cfg)) {
		config_error(vfgx_last_error(p->ctx));
		return -1;
	}
	if (vfgx_pipeline_check(p->ctx, &p->cfg->pipeline)) {
		config_error(vfgx_last_error(p->ctx));
		return -1;
	}
	if (p->cfg->nb_ifaces == 0) {
		config_error("no interfaces configured (add one under interfaces:)");
		return -1;
	}
	for (uint16_t i = 0; i < p->cfg->nb_ifaces; i++, p->nb_ports++) {
		ret = vfgx_port_open_config(p->ctx, p->cfg, &p->cfg->ifaces[i], &p->ports[i]);
		if (ret) {
			if (ret == -EINVAL)
				config_error(vfgx_last_error(p->ctx));
			else
				PyErr_SetString(PyExc_OSError, vfgx_last_error(p->ctx));
			return -1;
		}
	}
	ret = vfgx_pipeline_create(p->ctx, &p->cfg->pipeline, p->ports, p->nb_ports, &p->pl);
	if (ret) {
		if (ret == -EINVAL || ret == -ENODEV)
			config_error(vfgx_last_error(p->ctx));
		else
			PyErr_SetString(PyExc_OSError, vfgx_last_error(p->ctx));
		return -1;
	}
	return 0;
}

static void pipeline_dealloc(PipelineObject *p)
{
	pipeline_close(p);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

int need_pipeline(PipelineObject *p)
{
	if (inherited(p))
		return refuse_inherited(p);
	if (p->pl)
		return 0;
	PyErr_SetString(PyExc_ValueError, "vfgx.Pipeline: not initialised");
	return -1;
}

static PyObject *pipeline_start(PipelineObject *p, PyObject *unused)
{
	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (p->stopped) {
		PyErr_SetString(PyExc_RuntimeError,
				"vfgx.Pipeline: start() after stop(); a pipeline runs once (make a new vfgx.Pipeline)");
		return NULL;
	}
	if (p->started) {
		PyErr_SetString(PyExc_RuntimeError, "vfgx.Pipeline: started already");
		return NULL;
	}
	if (vfgx_pipeline_start(p->pl)) {
		PyErr_SetString(PyExc_OSError, vfgx_last_error(p->ctx));
		return NULL;
	}
	p->started = 1;
	Py_RETURN_NONE;
}

static PyObject *pipeline_stop(PipelineObject *p, PyObject *unused)
{
	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (!p->started) {
		PyErr_SetString(PyExc_RuntimeError,
				"vfgx.Pipeline: stop() before start(); start() it first (a pipeline never started needs no stop)");
		return NULL;
	}
	/* chunk memory stays until the last chunk object goes */
	Py_BEGIN_ALLOW_THREADS
	vfgx_pipeline_stop(p->pl);
	Py_END_ALLOW_THREADS
	p->stopped = 1;
	Py_RETURN_NONE;
}

static PyObject *pipeline_done(PipelineObject *p, PyObject *unused)
{
	(void)unused;
	if (need_pipeline(p))
		return NULL;
	return PyBool_FromLong(vfgx_pipeline_done(p->pl));
}

#define SET_U64(d, name, v) do { PyObject *o_ = PyLong_FromUnsignedLongLong(v); \
	if (!o_ || PyDict_SetItemString(d, name, o_)) { Py_XDECREF(o_); Py_DECREF(d); return NULL; } \
	Py_DECREF(o_); } while (0)

static PyObject *pipeline_stats(PipelineObject *p, PyObject *unused)
{
	struct vfgx_pipeline_stats st;
	PyObject *d, *drops;

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	vfgx_pipeline_stats(p->pl, &st);
	d = PyDict_New();
	if (!d)
		return NULL;
	SET_U64(d, "packets", st.packets);
	SET_U64(d, "bytes", st.bytes);
	SET_U64(d, "passed", st.passed);
	SET_U64(d, "delivered", st.delivered);
	SET_U64(d, "delivered_bytes", st.delivered_bytes);
	SET_U64(d, "gaps", st.gaps);
	SET_U64(d, "verify_errors", st.verify_errors);
	SET_U64(d, "order_errors", st.order_errors);
	drops = PyDict_New();
	if (!drops || PyDict_SetItemString(d, "drops", drops)) {
		Py_XDECREF(drops);
		Py_DECREF(d);
		return NULL;
	}
	Py_DECREF(drops);
	for (int i = 0; i < VFGX_DROP_MAX; i++) {
		PyObject *o = PyLong_FromUnsignedLongLong(st.drops[i]);

		if (!o || PyDict_SetItemString(drops, vfgx_drop_reason_name((enum vfgx_drop_reason)i), o)) {
			Py_XDECREF(o);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(o);
	}
	return d;
}

static PyObject *pipeline_chunk_stats(PipelineObject *p, PyObject *unused)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	PyObject *d;

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (vfgx_chunk_stats(p->pl, &cs))
		Py_RETURN_NONE;
	d = PyDict_New();
	if (!d)
		return NULL;
	SET_U64(d, "complete", cs.complete);
	SET_U64(d, "closed", cs.closed);
	SET_U64(d, "skipped", cs.skipped);
	SET_U64(d, "placed", cs.placed);
	SET_U64(d, "missing", cs.missing);
	SET_U64(d, "late", cs.late);
	SET_U64(d, "duplicates", cs.duplicates);
	SET_U64(d, "out_of_range", cs.out_of_range);
	SET_U64(d, "backpressure", cs.backpressure);
	SET_U64(d, "backpressure_drops", cs.backpressure_drops);
	SET_U64(d, "handed_out", cs.handed_out);
	SET_U64(d, "returned", cs.returned);
	SET_U64(d, "chunk_bytes", cs.chunk_bytes);
	return d;
}

/* get(timeout_ms) -> Chunk; None on timeout; EOFError at the end. */
static PyObject *pipeline_get(PipelineObject *p, PyObject *args)
{
	struct vfgx_chunk *c = NULL;
	ChunkObject *ch;
	int timeout_ms, ret;

	if (!PyArg_ParseTuple(args, "i", &timeout_ms) || need_pipeline(p))
		return NULL;
	if (!vfgx_chunk_conf(p->pl)) {
		PyErr_SetString(PyExc_ValueError, "vfgx.Pipeline: the config has no pipeline.chunks");
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = vfgx_chunk_get(p->pl, timeout_ms, &c);
	Py_END_ALLOW_THREADS
	if (ret == -ENODATA) {
		PyErr_SetString(PyExc_EOFError, "no more chunks");
		return NULL;
	}
	if (ret == -ETIMEDOUT || ret == -EAGAIN)
		Py_RETURN_NONE;
	if (ret) {
		errno = -ret;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	ch = PyObject_New(ChunkObject, &ChunkType);
	if (!ch) {
		vfgx_chunk_put(p->pl, c->stream, c->index);
		return NULL;
	}
	ch->pipe = (PipelineObject *)Py_NewRef((PyObject *)p);
	ch->c = c;
	ch->stream = c->stream;
	ch->index = c->index;
	ch->exports = 0;
	ch->shape[0] = c->packets;
	ch->shape[1] = c->payload_bytes;
	return (PyObject *)ch;
}

/* The device chunk API's view (vfgx/chunk_device.h) as the struct's bytes;
 * from here on the chunks go to the GPU consumer, not to get(). */
static PyObject *pipeline_chunk_device(PipelineObject *p, PyObject *unused)
{
	struct vfgx_chunk_device v = { .argsz = sizeof(v) };

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (vfgx_chunk_device(p->pl, &v)) {
		PyErr_SetString(PyExc_RuntimeError, vfgx_last_error(p->ctx));
		return NULL;
	}
	return PyBytes_FromStringAndSize((const char *)&v, sizeof(v));
}

static PyMethodDef pipeline_methods[] = {
	{ "start", (PyCFunction)pipeline_start, METH_NOARGS, "start the engine" },
	{ "stop", (PyCFunction)pipeline_stop, METH_NOARGS, "stop the engine (chunks stay valid)" },
	{ "done", (PyCFunction)pipeline_done, METH_NOARGS, "True once every finite source ended" },
	{ "stats", (PyCFunction)pipeline_stats, METH_NOARGS, "pipeline counters as a dict" },
	{ "chunk_stats", (PyCFunction)pipeline_chunk_stats, METH_NOARGS, "chunk counters, or None" },
	{ "get", (PyCFunction)pipeline_get, METH_VARARGS, "get(timeout_ms) -> Chunk | None" },
	{ "chunk_device", (PyCFunction)pipeline_chunk_device, METH_NOARGS,
	  "struct vfgx_chunk_device as bytes (vfgx/chunk_device.h)" },
	{ "recorder", (PyCFunction)(void (*)(void))pipeline_recorder, METH_VARARGS | METH_KEYWORDS,
	  "recorder(path, format, ...) -> Recorder (vfgx/record.h)" },
	{ NULL },
};

static PyObject *pipeline_engine(PipelineObject *p, void *closure)
{
	(void)closure;
	if (need_pipeline(p))
		return NULL;
	return PyUnicode_FromString(vfgx_pipeline_engine(p->pl));
}

static PyGetSetDef pipeline_getset[] = {
	{ "engine", (getter)pipeline_engine, NULL, "cpu or gpu", NULL },
	{ NULL },
};

static PyTypeObject PipelineType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vfgx._vfgx.Pipeline",
	.tp_basicsize = sizeof(PipelineObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)pipeline_init,
	.tp_dealloc = (destructor)pipeline_dealloc,
	.tp_methods = pipeline_methods,
	.tp_getset = pipeline_getset,
};

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

	if (PyType_Ready(&PipelineType) || PyType_Ready(&ChunkType) ||
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
	    PyModule_AddObjectRef(m, "Pipeline", (PyObject *)&PipelineType) ||
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
