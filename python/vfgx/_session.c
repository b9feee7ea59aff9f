/* _session.c - the Python package's Session: a vfgx_session (vfgx/session.h)
 * made from YAML text, so Python runs what `vfgx run` runs: the config's
 * ports, capture, pipeline, observers (the Prometheus endpoint, gpurdma_mon),
 * user code (pipeline.user: a CPU module, a CUDA module), the recorder and
 * the report.  Where no user code or recorder takes the chunks, the program
 * takes them (get(), the Chunk objects of _vfgx.c); where one does, the
 * session's consumer thread hands them over and get() is refused.
 *
 * Lifetimes: a chunk holds a reference to its session, so the session is
 * destroyed after the last chunk and array; a session belongs to the
 * process that made it (fork(): every use in a child raises one
 * RuntimeError and the child skips the teardown); it runs once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_vfgx.h"

PyObject *ConfigError;

/* How many fork()s this process is from the one that loaded the module:
 * each object keeps the value it was made in, and differs from it in a
 * child (pthread_atfork, so os.fork and any C library's fork count). */
static volatile unsigned long fork_generation;

void after_fork_in_child(void)
{
	fork_generation++;
}

int inherited(const PipelineObject *p)
{
	return p->owner_pid && p->generation != fork_generation;
}

/* One line for every use of an inherited session or chunk. */
int refuse_inherited(const PipelineObject *p)
{
	PyErr_Format(PyExc_RuntimeError,
		     "vfgx.%s: made in process %ld and inherited through fork(); a child cannot use it (make a new vfgx.%s in the child)",
		     p->kind, p->owner_pid, p->kind);
	return -1;
}

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

/* The library's error for ret: the config's fault (-EINVAL) is a
 * ConfigError, anything else the machine's (OSError). */
static void lib_error(PipelineObject *p, int ret)
{
	if (ret == -EINVAL)
		config_error(vfgx_last_error(p->ctx));
	else
		PyErr_SetString(PyExc_OSError, vfgx_last_error(p->ctx));
}

static void session_close(PipelineObject *p)
{
	/* a child's copy: the parent's threads are not here to end, and
	 * destroying what they waited on would hang; the process's exit
	 * frees the memory */
	if (inherited(p)) {
		p->s = NULL;
		p->pl = NULL;
		p->cfg = NULL;
		p->ctx = NULL;
		return;
	}
	if (p->s) {
		Py_BEGIN_ALLOW_THREADS
		vfgx_session_destroy(p->s);
		Py_END_ALLOW_THREADS
		p->s = NULL;
		p->pl = NULL;
	}
	vfgx_config_destroy(p->cfg);
	p->cfg = NULL;
	if (p->ctx)
		vfgx_ctx_destroy(p->ctx);
	p->ctx = NULL;
	for (size_t i = 0; i < sizeof(p->owned) / sizeof(p->owned[0]); i++) {
		free(p->owned[i]);
		p->owned[i] = NULL;
	}
}

/* A copy of the string o (None: NULL) the object keeps; -1 on failure */
static int keep_str(PipelineObject *p, int slot, PyObject *o, const char *what,
		    const char **out)
{
	const char *s;

	*out = NULL;
	if (o == Py_None)
		return 0;
	if (PyUnicode_Check(o))
		s = PyUnicode_AsUTF8(o);
	else if (PyBytes_Check(o))
		s = PyBytes_AsString(o);
	else
		s = NULL;
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_TypeError, "vfgx.%s: %s is a str, not %s", p->kind, what,
				     Py_TYPE(o)->tp_name);
		return -1;
	}
	if (!(p->owned[slot] = strdup(s))) {
		PyErr_NoMemory();
		return -1;
	}
	*out = p->owned[slot];
	return 0;
}

enum { OWN_CAPTURE, OWN_RECORD, OWN_METRICS, OWN_USER, OWN_USER_ARG };

