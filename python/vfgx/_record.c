/* _record.c - the Python package's Recorder: a vfgx_record (vfgx/record.h)
 * on a pipeline with chunks, made by Pipeline.recorder() (issue 42). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_vfgx.h"

/* --- Recorder (issue 42) --------------------------------------------------- */
/* A vfgx_record (vfgx/record.h) on a pipeline with chunks.  It holds a
 * reference to its pipeline, so the pipeline outlives it.  Its calls wait
 * on the disk with the GIL released; `busy` keeps a second thread from
 * using (or closing) it meanwhile: one thread at a time, as the C API
 * asks. */
typedef struct {
	PyObject_HEAD
	PipelineObject *pipe; /* a reference */
	vfgx_record *rec;     /* NULL once closed */
	char *config_text;    /* the files' config attribute, owned */
	char *path;           /* the first file, owned */
	int busy;
	struct vfgx_record_stats final; /* after close */
} RecorderObject;


static int recorder_usable(RecorderObject *r, int need_open)
{
	if (inherited(r->pipe))
		return refuse_inherited(r->pipe);
	if (r->busy) {
		PyErr_SetString(PyExc_RuntimeError,
				"vfgx recorder: in use by another thread (one thread at a time)");
		return -1;
	}
	if (need_open && !r->rec) {
		PyErr_SetString(PyExc_ValueError, "vfgx recorder: used after close()");
		return -1;
	}
	return 0;
}

static void recorder_finish(RecorderObject *r)
{
	if (!r->rec)
		return;
	if (inherited(r->pipe)) {
		r->rec = NULL; /* the parent's files, not the child's */
		return;
	}
	Py_BEGIN_ALLOW_THREADS
	vfgx_record_close(r->rec, &r->final);
	Py_END_ALLOW_THREADS
	r->rec = NULL;
}

static void recorder_dealloc(RecorderObject *r)
{
	recorder_finish(r);
	free(r->config_text);
	free(r->path);
	Py_XDECREF(r->pipe);
	PyObject_Free(r);
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && strcmp(s + a - b, tail) == 0;
}

/* o (None: keep *v) as an unsigned integer up to max, or -1 */
static int opt_u64(PyObject *o, const char *name, uint64_t max, uint64_t *v)
{
	unsigned long long x;

	if (o == Py_None)
		return 0;
	x = PyLong_AsUnsignedLongLong(o);
	if (PyErr_Occurred() || x > max) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "vfgx recorder: %s: a whole number 0..%llu", name,
			     (unsigned long long)max);
		return -1;
	}
	*v = x;
	return 0;
}

/* o (None: keep *v) as one of names (its position), or -1 */
static int opt_enum(PyObject *o, const char *name, const char *const *names, uint32_t *v)
{
	const char *s;

	if (o == Py_None)
		return 0;
	s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
	for (uint32_t i = 0; s && names[i]; i++)
		if (strcmp(s, names[i]) == 0) {
			*v = i;
			return 0;
		}
	PyErr_Clear();
	PyErr_Format(PyExc_ValueError, "vfgx recorder: %s: one of %s, %s", name, names[0], names[1]);
	return -1;
}

/* _recorder(path, format, rotate_bytes, rotate_seconds, compression,
 * compression_level, ring, overwrite, config_text): the config's record:
 * section where it has one (else the defaults, and HDF5 for a path ending
 * in .h5 or .hdf5, raw otherwise: vfgx run --record's rule), each
 * argument that is not None over it. */
PyObject *pipeline_recorder(PipelineObject *p, PyObject *args, PyObject *kw)
{
	static char *names[] = { "path", "format", "rotate_bytes", "rotate_seconds",
				 "compression", "compression_level", "ring", "overwrite",
				 "config_text", NULL };
	static const char *const formats[] = { "hdf5", "raw", NULL };
	static const char *const compressions[] = { "off", "deflate", NULL };
	PyObject *path = Py_None, *format = Py_None, *rbytes = Py_None, *rsec = Py_None,
		 *comp = Py_None, *level = Py_None, *ring = Py_None, *over = Py_None,
		 *text = Py_None;
	struct vfgx_record_conf rc;
	RecorderObject *r;
	uint64_t v;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOOO:recorder", names, &path, &format,
					 &rbytes, &rsec, &comp, &level, &ring, &over, &text) ||
	    need_pipeline(p))
		return NULL;
	if (!vfgx_chunk_conf(p->pl)) {
		PyErr_SetString(PyExc_ValueError,
				"vfgx recorder: the pipeline has no chunks; recording writes chunks (add pipeline.chunks)");
		return NULL;
	}
	if (need_own_chunks(p, "recorder()"))
		return NULL;
	if (p->cfg->record) {
		rc = *p->cfg->record;
	} else {
		vfgx_record_conf_default(&rc);
		if (PyUnicode_Check(path)) {
			const char *s = PyUnicode_AsUTF8(path);

			if (!s)
				return NULL;
			rc.format = ends_with(s, ".h5") || ends_with(s, ".hdf5") ?
					    VFGX_RECORD_HDF5 : VFGX_RECORD_RAW;
		}
	}
	if (path != Py_None) {
		if (!PyUnicode_Check(path)) {
			PyErr_SetString(PyExc_TypeError, "vfgx recorder: path is a str");
			return NULL;
		}
		if (!(rc.path = PyUnicode_AsUTF8(path)))
			return NULL;
	}
	if (opt_enum(format, "format", formats, &rc.format) ||
	    opt_enum(comp, "compression", compressions, &rc.compression))
		return NULL;
	v = rc.rotate_bytes;
	if (opt_u64(rbytes, "rotate_bytes", 1ull << 50, &v))
		return NULL;
	rc.rotate_bytes = v;
	if (rsec != Py_None) {
		rc.rotate_seconds = PyFloat_AsDouble(rsec);
		if (PyErr_Occurred())
			return NULL;
	}
	v = rc.compression_level;
	if (opt_u64(level, "compression_level", 9, &v))
		return NULL;
	rc.compression_level = (uint32_t)v;
	v = rc.ring;
	if (opt_u64(ring, "ring", 64, &v))
		return NULL;
	rc.ring = (uint32_t)v;
	if (over != Py_None) {
		if ((ret = PyObject_IsTrue(over)) < 0)
			return NULL;
		rc.overwrite = ret;
	}
	if (!rc.path || !rc.path[0]) {
		PyErr_SetString(PyExc_ValueError,
				"vfgx recorder: no path (give one, or set record.path in the config)");
		return NULL;
	}
	r = PyObject_New(RecorderObject, &RecorderType);
	if (!r)
		return NULL;
	r->pipe = (PipelineObject *)Py_NewRef((PyObject *)p);
	r->rec = NULL;
	r->busy = 0;
	memset(&r->final, 0, sizeof(r->final));
	r->path = strdup(rc.path);
	r->config_text = NULL;
	if (text != Py_None) {
		const char *s = PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : NULL;

		if (!s) {
			Py_DECREF(r);
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "vfgx recorder: config_text is a str");
			return NULL;
		}
		r->config_text = strdup(s);
	}
	if (!r->path || (text != Py_None && !r->config_text)) {
		Py_DECREF(r);
		return PyErr_NoMemory();
	}
	rc.path = r->path;
	rc.config_text = r->config_text;
	Py_BEGIN_ALLOW_THREADS
	ret = vfgx_record_open(p->ctx, &rc, p->pl, &r->rec);
	Py_END_ALLOW_THREADS
	if (ret) {
		/* the options or the build: ValueError; the file: OSError
		 * with its errno (FileExistsError for a FIFO or a file) */
		if (ret == -EINVAL || ret == -ENOTSUP)
			PyErr_SetString(PyExc_ValueError, vfgx_last_error(p->ctx));
		else {
			PyObject *a = Py_BuildValue("(is)", -ret, vfgx_last_error(p->ctx));

			if (a) {
				PyErr_SetObject(PyExc_OSError, a);
				Py_DECREF(a);
			}
		}
		Py_DECREF(r);
		return NULL;
	}
	return (PyObject *)r;
}

/* write(chunk) -> True when recorded; False once the recording stopped
 * (the chunk counted as not recorded).  The chunk stays the caller's. */