/* Session(yaml, name, *, record_section, capture, capture_replace, record,
 * metrics, user, user_arg, duration): the config's sections, each keyword
 * that is not None over them; record_section False leaves the record:
 * section to the program (Pipeline.record()). */
static int session_init(PipelineObject *p, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "yaml", "name", "record_section", "capture", "capture_replace",
				  "record", "metrics", "user", "user_arg", "duration", "kind",
				  NULL };
	PyObject *capture = Py_None, *record = Py_None, *metrics = Py_None, *user = Py_None,
		 *user_arg = Py_None;
	struct vfgx_session_opts so;
	const struct vfgx_record_conf *section;
	const char *yaml, *name = "<python>", *kind = "Session", *lib, *arg;
	int record_section = 1, replace = 0, ret;
	double duration = -1;
	Py_ssize_t len;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|s$pOpOOOOds", kwlist, &yaml, &len, &name,
					 &record_section, &capture, &replace, &record, &metrics,
					 &user, &user_arg, &duration, &kind))
		return -1;
	if (p->ctx) {
		PyErr_SetString(PyExc_RuntimeError, "vfgx.Session: already initialised");
		return -1;
	}
	snprintf(p->kind, sizeof(p->kind), "%s", kind);
	p->generation = fork_generation;
	p->owner_pid = (long)getpid();
	vfgx_session_opts_default(&so);
	so.consumer_auto = true;     /* get() where nothing else takes chunks */
	so.metrics_config = true;    /* metrics.listen, as vfgx run */
	so.metrics_job = "python";
	so.capture_replace = replace;
	so.duration_s = duration;
	so.config_text = yaml;       /* the recordings' config attribute */
	if (keep_str(p, OWN_CAPTURE, capture, "capture", &so.capture_path) ||
	    keep_str(p, OWN_RECORD, record, "record", &so.record_path) ||
	    keep_str(p, OWN_METRICS, metrics, "metrics", &so.metrics_listen) ||
	    keep_str(p, OWN_USER, user, "user", &lib) ||
	    keep_str(p, OWN_USER_ARG, user_arg, "user_arg", &arg))
		return -1;
	if (vfgx_ctx_create(&p->ctx)) {
		PyErr_NoMemory();
		return -1;
	}
	vfgx_log_set_level(p->ctx, VFGX_LOG_ERROR);
	if (vfgx_config_load_string(p->ctx, yaml, (size_t)len, name, &p->cfg)) {
		config_error(vfgx_last_error(p->ctx));
		return -1;
	}
	if (lib)
		p->cfg->user_library = lib;
	if (arg)
		p->cfg->user_arg = arg;
	/* the session records the record: section unless the program does */
	section = p->cfg->record;
	if (!record_section)
		p->cfg->record = NULL;
	ret = vfgx_session_create(p->ctx, p->cfg, &so, &p->s);
	p->cfg->record = section;
	if (ret) {
		lib_error(p, ret);
		return -1;
	}
	p->pl = vfgx_session_pipeline(p->s);
	return 0;
}

static void session_dealloc(PipelineObject *p)
{
	session_close(p);
	Py_TYPE(p)->tp_free((PyObject *)p);
}

int need_pipeline(PipelineObject *p)
{
	if (inherited(p))
		return refuse_inherited(p);
	if (p->pl)
		return 0;
	PyErr_Format(PyExc_ValueError, "vfgx.%s: not initialised", p->kind);
	return -1;
}

int need_own_chunks(PipelineObject *p, const char *what)
{
	if (need_pipeline(p))
		return -1;
	if (!vfgx_chunk_conf(p->pl)) {
		PyErr_Format(PyExc_ValueError, "vfgx.%s: the config has no pipeline.chunks", p->kind);
		return -1;
	}
	if (!vfgx_session_consumes(p->s))
		return 0;
	PyErr_Format(PyExc_RuntimeError,
		     "vfgx.%s: %s: the session's consumer hands every chunk to the user module's chunk callback, the CUDA module or the recorder (pipeline.user, record); the program gets none",
		     p->kind, what);
	return -1;
}

static PyObject *session_start(PipelineObject *p, PyObject *unused)
{
	int ret;

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (p->stopped) {
		PyErr_Format(PyExc_RuntimeError,
			     "vfgx.%s: start() after stop(); a pipeline runs once (make a new vfgx.%s)",
			     p->kind, p->kind);
		return NULL;
	}
	if (p->started) {
		PyErr_Format(PyExc_RuntimeError, "vfgx.%s: started already", p->kind);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = vfgx_session_start(p->s);
	Py_END_ALLOW_THREADS
	if (ret) {
		lib_error(p, ret);
		return NULL;
	}
	p->started = 1;
	Py_RETURN_NONE;
}

static PyObject *session_stop(PipelineObject *p, PyObject *unused)
{
	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (!p->started) {
		PyErr_Format(PyExc_RuntimeError,
			     "vfgx.%s: stop() before start(); start() it first (a pipeline never started needs no stop)",
			     p->kind);
		return NULL;
	}
	/* chunk memory stays until the last chunk object goes */
	Py_BEGIN_ALLOW_THREADS
	vfgx_session_stop(p->s);
	Py_END_ALLOW_THREADS
	p->stopped = 1;
	Py_RETURN_NONE;
}

static PyObject *session_done(PipelineObject *p, PyObject *unused)
{
	(void)unused;
	if (need_pipeline(p))
		return NULL;
	return PyBool_FromLong(vfgx_session_done(p->s));
}

/* d[name] = v; -1 on failure (d is the caller's to drop) */
static int put(PyObject *d, const char *name, PyObject *v)
{
	int ret = v ? PyDict_SetItemString(d, name, v) : -1;

	Py_XDECREF(v);
	return ret;
}

#define U64(v) PyLong_FromUnsignedLongLong(v)

static PyObject *stats_dict(const struct vfgx_pipeline_stats *st)
{
	PyObject *d = PyDict_New(), *drops = PyDict_New();

	if (!d || !drops || put(d, "packets", U64(st->packets)) || put(d, "bytes", U64(st->bytes)) ||
	    put(d, "passed", U64(st->passed)) || put(d, "delivered", U64(st->delivered)) ||
	    put(d, "delivered_bytes", U64(st->delivered_bytes)) || put(d, "gaps", U64(st->gaps)) ||
	    put(d, "verify_errors", U64(st->verify_errors)) ||
	    put(d, "order_errors", U64(st->order_errors)))
		goto fail;
	for (int i = 0; i < VFGX_DROP_MAX; i++)
		if (put(drops, vfgx_drop_reason_name((enum vfgx_drop_reason)i), U64(st->drops[i])))
			goto fail;
	if (put(d, "drops", drops))
		goto fail_d;
	return d;
fail:
	Py_XDECREF(drops);
fail_d:
	Py_XDECREF(d);
	return NULL;
}

static PyObject *session_stats(PipelineObject *p, PyObject *unused)
{
	struct vfgx_pipeline_stats st;

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	vfgx_session_stats(p->s, &st);
	return stats_dict(&st);
}

static PyObject *session_chunk_stats(PipelineObject *p, PyObject *unused)
{
	struct vfgx_chunk_stats cs = { .argsz = sizeof(cs) };
	PyObject *d;

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (vfgx_chunk_stats(p->pl, &cs))
		Py_RETURN_NONE;
	d = PyDict_New();
	if (!d || put(d, "complete", U64(cs.complete)) || put(d, "closed", U64(cs.closed)) ||
	    put(d, "skipped", U64(cs.skipped)) || put(d, "placed", U64(cs.placed)) ||
	    put(d, "missing", U64(cs.missing)) || put(d, "late", U64(cs.late)) ||
	    put(d, "duplicates", U64(cs.duplicates)) ||
	    put(d, "out_of_range", U64(cs.out_of_range)) ||
	    put(d, "backpressure", U64(cs.backpressure)) ||
	    put(d, "backpressure_drops", U64(cs.backpressure_drops)) ||
	    put(d, "handed_out", U64(cs.handed_out)) || put(d, "returned", U64(cs.returned)) ||
	    put(d, "chunk_bytes", U64(cs.chunk_bytes)) ||
	    put(d, "missing_bytes", U64(cs.missing_bytes))) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/* The report's parts as dicts, None for a part the session did not run. */
static PyObject *report_dict(const struct vfgx_session_report *r)
{
	const struct vfgx_capture_stats *c = &r->capture_stats;
	const struct vfgx_record_stats *rs = &r->record_stats;
	PyObject *d = PyDict_New();

	if (!d || put(d, "secs", PyFloat_FromDouble(r->secs)) ||
	    put(d, "pipeline", stats_dict(&r->pipeline)) ||
	    put(d, "pipeline_error", PyLong_FromLong(r->pipeline_error)) ||
	    put(d, "rx_packets", U64(r->rx_packets)) || put(d, "port_drops", U64(r->port_drops)) ||
	    put(d, "conns_refused", U64(r->conns_refused)) ||
	    put(d, "source", !r->source.known ? Py_NewRef(Py_None) :
		Py_BuildValue("{sKsKsKsKsK}", "generated", r->source.generated, "lost",
			      r->source.lost, "duplicated", r->source.duplicated, "corrupted",
			      r->source.corrupted, "reordered", r->source.reordered)) ||
	    put(d, "chunks", U64(r->chunks)) || put(d, "complete", U64(r->complete)) ||
	    put(d, "user_errors", U64(r->user_errors)) ||
	    put(d, "user_module", !r->user_module ? Py_NewRef(Py_None) :
		Py_BuildValue("{sssi}", "name", r->user_module_name, "fini", r->user_fini)) ||
	    put(d, "gpu_module", !r->gpu_module ? Py_NewRef(Py_None) :
		Py_BuildValue("{sssKss}", "path", r->gpu_module_path, "launches",
			      r->gpu_launches, "error", r->gpu_error)) ||
	    put(d, "capture", !r->capture ? Py_NewRef(Py_None) :
		Py_BuildValue("{sssOsKsKsKsKsKsKsKsIsi}", "path", r->capture_path, "closed",
			      r->capture_closed ? Py_True : Py_False, "seen", c->seen,
			      "selected", c->selected, "written", c->written, "ring_full",
			      c->ring_full, "skipped_gpu", c->skipped_gpu, "failed", c->failed,
			      "bytes", c->bytes, "files", c->files, "error", c->error)) ||
	    put(d, "record", !r->record ? Py_NewRef(Py_None) :
		Py_BuildValue("{sssKsKsKsIsOss}", "path", r->record_path, "recorded", rs->recorded,
			      "not_recorded", rs->not_recorded, "bytes", rs->bytes, "files",
			      rs->files, "direct", rs->direct ? Py_True : Py_False, "error",
			      rs->error ? rs->message : NULL))) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/* report() -> dict, text (the lines `vfgx run` prints) */
static PyObject *session_report(PipelineObject *p, PyObject *unused)
{
	struct vfgx_session_report r = { .argsz = sizeof(r) };
	PyObject *d, *ret;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)unused;
	if (need_pipeline(p))
		return NULL;
	if (!p->stopped) {
		PyErr_Format(PyExc_RuntimeError, "vfgx.%s: report() before stop()", p->kind);
		return NULL;
	}
	if (vfgx_session_report(p->s, &r)) {
		PyErr_SetString(PyExc_OSError, vfgx_last_error(p->ctx));
		return NULL;
	}
	f = open_memstream(&text, &len);
	if (!f)
		return PyErr_NoMemory();
	vfgx_session_report_print(p->s, NULL, f);
	if (fclose(f)) {
		free(text);
		return PyErr_NoMemory();
	}
	d = report_dict(&r);
	ret = d ? Py_BuildValue("(Ns#)", d, text, (Py_ssize_t)len) : NULL;
	free(text);
	return ret;
}

/* get(timeout_ms) -> Chunk; None on timeout; EOFError at the end. */
static PyObject *session_get(PipelineObject *p, PyObject *args)
{
	struct vfgx_chunk *c = NULL;
	ChunkObject *ch;
	int timeout_ms, ret;

	if (!PyArg_ParseTuple(args, "i", &timeout_ms) || need_own_chunks(p, "get()"))
		return NULL;
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
static PyObject *session_chunk_device(PipelineObject *p, PyObject *unused)
{
	struct vfgx_chunk_device v = { .argsz = sizeof(v) };

	(void)unused;
	if (need_own_chunks(p, "chunk_device()"))
		return NULL;
	if (vfgx_chunk_device(p->pl, &v)) {
		PyErr_SetString(PyExc_RuntimeError, vfgx_last_error(p->ctx));
		return NULL;
	}
	return PyBytes_FromStringAndSize((const char *)&v, sizeof(v));
}

static PyObject *session_metrics_port(PipelineObject *p, void *closure)
{
	vfgx_metrics *m;

	(void)closure;
	if (need_pipeline(p))
		return NULL;
	m = vfgx_session_metrics(p->s);
	if (!m)
		Py_RETURN_NONE;
	return PyLong_FromLong(vfgx_metrics_port(m));
}

static PyObject *session_consumes(PipelineObject *p, void *closure)
{
	(void)closure;
	if (need_pipeline(p))
		return NULL;
	return PyBool_FromLong(vfgx_session_consumes(p->s));
}

static PyObject *session_engine(PipelineObject *p, void *closure)
{
	(void)closure;
	if (need_pipeline(p))
		return NULL;
	return PyUnicode_FromString(vfgx_pipeline_engine(p->pl));
}

static PyMethodDef session_methods[] = {
	{ "start", (PyCFunction)session_start, METH_NOARGS, "user code, consumer, then the engine" },
	{ "stop", (PyCFunction)session_stop, METH_NOARGS,
	  "stop the engine, the consumer, the recorder, the capture (chunks stay valid)" },
	{ "done", (PyCFunction)session_done, METH_NOARGS,
	  "True once every finite source ended (or user code failed)" },
	{ "stats", (PyCFunction)session_stats, METH_NOARGS, "pipeline counters as a dict" },
	{ "chunk_stats", (PyCFunction)session_chunk_stats, METH_NOARGS, "chunk counters, or None" },
	{ "report", (PyCFunction)session_report, METH_NOARGS,
	  "after stop(): (dict, the lines vfgx run prints)" },
	{ "get", (PyCFunction)session_get, METH_VARARGS, "get(timeout_ms) -> Chunk | None" },
	{ "chunk_device", (PyCFunction)session_chunk_device, METH_NOARGS,
	  "struct vfgx_chunk_device as bytes (vfgx/chunk_device.h)" },
	{ "recorder", (PyCFunction)(void (*)(void))pipeline_recorder, METH_VARARGS | METH_KEYWORDS,
	  "recorder(path, format, ...) -> Recorder (vfgx/record.h)" },
	{ NULL },
};

static PyGetSetDef session_getset[] = {
	{ "engine", (getter)session_engine, NULL, "cpu or gpu", NULL },
	{ "metrics_port", (getter)session_metrics_port, NULL,
	  "the Prometheus endpoint's port, or None", NULL },
	{ "consumes", (getter)session_consumes, NULL,
	  "True when the session's consumer takes the chunks (get() has none)", NULL },
	{ NULL },
};

PyTypeObject SessionType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vfgx._vfgx.Session",
	.tp_basicsize = sizeof(PipelineObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)session_init,
	.tp_dealloc = (destructor)session_dealloc,
	.tp_methods = session_methods,
	.tp_getset = session_getset,
};