static PyObject *recorder_write(RecorderObject *r, PyObject *arg)
{
	ChunkObject *ch = (ChunkObject *)arg;
	int ret;

	if (recorder_usable(r, 1))
		return NULL;
	if (!PyObject_TypeCheck(arg, &ChunkType)) {
		PyErr_SetString(PyExc_TypeError, "vfgx recorder: write() takes a chunk of its pipeline");
		return NULL;
	}
	if (chunk_live(ch))
		return NULL;
	if (ch->pipe != r->pipe) {
		PyErr_SetString(PyExc_ValueError, "vfgx recorder: the chunk is another pipeline's");
		return NULL;
	}
	/* an export for the duration: release() refuses meanwhile */
	ch->exports++;
	r->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	ret = vfgx_record_chunk(r->rec, ch->c);
	Py_END_ALLOW_THREADS
	r->busy = 0;
	ch->exports--;
	return PyBool_FromLong(ret == 0);
}

/* consume(timeout_ms) -> True once the pipeline has no more chunks: take
 * each ready chunk, record it, give it back, for up to timeout_ms. */
static PyObject *recorder_consume(RecorderObject *r, PyObject *args)
{
	vfgx_pipeline *pl = r->pipe->pl;
	struct vfgx_chunk *c;
	uint64_t end;
	int timeout_ms, ret = 0;

	if (!PyArg_ParseTuple(args, "i", &timeout_ms) || recorder_usable(r, 1))
		return NULL;
	r->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	end = vfgx_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
	for (;;) {
		uint64_t now = vfgx_now_ns();
		int wait = now >= end ? 0 : (int)((end - now + 999999) / 1000000);

		ret = vfgx_chunk_get(pl, wait, &c);
		if (ret == -ENODATA)
			break;
		if (ret == 0) {
			vfgx_record_chunk(r->rec, c);
			vfgx_chunk_put(pl, c->stream, c->index);
		}
		if (vfgx_now_ns() >= end)
			break;
	}
	Py_END_ALLOW_THREADS
	r->busy = 0;
	return PyBool_FromLong(ret == -ENODATA);
}

static PyObject *record_stats_dict(const char *path, const struct vfgx_record_stats *st)
{
	return Py_BuildValue("{s:s,s:K,s:K,s:K,s:I,s:O,s:i,s:s}", "path", path,
			     "recorded", (unsigned long long)st->recorded,
			     "not_recorded", (unsigned long long)st->not_recorded,
			     "bytes", (unsigned long long)st->bytes, "files", st->files,
			     "direct", st->direct ? Py_True : Py_False, "errno", -st->error,
			     "error", st->error ? st->message : NULL);
}

static PyObject *recorder_stats(RecorderObject *r, PyObject *unused)
{
	struct vfgx_record_stats st;

	(void)unused;
	if (recorder_usable(r, 0))
		return NULL;
	if (!r->rec)
		return record_stats_dict(r->path, &r->final);
	vfgx_record_stats(r->rec, &st);
	return record_stats_dict(r->path, &st);
}

/* close() -> stats: the writes in flight finished, the files closed. */
static PyObject *recorder_close(RecorderObject *r, PyObject *unused)
{
	(void)unused;
	if (recorder_usable(r, 0))
		return NULL;
	recorder_finish(r);
	return record_stats_dict(r->path, &r->final);
}

static PyObject *recorder_closed(RecorderObject *r, void *closure)
{
	(void)closure;
	return PyBool_FromLong(r->rec == NULL);
}

static PyObject *recorder_path(RecorderObject *r, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(r->path);
}

static PyMethodDef recorder_methods[] = {
	{ "write", (PyCFunction)recorder_write, METH_O, "write(chunk) -> recorded" },
	{ "consume", (PyCFunction)recorder_consume, METH_VARARGS,
	  "consume(timeout_ms) -> True once the pipeline has no more chunks" },
	{ "stats", (PyCFunction)recorder_stats, METH_NOARGS, "counters as a dict" },
	{ "close", (PyCFunction)recorder_close, METH_NOARGS, "close the files -> stats" },
	{ NULL },
};

static PyGetSetDef recorder_getset[] = {
	{ "closed", (getter)recorder_closed, NULL, "closed", NULL },
	{ "path", (getter)recorder_path, NULL, "the first file", NULL },
	{ NULL },
};

PyTypeObject RecorderType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "vfgx._vfgx.Recorder",
	.tp_basicsize = sizeof(RecorderObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)recorder_dealloc,
	.tp_methods = recorder_methods,
	.tp_getset = recorder_getset,
};

